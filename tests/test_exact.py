"""Exact words count: a query naming a number or an identifier finds the memory that holds
it first, however many memories look alike, and a number that is only a quantity does not
override meaning. Through a real MCP client on real stores, with the real MiniLM."""

from __future__ import annotations

import random

import pytest
from conftest import connected

from cranimem_mcp.recall import exact

pytestmark = pytest.mark.anyio

KEEP_ALL = {"tau_noise": -1.0, "default_gate": False}
CITIES = ["Lyon", "Lisbon", "Osaka", "Berlin", "Toronto", "Porto", "Seoul", "Cairo"]


def test_exact_tokens_are_numbers_and_identifiers_not_words():
    assert exact.tokens("Where does Person 123 live?") == ["123"]
    assert exact.tokens("what is user_id in getUser for v2") == ["user_id", "getUser", "v2"]
    assert exact.tokens("What can't I eat? Which tools does Ferrous use?") == []


def test_an_exact_token_is_matched_as_a_whole_word():
    assert exact.contains("Person 123 lives in Lyon.", ["123"])
    assert not exact.contains("Person 1234 lives in Lyon.", ["123"])
    assert exact.contains("the USER_ID column", ["user_id"])


async def call(client, tool: str, **arguments) -> dict:
    result = await client.call_tool(tool, arguments)
    assert not result.is_error, result.content
    return result.structured_content


async def test_the_one_memory_naming_the_number_comes_first_among_look_alikes(open_engine):
    rng = random.Random(3)
    async with connected(open_engine, gating=KEEP_ALL) as (client, _engine):
        ids = {}
        for i in range(60):
            r = await call(client, "remember", content=f"Person {i} lives in {rng.choice(CITIES)}.")
            ids[i] = r["id"]
        for i in random.Random(5).sample(range(60), 15):
            r = await call(client, "recall", query=f"Person {i} lives", k=10)
            assert r["items"][0]["id"] == ids[i], i
            first_line = r["context"].splitlines()[1]
            assert f"Person {i} lives" in first_line and ids[i] in first_line


async def test_a_number_that_is_a_quantity_does_not_override_meaning(open_engine):
    async with connected(open_engine, gating=KEEP_ALL) as (client, _engine):
        movies = await call(client, "remember", content="My favourite movies are Alien and Heat.")
        cats = await call(client, "remember", content="I have 3 cats at home.")
        for city in CITIES:  # enough memories that the one holding "3" is a rare one
            for who in ("sister", "brother", "aunt"):
                await call(client, "remember", content=f"I would like to see {city} with my {who}.")
        r = await call(client, "recall", query="What are my top 3 movies?", k=3)
    assert r["items"][0]["id"] == movies["id"]
    assert cats["id"] not in [it["id"] for it in r["items"]][:1]
