"""The episodic buffer (B.2), replay (B.3), linkage (B.4) and recall (B.5), end to end on
real LanceDB and rdflib stores with real MiniLM embeddings."""

from __future__ import annotations

import time
from datetime import UTC, datetime

import anyio
import pytest

from cranimem_mcp import coordination
from cranimem_mcp.coordination import RECALL_FLUSH_SECONDS
from cranimem_mcp.models import Memory
from cranimem_mcp.recall.dual_path import mentions
from cranimem_mcp.replay.score import ReplayParams, decide, entity_counts

pytestmark = pytest.mark.anyio
TRIP = "Help the user plan their trip to Japan in May"
TRIP_FACTS = [
    "We land at Narita airport on May 3rd.",
    "I am allergic to shellfish, so no seafood restaurants please.",
    "My budget for hotels is about 150 dollars a night.",
    "I prefer ryokans with private onsen over big chain hotels.",
    "I want to see the Fushimi Inari shrine in Kyoto early in the morning.",
    "Book a day trip from Tokyo to Nikko on May 6th.",
]


@pytest.mark.object_store  # also on S3 (moto)
async def test_buffer_never_exceeds_capacity_and_overflow_goes_through_replay(open_engine):
    async with open_engine(episodic={"capacity": 3}, consolidation={"every_n_writes": 0}) as engine:
        await engine.set_goal(TRIP)
        ids, evicted = [], []
        for text in TRIP_FACTS:
            result = await engine.remember(text)
            assert result.status == "stored"
            assert result.buffer.size <= 3
            assert await engine.episodic.count("default", ("buffer",)) <= 3
            ids.append(result.id)
            evicted += result.evicted
        # The three oldest left the buffer through replay, oldest first, none silently.
        assert [d.id for d in evicted] == ids[:3]
        rows = {r.id: r for r in await engine.episodic.scope_rows("default", None)}
        assert len(rows) == 6
        for decision in evicted:
            expected = "longterm" if decision.decision == "promote" else "trash"
            assert rows[decision.id].tier == expected
            assert rows[decision.id].replay_score == pytest.approx(decision.replay_score)
        assert {rows[i].tier for i in ids[3:]} == {"buffer"}


async def test_a_server_makes_room_after_the_write_that_fills_the_buffer(open_engine):
    # Capacity 3 with room made by a batch of at least one: the write that fills the
    # buffer answers at once; the oldest item goes through replay in the background.
    sections = {"episodic": {"capacity": 3}, "consolidation": {"every_n_writes": 0}}
    async with open_engine(background=True, **sections) as engine:
        await engine.set_goal(TRIP)
        results = []
        for text in TRIP_FACTS:
            results.append(await engine.remember(text))
            assert results[-1].buffer.size <= 3
            assert await engine.episodic.count("default", ("buffer",)) <= 3
            await engine.wait_idle()  # room made: the next write evicts nothing inline
        assert all(r.status == "stored" and r.evicted == [] for r in results)
        assert await engine.episodic.count("default", ("buffer",)) == 2
        rows = {r.id: r for r in await engine.episodic.scope_rows("default", None)}
        assert len(rows) == 6  # none silently dropped
        replayed = [r for r in results if rows[r.id].tier != "buffer"]
        assert [r.id for r in replayed] == [r.id for r in results[:4]]  # oldest first
        assert all(rows[r.id].replay_score is not None for r in replayed)


async def test_a_buffer_past_capacity_at_open_is_replayed_before_any_call(open_engine, tmp_path):
    # A process killed between its write and the eviction left a buffer past capacity (as
    # does a capacity lowered since): the next open replays the oldest items first.
    home = tmp_path / "data"
    no_runs = {"every_n_writes": 0}
    async with open_engine(home=home, episodic={"capacity": 6}, consolidation=no_runs) as engine:
        await engine.set_goal(TRIP)
        ids = [(await engine.remember(text)).id for text in TRIP_FACTS]
    async with open_engine(home=home, episodic={"capacity": 4}, consolidation=no_runs) as engine:
        assert await engine.episodic.count("default", ("buffer",)) == 4
        rows = {r.id: r for r in await engine.episodic.scope_rows("default", None)}
        assert sorted(rows) == sorted(ids)
        assert [i for i in ids if rows[i].tier != "buffer"] == ids[:2]
        assert await engine.check() == []


