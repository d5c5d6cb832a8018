"""Everything survives closing and reopening; a store refuses another embedder; the graph's
in-memory store holds what a reopen holds, nothing of what left it."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from rdflib import Dataset

from cranimem_mcp.config import load_settings
from cranimem_mcp.engine import MemoryEngine
from cranimem_mcp.errors import ConfigError
from cranimem_mcp.graph import GraphStore
from cranimem_mcp.journal import JournaledDataset
from cranimem_mcp.models import Entity, Extraction, Relation

pytestmark = pytest.mark.anyio


@pytest.mark.object_store  # also on S3 (moto)
@pytest.mark.slow  # over ~5 s
async def test_everything_survives_closing_and_reopening(open_engine, tmp_path):
    home = tmp_path / "data"
    async with open_engine(home=home, gating={"tau_noise": -1.0, "default_gate": False}) as engine:
        await engine.set_goal("Help the user with their colleagues and companies", scope="work")
        a = await engine.remember("Alice works at Acme Robotics.", scope="work")
        b = await engine.remember("Acme Robotics is based in Berlin.", scope="work")
        await engine.consolidate()
        recent = await engine.remember("Bob joined Globex last week.", scope="work")
        trashed = await engine.remember("I use Neovim.", scope="work")
        await engine.forget(ids=[trashed.id], scope="work")
        await engine.remember("NASA released new photos today.", scope="work", goal="x" * 5)
        before = await engine.stats()
        recall_before = await engine.recall("Where is Alice's company based?", scope="work")
    async with open_engine(home=home, gating={"tau_noise": -1.0, "default_gate": False}) as engine:
        after = await engine.stats()
        assert after.scopes == before.scopes
        assert engine.goal_of("work") == "Help the user with their colleagues and companies"
        recall_after = await engine.recall("Where is Alice's company based?", scope="work")
        assert {f.object for f in recall_after.facts} >= {"Acme Robotics", "Berlin"}
        assert {it.id for it in recall_after.items} == {it.id for it in recall_before.items}
        rows = {r.id: r.tier for r in await engine.episodic.scope_rows("work", None)}
        assert rows[a.id] == rows[b.id] == "longterm"
        assert rows[recent.id] == "buffer" and rows[trashed.id] == "trash"
        await engine.restore([trashed.id], scope="work")


async def test_a_store_refuses_a_different_embedder(open_engine, tmp_path):
    home = tmp_path / "data"
    async with open_engine(home=home) as engine:
        await engine.remember("I live in Paris.")

    class OtherEmbedder:
        id = "other:model"
        dim = 384

        async def embed(self, texts):  # pragma: no cover - never reached
            raise AssertionError

    with pytest.raises(ConfigError, match="refusing to open"):
        async with MemoryEngine(load_settings(home=home), embedder=OtherEmbedder()):
            pass


async def test_data_directory_is_private(open_engine, tmp_path):
    home = tmp_path / "data"
    async with open_engine(home=home) as engine:
        await engine.remember("I live in Paris.")
    assert home.stat().st_mode & 0o777 == 0o700
    assert (home / "state.json").stat().st_mode & 0o777 == 0o600


def index_entries(ds: Dataset) -> int:
    """Every entry of rdflib's Memory store: the three nested indexes (at every level), the
    graphs registered and the graph objects kept by name."""
    store = ds.store
    count = len(store._Memory__context_obj_map) + len(store._Memory__all_contexts)
    for index in (store._Memory__spo, store._Memory__pos, store._Memory__osp):
        count += sum(1 + len(inner) + sum(map(len, inner.values())) for inner in index.values())
    return count


async def test_the_graph_store_keeps_nothing_of_memories_that_left_it(tmp_path):
    """Memories are linked, moved to the trash and purged, and looked up once gone, as
    consolidation and pruning do; the in-memory store then holds exactly what a reopen of the
    same files holds. rdflib's own Memory store kept an empty index entry for every term of
    every removed triple (a memory's IRI, its id and timestamps as literals) and a graph
    object for every graph name ever read: ~9 KiB per write of the soak stream."""
    now = datetime.now(UTC)

    def about(i: int) -> Extraction:
        return Extraction(
            entities=[
                Entity(name=f"Person {i}", type="Person"),
                Entity(name="Oslo", type="Location"),
            ],
            relations=[Relation(subject=f"Person {i}", predicate="lives in", object="Oslo")],
        )

    journal = JournaledDataset(tmp_path / "graph")
    graph = GraphStore(store=journal, memo=True)
    await graph.open()
    await graph.put("s", "kept", about(0), now, now)
    for i in range(1, 60):
        mid = f"gone-{i}"
        await graph.put("s", mid, about(i), now, now)
        await graph.deactivate("s", [mid])
        await graph.retract("s", [mid])
        assert not await graph.has_memory("s", mid)
    assert await graph.has_memory("s", "kept")
    await graph.close()

    reopened = JournaledDataset(tmp_path / "graph")
    reopened.open()
    assert set(journal.ds.quads()) == set(reopened.ds.quads())
    assert index_entries(journal.ds) == index_entries(reopened.ds)
