"""Facts change: supersession instead of piling up, as_of recall, event times, decay."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta

import pytest

from cranimem_mcp.graph.journal import JournaledDataset
from cranimem_mcp.graph.provenance import Provenance
from cranimem_mcp.graph.store import GraphStore
from cranimem_mcp.models import Entity, Extraction, Relation
from cranimem_mcp.temporal import (
    Source,
    Validity,
    decay,
    observed_at,
    outdated,
    supersession,
)

pytestmark = pytest.mark.anyio
LIFE = "Remember durable facts about the user's life"


def triples(facts, current_only=False):
    return {
        (f.subject, f.predicate, f.object) for f in facts if not (current_only and f.superseded)
    }


async def test_a_move_supersedes_the_old_home_and_keeps_it(open_engine):
    async with open_engine(gating={"tau_noise": -1.0, "default_gate": False}) as engine:
        paris = await engine.remember("I live in Paris.", goal=LIFE)
        await engine.consolidate()
        between = datetime.now(UTC)
        berlin = await engine.remember("I moved to Berlin.", goal=LIFE)
        (ended,) = berlin.superseded
        assert (ended.subject, ended.predicate, ended.object) == ("User", "lives_in", "Paris")
        assert ended.superseded and ended.valid_to == berlin.observed_at
        await engine.consolidate()

        now = await engine.recall("Where does the user live?", paths=["graph"])
        facts = {(f.subject, f.predicate, f.object): f for f in now.facts}
        assert facts[("User", "lives_in", "Berlin")].superseded is False
        assert facts[("User", "lives_in", "Berlin")].valid_to is None
        old = facts[("User", "lives_in", "Paris")]  # kept, not deleted, and labelled
        assert old.superseded and old.sources == [paris.id]
        assert "previously, until" in now.context
        assert now.context.index("Berlin") < now.context.index("Paris")

        then = await engine.recall("Where does the user live?", paths=["graph"], as_of=between)
        assert ("User", "lives_in", "Paris") in triples(then.facts)
        assert ("User", "lives_in", "Berlin") not in triples(then.facts)
        rows = {r.id for r in await engine.episodic.scope_rows("default", None)}
        assert {paris.id, berlin.id} <= rows


async def test_job_change_and_changed_preference(open_engine):
    async with open_engine(gating={"tau_noise": -1.0, "default_gate": False}) as engine:
        await engine.remember("I work at Acme Robotics.", goal=LIFE)
        await engine.remember("I prefer tea in the morning.", goal=LIFE)
        await engine.consolidate()
        job = await engine.remember("I work at Globex now.", goal=LIFE)
        taste = await engine.remember("I prefer coffee these days.", goal=LIFE)
        assert triples(job.superseded) == {("User", "works_at", "Acme Robotics")}
        assert triples(taste.superseded) == {("User", "prefers", "tea")}
        await engine.consolidate()
        result = await engine.recall("Where do I work and what do I drink?", paths=["graph"])
        current = triples(result.facts, current_only=True)
        assert {("User", "works_at", "Globex"), ("User", "prefers", "coffee")} <= current
        assert ("User", "works_at", "Acme Robotics") not in current


async def test_facts_change_only_when_they_change(open_engine):
    """A preference is many-valued: an unrelated new one ends nothing (it once ended dark
    mode). A person has one manager at a time: a new one ends the old."""
    async with open_engine(gating={"tau_noise": -1.0, "default_gate": False}) as engine:
        await engine.remember("I prefer dark mode in every editor.", goal=LIFE)
        await engine.remember("My manager is Priya.", goal=LIFE)
        await engine.consolidate()
        units = await engine.remember("I prefer metric units for recipes.", goal=LIFE)
        manager = await engine.remember("My new manager is Tom.", goal=LIFE)
        assert triples(units.superseded) == set()
        assert triples(manager.superseded) == {("User", "has_manager", "Priya")}
        await engine.consolidate()
        result = await engine.recall("What do I prefer?", paths=["graph"])
        current = triples(result.facts, current_only=True)
        assert {("User", "prefers", "dark mode"), ("User", "prefers", "metric units")} <= current


@pytest.mark.parametrize("linked", [True, False], ids=["in the graph", "in the buffer"])
async def test_a_denial_ends_the_fact_it_denies(open_engine, linked):
    """ "I no longer work at Acme" once stored (User, works_at, Acme) itself (the "no" hangs
    on "longer"); now it is a denial, and a denial ends the fact, linked or not yet."""
    async with open_engine(gating={"tau_noise": -1.0, "default_gate": False}) as engine:
        await engine.remember("I work at Acme Robotics.", goal=LIFE)
        await engine.remember("I live in Lyon.", goal=LIFE)
        if linked:
            await engine.consolidate()
        quit_ = await engine.remember("I no longer work at Acme Robotics.", goal=LIFE)
        assert triples(quit_.superseded) == {("User", "works_at", "Acme Robotics")}
        await engine.consolidate()
        result = await engine.recall("Where do I work?", paths=["graph"])
        current = triples(result.facts, current_only=True)
        assert ("User", "works_at", "Acme Robotics") not in current
        assert ("User", "lives_in", "Lyon") in current  # only what it denies
        assert ("User", "works_at", "Acme Robotics") in triples(result.facts)  # kept, ended


@pytest.mark.parametrize("linked", [True, False], ids=["in the graph", "in the buffer"])
async def test_a_role_has_one_holder_and_a_favourite_one_value(open_engine, linked):
    """ "The tech lead is Priya" then "Omar is now the tech lead": the role has a new holder
    (it ended nothing: the fact is keyed on its object). A class ("a senior engineer") and a
    relative role ("the capital of France") have many; a favourite band is one at a time,
    a favourite food another thing; a rate limit has one value; a project uses one version
    of Python at a time, and Node beside it; a changed class ends only its own kind; a deploy
    day and a standup time have one value each."""
    facts = [
        "The tech lead is Priya.",
        "The staging database is Postgres 15.",
        "Paris is the capital of France.",
        "My favourite band is Wilco.",
        "The rate limit is 100 requests a minute.",
        "We use Python 3.10.",
        "I'm a junior developer.",
        "I'm a vegetarian.",
        "The deploy day is Tuesday.",
        "Standup time is 9:30.",
        "The CI provider is CircleCI.",
        "The cache TTL is 5 minutes.",
    ]
    changes = {  # a write, and what it ends
        "Omar is now the tech lead.": {("Priya", "is_the", "tech lead")},
        "Priya is a senior engineer.": set(),
        "The staging database is now Postgres 16.": {("Postgres 15", "is_the", "staging database")},
        "Berlin is the capital of Germany.": set(),
        "My favourite band is Radiohead these days.": {("User", "has_favorite_band", "Wilco")},
        "My favourite food is ramen.": set(),
        "The rate limit is now 500 requests a minute.": {
            ("rate limit", "has_value", "100 requests a minute")
        },
        "We use Node 20 for the frontend.": set(),
        "We upgraded to Python 3.12.": {("User", "uses", "Python 3.10")},
        "I'm a senior developer now.": {("User", "is_a", "junior developer")},  # not vegetarian
        # a day or a time as a thing's value (a date is otherwise when a fact held), a name
        # the tagger reads as punctuation, an acronym the change verb moves
        "The deploy day is now Thursday.": {("deploy day", "has_value", "Tuesday")},
        "The standup time moved to 10:00.": {("Standup time", "has_value", "9:30")},
        "The release date is March 3.": set(),
        "The CI provider is now GitHub Actions.": {("CircleCI", "is_the", "CI provider")},
        "The cache TTL was lowered to 1 minute.": {("cache TTL", "has_value", "5 minutes")},
    }
    async with open_engine(gating={"tau_noise": -1.0, "default_gate": False}) as engine:
        for text in facts:
            await engine.remember(text, goal=LIFE)
        if linked:
            await engine.consolidate()
        ended = {
            text: triples((await engine.remember(text, goal=LIFE)).superseded) for text in changes
        }
        assert ended == changes
        await engine.consolidate()
        result = await engine.recall("Who is the tech lead?", paths=["graph"])
        current = triples(result.facts, current_only=True)
        assert ("Omar", "is_the", "tech lead") in current
        assert ("Priya", "is_the", "tech lead") in triples(result.facts) - current  # kept, ended


async def test_a_departure_ends_what_was_left_and_only_that(open_engine):
    """ "We migrated from Postgres" ends "uses Postgres" and "I moved from Leeds" ends the home
    there, not the birthplace; "I left Caroline a message" ends no friendship, "We moved from
    CircleCI to GitHub Actions" no home; and "I prefer
    metric units" no other preference. A denial ends a many-valued fact too."""
    async with open_engine(gating={"tau_noise": -1.0, "default_gate": False}) as engine:
        for text in [
            "We use Postgres.",
            "I was born in Leeds.",
            "I live in Leeds.",
            "My friend Caroline lives in Boston.",
            "I like running.",
        ]:
            await engine.remember(text, goal=LIFE)
        await engine.consolidate()
        migrated = await engine.remember("We migrated from Postgres to MySQL.", goal=LIFE)
        moved = await engine.remember("I moved from Leeds to York.", goal=LIFE)
        message = await engine.remember("I left Caroline a message.", goal=LIFE)
        tools = await engine.remember("We moved from CircleCI to GitHub Actions.", goal=LIFE)
        thing = await engine.remember("We moved the staging database to AWS.", goal=LIFE)
        stopped = await engine.remember("I don't like running anymore.", goal=LIFE)
        assert triples(migrated.superseded) == {("User", "uses", "Postgres")}
        assert triples(moved.superseded) == {("User", "lives_in", "Leeds")}
        assert triples(message.superseded) == set()
        # a switch of tools and a thing moved are no new home (both ended York)
        assert triples(tools.superseded) == triples(thing.superseded) == set()
        assert triples(stopped.superseded) == {("User", "likes", "running")}
        await engine.consolidate()
        result = await engine.recall("Where was I born and who are my friends?", paths=["graph"])
        current = triples(result.facts, current_only=True)
        assert {("User", "born_in", "Leeds"), ("User", "has_friend", "Caroline")} <= current


