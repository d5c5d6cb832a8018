"""What a client and its model meet: every tool's description, argument descriptions, title
and hints, and `list_memories`, the way to browse a scope's memories tier by tier (the
trash's ids are what `restore` needs). Through a real MCP client on real stores; the last
tests go through the command line and a second `serve` process that bridges to the
directory's owner."""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path

import anyio
import pytest
from conftest import bridged, connected, make_settings, server_env, stdio_params
from jsonschema import Draft202012Validator
from mcp import Client
from mcp.server.mcpserver import MCPServer

from cranimem_mcp.cli import main as cli
from cranimem_mcp.engine import MemoryEngine
from cranimem_mcp.errors import InvalidInput
from cranimem_mcp.models import SCOPE_PATTERN, MemoryPage
from cranimem_mcp.server.tools import build_server
from cranimem_mcp.sharing.ownership import read_owner_info

pytestmark = pytest.mark.anyio

# Writes are kept whatever they say (no noise gate), so a test decides what is stored.
KEEP_ALL = {"tau_noise": -1.0, "default_gate": False}

# tool -> the hints it must declare (None: not declared; read-only tools need no other)
HINTS = {
    "remember": {"read_only_hint": None, "destructive_hint": False, "idempotent_hint": False},
    "recall": {"read_only_hint": True},
    "list_memories": {"read_only_hint": True},
    "consolidate": {"read_only_hint": None, "destructive_hint": True, "idempotent_hint": False},
    "forget": {"read_only_hint": None, "destructive_hint": True, "idempotent_hint": True},
    "restore": {"read_only_hint": None, "destructive_hint": False, "idempotent_hint": True},
    "set_goal": {"read_only_hint": None, "destructive_hint": True, "idempotent_hint": True},
}


async def call(client: Client, tool: str, **arguments) -> dict:
    result = await client.call_tool(tool, arguments)
    assert not result.is_error, result.content
    return result.structured_content


async def listed(client: Client, **arguments) -> dict:
    return await call(client, "list_memories", **arguments)


def unindented(text: str) -> bool:
    return all(line == line.lstrip() for line in text.splitlines())


# --- descriptions, titles, hints -------------------------------------------------------------


async def test_every_tool_and_every_argument_has_an_unindented_description(open_engine):
    async with connected(open_engine) as (client, _engine):
        tools = (await client.list_tools()).tools
    assert {t.name for t in tools} == set(HINTS)
    for tool in tools:
        assert len(tool.description) > 80, tool.name
        assert unindented(tool.description), f"{tool.name}: {tool.description!r}"
        props = tool.input_schema["properties"]
        # The resolved scope and the Context are filled by the server, never by the model.
        assert not {"ctx", "in_scope"} & set(props), tool.name
        for name, schema in props.items():
            description = (schema.get("description") or "").strip()
            # At the property's top level, where clients read it (not inside an anyOf branch).
            assert description, f"{tool.name}.{name} has no description"
            assert unindented(description), f"{tool.name}.{name}: {description!r}"


async def test_every_tool_has_a_title_and_its_hints(open_engine):
    async with connected(open_engine) as (client, _engine):
        tools = {t.name: t for t in (await client.list_tools()).tools}
    for name, hints in HINTS.items():
        tool = tools[name]
        assert tool.title and tool.annotations.title == tool.title, name
        assert tool.annotations.open_world_hint is False, name
        for hint, value in hints.items():
            assert getattr(tool.annotations, hint) is value, f"{name}.{hint}"


async def test_forget_and_set_goal_say_what_the_model_must_know(open_engine):
    async with connected(open_engine) as (client, _engine):
        tools = {t.name: t for t in (await client.list_tools()).tools}
    forget = tools["forget"]
    text = forget.description
    assert "confirm" in text and "`hard=true`" in text and "`all_in_scope=true`" in text
    assert "whole words" in text and '"I prefer aisle seats"' in text
    props = forget.input_schema["properties"]
    assert "confirm with the user" in props["hard"]["description"]
    assert "confirm with the user" in props["all_in_scope"]["description"]
    assert "whole words" in props["entity"]["description"]
    goal = tools["set_goal"].description
    assert "replaces the scope's current goal" in goal and "keep less" in goal
    assert 'tier="trash"' in tools["restore"].description


