"""Scopes from MCP roots: each workspace gets its own memory; per-call scope and config
override it; cross-scope recall is opt-in."""

from __future__ import annotations

import json

import pytest
from mcp import Client
from mcp_types import ListRootsResult, Root

from cranimem_mcp.server.scopes import scope_for_root
from cranimem_mcp.server.tools import build_server

pytestmark = pytest.mark.anyio

ALPHA = "file:///home/ana/code/alpha"
BETA = "file:///home/ana/code/beta"


def roots(*uris: str):
    async def callback(_ctx):
        return ListRootsResult(roots=[Root(uri=u) for u in uris])

    return callback


def test_a_root_maps_to_a_stable_readable_scope():
    assert scope_for_root(ALPHA) == scope_for_root(ALPHA + "/")
    assert scope_for_root(ALPHA).startswith("alpha-") and len(scope_for_root(ALPHA)) == 12
    # Same folder name elsewhere: another scope.
    assert scope_for_root("file:///tmp/alpha") != scope_for_root(ALPHA)
    assert scope_for_root("file:///srv/My%20Project!").startswith("My-Project-")


async def ids(client, query, **args) -> set[str]:
    result = await client.call_tool("recall", {"query": query, **args})
    assert not result.is_error, result
    return {it["id"] for it in result.structured_content["items"]}


async def test_sessions_with_roots_get_their_own_scope(open_engine):
    async with open_engine(gating={"tau_noise": -1.0, "default_gate": False}) as engine:
        server = build_server(engine.settings, engine=engine)
        async with (
            Client(server, cache=None, list_roots_callback=roots(ALPHA)) as alpha,
            Client(server, cache=None, list_roots_callback=roots(BETA)) as beta,
            Client(server, cache=None) as plain,
        ):
            a = await alpha.call_tool("remember", {"content": "The alpha service uses Postgres."})
            b = await beta.call_tool("remember", {"content": "The beta service uses MySQL."})
            assert a.structured_content["scope"] == scope_for_root(ALPHA)
            assert b.structured_content["scope"] == scope_for_root(BETA)
            a_id, b_id = a.structured_content["id"], b.structured_content["id"]

            # Two projects do not mix in recall.
            assert await ids(alpha, "Which database does the service use?") == {a_id}
            assert await ids(beta, "Which database does the service use?") == {b_id}
            # A client without roots has the configured default scope, which holds neither.
            assert await ids(plain, "Which database does the service use?") == set()
            # An explicit scope wins over the roots.
            assert await ids(alpha, "database", scope=scope_for_root(BETA)) == {b_id}
            # Cross-scope recall is opt-in, and says where each item came from.
            both = await alpha.call_tool(
                "recall", {"query": "Which database does the service use?", "all_scopes": True}
            )
            found = {it["id"]: it["scope"] for it in both.structured_content["items"]}
            assert found == {a_id: scope_for_root(ALPHA), b_id: scope_for_root(BETA)}

            stats = json.loads((await plain.read_resource("cranimem://stats")).contents[0].text)
            assert {scope_for_root(ALPHA), scope_for_root(BETA)} <= {
                s["scope"] for s in stats["scopes"]
            }


async def test_configuration_can_turn_roots_off(open_engine):
    async with open_engine(scopes={"from_roots": False, "default": "everything"}) as engine:
        server = build_server(engine.settings, engine=engine)
        async with Client(server, cache=None, list_roots_callback=roots(ALPHA)) as alpha:
            stored = await alpha.call_tool("remember", {"content": "I prefer tabs over spaces."})
            assert stored.structured_content["scope"] == "everything"