async def test_the_current_value_is_mentioned_before_an_outdated_memory(open_engine):
    # MiniLM puts "mint tea" nearer to "drink" than "matcha": the outdated memory scores
    # higher even at half weight. A reader going top down must meet the current value first
    # (found by the temporal benchmark: 0.93 current-fact accuracy with memories first).
    async with open_engine(gating={"tau_noise": -1.0, "default_gate": False}) as engine:
        for text in [
            "Since 2009 I prefer espresso.",
            "Since 2010 I prefer mint tea.",
            "I have a cat called Miso.",
            "Since 2022 I prefer matcha.",
        ]:
            await engine.remember(text, goal=LIFE)
        await engine.consolidate()
        result = await engine.recall("What do I prefer to drink now?")
        stale = [it.content for it in result.items if it.superseded]
        assert "Since 2010 I prefer mint tea." in stale  # kept, labelled, counted half
        context = result.context
        assert context.index("matcha") < context.index("mint tea")
        assert context.index("matcha") < context.index("espresso")


async def test_multi_valued_relations_supersede_nothing(open_engine):
    # Replay is not under test: promote everything.
    async with open_engine(
        gating={"tau_noise": -1.0, "default_gate": False}, consolidation={"tau_consolidation": 0.0}
    ) as engine:
        await engine.remember("I use Neovim.", goal=LIFE)
        await engine.remember("Alice knows Bob.", goal=LIFE)
        await engine.consolidate()
        rust = await engine.remember("I use Rust.", goal=LIFE)
        carol = await engine.remember("Alice knows Carol.", goal=LIFE)
        assert rust.superseded == [] and carol.superseded == []
        await engine.consolidate()
        result = await engine.recall("What do I use, whom does Alice know?", paths=["graph"])
        current = triples(result.facts, current_only=True)
        assert {("User", "uses", "Neovim"), ("User", "uses", "Rust")} <= current
        assert {("Alice", "know", "Bob"), ("Alice", "know", "Carol")} <= current


