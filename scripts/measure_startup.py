"""Cold-start costs of `cranimem-mcp serve` over stdio and of the one-shot CLI.

Per run (a fresh data directory each time): spawn -> initialize answered, CPU used by then,
initialize -> first `remember` answered (and the CPU used by then), then the first `recall`
answered. With ``--writes N``: one more server, N `remember` calls, then the server's peak
resident memory (VmHWM) and its RSS. With ``--cli``: wall time of one-shot `cranimem-mcp
remember` and `recall` without a running server. Medians over ``-n`` runs.

With ``--owner``: the same one-shot commands while a server owns the directory (they go
through it). With ``--store N``: a store of N memories (filled once, in a process of its
own, copied for each run: rows with jittered MiniLM vectors, each linked into the graph by
the heuristic extractor as consolidation does, half of them then trashed as the long-term
bound would), then a server on it: recall and
remember p50 through MCP, then recalls each right after a write, peak RSS and RSS, data on disk.

    .venv/bin/python scripts/measure_startup.py [-n 5] [--call] [--writes 300] [--cli]
        [--owner] [--store 10000] [--repo DIR]

``--repo`` runs the code of another checkout with this interpreter (PYTHONPATH), so the
same venv measures before and after.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "measure", "version": "0"},
    },
}
INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}
FACTS = [
    "I live in Lisbon with my partner Ana.",
    "My project Atlas uses PostgreSQL and runs on Kubernetes.",
    "I am allergic to peanuts, so no satay please.",
    "I prefer tea over coffee in the morning.",
    "My sister Maria works at a hospital in Porto.",
]


def call(n: int, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    params = {"name": name, "arguments": arguments}
    return {"jsonrpc": "2.0", "id": n, "method": "tools/call", "params": params}


def cpu_seconds(pid: int) -> float:
    """CPU time (user + system, all threads) the process has used so far."""
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def memory_mib(pid: int) -> tuple[float, float]:
    """(peak RSS, current RSS) of a process in MiB."""
    status = dict(line.split(":", 1) for line in open(f"/proc/{pid}/status").read().splitlines())
    kib = lambda key: int(status[key].split()[0])  # noqa: E731
    return kib("VmHWM") / 1024, kib("VmRSS") / 1024


def env_for(repo: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CRANIMEM_")}
    env.update(HF_HUB_OFFLINE="1", LANCE_LOG="error", PYTHONPATH=repo,
               CRANIMEM_MODELS__TAGGER="heuristic", CRANIMEM_MODELS__EXTRACTOR="heuristic",
               CRANIMEM_MODELS__EMBEDDER="local")  # fmt: skip
    return env


class Server:
    """`cranimem-mcp serve` on stdio, spoken to line by line."""

    def __init__(self, repo: str, home: str) -> None:
        self.started = time.perf_counter()
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "cranimem_mcp.cli", "serve", "--data-dir", home],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
            env=env_for(repo), cwd=repo,
        )  # fmt: skip

    def send(self, *messages: dict[str, Any]) -> None:
        assert self.proc.stdin
        self.proc.stdin.write("".join(json.dumps(m) + "\n" for m in messages).encode())
        self.proc.stdin.flush()

    def answer(self, n: int) -> dict[str, Any]:
        assert self.proc.stdout
        while True:
            msg = json.loads(self.proc.stdout.readline())
            if msg.get("id") == n:
                if "error" in msg or msg["result"].get("isError"):
                    raise RuntimeError(f"call {n} failed: {msg}")
                return msg

    def initialize(self) -> None:
        self.send(INIT)
        self.answer(1)
        self.send(INITIALIZED)

    def timed(self, n: int, name: str, arguments: dict[str, Any]) -> float:
        t0 = time.perf_counter()
        self.send(call(n, name, arguments))
        self.answer(n)
        return time.perf_counter() - t0

    def close(self) -> None:
        assert self.proc.stdin
        self.proc.stdin.close()
        self.proc.wait(timeout=120)


def once(repo: str, with_calls: bool) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as home:
        server = Server(repo, home)
        server.send(INIT)
        server.answer(1)
        out = {"init": time.perf_counter() - server.started, "cpu": cpu_seconds(server.proc.pid)}
        if with_calls:
            server.send(INITIALIZED)
            out["remember"] = server.timed(2, "remember", {"content": FACTS[0]})
            out["cpu_remember"] = cpu_seconds(server.proc.pid)
            out["recall"] = server.timed(3, "recall", {"query": "Where do I live?"})
        server.close()
        return out


def writes(repo: str, n: int) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as home:
        server = Server(repo, home)
        server.send(INIT)
        server.answer(1)
        server.send(INITIALIZED)
        times = []
        for i in range(n):
            fact = f"{FACTS[i % len(FACTS)]} (note {i}: item {i * 7919 % 1000})"
            times.append(server.timed(10 + i, "remember", {"content": fact}))
        server.timed(10 + n, "recall", {"query": "Where do I live?"})
        peak, rss = memory_mib(server.proc.pid)
        server.close()
        return {"peak": peak, "rss": rss, "write_p50": statistics.median(times)}


CLI_CPU: list[float] = []  # CPU seconds (user + system) of each one-shot command


def cli_once(repo: str, home: str, *argv: str) -> float:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "cranimem_mcp.cli", *argv, "--data-dir", home],
        check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        env=env_for(repo), cwd=repo,
    )  # fmt: skip
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    CLI_CPU.append(after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime)
    return wall


def cli_through_owner(repo: str, n: int) -> tuple[list[float], list[float]]:
    """One-shot remember/recall while `serve --transport http` owns the directory."""
    remember, recall = [], []
    with tempfile.TemporaryDirectory() as home:
        server = Server(repo, home)  # owns the directory once its open starts
        try:
            server.initialize()
            deadline = time.monotonic() + 60
            while not (Path(home) / "owner.json").exists():  # the owner is listening
                if time.monotonic() > deadline or server.proc.poll() is not None:
                    raise RuntimeError("the server did not start")
                time.sleep(0.1)
            cli_once(repo, home, "remember", FACTS[1])  # the owner's first call opens it
            for i in range(n):
                remember.append(cli_once(repo, home, "remember", f"{FACTS[0]} ({i})"))
                recall.append(cli_once(repo, home, "recall", "Where do I live?"))
        finally:
            server.close()
    return remember, recall


FILL = """
import asyncio, random, sys
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
import numpy as np
from cranimem_mcp.extraction import linkage
from cranimem_mcp.config import load_settings
from cranimem_mcp.backends.embeddings import local_embedder
from cranimem_mcp.engine import MemoryEngine
from cranimem_mcp.eval import bench
from cranimem_mcp.extraction.extractor import HeuristicExtractor

