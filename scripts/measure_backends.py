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
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import anyio

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("LANCE_LOG", "error")

import cranimem_mcp  # noqa: E402
from cranimem_mcp.backends.embeddings import OnnxEmbedder  # noqa: E402
from cranimem_mcp.config import Settings, load_settings  # noqa: E402
from cranimem_mcp.engine import MemoryEngine  # noqa: E402
from cranimem_mcp.eval.bench import ConstantEmbedder  # noqa: E402

CITIES = ["Paris", "Berlin", "Lisbon", "Oslo", "Rome", "Vienna", "Prague", "Madrid"]


class Requests:
    """Counts the HTTP requests this process sends, the time spent in them and the TCP
    connections opened (rdflib's SPARQL connector and SparqlDataset both send through
    ``http.client.HTTPConnection``)."""

    def __init__(self) -> None:
        self.count = 0
        self.connects = 0
        self.seconds = 0.0
        send = http.client.HTTPConnection.request
        answer = http.client.HTTPConnection.getresponse
        connect = http.client.HTTPConnection.connect

        def counted(connection: Any, *args: Any, **kwargs: Any) -> Any:
            self.count += 1
            t = time.perf_counter()
            try:
                return send(connection, *args, **kwargs)
            finally:
                self.seconds += time.perf_counter() - t

        def timed(connection: Any, *args: Any, **kwargs: Any) -> Any:
            t = time.perf_counter()
            try:
                response = answer(connection, *args, **kwargs)
                response.read = _timed_read(response.read, self)
                return response
            finally:
                self.seconds += time.perf_counter() - t

        def connected(connection: Any) -> Any:
            self.connects += 1
            return connect(connection)

        http.client.HTTPConnection.request = counted  # type: ignore[method-assign]
        http.client.HTTPConnection.getresponse = timed  # type: ignore[method-assign]
        http.client.HTTPConnection.connect = connected  # type: ignore[method-assign]

    def snapshot(self) -> tuple[int, int, float]:
        return self.count, self.connects, self.seconds


def _timed_read(read: Any, requests: Requests) -> Any:
    def timed(*args: Any) -> Any:
        t = time.perf_counter()
        try:
            return read(*args)
        finally:
            requests.seconds += time.perf_counter() - t

    return timed


def server_cpu(pid: int) -> float:
    """The CPU seconds (user + system) the server process has used so far (Linux)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return float("nan")
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class Timer:
    """Wall, this process's CPU, the server's CPU and the HTTP requests of what it times."""

    def __init__(self, requests: Requests, server_pid: int) -> None:
        self.requests, self.pid = requests, server_pid

    def __enter__(self) -> Timer:
        self.wall, self.cpu = time.perf_counter(), time.process_time()
        self.server = server_cpu(self.pid)
        self.sent = self.requests.snapshot()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.wall = time.perf_counter() - self.wall
        self.cpu = time.process_time() - self.cpu
        self.server = server_cpu(self.pid) - self.server
        count, connects, seconds = self.requests.snapshot()
        self.count = count - self.sent[0]
        self.connects = connects - self.sent[1]
        self.http = seconds - self.sent[2]


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


GRAPH_OPERATIONS = {"entities_named": "link", "outdated": "outdated", "facts": "walk"}


def time_graph_operations(engine: MemoryEngine, spent: dict[str, float]) -> None:
    """Add the wall time of each of a recall's graph operations to ``spent``."""
    for method, name in GRAPH_OPERATIONS.items():
        call = getattr(engine.graph, method)

        async def timed(*args: Any, _call: Any = call, _name: str = name, **kwargs: Any) -> Any:
            t = time.perf_counter()
            try:
                return await _call(*args, **kwargs)
            finally:
                spent[_name] = spent.get(_name, 0.0) + time.perf_counter() - t

        setattr(engine.graph, method, timed)


