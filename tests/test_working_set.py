"""The working set: an in-memory copy of each scope's live memories must answer exactly as
the LanceDB table would, through every kind of change, and stay within its bound."""

from __future__ import annotations

import random
from dataclasses import replace
from datetime import UTC, datetime

import numpy as np
import pytest

from cranimem_mcp.buffer.episodic import EpisodicStore
from cranimem_mcp.buffer.lance import LinearCombinationReranker, RRFReranker
from cranimem_mcp.buffer.records import scope_filter
from cranimem_mcp.buffer.table import LocalTable, SharedTable
from cranimem_mcp.buffer.working_set import LIVE, MIRRORED, Entry, ScopeSet, WorkingSet
from cranimem_mcp.errors import StoreError
from cranimem_mcp.models import Memory

pytestmark = pytest.mark.anyio

FACTS = [
    "I am allergic to peanuts and shellfish.",
    "My sister Ana lives in Lisbon and works as an architect.",
    "The Ferrous project deploys every Friday at 16:00 with Terraform.",
    "I prefer window seats on long flights.",
    "Our team meeting moved to Tuesday at 10:30.",
    "Priya leads the Atlas migration to PostgreSQL.",
    "I started learning Rust in 2023 for the Kestrel project.",
    "We land at Narita airport on May 3rd.",
    "My budget for the Japan trip is 3000 euros.",
    "The Atlas API rate limit is 600 requests per minute.",
    "I moved to Berlin in March 2021.",
    "Grace recommended a ramen place near Shibuya station.",
]


def unit(rng: np.random.Generator, dim: int = 8) -> np.ndarray:
    v = rng.standard_normal(dim).astype(np.float32)
    return v / np.linalg.norm(v)


def row(memory_id: str, tier: str, text: str, turn: int = 0, scope: str = "s") -> Memory:
    stamp = datetime(2026, 1, 1, tzinfo=UTC)
    return Memory(id=memory_id, scope=scope, tier=tier, content=text, content_hash=f"h-{text}",
                  created_at=stamp, turn=turn)  # fmt: skip


def entry(memory_id: str, tier: str, text: str, turn: int = 0, scope: str = "s") -> Entry:
    return Entry.of(row(memory_id, tier, text, turn, scope))


def test_scope_set_answers_like_a_scan():
    rng = np.random.default_rng(1)
    mirrored = ScopeSet(dim=8, capacity=2)  # grows several times below
    truth: dict[str, tuple[str, np.ndarray]] = {}
    for i in range(40):
        memory_id, tier = f"m{i}", ("buffer", "longterm")[i % 2]
        vector = unit(rng)
        mirrored.put(entry(memory_id, tier, f"text {i}", i), vector)
        truth[memory_id] = (tier, vector)
    for i in range(0, 40, 3):
        mirrored.remove(f"m{i}")
        truth.pop(f"m{i}")
    mirrored.put(entry("m1", "buffer", "text 1 again", 1), unit(rng))  # replaced in place
    truth["m1"] = ("buffer", mirrored._vectors[mirrored._slot["m1"]].copy())
    query = unit(rng)
    for tiers in (("buffer",), ("longterm",), LIVE):
        want = sorted(
            ((float(v @ query), i) for i, (t, v) in truth.items() if t in tiers), reverse=True
        )
        got = mirrored.nearest(query, tiers, 5)
        assert [e.id for e, _ in got] == [i for _, i in want[:5]]
        assert [round(s, 5) for _, s in got] == [round(s, 5) for s, _ in want[:5]]
        assert mirrored.count(tiers) == len(want)
        assert len(mirrored.nearest(query, tiers, 1000)) == len(want)
    assert mirrored.find_hash("h-text 1") is None  # its text changed
    assert mirrored.find_hash("h-text 1 again") == "m1"
    assert mirrored.find_hash("h-text 3") is None  # removed
    assert len(mirrored) == len(truth)


def test_what_a_recall_asks_again_follows_every_change_in_between():
    # The cosines to the last query vector and the ordered entries are kept between
    # changes: a put or a remove in between must show in the next answer.
    rng = np.random.default_rng(4)
    mirrored = ScopeSet(dim=8, capacity=2)
    query = unit(rng)
    mirrored.put(entry("a", "buffer", "a", 1), unit(rng))
    assert [e.id for e, _ in mirrored.nearest(query, LIVE, 5)] == ["a"]
    assert [e.id for e in mirrored.entries(LIVE)] == ["a"]
    for n in range(2, 6):  # grows the matrix, the same query vector each time
        mirrored.put(entry(f"b{n}", "longterm", f"b{n}", n), query * (1.0 - 0.01 * n))
        got = mirrored.nearest(query, LIVE, 10)
        assert got[0][0].id == "b2" and len(got) == n
        assert [e.id for e in mirrored.entries(LIVE)][-1] == f"b{n}"
    mirrored.remove("b2")
    assert mirrored.nearest(query, LIVE, 1)[0][0].id == "b3"
    assert "b2" not in [e.id for e in mirrored.entries(LIVE)]
    mirrored.put(entry("b3", "trash", "b3", 3), query)  # to the trash: out of the live tiers
    assert mirrored.nearest(query, LIVE, 1)[0][0].id == "b4"
    assert mirrored.nearest(query, ("trash",), 1)[0][0].id == "b3"
    listed = mirrored.entries(LIVE)
    listed.clear()  # the caller's own list
    assert len(mirrored.entries(LIVE)) == 3


