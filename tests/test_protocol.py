"""The protocol revisions clients speak, against a real server process: 2026-07-28 (found
with ``server/discover``, every request a self-contained message, no session) over
streamable HTTP and stdio, and the 2025 handshake revisions side by side with it on the same
server; and the progress notifications of ``consolidate``, on every revision."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx2
import pytest
from conftest import TOKEN, stdio_params
from mcp import Client, ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp_types import (
    ClientCapabilities,
    Implementation,
    InitializedNotification,
    InitializeRequest,
    InitializeRequestParams,
    InitializeResult,
)
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from test_roots import ALPHA, Roots
from test_server import connected
from test_sharing import serve_params

from cranimem_mcp.server.scopes import scope_for_root

pytestmark = pytest.mark.anyio

MODERN = "2026-07-28"
HANDSHAKE = ("2025-03-26", "2025-06-18", "2025-11-25")
HEADERS = {"Authorization": f"Bearer {TOKEN}"}


class Heard:
    """A tools/call ``progress_callback``: keeps every notification it is given."""

    def __init__(self) -> None:
        self.steps: list[tuple[float, float | None, str | None]] = []

    async def __call__(self, progress: float, total: float | None, message: str | None) -> None:
        self.steps.append((progress, total, message))


class Seen:
    """httpx2 response hook: the session ids and protocol versions of every exchange."""

    def __init__(self) -> None:
        self.session_ids: set[str] = set()
        self.versions: set[str] = set()

    async def __call__(self, response: httpx2.Response) -> None:
        request = response.request
        self.versions.add(request.headers.get("mcp-protocol-version", "none"))
        if "mcp-session-id" in response.headers:
            self.session_ids.add(response.headers["mcp-session-id"])


@asynccontextmanager
async def on_2026(url: str, seen: Seen | None = None, **options: Any) -> AsyncIterator[Client]:
    """The SDK's client as a new client connects: ``mode="auto"`` probes ``server/discover``
    at the newest revision and falls back to the handshake only if the server cannot."""
    hooks: dict[str, list[Any]] = {"response": [seen]} if seen else {}
    async with httpx2.AsyncClient(headers=HEADERS, timeout=60, event_hooks=hooks) as http:
        transport = streamable_http_client(url, http_client=http)
        async with Client(transport, cache=None, mode="auto", **options) as client:
            assert client.protocol_version == MODERN
            yield client


@asynccontextmanager
async def on_handshake(
    url: str, revision: str, seen: Seen | None = None
) -> AsyncIterator[ClientSession]:
    """An SDK session that offers ``revision`` in ``initialize`` (the SDK's own initialize
    always offers the newest 2025 revision, so an older client is played by hand)."""
    hooks: dict[str, list[Any]] = {"response": [seen]} if seen else {}
    async with httpx2.AsyncClient(headers=HEADERS, timeout=60, event_hooks=hooks) as http:
        async with streamable_http_client(url, http_client=http) as (read, write):
            async with ClientSession(read, write) as session:
                params = InitializeRequestParams(
                    protocol_version=revision,
                    capabilities=ClientCapabilities(),
                    client_info=Implementation(name=f"client-{revision}", version="0"),
                )
                result = await session.send_request(
                    InitializeRequest(params=params), InitializeResult
                )
                assert result.protocol_version == revision  # the server speaks it back
                session.adopt(result)
                await session.send_notification(InitializedNotification())
                yield session


async def tool(client: Client | ClientSession, name: str, **arguments: Any) -> dict[str, Any]:
    result = await client.call_tool(name, arguments)
    assert not result.is_error, result
    return result.structured_content


async def tour(client: Client | ClientSession, scope: str) -> None:
    """The main tools, end to end in ``scope``: remember, recall, list, consolidate (with
    its progress), forget, the trash, restore."""
    stored = await tool(client, "remember", content="I am allergic to shellfish.", scope=scope)
    assert stored["status"] == "stored" and stored["scope"] == scope
    memory = stored["id"]
    other = await tool(client, "remember", content="I prefer aisle seats.", scope=scope, pin=True)
    recalled = await tool(client, "recall", query="What must I not eat?", scope=scope)
    assert recalled["items"][0]["id"] == memory and "shellfish" in recalled["context"]
    listed = await tool(client, "list_memories", tier="buffer", scope=scope)
    assert {m["id"] for m in listed["items"]} == {memory, other["id"]}

    heard = Heard()
    result = await client.call_tool("consolidate", {"scope": scope}, progress_callback=heard)
    report = result.structured_content
    assert report["replayed"] == 2 and report["promoted"] == 2, report
    assert_progress(heard, scope, replayed=2)

    gone = await tool(client, "forget", ids=[memory], scope=scope)
    assert gone["forgotten"] == 1
    trash = await tool(client, "list_memories", tier="trash", scope=scope)
    assert [m["id"] for m in trash["items"]] == [memory]
    back = await tool(client, "restore", ids=[memory], scope=scope)
    assert back == {"restored": 1, "ids": [memory]}
    longterm = await tool(client, "list_memories", tier="longterm", scope=scope)
    assert {m["id"] for m in longterm["items"]} == {memory, other["id"]}


def assert_progress(heard: Heard, scope: str, replayed: int) -> None:
    """One scope consolidated: its three steps (read, scored, linked), pruned, purged,
    done; each notification further on than the last, against one total, ending at it."""
    progress = [p for p, _t, _m in heard.steps]
    totals = {t for _p, t, _m in heard.steps}
    assert totals == {6}, heard.steps
    assert progress == sorted(set(progress)) and progress[-1] == 6, heard.steps
    messages = [m for _p, _t, m in heard.steps]
    assert messages[0] == f"{scope}: {replayed} in the buffer to replay"
    assert messages[1].startswith(f"{scope}: scored {replayed}: ")
    assert messages[2].startswith(f"{scope}: linked ")
    assert messages[-1].startswith(f"done: replayed {replayed}, ")


@pytest.mark.slow
async def test_a_2026_client_over_http_finds_the_revision_and_runs_every_tool(http_server):
    seen = Seen()
    async with on_2026(http_server, seen) as client:
        assert client.protocol_version == MODERN in MODERN_PROTOCOL_VERSIONS
        discovered = client.session.discover_result
        assert discovered is not None and MODERN in discovered.supported_versions
        assert client.session.initialize_result is None  # no handshake happened
        await tour(client, "modern")
    # Stateless HTTP: no session was ever opened, every request named its revision.
    assert seen.session_ids == set()
    assert seen.versions == {MODERN}


@pytest.mark.slow
async def test_the_2025_revisions_are_served_side_by_side_with_2026(http_server):
    """One server, one client of each revision, each in its own scope; then each reads what
    the others wrote (the revision changes the wire, not the memory)."""
    for revision in HANDSHAKE:
        seen = Seen()
        async with on_handshake(http_server, revision, seen) as session:
            await tour(session, f"r{revision}")
        assert len(seen.session_ids) == 1  # a handshake revision is one session, named
        assert revision in seen.versions
    async with on_2026(http_server) as modern:
        await tour(modern, "modern")
        async with on_handshake(http_server, HANDSHAKE[0]) as old:
            for scope in ("modern", *(f"r{r}" for r in HANDSHAKE)):
                hits = await tool(old, "recall", query="allergy", scope=scope)
                assert "shellfish" in hits["context"], scope
                hits = await tool(modern, "recall", query="allergy", scope=scope)
                assert "shellfish" in hits["context"], scope


@pytest.mark.slow
async def test_a_2026_client_over_stdio_runs_every_tool(tmp_path):
    home = tmp_path / "data"
    params = stdio_params(home)
    async with Client(params, cache=None, mode="auto") as client:
        assert client.protocol_version == MODERN
        assert client.session.discover_result is not None
        await tour(client, "stdio")
    async with Client(params, cache=None, mode="legacy") as client:
        assert client.protocol_version == HANDSHAKE[-1]
        hits = await tool(client, "recall", query="allergy", scope="stdio")
        assert "shellfish" in hits["context"]


@pytest.mark.slow
async def test_on_2026_roots_are_asked_inside_the_call_over_http(http_server):
    """No server-to-client request exists on 2026-07-28: the call asks for roots in its
    result, the client answers by retrying it, and the write lands in the root's scope."""
    roots = Roots(ALPHA)
    async with on_2026(http_server, list_roots_callback=roots) as client:
        stored = await tool(client, "remember", content="I use Postgres.", pin=True)
        assert stored["scope"] == scope_for_root(ALPHA)
        assert roots.asked == 1
        listed = await tool(client, "list_memories", scope=scope_for_root(ALPHA))
        assert [m["id"] for m in listed["items"]] == [stored["id"]]


