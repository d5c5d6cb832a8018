"""Time remember / consolidate / recall with the graph local vs in an Oxigraph server, and
count the HTTP requests the SPARQL backend sends per recall and per consolidation.

.venv/bin/python scripts/measure_backends.py [--n 1000] [--embedder constant|minilm]
    [--recalls 20] [--dump results.json]          (needs the 'sparql' extra)

The fill: n memories (people, their employers, where those are based: a company's city
changes, so supersession is exercised), consolidated in one run, then the recalls. The
buffer holds all n, so nothing is evicted before the run. The episodic table is local in
both cases. ``--dump`` writes what each recall returned (items' text and scores, facts),
so two runs (before and after a change, or local and SPARQL) can be compared.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

import anyio

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("LANCE_LOG", "error")

from cranimem_mcp.config import Settings, load_settings  # noqa: E402
from cranimem_mcp.embeddings import OnnxEmbedder  # noqa: E402
from cranimem_mcp.engine import MemoryEngine  # noqa: E402
from cranimem_mcp.eval.bench import ConstantEmbedder  # noqa: E402

CITIES = ["Paris", "Berlin", "Lisbon", "Oslo", "Rome", "Vienna", "Prague", "Madrid"]


class Requests:
    """Counts the HTTP requests this process sends (rdflib's SPARQL connector and
    SparqlDataset use urllib, which sends each through ``HTTPConnection.request``)."""

    def __init__(self) -> None:
        self.count = 0
        send = http.client.HTTPConnection.request

        def counted(connection: Any, *args: Any, **kwargs: Any) -> Any:
            self.count += 1
            return send(connection, *args, **kwargs)

        http.client.HTTPConnection.request = counted  # type: ignore[method-assign]


def start_oxigraph(location: str) -> tuple[subprocess.Popen, str]:
    exe = shutil.which("oxigraph") or str(Path(sys.executable).parent / "oxigraph")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen([exe, "serve", "--location", location, "--bind", f"127.0.0.1:{port}"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
    base = f"http://127.0.0.1:{port}"
    for _ in range(300):
        try:
            urllib.request.urlopen(f"{base}/query?query=ASK%7B%7D", timeout=2).close()
            return proc, base
        except OSError:
            time.sleep(0.2)
    raise RuntimeError("oxigraph did not start")


def text(i: int) -> str:
    return f"Person{i} works at Company{i % 37}, which is based in {CITIES[i % 8]}."


def question(i: int) -> str:
    return f"Where is the company of Person{i} based, and who else works at Company{i % 37}?"


def outcome(result: Any) -> dict[str, Any]:
    """What a recall returned, without ids or timings (they differ from run to run)."""
    return {
        "items": [(it.path, it.content, it.score, it.superseded) for it in result.items],
        "facts": [
            (f.subject, f.predicate, f.object, f.support, f.hops, f.score, f.superseded)
            for f in result.facts
        ],
        "lines": len(result.context.splitlines()),
    }


async def run(
    settings: Settings, embedder: Any, n: int, recalls: int, counter: Requests
) -> dict[str, Any]:
    out: dict[str, list[float]] = {"remember": [], "recall": [], "recall_requests": []}
    results = []
    async with MemoryEngine(settings, embedder=embedder, background=False) as engine:
        for i in range(n):
            t = time.perf_counter()
            await engine.remember(text(i))
            out["remember"].append(time.perf_counter() - t)
        before = counter.count
        t = time.perf_counter()
        report = await engine.consolidate()
        consolidate = time.perf_counter() - t
        consolidate_requests = counter.count - before
        for i in range(recalls):
            before = counter.count
            t = time.perf_counter()
            result = await engine.recall(question((i * 97) % n))
            out["recall"].append(time.perf_counter() - t)
            out["recall_requests"].append(counter.count - before)
            results.append(outcome(result))
    return {
        "remember_ms": 1000 * statistics.median(out["remember"]),
        "consolidate_s": consolidate,
        "promoted": report.promoted,
        "consolidate_requests": consolidate_requests,
        "recall_ms": 1000 * statistics.median(out["recall"]),
        "recall_requests": statistics.median(out["recall_requests"]),
        "results": results,
    }


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=1000)
    parser.add_argument("--recalls", type=int, default=20)
    parser.add_argument("--embedder", choices=["constant", "minilm"], default="constant")
    parser.add_argument("--dump", type=Path, help="write each recall's outcome here (JSON)")
    args = parser.parse_args()
    if args.embedder == "minilm":
        embedder: Any = OnnxEmbedder(threads=1)
        await embedder.embed(["warm up"])
    else:
        embedder = ConstantEmbedder()
    counter = Requests()
    dumped = {}
    with tempfile.TemporaryDirectory() as tmp:
        proc, base = start_oxigraph(str(Path(tmp) / "ox"))
        try:
            for name, graph in [
                ("local", {"store": "local"}),
                ("sparql", {"store": "sparql", "query_endpoint": f"{base}/query",
                            "update_endpoint": f"{base}/update"}),
            ]:  # fmt: skip
                data = load_settings(home=Path(tmp) / name).model_dump()
                data["graph"].update(graph)
                data["gating"]["tau_noise"] = -1.0
                data["gating"]["default_gate"] = False
                data["episodic"]["capacity"] = max(args.n, 200)
                settings = Settings.model_validate(data)
                r = await run(settings, embedder, args.n, args.recalls, counter)
                dumped[name] = r.pop("results")
                print(f"{name:6} n={args.n} ({args.embedder}): remember median "
                      f"{r['remember_ms']:.0f} ms, consolidate {r['consolidate_s']:.1f} s "
                      f"({r['promoted']} promoted, {r['consolidate_requests']} requests), "
                      f"recall median {r['recall_ms']:.0f} ms "
                      f"({r['recall_requests']:.0f} requests)", flush=True)  # fmt: skip
        finally:
            proc.terminate()
            proc.wait()
    same = dumped["local"] == dumped["sparql"]
    print(f"recall outcomes local == sparql: {same}")
    if args.dump:
        args.dump.write_text(json.dumps(dumped, indent=1, default=str))
    print(f"load average: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    anyio.run(main)
