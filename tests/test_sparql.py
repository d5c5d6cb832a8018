"""The graph tests against a real SPARQL 1.1 server (Oxigraph, started on a loopback port):
GraphStore's domain logic is the same over rdflib's SPARQLUpdateStore as in memory."""

from __future__ import annotations

import http.client
import shutil
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import anyio
import pytest
import test_forget
import test_pipeline
import test_temporal
from conftest import answering, free_port, make_settings

from cranimem_mcp.engine import MemoryEngine
from cranimem_mcp.graph.sparql import SparqlDataset
from cranimem_mcp.graph.sparql_client import SparqlClient
from cranimem_mcp.graph.store import GraphStore
from cranimem_mcp.graph.vocabulary import entity_iri
from cranimem_mcp.models import Entity, Extraction

# Every test here talks to an `oxigraph serve` subprocess.
pytestmark = [pytest.mark.anyio, pytest.mark.slow]

OXIGRAPH = shutil.which("oxigraph") or str(Path(sys.executable).parent / "oxigraph")


@pytest.fixture(scope="module")
def oxigraph(tmp_path_factory) -> dict[str, str]:
    if not Path(OXIGRAPH).exists():
        pytest.skip("the oxigraph server is not installed (the 'sparql' extra)")
    port = free_port()
    location = tmp_path_factory.mktemp("oxigraph")
    base = f"http://127.0.0.1:{port}"
    argv = [OXIGRAPH, "serve", "--location", str(location), "--bind", f"127.0.0.1:{port}"]
    with answering(argv, probe=f"{base}/query?query=ASK%7B%7D", timeout=60):
        yield {
            "store": "sparql",
            "query_endpoint": f"{base}/query",
            "update_endpoint": f"{base}/update",
        }


@pytest.fixture
def open_engine(tmp_path: Path, minilm, oxigraph) -> Any:
    """conftest's open_engine with the graph in the Oxigraph server, emptied per test."""
    SparqlDataset(oxigraph["query_endpoint"], oxigraph["update_endpoint"]).store.update(
        "DROP SILENT ALL"
    )

    @asynccontextmanager
    async def opener(
        home: Path | None = None, background: bool = False, **sections: dict[str, Any]
    ) -> AsyncIterator[MemoryEngine]:
        settings = make_settings(home or tmp_path / "data", graph=oxigraph, **sections)
        async with MemoryEngine(settings, embedder=minilm, background=background) as engine:
            yield engine

    return opener


async def test_the_graph_lives_in_the_server_not_on_disk(open_engine, oxigraph, tmp_path):
    async with open_engine(gating={"tau_noise": -1.0, "default_gate": False}) as engine:
        await engine.remember("Alice works at Acme Robotics.")
        await engine.consolidate()
        facts = await engine.graph.count_facts()
        assert facts == {"default": 1}
    assert not (tmp_path / "data" / "graph").exists()
    store = SparqlDataset(oxigraph["query_endpoint"], oxigraph["update_endpoint"]).store
    names = {
        str(r.g) for r in store.query("SELECT DISTINCT ?g WHERE { GRAPH ?g {} }", {}, {}, None)
    }
    assert any("/id/default/memory/m_" in n for n in names)


# The graph-dependent tests of the suite, run here against the SPARQL backend.
test_forgetting_a_memory_retracts_its_facts_but_keeps_shared_ones = (
    test_forget.test_forgetting_a_memory_retracts_its_facts_but_keeps_shared_ones
)
test_forget_by_entity_takes_every_memory_that_mentions_it = (
    test_forget.test_forget_by_entity_takes_every_memory_that_mentions_it
)
test_forget_whole_scope_and_restore = test_forget.test_forget_whole_scope_and_restore
test_a_move_supersedes_the_old_home_and_keeps_it = (
    test_temporal.test_a_move_supersedes_the_old_home_and_keeps_it
)
test_job_change_and_changed_preference = test_temporal.test_job_change_and_changed_preference
test_multi_valued_relations_supersede_nothing = (
    test_temporal.test_multi_valued_relations_supersede_nothing
)
test_a_role_has_one_holder_and_a_favourite_one_value = (
    test_temporal.test_a_role_has_one_holder_and_a_favourite_one_value
)
test_forgetting_the_move_makes_the_old_home_current_again = (
    test_temporal.test_forgetting_the_move_makes_the_old_home_current_again
)
test_a_stated_event_time_orders_facts = test_temporal.test_a_stated_event_time_orders_facts
test_two_hop_question_is_answered_from_graph_facts = (
    test_pipeline.test_two_hop_question_is_answered_from_graph_facts
)
test_repeated_fact_is_reinforced_not_duplicated = (
    test_pipeline.test_repeated_fact_is_reinforced_not_duplicated
)


