"""The episodic table's schema, its filters, and the edge where its rows become records.

A row of the table is read back as a :class:`~cranimem_mcp.models.Memory` (every column), a
:class:`MemoryKey` (the identity columns, for whole-store checks), or, from a search, a
:class:`Hit` on the working set's projection (:class:`~cranimem_mcp.buffer.working_set.Entry`).
Nothing past :class:`~cranimem_mcp.buffer.episodic.EpisodicStore` reads a row by key.

Invariant: filter strings are built only from validated values (our id format, the scope
pattern, tier names, hex digests), never from caller text.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, NamedTuple

import numpy as np
import pyarrow as pa

from cranimem_mcp.backends.passages import scored
from cranimem_mcp.buffer.lance import Bitmap, BTree
from cranimem_mcp.buffer.working_set import FIELDS, Entry
from cranimem_mcp.errors import StoreError
from cranimem_mcp.models import MEMORY_ID_RE, SCOPE_RE, Memory, MemoryEntry

TIERS = ("buffer", "longterm", "trash")
_HEX_RE = re.compile(r"^[0-9a-f]{16,64}$")


LIVE_KEY = "live_key"
# LanceDB's mark of a primary key: a concurrent merge_insert of a key another writer just
# inserted is then a commit conflict, retried against the new version (which holds the
# row). Measured with LanceDB 0.40 (six threads inserting one key at once): without the mark,
# six rows; with it, one. A scalar index on the column loses it again (six rows): none.
PRIMARY_KEY = {"lance-schema:unenforced-primary-key": "true"}


def schema(dim: int) -> pa.Schema:
    ts = pa.timestamp("us", tz="UTC")
    return pa.schema(
        [
            pa.field("id", pa.string(), nullable=False),
            pa.field("scope", pa.string(), nullable=False),
            pa.field("tier", pa.string(), nullable=False),
            pa.field("content", pa.string(), nullable=False),
            pa.field("content_hash", pa.string(), nullable=False),
            pa.field("vector", pa.list_(pa.float32(), dim)),
            pa.field("windows", pa.list_(pa.list_(pa.float32(), dim))),
            pa.field("created_at", ts, nullable=False),
            pa.field("observed_at", ts),
            pa.field("turn", pa.int64()),
            pa.field("entities", pa.list_(pa.string())),
            pa.field("importance", pa.float64()),
            pa.field("surprise", pa.float64()),
            pa.field("emotion", pa.float64()),
            pa.field("base_utility", pa.float64()),
            pa.field("relevance", pa.float64()),
            pa.field("goal", pa.string()),
            pa.field("source", pa.string()),
            pa.field("tags", pa.list_(pa.string())),
            pa.field("access_count", pa.int64()),
            pa.field("last_access", ts),
            pa.field("frequency", pa.int64()),
            pa.field("tagged_by", pa.string()),
            pa.field("gate_reason", pa.string()),
            pa.field("replay_score", pa.float64()),
            pa.field("decision_reason", pa.string()),
            pa.field("prev_tier", pa.string()),
            pa.field("tier_changed_at", ts),
            pa.field("pinned", pa.bool_()),
            pa.field("follows", pa.string()),
            # Not a record field: derived from one at the edge (see live_key).
            pa.field(LIVE_KEY, pa.string(), nullable=False, metadata=PRIMARY_KEY),
        ]
    )


def live_key(memory: Memory) -> str:
    """What the duplicate check keys on: scope and content hash while the memory is live,
    its own id in the trash (a forgotten text may be stored again)."""
    if memory.tier == "trash":
        return memory.id
    return f"{memory.scope}/{memory.content_hash}"


# The same, in SQL (lance's: no CASE), for a table made before the column existed.
LIVE_KEY_SQL = {"tier = 'trash'": "id", "tier <> 'trash'": "concat(scope, '/', content_hash)"}


# Unique or near-unique columns get a B-tree, low-cardinality ones a bitmap.
SCALAR_INDEXES = {"id": BTree, "content_hash": BTree, "scope": Bitmap, "tier": Bitmap}

COLUMNS = [f.name for f in schema(1) if f.name != LIVE_KEY]
VECTOR_COLUMNS = ("vector", "windows")
META_COLUMNS = [c for c in COLUMNS if c not in VECTOR_COLUMNS]
KEY_COLUMNS = ["id", "scope", "tier", "content_hash"]


class Standing(NamedTuple):
    """What the long-term bound weighs a memory by (:mod:`~cranimem_mcp.replay.pruning`): a read of
    these columns only, not of whole records (a third of the CPU at 5,000 rows)."""

    id: str
    pinned: bool | None
    base_utility: float | None
    access_count: int | None
    last_access: datetime | None
    tier_changed_at: datetime | None
    created_at: datetime
    turn: int | None


STANDING_COLUMNS = ["id", "pinned", "base_utility", "access_count", "last_access",
                    "tier_changed_at", "created_at", "turn"]  # fmt: skip


class MemoryKey(NamedTuple):
    """A memory's identity columns: what a check of the whole store reads of each row."""

    id: str
    scope: str
    tier: str
    content_hash: str


