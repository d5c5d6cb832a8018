"""Everything survives closing and reopening; a store refuses another embedder; the graph's
in-memory store holds what a reopen holds, nothing of what left it."""

from __future__ import annotations

import warnings
from datetime import UTC, datetime

import pytest
from rdflib import RDFS, XSD, BNode, Dataset, Graph, Literal, URIRef

from cranimem_mcp.config import load_settings
from cranimem_mcp.engine import MemoryEngine
from cranimem_mcp.errors import ConfigError
from cranimem_mcp.graph.journal import JournaledDataset
from cranimem_mcp.graph.rdf_memory import OxMemory
from cranimem_mcp.graph.store import GraphStore
from cranimem_mcp.graph.vocabulary import entity_iri
from cranimem_mcp.models import MAX_FACT_SOURCES, Entity, Extraction, Relation

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


@pytest.mark.parametrize("background", [True, False])
async def test_closing_the_engine_compacts_the_graph_journal(open_engine, tmp_path, background):
    # The journal is replayed at every open; a close writes it into the snapshot. It once
    # ran inside the background task group's cancelled scope, so it never did.
    home = tmp_path / "data"
    keep_all = {"tau_noise": -1.0, "default_gate": False}
    async with open_engine(home=home, gating=keep_all, background=background) as engine:
        await engine.remember("Alice works at Acme Robotics in Berlin.", scope="work")
        await engine.consolidate()
        journal = home / "graph" / "journal.jsonl"
        assert journal.stat().st_size > 0
    assert journal.stat().st_size == 0
    assert "Acme" in (home / "graph" / "graph.nq").read_text()
    async with open_engine(home=home, gating=keep_all) as engine:
        recalled = await engine.recall("Where does Alice work?", scope="work")
        assert {f.object for f in recalled.facts} >= {"Acme Robotics"}


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


def named_graphs(journal: JournaledDataset) -> set:
    return set(journal.memory.inner.named_graphs())


async def test_the_graph_store_keeps_nothing_of_memories_that_left_it(tmp_path):
    """Memories are linked, moved to the trash and purged, and looked up once gone, as
    consolidation and pruning do; the in-memory store then holds exactly what a reopen of the
    same files holds, graph by graph (rdflib's Memory store kept a graph object for every
    graph name ever read, and an index entry for every term of every removed triple: ~9 KiB
    per write of the soak stream). Oxigraph's memory store keeps what removals free until
    the compaction hands it a store rebuilt from the files."""
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
    assert named_graphs(journal) == named_graphs(reopened)
    assert len(named_graphs(reopened)) == 1  # the kept memory's graph
    churned = journal.memory.inner
    journal.compact()
    assert journal.memory.inner is not churned  # rebuilt from the files, nothing removed in it
    assert set(journal.ds.quads()) == set(reopened.ds.quads())
    assert named_graphs(journal) == named_graphs(reopened)


def tricky_graph() -> Graph:
    """Terms a memory's graph can hold: languages, datatypes, escapes, blank nodes."""
    g = Graph()
    s, p = (
        URIRef("https://cranimem.dev/id/s/entity/caf%C3%A9"),
        URIRef("https://cranimem.dev/rel/p"),
    )
    record = BNode()
    for o in (
        Literal("plain"),
        Literal('Café "quoted"\nnew line\ttab \\ back', lang="fr"),
        Literal("2026-12-01T10:00:00+00:00", datatype=XSD.dateTime),
        Literal(42),
        Literal("emoji 🦀 and ﬁ ligature"),
        record,
    ):
        g.add((s, p, o))
    g.add((record, RDFS.label, Literal("a record")))
    return g


def test_snapshot_load_and_compaction_keep_every_term(tmp_path):
    """The snapshot is read and rewritten by pyoxigraph, the dataset is rdflib's: both must
    give the quads rdflib itself would, through a compaction, a drop, a later put and a torn
    journal line."""
    journal = JournaledDataset(tmp_path / "graph")
    journal.open()
    a, b, c = (URIRef(f"https://cranimem.dev/id/s/memory/{n}") for n in "abc")
    journal.commit([journal.put(a, tricky_graph()), journal.put(b, tricky_graph())])
    journal.compact()
    journal.commit([journal.drop(b), journal.put(c, tricky_graph())])
    with journal.journal.open("a", encoding="utf-8") as fh:
        fh.write('{"op": "put", "graph": "https://cranimem.dev/id/s/memory/torn", "nt": "<')

    def canonical(ds: Dataset) -> set:
        # Blank nodes get new labels on every parse: compare them by position.
        return {tuple("_:b" if isinstance(t, BNode) else t for t in quad) for quad in ds.quads()}

    expected = canonical(journal.ds)
    assert len(expected) == 2 * 7  # two graphs (a and c) of seven triples
    reopened = JournaledDataset(tmp_path / "graph")
    reopened.open()
    assert canonical(reopened.ds) == expected
    reopened.compact()  # from the files: snapshot + journal, the torn line ignored
    by_rdflib = Dataset()
    with warnings.catch_warnings():  # rdflib 7's parse trips on its own deprecation
        warnings.simplefilter("ignore", DeprecationWarning)
        by_rdflib.parse(reopened.snapshot, format="nquads")
    assert canonical(by_rdflib) == expected
    assert reopened.journal.read_text() == ""
    again = JournaledDataset(tmp_path / "graph")
    again.open()
    assert canonical(again.ds) == expected
    assert {len(list(again.ds.graph(g).triples((None, None, None)))) for g in (a, c)} == {7}


