"""A long memory is searched by its passages, not by its opening alone.

MiniLM reads the first 256 word pieces of a text (about 1,000 characters) and averages them;
an assistant's long note or chat turn says most of what it says after that, or in passing. A
write stores the vectors of up to ``episodic.windows`` - 1 of its passages (a few sentences
each, cranimem_mcp/backends/passages.py) beside its own, and a recall lifts the memory's
score by its best passage's: through MCP, after a restart (the passages read back from the
table's ``windows`` column), without the working set (LanceDB answers), and in a table made
before the column existed.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import anyio
import numpy as np
import pyarrow as pa
import pytest
from conftest import connected, make_settings

from cranimem_mcp.backends.passages import SHARE, passages
from cranimem_mcp.buffer.episodic import EpisodicStore
from cranimem_mcp.buffer.lance import lancedb
from cranimem_mcp.buffer.records import schema
from cranimem_mcp.buffer.table import LocalTable
from cranimem_mcp.buffer.working_set import LIVE, Entry, ScopeSet, WorkingSet
from cranimem_mcp.cli import main as cli
from cranimem_mcp.engine import MemoryEngine
from cranimem_mcp.models import Memory

pytestmark = pytest.mark.anyio

# Meeting notes whose last paragraph (past the first 256 word pieces) holds the one thing
# the question asks about, in other words than the question's.
LONG_NOTE = (
    "Weekly sync, platform team. Attendees: Priya, Tom, Kenji, Ana. "
    "1. Release train: the 4.2 branch was cut on Monday; the changelog still misses the "
    "entries for the billing export and the new audit log filters. Tom will collect them "
    "from the merged pull requests and post a draft in the release channel by Wednesday. "
    "2. Continuous integration: the end-to-end suite flaked eleven times last week, almost "
    "all in the checkout flow; Kenji suspects the payment sandbox's rate limit and will add "
    "retries with jitter to the client and move the suite to its own sandbox account. "
    "3. Infrastructure: the staging cluster moves to the new node pool on Thursday night; "
    "expect twenty minutes of downtime. Ana will announce the window and watch the error "
    "budget dashboard during the move. The old pool is drained and deleted on Friday. "
    "4. Observability: traces from the search service are sampled at one percent, which "
    "hides slow queries; Priya proposes tail-based sampling in the collector and will "
    "prototype it on staging first, with a cost estimate for production. "
    "5. On-call: the rotation swaps Tom and Kenji for the week of the conference; the "
    "handbook's escalation page gets the new phone numbers. "
    "6. Offsite planning: the team dinner is booked for the evening of the 14th. "
    "Ana reminded everyone that her son cannot eat any tree nuts or peanuts because of a "
    "severe allergy, so the restaurant was told to keep every dish free of nuts."
)
SHORT_NOTES = [
    "The staging database is Postgres 15 and is backed up nightly.",
    "The user prefers dark mode in every editor.",
    "Decision: the mobile app ships with React Native, not Flutter.",
    "The CI pipeline takes about twelve minutes on main.",
    "Kenji owns the payment sandbox account.",
]
QUESTION = "Which foods must the restaurant avoid for Ana's child?"


async def _remember_all(engine: Any) -> str:
    ids = []
    for text in [LONG_NOTE, *SHORT_NOTES]:
        result = await engine.remember(text, "notes", pin=True)
        ids.append(result.id)
    return ids[0]


async def _first(engine: Any) -> str:
    result = await engine.recall(QUESTION, "notes", 3, 4000)
    return result.items[0].id


async def test_a_long_note_is_recalled_by_its_best_window_through_mcp(open_engine):
    async with connected(open_engine) as (client, engine):
        for text in [LONG_NOTE, *SHORT_NOTES]:
            await client.call_tool("remember", {"content": text, "scope": "notes", "pin": True})
        got = await client.call_tool("recall", {"query": QUESTION, "scope": "notes", "k": 3})
        text = got.content[0].text
        shown = [text.index(s[:30]) for s in SHORT_NOTES if s[:30] in text]
        assert "Weekly sync" in text and text.index("Weekly sync") < min(shown, default=len(text))
        (row,) = [m for m in await engine.episodic.rows(where=None, vectors=True)
                  if m.content == LONG_NOTE]  # fmt: skip
        # its passages (of about 40 words), up to 31 (32 vectors in all)
        assert row.windows is not None and len(row.windows) == len(passages(LONG_NOTE)) <= 31


async def test_without_windows_the_opening_alone_ranks_it(open_engine, tmp_path):
    """The same store with ``windows`` 1: the note's vector is its opening, which is about
    releases and CI; the question's best match is then not the note, by vector or through
    recall (so the test above can fail)."""
    async with open_engine(home=tmp_path / "one", episodic={"windows": 1}) as engine:
        long_id = await _remember_all(engine)
        (row,) = await engine.episodic.get([long_id], vectors=True)
        assert row.windows is None
        qvec = (await engine.embedder.embed([QUESTION]))[0]
        near = await engine.episodic.nearest("notes", qvec, LIVE, 3, windows=True)
        assert near[0].entry.id != long_id
        assert await _first(engine) != long_id  # the words "restaurant", "Ana" do not lift it


@pytest.mark.parametrize("rows", [100_000, 0], ids=["working-set", "lancedb"])
async def test_the_windows_survive_a_restart_and_answer_without_the_working_set(
    open_engine, tmp_path, rows
):
    home = tmp_path / "data"
    async with open_engine(home=home) as engine:
        long_id = await _remember_all(engine)
        qvec = (await engine.embedder.embed([QUESTION]))[0]
        opening = await engine.episodic.nearest("notes", qvec, LIVE, 6)  # the gate's view
        by_opening = {h.entry.id: h.similarity for h in opening}
    async with open_engine(home=home, episodic={"working_set_rows": rows}) as engine:
        near = await engine.episodic.nearest("notes", qvec, LIVE, 6, windows=True)
        assert near[0].entry.id == long_id
        assert near[0].similarity > by_opening[long_id] + 0.1
        assert await _first(engine) == long_id


async def test_a_table_made_before_the_column_gets_it_and_keeps_its_rows(tmp_path, minilm):
    """An older table (no ``windows`` column) opens: the column is added as nulls, its
    memories are searched by their vectors, and new long writes store their windows."""
    path = tmp_path / "episodic"
    old = pa.schema([f for f in schema(minilm.dim) if f.name != "windows"])
    vector = (await minilm.embed(["I am allergic to peanuts."]))[0]
    first = Memory(id="m_" + "0" * 20, scope="s", tier="buffer", content="I am allergic to "
                   "peanuts.", content_hash="a" * 64, vector=vector,
                   created_at=datetime(2026, 1, 1, tzinfo=UTC))  # fmt: skip
    db = lancedb.connect(str(path))
    db.create_table("episodic", schema=old)
    store = EpisodicStore(LocalTable(path), minilm.dim)
    await store.open()
    assert "windows" in store._table.schema.names
    await store.add([first])
    (back,) = await store.get([first.id], vectors=True)
    assert back.windows is None and np.allclose(back.vector, vector)


def test_a_scope_set_scores_by_the_best_window_and_forgets_removed_ones():
    rng = np.random.default_rng(3)

    def unit() -> np.ndarray:
        v = rng.standard_normal(64).astype(np.float32)
        return v / np.linalg.norm(v)

    def entry(i: int) -> Entry:
        return Entry(f"m{i}", "buffer", f"text {i}", f"h{i}", datetime(2026, 1, 1, tzinfo=UTC),
                     None, i)  # fmt: skip

    query = unit()
    mirrored = ScopeSet(dim=64)
    far = unit()
    far -= (far @ query) * query  # an opening at right angles to the query
    far /= np.linalg.norm(far)
    mirrored.put(entry(0), far, np.stack([unit(), query]))  # its second passage is the query
    for i in range(1, 30):
        mirrored.put(entry(i), unit())
    assert mirrored.nearest(query, LIVE, 1, windows=True)[0][0].id == "m0"
    # its own cosine (0) lifted by a share of its best passage's (1)
    assert mirrored.similarity("m0", query, windows=True) == pytest.approx(SHARE, abs=1e-5)
    assert mirrored.nearest(query, LIVE, 1)[0][0].id != "m0"  # the gate's: openings only
    mirrored.remove("m0")
    mirrored.put(entry(31), unit())  # may reuse m0's slot: its windows must not come back
    assert all(e.id != "m0" for e, _s in mirrored.nearest(query, LIVE, 30, windows=True))
    best = max(mirrored.similarity(f"m{i}", query, windows=True) for i in [*range(1, 30), 31])
    assert mirrored.nearest(query, LIVE, 1, windows=True)[0][1] == pytest.approx(best)
    for i in range(40, 60):  # many windows put and removed: the dead rows are packed away
        mirrored.put(entry(i), unit(), np.stack([unit(), unit()]))
        mirrored.remove(f"m{i}")
    assert mirrored._window_rows <= 2 * 2


def test_reembed_with_the_same_embedder_gives_older_long_memories_their_windows(
    tmp_path, capsys, minilm
):
    """A store written with ``windows`` 1 (or before the setting): ``reembed`` to the same
    embedder writes the long note's windows (its vector unchanged), and recall then finds
    its later half. Short notes are not rewritten."""
    home = tmp_path / "data"
    one = make_settings(home, episodic={"windows": 1})

    async def fill() -> tuple[str, Any]:
        async with MemoryEngine(one, embedder=minilm, background=False) as engine:
            long_id = await _remember_all(engine)
            (row,) = await engine.episodic.get([long_id], vectors=True)
            assert row.windows is None and await _first(engine) != long_id
            return long_id, row.vector

    long_id, vector = anyio.run(fill)
    assert cli.main(["reembed", "--data-dir", str(home), "--to", "local"]) == 0
    assert "1 long memories given the passage vectors" in capsys.readouterr().out

    async def check() -> None:
        async with MemoryEngine(make_settings(home), embedder=minilm, background=False) as engine:
            (row,) = await engine.episodic.get([long_id], vectors=True)
            assert row.windows is not None and np.allclose(row.vector, vector)
            assert await _first(engine) == long_id

    anyio.run(check)
    # brought up to date: a second run rewrites nothing (the passages it reads are the same)
    assert cli.main(["reembed", "--data-dir", str(home), "--to", "local"]) == 0
    assert "0 long memories given the passage vectors" in capsys.readouterr().out


def test_the_working_set_bound_counts_a_long_memorys_windows():
    """A window's vector weighs what a memory's row does: three memories of three windows
    each are nine rows, over a bound of eight (the scope stays in LanceDB)."""
    rng = np.random.default_rng(4)

    def unit() -> np.ndarray:
        v = rng.standard_normal(8).astype(np.float32)
        return v / np.linalg.norm(v)

    entries = [Entry(f"m{i}", "buffer", f"text {i}", f"h{i}", datetime(2026, 1, 1, tzinfo=UTC),
                     None, i) for i in range(3)]  # fmt: skip
    vectors = [unit() for _ in entries]
    ws = WorkingSet(dim=8, max_rows=8)
    ws.install("long", entries, vectors, [np.stack([unit(), unit()]) for _ in entries])
    assert ws.get("long") is None
    ws.install("short", entries, vectors)  # the same memories without windows: 3 rows
    assert ws.get("short") is not None and ws.rows() == 3
    ws.install("some", entries, vectors, [np.stack([unit(), unit()]), None, None])
    assert ws.rows() == 8 and ws.get("short") is not None  # 3 + 5
