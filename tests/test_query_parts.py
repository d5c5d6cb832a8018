"""A query about two things searches each part too (cranimem_mcp/recall/parts.py,
``retrieval.split_queries``, an option): the memory of the side the whole query's vector
leans away from still reaches the top k. Through a real MCP client, against the same store
with the setting as it ships (off)."""

from __future__ import annotations

import pytest
from conftest import connected

from cranimem_mcp.recall.parts import parts

pytestmark = pytest.mark.anyio

SPLITS = {
    "What did I spend on the oil change and the car wash?": [
        "What did I spend on the oil change",
        "the car wash?",
    ],
    "Which came first, the Lisbon trip or my pottery course?": [
        "Which came first, the Lisbon trip",
        "my pottery course?",
    ],
    "Was the hotel dearer in Porto compared to Lyon?": [
        "Was the hotel dearer in Porto",
        "Lyon?",
    ],
    # two names joined by "and": one question about both
    "What have Ana and Ravi both painted?": [],
    "Where do I live?": [],
    "Me and my sister?": [],  # one word before the join
}


@pytest.mark.parametrize(("query", "expected"), SPLITS.items())
def test_a_query_splits_at_its_join(query, expected):
    assert parts(query) == expected


NOTES = [
    "Bought a waterproof car cover for $80 last week.",
    "The detailing spray from AutoZone was $15.",
    "The car wash membership renews monthly at $30.",
    "Car wash at Sparkle Auto on Saturday cost $18.",
    "Got the car washed again; the interior vacuum was $6 extra.",
    "The car insurance renewal is due in March, $640 a year.",
    "Paid $45 for the oil change at the dealer.",
    "Winter tyres for the car cost $520 fitted.",
    "Car wash coupons came with the oil change, two for $10.",
    "The dentist appointment is on Friday at 3pm.",
]
QUESTION = "What did I spend on the oil change compared to the car wash?"
OIL_CHANGE = "Paid $45 for the oil change at the dealer."


async def top_two(open_engine, **retrieval):
    async with connected(open_engine, retrieval=retrieval) as (client, _engine):
        for text in NOTES:
            await client.call_tool("remember", {"content": text})
        result = await client.call_tool("recall", {"query": QUESTION, "k": 2})
        items = result.structured_content["items"]
    scores = [it["score"] for it in items]
    assert scores == sorted(scores, reverse=True)  # in the order of the score shown
    return [it["content"] for it in items]


async def test_each_side_of_a_two_part_question_reaches_the_top(open_engine):
    found = await top_two(open_engine, split_queries=True)
    assert OIL_CHANGE in found, found
    assert any("car wash" in text.lower() for text in found), found


async def test_without_the_parts_the_whole_query_leans_to_one_side(open_engine):
    found = await top_two(open_engine)
    assert OIL_CHANGE not in found, found