@pytest.mark.object_store  # also on S3 (moto)
async def test_exact_duplicate_is_merged_not_stored_twice(open_engine):
    async with open_engine() as engine:
        first = await engine.remember("I prefer tea over coffee in the morning.")
        again = await engine.remember("  i prefer TEA over coffee in the morning. ")
        assert again.status == "merged"
        assert again.id == first.id
        rows = await engine.episodic.scope_rows("default", None)
        assert len(rows) == 1 and rows[0].frequency == 2


@pytest.mark.object_store  # also on S3 (moto)
async def test_low_replay_item_goes_to_trash_and_restore_brings_it_back(open_engine):
    async with open_engine(consolidation={"tau_consolidation": 0.45}) as engine:
        await engine.set_goal(TRIP)
        strong = await engine.remember("I am allergic to shellfish, so no seafood please!")
        await engine.remember("The Japan Rail Pass costs more than single tickets.")
        # A near-repeat of what is already stored: little surprise, so little utility.
        weak = await engine.remember("The Japan Rail Pass costs more than buying single tickets.")
        assert weak.utility.base < 0.45 < strong.utility.base
        report = await engine.consolidate("default")
        by_id = {d.id: d for d in report.decisions}
        assert by_id[weak.id].decision == "trash" and "<= tau" in by_id[weak.id].reason
        assert by_id[strong.id].decision == "promote"
        (scope,) = (await engine.stats()).scopes
        assert scope.buffer_size == 0 and scope.trash >= 1
        recalled = await engine.recall("How much does the rail pass cost?")
        assert weak.id not in {it.id for it in recalled.items}

        restored = await engine.restore([weak.id])
        assert restored.ids == [weak.id]
        recalled = await engine.recall("How much does the rail pass cost?")
        assert weak.id in {it.id for it in recalled.items}
        (row,) = await engine.episodic.get([weak.id])
        assert row.tier == "longterm"


def test_repeated_entity_raises_the_replay_score():
    params = ReplayParams(tau_consolidation=0.3, alpha=0.5, freq_cap=4)
    lonely, echoed, echo = (
        Memory(id="m_" + n * 20, scope="default", tier="buffer", content=f"about {name}",
               content_hash=n * 32, created_at=datetime(2026, 1, 1, tzinfo=UTC),
               entities=[name], base_utility=0.4)
        for n, name in (("1", "Kyoto"), ("2", "Osaka"), ("3", "osaka "))
    )  # fmt: skip
    rows = [lonely, echoed, echo]
    counts = entity_counts(rows)
    d_lonely, d_echoed, _ = decide(rows, buffer_counts=counts, graph_support={}, params=params)
    assert d_echoed.replay_score > d_lonely.replay_score == pytest.approx(0.4)
    # ... and so does an entity the graph already knows.
    (d_known,) = decide([lonely], buffer_counts=counts, graph_support={"kyoto": 2}, params=params)
    assert d_known.replay_score > d_lonely.replay_score
    # Enough repetition flips a borderline item from trash to promote.
    border = ReplayParams(tau_consolidation=0.42, alpha=0.5, freq_cap=4)
    (alone,) = decide([echoed], buffer_counts={}, graph_support={}, params=border)
    (again,) = decide([echoed], buffer_counts=counts, graph_support={}, params=border)
    assert (alone.decision, again.decision) == ("trash", "promote")


async def test_entity_repeated_across_the_buffer_raises_the_score_in_a_real_replay(open_engine):
    # The gate is not under test here: let every write in.
    async with open_engine(
        consolidation={"tau_consolidation": 0.33}, gating={"tau_noise": -1.0, "default_gate": False}
    ) as engine:
        a = await engine.remember("Hoshino Resorts is based in Karuizawa.")
        dry = await engine.consolidate("default", dry_run=True)
        alone = dry.decisions[0].replay_score
        b = await engine.remember("Kenji works at Hoshino Resorts.")
        report = await engine.consolidate("default")
        by_id = {d.id: d for d in report.decisions}
        assert by_id[a.id].replay_score > alone
        assert "entity repeats 1" in by_id[a.id].reason
        assert "entity repeats 1" in by_id[b.id].reason