async def test_forgetting_the_move_makes_the_old_home_current_again(open_engine):
    async with open_engine(gating={"tau_noise": -1.0, "default_gate": False}) as engine:
        await engine.remember("I live in Paris.", goal=LIFE)
        await engine.consolidate()
        berlin = await engine.remember("I moved to Berlin.", goal=LIFE)
        await engine.forget(ids=[berlin.id])
        result = await engine.recall("Where do I live?", paths=["graph"])
        assert ("User", "lives_in", "Paris") in triples(result.facts, current_only=True)


async def test_a_stated_event_time_orders_facts(open_engine):
    async with open_engine(gating={"tau_noise": -1.0, "default_gate": False}) as engine:
        rome = await engine.remember("In March 2015 I moved to Rome.", goal=LIFE)
        assert rome.observed_at == datetime(2015, 3, 1, tzinfo=UTC)
        oslo = await engine.remember("In June 2021 I moved to Oslo.", goal=LIFE)
        assert triples(oslo.superseded) == {("User", "lives_in", "Rome")}
        await engine.consolidate()
        # Told late about an even older home: it does not end the current one...
        lyon = await engine.remember("In 2010 I moved to Lyon.", goal=LIFE)
        assert lyon.superseded == []
        await engine.consolidate()
        result = await engine.recall("Where do I live?", paths=["graph"])
        assert triples(result.facts, current_only=True) >= {("User", "lives_in", "Oslo")}
        assert ("User", "lives_in", "Lyon") not in triples(result.facts, current_only=True)
        # ... but it held in 2012.
        then = await engine.recall("Where did I live?", paths=["graph"], as_of="2012-06-01")
        assert ("User", "lives_in", "Lyon") in triples(then.facts)
        assert ("User", "lives_in", "Oslo") not in triples(then.facts)


