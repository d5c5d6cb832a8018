"""The graph tests against a real SPARQL 1.1 server (Oxigraph, started on a loopback port):
GraphStore's domain logic is the same over rdflib's SPARQLUpdateStore as in memory."""

from __future__ import annotations

import shutil
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
import test_forget
import test_pipeline
import test_temporal
from conftest import answering, free_port, make_settings

from cranimem_mcp.engine import MemoryEngine
from cranimem_mcp.sparql import SparqlDataset

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
