"""The time a query names (cranimem_mcp/recall/when.py), and recall lending the memories of
events in that time part of their score (``retrieval.date_boost``)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from cranimem_mcp.recall.when import Window, asked_when
from cranimem_mcp.temporal import observed_at

ASKED = datetime(2023, 3, 20, 11, 50, tzinfo=UTC)  # a Monday


def day(y: int, m: int, d: int) -> datetime:
    return datetime(y, m, d, tzinfo=UTC)


@pytest.mark.parametrize(
    ("query", "inside", "outside"),
    [
        ("How many doctor's appointments did I go to in March?", day(2021, 3, 30), day(2023, 4, 1)),
        ("What setback did Melanie face in October 2023?", day(2023, 10, 31), day(2022, 10, 5)),
        ("What did she show on October 13, 2023?", day(2023, 10, 13), day(2023, 10, 20)),
        ("What did I post 5 days ago?", day(2023, 3, 15), day(2023, 3, 1)),
        ("What did I cook last weekend?", day(2023, 3, 18), day(2023, 3, 11)),
        ("Who called yesterday?", day(2023, 3, 19), day(2023, 3, 12)),
        ("Where did I travel in 2019?", day(2019, 7, 1), day(2020, 1, 1)),
    ],
)
def test_a_query_names_a_time_read_against_when_it_is_asked(query, inside, outside):
    window = asked_when(query, ASKED)
    assert isinstance(window, Window), query
    assert window.holds(inside), (query, window)
    assert not window.holds(outside), (query, window)


@pytest.mark.parametrize(
    "query",
    [
        "Where do I live?",
        "May I ask what my sister's name is?",
        "What did I say about March Madness",
    ],
)
def test_a_query_without_a_time_names_none(query):
    assert asked_when(query, ASKED) is None


def test_longmemeval_stamps_are_read_as_dates():
    # "[2023/05/28 (Sun) 03:17] user: ..." was read as the year alone (2023-01-01).
    assert observed_at("[2023/05/28 (Sun) 03:17] user: hi") == datetime(
        2023, 5, 28, 3, 17, tzinfo=UTC
    )


@pytest.mark.anyio
async def test_recall_lends_the_memories_of_the_time_asked_about_their_score(open_engine, tmp_path):
    notes = [
        "[2023/02/14 (Tue) 10:00] user: I went to the dentist for a check-up.",
        "[2023/03/09 (Thu) 10:00] user: I had a dentist appointment about a cracked filling.",
        "[2023/04/20 (Thu) 10:00] user: I saw the dentist again for a cleaning, a good one.",
    ]
    question = "Which dentist appointment did I have in March?"
    ranked = {}
    for boost in (0.0, 1.0):
        home = tmp_path / f"boost{boost}"
        async with open_engine(home=home, retrieval={"date_boost": boost}) as engine:
            for text in notes:
                assert (await engine.remember(text, scope="s")).status == "stored"
            result = await engine.recall(question, scope="s", k=3, as_of="2023-05-01T00:00:00Z")
            ranked[boost] = [item.content for item in result.items]
    assert ranked[0.0][0] != notes[1], ranked  # without the boost, another ranks first
    assert ranked[1.0][0] == notes[1], ranked
    assert sorted(ranked[0.0]) == sorted(ranked[1.0])  # the same memories, another order