async def test_decay_prunes_only_the_old_and_unused_into_the_trash(open_engine):
    async with open_engine(
        gating={"tau_noise": -1.0, "default_gate": False},
        # A half-life of about a second: anything not used in this test's last moments is old.
        temporal={"longterm_capacity": 2, "half_life_days": 1 / 86400},
    ) as engine:
        kept = await engine.remember("I am allergic to penicillin.", goal=LIFE)
        a = await engine.remember("I visited Lisbon once.", goal=LIFE)
        b = await engine.remember("I once owned a red bicycle.", goal=LIFE)
        await engine.consolidate()
        assert (await engine.stats()).scopes[0].longterm == 2  # the bound holds already
        await engine.restore(
            [r.id for r in await engine.episodic.scope_rows("default", ("trash",))]
        )
        await engine.recall("penicillin allergy")  # used just now: it must survive
        report = await engine.consolidate()
        decayed = [d for d in report.decisions if d.reason.startswith("decayed")]
        assert kept.id not in {d.id for d in decayed}
        assert len(decayed) == 1 and decayed[0].id in {a.id, b.id}
        (row,) = await engine.episodic.get([decayed[0].id])
        assert row.tier == "trash" and row.prev_tier == "longterm"


def test_validity_reopens_a_fact_asserted_anew():
    t = [datetime(2020 + i, 1, 1, tzinfo=UTC) for i in range(5)]
    v = Validity(sources=[Source("m1", t[0], t[0]), Source("m3", t[3], t[3])], ends=[t[2]])
    assert v.valid_at(t[1]) and not v.valid_at(t[2]) and v.valid_at(t[4])
    assert v.valid_to is None and v.valid_from == t[3]
    v = Validity(sources=[Source("m1", t[0], t[0])], ends=[t[2]])
    assert v.valid_to == t[2] and v.superseded(t[4]) and not v.superseded(t[1])


Y = [datetime(2010 + i, 1, 1, tzinfo=UTC) for i in range(10)]


def stated(*years: int, ends: tuple[int, ...] = ()) -> Validity:
    return Validity(sources=[Source(f"m{y}", Y[y], Y[y]) for y in years], ends=[Y[e] for e in ends])


def test_a_new_value_ends_the_values_valid_when_it_was_observed():
    others = [("paris", stated(1)), ("rome", stated(2)), ("oslo", stated(1, ends=(3,)))]
    # At Y[5] Paris and Rome still hold and end then; Oslo had ended at Y[3] already.
    assert supersession("berlin", others, Y[5]) == [("paris", Y[5]), ("rome", Y[5])]


def test_a_value_stated_later_ends_the_new_one_when_it_began():
    # A memory of Y[2] read after memories of Y[4] and Y[6]: its own fact ended at Y[4], the
    # first later statement, not at the latest, and the later values are not ended.
    others = [("rome", stated(4, 6))]
    assert supersession("paris", others, Y[2]) == [("paris", Y[4])]


def test_the_same_value_or_one_without_sources_ends_nothing():
    others = [("berlin", stated(1)), ("rome", Validity()), ("oslo", stated(1, ends=(3,)))]
    assert supersession("berlin", others, Y[5]) == []


def test_a_value_asserted_anew_after_its_end_is_ended_again():
    assert supersession("berlin", [("paris", stated(1, 4, ends=(3,)))], Y[5]) == [("paris", Y[5])]


