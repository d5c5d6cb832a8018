"""Consolidation off the critical path: every N writes and on the idle timer in the
background, never overlapping itself, never blocking writes while a model extracts."""

from __future__ import annotations

import threading

import anyio
import pytest

from cranimem_mcp.extraction.extractor import HeuristicExtractor
from cranimem_mcp.models import Extraction

pytestmark = pytest.mark.anyio


class HeldCommit:
    """The graph's commits held in their thread until ``release`` is set (``linking`` is set
    when one arrives): a consolidation's linking, paused part way."""

    def __init__(self, engine) -> None:
        self._quads = engine.graph._store
        self._commit = self._quads.commit
        self.linking, self.release = threading.Event(), threading.Event()

        def held(entries):
            self.linking.set()
            self.release.wait(20)
            return self._commit(entries)

        self._quads.commit = held

    def restore(self) -> None:
        self._quads.commit = self._commit


class GatedExtractor:
    """A real Extractor (the heuristic one) that waits for a go signal, like a slow LLM."""

    name = "gated"

    def __init__(self) -> None:
        self.started = anyio.Event()
        self.go = anyio.Event()
        self.calls = 0
        self.running = 0
        self.max_running = 0

    async def extract(self, texts: list[str]) -> list[Extraction]:
        self.calls += 1
        self.running += 1
        self.max_running = max(self.max_running, self.running)
        self.started.set()
        await self.go.wait()
        self.running -= 1
        return await HeuristicExtractor().extract(texts)


async def test_every_n_writes_consolidates_in_the_background(open_engine):
    async with open_engine(background=True, consolidation={"every_n_writes": 3}) as engine:
        for text in ("I live in Paris.", "I work at Acme Robotics.", "I prefer tea."):
            await engine.remember(text)
        with anyio.fail_after(30):
            await engine.wait_idle()
        (scope,) = (await engine.stats()).scopes
        assert scope.buffer_size == 0
        assert scope.last_consolidation.trigger == "every_n_writes"
        assert scope.last_consolidation.replayed == 3


async def test_idle_timer_consolidates_a_quiet_scope(open_engine):
    async with open_engine(
        background=True,
        consolidation={"every_n_writes": 0, "interval_seconds": 0.5, "idle_seconds": 0.2},
    ) as engine:
        await engine.remember("I am allergic to penicillin.")
        with anyio.fail_after(30):
            while not engine.state.reports:
                await anyio.sleep(0.05)
            await engine.wait_idle()
        (scope,) = (await engine.stats()).scopes
        assert scope.last_consolidation.trigger == "timer"
        assert scope.buffer_size == 0


async def test_writes_go_on_while_consolidation_waits_on_the_model(open_engine, minilm, tmp_path):
    from cranimem_mcp.engine import MemoryEngine
    from tests.conftest import make_settings

    extractor = GatedExtractor()
    settings = make_settings(tmp_path / "d", models={"extractor": "heuristic"})
    async with MemoryEngine(
        settings, embedder=minilm, extractor=extractor, background=False
    ) as engine:
        first = await engine.remember("I work at Acme Robotics in Berlin.")
        async with anyio.create_task_group() as tg:
            reports = []

            async def run() -> None:
                reports.append(await engine.consolidate("default"))

            tg.start_soon(run)
            tg.start_soon(run)  # a second run must wait for the first, not overlap it
            with anyio.fail_after(30):
                await extractor.started.wait()
                # The model is "thinking": a write to the same scope still completes.
                second = await engine.remember("I live in Berlin with my partner Alex.")
                assert second.status == "stored"
                forgot = await engine.forget(ids=[first.id])
                assert forgot.ids == [first.id]
            extractor.go.set()
        assert extractor.max_running == 1
        # The forgotten item stays forgotten: the first run's decision skipped it.
        (row,) = await engine.episodic.get([first.id])
        assert row.tier == "trash"
        assert sum(r.replayed for r in reports) >= 2


