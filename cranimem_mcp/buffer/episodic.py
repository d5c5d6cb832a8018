"""The episodic store (paper B.2): one LanceDB table holding every memory in every tier.

A memory's ``tier`` says where it is in its life: ``buffer`` (the bounded FIFO of recent
items), ``longterm`` (promoted by consolidation, still searchable text, linked into the graph)
or ``trash`` (pruned or forgotten; restorable until purged). Keeping one row per memory for its
whole life is what lets the id that ``remember`` returns name it in every tier.

Invariants: writes are serialised by one lock and run off the event loop (a maintenance's
compaction excepted: a local table's appends commit beside it, :meth:`maintain`); a hard
purge leaves no old version of a deleted row on disk; what goes in and comes out are records
(:class:`~cranimem_mcp.models.Memory` and the projections in :mod:`.records`), and filters
are built only from validated values (:mod:`.records`).

A *shared* table (other processes write it too: replicas) is read at its latest version, a
new text is stored once however many write it (:meth:`EpisodicStore.insert`), and the
working set is dropped when a commit not ours moved the version (docs/SCALING.md).
"""

from __future__ import annotations

import logging
import warnings
from collections.abc import Collection, Iterable, Mapping, Sequence
from contextlib import nullcontext
from datetime import UTC, datetime, timedelta
from functools import partial
from typing import Any

import anyio
import numpy as np

from cranimem_mcp.backends import heap
from cranimem_mcp.buffer.full_text import terms_of
from cranimem_mcp.buffer.fusion import fuse, lift
from cranimem_mcp.buffer.lance import FTS, LinearCombinationReranker, RRFReranker, reason
from cranimem_mcp.buffer.records import (
    COLUMNS,
    KEY_COLUMNS,
    LIVE_KEY,
    LIVE_KEY_SQL,
    META_COLUMNS,
    STANDING_COLUMNS,
    VECTOR_COLUMNS,
    Hit,
    MemoryKey,
    Standing,
    cosine,
    entry,
    hash_filter,
    ids_filter,
    listing,
    memories,
    schema,
    scope_filter,
    to_arrow,
    window_arrays,
)
from cranimem_mcp.buffer.retention import (
    VersionRetention,
    commits_before,
    keep_since,
    maintenance_due,
    over_disk_ratio,
)
from cranimem_mcp.buffer.table import TableLocation, open_table
from cranimem_mcp.buffer.working_set import FIELDS, LIVE, MIRRORED, Entry, ScopeSet, WorkingSet
from cranimem_mcp.conversation.transcript import turns_by_speaker
from cranimem_mcp.errors import StoreError
from cranimem_mcp.models import Memory, MemoryEntry

logger = logging.getLogger(__name__)
# How long a merge_insert may retry its commit conflicts, the first attempt included.
# LanceDB's default (30 s, enforced after the first attempt) gave up on a write with three
# replicas writing one S3 table (moto, loaded machine): "Too many concurrent writers.
# Attempted 2 times, but failed on retry_timeout of 30.000 seconds" (docs/SCALING.md).
SHARED_COMMIT_TIMEOUT = timedelta(seconds=180)

TABLE = "memories"