def median(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


async def run(
    settings: dict[str, Settings], embedder: Any, n: int, recalls: int, requests: Requests,
    server_pid: int,
) -> dict[str, Any]:  # fmt: skip
    """Both engines open together, each step taken on one then the other (local first),
    so the machine's load falls on both alike."""
    names = list(settings)
    out: dict[str, dict[str, Any]] = {
        name: {"remember": [], "recall": [], "recall_cpu": [], "recall_server": [],
               "recall_requests": [], "recall_connects": [], "recall_http": [],
               "graph": {op: [] for op in GRAPH_OPERATIONS.values()}, "results": []}
        for name in names
    }  # fmt: skip
    async with AsyncExitStack() as stack:
        engines = {}
        for name in names:
            engines[name] = await stack.enter_async_context(
                MemoryEngine(settings[name], embedder=embedder, background=False)
            )
        for i in range(n):
            for name in names:
                with Timer(requests, server_pid) as t:
                    await engines[name].remember(text(i))
                out[name]["remember"].append(t.wall)
        for name in names:
            with Timer(requests, server_pid) as t:
                report = await engines[name].consolidate()
            out[name].update(consolidate=t, promoted=report.promoted)
        spent = {name: {} for name in names}
        for name in names:
            time_graph_operations(engines[name], spent[name])
        for i in range(recalls):
            for name in names:
                spent[name].clear()
                with Timer(requests, server_pid) as t:
                    result = await engines[name].recall(question((i * 97) % n))
                o = out[name]
                o["recall"].append(t.wall)
                o["recall_cpu"].append(t.cpu)
                o["recall_server"].append(t.server)
                o["recall_requests"].append(t.count)
                o["recall_connects"].append(t.connects)
                o["recall_http"].append(t.http)
                for op in GRAPH_OPERATIONS.values():
                    o["graph"][op].append(spent[name].get(op, 0.0))
                o["results"].append(outcome(result))
    return out


def report(name: str, o: dict[str, Any], n: int) -> str:
    c = o["consolidate"]
    graph = ", ".join(f"{op} {1000 * median(v):.1f}" for op, v in o["graph"].items())
    return (
        f"{name:6} n={n}: remember median {1000 * median(o['remember']):.0f} ms; "
        f"consolidate {c.wall:.1f} s wall, {c.cpu:.1f} s CPU, server {c.server:.1f} s CPU, "
        f"{o['promoted']} promoted, {c.count} requests, {c.connects} connections; "
        f"recall p50 {1000 * median(o['recall']):.1f} ms wall, "
        f"{1000 * median(o['recall_cpu']):.1f} ms CPU, "
        f"server {1000 * median(o['recall_server']):.0f} ms CPU, "
        f"{median(o['recall_requests']):.0f} requests, "
        f"{median(o['recall_connects']):.0f} connections, "
        f"{1000 * median(o['recall_http']):.1f} ms in HTTP; graph ops (ms, p50): {graph}"
    )


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
    requests = Requests()
    print(f"{list(cranimem_mcp.__path__)[0]}; load average at the start: {os.getloadavg()[0]:.2f}",
          flush=True)  # fmt: skip
    with tempfile.TemporaryDirectory() as tmp:
        proc, base = start_oxigraph(str(Path(tmp) / "ox"))
        try:
            settings = {}
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
                settings[name] = Settings.model_validate(data)
            out = await run(settings, embedder, args.n, args.recalls, requests, proc.pid)
        finally:
            proc.terminate()
            proc.wait()
    for name, o in out.items():
        print(report(name, o, args.n), flush=True)
    local, sparql = out["local"], out["sparql"]
    ratio = median(sparql["recall"]) / median(local["recall"])
    pairs = median([a / b for a, b in zip(sparql["recall"], local["recall"], strict=True)])
    cons = sparql["consolidate"].wall / local["consolidate"].wall
    print(f"sparql / local: recall p50 {ratio:.2f}x (median of paired ratios {pairs:.2f}x), "
          f"consolidate {cons:.2f}x")  # fmt: skip
    same_items = sum(
        a["items"] == b["items"] for a, b in zip(local["results"], sparql["results"], strict=True)
    )
    same_facts = sum(a == b for a, b in zip(local["results"], sparql["results"], strict=True))
    print(f"recall outcomes local == sparql: {local['results'] == sparql['results']} (items "
          f"equal in {same_items} of {args.recalls}, facts too in {same_facts})")  # fmt: skip
    if args.dump:
        dumped = {name: o["results"] for name, o in out.items()}
        args.dump.write_text(json.dumps(dumped, indent=1, default=str))
    print(f"load average at the end: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    anyio.run(main)
