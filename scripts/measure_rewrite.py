"""What a hard forget leaves in an Oxigraph server's files, and three ways to rewrite its store
(docs/SCALING.md, "Hard forget across replicas").

.venv/bin/python scripts/measure_rewrite.py [--graphs 1000]

Fills a fresh `oxigraph serve` with ``--graphs`` memory-like named graphs (a dozen quads each,
the memory's text as a literal), plus one holding a canary; drops the canary's graph (what a
hard forget sends), then looks for the canary in the server's files: while it serves, after
it stops, after `oxigraph optimize`. Then copies the live quads into a fresh store three
ways and times each (wall and this process's CPU; the Oxigraph CLI's CPU is its own):

- ``rewrite-graph``: one SPARQL SELECT of every quad through the query endpoint, parsed and
  bulk-loaded by pyoxigraph (``cranimem_mcp.graph.rewrite``): online, any SPARQL server;
- ``store GET``: Oxigraph's Graph Store endpoint (``GET /store``, N-Quads) into pyoxigraph's
  ``bulk_load``: online, Oxigraph only;
- ``dump + load``: ``oxigraph dump`` then ``oxigraph load``, the server stopped (a dump
  while it serves is tried too, and what it read printed).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
import urllib.request
import uuid
from pathlib import Path

import httpx
import pyoxigraph as ox

sys.path.insert(0, str(Path(__file__).parent))

from measure_backends import start_oxigraph  # noqa: E402

from cranimem_mcp.graph.rewrite import files_holding, rewrite  # noqa: E402

OXIGRAPH = str(Path(sys.executable).parent / "oxigraph")
BASE = "https://cranimem.dev/id/default/"
VOCAB = "https://cranimem.dev/vocab#"
LABEL = "http://www.w3.org/2000/01/rdf-schema#label"
DATETIME = "http://www.w3.org/2001/XMLSchema#dateTime"


def fill(base: str, graphs: int, canary: str) -> None:
    def graph(i: int, text: str) -> str:
        g, m = f"<{BASE}memory/m_{i:06d}>", f"<{BASE}entity/person{i}>"
        c = f"<{BASE}entity/company{i % 37}>"
        lines = [
            f'{g} <{VOCAB}content> "{text}" .',
            f"{m} <https://cranimem.dev/rel/works_at> {c} .",
            f'{m} <{LABEL}> "Person{i}" .',
            f'{c} <{LABEL}> "Company{i % 37}" .',
            f'{g} <{VOCAB}assertedAt> "2026-01-01T00:00:00Z"^^<{DATETIME}> .',
        ]
        lines += [f'{m} <{VOCAB}note{k}> "note {k} of memory {i}" .' for k in range(7)]
        return f"GRAPH {g} {{ {' '.join(lines)} }}"

    batch = []
    for i in range(graphs):
        batch.append(graph(i, f"Person{i} works at Company{i % 37}, a long memory text {i}."))
        if len(batch) == 200 or i == graphs - 1:
            update(base, "INSERT DATA { " + " ".join(batch) + " }")
            batch = []
    update(base, "INSERT DATA { " + graph(999_999, f"My locker code is {canary}.") + " }")
    update(base, f"DROP GRAPH <{BASE}memory/m_999999>")  # what a hard forget sends


def update(base: str, text: str) -> None:
    headers = {"Content-Type": "application/sparql-update"}
    httpx.post(
        f"{base}/update", content=text.encode(), headers=headers, timeout=600
    ).raise_for_status()


def timed(what: str, fn) -> None:
    wall, cpu = time.perf_counter(), time.process_time()
    result = fn()
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    sys.stdout.write(f"{what:<34} {wall:7.2f} s wall {cpu:7.2f} s CPU (here)  {result}\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--graphs", type=int, default=1000)
    args = parser.parse_args()
    canary = "Qzv" + uuid.uuid4().hex[:14]
    tmp = Path(tempfile.mkdtemp(prefix="measure-rewrite-"))
    old = tmp / "old"
    proc, base = start_oxigraph(str(old))
    try:
        fill(base, args.graphs, canary)
        live = len(files_holding(old, canary))
        sys.stdout.write(f"{args.graphs} graphs; canary's graph dropped; files holding it "
                         f"while serving: {live}\n")  # fmt: skip

        def by_select() -> str:
            done = rewrite(f"{base}/query", f"{base}/update", tmp / "a", [canary])
            return f"{done.quads} quads, canary in {len(files_holding(tmp / 'a', canary))} files"

        def by_store_get() -> str:
            store = ox.Store(str(tmp / "b"))
            request = urllib.request.Request(
                f"{base}/store", headers={"Accept": "application/n-quads"}
            )
            with urllib.request.urlopen(request, timeout=600) as response:
                store.bulk_load(response, ox.RdfFormat.N_QUADS)
            n = len(store)
            del store
            return f"{n} quads, canary in {len(files_holding(tmp / 'b', canary))} files"

        timed("rewrite-graph (SPARQL SELECT)", by_select)
        timed("store GET (Oxigraph GSP)", by_store_get)
        serving = [OXIGRAPH, "dump", "--location", str(old), "--file", str(tmp / "serving.nq")]
        refused = subprocess.run(serving, capture_output=True, text=True)
        lines = sum(1 for _ in (tmp / "serving.nq").open("rb")) if not refused.returncode else 0
        sys.stdout.write(f"oxigraph dump while serving: exit {refused.returncode}, {lines} quads "
                         f"{refused.stderr.strip()[:160]}\n")  # fmt: skip
    finally:
        proc.terminate()
        proc.wait()
    stopped = len(files_holding(old, canary))
    sys.stdout.write(f"server stopped: files holding the canary {stopped}\n")
    subprocess.run([OXIGRAPH, "optimize", "--location", str(old)], check=True, capture_output=True)
    sys.stdout.write(f"after oxigraph optimize: {len(files_holding(old, canary))}\n")

    def by_dump_load() -> str:
        dump = tmp / "live.nq"
        subprocess.run([OXIGRAPH, "dump", "--location", str(old), "--file", str(dump)],
                       check=True, capture_output=True)  # fmt: skip
        subprocess.run([OXIGRAPH, "load", "--location", str(tmp / "c"), "--file", str(dump)],
                       check=True, capture_output=True)  # fmt: skip
        lines = sum(1 for _ in dump.open("rb"))
        return (f"{lines} quads, canary in {len(files_holding(tmp / 'c', canary))} files"
                f" (the dump file: {canary.encode() in dump.read_bytes()})")  # fmt: skip

    timed("dump + load (server stopped)", by_dump_load)
    sizes = {d: sum(f.stat().st_size for f in (tmp / d).iterdir()) for d in ("old", "a", "b", "c")}
    sys.stdout.write(f"store sizes (bytes): {sizes}\n")
    os.environ.get("KEEP") or __import__("shutil").rmtree(tmp)


if __name__ == "__main__":
    main()
