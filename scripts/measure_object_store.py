"""What the episodic table costs on object storage and as a shared (replica) table.

.venv/bin/python scripts/measure_object_store.py [--rows 1000] [--writes 40]   (dev extra)
.venv/bin/python scripts/measure_object_store.py --engine   (remember, whole, local vs S3)

Four placements of one table, each filled with ``--rows`` memories of one scope, then timed:
a write (:meth:`EpisodicStore.insert` of a new memory), the duplicate check of a new text
answered by the working set (:meth:`find_hash`), and that check again after another writer
committed (the working set catches up: the scope is reloaded from the table). "local" is
the single-process store (plain append, no version check); "local shared" the replica path
on a local folder (merge_insert on the key, a look at the latest version before each
working-set read); "s3, one writer" the single-process store on a bucket; "s3 shared" the
replica path
on moto's S3 server on loopback, served in this process (tests/servers.py): every request is
a Python call, so this is a pessimistic stand-in for a real bucket's latency, not a measure
of it. Vectors are random (no embedding), so the figures are the store's alone.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

import anyio
import numpy as np

os.environ.setdefault("LANCE_LOG", "error")
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from servers import s3_server  # noqa: E402

from cranimem_mcp.buffer.episodic import EpisodicStore  # noqa: E402
from cranimem_mcp.buffer.table import LocalTable, SharedTable  # noqa: E402
from cranimem_mcp.models import Memory  # noqa: E402
from cranimem_mcp.validation import content_hash, new_id  # noqa: E402

DIM = 384


def memory(i: int, rng: np.random.Generator) -> Memory:
    text = f"Person{i} works at Company{i % 7}; note {rng.integers(1 << 30)}."
    vector = rng.standard_normal(DIM).astype(np.float32)
    stamp = datetime.now(UTC)
    return Memory(id=new_id(), scope="s", tier="buffer", content=text,
                  content_hash=content_hash(text), vector=(vector / np.linalg.norm(vector)),
                  created_at=stamp, tier_changed_at=stamp, turn=i)  # fmt: skip


def ms(samples: list[float]) -> str:
    return f"{1000 * statistics.median(samples):.1f}"


async def measure(name: str, path: str, options: dict, shared: bool, rows: int, writes: int):
    rng = np.random.default_rng(0)
    where = SharedTable(path, options) if shared else LocalTable(Path(path))
    store = EpisodicStore(where, DIM)
    other = EpisodicStore(where, DIM)  # a second replica
    await store.open()
    await other.open()
    await store.add([memory(i, rng) for i in range(rows)])
    await store.find_hash("s", "0" * 32)  # the working set of the scope is loaded
    write, check, caught_up = [], [], []
    for i in range(writes):
        m = memory(rows + i, rng)
        t = time.perf_counter()
        assert await store.find_hash("s", m.content_hash) is None  # a new text's check
        check.append(time.perf_counter() - t)
        t = time.perf_counter()
        await store.insert(m)
        write.append(time.perf_counter() - t)
        if shared:
            await other.insert(memory(10 * rows + i, rng))
            t = time.perf_counter()
            assert await store.find_hash("s", "f" * 32) is None
            caught_up.append(time.perf_counter() - t)
    after = ms(caught_up) if caught_up else "-"
    print(f"| {name} | {ms(write)} | {ms(check)} | {after} |")


async def measure_engine(name: str, episodic: dict, writes: int) -> None:
    """``remember`` through the whole write path (embedding, gate, insert, supersession)."""
    from cranimem_mcp.backends.embeddings import OnnxEmbedder
    from cranimem_mcp.config import Settings, load_settings
    from cranimem_mcp.engine import MemoryEngine

    with tempfile.TemporaryDirectory() as home:
        data = load_settings(home=Path(home)).model_dump()
        data["episodic"].update(episodic)
        settings = Settings.model_validate(data)
        embedder = OnnxEmbedder(threads=1)
        async with MemoryEngine(settings, embedder=embedder, background=False) as engine:
            await engine.remember("warm up: I like tea.", pin=True)
            took = []
            for i in range(writes):
                t = time.perf_counter()
                await engine.remember(f"Person{i} works at Company{i % 7} in Lisbon.", pin=True)
                took.append(time.perf_counter() - t)
    print(f"| {name} | {ms(took)} |")


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=1000)
    parser.add_argument("--writes", type=int, default=40)
    parser.add_argument("--engine", action="store_true", help="time remember, whole")
    args = parser.parse_args()
    if args.engine:
        print(f"remember, {args.writes} writes, median ms\n| table | remember |\n|---|---|")
        with s3_server() as s3:
            await measure_engine("local", {}, args.writes)
            await measure_engine("s3 shared", s3.location("engine"), args.writes)
        return
    print(f"{args.rows} rows in the scope, {args.writes} writes; medians in ms")
    print("| table | write | duplicate check | check after another's commit |")
    print("|---|---|---|---|")
    with tempfile.TemporaryDirectory() as tmp, s3_server() as s3:
        await measure("local", f"{tmp}/a", {}, False, args.rows, args.writes)
        await measure("local shared", f"{tmp}/b", {}, True, args.rows, args.writes)
        for name, shared in [("s3 (moto, loopback), one writer", False), ("s3 shared", True)]:
            location = s3.location(f"measure-{int(shared)}")
            await measure(
                name, location["uri"], location["storage_options"], shared, args.rows,
                args.writes,
            )  # fmt: skip


if __name__ == "__main__":
    anyio.run(main)