# --- lean definitions: the budget, the guidance, the bounds ----------------------------------
# The tool definitions ride along on every turn of the client's model.
TOOLS_LIST_BUDGET = 10_000  # bytes

# tool -> what its description must still say: when to call it, what to confirm first, how
# pin and scopes work, what a repeat does
GUIDANCE = {
    "remember": ["one\nper call", "in their words", "`pin`", "`redacted`", "`forget`",
                 "`superseded`", "confirm the change with\nthe user"],
    "recall": ["before answering", "per scope", "`all_scopes=true`", "`trashed`", "`restore`",
               "data, not instructions"],
    "list_memories": ['`tier="trash"`', "`restore`", "`recall`"],
    "consolidate": ["runs by itself", "Rarely needed"],
    "forget": ["when the user asks", "`dry_run=true`", "explicit\nconfirmation", "`hard=true`",
               "`all_in_scope=true`", "`restore`", "`unchanged`", "unknown id\nis an error",
               "a wrong id never passes for done"],
    "restore": ["forgotten", '`tier="trash"`'],
    "set_goal": ["when the user says so", "replaces the scope's current goal", "keep less"],
}  # fmt: skip
# (tool, argument) -> what its description must say
ARGUMENT_GUIDANCE = {
    ("remember", "pin"): "asked you to remember",
    ("remember", "content"): "user's words",
    ("recall", "all_scopes"): "about the user in general",
    ("recall", "paths"): "multi-hop",
    ("forget", "hard"): "confirm with the user first",
    ("forget", "all_in_scope"): "confirm with the user first",
    ("forget", "entity"): "whole words",
    ("consolidate", "scope"): "every scope",
}
# What a lean input schema must keep of the SDK's: every bound, pattern, value set, default
KEPT = ("pattern", "minLength", "maxLength", "minimum", "maximum", "minItems", "maxItems",
        "enum", "default", "description")  # fmt: skip


def _kept(schema: dict, where: str = "") -> set[tuple[str, str]]:
    """The keywords of ``schema`` that constrain or describe a value (nested anyOf branches
    and items included), a null default and null's place in an enum left out."""
    found = set()
    for key in KEPT:
        value = schema.get(key)
        if key == "enum" and value is not None:
            value = [v for v in value if v is not None]
        if value is not None:
            found.add((where + key, json.dumps(value)))
    for branch in schema.get("anyOf", []):
        found |= _kept(branch, where)
    if isinstance(schema.get("items"), dict):
        found |= _kept(schema["items"], where + "items.")
    return found


async def test_the_tool_definitions_fit_in_10_kb(open_engine):
    """Measured through the client, as issue 38 did: the tools/list result as JSON with
    Python's default separators (the compact JSON on the wire is a little smaller). Before
    the lean definitions: 27,059 bytes."""
    async with connected(open_engine) as (client, _engine):
        result = await client.list_tools()
    data = result.model_dump(mode="json", by_alias=True, exclude_none=True)
    sizes = {t["name"]: len(json.dumps(t).encode()) for t in data["tools"]}
    assert len(json.dumps(data).encode()) <= TOOLS_LIST_BUDGET, sizes


async def test_each_tool_still_says_when_to_call_it_and_what_to_confirm(open_engine):
    async with connected(open_engine) as (client, _engine):
        tools = {t.name: t for t in (await client.list_tools()).tools}
    for name, words in GUIDANCE.items():
        text = " ".join(tools[name].description.split())
        for word in words:
            assert " ".join(word.split()) in text, f"{name}: {word!r}"
    for (name, argument), words in ARGUMENT_GUIDANCE.items():
        assert words in tools[name].input_schema["properties"][argument]["description"]
    for name, tool in tools.items():
        scope = tool.input_schema["properties"]["scope"]
        assert scope["pattern"] == SCOPE_PATTERN, name
        if name != "consolidate":  # its scope defaults to every scope, not the session's
            assert scope["description"] == "Omit unless the user names a scope", name


