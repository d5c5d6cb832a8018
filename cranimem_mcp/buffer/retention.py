"""What the episodic store keeps of its table's old versions, and when it maintains.

LanceDB keeps every version a commit makes, each with the files only it references, until
a cleanup; :meth:`~cranimem_mcp.buffer.episodic.EpisodicStore.maintain` compacts and cleans up as
:class:`VersionRetention` says, when :func:`maintenance_due` says it is worth it.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

# When a maintenance is due (maintenance_due): commits since the last one.
MAINTAIN_MIN_COMMITS = 20
MAINTAIN_MAX_COMMITS = 120
MAINTAIN_ROWS_PER_COMMIT = 200


@dataclass(frozen=True)
class VersionRetention:
    """What :meth:`EpisodicStore.maintain` keeps of the table's old versions (LanceDB keeps
    every version a commit makes, each with the files only it references, until cleanup).
    At most ``count`` versions, none older than ``seconds``; and if the folder is still over
    ``max_ratio`` times the live data (a local table only), only the current version.

    Why a count: with the age alone (an hour) 3,000 writes left 3,574 versions and 485 MB
    on disk for 5.6 MB of live data (docs/RESULTS.md, "Disk in proportion"), because every
    compaction rewrites the table. Old versions serve only reads that started before a
    commit, and ours take milliseconds; 20 versions cover at least the last full
    consolidation round."""

    count: int = 20
    seconds: float = 3600.0
    max_ratio: float = 3.0


def maintenance_due(commits: int, rows: int) -> bool:
    """Whether ``commits`` since the last maintenance of a table of ``rows`` pay for one: at
    least ``MAINTAIN_MIN_COMMITS`` commits, and one per ``MAINTAIN_ROWS_PER_COMMIT`` rows of
    the table, up to ``MAINTAIN_MAX_COMMITS``.

    Why: LanceDB's ``optimize`` merges every fragment under its million-row target, so
    it rewrites the whole table (and updates its indexes) each time, under the writer
    lock; run every 20 writes, writes queued behind a cost that grew with the table
    (a write's mean 38 -> 88 ms from 500 to 3,500 memories, docs/RESULTS.md). Run in
    proportion to the table, it costs each write about the same; the cap bounds the
    small fragments a read meets (each adds a few ms to a query)."""
    due = min(MAINTAIN_MAX_COMMITS, max(MAINTAIN_MIN_COMMITS, rows // MAINTAIN_ROWS_PER_COMMIT))
    return commits >= due


def commits_before(table: Any, retention: VersionRetention) -> int:
    """The commits an opened table holds since its last maintenance, as its versions tell:
    a maintenance leaves at most ``retention.count`` of them, so those past that are later
    commits (an undercount by at most ``count`` if it left fewer). Why: a process counts
    its own commits only, so a directory written by one-shot commands never came due."""
    return max(0, len(table.list_versions()) - retention.count)


def keep_since(table: Any, retention: VersionRetention) -> timedelta:
    """The age past which versions go: the retention's seconds, or less if more than
    ``count`` versions are younger. LanceDB stamps versions in local time without a
    zone (as ``datetime.now()``); a clock mismatch only makes us keep more."""
    keep = timedelta(seconds=retention.seconds)
    versions = table.list_versions()
    if len(versions) > retention.count:
        oldest_kept = versions[-retention.count]["timestamp"]
        if oldest_kept.tzinfo is not None:
            oldest_kept = oldest_kept.astimezone().replace(tzinfo=None)
        age = datetime.now() - oldest_kept - timedelta(milliseconds=1)
        keep = max(timedelta(0), min(keep, age))
    return keep


def over_disk_ratio(folder: Path, table: Any, max_ratio: float) -> bool:
    """Whether the table's folder holds more than ``max_ratio`` times its live data."""
    on_disk = sum(f.stat().st_size for f in folder.rglob("*") if f.is_file())
    live = float(table.stats()["total_bytes"])
    return on_disk > max_ratio * max(live, 1.0)
