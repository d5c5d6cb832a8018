"""The consolidation lease over one Oxigraph server (docs/SCALING.md, "The consolidation lease").

.venv/bin/python scripts/measure_lease.py race [--threads 20 --each 20]
    concurrent conditional increments of one counter: does the server serialise updates?
.venv/bin/python scripts/measure_lease.py contention [--clients 12 --rounds 30 --settle 0.5]
    clients acquiring at once: rounds with one clean winner, a winner whose record another
    claim joined afterwards (unsafe), or no winner
.venv/bin/python scripts/measure_lease.py consolidate [--n 20]
    consolidate n memories with the graph in the server, lease "local" against "sparql",
    interleaved, 3 rounds
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

import anyio
import httpx

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("LANCE_LOG", "error")
sys.path.insert(0, str(Path(__file__).parent))

from measure_backends import CITIES, start_oxigraph  # noqa: E402

from cranimem_mcp.config import Settings, load_settings  # noqa: E402
from cranimem_mcp.graph.lease import Fence, SparqlLease  # noqa: E402


def race(base: str, threads: int, each: int) -> None:
    def update(text: str) -> None:
        httpx.post(f"{base}/update", data={"update": text}, timeout=60).raise_for_status()

    update("INSERT DATA { GRAPH <urn:c> { <urn:c> <urn:v> 0 } }")
    step = (
        "DELETE { GRAPH <urn:c> { <urn:c> <urn:v> ?n } } INSERT { GRAPH <urn:c> { <urn:c> "
        "<urn:v> ?m } } WHERE { GRAPH <urn:c> { <urn:c> <urn:v> ?n } BIND (?n + 1 AS ?m) }"
    )
    workers = [
        threading.Thread(target=lambda: [update(step) for _ in range(each)]) for _ in range(threads)
    ]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    query = "SELECT ?n WHERE { GRAPH <urn:c> { <urn:c> <urn:v> ?n } }"
    answer = httpx.post(f"{base}/query", data={"query": query}, headers={"accept": "text/csv"})
    sys.stdout.write(f"expected {threads * each}, the counter holds {answer.text.split()[1:]}\n")


async def contention(base: str, clients: int, rounds: int, settle: float) -> None:
    outcome = {"one clean winner": 0, "winner, record joined later": 0, "no winner": 0}
    async with anyio.create_task_group() as tg:
        leases = [
            SparqlLease(f"{base}/query", f"{base}/update", seconds=30.0,
                        start_soon=tg.start_soon, holder=f"r{i}", settle_seconds=settle)
            for i in range(clients)
        ]  # fmt: skip

        async def attempt(lease: SparqlLease, won: list[Fence]) -> None:
            if (fence := await lease.acquire()) is not None:
                won.append(fence)

        for _ in range(rounds):
            won: list[Fence] = []
            async with anyio.create_task_group() as attempts:
                for lease in leases:
                    attempts.start_soon(attempt, lease, won)
            state = await leases[0].read()
            if not won:
                outcome["no winner"] += 1
            elif len(won) == 1 and state.claims == {won[0].claim}:
                outcome["one clean winner"] += 1
            else:
                outcome["winner, record joined later"] += 1
            if won:
                await leases[0].release(won[0])
        for lease in leases:
            await lease.aclose()
        tg.cancel_scope.cancel()
    sys.stdout.write(f"{clients} clients, {rounds} rounds, settle {settle} s: {outcome}\n")


async def consolidate(base: str, n: int) -> None:
    from cranimem_mcp.backends.embeddings import OnnxEmbedder
    from cranimem_mcp.engine import MemoryEngine

    embedder = OnnxEmbedder(threads=1)
    took: dict[str, list[float]] = {"local": [], "sparql": []}
    for round_ in range(3):
        for lease in took:
            data = load_settings(home=tempfile.mkdtemp()).model_dump()
            data["graph"].update(
                store="sparql", query_endpoint=f"{base}/query", update_endpoint=f"{base}/update"
            )
            data["gating"].update(tau_noise=-1.0, default_gate=False)
            data["consolidation"].update(lease=lease, every_n_writes=0, interval_seconds=0)
            scope = f"{lease}{round_}"
            settings = Settings.model_validate(data)
            async with MemoryEngine(settings, embedder=embedder, background=False) as engine:
                for i in range(n):
                    await engine.remember(
                        f"Person{i} lives in {CITIES[i % len(CITIES)]} and works at Firm{i}.",
                        scope=scope,
                    )
                started = time.perf_counter()
                await engine.consolidate(scope=scope)
                took[lease].append(time.perf_counter() - started)
    for lease, times in took.items():
        sys.stdout.write(
            f"lease {lease}: consolidate {n}: {[round(t, 2) for t in times]} s, "
            f"median {statistics.median(times):.2f} s\n"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("what", choices=["race", "contention", "consolidate"])
    parser.add_argument("--threads", type=int, default=20)
    parser.add_argument("--each", type=int, default=20)
    parser.add_argument("--clients", type=int, default=12)
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--settle", type=float, default=0.5)
    parser.add_argument("--n", type=int, default=20)
    args = parser.parse_args()
    proc, base = start_oxigraph(tempfile.mkdtemp())
    try:
        if args.what == "race":
            race(base, args.threads, args.each)
        elif args.what == "contention":
            anyio.run(contention, base, args.clients, args.rounds, args.settle)
        else:
            anyio.run(consolidate, base, args.n)
    finally:
        proc.terminate()


if __name__ == "__main__":
    main()