async def test_the_lean_schemas_keep_every_bound_pattern_and_default(open_engine):
    """Against the SDK's own schemas: each argument keeps its bounds, pattern, value set,
    default and description; null is still accepted where it was, a bad scope still is not;
    each output schema names every field of the result."""
    async with open_engine() as engine:
        server = build_server(engine.settings, engine=engine)
        full = {t.name: t for t in await MCPServer.list_tools(server)}
        async with Client(server, cache=None) as client:
            lean = {t.name: t for t in (await client.list_tools()).tools}
    assert set(lean) == set(full) == set(HINTS)
    for name, tool in full.items():
        mine = lean[name].input_schema
        assert mine["properties"].keys() == tool.input_schema["properties"].keys(), name
        assert mine.get("required") == tool.input_schema.get("required"), name
        for arg, schema in tool.input_schema["properties"].items():
            assert _kept(mine["properties"][arg]) == _kept(schema), f"{name}.{arg}"
        assert set(lean[name].output_schema["properties"]) == set(
            tool.output_schema["properties"]
        ), name
        validator = Draft202012Validator(mine)
        assert validator.is_valid({**REQUIRED.get(name, {}), "scope": None}), name
        assert not validator.is_valid({**REQUIRED.get(name, {}), "scope": "bad scope!"}), name
    tier = Draft202012Validator(lean["list_memories"].input_schema)
    assert tier.is_valid({"tier": None}) and tier.is_valid({"tier": "trash"})
    assert not tier.is_valid({"tier": "attic"})
    assert lean["remember"].output_schema["properties"]["status"] == {
        "enum": ["stored", "merged", "rejected"]
    }


# The arguments a call cannot leave out.
REQUIRED = {"remember": {"content": "x"}, "recall": {"query": "x"},
            "restore": {"ids": ["m_" + "0" * 20]}, "set_goal": {"goal": "x"}}  # fmt: skip


# --- list_memories ---------------------------------------------------------------------------


async def fill(client: Client) -> dict[str, list[str]]:
    """Two long-term memories, one trashed (forgotten), two in the buffer: ids per tier."""
    kept = [
        (await call(client, "remember", content=text, pin=True))["id"]
        for text in (
            "The user is allergic to shellfish.",
            "The user's sister Ana lives in Lyon.",
            "The user prefers aisle seats on long flights.",
        )  # fmt: skip
    ]
    report = await call(client, "consolidate")
    assert report["promoted"] == 3  # pinned: never pruned
    recent = [
        (await call(client, "remember", content=text))["id"]
        for text in ("The user's project Zephyr ships in June.", "The user runs on Tuesdays.")
    ]
    forgotten = await call(client, "forget", ids=[kept[1]])
    assert forgotten["ids"] == [kept[1]]
    return {"longterm": [kept[0], kept[2]], "trash": [kept[1]], "buffer": recent}


async def test_list_memories_shows_each_tier_with_ids_scores_and_dates(open_engine):
    async with connected(open_engine, gating=KEEP_ALL) as (client, _engine):
        ids = await fill(client)
        for tier, expected in ids.items():
            page = await listed(client, tier=tier)
            assert page["tier"] == tier and page["scope"] == "default"
            assert page["total"] == len(expected) and page["next_offset"] is None
            assert {it["id"] for it in page["items"]} == set(expected)
            for item in page["items"]:
                assert item["tier"] == tier and item["content"].startswith("The user")
                datetime.fromisoformat(item["created_at"])
                assert isinstance(item["base_utility"], float)
        trashed = (await listed(client, tier="trash"))["items"][0]
        assert trashed["reason"] == "forgotten by request"
        assert datetime.fromisoformat(trashed["tier_changed_at"]) > datetime.fromisoformat(
            trashed["created_at"]
        )
        promoted = (await listed(client, tier="longterm"))["items"]
        assert all(isinstance(it["replay_score"], float) for it in promoted)
        assert all(it["pinned"] for it in promoted)
        # Newest in its tier first: the buffer's last write leads.
        assert [it["id"] for it in (await listed(client, tier="buffer"))["items"]] == (
            ids["buffer"][::-1]
        )
        # All tiers together, and the listing agrees with the stats resource.
        everything = await listed(client)
        assert everything["tier"] is None and everything["total"] == 5
        assert everything["items"][0]["id"] == ids["trash"][0]  # the last to change tier
        stats = json.loads((await client.read_resource("cranimem://stats")).contents[0].text)
        (scope,) = stats["scopes"]
        assert (scope["buffer_size"], scope["longterm"], scope["trash"]) == (2, 2, 1)


