"""The episodic table on object storage (moto's S3 server on loopback, in this process), as
replicas use it: several processes opening one fresh table at once, writing the same text
at once, reading each other's writes; and what a caller reads when the table cannot open."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

import anyio
import numpy as np
import pytest
from conftest import free_port, make_settings
from mcp import Client

from cranimem_mcp.buffer.episodic import EpisodicStore
from cranimem_mcp.buffer.table import LocalTable, SharedTable
from cranimem_mcp.engine import MemoryEngine
from cranimem_mcp.models import Memory
from cranimem_mcp.server.tools import build_server
from cranimem_mcp.validation import content_hash, new_id

pytestmark = pytest.mark.anyio

DIM = 8


def memory(text: str, scope: str = "s") -> Memory:
    rng = np.random.default_rng(len(text))
    vector = rng.standard_normal(DIM).astype(np.float32)
    vector /= np.linalg.norm(vector)
    stamp = datetime(2026, 1, 1, tzinfo=UTC)
    return Memory(id=new_id(), scope=scope, tier="buffer", content=text,
                  content_hash=content_hash(text), vector=vector.tolist(),
                  created_at=stamp, tier_changed_at=stamp, turn=1)  # fmt: skip


def store(location: dict, **kwargs) -> EpisodicStore:
    return EpisodicStore(SharedTable(location["uri"], location["storage_options"]), DIM, **kwargs)


@pytest.mark.slow  # over ~5 s
async def test_replicas_opening_one_fresh_table_at_once_all_open_it(s3):
    """Eight stores open the same fresh S3 table at once: all succeed, and there is one table
    with one set of indexes (it failed with "Table 'memories' already exists" before)."""
    location = s3.location("fresh")
    stores = [store(location) for _ in range(8)]
    errors: list[BaseException] = []

    async def open_one(s: EpisodicStore) -> None:
        try:
            await s.open()
        except Exception as exc:
            errors.append(exc)

    with anyio.fail_after(120):
        async with anyio.create_task_group() as tg:
            for s in stores:
                tg.start_soon(open_one, s)
    assert errors == []
    await stores[0].add([memory("one row")])
    for s in stores:  # every one is on the same table, at its latest version
        assert await s.count("s") == 1
    indexed = [tuple(ix.columns) for ix in stores[0]._table.list_indices()]
    assert sorted(indexed) == sorted(set(indexed))  # no index built twice
    assert {("content",), ("id",), ("content_hash",), ("scope",), ("tier",)} <= set(indexed)


@pytest.mark.slow  # over ~5 s
async def test_two_writers_inserting_one_text_at_once_store_it_once(s3):
    """Six stores (each its own process's view) insert the same text into one scope at the
    same time: one row. A plain append stored six."""
    location = s3.location("dedupe")
    stores = [store(location) for _ in range(6)]
    for s in stores:
        await s.open()
    for round_ in range(3):
        text = f"I am allergic to peanuts ({round_})."
        stored: list[bool] = []

        async def insert(s: EpisodicStore, text: str = text, stored: list = stored) -> None:
            stored.append(await s.insert(memory(text)))

        async with anyio.create_task_group() as tg:
            for s in stores:
                tg.start_soon(insert, s)
        assert sorted(stored) == [False] * 5 + [True]
        rows = await stores[0].rows(where=f"content_hash = '{content_hash(text)}'")
        assert len(rows) == 1
    # The key holds for live memories only: a trashed copy does not block a new one.
    (kept,) = await stores[0].rows(where=f"content_hash = '{content_hash(text)}'")
    await stores[1].upsert([memory_in_trash(kept)])
    assert await stores[2].insert(memory(text))


def memory_in_trash(m: Memory) -> Memory:
    return replace(m, tier="trash", vector=memory(m.content).vector)


@pytest.fixture
def two_engines(s3, tmp_path: Path, minilm):
    """Two engines (two replicas: each its own data directory and working set) on one S3
    table."""
    location = s3.location("replicas")

    def settings(name: str):
        return make_settings(tmp_path / name, episodic=location)

    async def opened():
        a = MemoryEngine(settings("a"), embedder=minilm, background=False)
        b = MemoryEngine(settings("b"), embedder=minilm, background=False)
        return a, b

    return opened


@pytest.mark.slow  # over ~5 s
async def test_a_write_through_one_replica_is_found_by_the_other(two_engines):
    """B's working set follows the table: after A writes, B's recall finds it and B's
    duplicate check merges a repeat instead of storing it twice (before: B's handle stayed at
    the version it opened, so it found nothing and stored a second copy)."""
    a, b = await two_engines()
    async with a, b:
        await b.recall("anything")  # B's working set of the scope is loaded (empty)
        first = await a.remember("My sister Ana lives in Lisbon and works as an architect.")
        assert first.status == "stored"
        found = await b.recall("Where does Ana live?")
        assert first.id in [item.id for item in found.items]
        again = await b.remember("My sister Ana lives in Lisbon and works as an architect.")
        assert again.status == "merged" and again.id == first.id
        assert await a.episodic.count("default", ("buffer",)) == 1
        # And back: B's consolidation is seen by A.
        await b.consolidate()
        assert await a.episodic.count("default", ("buffer",)) == 0
        assert [i.id for i in (await a.recall("Ana's job")).items][:1] == [first.id]
        # (Each replica has a local graph here; replicas share one through a SPARQL server.)
        assert await b.check() == []


async def test_two_replicas_writing_one_text_at_once_store_it_once(two_engines):
    a, b = await two_engines()
    text = "The Atlas API rate limit is 600 requests per minute."
    async with a, b:
        results = []

        async def write(engine: MemoryEngine) -> None:
            results.append(await engine.remember(text, pin=True))

        async with anyio.create_task_group() as tg:
            tg.start_soon(write, a)
            tg.start_soon(write, b)
        assert sorted(r.status for r in results) == ["merged", "stored"]
        assert len({r.id for r in results}) == 1
        rows = await a.episodic.rows(where=f"content_hash = '{content_hash(text)}'")
        assert len(rows) == 1 and rows[0].frequency == 2


@pytest.mark.parametrize(
    "broken", ["no such bucket", pytest.param("nobody listening", marks=pytest.mark.slow)]
)  # the refused connection is retried for seconds
async def test_a_table_that_cannot_open_is_a_tool_error_naming_the_cause(s3, tmp_path, broken):
    """Through a real MCP client: the open's failure is the tool's error, with the object
    store's reason in a line (not the bare "Error executing tool", not a Rust dump), and the
    calls after it say so too."""
    location = s3.location("present")
    if broken == "no such bucket":
        location["uri"] = "s3://absent-bucket/cranimem"
        reason = "NoSuchBucket: The specified bucket does not exist (bucket 'absent-bucket')"
    else:
        port = free_port()
        location["storage_options"]["aws_endpoint"] = f"http://127.0.0.1:{port}"
        reason = f"cannot connect to http://127.0.0.1:{port}"
    settings = make_settings(
        tmp_path / "data",
        episodic=location,
        models={"embedder": "local", "tagger": "heuristic", "extractor": "heuristic"},
    )
    server = build_server(settings)
    with anyio.fail_after(120):
        async with Client(server, cache=None) as client:
            for tool, arguments in (("remember", {"content": "I like tea."}),
                                    ("recall", {"query": "tea"}),
                                    ("remember", {"content": "I like tea."})):  # fmt: skip
                result = await client.call_tool(tool, arguments)
                assert result.is_error
                text = result.content[0].text
                assert text == (
                    f"Error executing tool {tool}: cannot open the episodic store at "
                    f"{location['uri']}: {reason}"
                )


@pytest.mark.object_store
async def test_a_table_made_before_the_key_gets_it_computed_for_every_row(
    tmp_path, episodic_location
):
    """A table of an older version (no ``live_key`` column) opens with the column added and
    filled in (scope and content hash while live, the id in the trash), and takes writes."""
    from cranimem_mcp.buffer.lance import lancedb
    from cranimem_mcp.buffer.records import LIVE_KEY, schema, to_arrow

    uri = episodic_location.get("uri", str(tmp_path / "old"))
    options = episodic_location.get("storage_options")
    full = schema(DIM)
    older = full.remove(full.get_field_index(LIVE_KEY))
    live, trashed = memory("I like tea."), replace(memory("I like coffee."), tier="trash")
    db = lancedb.connect(uri, storage_options=options)
    db.create_table("memories", to_arrow([live, trashed], full, DIM).select(older.names))
    where = SharedTable(uri, options) if episodic_location else LocalTable(Path(uri))
    s = EpisodicStore(where, DIM)
    await s.open()
    keys = {r["id"]: r[LIVE_KEY] for r in s._table.search().select(["id", LIVE_KEY]).to_list()}
    assert keys == {live.id: f"s/{live.content_hash}", trashed.id: trashed.id}
    if s._shared:  # the key works as a merge key, though not as the primary key
        assert not await s.insert(memory("I like tea."))
    assert await s.insert(memory("I like juice."))
    assert await s.count("s", ("buffer",)) == 2


async def test_the_example_replica_configuration_opens_its_bucket(s3, tmp_path):
    """configs/replica-s3.example.toml, with its endpoint pointed at the test server: the
    store opens in its bucket and takes a write (the documented options are the working ones)."""
    from cranimem_mcp.config import load_settings

    example = Path(__file__).parent.parent / "configs" / "replica-s3.example.toml"
    e = load_settings(config=example, home=tmp_path / "data").episodic
    bucket = e.uri.removeprefix("s3://").split("/")[0]
    s3.location(bucket)  # the bucket is made
    options = {**e.storage_options, "aws_endpoint": s3.url}
    s = EpisodicStore(SharedTable(e.uri, options), DIM, e.working_set_rows)
    await s.open()
    assert await s.insert(memory("I like tea."))
    assert (await s.find_hash("s", content_hash("I like tea."))) is not None


@pytest.mark.object_store
async def test_a_tier_changed_in_place_moves_the_key_with_it(tmp_path, episodic_location):
    """``update`` of a row's tier (the crash tests' way to stage a half-done change) keeps
    the duplicate check's key in step: trashed, its text can be stored again."""
    from cranimem_mcp.buffer.records import LIVE_KEY

    uri = episodic_location.get("uri", str(tmp_path / "t"))
    s = EpisodicStore(SharedTable(uri, episodic_location.get("storage_options") or {}), DIM)
    await s.open()
    first = memory("I like tea.")
    assert await s.insert(first)
    assert not await s.insert(memory("I like tea."))
    await s.update([first.id], {"tier": "trash"})
    (row,) = s._table.search().where(f"id = '{first.id}'").select([LIVE_KEY]).to_list()
    assert row[LIVE_KEY] == first.id
    assert await s.insert(memory("I like tea."))


async def test_a_shared_tables_commits_may_retry_their_conflicts_for_minutes(tmp_path, monkeypatch):
    """The replica proof (three replicas on one S3 table) saw a write fail with LanceDB's
    default budget: "Too many concurrent writers. Attempted 2 times, but failed on
    retry_timeout of 30.000 seconds". Every merge_insert of a shared table (the insert and
    the tier moves) now asks LanceDB for a longer one, the first attempt included."""
    from lancedb.merge import LanceMergeInsertBuilder

    asked: list[object] = []
    execute = LanceMergeInsertBuilder.execute

    def recording(self, new_data, *args, **kwargs):
        asked.append(kwargs.get("timeout"))
        return execute(self, new_data, *args, **kwargs)

    monkeypatch.setattr(LanceMergeInsertBuilder, "execute", recording)
    s = EpisodicStore(SharedTable(str(tmp_path / "t")), DIM)
    await s.open()
    first = memory("I like tea.")
    assert await s.insert(first)
    await s.upsert([replace(first, tier="longterm")])
    assert len(asked) == 2
    assert all(t is not None and t.total_seconds() >= 120 for t in asked), asked