def test_a_memory_is_outdated_only_when_none_of_its_facts_holds():
    me = Source("m1", Y[1], Y[1])
    moved, job = stated(1, ends=(3,)), stated(1)
    assert outdated(me, [moved, moved], Y[4])
    assert not outdated(me, [moved, job], Y[4])  # the job still holds
    assert not outdated(me, [moved], Y[2])  # not yet: the move came at Y[3]
    assert not outdated(me, [], Y[9])  # a memory stating no fact never is


def test_an_unlinked_memory_counts_as_the_source_of_its_facts():
    # A buffer memory's fact is in no graph yet: no sources, but an end recorded against
    # it by a later write. Counted as stated by the memory, it held until that end.
    me = Source("m1", Y[1], Y[1])
    ended_unlinked = Validity(ends=[Y[3]])
    assert outdated(me, [ended_unlinked], Y[4])
    assert not outdated(me, [ended_unlinked], Y[2])
    # Restated after the end by another memory: current again, so not outdated.
    assert not outdated(me, [stated(5, ends=(3,))], Y[6])


def test_validity_including_adds_each_memory_once():
    v = stated(1)
    more = v.including([Source("m1", Y[7], Y[7]), Source("m2", Y[2], Y[2])])
    assert [s.memory for s in more.sources] == ["m1", "m2"] and more.sources[0].observed == Y[1]
    assert v.sources == (Source("m1", Y[1], Y[1]),)  # unchanged: validities are values
    assert v.including([Source("m1", Y[3], Y[3])]) is v


def test_observed_at_reads_stated_dates():
    assert observed_at("On 2024-05-03 we met") == datetime(2024, 5, 3, tzinfo=UTC)
    assert observed_at("I was born on 14 March 1990.") == datetime(1990, 3, 14, tzinfo=UTC)
    assert observed_at("Since 2019 I work at X") == datetime(2019, 1, 1, tzinfo=UTC)
    assert observed_at("I live in Paris") is None
    assert observed_at("February 30, 2021") is None
    # A year that opens the text is its time; a number elsewhere is not a year.
    assert observed_at("2016 was the year I moved to Prague.") == datetime(2016, 1, 1, tzinfo=UTC)
    assert observed_at("I have 2000 followers.") is None
    assert observed_at("2019% growth") is None
    # A stamp's full date and time, not the year it opens with (an imported chat turn).
    assert observed_at("[2023-11-14 22:14] User: I move in March 2024") == datetime(
        2023, 11, 14, 22, 14, tzinfo=UTC
    )


def test_decay_halves_per_half_life():
    assert decay(timedelta(days=0), 10) == 1.0
    assert decay(timedelta(days=10), 10) == pytest.approx(0.5)
    assert decay(timedelta(days=10), 0) == 1.0


async def test_graph_reads_remembered_for_recall_follow_every_change(open_engine):
    """The graph remembers a fact's validity, an entity's mentions and its label between
    commits; each recall here is made right after a change it must already see."""
    async with open_engine(gating={"tau_noise": -1.0, "default_gate": False}) as engine:
        await engine.remember("I live in Paris.", goal=LIFE)
        await engine.consolidate()
        ask = "Where does the user live?"
        first = await engine.recall(ask, paths=["graph"])
        assert triples(first.facts, current_only=True) == {("User", "lives_in", "Paris")}
        assert (await engine.recall(ask, paths=["graph"])).facts == first.facts  # remembered
        moved = await engine.remember("I moved to Berlin.", goal=LIFE)  # ends Paris: a commit
        after = await engine.recall(ask, paths=["graph"])
        assert ("User", "lives_in", "Paris") not in triples(after.facts, current_only=True)
        await engine.consolidate()  # links Berlin
        linked = await engine.recall(ask, paths=["graph"])
        assert ("User", "lives_in", "Berlin") in triples(linked.facts, current_only=True)
        await engine.forget(ids=[moved.id])  # Paris is current again, Berlin is gone
        back = await engine.recall(ask, paths=["graph"])
        assert triples(back.facts, current_only=True) == {("User", "lives_in", "Paris")}
        assert "Berlin" not in back.context


def as_set(edges):
    """Relations with their validity, in no order (the memo and a fresh read list them in
    the store's order of two different reads)."""
    return {(t, frozenset(v.sources), tuple(sorted(v.ends))) for t, v in edges}