async def test_a_dry_run_over_every_scope_reports_each_scope_then_done(open_engine):
    """Two scopes, one of them with an empty buffer: two steps each (read, scored; nothing
    is linked, pruned or purged in a dry run), then done; the empty one jumps its two."""
    async with connected(open_engine) as (client, _engine):
        await tool(client, "remember", content="I am allergic to shellfish.", scope="a")
        await tool(client, "remember", content="I prefer aisle seats.", scope="b", pin=True)
        await tool(client, "consolidate", scope="b")  # b's buffer is empty now
        heard = Heard()
        result = await client.call_tool("consolidate", {"dry_run": True}, progress_callback=heard)
        assert result.structured_content["replayed"] == 1
    assert heard.steps == [
        (1, 5, "a: 1 in the buffer to replay"),
        (2, 5, "a: scored 1: 1 to promote, 0 to trash"),
        (4, 5, "b: nothing in the buffer to replay"),
        (5, 5, "done: replayed 1, promoted 1, pruned 0"),
    ]


@pytest.mark.slow
async def test_a_bridged_server_reports_one_step_when_the_owner_answers(tmp_path):
    """The second server on a data directory bridges to the first: the owner's steps do not
    cross the bridge, so its client hears one notification, the total, with the report."""
    home = tmp_path / "data"
    async with Client(serve_params(home), cache=None) as owner:
        await tool(owner, "remember", content="I am allergic to shellfish.", scope="s")
        async with Client(serve_params(home), cache=None, mode="auto") as bridge:
            assert bridge.protocol_version == MODERN
            heard = Heard()
            result = await bridge.call_tool("consolidate", {"scope": "s"}, progress_callback=heard)
            assert result.structured_content["replayed"] == 1
    assert heard.steps == [(1, 1, "done by the process that owns the data directory")]