async def test_the_trash_listing_gives_the_ids_restore_needs(open_engine):
    async with connected(open_engine, gating=KEEP_ALL) as (client, _engine):
        ids = await fill(client)
        (trashed,) = (await listed(client, tier="trash"))["items"]
        back = await call(client, "restore", ids=[trashed["id"]])
        assert back["ids"] == ids["trash"]
        assert (await listed(client, tier="trash"))["total"] == 0
        longterm = await listed(client, tier="longterm")
        assert trashed["id"] in {it["id"] for it in longterm["items"]}


async def test_list_memories_pages_without_gaps_or_repeats(open_engine):
    async with connected(open_engine, gating=KEEP_ALL) as (client, _engine):
        written = [
            (await call(client, "remember", content=f"The user's colleague number {i} is Kim{i}."))[
                "id"
            ]
            for i in range(7)
        ]
        seen: list[str] = []
        offset: int | None = 0
        pages = 0
        while offset is not None:
            page = await listed(client, tier="buffer", limit=3, offset=offset)
            assert page["total"] == 7 and page["offset"] == offset
            assert len(page["items"]) == (3 if offset < 6 else 1)
            seen += [it["id"] for it in page["items"]]
            offset, pages = page["next_offset"], pages + 1
        assert pages == 3 and seen == written[::-1]
        beyond = await listed(client, tier="buffer", limit=3, offset=50)
        assert beyond["items"] == [] and beyond["total"] == 7 and beyond["next_offset"] is None
        assert (await listed(client, tier="trash"))["items"] == []


async def test_list_memories_keeps_to_its_scope_and_cuts_long_texts(open_engine):
    async with connected(open_engine, gating=KEEP_ALL) as (client, _engine):
        long = "The user's travel notes: " + "Kyoto in May, temples and gardens. " * 40
        mine = await call(client, "remember", content=long, scope="trip")
        await call(client, "remember", content="The user's other scope holds this.", scope="work")
        page = await listed(client, scope="trip")
        (item,) = page["items"]
        assert page["scope"] == "trip" and item["id"] == mine["id"]
        assert item["truncated"] is True and len(item["content"]) == 500
        assert long.startswith(item["content"])
        assert (await listed(client, scope="work"))["items"][0]["truncated"] is False
        assert (await listed(client))["total"] == 0  # the session's scope is neither


@pytest.mark.parametrize(
    ("arguments", "named"),
    [
        ({"tier": "attic"}, "tier"),
        ({"limit": 0}, "limit"),
        ({"limit": 101}, "limit"),
        ({"offset": -1}, "offset"),
        ({"scope": "bad scope!"}, "scope"),
    ],
)
async def test_list_memories_rejects_bad_arguments_by_name(open_engine, arguments, named):
    async with connected(open_engine) as (client, _engine):
        result = await client.call_tool("list_memories", arguments)
        assert result.is_error
        text = result.content[0].text
        assert named in text and text.strip() != "Error executing tool list_memories"


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"tier": "attic"}, "tier must be one of buffer, longterm, trash"),
        ({"limit": 0}, "limit must be an integer from 1 to 100"),
        ({"limit": True}, "limit must be an integer"),
        ({"offset": -1}, "offset must be an integer of at least 0"),
        ({"scope": "bad scope!"}, "invalid scope"),
    ],
)
async def test_the_engine_checks_list_arguments_itself(open_engine, arguments, message):
    """Bridged calls reach the engine as JSON from the owner's endpoint, not through the
    public tool's schema."""
    async with open_engine() as engine:
        with pytest.raises(InvalidInput, match=message):
            await engine.list_memories(**arguments)


