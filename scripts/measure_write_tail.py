"""What the slow writes of an ingest wait on: per `remember`, the time in the gate's preparation
(embedding, gate, tags: outside the locks), in the table insert (the table's writer lock, which
a consolidation's move and a maintenance's new handle hold; an append beside a compaction is
slower too) and the rest (mostly the scope lock: a consolidation's move holds it), and whether
a consolidation run overlapped it.

    PYTHONPATH=. .venv/bin/python scripts/measure_write_tail.py [N] [--set SECTION.KEY=VALUE]

In process, a server's background work (every ``consolidation.every_n_writes`` writes), the
default onnxruntime MiniLM, heuristic tagger and extractor, the bench's synthetic facts.
"""

from __future__ import annotations

import argparse
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
from cranimem_mcp.eval.bench import SCOPE, synthetic_text
from cranimem_mcp.intake import Intake
from cranimem_mcp.replay.consolidator import Consolidator

SPENT: dict[str, float] = {}
RUNNING = [0]
MAINTAINED: list[float] = []  # each table maintenance, ms


def timed(owner: Any, name: str, label: str) -> None:
    fn = getattr(owner, name)

    async def wrapper(*args: Any, **kwargs: Any) -> Any:
        started = time.perf_counter()
        try:
            return await fn(*args, **kwargs)
        finally:
            SPENT[label] = SPENT.get(label, 0.0) + (time.perf_counter() - started) * 1000

    setattr(owner, name, wrapper)


def counted(owner: Any, name: str) -> None:
    fn = getattr(owner, name)

    async def wrapper(*args: Any, **kwargs: Any) -> Any:
        RUNNING[0] += 1
        try:
            return await fn(*args, **kwargs)
        finally:
            RUNNING[0] -= 1

    setattr(owner, name, wrapper)


def maintenances() -> None:
    fn = EpisodicStore.maintain

    async def wrapper(*args: Any, **kwargs: Any) -> Any:
        started = time.perf_counter()
        ran = await fn(*args, **kwargs)
        if ran:
            MAINTAINED.append((time.perf_counter() - started) * 1000)
        return ran

    EpisodicStore.maintain = wrapper  # type: ignore[method-assign]


maintenances()
timed(Intake, "_prepare", "prepare")
timed(EpisodicStore, "insert", "insert")
counted(Consolidator, "run")


async def main(n: int, overrides: dict[str, Any]) -> None:
    home = Path(tempfile.mkdtemp(prefix="cranimem-tail-"))
    data = load_settings(home=home).model_dump()
    data["models"].update(tagger="heuristic", extractor="heuristic")
    for dotted, value in overrides.items():
        section, key = dotted.split(".")
        data[section][key] = value
    rng = random.Random(0)
    rows: list[tuple[float, float, float, bool]] = []
    settings = Settings.model_validate(data)
    async with MemoryEngine(settings, embedder=local_embedder(), background=True) as engine:
        await engine.remember("A first write loads the models: not timed.", SCOPE)
        for i in range(n):
            SPENT.clear()
            overlapped = RUNNING[0] > 0
            started = time.perf_counter()
            await engine.remember(synthetic_text(rng, i), SCOPE)
            took = (time.perf_counter() - started) * 1000
            overlapped = overlapped or RUNNING[0] > 0
            rows.append((took, SPENT.get("prepare", 0.0), SPENT.get("insert", 0.0), overlapped))
        await engine.wait_idle()
    took = sorted(r[0] for r in rows)
    p95 = took[int(n * 0.95)]
    print(f"{n} writes: p50 {statistics.median(took):.1f} ms, p95 {p95:.1f}, "
          f"mean {statistics.fmean(took):.1f}; {len(MAINTAINED)} table maintenances, "
          f"mean {statistics.fmean(MAINTAINED or [0.0]):.0f} ms")  # fmt: skip
    for label, part in (("slowest 5%", [r for r in rows if r[0] >= p95]),
                        ("fastest half", [r for r in rows if r[0] < took[n // 2]])):  # fmt: skip
        prepare = statistics.fmean(r[1] for r in part)
        insert = statistics.fmean(r[2] for r in part)
        rest = statistics.fmean(r[0] - r[1] - r[2] for r in part)
        runs = sum(r[3] for r in part)
        print(f"{label}: prepare {prepare:.1f} ms, insert {insert:.1f}, rest {rest:.1f}; "
              f"a consolidation overlapped {runs} of {len(part)}")  # fmt: skip


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("n", type=int, nargs="?", default=400)
    parser.add_argument("--set", action="append", default=[], metavar="SECTION.KEY=VALUE")
    args = parser.parse_args()
    sets = {k: (int(v) if v.lstrip("-").isdigit() else v)
            for k, v in (s.split("=", 1) for s in args.set)}  # fmt: skip
    anyio.run(main, args.n, sets)
