"""The lean write path (issue 15): old table versions stay bounded, maintenance runs in
proportion to what changed, the supersession index answers as the full scan does, and
LanceDB loads without its REST namespace client until someone asks for it."""

from __future__ import annotations

import subprocess
import sys
import threading
from datetime import UTC, datetime, timedelta

import anyio
import numpy as np
import pytest

from cranimem_mcp.buffer.episodic import EpisodicStore
from cranimem_mcp.buffer.retention import VersionRetention
from cranimem_mcp.buffer.table import LocalTable
from cranimem_mcp.errors import StoreError
from cranimem_mcp.graph.journal import JournaledDataset
from cranimem_mcp.graph.store import GraphStore
from cranimem_mcp.models import Memory

pytestmark = pytest.mark.anyio
LIFE = "Remember durable facts about the user's life"


def row(i: int) -> Memory:
    stamp = datetime(2026, 1, 1, tzinfo=UTC) + timedelta(minutes=i)
    v = np.zeros(8, dtype=np.float32)
    v[i % 8] = 1.0
    return Memory(
        id=f"m_{i:020x}", scope="s", tier="buffer", content=f"note number {i}",
        content_hash=f"{i:064x}", vector=v.tolist(), created_at=stamp, observed_at=stamp,
        turn=i, importance=0.5, surprise=0.5, emotion=0.1, base_utility=0.4, relevance=0.3,
        tagged_by="heuristic", gate_reason="", tier_changed_at=stamp,
    )  # fmt: skip


async def test_old_versions_are_bounded_by_count_and_no_row_is_lost(tmp_path):
    store = EpisodicStore(
        LocalTable(tmp_path / "t"), 8, retention=VersionRetention(count=5, max_ratio=1e9)
    )
    await store.open()
    for i in range(40):
        await store.add([row(i)])
    assert len(store._table.list_versions()) > 40
    assert await store.maintain()
    # the 5 kept before the optimize, plus the versions the optimize itself made
    assert len(store._table.list_versions()) <= 5 + 4
    assert await store.count() == 40
    assert {r.id for r in await store.rows(where=None)} == {row(i).id for i in range(40)}


async def test_the_folder_is_held_within_its_ratio_of_the_live_data(tmp_path):
    store = EpisodicStore(
        LocalTable(tmp_path / "t"), 8, retention=VersionRetention(count=1000, max_ratio=3)
    )
    await store.open()
    for i in range(40):
        await store.add([row(i)])
    await store.maintain()
    folder = tmp_path / "t" / "memories.lance"
    on_disk = sum(f.stat().st_size for f in folder.rglob("*") if f.is_file())
    live = store._table.stats()["total_bytes"]
    assert on_disk <= 3 * live
    assert len(store._table.list_versions()) == 1
    assert await store.count() == 40


async def test_maintenance_waits_until_enough_has_changed(tmp_path):
    store = EpisodicStore(LocalTable(tmp_path / "t"), 8)
    await store.open()
    for i in range(5):
        await store.add([row(i)])
    assert not store.maintenance_due()
    assert not await store.maintain(force=False)
    for i in range(5, 25):
        await store.add([row(i)])
    assert store.maintenance_due()
    assert await store.maintain(force=False)
    assert not store.maintenance_due()  # counted again from zero


async def test_an_append_goes_on_during_a_compaction_and_a_rewrite_waits_for_it(tmp_path):
    # The compaction is held in its thread until the test lets it go: an append made
    # meanwhile must commit (it waited for the whole compaction before), an update must not.
    store = EpisodicStore(LocalTable(tmp_path / "t"), 8)
    await store.open()
    for i in range(25):
        await store.add([row(i)])
    table = store._table
    compacting, release = threading.Event(), threading.Event()
    optimize = table.optimize

    def held(**options):
        compacting.set()
        release.wait(20)
        return optimize(**options)

    table.optimize = held
    updated = anyio.Event()

    async def update() -> None:
        await store.update([row(0).id], {"importance": 0.9})
        updated.set()

    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(store.maintain)
            await anyio.to_thread.run_sync(compacting.wait, 20)
            with anyio.fail_after(10):
                await store.add([row(100)])
            tg.start_soon(update)
            await anyio.wait_all_tasks_blocked()
            assert not updated.is_set()
            release.set()
    finally:
        release.set()
    assert updated.is_set()
    assert await store.count() == 26
    assert [m.importance for m in await store.get([row(0).id])] == [0.9]
    assert not store.maintenance_due()