@pytest.mark.object_store  # also on S3 (moto)
async def test_two_hop_question_is_answered_from_graph_facts(open_engine):
    async with open_engine() as engine:
        await engine.set_goal("Help the user with their colleagues and companies")
        a = await engine.remember("Alice works at Acme Robotics.")
        b = await engine.remember("Acme Robotics is based in Berlin.")
        await engine.remember("Bob works at Globex.")
        await engine.consolidate()
        result = await engine.recall(
            "Where is the company that Alice works for based?", paths=["graph"]
        )
        # No single memory says where Alice's company is; the walk Alice -> Acme -> Berlin does.
        triples = {(f.subject, f.predicate, f.object): f for f in result.facts}
        assert ("Alice", "works_at", "Acme Robotics") in triples
        hop2 = triples[("Acme Robotics", "based_in", "Berlin")]
        assert hop2.hops == 2 and hop2.sources == [b.id]
        assert triples[("Alice", "works_at", "Acme Robotics")].sources == [a.id]
        assert "Berlin" in result.context and result.items == []
        assert ("Bob", "works_at", "Globex") not in triples


def test_a_text_mentions_its_spans_longest_first_then_the_speaker():
    names = mentions("I met Ana's brother.", max_words=2)
    assert names[:4] == ["I met", "I met", "met Ana's", "met Ana"]
    assert names[4:6] == ["Ana's brother", "Ana's brother"]
    assert {"Ana", "brother"} <= set(names) and "brother." not in names
    assert names[-1] == "User" and "User" not in mentions("Ana's brother")
    assert not any(len(n.split()) > 2 for n in names)


async def test_repeated_fact_is_reinforced_not_duplicated(open_engine):
    async with open_engine() as engine:
        await engine.set_goal("Help the user with their colleagues and companies")
        await engine.remember("Alice works at Acme Robotics.")
        await engine.consolidate()
        await engine.remember("As I said, Alice works at Acme Robotics since 2019.")
        report = await engine.consolidate()
        assert report.triples_reinforced == 1
        result = await engine.recall("Alice", paths=["graph"])
        works = [f for f in result.facts if f.predicate == "works_at"]
        assert len(works) == 1 and works[0].support == 2


@pytest.mark.object_store  # also on S3 (moto)
async def test_recall_merges_both_paths_with_labels_and_counts_access(open_engine, tmp_path):
    home = tmp_path / "data"
    async with open_engine(home) as engine:
        await engine.set_goal(TRIP)
        kept = await engine.remember("I am allergic to shellfish, so no seafood restaurants.")
        await engine.consolidate()
        recent = await engine.remember("We land at Narita airport on May 3rd.")
        result = await engine.recall("Which food must I avoid and when do we land?")
        paths = {it.id: it.path for it in result.items}
        assert paths[kept.id] == "memory" and paths[recent.id] == "recent"
        assert f"[memory {kept.id} " in result.context
        assert f"[recent {recent.id} " in result.context
        assert "[fact " in result.context

        # A recall counts for the memories its context block shows (the items hold the whole
        # ranking of k, weak matches too).
        def read(result):
            return [it.id for it in result.items if f" {it.id} " in result.context]

        seen = read(result)
        seen += read(await engine.recall("Which food must I avoid?"))
        # Recall counts are written in one batch, before a consolidation reads them.
        report = await engine.consolidate()
        (decision,) = [d for d in report.decisions if d.id == recent.id]
        assert f"recalls {seen.count(recent.id)}]" in decision.reason
        seen += read(await engine.recall("When do we land?"))
    # ... and at close: nothing counted is lost.
    async with open_engine(home) as engine:
        for memory in (kept, recent):
            (row,) = await engine.episodic.get([memory.id])
            assert row.access_count == seen.count(memory.id) >= 2


async def test_recall_counts_are_written_in_the_background(open_engine):
    async with open_engine(background=True) as engine:
        kept = await engine.remember("I am allergic to shellfish, so no seafood restaurants.")
        await engine.recall("Which food must I avoid?")
        # A bound on a hang, not on speed (it was 50 polls of 0.1 s: 5 s, on a busy machine).
        with anyio.fail_after(60):
            while not (row := (await engine.episodic.get([kept.id]))[0]).access_count:
                await anyio.sleep(0.1)
        assert row.access_count == 1 and row.last_access is not None


