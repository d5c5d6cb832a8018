"""Export to JSON Lines + TriG, import into an empty directory: the same recall results."""

from __future__ import annotations

import json
import warnings

import pytest
from rdflib import Dataset, URIRef

from cranimem_mcp.buffer.records import COLUMNS
from cranimem_mcp.cli.portability import export, import_into
from cranimem_mcp.errors import ConfigError
from cranimem_mcp.graph.store import VOCAB
from cranimem_mcp.models import MEMORY_FIELDS

pytestmark = pytest.mark.anyio

QUERIES = [
    ("Where is Alice's company based?", "work"),
    ("Where does the user live now?", "life"),
    ("What must I avoid eating?", "life"),
]


async def fill(engine) -> dict[str, str]:
    await engine.set_goal("Help the user with their colleagues and companies", scope="work")
    ids = {}
    for text, scope in [
        ("Alice works at Acme Robotics.", "work"),
        ("Acme Robotics is based in Berlin.", "work"),
        ("I live in Paris.", "life"),
        ("I am allergic to shellfish.", "life"),
    ]:
        ids[text] = (await engine.remember(text, scope=scope)).id
    await engine.consolidate()
    ids["moved"] = (await engine.remember("I moved to Lisbon in 2025.", scope="life")).id
    ids["recent"] = (await engine.remember("Bob joined Globex last week.", scope="work")).id
    ids["trashed"] = (await engine.remember("I use Neovim.", scope="work")).id
    await engine.forget(ids=[ids["trashed"]], scope="work")
    return ids


def summary(result) -> tuple:
    return (
        result.context,
        [(it.id, it.tier, round(it.score, 4)) for it in result.items],
        [(f.subject, f.predicate, f.object, f.support, f.valid_to) for f in result.facts],
    )


@pytest.mark.slow  # over ~5 s
async def test_export_then_import_gives_the_same_recall(open_engine, tmp_path):
    out = tmp_path / "export"
    async with open_engine(
        home=tmp_path / "a", gating={"tau_noise": -1.0, "default_gate": False}
    ) as engine:
        ids = await fill(engine)
        counts = await export(engine, out)
        before = [summary(await engine.recall(q, scope=s)) for q, s in QUERIES]
        stats_before = (await engine.stats()).scopes
    assert counts["memories"] == 7 and counts["quads"] > 0

    lines = (out / "memories.jsonl").read_text().splitlines()
    header, rows = json.loads(lines[0]), [json.loads(x) for x in lines[1:]]
    assert header["format"] == "cranimem-export" and header["embedder"]["dim"] == 384
    assert {r["id"] for r in rows} == set(ids.values())
    assert all(len(r["vector"]) == 384 for r in rows)
    assert {r["tier"] for r in rows} == {"buffer", "longterm", "trash"}

    # The TriG is standard RDF: one named graph per memory, with its provenance.
    ds = Dataset()
    with warnings.catch_warnings():  # rdflib's TriG parser calls its own deprecated API
        warnings.simplefilter("ignore", DeprecationWarning)
        ds.parse(out / "graph.trig", format="trig")
    alice = ids["Alice works at Acme Robotics."]
    graph_iri = URIRef(f"https://cranimem.dev/id/work/memory/{alice}")
    g = ds.graph(graph_iri)
    assert len(g) > 0
    assert g.value(graph_iri, VOCAB.assertedAt) is not None
    assert str(g.value(graph_iri, VOCAB.memory)) == alice

    async with open_engine(
        home=tmp_path / "b", gating={"tau_noise": -1.0, "default_gate": False}
    ) as engine:
        imported = await import_into(engine, out)
        assert imported == counts
        after = [summary(await engine.recall(q, scope=s)) for q, s in QUERIES]
        stats_after = (await engine.stats()).scopes
        assert engine.goal_of("work") == "Help the user with their colleagues and companies"
        await engine.restore([ids["trashed"]], scope="work")  # the trash came along
    assert after == before
    assert [(s.scope, s.buffer_size, s.longterm, s.trash, s.facts) for s in stats_after] == [
        (s.scope, s.buffer_size, s.longterm, s.trash, s.facts) for s in stats_before
    ]


async def test_import_refuses_a_directory_that_holds_memories(open_engine, tmp_path):
    out = tmp_path / "export"
    async with open_engine(home=tmp_path / "a") as engine:
        await engine.remember("I live in Paris.")
        await export(engine, out)
        with pytest.raises(ConfigError, match="empty"):
            await import_into(engine, out)


def test_a_memory_record_has_the_table_columns_in_their_order():
    # An export line is a record's columns(): adding a column means adding a field.
    assert list(MEMORY_FIELDS) == COLUMNS