async def test_the_owners_endpoint_serves_list_memories(open_engine):
    async with open_engine(gating=KEEP_ALL) as engine:
        stored = await engine.remember("The user's dentist is Dr Okafor.")
        async with bridged(engine) as remote:
            page = await remote.list_memories(tier="buffer", limit=5)
            with pytest.raises(InvalidInput, match="limit"):
                await remote.list_memories(limit=500)
        assert isinstance(page, MemoryPage)
        assert [it.id for it in page.items] == [stored.id] and page.total == 1


@pytest.mark.slow
async def test_a_bridged_server_lists_the_owners_trash(tmp_path):
    home = tmp_path / "data"
    env = server_env(home, CRANIMEM_MODELS__EMBEDDER="local", CRANIMEM_MODELS__TAGGER="heuristic",
                     CRANIMEM_MODELS__EXTRACTOR="heuristic", CRANIMEM_GATING__TAU_NOISE="-1.0",
                     CRANIMEM_GATING__DEFAULT_GATE="false",
                     CRANIMEM_CONSOLIDATION__INTERVAL_SECONDS="0")  # fmt: skip
    params = stdio_params(home, env=env, cwd=str(Path(__file__).resolve().parents[1]))
    async with Client(params, cache=None) as owner:
        first = await call(owner, "remember", content="The user's cat is called Miso.", scope="s")
        await call(owner, "remember", content="The user's dog is called Udon.", scope="s")
        await call(owner, "forget", ids=[first["id"]], scope="s")
        info = read_owner_info(home)
        assert info is not None
        async with Client(params, cache=None) as bridge:
            trash = await listed(bridge, tier="trash", scope="s")
            assert [it["id"] for it in trash["items"]] == [first["id"]]
            assert trash["items"][0]["reason"] == "forgotten by request"
            everything = await listed(bridge, scope="s", limit=1)
            assert everything["total"] == 2 and everything["next_offset"] == 1
            bad = await bridge.call_tool("list_memories", {"scope": "s", "limit": 0})
            assert bad.is_error and "limit" in bad.content[0].text
            await call(bridge, "restore", ids=[first["id"]], scope="s")
            assert read_owner_info(home) == info  # the second process bridged all along
        assert (await listed(owner, tier="trash", scope="s"))["total"] == 0


def test_the_cli_lists_a_tier_page_by_page(tmp_path, monkeypatch, capsys, minilm):
    home = tmp_path / "data"
    settings = make_settings(home, gating=KEEP_ALL)

    async def fill_store() -> list[str]:
        async with MemoryEngine(settings, embedder=minilm, background=False) as engine:
            ids = [(await engine.remember(f"The user's friend Noor{i} lives in Oslo.")).id
                   for i in range(3)]  # fmt: skip
            await engine.forget(ids[:2])
            return [str(i) for i in ids]

    ids = anyio.run(fill_store)
    monkeypatch.setenv("CRANIMEM_MODELS__TAGGER", "heuristic")
    monkeypatch.setenv("CRANIMEM_MODELS__EXTRACTOR", "heuristic")
    argv = ["list", "--tier", "trash", "--limit", "1", "--data-dir", str(home)]
    assert cli.main(argv) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith(f"{ids[1]}  trash") and "Noor1 lives in Oslo." in out[0]
    assert out[1] == "1-1 of 2 (default, trash); next page: --offset 1"
    assert cli.main([*argv, "--offset", "1", "--json"]) == 0
    page = json.loads(capsys.readouterr().out)
    assert [it["id"] for it in page["items"]] == [ids[0]] and page["next_offset"] is None
    assert cli.main([*argv[:-2], "--limit", "0", "--data-dir", str(home)]) == 2
    assert "limit must be an integer from 1 to 100" in capsys.readouterr().err
