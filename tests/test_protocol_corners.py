"""The protocol's corners the official conformance suite looks at, through a real MCP client
on both eras (``mode="legacy"``: the 2025 handshake over JSON-RPC streams; ``"auto"``:
2026-07-28, one self-contained request at a time): the prompts the server advertises exist
and render; an unknown tool, prompt or resource is -32602 (invalid params) with a clear
message and no traceback in the log; ``logging/setLevel`` is served and the server's log
records reach the clients that ask, and only them."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from typing import Any

import pytest
from mcp import Client, MCPDeprecationWarning, MCPError
from mcp_types import INVALID_PARAMS, EmptyResult, LoggingMessageNotificationParams, Request

from cranimem_mcp.server.tools import build_server

pytestmark = pytest.mark.anyio

MODES = ["legacy", "auto"]


class Heard:
    """A client's ``logging_callback``: every log message the server sent it."""

    def __init__(self) -> None:
        self.messages: list[LoggingMessageNotificationParams] = []

    async def __call__(self, params: LoggingMessageNotificationParams) -> None:
        self.messages.append(params)


@asynccontextmanager
async def client_on(open_engine: Any, mode: str, **options: Any) -> AsyncIterator[Client]:
    async with open_engine() as engine:
        server = build_server(engine.settings, engine=engine)
        async with Client(server, cache=None, mode=mode, **options) as client:
            yield client


@pytest.fixture
def package_log_level() -> Iterator[None]:
    """A client that asks for info lowers the package logger's level: put it back."""
    package = logging.getLogger("cranimem_mcp")
    level = package.level
    yield
    package.setLevel(level)


def no_traceback(caplog: pytest.LogCaptureFixture) -> None:
    crashes = [r for r in caplog.records if r.exc_info or r.levelno >= logging.ERROR]
    assert not crashes, [r.getMessage() for r in crashes]


# --- prompts -----------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
async def test_the_advertised_prompts_exist_and_ask_for_the_tools(open_engine, mode):
    async with client_on(open_engine, mode) as client:
        prompts = {p.name: p for p in (await client.list_prompts()).prompts}
        assert set(prompts) == {"remember_this", "what_do_you_know"}
        for prompt in prompts.values():
            assert prompt.title and prompt.description
            (argument,) = prompt.arguments
            assert argument.required and argument.description
        fact = "I am allergic to shellfish."
        remembered = await client.get_prompt("remember_this", {"fact": fact})
        (message,) = remembered.messages
        assert message.role == "user" and fact in message.content.text
        assert "`remember`" in message.content.text and "pin=true" in message.content.text
        asked = await client.get_prompt("what_do_you_know", {"topic": "my sister"})
        assert "my sister" in asked.messages[0].content.text
        assert "`recall`" in asked.messages[0].content.text


# --- unknown names -----------------------------------------------------------------------------


async def invalid_params(call: Any) -> str:
    with pytest.raises(MCPError) as caught:
        await call
    assert caught.value.code == INVALID_PARAMS, caught.value
    return caught.value.message


@pytest.mark.parametrize("mode", MODES)
async def test_unknown_names_are_invalid_params_without_a_traceback(open_engine, mode, caplog):
    caplog.set_level(logging.DEBUG)
    async with client_on(open_engine, mode) as client:
        text = await invalid_params(client.get_prompt("summarise", {}))
        assert text.startswith("Unknown prompt: 'summarise'") and "remember_this" in text
        text = await invalid_params(client.call_tool("summarise", {}))
        assert text.startswith("Unknown tool: 'summarise'") and "recall" in text
        text = await invalid_params(client.read_resource("cranimem://nothing"))
        assert "Unknown resource" in text and "cranimem://nothing" in text
        text = await invalid_params(client.get_prompt("remember_this", {}))
        assert text == "Missing argument for prompt remember_this: fact"
        text = await invalid_params(client.get_prompt("remember_this", {"fact": "x" * 32_001}))
        assert "`fact` must be at most 32000 characters long" in text
        # The server still answers, and known names still work.
        assert (await client.get_prompt("remember_this", {"fact": "I like tea."})).messages
    no_traceback(caplog)


# --- capabilities ------------------------------------------------------------------------------


async def test_both_eras_advertise_prompts_and_logging(open_engine):
    async with client_on(open_engine, "legacy") as client:
        legacy = client.session.initialize_result.capabilities
    async with client_on(open_engine, "auto") as client:
        modern = client.session.discover_result.capabilities
    for caps in (legacy, modern):
        assert caps.prompts is not None and caps.logging is not None
        assert caps.tools is not None and caps.resources is not None


# --- logging -----------------------------------------------------------------------------------


async def forget_one(client: Client) -> None:
    """A call that logs at info: forget logs what it forgot."""
    stored = await client.call_tool("remember", {"content": "I like tea.", "pin": True})
    result = await client.call_tool("forget", {"ids": [stored.structured_content["id"]]})
    assert not result.is_error


def forgot(heard: Heard) -> list[LoggingMessageNotificationParams]:
    return [m for m in heard.messages if str(m.data).startswith("forgot 1 memories")]


async def test_a_2025_client_sets_its_level_and_hears_the_log(
    open_engine, caplog, package_log_level
):
    caplog.set_level(logging.WARNING)  # the terminal's level: not what the client asks for
    heard = Heard()
    async with client_on(open_engine, "legacy", logging_callback=heard) as client:
        await forget_one(client)
        assert heard.messages == []  # nothing until it asks
        with pytest.warns(MCPDeprecationWarning):  # deprecated on 2026-07-28, not on 2025
            await client.set_logging_level("info")
        await forget_one(client)
        (message,) = forgot(heard)
        assert message.level == "info" and message.logger == "cranimem_mcp.replay.forgetting"
        with pytest.warns(MCPDeprecationWarning):
            await client.set_logging_level("error")
        await forget_one(client)
        assert len(forgot(heard)) == 1  # info is below error now
    no_traceback(caplog)


async def test_a_2026_request_hears_the_log_at_the_level_it_names(
    open_engine, caplog, package_log_level
):
    caplog.set_level(logging.WARNING)
    quiet, heard = Heard(), Heard()
    async with client_on(open_engine, "auto", logging_callback=quiet) as client:
        await forget_one(client)
    assert quiet.messages == []
    async with client_on(open_engine, "auto", logging_callback=heard, log_level="info") as client:
        await forget_one(client)
    (message,) = forgot(heard)
    assert message.level == "info" and message.logger == "cranimem_mcp.replay.forgetting"
    no_traceback(caplog)


class RawRequest(Request[dict[str, Any], str]):
    """A request sent as written: a level the SDK's typed one would not let through."""


async def test_a_bad_level_is_invalid_params(open_engine, package_log_level):
    async with client_on(open_engine, "legacy") as client:
        request = RawRequest(method="logging/setLevel", params={"level": "loud"})
        with pytest.raises(MCPError) as caught:
            await client.session.send_request(request, EmptyResult)
    assert caught.value.code == INVALID_PARAMS
    assert caught.value.message.startswith("level must be one of: debug, info, notice")