def test_the_store_reads_as_rdflib_memory_did():
    """What the readers rely on: a triple many graphs hold is listed once with all of them
    (an entity's type stated in thousands of memory graphs is one triple to walk), quads
    carry their graphs, a plain literal comes back plain (Oxigraph holds it as xsd:string,
    which rdflib 7 does not equal to it), and a graph exists while it holds a quad."""
    ds = Dataset(store=OxMemory())
    shared = (URIRef("urn:e:oslo"), RDFS.label, Literal("Oslo"))
    for i in range(50):
        g = ds.graph(URIRef(f"urn:g:{i}"))
        g.add(shared)
        g.add((URIRef(f"urn:e:p{i}"), RDFS.label, Literal(f"Person {i}")))
    listed = list(ds.store.triples((None, RDFS.label, Literal("Oslo")), context=None))
    assert [triple for triple, _ in listed] == [shared]
    assert {str(c.identifier) for c in listed[0][1]} == {f"urn:g:{i}" for i in range(50)}
    assert {str(c) for *_t, c in ds.quads((*shared, None))} == {f"urn:g:{i}" for i in range(50)}
    in_odd = list(ds.store.triples_held((None, RDFS.label, None), lambda g: int(g[6:]) % 2 == 1))
    odd = [(URIRef(f"urn:e:p{i}"), RDFS.label, Literal(f"Person {i}")) for i in range(1, 50, 2)]
    assert sorted(in_odd) == sorted([shared, *odd])  # shared once, though 25 graphs pass
    assert list(ds.store.triples_held((None, RDFS.label, None), lambda g: False)) == []
    names = list(ds.store.graph_names((URIRef("urn:e:oslo"), None, None)))  # a name per quad
    assert sorted(names) == sorted(f"urn:g:{i}" for i in range(50))
    assert list(ds.store.graph_names((None, RDFS.label, Literal("Person 7")))) == ["urn:g:7"]
    label = next(iter(ds.graph(URIRef("urn:g:7")).objects(URIRef("urn:e:p7"), RDFS.label)))
    assert label == Literal("Person 7") and label.datatype is None
    typed = Literal("2026-12-01T10:00:00+00:00", datatype=XSD.dateTime)
    ds.graph(URIRef("urn:g:7")).add((URIRef("urn:e:p7"), RDFS.comment, typed))
    assert ds.graph(URIRef("urn:g:7")).value(URIRef("urn:e:p7"), RDFS.comment) == typed
    assert len(ds.graph(URIRef("urn:g:7"))) == 3
    assert len(ds.graph(URIRef("urn:g:none"))) == 0  # a read registers nothing
    ds.graph(URIRef("urn:g:3")).remove((None, None, None))
    names = {str(c.identifier) for c in ds.contexts()}
    assert "urn:g:none" not in names and "urn:g:3" not in names and "urn:g:4" in names
    assert list(ds.store.triples((Literal("x"), None, None), context=None)) == []
    assert list(ds.store.graph_names((Literal("x"), None, None))) == []
    ds.graph(URIRef("urn:g:4")).remove((Literal("x"), None, None))  # matches nothing
    assert len(ds.graph(URIRef("urn:g:4"))) == 2


async def test_a_fact_lists_its_most_recent_sources_and_counts_all(tmp_path):
    """A fact many memories state lists the ten most recently asserted (newest first) and
    counts every one in its support: one fact stated by 1,500 memories filled a recall's
    answer with their ids (48 KB at 10k memories)."""
    start = datetime(2026, 1, 1, tzinfo=UTC)
    graph = GraphStore(store=JournaledDataset(tmp_path / "graph"), memo=True)
    await graph.open()
    fact = Extraction(
        entities=[Entity(name="Ana", type="Person"), Entity(name="Oslo", type="Location")],
        relations=[Relation(subject="Ana", predicate="visited", object="Oslo")],
    )
    ids = [f"m{i:02d}" for i in range(14)]
    order = [3, 11, 0, 7, 13, 1, 9, 5, 12, 2, 8, 4, 10, 6]  # not the ids' order
    for day, i in enumerate(order):
        when = start.replace(day=day + 1)
        await graph.put("s", ids[i], fact, when, when)
    node = entity_iri("s", "Ana")
    [found] = [f for f in await graph.facts("s", [node], 1, 10) if f.object == "Oslo"]
    assert found.support == 14
    assert found.sources == [ids[i] for i in reversed(order)][:MAX_FACT_SOURCES]
    await graph.close()
