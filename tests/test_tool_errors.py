"""What the model reads when a call fails, through a real MCP client: an argument the schema
rejects is one sentence naming the argument and its bound (never pydantic's dump), and an
engine that cannot open is the store's own reason (never the bare "Error executing tool")."""

from __future__ import annotations

import anyio
import pytest
from conftest import connected, make_settings
from mcp import Client

from cranimem_mcp.server.tools import build_server

pytestmark = pytest.mark.anyio

SCOPE = "^[A-Za-z0-9_.:-]{1,64}$"


def assert_clean(text: str) -> None:
    assert "pydantic.dev" not in text and "validation error for" not in text
    assert "\n" not in text and "[type=" not in text


@pytest.mark.parametrize(
    ("tool", "arguments", "sentence"),
    [
        ("remember", {"content": ""},
         "Invalid argument for remember: `content` must be at least 1 character long (got 0)."),
        ("remember", {"content": "x" * 32_001},
         "Invalid argument for remember: `content` must be at most 32000 characters long "
         "(got 32001)."),
        ("remember", {}, "Invalid argument for remember: `content` is required."),
        ("remember", {"content": 42}, "Invalid argument for remember: `content` must be a "
         "string (got 42)."),
        ("remember", {"content": "I like tea.", "pin": "maybe"},
         'Invalid argument for remember: `pin` must be true or false (got "maybe").'),
        ("remember", {"content": "I like tea.", "tags": ["x" * 65]},
         "Invalid argument for remember: `tags[0]` must be at most 64 characters long (got 65)."),
        ("remember", {"content": "I like tea.", "scope": "bad scope!"},
         f'Invalid argument for remember: `scope` must match the pattern {SCOPE} '
         '(got "bad scope!").'),
        ("recall", {"query": "tea", "k": 0},
         "Invalid argument for recall: `k` must be at least 1 (got 0)."),
        ("recall", {"query": "tea", "k": 51},
         "Invalid argument for recall: `k` must be at most 50 (got 51)."),
        ("recall", {"query": "tea", "k": "five"},
         'Invalid argument for recall: `k` must be an integer (got "five").'),
        ("recall", {"query": "tea", "paths": ["web"]},
         "Invalid argument for recall: `paths[0]` must be 'episodic', 'graph' or 'trash' "
         '(got "web").'),
        ("recall", {"query": "tea", "paths": []},
         "Invalid argument for recall: `paths` must have at least 1 item (got 0)."),
        ("forget", {"ids": ["m_" + "0" * 20] * 1001},
         "Invalid argument for forget: `ids` must have at most 1000 items (got 1001)."),
        ("list_memories", {"tier": "bin"},
         "Invalid argument for list_memories: `tier` must be 'buffer', 'longterm' or 'trash' "
         '(got "bin").'),
        ("list_memories", {"limit": 101},
         "Invalid argument for list_memories: `limit` must be at most 100 (got 101)."),
        ("recall", {"query": "", "k": 99},
         "Invalid arguments for recall: `query` must be at least 1 character long (got 0); "
         "`k` must be at most 50 (got 99)."),
    ],
)  # fmt: skip
async def test_a_rejected_argument_is_one_sentence_naming_it_and_its_bound(
    open_engine, tool, arguments, sentence
):
    async with connected(open_engine) as (client, _engine):
        result = await client.call_tool(tool, arguments)
        assert result.is_error
        text = result.content[0].text
        assert_clean(text)
        assert text == sentence


async def test_the_bounds_in_the_sentence_are_the_schemas(open_engine):
    async with connected(open_engine) as (client, _engine):
        tools = {t.name: t for t in (await client.list_tools()).tools}
        k = tools["recall"].input_schema["properties"]["k"]
        result = await client.call_tool("recall", {"query": "tea", "k": k["maximum"] + 1})
        assert f"at most {k['maximum']} (got {k['maximum'] + 1})" in result.content[0].text


def unopenable(kind: str, tmp_path):
    """A data directory the engine cannot open: a file where the directory should be (the
    open fails before the stores), or a file where the graph store's folder should be (it
    fails inside the open's task group)."""
    if kind == "home is a file":
        home = tmp_path / "data"
        home.write_text("not a directory")
        return home, f"cannot open the memory store in {home}: Not a directory"
    home = tmp_path / "data"
    home.mkdir()
    (home / "graph").write_text("not a directory")
    return home, f"graph store operation failed: [Errno 17] File exists: '{home / 'graph'}'"


@pytest.mark.parametrize("kind", ["home is a file", "graph folder is a file"])
async def test_an_engine_that_cannot_open_says_why(tmp_path, kind):
    home, reason = unopenable(kind, tmp_path)
    settings = make_settings(
        home, models={"embedder": "local", "tagger": "heuristic", "extractor": "heuristic"}
    )
    server = build_server(settings)
    with anyio.fail_after(60):
        async with Client(server, cache=None) as client:
            for tool, arguments in (("remember", {"content": "I like tea."}),
                                    ("recall", {"query": "tea"})):  # fmt: skip
                result = await client.call_tool(tool, arguments)
                assert result.is_error
                text = result.content[0].text
                assert text.startswith(f"Error executing tool {tool}: {reason}")
                assert_clean(text)
