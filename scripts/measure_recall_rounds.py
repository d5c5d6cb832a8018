"""A server that answers recalls for a while: does a recall stay as fast? (issue 37)

Fills an engine in process with N ``remember`` calls of ``bench.synthetic_text`` (the default
settings, background work on, as ``serve`` runs), waits for the background to settle, then
times ROUNDS rounds of OPS recalls of ``bench.synthetic_query`` one after another and prints
each round's p50 / mean / p95 and the episodic table's fragment count after it (each commit
of recall counts adds fragments until a maintenance compacts them).

    PYTHONPATH=. .venv/bin/python scripts/measure_recall_rounds.py [N] [OPS] [ROUNDS]
"""

from __future__ import annotations

import asyncio
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

from cranimem_mcp.config import load_settings
from cranimem_mcp.engine import MemoryEngine
from cranimem_mcp.eval.bench import synthetic_query, synthetic_text


async def main(n: int, ops: int, rounds: int) -> None:
    os.environ.setdefault("CRANIMEM_MODELS__EMBEDDER", "local")
    home = Path(tempfile.mkdtemp(prefix="cranimem-rounds-"))
    facts, queries = random.Random(15), random.Random(16)
    texts = [synthetic_text(facts, i) for i in range(n)]
    asked = [synthetic_query(queries) for _ in range(ops)]
    async with MemoryEngine(load_settings(home=home), background=True) as engine:
        for text in texts:
            await engine.remember(text)
        await asyncio.sleep(3)  # the last consolidation and maintenance
        for r in range(1, rounds + 1):
            took = []
            for query in asked:
                started = time.perf_counter()
                await engine.recall(query)
                took.append((time.perf_counter() - started) * 1000)
            took.sort()
            stats = engine.episodic._table.stats()  # the probe's one look inside the store
            print(
                f"round {r}: p50 {statistics.median(took):.1f} ms, mean "
                f"{statistics.mean(took):.1f}, p95 {took[int(0.95 * len(took))]:.1f}; "
                f"fragments {stats['fragment_stats']['num_fragments']}; load "
                f"{os.getloadavg()[0]:.1f}",
                flush=True,
            )


if __name__ == "__main__":
    args = [int(a) for a in sys.argv[1:4]]
    asyncio.run(main(*(args + [1000, 300, 3][len(args) :])))