async def test_commits_left_by_earlier_processes_count_towards_maintenance(tmp_path):
    # A one-shot command commits a write or two and exits: counting only its own commits,
    # no process ever came due, and the directory was never compacted.
    for start in range(0, 40, 4):  # ten short-lived "processes", four writes each
        store = EpisodicStore(LocalTable(tmp_path / "t"), 8)
        await store.open()
        for i in range(start, start + 4):
            await store.add([row(i)])
    reopened = EpisodicStore(LocalTable(tmp_path / "t"), 8)
    await reopened.open()
    assert reopened.maintenance_due()
    assert await reopened.maintain(force=False)
    assert await reopened.count() == 40


async def test_an_engine_without_background_work_maintains_its_table_on_the_write(open_engine):
    async with open_engine(gating={"tau_noise": -1.0, "default_gate": False}) as engine:
        for i in range(60):
            await engine.remember(f"I keep note number {i} about the garden shed.", goal=LIFE)
        versions = len(engine.episodic._table.list_versions())
        assert await engine.episodic.count() == 60
    # 60 writes made over 60 versions; maintenance keeps 20 and those made since it ran
    assert versions <= 20 + 20 + 4, versions


async def test_a_server_leaves_one_table_version_on_disk_and_a_one_shot_leaves_them(
    open_engine, tmp_path
):
    home = tmp_path / "data"
    quiet = {"tau_noise": -1.0, "default_gate": False}
    async with open_engine(home=home, gating=quiet) as engine:  # a one-shot command
        for i in range(5):
            await engine.remember(f"I keep note number {i} about the garden shed.", goal=LIFE)
        table = engine.episodic._table
    assert len(table.list_versions()) > 5  # left to the next maintenance
    async with open_engine(home=home, background=True, gating=quiet) as engine:  # a server
        for i in range(5, 10):
            await engine.remember(f"I keep note number {i} about the garden shed.", goal=LIFE)
        table = engine.episodic._table
    assert len(table.list_versions()) == 1
    async with open_engine(home=home, gating=quiet) as engine:
        assert await engine.episodic.count() == 10  # every acknowledged write is there


async def test_a_failed_inline_maintenance_does_not_fail_the_committed_write(open_engine):
    async with open_engine(gating={"tau_noise": -1.0, "default_gate": False}) as engine:

        async def broken(force: bool = True) -> bool:
            raise StoreError("the disk said no")

        engine.episodic.maintain = broken
        engine.episodic.maintenance_due = lambda: True
        result = await engine.remember("I keep the spare key under the blue pot.", goal=LIFE)
        assert result.status == "stored"
        assert [m.id for m in await engine.episodic.get([result.id])] == [result.id]


@pytest.mark.slow  # over ~5 s
async def test_the_supersession_index_answers_as_the_full_scan(open_engine, tmp_path):
    home = tmp_path / "data"
    async with open_engine(home=home, gating={"tau_noise": -1.0, "default_gate": False}) as e:
        for text in ("I live in Paris.", "I moved to Berlin.", "I moved back to Paris.",
                     "I work at Acme.", "I now work at Globex.", "I moved to Rome."):  # fmt: skip
            await e.remember(text, goal=LIFE)
            await e.consolidate()
        indexed = await e.recall("Where does the user live and work?", paths=["graph"])
    rows = {(f.subject, f.predicate, f.object): (f.superseded, f.valid_to) for f in indexed.facts}
    assert rows[("User", "lives_in", "Rome")] == (False, None)
    assert rows[("User", "lives_in", "Berlin")][0] is True
    # The same graph files read by a store without memos (the full scan of the records).
    scanned = GraphStore(JournaledDataset(home / "graph"), memo=False)
    await scanned.open()
    uncached = {
        (f.subject, f.predicate, f.object): (f.superseded, f.valid_to)
        for f in await scanned.memory_facts("default", sorted(set().union(
            *(f.sources for f in indexed.facts))))
    }  # fmt: skip
    for triple, state in uncached.items():
        if triple in rows:
            assert rows[triple] == state, triple


@pytest.mark.slow
def test_lancedb_loads_without_its_rest_client_until_it_is_asked_for():
    code = (
        "import sys\n"
        "import cranimem_mcp.buffer.lance\n"
        "assert 'lance_namespace_urllib3_client.api' not in sys.modules\n"
        "assert 'overrides' not in sys.modules or sys.version_info >= (3, 12)\n"
        "from lance_namespace_urllib3_client import ApiClient\n"
        "assert 'lance_namespace_urllib3_client.api' in sys.modules and ApiClient\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)
