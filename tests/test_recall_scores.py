"""What a recall shows is what ranked: the items in ranked order, each with the score that
ranked it, and the context block the same memories in the same order with the same scores;
the block's facts only those that bear on the query. Real stores, the real MiniLM, through a
real MCP client, the default settings.

Before (issue 41), the hybrid search ranked by its fused relevance but each memory showed its
cosine, lifted a little by its rank: where full-text search moved a memory up past one that
means more, the block read 0.30 above 0.31."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import connected
from test_notes import NOTES, QUESTIONS

# Where full-text search moves memories past better cosines in this store (the first three),
# and ordinary questions of tests/test_notes.py.
ASKED = ["When is the March release?", "release", "note", *QUESTIONS]

pytestmark = pytest.mark.anyio


def _memory_lines(context: str) -> list[tuple[str, str]]:
    """(id, score) of the block's memory lines, in its order."""
    return [
        (line.split()[1], line.split()[2])
        for line in context.splitlines()
        if line.startswith(("[recent ", "[memory "))
    ]


async def test_items_and_the_block_show_the_score_that_ranked_them(open_engine):
    async with connected(open_engine) as (client, engine):
        for text in NOTES:
            result = await client.call_tool("remember", {"content": text})
            assert result.structured_content["id"], result.structured_content
        reordered = 0  # questions whose ranking is not the cosine's order
        for question in ASKED:
            result = await client.call_tool("recall", {"query": question, "k": 8})
            assert not result.is_error, result.content
            items = result.structured_content["items"]
            assert len(items) == 8
            scores = [it["score"] for it in items]
            assert scores == sorted(scores, reverse=True), (question, scores)
            # The block holds the items' head (the weak tail is left out), same order, same
            # scores; the text the model reads is that block.
            lines = _memory_lines(result.structured_content["context"])
            assert lines, question
            assert lines == [(it["id"], f"{it['score']:.2f}") for it in items[: len(lines)]]
            assert result.content[0].text == result.structured_content["context"]
            vectors = await engine.embedder.embed([question] + [it["content"] for it in items])
            cosines = [float(v @ vectors[0]) for v in vectors[1:]]
            reordered += cosines != sorted(cosines, reverse=True)
            assert all(np.isfinite(scores))
        # The rule is exercised: full-text search moved memories past better cosines.
        assert reordered >= 2


PEOPLE = [
    "The user's brother Tom lives in Porto.",
    "Tom works at a bakery.",
    "Ana works at the Lisbon aquarium.",
    "Ana has a dog called Pico.",
    "The user lives in Berlin.",
    "The user works at Acme.",
]


async def test_the_block_reads_only_the_facts_that_bear_on_the_query(open_engine):
    """A fact is read when a memory the block reads states it, or when it scores at least
    as well as the best memory. Before, every fact of the entities the query and its best
    memories name was read down to the block's floor: for "Where does Tom work?" that was
    also where the user lives, that Ana is their sister and that they use pnpm."""
    async with connected(open_engine) as (client, _engine):
        for text in NOTES + PEOPLE:
            result = await client.call_tool("remember", {"content": text})
            assert result.structured_content["id"], result.structured_content
        assert not (await client.call_tool("consolidate", {})).is_error
        result = await client.call_tool("recall", {"query": "Where does Tom work?"})
        shown = result.structured_content
        read = {memory_id for memory_id, _score in _memory_lines(shown["context"])}
        best = shown["items"][0]["score"]
        facts = shown["facts"]
        assert ("Tom", "works_at", "bakery") in {(f["subject"], f["predicate"], f["object"])
                                                 for f in facts}  # fmt: skip
        for f in facts:
            assert read & set(f["sources"]) or f["score"] >= best, f
        assert "pnpm" not in " ".join(f["object"] for f in facts)
