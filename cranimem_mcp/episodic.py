"""The episodic store (paper B.2): one LanceDB table holding every memory in every tier.

A memory's ``tier`` says where it is in its life: ``buffer`` (the bounded FIFO of recent
items), ``longterm`` (promoted by consolidation, still searchable text, linked into the graph)
or ``trash`` (pruned or forgotten; restorable until purged). Keeping one row per memory for its
whole life is what lets the id that ``remember`` returns name it in every tier.

Invariants: filter strings are built only from validated values (our id format, the scope
pattern, tier names, hex digests), never from caller text; writes are serialised by one lock
and run off the event loop; a hard purge leaves no old version of a deleted row on disk.
"""

from __future__ import annotations

import logging
import re
import warnings
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import anyio
import numpy as np
import pyarrow as pa

from . import heap
from .errors import StoreError
from .lance import (
    FTS,
    Bitmap,
    BTree,
    LanceHybridQueryBuilder,
    LinearCombinationReranker,
    RRFReranker,
    lancedb,
)
from .models import MEMORY_ID_RE, SCOPE_RE, MemoryEntry
from .working_set import FIELDS, LIVE, ScopeSet, WorkingSet

logger = logging.getLogger(__name__)

TABLE = "memories"
# When a maintenance is due (EpisodicStore.maintenance_due): commits since the last one.
MAINTAIN_MIN_COMMITS = 20
MAINTAIN_MAX_COMMITS = 120
MAINTAIN_ROWS_PER_COMMIT = 200
TIERS = ("buffer", "longterm", "trash")
_HEX_RE = re.compile(r"^[0-9a-f]{16,64}$")


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
        ]
    )


# Unique or near-unique columns get a B-tree, low-cardinality ones a bitmap.
SCALAR_INDEXES = {"id": BTree, "content_hash": BTree, "scope": Bitmap, "tier": Bitmap}

COLUMNS = [f.name for f in schema(1)]
META_COLUMNS = [c for c in COLUMNS if c != "vector"]


def _lit(value: str, pattern: re.Pattern[str]) -> str:
    """A SQL string literal for a value that matched one of our own formats."""
    if not pattern.match(value):
        raise StoreError(f"refusing to build a filter from unvalidated value {value[:40]!r}")
    return f"'{value}'"


def scope_filter(scope: str | None, tiers: Iterable[str] | None = None) -> str | None:
    parts = []
    if scope is not None:
        parts.append(f"scope = {_lit(scope, SCOPE_RE)}")
    if tiers is not None:
        tiers = list(tiers)
        if any(t not in TIERS for t in tiers):
            raise StoreError(f"unknown tier in {tiers}")
        parts.append("tier IN (" + ", ".join(f"'{t}'" for t in tiers) + ")")
    return " AND ".join(parts) or None


def ids_filter(ids: Sequence[str]) -> str:
    return "id IN (" + ", ".join(_lit(i, MEMORY_ID_RE) for i in ids) + ")"


def _entry(row: dict[str, Any], preview: int) -> MemoryEntry:
    content = row["content"]
    return MemoryEntry(
        id=row["id"],
        scope=row["scope"],
        tier=row["tier"],
        content=content[:preview],
        truncated=len(content) > preview,
        created_at=row["created_at"],
        observed_at=row.get("observed_at"),
        tier_changed_at=row.get("tier_changed_at"),
        reason=row.get("decision_reason") or row.get("gate_reason"),
        base_utility=row.get("base_utility"),
        relevance=row.get("relevance"),
        replay_score=row.get("replay_score"),
        pinned=bool(row.get("pinned")),
    )


@dataclass(frozen=True)
class VersionRetention:
    """What :meth:`EpisodicStore.maintain` keeps of the table's old versions (LanceDB keeps
    every version a commit makes, each with the files only it references, until cleanup).
    At most ``count`` versions, none older than ``seconds``; and if the folder is still over
    ``max_ratio`` times the live data (a local table only), only the current version.

    Why a count: with the age alone (an hour) a table of 1,050 short rows had 1,292
    versions and 74 MB on disk, 10k rows 4.9 GB (docs/RESULTS.md), because every
    compaction rewrites the table. Old versions serve only reads that started before a
    commit, and ours take milliseconds; 20 versions cover at least the last full
    consolidation round."""

    count: int = 20
    seconds: float = 3600.0
    max_ratio: float = 3.0