class EpisodicStore:
    """The LanceDB table of memories. Open with :meth:`open`; all methods are async."""

    def __init__(
        self,
        location: TableLocation,
        dim: int,
        working_set_rows: int = 100_000,
        fusion: str = "rrf",
        vector_weight: float = 0.7,
        text_lift: float = 0.2,
        retention: VersionRetention | None = None,
    ) -> None:
        """``location``: where the table lives, and whether other processes write it
        (:class:`~cranimem_mcp.buffer.table.LocalTable` or
        :class:`~cranimem_mcp.buffer.table.SharedTable`). ``working_set_rows`` bounds the
        in-memory copy of live memories that answers the hot-path questions (0: always ask
        LanceDB).
        ``fusion`` ("rrf" or "linear", with ``vector_weight``) picks the LanceDB reranker
        that fuses the vector and full-text halves of :meth:`hybrid`; "lift" scores each
        candidate by its cosine plus ``text_lift`` times its share of the best full-text score
        (:func:`~cranimem_mcp.buffer.fusion.lift`). ``retention``: what
        :meth:`maintain` keeps of old table versions."""
        self._location = location
        self._retention = retention or VersionRetention()
        self._commits = 0  # commits since the last maintenance
        self._rewrites = 0  # commits that may have changed existing rows (all but appends)
        self._rows = 0  # live rows at the last maintenance
        self._dim = dim
        self._db: Any = None
        self._table: Any = None
        self._lock = anyio.Lock()  # the writer lock: one commit at a time
        # Held through a maintenance's compaction: every change but an append waits for it.
        self._compacting = anyio.Lock()
        self._shared = location.shared  # see the module docstring
        self._version: int | None = None  # of the table the working set matches (shared)
        self._ws = WorkingSet(dim, working_set_rows)
        self._text = location.full_text(TABLE)  # the full-text searches (:mod:`.full_text`)
        self._schema = schema(dim)
        self._lift = text_lift if fusion == "lift" else None
        self._weight = vector_weight if fusion == "linear" else None
        self._reranker: Any = (
            LinearCombinationReranker(vector_weight) if fusion == "linear" else RRFReranker()
        )

    # --- lifecycle -------------------------------------------------------------------------

    async def open(self) -> None:
        await anyio.to_thread.run_sync(self._open_sync)

    def _open_sync(self) -> None:
        try:
            self._db = self._location.connect()
            self._table = open_table(self._db, TABLE, self._schema)
            self._rows = self._table.count_rows()
            self._commits = commits_before(self._table, self._retention)
            self._version = self._table.version
        except StoreError:
            raise
        except Exception as exc:  # lance raises bare OSError/RuntimeError/ValueError
            why = reason(exc)
            raise StoreError(f"cannot open the episodic store at {self._location}: {why}") from exc

    async def close(self) -> None:
        """Compact a local table and drop every old version, as the server that owns it stops.
        Why: the versions the retention keeps serve reads that started before a commit, and
        no reader outlives the process that holds the directory; left on disk they were ~55%
        of the table's folder after 1,020 writes (5.0 -> 2.2 MB, docs/RESULTS.md). A shared
        table keeps its versions: its other writers may be reading them."""
        await self._text.close()
        if self._shared or self._table is None:
            return

        def run() -> None:
            with warnings.catch_warnings():
                # Under the writer lock, and this process is the table's only user (see
                # purge_history): no write is in flight, no reader of an old version is left.
                warnings.filterwarnings("ignore", message=r"optimize\(cleanup_older_than=0\)")
                # Twice: the first pass's index update commits after its cleanup, so the
                # version before it (and the index files only it names) is left for the
                # second (2.25 -> 2.02 MB at 1k; the second pass took ~0.07 s).
                for _ in range(2):
                    self._table.optimize(cleanup_older_than=timedelta(0), delete_unverified=True)

        async with self._compacting, self._lock:
            await self._run(run)

    async def _write(self, fn: Any, *args: Any, follow: Any = None, append: bool = False) -> Any:
        """Run a change under the write lock; ``follow()`` then applies it to the working
        set. A change that fails may or may not have committed: the working set is dropped.
        On a shared table, so is a working set that missed another writer's commit: ``fn``
        returns LanceDB's result, whose version is the one after ours. Any change but an
        ``append`` also waits for a compaction in progress (:meth:`maintain`)."""
        async with nullcontext() if append else self._compacting, self._lock:
            self._commits += 1
            try:
                result = await self._run(fn, *args)
            except BaseException:
                self._ws.drop()
                self._version = None
                raise
            finally:  # after the commit: whoever reads the new count reads the change too
                self._rewrites += not append
                self._text.moved()
            if self._shared:
                version = getattr(result, "version", None)
                if version is None or self._version is None or version != self._version + 1:
                    self._ws.drop()  # another commit came between: reloaded on next use
                self._version = version
            if follow is not None:
                follow()
            return result

    async def _follow_table(self) -> None:
        """A shared table: if its version moved since the working set matched it (another
        writer committed), drop the working set (each scope reloads on its next use). Costs
        a look at the latest version (on S3, a listing)."""
        if not self._shared or not self._ws.enabled:
            return
        async with self._lock:
            version = await self._run(lambda: self._table.version)
            if version != self._version:
                logger.debug("table version %s -> %s: working set dropped", self._version, version)
                self._ws.drop()
                self._version = version

    async def _mirrored(self, scope: str | None, tiers: Iterable[str] | None) -> ScopeSet | None:
        """The working set of ``scope`` if it can answer for ``tiers`` (loaded on first use)."""
        if scope is None or tiers is None or not set(tiers) <= set(MIRRORED):
            return None
        await self._follow_table()
        found = self._ws.get(scope)
        if found is not None or not self._ws.wanted(scope):
            return found
        cols = [*FIELDS, "vector", "windows"]
        where = scope_filter(scope, MIRRORED)

        def load() -> Any:
            return self._table.search().where(where).select(cols).limit(None).to_arrow()

        async with self._lock:  # no write can slip in between the read and the install
            if self._ws.wanted(scope):
                table = await self._run(load)
                flat = table.column("vector").combine_chunks().flatten().to_numpy()
                vectors = flat.reshape(-1, self._dim)
                windows = window_arrays(table.column("windows"), self._dim)
                columns = table.drop_columns(["vector", "windows"])
                entries = [entry(r) for r in columns.to_pylist()]
                self._ws.install(scope, entries, vectors, windows)
                # The scope's rows as Arrow and as dicts are garbage now (~60 MiB at 10k
                # memories): give them back, or a server keeps them (docs/RESULTS.md).
                del table, flat, columns
                heap.trim()
        return self._ws.get(scope)

    @staticmethod
    async def _run(fn: Any, *args: Any) -> Any:
        try:
            return await anyio.to_thread.run_sync(fn, *args)
        except StoreError:
            raise
        except Exception as exc:
            raise StoreError(f"episodic store operation failed: {reason(exc)}") from exc

    @property
    def rewrites(self) -> int | None:
        """How many commits of this process may have changed existing rows so far (every
        change but an append); None on a shared table, whose other writers' commits are not
        counted. The same value twice: no row read in between has changed since."""
        return None if self._shared else self._rewrites

    # --- writes ----------------------------------------------------------------------------

    async def add(self, records: list[Memory]) -> None:
        """Append new rows (ids not in the table). A local table's append does not wait for
        a compaction in progress: LanceDB commits the two side by side (an append touches no
        fragment the compaction rewrites)."""
        await self._write(
            lambda: self._table.add(to_arrow(records, self._schema, self._dim)),
            follow=lambda: self._ws.apply(records),
            append=not self._shared,
        )

    async def insert(self, memory: Memory) -> bool:
        """Store a new live memory unless its scope holds a live one with the same content
        (:func:`.records.live_key`); returns whether it was stored. Shared: ``merge_insert``
        on that key, the table's primary key, so of two writers inserting one text at once
        the second commit conflicts, is retried and finds the row. Alone on its table, the
        scope lock and :meth:`find_hash` already hold that: a plain append is cheaper."""
        if not self._shared:
            await self.add([memory])
            return True
        data = to_arrow([memory], self._schema, self._dim)
        inserted: list[bool] = []

        def run() -> Any:
            merge = self._table.merge_insert(LIVE_KEY).when_not_matched_insert_all()
            result = merge.execute(data, timeout=SHARED_COMMIT_TIMEOUT)
            inserted.append(result.num_inserted_rows > 0)
            return result

        await self._write(run, follow=lambda: inserted[0] and self._ws.apply([memory]))
        return inserted[0]

    async def upsert(self, records: list[Memory]) -> None:
        """Replace whole records by id in one commit (a batch of tier changes)."""
        if not records:
            return

        def run() -> Any:
            return (
                self._table.merge_insert("id")
                .when_matched_update_all()
                .execute(to_arrow(records, self._schema, self._dim), timeout=SHARED_COMMIT_TIMEOUT)
            )

        await self._write(run, follow=lambda: self._ws.apply(records))

    async def update(self, ids: Sequence[str], values: dict[str, Any]) -> None:
        if not ids:
            return
        # Changing a mirrored column in place is rare (never on the hot path): start over.
        follow = self._ws.drop if set(values) & {*FIELDS, "scope", *VECTOR_COLUMNS} else None
        where = ids_filter(ids)

        def run() -> Any:
            result = self._table.update(where=where, values=values)
            if set(values) & {"scope", "tier", "content_hash"}:  # the duplicate check's key
                for which, key in LIVE_KEY_SQL.items():
                    result = self._table.update(f"{where} AND {which}", values_sql={LIVE_KEY: key})
            return result

        await self._write(run, follow=follow)

    async def touch(self, counts: Mapping[str, int], when: datetime) -> None:
        """Count recalls of these memories (id -> how many; feeds the replay score's
        frequency bonus and the decay weight), last at ``when``: an update that adds in place,
        one commit per distinct count (Lance's update takes no CASE). Why not one merge of the
        new counts: its join over the id column raised a server's peak memory by 35-45 MiB at
        10k memories (docs/RESULTS.md); the counts are written every few seconds, so the
        commits stay few."""
        stamp = when.isoformat().replace("+00:00", "")
        by_count: dict[int, list[str]] = {}
        for memory_id, n in counts.items():
            if int(n) > 0:
                by_count.setdefault(int(n), []).append(memory_id)
        for times, ids in by_count.items():
            values = {
                "access_count": f"access_count + {times}",
                "last_access": f"CAST('{stamp}' AS TIMESTAMP)",
            }
            await self._write(partial(self._table.update, where=ids_filter(ids), values_sql=values))

    async def delete(self, ids: Sequence[str]) -> None:
        if not ids:
            return
        await self._write(
            lambda: self._table.delete(ids_filter(ids)), follow=lambda: self._ws.remove(ids)
        )

    async def purge_history(self) -> None:
        """Make deletes final on disk: rebuild the full-text index, compact, and drop every
        old table version (LanceDB keeps deleted text in old versions until then). The
        full-text searches' handle goes too, with whatever of the old index it kept in
        memory."""

        def run() -> None:
            self._table.create_index("content", config=FTS(), replace=True)
            with warnings.catch_warnings():
                # LanceDB warns that this breaks readers of old versions: we hold the
                # writer lock and this process is the table's only user (see SCALING notes).
                warnings.filterwarnings("ignore", message=r"optimize\(cleanup_older_than=0\)")
                self._table.optimize(cleanup_older_than=timedelta(0), delete_unverified=True)

        try:
            await self._write(run)
        finally:
            await self._text.renew()

    def maintenance_due(self) -> bool:
        """Whether enough changed since the last :meth:`maintain` to pay for one (retention)."""
        return maintenance_due(self._commits, self._rows)

    async def maintain(self, force: bool = True) -> bool:
        """Compact small fragments, fold new rows into the indexes, drop old versions as
        the retention says; then open the table afresh (see :meth:`_reopen`). Without
        ``force``, only when :meth:`maintenance_due`. Returns whether it ran.

        On a local table, appends (new memories) go on during the compaction, which holds
        only the changes that rewrite rows (LanceDB would make one of the two commits fail);
        what must see no write in flight (deleting unverified files, the new handle) runs
        under the writer lock after it. Why: a write waited ~65-190 ms on the writer lock
        while ``optimize`` held it, the long tail of a server's writes (docs/RESULTS.md)."""
        if not force and not self.maintenance_due():
            return False
        if self._shared:  # other writers commit too: all of it under the writer lock
            await self._write(lambda: (self._compact_sync(), self._renew_sync()))
            await self._text.renew()
            self._commits = 0
            return True
        async with self._compacting:
            counted = self._commits  # appends committed during the compaction stay counted
            try:
                await self._run(self._compact_sync)
                async with self._lock:
                    await self._run(self._renew_sync)
            except BaseException:
                self._ws.drop()  # as _write does: what committed is not known
                raise
            finally:
                await self._text.renew()
            self._commits = max(0, self._commits - counted)
        return True

    def _compact_sync(self) -> None:
        self._table.optimize(cleanup_older_than=keep_since(self._table, self._retention))

    def _renew_sync(self) -> None:
        """After a compaction, under the writer lock: drop every old version if the folder
        is past its ratio, take a new handle, give freed memory back, count the rows."""
        if self._over_disk_ratio():
            # Under the writer lock, and this process is the table's only user: no
            # write is in flight, so unverified files are leftovers (see purge_history).
            with warnings.catch_warnings():
                warnings.filterwarnings("ignore", message=r"optimize\(cleanup_older_than=0\)")
                self._table.optimize(cleanup_older_than=timedelta(0), delete_unverified=True)
        self._reopen()
        heap.trim()  # what the compaction and the old handle freed goes back to the OS
        self._rows = self._table.count_rows()

    def _over_disk_ratio(self) -> bool:
        folder = self._location.disk_folder(TABLE)
        if folder is None:
            return False
        return over_disk_ratio(folder, self._table, self._retention.max_ratio)

    def _reopen(self) -> None:
        """Swap in a new connection and table handle. Why: LanceDB's handles hold on to
        native memory with every commit (the 10k soak grew ~0.2 MB per write); a fresh
        handle lets the old one go. Measured with scripts/measure_rss.py (1,000 writes of
        the soak's stream): 193 -> 440 MB with one handle, 193 -> 281 MB reopened at every
        consolidation. Reads in flight keep the old handle until they finish."""
        db = self._location.connect()
        table = db.open_table(TABLE)
        self._db, self._table = db, table

    # --- reads -----------------------------------------------------------------------------

    async def get(self, ids: Sequence[str], vectors: bool = False) -> list[Memory]:
        if not ids:
            return []
        return await self.rows(where=ids_filter(ids), vectors=vectors)

    async def rows(self, *, where: str | None, vectors: bool = False) -> list[Memory]:
        """Whole records matching ``where`` (their vectors only if asked)."""
        found = await self._select(where, COLUMNS if vectors else META_COLUMNS)
        return memories(found)

    async def keys(self, where: str | None = None) -> list[MemoryKey]:
        """The identity columns of the memories matching ``where`` (all by default)."""
        return [MemoryKey(**r) for r in await self._select(where, KEY_COLUMNS)]

    async def standings(self, scope: str, tiers: Iterable[str]) -> list[Standing]:
        """What the long-term bound weighs each memory of ``tiers`` by (no whole records),
        oldest first as :meth:`scope_rows` orders them (ties in weight fall the same way)."""
        found = [
            Standing(**r) for r in await self._select(scope_filter(scope, tiers), STANDING_COLUMNS)
        ]
        found.sort(key=lambda m: (m.created_at, m.turn or 0))
        return found

    async def _select(self, where: str | None, columns: list[str]) -> list[dict[str, Any]]:
        """Rows as column dicts: the store's own reads of a few columns, never handed out."""

        def run() -> list[dict[str, Any]]:
            query = self._table.search().select(columns).limit(None)
            if where:
                query = query.where(where)
            return query.to_list()

        return await self._run(run)

    async def scope_rows(
        self, scope: str | None, tiers: Iterable[str] | None, vectors: bool = False
    ) -> list[Memory]:
        found = await self.rows(where=scope_filter(scope, tiers), vectors=vectors)
        found.sort(key=lambda m: (m.created_at, m.turn or 0))
        return found

    async def page(
        self, scope: str, tiers: Iterable[str], limit: int, offset: int, preview: int
    ) -> tuple[int, list[MemoryEntry]]:
        """One page of a scope's memories in ``tiers``, newest first by when each entered its
        tier (a just-forgotten memory leads the trash), and how many there are in all.
        Only the sort keys of the whole scope are read; the page's rows are fetched by id."""
        keys = await self._select(
            scope_filter(scope, tiers), ["id", "created_at", "tier_changed_at"]
        )
        keys.sort(
            key=lambda r: (r["tier_changed_at"] or r["created_at"], r["created_at"], r["id"]),
            reverse=True,
        )
        chosen = [r["id"] for r in keys[offset : offset + limit]]
        by_id = {m.id: m for m in await self.get(chosen)}
        # A row moved or deleted between the two reads is left out rather than shown stale.
        entries = [listing(by_id[i], preview) for i in chosen if i in by_id]
        return len(keys), [e for e in entries if e.tier in tiers]

    async def trashed_before(self, scope: str, cutoff: datetime) -> list[str]:
        """Ids of the scope's trashed memories that went to the trash before ``cutoff``."""
        stamp = cutoff.astimezone(UTC).isoformat().replace("+00:00", "")
        where = f"{scope_filter(scope, ('trash',))} AND tier_changed_at <= TIMESTAMP '{stamp}'"
        return [r["id"] for r in await self._select(where, ["id"])]

    async def live_rows(self, scope: str, tiers: Iterable[str]) -> list[Entry]:
        """The working-set fields of a scope's live memories (:data:`FIELDS`), oldest first."""
        tiers = tuple(tiers)
        mirrored = await self._mirrored(scope, tiers)
        if mirrored is not None:
            return mirrored.entries(tiers)
        found = [entry(r) for r in await self._select(scope_filter(scope, tiers), list(FIELDS))]
        found.sort(key=lambda e: (e.created_at, e.turn or 0))
        return found

    async def live_entry(self, scope: str, memory_id: str) -> Entry | None:
        """One live memory of ``scope`` (working-set fields), or None if it is not one."""
        if (mirrored := await self._mirrored(scope, LIVE)) is not None:
            found = mirrored.entry(memory_id)
        else:
            got = await self.get([memory_id])
            found = Entry.of(got[0]) if got and got[0].scope == scope else None
        return found if found is not None and found.tier in LIVE else None

    async def speakers(
        self, scope: str, min_turns: int = 1, among: Collection[str] | None = None
    ) -> dict[str, frozenset[str]]:
        """Each speaker (of those ``among``, if given) of ``min_turns`` or more of the scope's
        live memories (a turn's name, :func:`~cranimem_mcp.conversation.transcript.speaker`) and
        the ids
        of their turns: kept by the working set; read from the table if it is not mirrored."""
        if (mirrored := await self._mirrored(scope, LIVE)) is not None:
            return mirrored.speakers(min_turns, among)
        found = turns_by_speaker((e.id, e.content) for e in await self.live_rows(scope, LIVE))
        return {n: frozenset(ids) for n, ids in found.items()
                if len(ids) >= min_turns and (among is None or n in among)}  # fmt: skip

    async def find_hash(self, scope: str, content_hash: str) -> Memory | None:
        """The live memory of ``scope`` with this exact content, whole (vector included)."""
        mirrored = await self._mirrored(scope, LIVE)
        if mirrored is not None:
            found = mirrored.find_hash(content_hash)
            if found is None:
                return None
            got = await self.get([found], vectors=True)
            if got and got[0].content_hash == content_hash and got[0].tier in LIVE:
                return got[0]
            logger.warning("working set of %s out of step with the table: reloading", scope)
            self._ws.drop(scope)
        where = f"{scope_filter(scope, LIVE)} AND {hash_filter(content_hash)}"
        found_rows = await self.rows(where=where, vectors=True)
        return found_rows[0] if found_rows else None

    async def count(self, scope: str | None = None, tiers: Iterable[str] | None = None) -> int:
        tiers = None if tiers is None else tuple(tiers)
        mirrored = await self._mirrored(scope, tiers)
        if mirrored is not None:
            return mirrored.count(tiers or LIVE)
        where = scope_filter(scope, tiers)
        return await self._run(lambda: self._table.count_rows(where))

    async def census(self, tiers: Iterable[str] | None = None) -> dict[tuple[str, str], int]:
        """Rows per (scope, tier), of ``tiers`` only if given."""
        out: dict[tuple[str, str], int] = {}
        for r in await self._select(scope_filter(None, tiers), ["scope", "tier"]):
            out[(r["scope"], r["tier"])] = out.get((r["scope"], r["tier"]), 0) + 1
        return out

    async def nearest(
        self, scope: str, vector: np.ndarray, tiers: Iterable[str], limit: int,
        windows: bool = False,
    ) -> list[Hit]:  # fmt: skip
        """Vector search by cosine, best first (from the working set if the scope is mirrored);
        with ``windows``, a long memory's cosine is lifted by its best passage's (a recall's;
        the gate weighs a write against memories' own vectors)."""
        tiers = tuple(tiers)
        mirrored = await self._mirrored(scope, tiers)
        if mirrored is not None:
            found = mirrored.nearest(vector, tiers, limit, windows=windows)
            return [Hit(e, sim, sim) for e, sim in found]
        where = scope_filter(scope, tiers)
        if windows:
            near = await self._run(self._near_rows, where, vector, limit)
            return [Hit(e, sim, sim) for e, sim in near]

        def run() -> list[dict[str, Any]]:
            query = self._table.search(vector.tolist(), vector_column_name="vector")
            query = query.distance_type("cosine").where(where, prefilter=True).limit(limit)
            return query.select([*FIELDS, "_distance"]).to_list()

        hits = []
        for r in await self._run(run):
            sim = 1.0 - float(r["_distance"])
            hits.append(Hit(entry(r), sim, sim))
        return hits

    def _near_rows(
        self, where: str | None, vector: np.ndarray, limit: int
    ) -> list[tuple[Entry, float]]:
        """An unmirrored scope's vector half: its best ``limit`` memories by their cosine
        lifted by their best passage's, best first. Two LanceDB searches: by the memory's own
        vector, and by its passages' (a multivector column, searched by its closest vector:
        memories without are not in it)."""
        columns = [*FIELDS, *VECTOR_COLUMNS, "_distance"]
        found: dict[str, tuple[Entry, float]] = {}
        for column in VECTOR_COLUMNS:
            query = self._table.search(vector.tolist(), vector_column_name=column)
            query = query.distance_type("cosine").where(where, prefilter=True).limit(limit)
            for r in query.select(columns).to_list():
                found.setdefault(r["id"], (entry(r), cosine(r, vector)))
        return sorted(found.values(), key=lambda es: -es[1])[:limit]

    # Searches: hybrid (vector + full-text, fused) and full-text alone. A mirrored scope runs
    # the vector half on the working set and only the full-text half in LanceDB (fusion.py).

    async def hybrid(
        self,
        scope: str,
        vector: np.ndarray,
        text: str,
        tiers: Iterable[str],
        limit: int,
        among: Collection[str] | None = None,
    ) -> list[Hit]:
        """The hybrid search (vector + full-text halves, fused as ``fusion`` says), best first,
        each hit's ``score`` on the cosine's scale and in its order (:mod:`.fusion`).
        A mirrored scope runs the vector half on the working set, an unmirrored one in
        LanceDB; the full-text half is LanceDB's. ``among``: only these memory ids
        (:meth:`_hybrid_among`)."""
        where = scope_filter(scope, tiers)
        terms = terms_of(text)
        tiers = tuple(tiers)
        mirrored = await self._mirrored(scope, tiers)
        if among is not None:
            return await self._hybrid_among(
                scope, vector, terms, tiers, limit, set(among), mirrored
            )
        if mirrored is not None:
            near = mirrored.nearest(vector, tiers, limit, windows=True)
            if not terms:  # no words to search for: a vector search, as LanceDB would run it
                return [Hit(e, sim, sim) for e, sim in near]

            found = [
                (r["id"], float(r["_score"])) for r in await self._fts(where, terms, limit, ["id"])
            ]
            text = [(i, score) for i, score in found if i in mirrored]
            return self._fused(near, self._text_half(mirrored, vector, text), limit)
        if terms:
            return await self._unmirrored(where, vector, terms, limit)

        near = await self._run(self._near_rows, where, vector, limit)
        return [Hit(e, sim, sim) for e, sim in near]

    def _fused(
        self, near: list[tuple[Entry, float]], text: list[tuple[Entry, float, float]], limit: int
    ) -> list[Hit]:
        """The two halves fused as the store's ``fusion`` says."""
        if self._lift is not None:
            return lift(near, text, self._lift, limit)
        return fuse(self._reranker, self._weight, near, text, limit)

    async def _hybrid_among(
        self, scope: str, vector: np.ndarray, terms: str, tiers: tuple[str, ...], limit: int,
        among: set[str], mirrored: Any,
    ) -> list[Hit]:  # fmt: skip
        """The vector half among ``among`` exactly; the full-text half's best 4 x ``limit``
        of the scope, kept to ``among``."""
        if mirrored is None:  # unmirrored: the search over all, kept to ``among``
            found = await self.hybrid(scope, vector, terms, tiers, 4 * limit)
            return [h for h in found if h.entry.id in among][:limit]
        near = mirrored.nearest(vector, tiers, limit, among, windows=True)
        if not terms:
            return [Hit(e, sim, sim) for e, sim in near]
        where = scope_filter(scope, tiers)
        rows = await self._fts(where, terms, 4 * limit, ["id"])
        text = [(r["id"], float(r["_score"])) for r in rows if r["id"] in among][:limit]
        text = [(i, score) for i, score in text if i in mirrored]
        return self._fused(near, self._text_half(mirrored, vector, text), limit)

    @staticmethod
    def _text_half(
        mirrored: Any, vector: np.ndarray, text: list[tuple[str, float]]
    ) -> list[tuple[Entry, float, float]]:
        """The full-text half's ids and scores as entries with their cosines."""
        out = []
        for memory_id, score in text:
            found = mirrored.entry(memory_id)
            if found is not None:
                out.append((found, mirrored.similarity(memory_id, vector, True), score))
        return out

    async def _unmirrored(
        self, where: str, vector: np.ndarray, terms: str, limit: int
    ) -> list[Hit]:
        """The hybrid search of an unmirrored scope: a vector search and a full-text search in
        LanceDB (the two halves LanceDB's hybrid query runs), fused as a mirrored scope's
        are."""

        def run() -> tuple[list[tuple[Entry, float]], list[dict[str, Any]]]:
            near = self._near_rows(where, vector, limit)
            text = self._table.search(terms, query_type="fts").where(where, prefilter=True)
            return near, text.limit(limit).select([*FIELDS, *VECTOR_COLUMNS, "_score"]).to_list()

        near, text_rows = await self._run(run)
        text = [(entry(r), cosine(r, vector), float(r["_score"])) for r in text_rows]
        return self._fused(near, text, limit)

    async def _fts(
        self, where: str | None, terms: str, limit: int, columns: list[str]
    ) -> list[dict[str, Any]]:
        return await self._text.search(where, terms, limit, columns)

    async def read_ahead(self, scope: str, text: str, tiers: Iterable[str], limit: int) -> None:
        """Run the full-text half of :meth:`hybrid` of these arguments now, before its vector
        exists: the hybrid search that follows (before the next commit) uses its rows. A
        recall runs it while its query is embedded. Never raises: a failure is the search's
        to meet."""
        tiers = tuple(tiers)
        terms = terms_of(text)
        try:
            if not terms or await self._mirrored(scope, tiers) is None:
                return  # no words, or the search runs in LanceDB whole (:meth:`_unmirrored`)
        except StoreError:
            return  # left for the search that follows to meet
        await self._text.read_ahead(scope_filter(scope, tiers), terms, limit)

    async def text_search(
        self, scope: str, vector: np.ndarray, terms: str, tiers: Iterable[str], limit: int
    ) -> list[Hit]:
        """The full-text half alone (BM25 over ``terms``), best first; each hit's similarity
        is its cosine to ``vector``, its fused score the BM25 score."""
        tiers = tuple(tiers)
        ws = await self._mirrored(scope, tiers)
        columns = list(FIELDS) if ws is not None else [*FIELDS, *VECTOR_COLUMNS]
        rows = await self._fts(scope_filter(scope, tiers), terms, limit, columns)
        if ws is not None:
            sims = {r["id"]: ws.similarity(r["id"], vector, True) for r in rows if r["id"] in ws}
        else:
            sims = {r["id"]: cosine(r, vector) for r in rows}
        return [Hit(entry(r), sims[r["id"]], float(r["_score"])) for r in rows if r["id"] in sims]