async def test_writes_go_on_while_consolidation_links_and_forget_waits_for_the_move(open_engine):
    # The run's first graph commit is held in its thread: a write to the scope must still
    # complete (it waited for the whole linking under the scope lock before); a forget of
    # an item being linked waits until the item has moved, then finds it in long-term.
    life = "Remember durable facts about the user's life"
    async with open_engine(gating={"tau_noise": -1.0, "default_gate": False}) as engine:
        firsts = [
            await engine.remember(text, goal=life, pin=True)
            for text in ("I work at Acme Robotics in Berlin.", "My sister Ana lives in Lisbon.")
        ]
        held = HeldCommit(engine)
        linking, release = held.linking, held.release
        reports, forgotten = [], []

        async def run() -> None:
            reports.append(await engine.consolidate("default"))

        async def forget() -> None:
            forgotten.append(await engine.forget(ids=[firsts[0].id]))

        try:
            async with anyio.create_task_group() as tg:
                tg.start_soon(run)
                await anyio.to_thread.run_sync(linking.wait, 20)
                with anyio.fail_after(10):
                    note = await engine.remember("Water the fern on Fridays.", goal=life)
                assert note.status == "stored"
                tg.start_soon(forget)
                await anyio.wait_all_tasks_blocked()
                assert not forgotten
                held.restore()
                release.set()
        finally:
            release.set()
        assert reports[0].promoted == 2
        (row,) = await engine.episodic.get([firsts[0].id])
        assert row.tier == "trash" and row.prev_tier == "longterm"
        (later,) = await engine.episodic.get([note.id])
        assert later.tier == "buffer"  # written during the run, after its read


async def test_a_run_rereads_its_items_only_when_a_change_came_since_it_read_them(open_engine):
    # A repeat merged into an item while the run links it raises the item's frequency: the
    # move must carry it (the rows are read again). With no change, nothing is read again.
    life = "Remember durable facts about the user's life"
    texts = ("I work at Acme Robotics in Berlin.", "My sister Ana lives in Lisbon.")
    async with open_engine(gating={"tau_noise": -1.0, "default_gate": False}) as engine:
        read_again = []
        get = engine.episodic.get

        async def counted_get(ids, vectors=False):
            read_again.append(list(ids))
            return await get(ids, vectors)

        engine.episodic.get = counted_get
        await engine.remember("I keep the spare key under the blue pot.", goal=life, pin=True)
        assert (await engine.consolidate("default")).promoted == 1
        assert read_again == []

        firsts = [await engine.remember(text, goal=life, pin=True) for text in texts]
        held = HeldCommit(engine)
        linking, release = held.linking, held.release
        try:
            async with anyio.create_task_group() as tg:
                tg.start_soon(engine.consolidate, "default")
                await anyio.to_thread.run_sync(linking.wait, 20)
                with anyio.fail_after(10):
                    repeat = await engine.remember(texts[1], goal=life)
                assert repeat.status == "merged" and repeat.id == firsts[1].id
                held.restore()
                release.set()
        finally:
            release.set()
        (row,) = await get([firsts[1].id])
        assert row.tier == "longterm" and row.frequency == 2
        assert read_again


async def test_parallel_tool_calls_lose_and_duplicate_nothing(open_engine):
    from mcp import Client

    from cranimem_mcp.server.tools import build_server

    texts = [f"I visited the city number {i} called Testville{i} in May." for i in range(24)]
    async with open_engine(
        gating={"tau_noise": -1.0, "default_gate": False}, episodic={"capacity": 10}
    ) as engine:
        async with Client(build_server(engine.settings, engine=engine), cache=None) as client:
            results = {}

            async def write(text: str) -> None:
                results[text] = await client.call_tool("remember", {"content": text})

            async def read(i: int) -> None:
                r = await client.call_tool("recall", {"query": f"Testville{i}"})
                assert not r.is_error

            async with anyio.create_task_group() as tg:
                for text in texts:
                    tg.start_soon(write, text)
                for i in range(8):
                    tg.start_soon(read, i)
            async with anyio.create_task_group() as tg:
                for text in texts[:6]:  # six exact repeats (modulo whitespace), in parallel
                    tg.start_soon(write, text + " ")
        assert all(not r.is_error for r in results.values())
        rows = await engine.episodic.scope_rows("default", None)
        assert len(rows) == 24  # every write stored once; the repeats merged
        assert await engine.episodic.count("default", ("buffer",)) <= 10
        assert sum(r.frequency for r in rows) == 30
        ids = {r.structured_content["id"] for r in results.values()}
        assert len(ids) == 24


async def test_a_server_without_consolidation_runs_still_maintains_its_table(open_engine):
    # Buffers that overflow before any run (no every-N-writes trigger, no timer): the table
    # was maintained only at the end of runs, so its versions piled up (600 writes: 1,122).
    sections = {
        "gating": {"tau_noise": -1.0, "default_gate": False},
        "episodic": {"capacity": 4},
        "consolidation": {"every_n_writes": 0, "interval_seconds": 0},
    }
    async with open_engine(background=True, **sections) as engine:
        ids = []
        for i in range(30):
            ids.append((await engine.remember(f"Courier route {i} passes Testville{i}.")).id)
        with anyio.fail_after(60):
            await engine.wait_idle()
        assert not engine.episodic.maintenance_due()
        assert await engine.episodic.count("default", ("buffer",)) <= 4
        assert sorted(r.id for r in await engine.episodic.get(ids)) == sorted(ids)
