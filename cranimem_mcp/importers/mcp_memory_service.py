"""mcp-memory-service's SQLite database: its table ``memories`` (``content``,
``content_hash``, ``tags`` comma-separated, ``created_at`` a Unix time, ``created_at_iso``,
``deleted_at`` set on a soft delete, and more this import does not need).

The database is opened read-only (a ``mode=ro`` URI: the file is never written, even by
SQLite's own recovery), and read whole before the first write. A soft-deleted row is
skipped: its user deleted it. Each memory keeps its tags and its creation time; its source
is the peer's content hash, which is unique in its table.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from cranimem_mcp.importers.records import (
    Reading,
    Record,
    clean_tags,
    epoch,
    iso,
    malformed,
    source_id,
)
from cranimem_mcp.models import MAX_CONTENT

FORMAT = "mcp-memory-service"
_NEEDED = {"content", "content_hash"}


def read(path: Path) -> Reading:
    """The records of the database's live memories (soft-deleted rows are counted, not
    read)."""
    if not path.is_file():
        raise malformed(path, "opening", "no such file")
    try:
        db = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
    except sqlite3.Error as exc:
        raise malformed(path, "opening", f"not a SQLite database ({exc})") from exc
    try:
        return _rows(db, path)
    except sqlite3.DatabaseError as exc:
        raise malformed(path, "reading", f"not a SQLite database, or damaged ({exc})") from exc
    finally:
        db.close()


def _rows(db: sqlite3.Connection, path: Path) -> Reading:
    columns = {row[1] for row in db.execute("PRAGMA table_info(memories)")}
    if not columns:
        raise malformed(path, "table memories", "missing: is it mcp-memory-service's database?")
    if missing := _NEEDED - columns:
        raise malformed(path, "table memories", f"no column {', '.join(sorted(missing))}")
    wanted = ["content", "content_hash"] + [
        c for c in ("tags", "created_at", "created_at_iso", "deleted_at") if c in columns
    ]
    out: list[Record] = []
    deleted = 0
    for row in db.execute(f"SELECT rowid, {', '.join(wanted)} FROM memories ORDER BY rowid"):
        rowid, values = row[0], dict(zip(wanted, row[1:], strict=True))
        where = f"table memories, row {rowid}"
        if values.get("deleted_at") is not None:
            deleted += 1
            continue
        content, digest = values["content"], values["content_hash"]
        if not isinstance(content, str) or not content.strip():
            raise malformed(path, where, "'content' is empty")
        if len(content.strip()) > MAX_CONTENT:
            raise malformed(path, where, f"{len(content)} characters; a memory holds {MAX_CONTENT}")
        if not isinstance(digest, str) or not digest:
            raise malformed(path, where, "'content_hash' is empty")
        tags = _tags(values.get("tags"), path, where)
        when = epoch(values.get("created_at"), path, f"{where}, created_at") or iso(
            values.get("created_at_iso"), path, f"{where}, created_at_iso"
        )
        out.append(
            Record(
                content=content.strip(),
                source=source_id(FORMAT, digest),
                kind="memory",
                said_at=when,
                tags=clean_tags(tags),
                pin=True,
            )
        )
    return Reading(out, {"deleted in mcp-memory-service": deleted} if deleted else {})


def _tags(value: object, path: Path, where: str) -> list[str]:
    """The row's tags: comma-separated text (a JSON list in some older databases)."""
    if value is None:
        return []
    if not isinstance(value, str):
        raise malformed(path, where, f"'tags' must be text, got {value!r:.40}")
    if value.lstrip().startswith("["):
        try:
            listed = json.loads(value)
        except ValueError:
            listed = None
        if isinstance(listed, list):
            return [str(t) for t in listed]
    return value.split(",")