async def test_a_recall_embeds_once_searches_once_and_its_counts_are_written_in_a_batch(
    open_engine,
):
    # Issue 37: a recall embeds its query in one call, runs one hybrid search in its scope,
    # and writes no access counts itself: ten recalls' counts go in one commit at close
    # (or one per RECALL_FLUSH_SECONDS of recalls, in the background).
    query = "Which food must I avoid?"
    embedded, searched, touched = [], [], []
    async with open_engine(background=True) as engine:
        kept = await engine.remember("I am allergic to shellfish, so no seafood restaurants.")
        await engine.remember("Our flight to Oslo lands at 9 in the evening.")
        embed, hybrid, touch = engine.embedder.embed, engine.episodic.hybrid, engine.episodic.touch

        async def counted_embed(texts):
            if query in texts:
                embedded.append(list(texts))
            return await embed(texts)

        async def counted_hybrid(*args, **kwargs):
            searched.append(args[0])
            return await hybrid(*args, **kwargs)

        async def counted_touch(counts, when):
            touched.append(dict(counts))
            return await touch(counts, when)

        engine.embedder.embed = counted_embed
        engine.episodic.hybrid = counted_hybrid
        engine.episodic.touch = counted_touch
        started = time.monotonic()
        for _ in range(10):
            result = await engine.recall(query)
        took = time.monotonic() - started
        assert kept.id in {it.id for it in result.items}
    assert embedded == [[query]] * 10
    assert searched == ["default"] * 10
    assert 1 <= len(touched) <= 1 + int(took / RECALL_FLUSH_SECONDS)
    assert sum(counts.get(kept.id, 0) for counts in touched) == 10


async def test_a_background_flush_of_recall_counts_maintains_the_table_when_due(
    open_engine, monkeypatch
):
    # A server that only answers recalls commits their counts; the flush then starts the
    # table's maintenance when due, as a write would (else every search reads more fragments).
    monkeypatch.setattr(coordination, "RECALL_FLUSH_SECONDS", 0.2)
    async with open_engine(background=True) as engine:
        kept = await engine.remember("I am allergic to shellfish, so no seafood restaurants.")
        asked = []
        engine._consolidator.maintain_when_due = lambda: asked.append(True)
        await engine.recall("Which food must I avoid?")
        with anyio.fail_after(60):  # a bound on a hang, not on speed
            while not asked:
                await anyio.sleep(0.05)
        (row,) = await engine.episodic.get([kept.id])
        assert row.access_count == 1


@pytest.mark.object_store  # also on S3 (moto)
async def test_recall_counts_of_different_sizes_add_up_in_one_commit_per_size(open_engine):
    # Counts of 3, 1 and 2 recalls: each row's count grows by its own, in one commit per
    # distinct count (an update that adds in place; Lance's update takes no CASE).
    async with open_engine() as engine:
        ids = [
            (await engine.remember(text)).id
            for text in ("I water the ferns on Sundays.", "My bike lock code is not written down.",
                         "Our book club meets on the first Thursday.")
        ]  # fmt: skip
        (old,) = await engine.episodic.get(ids[:1])
        commits = []
        write = engine.episodic._write

        async def counted(*args, **kwargs):
            commits.append(True)
            return await write(*args, **kwargs)

        engine.episodic._write = counted
        await engine.episodic.touch(dict(zip(ids, (3, 1, 2), strict=True)), old.created_at)
        assert len(commits) == 3
        rows = {m.id: m for m in await engine.episodic.get(ids)}
        assert [rows[i].access_count for i in ids] == [3, 1, 2]
        assert rows[ids[0]].last_access == old.created_at
        await engine.episodic.touch({ids[1]: 4}, old.created_at)
        assert (await engine.episodic.get(ids[1:2]))[0].access_count == 5


@pytest.mark.object_store  # also on S3 (moto)
async def test_scopes_do_not_mix(open_engine):
    async with open_engine() as engine:
        await engine.remember("I work at Acme Robotics.", scope="work")
        await engine.remember("I live in Paris with my partner Alex.", scope="home")
        result = await engine.recall("Where do I work?", scope="home")
        assert all("Acme" not in it.content for it in result.items)
