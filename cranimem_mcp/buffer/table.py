"""Opening the episodic table: where it lives (a :class:`TableLocation`), the connection,
the table made if absent, the columns added since an older version made it, and its indexes.

Where it lives is the engine's choice (``episodic.uri``): a :class:`LocalTable`, a directory
this process alone writes (unset: ``<home>/episodic``), or a :class:`SharedTable`, a LanceDB
URI (object storage, or any path) that other processes, replicas, write too.

Invariant: opening is idempotent. Replicas that start at once on a fresh table (on object
storage, say) all open the one table: the first makes it and each index, the others find
them made, however they lost the race (tests/test_object_store.py starts eight at once).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any, ClassVar, Protocol

import pyarrow as pa

from cranimem_mcp.backends import heap
from cranimem_mcp.buffer.full_text import FullText
from cranimem_mcp.buffer.lance import FTS, lancedb
from cranimem_mcp.buffer.records import LIVE_KEY, LIVE_KEY_SQL, SCALAR_INDEXES
from cranimem_mcp.errors import StoreError

logger = logging.getLogger(__name__)


class TableLocation(Protocol):
    """Where the episodic table lives, and whether other processes write it."""

    # Other processes write the table: the store reads its latest version, stores a new text
    # by a merge on the live key, and drops its working set when another's commit moved the
    # version (the episodic store's docstring).
    shared: bool

    def connect(self) -> Any:
        """The LanceDB database that holds the table (a local directory is made if absent)."""
        ...

    def disk_folder(self, table: str) -> Path | None:
        """The table's files on this machine's disk (None: elsewhere, so no bound on the disk
        its old versions take)."""
        ...

    def full_text(self, table: str) -> FullText:
        """The full-text searches of ``table`` here (:mod:`.full_text`)."""
        ...


@dataclass(frozen=True)
class LocalTable:
    """A directory of this machine that this process alone writes."""

    path: Path
    shared: ClassVar[bool] = False

    def connect(self) -> Any:
        self.path.mkdir(parents=True, exist_ok=True, mode=0o700)
        return connect(self.path, {}, shared=False)

    def disk_folder(self, table: str) -> Path | None:
        return self.path / f"{table}.lance"

    def full_text(self, table: str) -> FullText:
        return FullText(str(self.path), table, None, shared=False)

    def __str__(self) -> str:
        return str(self.path)


@dataclass(frozen=True)
class SharedTable:
    """A LanceDB URI (``s3://bucket/prefix``, ..., or a path) with its ``storage_options``,
    that other processes write too."""

    uri: str
    storage_options: dict[str, str] = field(default_factory=dict)
    shared: ClassVar[bool] = True

    def connect(self) -> Any:
        return connect(self.uri, self.storage_options, shared=True)

    def disk_folder(self, table: str) -> Path | None:
        return None

    def full_text(self, table: str) -> FullText:
        return FullText(self.uri, table, self.storage_options, shared=True)

    def __str__(self) -> str:
        return self.uri


def connect(path: Path | str, storage_options: dict[str, str], shared: bool) -> Any:
    """The LanceDB database at ``path`` (a directory or any LanceDB URI). A ``shared`` table
    (other processes write it) is read at its latest version: LanceDB looks for a newer one
    before each read. Alone, the handle's own version is always the latest. From here on
    pyarrow allocates with malloc, and LanceDB's threads share two of its arenas, so that a
    trim returns what they free (:mod:`heap`)."""
    heap.arrow_on_malloc()
    heap.limit_arenas()
    return lancedb.connect(
        str(path),
        storage_options=storage_options or None,
        read_consistency_interval=timedelta(0) if shared else None,
    )


def open_table(db: Any, name: str, schema: pa.Schema) -> Any:
    """The table ``name`` of ``db``, made with ``schema`` if absent, brought up to it, with
    its indexes. A table of other vectors than ``schema``'s is an error."""
    table = _open_or_create(db, name, schema)
    width = table.schema.field("vector").type.list_size
    want = schema.field("vector").type.list_size
    if width != want:
        raise StoreError(f"the episodic table holds {width}-d vectors, the embedder gives {want}-d")
    _add_missing_columns(table, schema)
    _ensure_indexes(table)
    return table


def _open_or_create(db: Any, name: str, schema: pa.Schema) -> Any:
    if name in db.list_tables().tables:
        return db.open_table(name)
    try:
        return db.create_table(name, schema=schema, exist_ok=True)
    except Exception as lost:  # another process made it between the look and the make
        try:
            table = db.open_table(name)
        except Exception:
            raise lost from None
        logger.info("the episodic table was made by another process meanwhile: %s", lost)
        return table


def _add_missing_columns(table: Any, schema: pa.Schema) -> None:
    """A table made by an older version gets the columns added since, as nulls; the
    duplicate check's key is computed for every row."""
    have = set(table.schema.names)
    missing = [f for f in schema if f.name not in have]
    if not missing:
        return
    logger.info("adding columns %s to the episodic table", [f.name for f in missing])
    # Added later, the key cannot be the table's primary key: such a table keeps the
    # per-process duplicate check only (docs/SCALING.md, Replicas).
    table.add_columns([f.with_nullable(True).remove_metadata() for f in missing])
    if LIVE_KEY in {f.name for f in missing}:
        for where, value in LIVE_KEY_SQL.items():
            table.update(where=where, values_sql={LIVE_KEY: value})


def _ensure_indexes(table: Any) -> None:
    """The full-text index on ``content``, and a scalar index on every hot-path filter
    (``id IN``, ``content_hash =``, ``scope =``, ``tier IN``), so it reads index pages instead
    of scanning the table. Measured on this machine at 100k rows: count_rows by scope and
    tier 19 -> 2 ms, find by content_hash 77 -> 5 ms, vector search prefiltered to a small
    scope 384 -> 23 ms. Rows added later are scanned until the store's ``maintain`` folds them
    into the indexes. An index that fails to build but is there afterwards was built by
    another process opening the table at the same time."""
    for column, config in {"content": FTS, **SCALAR_INDEXES}.items():
        if _has_index(table, column):
            continue
        try:
            table.create_index(column, config=config(), replace=True)
        except Exception:
            table.checkout_latest()
            if not _has_index(table, column):
                raise
            logger.info("the index on %s was built by another process meanwhile", column)


def _has_index(table: Any, column: str) -> bool:
    return any(tuple(ix.columns) == (column,) for ix in table.list_indices())
