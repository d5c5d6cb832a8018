"""The buffer is hard-bounded (paper B.2): while a consolidation holds its claimed items in
replay (here: waiting on a slow model), every write and restore still leaves at most
``capacity`` items in the buffer, claimed ones counted; what does not fit goes through
replay (promoted or trashed), and no acknowledged write is lost."""

from __future__ import annotations

import anyio
import pytest
from conftest import make_settings

from cranimem_mcp.engine import MemoryEngine
from cranimem_mcp.extraction.extractor import HeuristicExtractor
from cranimem_mcp.models import Extraction

pytestmark = pytest.mark.anyio

CAPACITY = 6


class SlowExtractor:
    """A real Extractor (the heuristic one) that answers only once told to, like a slow LLM:
    the consolidation calling it holds its claims until then."""

    name = "slow"

    def __init__(self) -> None:
        self.started = anyio.Event()
        self.go = anyio.Event()

    async def extract(self, texts: list[str]) -> list[Extraction]:
        self.started.set()
        await self.go.wait()
        return await HeuristicExtractor().extract(texts)


def fact(i: int) -> str:
    return f"Note {i}: the courier route number {i} passes through Testville{i} on Fridays."


async def buffer_count(engine: MemoryEngine) -> int:
    return await engine.episodic.count("default", ("buffer",))


@pytest.mark.parametrize("background", [False, True])
async def test_writes_and_restores_never_overfill_the_buffer_while_replay_holds_claims(
    minilm, tmp_path, background
):
    extractor = SlowExtractor()
    settings = make_settings(
        tmp_path / "data",
        episodic={"capacity": CAPACITY},
        gating={"tau_noise": -1.0, "default_gate": False},
        consolidation={"every_n_writes": 4 if background else 0, "interval_seconds": 0},
        models={"extractor": "heuristic"},
    )
    stored: list[str] = []

    async def write(i: int) -> None:
        result = await engine.remember(fact(i))
        assert result.status == "stored"
        assert result.buffer.size <= CAPACITY
        stored.append(result.id)

    async with MemoryEngine(
        settings, embedder=minilm, extractor=extractor, background=background
    ) as engine:
        for i in range(CAPACITY + 1):
            await write(i)
        # Forgotten from the buffer: restored below while the buffer is full of claims.
        forgotten = stored[-1]
        await engine.forget(ids=[forgotten])
        async with anyio.create_task_group() as tg:
            reports = []

            async def consolidate() -> None:
                reports.append(await engine.consolidate("default"))

            tg.start_soon(consolidate)
            with anyio.fail_after(120):
                # It (or, with background runs every 4 writes, an earlier run) has claimed
                # buffer items and waits on the model.
                await extractor.started.wait()
                for i in range(100, 115):  # one at a time: nothing else writes meanwhile
                    await write(i)
                    assert await buffer_count(engine) <= CAPACITY
                async with anyio.create_task_group() as writers:
                    for i in range(200, 210):
                        writers.start_soon(write, i)
                assert await buffer_count(engine) <= CAPACITY
                restored = await engine.restore([forgotten])
                assert restored.ids == [forgotten]
                assert await buffer_count(engine) <= CAPACITY
            extractor.go.set()
        with anyio.fail_after(120):
            await engine.wait_idle()
        assert await buffer_count(engine) <= CAPACITY
        rows = {r.id: r for r in await engine.episodic.get(stored)}
        assert sorted(rows) == sorted(set(stored))  # every acknowledged write is kept
        if not background:  # it claimed the full buffer but the one forgotten item ...
            assert reports[0].replayed == CAPACITY - 1
            for d in reports[0].decisions:  # ... and applied its decisions to all of them
                assert rows[d.id].tier == ("longterm" if d.decision == "promote" else "trash")
        assert {r.tier for r in rows.values()} <= {"buffer", "longterm", "trash"}
        assert await engine.check() == []