class Requests:
    """Counts the HTTP requests this process sends and the TCP connections it opens (rdflib
    and SparqlDataset send each through ``http.client.HTTPConnection``)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.count = 0
        self.connections = 0
        send = http.client.HTTPConnection.request
        connect = http.client.HTTPConnection.connect

        def counted(connection: Any, *args: Any, **kwargs: Any) -> Any:
            self.count += 1
            return send(connection, *args, **kwargs)

        def connected(connection: Any) -> Any:
            self.connections += 1
            return connect(connection)

        monkeypatch.setattr(http.client.HTTPConnection, "request", counted)
        monkeypatch.setattr(http.client.HTTPConnection, "connect", connected)


COMPANIES = ["Acme Robotics", "Globex", "Initech", "Umbrella", "Hooli", "Stark Industries"]
FIRST = ["Ana", "Ben", "Cleo", "Dev", "Eva", "Finn", "Gus", "Hana", "Ivo", "Jude"]
LAST = ["Silva", "Moreau", "Novak", "Berg"]
CITIES = ["Berlin", "Oslo", "Paris", "Lisbon", "Rome", "Vienna", "Madrid"]


async def test_a_recall_costs_a_bounded_number_of_requests_whatever_the_graph_holds(
    open_engine, monkeypatch
):
    requests = Requests(monkeypatch)
    question = "Where is the company that Ana Silva works for based?"
    hops = 2
    cost, opened = {}, {}
    async with open_engine(
        gating={"tau_noise": -1.0, "default_gate": False}, retrieval={"hops": hops}
    ) as engine:
        written = 0
        for n in (4, 40):  # ten times the facts, most of them one or two hops from Person1
            for i in range(written, n):
                person = f"{FIRST[i % len(FIRST)]} {LAST[i // len(FIRST)]}"
                company, city = COMPANIES[i % len(COMPANIES)], CITIES[i % len(CITIES)]
                await engine.remember(f"{person} works at {company}, which is based in {city}.")
            written = n
            await engine.consolidate()
            before, connections = requests.count, requests.connections
            result = await engine.recall(question)
            cost[n] = requests.count - before
            opened[n] = requests.connections - connections
            assert any(f.subject == "Ana Silva" for f in result.facts), result.context
        before, connections = requests.count, requests.connections
        await engine.recall(question)
        again = requests.count - before
        opened["again"] = requests.connections - connections
    # The recall reads the server's generation once, for its three graph operations (link,
    # outdated, walk); then one query links the texts to entities, two tell which recalled
    # memories are outdated, each hop of the walk is one query for the facts with their
    # sources and ends, and one reads the labels. With a request per lookup, this was
    # hundreds at 40 memories; with a generation query per graph operation, 2 more.
    bound = 1 + 1 + 2 + hops + 1
    assert cost[40] <= bound and cost[4] <= bound, cost
    assert again == 1  # nothing committed since: what was read is kept, checked by generation
    # Each request goes over a connection kept from the ones before (urllib: one each).
    assert opened == {4: 0, 40: 0, "again": 0}, opened


async def test_a_replica_reads_what_another_one_committed(open_engine, tmp_path):
    gating = {"tau_noise": -1.0, "default_gate": False}
    async with open_engine(home=tmp_path / "one", gating=gating) as one:
        await one.remember("Alice works at Acme Robotics.")
        await one.consolidate()
        first = await one.recall("What does Alice do?", paths=["graph"])
        assert [f.object for f in first.facts] == ["Acme Robotics"]
        async with open_engine(home=tmp_path / "two", gating=gating) as two:
            await two.remember("Alice plays tennis with Bob.")
            await two.consolidate()
        second = await one.recall("What does Alice do?", paths=["graph"])
        assert {f.object for f in second.facts} >= {"Acme Robotics", "tennis"}


async def test_a_recall_over_sparql_returns_what_the_local_store_returns(
    open_engine, tmp_path, minilm
):
    sections = {
        "gating": {"tau_noise": -1.0, "default_gate": False},
        "temporal": {"half_life_days": 0.0},  # no decay: scores not tied to the clock
    }
    questions = [
        "Where is the company that Alice works for based?",
        "Who works at Acme Robotics?",
        "Where is Globex based, and who works there?",
    ]

    async def fill_and_recall(engine: MemoryEngine) -> list[Any]:
        for text in [
            "Alice works at Acme Robotics.",
            "Acme Robotics is based in Berlin.",
            "Bob works at Acme Robotics.",
            "Carol works at Globex, which is based in Oslo.",
            "Dan works at Globex.",
        ]:
            await engine.remember(text)
        await engine.consolidate()
        await engine.remember("Acme Robotics is based in Munich.")  # ends Berlin, in the buffer
        bob = [it for it in (await engine.recall("Bob")).items if it.content.startswith("Bob")]
        await engine.forget(ids=[bob[0].id])
        out = []
        for q in questions:
            result = await engine.recall(q)
            items = [(it.path, it.content, it.score, it.superseded) for it in result.items]
            facts = [
                (f.subject, f.predicate, f.object, f.support, f.hops, f.score, f.superseded)
                for f in result.facts
            ]
            out.append((items, sorted(facts)))
        return out

    async with open_engine(**sections) as engine:
        remote = await fill_and_recall(engine)
    settings = make_settings(tmp_path / "local", **sections)
    async with MemoryEngine(settings, embedder=minilm, background=False) as engine:
        local = await fill_and_recall(engine)
    assert any(facts for _items, facts in local) and any(items for items, _facts in local)
    assert any(f[-1] for _items, facts in local for f in facts)  # a superseded fact
    assert remote == local


async def test_work_started_within_a_reading_checks_the_server_again_once_it_ended(oxigraph):
    """A recall's graph operations share one check of the server's generation: a task it
    started (which copies its context) must not go on reading without one after it ended."""
    endpoints = oxigraph["query_endpoint"], oxigraph["update_endpoint"]
    SparqlDataset(*endpoints).store.update("DROP SILENT ALL")
    one = GraphStore(store=SparqlDataset(*endpoints))
    two = GraphStore(store=SparqlDataset(*endpoints))
    await one.open()
    await two.open()
    bob = Extraction(entities=[Entity(name="Bob", type="Person")])
    later, seen = anyio.Event(), []

    async def read_later() -> None:
        await later.wait()
        seen.extend(await one.entities_named("default", ["Bob"]))

    async with anyio.create_task_group() as tasks:
        async with one.reading():
            assert await one.entities_named("default", ["Bob"]) == []  # kept: nobody yet
            tasks.start_soon(read_later)
        await two.put("default", "m_bob", bob, datetime.now(UTC))  # another replica commits
        later.set()
    assert seen == [entity_iri("default", "Bob")]
    await one.close()
    await two.close()


def test_a_kept_connection_the_server_closed_is_replaced(tmp_path):
    """The client keeps its connections; a server restarted in between closed them, and the
    next query and update go through on new ones instead of failing."""
    if not Path(OXIGRAPH).exists():
        pytest.skip("the oxigraph server is not installed (the 'sparql' extra)")
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    argv = [OXIGRAPH, "serve", "--location", str(tmp_path / "ox"), "--bind", f"127.0.0.1:{port}"]
    client = SparqlClient(f"{base}/query", f"{base}/update")
    fact = "<urn:cm:a> <urn:cm:b> <urn:cm:c>"
    with answering(argv, probe=f"{base}/query?query=ASK%7B%7D", timeout=60):
        client.update(f"INSERT DATA {{ {fact} }}")
        assert client.ask(f"ASK {{ {fact} }}")
    with answering(argv, probe=f"{base}/query?query=ASK%7B%7D", timeout=60):
        assert client.ask(f"ASK {{ {fact} }}")
        client.update(f"DELETE DATA {{ {fact} }}")
        assert not client.ask(f"ASK {{ {fact} }}")
    client.close()