@dataclass(slots=True)
class Hit:
    """A search result: the memory (its working-set fields), its cosine to the query and,
    from a hybrid search, the fused relevance that ranks it (the cosine when there was no
    text half). ``base`` and ``per`` map a relevance of its search onto the cosine's scale,
    rising with it (:func:`~cranimem_mcp.buffer.fusion.on_cosine_scale`): :attr:`score` is
    what a recall shows, in the order the relevance ranks."""

    entry: Entry
    similarity: float
    fused: float
    base: float = 0.0
    per: float = 1.0

    @property
    def score(self) -> float:
        return self.scaled(self.fused)

    def scaled(self, relevance: float) -> float:
        """``relevance`` (of this hit's search: the fused relevance plus what re-scoring
        added) on the cosine's scale."""
        return self.base + self.per * relevance


# --- filters -------------------------------------------------------------------------------


def lit(value: str, pattern: re.Pattern[str]) -> str:
    """A SQL string literal for a value that matched one of our own formats."""
    if not pattern.match(value):
        raise StoreError(f"refusing to build a filter from unvalidated value {value[:40]!r}")
    return f"'{value}'"


def scope_filter(scope: str | None, tiers: Iterable[str] | None = None) -> str | None:
    parts = []
    if scope is not None:
        parts.append(f"scope = {lit(scope, SCOPE_RE)}")
    if tiers is not None:
        tiers = list(tiers)
        if any(t not in TIERS for t in tiers):
            raise StoreError(f"unknown tier in {tiers}")
        parts.append("tier IN (" + ", ".join(f"'{t}'" for t in tiers) + ")")
    return " AND ".join(parts) or None


def ids_filter(ids: Sequence[str]) -> str:
    return "id IN (" + ", ".join(lit(i, MEMORY_ID_RE) for i in ids) + ")"


def follows_filter(ids: Sequence[str]) -> str:
    """The memories whose vector was made with one of ``ids`` (:mod:`.threads`)."""
    return "follows IN (" + ", ".join(lit(i, MEMORY_ID_RE) for i in ids) + ")"


def hash_filter(content_hash: str) -> str:
    return f"content_hash = {lit(content_hash, _HEX_RE)}"


# --- rows <-> records ----------------------------------------------------------------------


def memories(rows: Iterable[dict[str, Any]]) -> list[Memory]:
    """Records of rows read with every column (the vector optional)."""
    return [Memory(**row) for row in rows]


def window_arrays(column: pa.ChunkedArray | pa.Array, dim: int) -> list[np.ndarray | None]:
    """The ``windows`` column read as, per row, an array of vectors (None: null or empty)."""
    if isinstance(column, pa.ChunkedArray):
        column = column.combine_chunks()
    if not len(column) or column.null_count == len(column):
        return [None] * len(column)
    offsets = column.offsets.to_numpy()
    rows = column.values.flatten().to_numpy(zero_copy_only=False).reshape(-1, dim)
    valid = column.is_valid().to_numpy(zero_copy_only=False)
    return [
        rows[offsets[i] : offsets[i + 1]] if valid[i] and offsets[i + 1] > offsets[i] else None
        for i in range(len(column))
    ]