async def fill(home, n):
    settings = load_settings(home=Path(home))
    embedder, rng = local_embedder(), random.Random(0)
    async with MemoryEngine(settings, embedder=embedder, background=False) as engine:
        pool = await embedder.embed([bench.synthetic_text(rng, -i) for i in range(1, 257)])
        extractor = HeuristicExtractor()
        for start in range(0, n, 2000):
            texts = [bench.synthetic_text(rng, i) for i in range(start, min(n, start + 2000))]
            vectors = await bench._fill_vectors(embedder, texts, pool)
            # Half long-term, half in the trash: what 10k writes into one scope leave with
            # the default bound of 5,000 long-term memories (temporal.longterm_capacity).
            rows = [bench._row(t, v, "default", "longterm" if j % 2 else "trash", start + j)
                    for j, (t, v) in enumerate(zip(texts, vectors))]
            extractions = await extractor.extract(texts)
            linked = []
            for row, extraction in zip(rows, extractions):
                checked = linkage.check(extraction)
                linked.append(replace(row, entities=[e.name for e in checked.entities]))
                await engine.graph.put("default", row.id, checked, row.created_at)
            await engine.episodic.add(linked)
            trashed = [r.id for r in rows if r.tier == "trash"]
            await engine.graph.deactivate("default", trashed)
        await engine.episodic.maintain()

