"""Where a remember, a consolidation and a recall spend their time, per store call.

Fills a store like `cranimem-mcp bench` does (N memories, a tenth in the measured scope,
constant-cost embedder), then times OPS remembers, one consolidation and OPS recalls, with
every EpisodicStore / GraphStore / engine step wrapped by a timer. The numbers behind the
"design change" table in docs/RESULTS.md.

    .venv/bin/python scripts/profile_paths.py 100000 100
"""

from __future__ import annotations

import asyncio
import collections
import random
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from cranimem_mcp.buffer.episodic import EpisodicStore
from cranimem_mcp.config import Settings
from cranimem_mcp.engine import MemoryEngine
from cranimem_mcp.eval import bench
from cranimem_mcp.graph.store import GraphStore
from cranimem_mcp.intake import Intake
from cranimem_mcp.replay import consolidator as replay

TIMES: dict[str, list[float]] = collections.defaultdict(list)


def timed(owner: object, name: str, label: str) -> None:
    fn = getattr(owner, name)

    async def wrapper(*args: object, **kwargs: object) -> object:
        started = time.perf_counter()
        try:
            return await fn(*args, **kwargs)
        finally:
            TIMES[label].append((time.perf_counter() - started) * 1000)

    setattr(owner, name, wrapper)


for n in ("add", "upsert", "update", "touch", "rows", "find_hash", "count", "nearest",
          "hybrid", "maintain"):  # fmt: skip
    timed(EpisodicStore, n, f"episodic.{n}")
for n in ("put", "supersede", "entities_named", "facts", "outdated", "entity_support",
          "deactivate"):  # fmt: skip
    timed(GraphStore, n, f"graph.{n}")
for n in ("_prepare", "_unlinked_relations"):
    timed(Intake, n, f"intake.{n}")
for n in ("evict_overflow", "_replay_scope"):
    timed(replay.Consolidator, n, f"replay.{n}")
for n in ("prune_longterm", "purge_expired_trash"):  # looked up in replay at each call
    timed(replay, n, f"replay.{n}")


def report(title: str, latencies: list[float] | None = None) -> None:
    if latencies:
        p50, p95 = np.percentile(latencies, 50), np.percentile(latencies, 95)
        print(f"{title}: p50 {p50:.1f} ms, p95 {p95:.1f} ms")
    else:
        print(title)
    for label, values in sorted(TIMES.items(), key=lambda kv: -sum(kv[1])):
        print(f"  {label:32s} calls {len(values):4d}  mean {np.mean(values):7.2f} ms")
    TIMES.clear()


async def main(size: int, ops: int) -> None:
    data = Settings().model_dump()
    data["home"] = Path(tempfile.mkdtemp(prefix="cranimem-profile-"))
    data["consolidation"].update(interval_seconds=0.0, every_n_writes=0)
    settings = Settings.model_validate(data)
    embedder = bench.ConstantEmbedder()
    rng = random.Random(0)
    async with MemoryEngine(settings, embedder=embedder, background=False) as engine:
        await engine.set_goal(
            "Remember what matters about my work, plans, people and places.", bench.SCOPE
        )
        for start in range(0, size, 5000):
            texts = [bench.synthetic_text(rng, i) for i in range(start, min(size, start + 5000))]
            vectors = await embedder.embed(texts)
            rows = [
                bench._row(t, v, bench.SCOPE if i % 10 == 0 else f"user-{i % 99}",
                           "trash" if i % 20 == 0 else "longterm", i)
                for i, (t, v) in enumerate(zip(texts, vectors, strict=True), start)
            ]  # fmt: skip
            await engine.episodic.add(rows)
        await engine.episodic.maintain()
        TIMES.clear()
        latencies = []
        for i in range(ops):
            started = time.perf_counter()
            await engine.remember(bench.synthetic_text(rng, size + i), bench.SCOPE)
            latencies.append((time.perf_counter() - started) * 1000)
        report(f"remember x{ops}", latencies)
        started = time.perf_counter()
        await engine.consolidate(bench.SCOPE)
        report(f"consolidate: {time.perf_counter() - started:.2f} s")
        latencies = []
        for _ in range(ops):
            started = time.perf_counter()
            await engine.recall(bench.synthetic_query(rng), bench.SCOPE)
            latencies.append((time.perf_counter() - started) * 1000)
        report(f"recall x{ops}", latencies)


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1]), int(sys.argv[2]) if len(sys.argv) > 2 else 50))