def cosine(row: dict[str, Any], vector: np.ndarray) -> float:
    """A row's cosine to ``vector`` (read with its ``vector`` and ``windows``): its own,
    lifted by its best passage's (:func:`~cranimem_mcp.backends.passages.scored`)."""
    sim = float(np.asarray(row["vector"], dtype=np.float32) @ vector)
    if row.get("windows"):
        best = float((np.asarray(row["windows"], dtype=np.float32) @ vector).max())
        sim = float(scored(sim, best))
    return sim


def entry(row: dict[str, Any]) -> Entry:
    """The working-set projection of a row holding at least :data:`FIELDS`."""
    return Entry(*(row[f] for f in FIELDS))


def to_arrow(records: Sequence[Memory], table_schema: pa.Schema, dim: int) -> pa.Table:
    """Records as a table of our schema: LanceDB would otherwise infer a schema and cast
    (~2 ms of a ~9 ms single-row insert, measured at 100k rows). Vectors go in as one numpy
    block, not as 384 Python floats each."""
    key = table_schema.field(LIVE_KEY)
    keys = pa.array([live_key(r) for r in records], pa.string())
    record_schema = table_schema.remove(table_schema.get_field_index(LIVE_KEY))
    meta_schema = pa.schema([record_schema.field(name) for name in META_COLUMNS])
    table = _table(records, META_COLUMNS, meta_schema)
    vector = record_schema.field("vector")
    vectors = [r.vector for r in records]
    if any(v is None for v in vectors):
        listed = [None if v is None else list(map(float, v)) for v in vectors]
        column = pa.array(listed, vector.type)
    else:
        flat = pa.array(np.asarray(vectors, dtype=np.float32).reshape(-1))
        column = pa.FixedSizeListArray.from_arrays(flat, dim)
    table = table.append_column(vector, column)
    table = table.append_column(
        record_schema.field("windows"), _windows([r.windows for r in records], dim)
    )
    return table.append_column(key, keys).select(table_schema.names)


def _windows(windows: Sequence[Any], dim: int) -> pa.Array:
    """The ``windows`` column: per record a list of vectors, or null."""
    offsets, blocks, missing = [0], [], []
    for found in windows:
        rows = None if found is None else np.asarray(found, dtype=np.float32).reshape(-1, dim)
        missing.append(rows is None or not len(rows))
        if rows is not None:
            blocks.append(rows)
        offsets.append(offsets[-1] + (0 if rows is None else len(rows)))
    flat = np.concatenate(blocks).reshape(-1) if blocks else np.zeros(0, np.float32)
    values = pa.FixedSizeListArray.from_arrays(pa.array(flat), dim)
    return pa.ListArray.from_arrays(
        pa.array(offsets, pa.int32()), values, mask=pa.array(missing, pa.bool_())
    )


def _table(records: Sequence[Memory], names: list[str], table_schema: pa.Schema) -> pa.Table:
    # Why two ways: a few rows convert faster as row dicts in one call (a remember's single
    # row: ~0.5 against ~0.7 ms), a batch column by column (10k rows: 71 against 98 us a row).
    if len(records) < 32:
        rows = [{name: getattr(r, name) for name in names} for r in records]
        return pa.Table.from_pylist(rows, schema=table_schema)
    columns = {name: [getattr(r, name) for r in records] for name in names}
    return pa.Table.from_pydict(columns, schema=table_schema)


def listing(memory: Memory, preview: int) -> MemoryEntry:
    """How :meth:`~cranimem_mcp.engine.MemoryEngine.list_memories` shows a memory."""
    content = memory.content
    return MemoryEntry(
        id=memory.id,
        scope=memory.scope,
        tier=memory.tier,
        content=content[:preview],
        truncated=len(content) > preview,
        created_at=memory.created_at,
        observed_at=memory.observed_at,
        tier_changed_at=memory.tier_changed_at,
        reason=memory.decision_reason or memory.gate_reason,
        base_utility=memory.base_utility,
        relevance=memory.relevance,
        replay_score=memory.replay_score,
        pinned=bool(memory.pinned),
        source=memory.source,
    )