def test_the_trash_is_mirrored_and_searched_by_tier_but_is_never_a_duplicate():
    rng = np.random.default_rng(3)
    mirrored = ScopeSet(dim=8)
    gone, kept = unit(rng), unit(rng)
    mirrored.put(entry("t1", "trash", "gone text"), gone)
    mirrored.put(entry("l1", "buffer", "kept text"), kept)
    assert mirrored.find_hash("h-gone text") is None  # a new write of it is no repeat
    assert mirrored.find_hash("h-kept text") == "l1"
    assert [e.id for e, _ in mirrored.nearest(gone, ("trash",), 5)] == ["t1"]
    assert [e.id for e, _ in mirrored.nearest(gone, LIVE, 5)] == ["l1"]
    assert mirrored.count(LIVE) == 1 and mirrored.count(("trash",)) == 1


def test_working_set_is_bounded_and_least_recently_used_leaves_first():
    rng = np.random.default_rng(2)
    ws = WorkingSet(dim=8, max_rows=10)
    for scope in ("a", "b"):
        ws.install(scope, [entry(f"{scope}{i}", "buffer", f"{scope}{i}", scope=scope)
                           for i in range(4)], [unit(rng) for _ in range(4)])  # fmt: skip
    assert ws.get("a") is not None  # a is now the most recently used
    ws.install("c", [entry(f"c{i}", "buffer", f"c{i}", scope="c") for i in range(4)],
               [unit(rng) for _ in range(4)])  # fmt: skip
    assert ws.rows() <= 10 and ws.get("b") is None and ws.get("a") is not None
    ws.install("big", [entry(f"x{i}", "buffer", f"x{i}", scope="big") for i in range(11)],
               [unit(rng) for _ in range(11)])  # fmt: skip
    assert ws.get("big") is None and not ws.wanted("big")  # never mirrored: LanceDB answers
    # Growing past the bound through writes evicts the others, then the scope itself.
    ws.apply([replace(row(f"a{i}", "buffer", f"more {i}", scope="a"), vector=unit(rng))
              for i in range(4, 9)])  # fmt: skip
    assert ws.rows() <= 10
    # A committed row without its vector cannot be followed: the scope is dropped.
    ws.apply([row("a0", "buffer", "a0", scope="a")])
    assert ws.get("a") is None and ws.wanted("a")


def at(location: dict, folder) -> dict:
    """Where a store of this test lives: ``folder``, or a table of its own in the test's S3
    bucket (``episodic_location``), shared as replicas share it."""
    if not location:
        return {"location": LocalTable(folder)}
    uri = f"{location['uri']}/{folder.name}"
    return {"location": SharedTable(uri, location["storage_options"])}


async def _mirror_matches_table(store: EpisodicStore, scope: str) -> None:
    """What the working set holds for ``scope`` is exactly the table's rows, trash included.
    (Alone on its table the store follows every change in place; on a shared one a
    maintenance, whose commits cannot be told from another writer's, drops it: then it
    reloads on next use.)"""
    if store._shared:
        await store.count(scope, LIVE)
    mirrored = store._ws.get(scope)
    assert mirrored is not None
    rows = await store.scope_rows(scope, MIRRORED, vectors=True)
    assert {r.id for r in rows} == set(mirrored._slot)
    for r in rows:
        assert mirrored.entry(r.id) == Entry.of(r)
        vector = np.asarray(r.vector, dtype=np.float32)
        assert mirrored.similarity(r.id, vector) == pytest.approx(1.0, abs=1e-5)
    assert await store.count(scope, ("buffer",)) == sum(r.tier == "buffer" for r in rows)


@pytest.mark.object_store  # also on S3 (moto)
async def test_the_mirror_follows_every_kind_of_change(open_engine):
    """Remember, merge, overflow, consolidation, forget (soft and hard), restore: after each,
    the mirror equals the table, and a mirrored engine answers as an unmirrored one."""
    async with open_engine(episodic={"capacity": 5}) as engine:
        await engine.set_goal("Plan my work and my trip to Japan; remember my constraints.")
        store = engine.episodic
        ids = []
        for text in FACTS[:8]:
            r = await engine.remember(text)
            ids.append(r.id)
        await _mirror_matches_table(store, "default")  # includes overflow evictions
        assert (await engine.remember(FACTS[0])).status == "merged"
        await engine.consolidate()
        await _mirror_matches_table(store, "default")
        stored = [i for i in ids if i]
        await engine.forget(ids=[stored[0]])
        await _mirror_matches_table(store, "default")
        await engine.restore([stored[0]])
        await _mirror_matches_table(store, "default")
        await engine.forget(ids=[stored[1]], hard=True)
        await _mirror_matches_table(store, "default")
        for text in FACTS[8:]:
            await engine.remember(text)
        await _mirror_matches_table(store, "default")
        # A forgotten text is not a duplicate any more; its twin in the trash is not found.
        again = await engine.remember(FACTS[1])
        assert again.status in ("stored", "rejected")
        await _mirror_matches_table(store, "default")

        queries = ["What can't I eat?", "When do we land in Japan?", "Atlas API limits",
                   "Who is Ana?", "deploy schedule Ferrous"]  # fmt: skip
        mirrored = [await engine.recall(q) for q in queries]
        store._ws.max_rows = 0  # the same engine, now asking LanceDB for everything
        store._ws.drop()
        plain = [await engine.recall(q) for q in queries]
    for a, b in zip(mirrored, plain, strict=True):
        assert [(i.id, i.score) for i in a.items] == [(i.id, i.score) for i in b.items]
        assert a.context == b.context


