"""MCP roots through a real client on a handshake revision (the in-memory transport's legacy
mode, as stdio clients speak today): asked once per session, asked again after
``notifications/roots/list_changed``, and a client that fails or never answers ``roots/list``
still has its call served, in the configured scope, within the bound."""

from __future__ import annotations

import logging
from contextlib import asynccontextmanager

import anyio
import pytest
from conftest import stdio_params
from mcp import Client
from mcp.shared.exceptions import MCPDeprecationWarning
from mcp_types import ErrorData, ListRootsResult, Root

from cranimem_mcp.server.roots import ASK_TIMEOUT
from cranimem_mcp.server.scopes import scope_for_root
from cranimem_mcp.server.tools import build_server

pytestmark = pytest.mark.anyio

ALPHA = "file:///home/ana/code/alpha"
BETA = "file:///home/ana/code/beta"
# A bound on a hang (a client that never answers, an ask never given up), not on speed: the
# write itself (embedding, LanceDB, the first parse) took over 4 s on a loaded 2-core machine.
# That a second call neither asks nor waits is checked by the count of asks.
WITHIN = ASK_TIMEOUT + 30


class Roots:
    """A client's roots/list callback that answers with ``uri``, an error, or never; and
    counts how often it was asked."""

    def __init__(self, uri: str | None = ALPHA, *, fail: bool = False, hang: bool = False):
        self.uri, self.fail, self.hang = uri, fail, hang
        self.asked = 0
        self.never = anyio.Event()

    async def __call__(self, _ctx):
        self.asked += 1
        if self.hang:
            await self.never.wait()
        if self.fail:
            return ErrorData(code=-32603, message="roots unavailable")
        return ListRootsResult(roots=[Root(uri=self.uri)])


class Heard(logging.Handler):
    """Sets an event when a record with ``text`` is logged (the server logs on this thread)."""

    def __init__(self, text: str) -> None:
        super().__init__()
        self.text, self.event, self.records = text, anyio.Event(), []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)
        if self.text in record.getMessage():
            self.event.set()


@asynccontextmanager
async def session(open_engine, roots: Roots, **sections):
    async with open_engine(**sections) as engine:
        server = build_server(engine.settings, engine=engine)
        async with Client(server, cache=None, mode="legacy", list_roots_callback=roots) as c:
            yield c


async def remember(client, text: str) -> str:
    result = await client.call_tool("remember", {"content": text, "pin": True})
    assert not result.is_error, result
    return result.structured_content["scope"]


@asynccontextmanager
async def heard(text: str):
    handler = Heard(text)
    logger = logging.getLogger("cranimem_mcp.server.roots")
    level = logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    try:
        yield handler
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)


async def test_roots_are_asked_once_per_session(open_engine):
    roots = Roots(ALPHA)
    async with session(open_engine, roots) as client:
        for text in ("I use Postgres.", "I deploy on Fridays.", "I prefer tabs."):
            assert await remember(client, text) == scope_for_root(ALPHA)
        recalled = await client.call_tool("recall", {"query": "database"})
        assert recalled.structured_content["items"]
        assert roots.asked == 1


async def test_roots_are_asked_again_after_list_changed(open_engine):
    roots = Roots(ALPHA)
    async with session(open_engine, roots) as client:
        assert await remember(client, "I use Postgres.") == scope_for_root(ALPHA)
        roots.uri = BETA  # the user opened another folder
        assert await remember(client, "I use MySQL.") == scope_for_root(ALPHA)  # not told yet
        async with heard("roots changed") as log:
            with pytest.warns(MCPDeprecationWarning):
                await client.send_roots_list_changed()
            with anyio.fail_after(5):
                await log.event.wait()
        assert await remember(client, "I use SQLite.") == scope_for_root(BETA)
        assert await remember(client, "I use Redis.") == scope_for_root(BETA)
        assert roots.asked == 2


@pytest.mark.parametrize("failure", ["error", "hang"])
async def test_a_client_whose_roots_fail_is_served_in_the_default_scope(open_engine, failure):
    roots = Roots(fail=failure == "error", hang=failure == "hang")
    async with session(open_engine, roots, scopes={"default": "fallback"}) as client:
        async with heard("roots/list failed") as log:
            with anyio.fail_after(WITHIN):
                assert await remember(client, "I am allergic to penicillin.") == "fallback"
        assert log.event.is_set()
        assert [r.levelno for r in log.records] == [logging.WARNING]
        # The failure is kept for the session: the next call neither asks nor waits.
        with anyio.fail_after(WITHIN - ASK_TIMEOUT):
            assert await remember(client, "I live in Lisbon.") == "fallback"
        assert roots.asked == 1
        roots.never.set()


@pytest.mark.slow
async def test_over_stdio_a_silent_client_is_served_in_the_default_scope_and_asked_once(tmp_path):
    """The symptom as a real stdio client met it: a call hung until the client's timeout."""
    home = tmp_path / "data"
    params = stdio_params(home)
    roots = Roots(hang=True)
    async with Client(params, cache=None, mode="legacy", list_roots_callback=roots) as client:
        # Warm up with an explicit scope (no roots asked): the engine's open is not timed.
        warm = await client.call_tool("remember", {"content": "I use Vim.", "scope": "warm"})
        assert not warm.is_error and roots.asked == 0
        with anyio.fail_after(WITHIN):
            assert await remember(client, "I am allergic to penicillin.") == "default"
        with anyio.fail_after(WITHIN - ASK_TIMEOUT):
            assert await remember(client, "I live in Lisbon.") == "default"
        assert roots.asked == 1
        roots.never.set()