class EpisodicStore:
    """The LanceDB table of memories. Open with :meth:`open`; all methods are async."""

    def __init__(
        self,
        path: Path | str,
        dim: int,
        storage_options: dict[str, str] | None = None,
        working_set_rows: int = 100_000,
        fusion: str = "rrf",
        vector_weight: float = 0.7,
        retention: VersionRetention | None = None,
    ) -> None:
        """``path``: a local directory, or any LanceDB URI (``s3://bucket/prefix``, ...)
        with its ``storage_options``. ``working_set_rows`` bounds the in-memory copy of
        live memories that answers the hot-path questions (0: always ask LanceDB).
        ``fusion`` ("rrf" or "linear", with ``vector_weight``) picks the LanceDB reranker
        that fuses the vector and full-text halves of :meth:`hybrid`. ``retention``: what
        :meth:`maintain` keeps of old table versions."""
        self._path = path
        self._retention = retention or VersionRetention()
        self._commits = 0  # commits since the last maintenance
        self._rows = 0  # live rows at the last maintenance
        self._dim = dim
        self._storage_options = dict(storage_options or {})
        self._db: Any = None
        self._table: Any = None
        self._lock = anyio.Lock()
        self._ws = WorkingSet(dim, working_set_rows)
        self._schema = schema(dim)
        self._reranker: Any = (
            LinearCombinationReranker(vector_weight) if fusion == "linear" else RRFReranker()
        )

    # --- lifecycle -------------------------------------------------------------------------

    async def open(self) -> None:
        await anyio.to_thread.run_sync(self._open_sync)

    def _open_sync(self) -> None:
        try:
            if isinstance(self._path, Path):
                self._path.mkdir(parents=True, exist_ok=True, mode=0o700)
            self._db = self._connect()
            if TABLE in self._db.list_tables().tables:
                self._table = self._db.open_table(TABLE)
                width = self._table.schema.field("vector").type.list_size
                if width != self._dim:
                    raise StoreError(
                        f"the episodic table holds {width}-d vectors, the embedder gives "
                        f"{self._dim}-d"
                    )
                self._add_missing_columns()
            else:
                self._table = self._db.create_table(TABLE, schema=schema(self._dim))
            if not any(ix.index_type == "FTS" for ix in self._table.list_indices()):
                self._table.create_index("content", config=FTS(), replace=True)
            self._ensure_scalar_indexes()
            self._rows = self._table.count_rows()
        except StoreError:
            raise
        except Exception as exc:  # lance raises bare OSError/RuntimeError/ValueError
            raise StoreError(f"cannot open the episodic store at {self._path}: {exc}") from exc

    def _add_missing_columns(self) -> None:
        """A table made by an older version gets the columns added since (as nulls)."""
        have = set(self._table.schema.names)
        missing = [f for f in self._schema if f.name not in have]
        if missing:
            logger.info("adding columns %s to the episodic table", [f.name for f in missing])
            self._table.add_columns(missing)

    def _ensure_scalar_indexes(self) -> None:
        """Every hot-path filter (``id IN``, ``content_hash =``, ``scope =``, ``tier IN``) has a
        scalar index, so it reads index pages instead of scanning the table. Measured on this
        machine at 100k rows: count_rows by scope and tier 19 -> 2 ms, find by content_hash
        77 -> 5 ms, vector search prefiltered to a small scope 384 -> 23 ms. Rows added later
        are scanned until :meth:`maintain` folds them into the indexes."""
        have = {tuple(ix.columns) for ix in self._table.list_indices()}
        for column, config in SCALAR_INDEXES.items():
            if (column,) not in have:
                self._table.create_index(column, config=config(), replace=True)

    async def _write(self, fn: Any, *args: Any, follow: Any = None) -> Any:
        """Run a change under the write lock; ``follow()`` then applies it to the working
        set. A change that fails may or may not have committed: the working set is dropped."""
        async with self._lock:
            self._commits += 1
            try:
                result = await self._run(fn, *args)
            except BaseException:
                self._ws.drop()
                raise
            if follow is not None:
                follow()
            return result

    async def _mirrored(self, scope: str | None, tiers: Iterable[str] | None) -> ScopeSet | None:
        """The working set of ``scope`` when it can answer for ``tiers`` (live ones only),
        loaded from the table on first use."""
        if scope is None or tiers is None or not set(tiers) <= set(LIVE):
            return None
        found = self._ws.get(scope)
        if found is not None or not self._ws.wanted(scope):
            return found
        cols = [*FIELDS, "vector"]
        where = scope_filter(scope, LIVE)

        def load() -> Any:
            return self._table.search().where(where).select(cols).limit(None).to_arrow()

        async with self._lock:  # no write can slip in between the read and the install
            if self._ws.wanted(scope):
                table = await self._run(load)
                flat = table.column("vector").combine_chunks().flatten().to_numpy()
                vectors = flat.reshape(-1, self._dim)
                self._ws.install(scope, table.drop_columns(["vector"]).to_pylist(), vectors)
        return self._ws.get(scope)

    @staticmethod
    async def _run(fn: Any, *args: Any) -> Any:
        try:
            return await anyio.to_thread.run_sync(fn, *args)
        except StoreError:
            raise
        except Exception as exc:
            raise StoreError(f"episodic store operation failed: {exc}") from exc

    # --- writes ----------------------------------------------------------------------------

    def _arrow(self, rows: list[dict[str, Any]]) -> pa.Table:
        """Rows as a table of our schema: LanceDB would otherwise infer one and cast (~2 ms
        of a ~9 ms single-row insert, measured at 100k rows). Vectors go in as one numpy
        block, not as 384 Python floats each."""
        vectors = [r.get("vector") for r in rows]
        if any(v is None for v in vectors):
            return pa.Table.from_pylist(rows, schema=self._schema)
        meta = pa.Table.from_pylist(
            [{k: v for k, v in r.items() if k != "vector"} for r in rows],
            schema=self._schema.remove(self._schema.get_field_index("vector")),
        )
        flat = pa.array(np.asarray(vectors, dtype=np.float32).reshape(-1))
        column = pa.FixedSizeListArray.from_arrays(flat, self._dim)
        return meta.append_column(self._schema.field("vector"), column).select(self._schema.names)

    async def add(self, rows: list[dict[str, Any]]) -> None:
        await self._write(
            lambda: self._table.add(self._arrow(rows)), follow=lambda: self._ws.apply(rows)
        )

    async def upsert(self, rows: list[dict[str, Any]]) -> None:
        """Replace whole rows by id in one commit (a batch of tier changes)."""
        if not rows:
            return

        def run() -> None:
            self._table.merge_insert("id").when_matched_update_all().execute(self._arrow(rows))

        await self._write(run, follow=lambda: self._ws.apply(rows))

    async def update(self, ids: Sequence[str], values: dict[str, Any]) -> None:
        if not ids:
            return
        # Changing a mirrored column in place is rare (never on the hot path): start over.
        follow = self._ws.drop if set(values) & {*FIELDS, "scope", "vector"} else None
        await self._write(
            lambda: self._table.update(where=ids_filter(ids), values=values), follow=follow
        )

    async def touch(self, ids: Sequence[str], when: datetime, times: int = 1) -> None:
        """Count ``times`` recalls of each of these memories (feeds the replay score's
        frequency bonus and the decay weight)."""
        if not ids:
            return
        stamp = when.isoformat().replace("+00:00", "")
        times = int(times)

        def run() -> None:
            self._table.update(
                where=ids_filter(ids),
                values_sql={
                    "access_count": f"access_count + {times}",
                    "last_access": f"CAST('{stamp}' AS TIMESTAMP)",
                },
            )

        await self._write(run)

    async def delete(self, ids: Sequence[str]) -> None:
        if not ids:
            return
        await self._write(
            lambda: self._table.delete(ids_filter(ids)), follow=lambda: self._ws.remove(ids)
        )

    async def purge_history(self) -> None:
        """Make deletes final on disk: rebuild the full-text index, compact, and drop every
        old table version (LanceDB keeps deleted text in old versions until then)."""

        def run() -> None:
            self._table.create_index("content", config=FTS(), replace=True)
            with warnings.catch_warnings():
                # LanceDB warns that this breaks readers of old versions: we hold the
                # writer lock and this process is the table's only user (see SCALING notes).
                warnings.filterwarnings("ignore", message=r"optimize\(cleanup_older_than=0\)")
                self._table.optimize(cleanup_older_than=timedelta(0), delete_unverified=True)

        await self._write(run)

    def maintenance_due(self) -> bool:
        """Whether enough has changed since the last :meth:`maintain` to pay for one: at
        least ``MAINTAIN_MIN_COMMITS`` commits, and one per ``MAINTAIN_ROWS_PER_COMMIT``
        rows of the table, up to ``MAINTAIN_MAX_COMMITS``.

        Why: LanceDB's ``optimize`` merges every fragment under its million-row target, so
        it rewrites the whole table (and updates its indexes) each time, under the writer
        lock; run every 20 writes, writes queued behind a cost that grew with the table
        (a write's mean 38 -> 88 ms from 500 to 3,500 memories, docs/RESULTS.md). Run in
        proportion to the table, it costs each write about the same; the cap bounds the
        small fragments a read meets (each adds a few ms to a query)."""
        due = min(MAINTAIN_MAX_COMMITS, max(MAINTAIN_MIN_COMMITS,
                                            self._rows // MAINTAIN_ROWS_PER_COMMIT))  # fmt: skip
        return self._commits >= due

    async def maintain(self, force: bool = True) -> bool:
        """Compact small fragments, fold new rows into the indexes, drop old versions as
        the retention says; then open the table afresh (see :meth:`_reopen`). Without
        ``force``, only when :meth:`maintenance_due`. Returns whether it ran."""
        if not force and not self.maintenance_due():
            return False

        def run() -> None:
            self._table.optimize(cleanup_older_than=self._keep_since())
            if self._over_disk_ratio():
                # Under the writer lock, and this process is the table's only user: no
                # write is in flight, so unverified files are leftovers (see purge_history).
                with warnings.catch_warnings():
                    warnings.filterwarnings("ignore", message=r"optimize\(cleanup_older_than=0\)")
                    self._table.optimize(cleanup_older_than=timedelta(0), delete_unverified=True)
            self._reopen()
            heap.trim()  # what the compaction and the old handle freed goes back to the OS
            self._rows = self._table.count_rows()

        await self._write(run)
        self._commits = 0
        return True

    def _keep_since(self) -> timedelta:
        """The age past which versions go: the retention's seconds, or less if more than
        ``count`` versions are younger. LanceDB stamps versions in local time without a
        zone (as ``datetime.now()``); a clock mismatch only makes us keep more."""
        keep = timedelta(seconds=self._retention.seconds)
        versions = self._table.list_versions()
        if len(versions) > self._retention.count:
            oldest_kept = versions[-self._retention.count]["timestamp"]
            if oldest_kept.tzinfo is not None:
                oldest_kept = oldest_kept.astimezone().replace(tzinfo=None)
            age = datetime.now() - oldest_kept - timedelta(milliseconds=1)
            keep = max(timedelta(0), min(keep, age))
        return keep

    def _over_disk_ratio(self) -> bool:
        if not isinstance(self._path, Path):
            return False
        folder = self._path / f"{TABLE}.lance"
        on_disk = sum(f.stat().st_size for f in folder.rglob("*") if f.is_file())
        live = float(self._table.stats()["total_bytes"])
        return on_disk > self._retention.max_ratio * max(live, 1.0)

    def _reopen(self) -> None:
        """Swap in a new connection and table handle. Why: LanceDB's handles hold on to
        native memory with every commit (the 10k soak grew ~0.2 MB per write); a fresh
        handle lets the old one go. Measured with scripts/measure_rss.py (1,000 writes of
        the soak's stream): 193 -> 440 MB with one handle, 193 -> 281 MB reopened at every
        consolidation. Reads in flight keep the old handle until they finish."""
        db = self._connect()
        table = db.open_table(TABLE)
        self._db, self._table = db, table

    def _connect(self) -> Any:
        return lancedb.connect(str(self._path), storage_options=self._storage_options or None)

    # --- reads -----------------------------------------------------------------------------

    async def get(self, ids: Sequence[str], vectors: bool = False) -> list[dict[str, Any]]:
        if not ids:
            return []
        return await self.rows(where=ids_filter(ids), vectors=vectors)

    async def rows(
        self,
        *,
        where: str | None,
        vectors: bool = False,
        columns: list[str] | None = None,
    ) -> list[dict[str, Any]]:
        cols = columns or (COLUMNS if vectors else META_COLUMNS)

        def run() -> list[dict[str, Any]]:
            query = self._table.search().select(cols).limit(None)
            if where:
                query = query.where(where)
            return query.to_list()

        return await self._run(run)

    async def scope_rows(
        self, scope: str | None, tiers: Iterable[str] | None, vectors: bool = False
    ) -> list[dict[str, Any]]:
        rows = await self.rows(where=scope_filter(scope, tiers), vectors=vectors)
        rows.sort(key=lambda r: (r["created_at"], r.get("turn") or 0))
        return rows

    async def page(
        self, scope: str, tiers: Iterable[str], limit: int, offset: int, preview: int
    ) -> tuple[int, list[MemoryEntry]]:
        """One page of a scope's memories in ``tiers``, newest first by when each entered its
        tier (a just-forgotten memory leads the trash), and how many there are in all.
        Only the sort keys of the whole scope are read; the page's rows are fetched by id."""
        keys = await self.rows(
            where=scope_filter(scope, tiers), columns=["id", "created_at", "tier_changed_at"]
        )
        keys.sort(
            key=lambda r: (r["tier_changed_at"] or r["created_at"], r["created_at"], r["id"]),
            reverse=True,
        )
        chosen = [r["id"] for r in keys[offset : offset + limit]]
        by_id = {r["id"]: r for r in await self.get(chosen)}
        # A row moved or deleted between the two reads is left out rather than shown stale.
        entries = [_entry(by_id[i], preview) for i in chosen if i in by_id]
        return len(keys), [e for e in entries if e.tier in tiers]

    async def trashed_before(self, scope: str, cutoff: datetime) -> list[str]:
        """Ids of the scope's trashed memories that went to the trash before ``cutoff``."""
        stamp = cutoff.astimezone(UTC).isoformat().replace("+00:00", "")
        where = f"{scope_filter(scope, ('trash',))} AND tier_changed_at <= TIMESTAMP '{stamp}'"
        return [r["id"] for r in await self.rows(where=where, columns=["id"])]

    async def live_rows(self, scope: str, tiers: Iterable[str]) -> list[dict[str, Any]]:
        """The working-set fields of a scope's live memories (:data:`FIELDS`), oldest first."""
        tiers = tuple(tiers)
        mirrored = await self._mirrored(scope, tiers)
        if mirrored is not None:
            return [e.row() for e in mirrored.entries(tiers)]
        rows = await self.rows(where=scope_filter(scope, tiers), columns=list(FIELDS))
        rows.sort(key=lambda r: (r["created_at"], r.get("turn") or 0))
        return rows

    async def find_hash(self, scope: str, content_hash: str) -> dict[str, Any] | None:
        """The live memory of ``scope`` with this exact content, whole (vector included)."""
        mirrored = await self._mirrored(scope, LIVE)
        if mirrored is not None:
            found = mirrored.find_hash(content_hash)
            if found is None:
                return None
            rows = await self.get([found], vectors=True)
            if rows and rows[0]["content_hash"] == content_hash and rows[0]["tier"] in LIVE:
                return rows[0]
            logger.warning("working set of %s out of step with the table: reloading", scope)
            self._ws.drop(scope)
        where = (
            f"{scope_filter(scope, ('buffer', 'longterm'))} "
            f"AND content_hash = {_lit(content_hash, _HEX_RE)}"
        )
        found = await self.rows(where=where, vectors=True)
        return found[0] if found else None

    async def count(self, scope: str | None = None, tiers: Iterable[str] | None = None) -> int:
        tiers = None if tiers is None else tuple(tiers)
        mirrored = await self._mirrored(scope, tiers)
        if mirrored is not None:
            return mirrored.count(tiers or LIVE)
        where = scope_filter(scope, tiers)
        return await self._run(lambda: self._table.count_rows(where))

    async def census(self) -> dict[tuple[str, str], int]:
        """Rows per (scope, tier)."""
        rows = await self.rows(where=None, columns=["scope", "tier"])
        out: dict[tuple[str, str], int] = {}
        for r in rows:
            out[(r["scope"], r["tier"])] = out.get((r["scope"], r["tier"]), 0) + 1
        return out

    async def nearest(
        self, scope: str, vector: np.ndarray, tiers: Iterable[str], limit: int
    ) -> list[dict[str, Any]]:
        """Vector search by cosine; each row carries ``similarity``. Answered from the
        working set when the scope is mirrored (rows then carry its fields only)."""
        tiers = tuple(tiers)
        mirrored = await self._mirrored(scope, tiers)
        if mirrored is not None:
            return [
                {**e.row(), "similarity": sim} for e, sim in mirrored.nearest(vector, tiers, limit)
            ]
        where = scope_filter(scope, tiers)

        def run() -> list[dict[str, Any]]:
            query = self._table.search(vector.tolist()).distance_type("cosine").limit(limit)
            query = query.where(where, prefilter=True).select([*META_COLUMNS, "_distance"])
            return query.to_list()

        rows = await self._run(run)
        for r in rows:
            r["similarity"] = 1.0 - float(r.pop("_distance"))
        return rows

    async def hybrid(
        self, scope: str, vector: np.ndarray, text: str, tiers: Iterable[str], limit: int
    ) -> list[dict[str, Any]]:
        """LanceDB's hybrid search (vector + full-text, reciprocal-rank fused). Each row
        carries ``similarity`` (cosine to the query) and ``fused`` (the fused relevance).
        A mirrored scope runs the vector half on the working set and only the full-text
        half in LanceDB, fused by the same reranker LanceDB's hybrid query uses."""
        where = scope_filter(scope, tiers)
        terms = " ".join(re.findall(r"\w+", text))
        tiers = tuple(tiers)
        mirrored = await self._mirrored(scope, tiers)
        if mirrored is not None:
            return await self._hybrid_mirrored(mirrored, where, vector, terms, tiers, limit)

        def run() -> list[dict[str, Any]]:
            if not terms:
                query = self._table.search(vector.tolist()).distance_type("cosine")
            else:
                query = (
                    self._table.search(query_type="hybrid")
                    .vector(vector.tolist())
                    .text(terms)
                    .distance_type("cosine")
                    .rerank(self._reranker)
                )
            return query.where(where, prefilter=True).limit(limit).to_list()

        rows = await self._run(run)
        for r in rows:
            v = np.asarray(r.pop("vector"), dtype=np.float32)
            r["similarity"] = float(v @ vector)
            r["fused"] = float(r.pop("_relevance_score", r["similarity"]))
            r.pop("_distance", None)
        return rows

    async def _hybrid_mirrored(
        self,
        mirrored: ScopeSet,
        where: str | None,
        vector: np.ndarray,
        terms: str,
        tiers: Iterable[str],
        limit: int,
    ) -> list[dict[str, Any]]:
        near = mirrored.nearest(vector, tiers, limit)
        text_ids: list[str] = []
        if terms:

            def fts() -> list[dict[str, Any]]:
                query = self._table.search(terms, query_type="fts").where(where, prefilter=True)
                return query.limit(limit).select(["id", "_score"]).to_list()

            hits = [r for r in await self._run(fts) if r["id"] in mirrored]
            text_ids = [r["id"] for r in hits]
            text_scores = {r["id"]: float(r["_score"]) for r in hits}
        else:  # no words to search for: a vector search, as LanceDB would run it
            return [{**e.row(), "similarity": sim, "fused": sim} for e, sim in near]
        # The reranker wants integer row ids, and scores normalised as LanceDB's hybrid
        # query normalises them (min-max per list) before it fuses.
        ids = list(dict.fromkeys([*(e.id for e, _s in near), *text_ids]))
        number = {memory_id: n for n, memory_id in enumerate(ids)}
        normalise = LanceHybridQueryBuilder._normalize_scores
        vector_half = pa.table({
            "_rowid": pa.array([number[e.id] for e, _s in near], pa.uint64()),
            "_distance": normalise(pa.array([1.0 - s for _e, s in near], pa.float32())),
        })  # fmt: skip
        text_half = pa.table({
            "_rowid": pa.array([number[i] for i in text_ids], pa.uint64()),
            "_score": normalise(pa.array([text_scores[i] for i in text_ids], pa.float32())),
        })  # fmt: skip
        fused = self._reranker.rerank_hybrid("", vector_half, text_half)
        out = []
        ranked = zip(
            fused["_rowid"].to_pylist(), fused["_relevance_score"].to_pylist(), strict=True
        )
        for rowid, score in list(ranked)[:limit]:
            entry = mirrored.entry(ids[rowid])
            if entry is not None:
                sim = mirrored.similarity(entry.id, vector)
                out.append({**entry.row(), "similarity": sim, "fused": float(score)})
        return out