@pytest.mark.object_store  # also on S3 (moto)
@pytest.mark.parametrize("fusion", ["rrf", "linear"])
async def test_hybrid_search_matches_lancedb_hybrid_query(tmp_path, fusion, episodic_location):
    """The mirrored hybrid search (vector half in memory, full text in LanceDB, fused by the
    same LanceDB reranker) ranks exactly as LanceDB's own hybrid query does, and as the
    unmirrored search (both halves in LanceDB); the score each shows never rises down the
    list."""
    rng = random.Random(3)
    nrng = np.random.default_rng(3)
    words = "alpha beta gamma delta trip Japan budget deploy Friday Atlas Rust ramen".split()
    mirrored = EpisodicStore(**at(episodic_location, tmp_path / "a"), dim=16, fusion=fusion)
    plain = EpisodicStore(
        **at(episodic_location, tmp_path / "b"), dim=16, working_set_rows=0, fusion=fusion
    )
    await mirrored.open()
    await plain.open()
    stamp = datetime(2026, 1, 1, tzinfo=UTC)
    rows = []
    for i in range(300):
        text = " ".join(rng.choice(words) for _ in range(6)) + f" note {i}"
        rows.append(Memory(id=f"m_{i:020x}", scope="s" if i % 3 else "other",
                           tier=("buffer", "longterm", "trash")[i % 3 if i % 3 else 1],
                           content=text, content_hash=f"{i:032x}", turn=i,
                           vector=unit(nrng, 16).tolist(), created_at=stamp))  # fmt: skip
    for store in (mirrored, plain):
        await store.add(rows)
    for q in ("Japan trip budget", "deploy Friday", "ramen", "nothing matches zzz", ""):
        qvec = unit(nrng, 16)
        want = await plain.hybrid("s", qvec, q, LIVE, 8)
        got = await mirrored.hybrid("s", qvec, q, LIVE, 8)
        assert [h.entry for h in got] == [h.entry for h in want]
        assert [round(h.similarity, 5) for h in got] == [
            round(h.similarity, 5) for h in want]  # fmt: skip
        assert [h.fused for h in got] == pytest.approx([h.fused for h in want], abs=1e-5)
        assert [h.fused for h in got] == sorted((h.fused for h in got), reverse=True)
        if q.strip() and q != "nothing matches zzz":
            reranker = LinearCombinationReranker() if fusion == "linear" else RRFReranker()
            lance = (
                plain._table.search(query_type="hybrid", vector_column_name="vector")
                .vector(qvec.tolist()).text(q).distance_type("cosine").rerank(reranker)
                .where(scope_filter("s", LIVE), prefilter=True).limit(8).to_list()
            )  # fmt: skip
            assert [h.entry.id for h in got] == [r["id"] for r in lance]
    assert mirrored._ws.get("s") is not None and plain._ws.get("s") is None


@pytest.mark.object_store  # also on S3 (moto)
async def test_a_failed_write_drops_the_mirror(tmp_path, episodic_location):
    store = EpisodicStore(**at(episodic_location, tmp_path / "e"), dim=8)
    await store.open()
    rng = np.random.default_rng(4)
    stamp = datetime(2026, 1, 1, tzinfo=UTC)
    base = {"scope": "s", "tier": "buffer", "created_at": stamp, "turn": 1}
    await store.add([Memory(**base, id="m_" + "0" * 20, content="one", content_hash="a" * 32,
                            vector=unit(rng).tolist())])  # fmt: skip
    assert await store.count("s", ("buffer",)) == 1 and store._ws.get("s") is not None
    with pytest.raises(StoreError):  # a vector of the wrong width: the commit fails
        await store.add([Memory(**base, id="m_" + "1" * 20, content="two",
                                content_hash="b" * 32, vector=[0.0] * 3)])  # fmt: skip
    assert store._ws.get("s") is None
    assert await store.count("s", ("buffer",)) == 1


def test_arrow_allocates_with_malloc_once_a_table_is_connected(tmp_path):
    # The working set's rows come through Arrow: on its own pool (mimalloc) what they free
    # never goes back to the OS, on malloc's a trim returns it (heap.arrow_on_malloc).
    import pyarrow as pa

    from cranimem_mcp.buffer.table import connect

    connect(tmp_path / "db", {}, shared=False)
    assert pa.default_memory_pool().backend_name == "system"
