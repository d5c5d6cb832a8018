"""Nothing vanishes silently: when memories in the trash (pruned by the long-term bound, or
forgotten) match a query better than what recall returns, the result says how many, names
them and says how to restore them; `paths` with "trash" searches them. Through a real MCP
client on real stores, with the real MiniLM and the long-term bound doing the pruning."""

from __future__ import annotations

import pytest
from conftest import connected

pytestmark = pytest.mark.anyio

KEEP_ALL = {"tau_noise": -1.0, "default_gate": False}
FACTS = [f"Person {i} lives in {city}." for i, city in enumerate(
    ["Lyon", "Lisbon", "Osaka", "Berlin", "Toronto", "Porto", "Seoul", "Cairo"]
)]  # fmt: skip


async def call(client, tool: str, **arguments) -> dict:
    result = await client.call_tool(tool, arguments)
    assert not result.is_error, result.content
    return result.structured_content


async def pruned_store(client) -> tuple[dict[str, str], set[str]]:
    """The facts written and consolidated under a long-term bound of 3: which ids went to
    the trash."""
    ids = {}
    for text in FACTS:
        ids[text] = (await call(client, "remember", content=text))["id"]
    report = await call(client, "consolidate")
    assert report["pruned"] > 0
    trash = await call(client, "list_memories", tier="trash")
    return ids, {m["id"] for m in trash["items"]}


async def test_a_pruned_memory_that_matches_is_announced_and_found_in_the_trash(open_engine):
    async with connected(open_engine, gating=KEEP_ALL, temporal={"longterm_capacity": 3}) as (
        client,
        _engine,
    ):
        ids, trashed = await pruned_store(client)
        text = next(t for t in FACTS if ids[t] in trashed)
        name = text.split(" lives")[0]  # "Person 5"

        r = await call(client, "recall", query=f"{name} lives", k=3)
        assert ids[text] not in [it["id"] for it in r["items"]]
        assert ids[text] in r["trashed"]
        assert f"{len(r['trashed'])} memor" in r["notice"]
        assert "`restore`" in r["notice"] and ids[text] in r["notice"]

        searched = await call(
            client, "recall", query=f"{name} lives", k=3, paths=["episodic", "trash"]
        )
        first = searched["items"][0]
        assert (first["id"], first["path"], first["tier"]) == (ids[text], "trash", "trash")
        assert f"[trash {ids[text]}" in searched["context"]
        assert searched["notice"] is None

        await call(client, "restore", ids=[ids[text]])
        again = await call(client, "recall", query=f"{name} lives", k=3)
        assert again["items"][0]["id"] == ids[text]
        assert ids[text] not in again["trashed"]


async def test_no_notice_when_nothing_in_the_trash_matches_better(open_engine):
    async with connected(open_engine, gating=KEEP_ALL, temporal={"longterm_capacity": 3}) as (
        client,
        _engine,
    ):
        _ids, trashed = await pruned_store(client)
        assert trashed
        food = await call(client, "remember", content="I can't eat shellfish: I am allergic.")
        r = await call(client, "recall", query="Which food am I allergic to?", k=2)
    assert r["items"][0]["id"] == food["id"]
    assert r["trashed"] == [] and r["notice"] is None


async def test_a_forgotten_memory_counts_as_trashed_too(open_engine):
    async with connected(open_engine, gating=KEEP_ALL) as (client, _engine):
        kept = await call(client, "remember", content="My bike is a blue Brompton.")
        gone = await call(client, "remember", content="The garage door code is 4711.")
        r = await call(client, "recall", query="garage door code 4711", k=1)
        assert r["items"][0]["id"] == gone["id"] and r["notice"] is None
        await call(client, "forget", ids=[gone["id"]])
        r = await call(client, "recall", query="garage door code 4711", k=1)
    assert r["items"][0]["id"] == kept["id"]
    assert r["trashed"] == [gone["id"]]
    assert r["notice"].startswith("1 or more memories in the trash")  # k = 1: maybe more