async def test_what_a_commit_keeps_remembered_reads_as_the_store_does(tmp_path):
    """A commit forgets only the memos about the nodes its graphs hold (before and after).
    Random links, supersessions, moves to the trash and back and hard forgets over shared
    entities; after each, every memoised read (relations, validity, mentions, labels) of
    every node equals a fresh read of the same dataset."""
    rng = random.Random(7)
    people, places = ["Ana", "Bo", "Chen"], ["Oslo", "Lima", "Pune", "Faro"]
    journal = JournaledDataset(tmp_path / "graph")
    graph = GraphStore(store=journal, memo=True)
    await graph.open()
    fresh = Provenance(journal.ds, memo=False)
    memo = graph._reads
    start = datetime(2026, 1, 1, tzinfo=UTC)
    nodes = [
        graph._triple("s", Relation(subject=a, predicate="knows", object=b))[i]
        for a in people for b in places for i in (0, 2)
    ]  # fmt: skip
    live: list[str] = []
    trashed: list[str] = []
    for step in range(120):
        when = start + timedelta(days=step)
        op = rng.random()
        if op < 0.45 or not live:
            mid, who, where = f"m{step}", rng.choice(people), rng.choice(places)
            rel = Relation(subject=who, predicate="lives in", object=where)
            extraction = Extraction(
                entities=[Entity(name=who, type="Person"), Entity(name=where, type="Location")],
                relations=[rel, Relation(subject=who, predicate="visited", object=where)],
            )
            await graph.put("s", mid, extraction, when, when)
            await graph.supersede("s", mid, [rel], when, {"lives_in"})
            live.append(mid)
        elif op < 0.65:
            mid = live.pop(rng.randrange(len(live)))
            await graph.deactivate("s", [mid])
            trashed.append(mid)
        elif op < 0.8 and trashed:
            mid = trashed.pop(rng.randrange(len(trashed)))
            await graph.activate("s", [mid])
            live.append(mid)
        else:
            mid = live.pop(rng.randrange(len(live)))
            await graph.retract("s", [mid], purge=True)
        for node in nodes:  # read through the memos (kept for the next step), then compare
            edges = memo.edges(node)
            assert as_set(edges) == as_set(fresh.edges(node)), (step, node)
            assert memo.mentions(node) == fresh.mentions(node), (step, node)
            assert memo.label(node) == fresh.label(node), (step, node)
            for triple, validity in edges:
                assert as_set([(triple, fresh.validity(*triple))]) == as_set([(triple, validity)])
    assert live and trashed  # every kind of step was taken
    await graph.close()


async def test_a_long_prune_moves_batches_and_lets_writes_in_between(open_engine, monkeypatch):
    """Past the bound the weakest go in batches, the scope's lock taken per batch (5,000 at
    once held it 85-102 s, so a remember waited that long); a memory forgotten between two
    batches stays forgotten, not pruned over it."""
    import anyio

    from cranimem_mcp.models import ConsolidationReport
    from cranimem_mcp.replay import pruning

    monkeypatch.setattr(pruning, "PRUNE_BATCH", 2)
    async with open_engine(gating={"tau_noise": -1.0, "default_gate": False}) as engine:
        for city in ("Lisbon", "Oslo", "Lima", "Pune", "Kyiv", "Faro", "Bern"):
            await engine.remember(f"I visited {city} once.", goal=LIFE)
        await engine.consolidate()
        assert (await engine.stats()).scopes[0].longterm == 7
        report = ConsolidationReport()
        forgotten: list[str] = []

        class Batches:
            """The scope's lock, counting holds; before the third a user forgets the rest."""

            def __init__(self) -> None:
                self.inner, self.holds = anyio.Lock(), 0

            async def __aenter__(self) -> None:
                self.holds += 1
                if self.holds == 3:
                    decided = {d.id for d in report.decisions}
                    rest = [r.id for r in await engine.episodic.scope_rows("default", ("longterm",))
                            if r.id not in decided]  # fmt: skip
                    forgotten.extend(rest)
                    await engine.forget(ids=rest)
                await self.inner.acquire()

            async def __aexit__(self, *exc: object) -> None:
                self.inner.release()

        lock = Batches()
        await pruning.prune_longterm(
            engine.episodic,
            engine.graph,
            lock,
            "default",
            2,
            30.0,
            report,  # type: ignore[arg-type]
        )
        assert lock.holds == 1 + 3  # the choice, then three batches of at most two
        # 5 over the bound: the first batch of 2 pruned, then the user forgot all 5 left
        assert report.pruned == 2 and len(forgotten) == 5
        for row in await engine.episodic.get(forgotten):
            assert row.tier == "trash" and not row.decision_reason.startswith("decayed")
        assert not await engine.check()
