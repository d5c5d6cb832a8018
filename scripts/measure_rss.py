"""Where a long write stream's memory goes: resident memory along the soak test's stream
(capacity 10, long-term bound 60, consolidation every 25 writes, a recall after each) with
the constant-cost embedder, or along a bare LanceDB loop of the same shape. The numbers
behind "Bounded resources" in docs/RELIABILITY.md.

    .venv/bin/python scripts/measure_rss.py engine [WRITES] [--no-working-set]
    .venv/bin/python scripts/measure_rss.py lancedb [WRITES] [--keep-versions]
    .venv/bin/python scripts/measure_rss.py store DIR [RECALLS]

``store``: a copy of a filled store (``scripts/measure_startup.py --store 10000`` fills one)
opened in this process with the default embedder, heuristic tagger and extractor; resident
memory (and its anonymous and file-backed parts) after each stage (imports, stores open,
embedder loaded, first recall, first remember, RECALLS recalls and remembers; each after
``malloc_trim``), the peak, and the CPU time per recall and per remember. The numbers
behind "Server memory at 10k" in docs/RESULTS.md.
"""

from __future__ import annotations

import random
import resource
import shutil
import sys
import tempfile
import time
from datetime import timedelta
from pathlib import Path

import anyio
import lancedb
import numpy as np
from lancedb.index import FTS

from cranimem_mcp.backends import heap
from cranimem_mcp.config import Settings, load_settings
from cranimem_mcp.engine import MemoryEngine
from cranimem_mcp.eval.bench import ConstantEmbedder, synthetic_query, synthetic_text

NAMES = ["Ana", "Bo", "Chen", "Dara", "Eli", "Femi", "Gus", "Hana", "Ivo", "Jun"]
CITIES = ["Oslo", "Lima", "Pune", "Kyiv", "Faro", "Nice", "Bern", "Graz", "Riga", "Cork"]


def rss_mb() -> float:
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * 4096 / 2**20


def kinds_mb() -> tuple[float, float]:
    """Resident memory by kind: anonymous (the heap) and file-backed (library pages)."""
    with open("/proc/self/status") as fh:
        kb = {k: int(v.split()[0]) for k, v in (line.split(":", 1) for line in fh) if k in (
            "RssAnon", "RssFile")}  # fmt: skip
    return kb["RssAnon"] / 1024, kb["RssFile"] / 1024


def peak_mb() -> float:
    with open("/proc/self/status") as fh:
        return next(int(line.split()[1]) / 1024 for line in fh if line.startswith("VmHWM:"))


def cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def say(*parts: object) -> None:
    print(*parts, flush=True)  # noqa: T201


async def engine_stream(writes: int, working_set: bool) -> None:
    data = load_settings(home=Path(tempfile.mkdtemp(prefix="cranimem-rss-"))).model_dump()
    data["gating"]["tau_noise"] = -1.0
    data["episodic"].update(capacity=10, working_set_rows=100_000 if working_set else 0)
    data["consolidation"].update(every_n_writes=25, trash_retention_days=0.0)
    data["temporal"]["longterm_capacity"] = 60
    rng = random.Random(0)
    started = time.perf_counter()
    async with MemoryEngine(
        Settings.model_validate(data), embedder=ConstantEmbedder(), background=False
    ) as engine:
        for i in range(writes):
            city = rng.choice(CITIES)
            await engine.remember(f"On day {i} {rng.choice(NAMES)} booked a bike in {city}.")
            if i % 25 == 24:
                await engine.consolidate()
                await engine.recall(f"What was booked in {rng.choice(CITIES)}?", max_chars=600)
            if i % 500 == 0:
                say(f"write {i:6d}: rss {rss_mb():6.0f} MB ({time.perf_counter() - started:.0f} s)")
    say(f"end: rss {rss_mb():.0f} MB")


def lancedb_loop(writes: int, keep_versions: bool) -> None:
    table = lancedb.connect(tempfile.mkdtemp(prefix="cranimem-rss-")).create_table(
        "m", data=[{"id": "x", "content": "hello", "vector": [0.0] * 384}]
    )
    table.create_index("content", config=FTS(), replace=True)
    keep = timedelta(hours=1) if keep_versions else timedelta(0)
    rng = np.random.default_rng(0)
    for i in range(writes):
        vector = rng.random(384, dtype=np.float32).tolist()
        table.add([{"id": f"r{i}", "content": f"On day {i} Ana booked a bike", "vector": vector}])
        if i % 25 == 24:
            ids = ",".join(f"'r{j}'" for j in range(i - 24, i + 1))
            rows = table.search().where(f"id IN ({ids})").limit(None).to_list()
            for row in rows:
                row["content"] += " (replayed)"
            table.merge_insert("id").when_matched_update_all().execute(rows)
            table.delete(f"id IN ({ids.split(',', 10)[0]})")
            table.optimize(cleanup_older_than=keep)
            table.search("Ana bike", query_type="fts").limit(8).to_list()
        if i % 500 == 0:
            say(f"write {i:6d}: rss {rss_mb():6.0f} MB, versions {len(table.list_versions())}")
    say(f"end: rss {rss_mb():.0f} MB")


async def store_stages(filled: str, recalls: int, imported: float) -> None:
    home = Path(tempfile.mkdtemp(prefix="cranimem-rss-")) / "home"
    shutil.copytree(filled, home)
    data = load_settings(home=home).model_dump()
    data["models"].update(embedder="local", tagger="heuristic", extractor="heuristic")
    rng = random.Random(1)
    last = imported

    def stage(name: str) -> None:
        nonlocal last
        heap.trim()
        now = rss_mb()
        anon, files = kinds_mb()
        say(
            f"{name:<28} rss {now:6.0f} MB  (+{now - last:5.0f})  peak {peak_mb():6.0f} MB"
            f"  anonymous {anon:5.0f}  file-backed {files:5.0f}"
        )
        last = now

    say(f"{'imports':<28} rss {imported:6.0f} MB")
    async with MemoryEngine(Settings.model_validate(data), background=False) as engine:
        await engine.stats()
        stage("stores open")
        await engine.embedder.embed(["warm up"])
        stage("embedder loaded")
        await engine.recall("Where do I live?")
        stage("first recall")
        await engine.remember(synthetic_text(rng, 10**6))
        stage("first remember")
        started = cpu_s()
        for _ in range(recalls):
            await engine.recall(synthetic_query(rng))
        recall_ms = (cpu_s() - started) / max(recalls, 1) * 1000
        started = cpu_s()
        for i in range(recalls):
            await engine.remember(synthetic_text(rng, 10**6 + 1 + i))
        remember_ms = (cpu_s() - started) / max(recalls, 1) * 1000
        stage(f"{recalls} recalls and remembers")
        say(f"CPU per recall {recall_ms:.1f} ms, per remember {remember_ms:.1f} ms")
    shutil.rmtree(home.parent)


if __name__ == "__main__":
    mode = sys.argv[1] if len(sys.argv) > 1 else "engine"
    count = int(sys.argv[2]) if len(sys.argv) > 2 and sys.argv[2].isdigit() else 3000
    if mode == "store":
        imported = rss_mb()
        recalls = int(sys.argv[3]) if len(sys.argv) > 3 else 50
        anyio.run(store_stages, sys.argv[2], recalls, imported)
    elif mode == "engine":
        anyio.run(engine_stream, count, "--no-working-set" not in sys.argv)
    else:
        lancedb_loop(count, "--keep-versions" in sys.argv)
