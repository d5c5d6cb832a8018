"""Does a write cost more as the store grows? One `remember` at a time into one scope, with
the background consolidation of a server (every ``consolidation.every_n_writes`` writes,
the defaults otherwise), reporting per block of writes: remember latency, the time the
background work spent in each step, the data directory's size and the table's versions.

    .venv/bin/python scripts/measure_ingest.py [N] [BLOCK] [--embedder constant|local]

The constant embedder (the bench's) takes the model out, so what grows is the store's own
work; ``local`` is the default MiniLM on onnxruntime. Heuristic tagger and extractor.
"""

from __future__ import annotations

import argparse
import collections
import random
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio

from cranimem_mcp.backends.embeddings import local_embedder
from cranimem_mcp.buffer.episodic import EpisodicStore
from cranimem_mcp.config import Settings, load_settings
from cranimem_mcp.engine import MemoryEngine
from cranimem_mcp.eval.bench import SCOPE, ConstantEmbedder, synthetic_text
from cranimem_mcp.graph.journal import JournaledDataset
from cranimem_mcp.graph.store import GraphStore
from cranimem_mcp.replay import consolidator as replay

TOP = 10  # steps shown per block
SPENT: dict[str, list[float]] = collections.defaultdict(list)


def timed(owner: Any, name: str, label: str) -> None:
    fn = getattr(owner, name)
    if hasattr(fn, "__code__") and fn.__code__.co_flags & 0x80:  # a coroutine function

        async def wrapper(*args: Any, **kwargs: Any) -> Any:
            started = time.perf_counter()
            try:
                return await fn(*args, **kwargs)
            finally:
                SPENT[label].append(time.perf_counter() - started)

    else:

        def wrapper(*args: Any, **kwargs: Any) -> Any:  # type: ignore[misc]
            started = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                SPENT[label].append(time.perf_counter() - started)

    setattr(owner, name, wrapper)


for n in ("maintain", "purge_history", "upsert", "add", "scope_rows", "get", "count", "update",
          "touch", "find_hash", "nearest"):  # fmt: skip
    timed(EpisodicStore, n, f"episodic.{n}")
for n in ("compact", "commit"):
    timed(JournaledDataset, n, f"graph journal.{n}")
for n in ("put", "supersede", "entity_support", "retract", "memory_facts", "deactivate"):
    timed(GraphStore, n, f"graph.{n}")
for n in ("run", "_replay_scope", "embed_new_facts", "_decide", "_apply", "evict_overflow"):
    timed(replay.Consolidator, n, f"replay.{n}")
for n in ("prune_longterm", "purge_expired_trash"):  # looked up in replay at each call
    timed(replay, n, f"replay.{n}")


def disk_mb(path: Path) -> float:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file()) / 1e6


def live_mb(engine: MemoryEngine) -> float:
    """What the table's current version references (data files and indexes), in MB."""
    stats = engine.episodic._table.stats()
    return float(stats["total_bytes"]) / 1e6


async def main(size: int, block: int, embedder_name: str, overrides: dict[str, Any]) -> None:
    home = Path(tempfile.mkdtemp(prefix="cranimem-ingest-"))
    data = load_settings(home=home).model_dump()
    data["models"].update(tagger="heuristic", extractor="heuristic")
    for dotted, value in overrides.items():
        section, key = dotted.split(".")
        data[section][key] = value
    settings = Settings.model_validate(data)
    embedder: Any = ConstantEmbedder() if embedder_name == "constant" else local_embedder()
    rng = random.Random(0)
    print(f"{size} writes into one scope, embedder {embedder_name}, block {block}, "
          f"every_n_writes {settings.consolidation.every_n_writes}")  # fmt: skip
    print("writes | remember p50 ms | mean | p95 | background s per block "
          "(top steps) | disk MB | live MB | versions | graph.nq MB")  # fmt: skip
    async with MemoryEngine(settings, embedder=embedder, background=True) as engine:
        await engine.set_goal("Remember what matters about my work, plans, people.", SCOPE)
        latencies: list[float] = []
        for i in range(size):
            started = time.perf_counter()
            await engine.remember(synthetic_text(rng, i), SCOPE)
            latencies.append((time.perf_counter() - started) * 1000)
            if (i + 1) % block == 0:
                steps = sorted(((sum(v), k) for k, v in SPENT.items()), reverse=True)
                top = ", ".join(f"{k} {s:.1f}" for s, k in steps[:TOP] if s >= 0.05)
                versions = len(await anyio.to_thread.run_sync(
                    engine.episodic._table.list_versions))  # fmt: skip
                snapshot = home / "graph" / "graph.nq"
                nq = snapshot.stat().st_size / 1e6 if snapshot.exists() else 0.0
                print(
                    f"{i + 1:6d} | {statistics.median(latencies):6.1f} | "
                    f"{statistics.fmean(latencies):6.1f} | "
                    f"{sorted(latencies)[int(len(latencies) * 0.95)]:6.1f} | {top} | "
                    f"{disk_mb(home):7.1f} | {live_mb(engine):6.1f} | {versions} | {nq:.1f}",
                    flush=True,
                )
                latencies.clear()
                SPENT.clear()
        await engine.wait_idle()
    print(f"after close: disk {disk_mb(home):.1f} MB")


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("size", type=int, nargs="?", default=3000)
    parser.add_argument("block", type=int, nargs="?", default=500)
    parser.add_argument("--embedder", choices=["constant", "local"], default="constant")
    parser.add_argument("--set", action="append", default=[], metavar="SECTION.KEY=VALUE",
                        help="a setting, e.g. episodic.longterm_capacity=2000")  # fmt: skip
    args = parser.parse_args()
    sets = {k: (int(v) if v.lstrip("-").isdigit() else v)
            for k, v in (s.split("=", 1) for s in args.set)}  # fmt: skip
    anyio.run(main, args.size, args.block, args.embedder, sets)