asyncio.run(fill(sys.argv[1], int(sys.argv[2])))
"""


def fill_store(repo: str, home: str, n: int) -> None:
    subprocess.run([sys.executable, "-c", FILL, home, str(n)], check=True,
                   env=env_for(repo), cwd=repo)  # fmt: skip


def at_size(repo: str, filled: str, recalls: int, writes: int) -> dict[str, float]:
    """A server on a copy of the filled store: recalls, then writes, then as many recalls
    each right after a write (what an assistant does), through MCP."""
    from cranimem_mcp.eval.bench import synthetic_query, synthetic_text

    rng = random.Random(1)
    with tempfile.TemporaryDirectory() as tmp:
        home = str(Path(tmp) / "home")
        shutil.copytree(filled, home)
        server = Server(repo, home)
        server.initialize()
        server.timed(2, "recall", {"query": "Where do I live?"})  # opens the store, warms up
        cpu = cpu_seconds(server.proc.pid)
        recall = [server.timed(10 + i, "recall", {"query": synthetic_query(rng)})
                  for i in range(recalls)]  # fmt: skip
        recall_cpu = (cpu_seconds(server.proc.pid) - cpu) / recalls * 1000
        base = 10 + recalls
        remember = [server.timed(base + i, "remember", {"content": synthetic_text(rng, 10**6 + i)})
                    for i in range(writes)]  # fmt: skip
        after_write = []
        for i in range(writes):
            n = base + writes + 2 * i
            server.timed(n, "remember", {"content": synthetic_text(rng, 2 * 10**6 + i)})
            after_write.append(server.timed(n + 1, "recall", {"query": synthetic_query(rng)}))
        peak, rss = memory_mib(server.proc.pid)
        server.close()
        disk = sum(f.stat().st_size for f in Path(home).rglob("*") if f.is_file()) / 1e6
    return {"recall_p50": statistics.median(recall) * 1000,
            "recall_p95": sorted(recall)[int(len(recall) * 0.95)] * 1000,
            "recall_cpu": recall_cpu,
            "remember_p50": statistics.median(remember) * 1000,
            "after_write_p50": statistics.median(after_write) * 1000,
            "after_write_p95": sorted(after_write)[int(len(after_write) * 0.95)] * 1000,
            "peak": peak, "rss": rss, "disk": disk}  # fmt: skip


def summary(label: str, values: list[float], unit: str = "s") -> str:
    return (f"{label}: median {statistics.median(values):.2f} {unit} "
            f"(min {min(values):.2f}, max {max(values):.2f})")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("-n", type=int, default=5)
    parser.add_argument("--repo", default=os.getcwd())
    parser.add_argument("--call", action="store_true", help="also time first remember/recall")
    parser.add_argument("--writes", type=int, default=0, help="N writes, then peak RSS")
    parser.add_argument("--cli", action="store_true", help="one-shot CLI remember/recall")
    parser.add_argument("--owner", action="store_true", help="one-shot CLI through an owner")
    parser.add_argument("--store", type=int, default=0, help="a server on a store of N")
    parser.add_argument("--filled", help="reuse this filled store (from an earlier --store)")
    parser.add_argument("--skip-start", action="store_true", help="no spawn->initialize runs")
    args = parser.parse_args()
    if args.store:
        filled = args.filled
        if filled is None:
            filled = tempfile.mkdtemp(prefix=f"cranimem-filled-{args.store}-")
            started = time.perf_counter()
            fill_store(args.repo, filled, args.store)
            print(f"filled {args.store} memories into {filled} in "
                  f"{time.perf_counter() - started:.0f} s")  # fmt: skip
        r = at_size(args.repo, filled, 100, 50)
        print(f"store of {args.store} through MCP: recall p50 {r['recall_p50']:.1f} ms "
              f"(p95 {r['recall_p95']:.1f}, server CPU {r['recall_cpu']:.1f} ms a recall), "
              f"remember p50 {r['remember_p50']:.1f} ms, recall right after a write p50 "
              f"{r['after_write_p50']:.1f} ms (p95 {r['after_write_p95']:.1f}), "
              f"peak RSS {r['peak']:.0f} MiB, RSS {r['rss']:.0f} MiB, "
              f"disk {r['disk']:.1f} MB")  # fmt: skip
    if args.owner:
        CLI_CPU.clear()
        remember, recall = cli_through_owner(args.repo, args.n)
        cpu_remember = statistics.median(CLI_CPU[1::2])  # the first is the warm-up
        cpu_recall = statistics.median(CLI_CPU[2::2])
        print(summary("one-shot CLI remember through a running owner", remember),
              f"; CPU median {cpu_remember:.2f} s")  # fmt: skip
        print(summary("one-shot CLI recall through a running owner", recall),
              f"; CPU median {cpu_recall:.2f} s")  # fmt: skip
    if not args.skip_start:
        runs = [once(args.repo, args.call) for _ in range(args.n)]
        print(summary("spawn->initialize", [r["init"] for r in runs]),
              f"{statistics.median(r['cpu'] for r in runs):.2f} s CPU, {args.n} runs")  # fmt: skip
        if args.call:
            cpu = statistics.median(r["cpu_remember"] for r in runs)
            print(summary("initialize->first remember answered", [r["remember"] for r in runs]),
                  f"{cpu:.2f} s CPU by then")  # fmt: skip
            print(summary("then first recall answered", [r["recall"] for r in runs]))
    if args.cli:
        remember, recall = [], []
        CLI_CPU.clear()
        for _ in range(args.n):
            with tempfile.TemporaryDirectory() as home:
                remember.append(cli_once(args.repo, home, "remember", FACTS[0]))
                recall.append(cli_once(args.repo, home, "recall", "Where do I live?"))
        print(summary("one-shot CLI remember (no server)", remember),
              f"; CPU median {statistics.median(CLI_CPU[0::2]):.2f} s")  # fmt: skip
        print(summary("one-shot CLI recall (no server)", recall),
              f"; CPU median {statistics.median(CLI_CPU[1::2]):.2f} s")  # fmt: skip
    if args.writes:
        w = writes(args.repo, args.writes)
        print(f"after {args.writes} writes through MCP: peak RSS {w['peak']:.0f} MiB, "
              f"RSS {w['rss']:.0f} MiB, write p50 {w['write_p50'] * 1000:.0f} ms")  # fmt: skip
    print(f"load average: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
