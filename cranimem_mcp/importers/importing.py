"""The import: a reader's records written through the memory service's ``remember``, the
same write path as every other memory, so each one meets the secrets guard, the duplicate
check and the gate, and keeps its original time (``said_at``).

- Nothing half-written: the reader has read and shaped the whole file before this starts.
- Idempotent: a record whose source (``<format>:<id>``) a memory of the scope already has
  is not written again, whatever tier the memory is in (a memory the user forgot stays
  forgotten). A record whose text the scope holds from elsewhere is an exact repeat: the
  service merges it into that memory (``duplicates``).
- A dry run reads the file and the scope's sources, and writes nothing.

The report counts every record once: already imported, stored, merged into a duplicate, or
rejected (by the gate's rule, or the secrets policy).
"""

from __future__ import annotations

import logging
import re
from collections import Counter
from collections.abc import Callable
from pathlib import Path

from pydantic import BaseModel, Field

from cranimem_mcp.importers.records import Reading
from cranimem_mcp.models import MAX_PAGE, RememberResult
from cranimem_mcp.service import MemoryService

logger = logging.getLogger(__name__)

# (records done, records in all): the command line draws it.
Progress = Callable[[int, int], None]
_RULE = re.compile(r"\(rule: ([^)]+)\)")


class ImportReport(BaseModel):
    """What an import read and what became of it."""

    source: str = Field(description="The format read: server-memory, chatgpt, ...")
    path: str
    scope: str
    dry_run: bool = False
    read: int = Field(0, description="Records read from the file")
    kinds: dict[str, int] = Field(default={}, description="Records read, by kind")
    skipped: dict[str, int] = Field(default={}, description="Left out by the reader, by why")
    already: int = Field(0, description="Imported before: a memory has the record's source")
    to_write: int = Field(0, description="Records a write was (or, dry, would be) made for")
    stored: int = 0
    duplicates: int = Field(0, description="Exact repeats, merged into the memory they repeat")
    rejected: int = 0
    rejected_by: dict[str, int] = Field(default={}, description="Rejections by the gate's rule")
    kept_by: dict[str, int] = Field(default={}, description="Stored, by the gate stage that kept")
    redacted: int = Field(0, description="Writes that held a credential, replaced by its kind")
    by_role: dict[str, dict[str, int]] = Field(
        default={}, description="A chat's turns, by speaker role: stored, rejected, ..."
    )


async def sources_in(service: MemoryService, scope: str, prefix: str) -> set[str]:
    """The sources starting with ``prefix`` of the scope's memories, in every tier."""
    found: set[str] = set()
    offset: int | None = 0
    while offset is not None:
        page = await service.list_memories(scope=scope, limit=MAX_PAGE, offset=offset)
        found.update(m.source for m in page.items if m.source and m.source.startswith(prefix))
        offset = page.next_offset
    return found


def _rule(result: RememberResult) -> str:
    """Why a write was rejected, in a word: the noise rule that matched, else the stage."""
    m = _RULE.search(result.reason)
    return m.group(1) if m else result.gate or "gate"


def _kept_by(result: RememberResult) -> str:
    if result.reason.startswith("kept as doubtful"):
        return "doubtful"
    return result.gate or "gate"


async def import_reading(
    service: MemoryService,
    reading: Reading,
    *,
    source: str,
    path: Path,
    scope: str,
    gate: bool = False,
    dry_run: bool = False,
    progress: Progress | None = None,
) -> ImportReport:
    """Write ``reading``'s records into ``scope``. ``gate``: a record the user chose to store
    in the other tool (``pin``) is judged by the gate all the same."""
    records = reading.records
    report = ImportReport(source=source, path=str(path), scope=scope, dry_run=dry_run)
    report.read = len(records)
    report.kinds = dict(Counter(r.kind for r in records))
    report.skipped = dict(reading.skipped)
    prefixes = {r.source.split(":", 1)[0] + ":" for r in records}
    known: set[str] = set()
    for prefix in prefixes:
        known |= await sources_in(service, scope, prefix)
    rejected: Counter[str] = Counter()
    kept: Counter[str] = Counter()
    roles: dict[str, Counter[str]] = {}
    for done, record in enumerate(records, 1):
        if record.source in known:
            report.already += 1
        elif dry_run:
            report.to_write += 1
        else:
            report.to_write += 1
            result = await service.remember(
                content=record.content, scope=scope, source=record.source,
                tags=list(record.tags), pin=record.pin and not gate, said_at=record.said_at,
            )  # fmt: skip
            known.add(record.source)
            if result.redacted:
                report.redacted += 1
            if result.status == "stored":
                report.stored += 1
                kept[_kept_by(result)] += 1
            elif result.status == "merged":
                report.duplicates += 1
            else:
                report.rejected += 1
                rejected[_rule(result)] += 1
            if record.role is not None:
                roles.setdefault(record.role, Counter())[result.status] += 1
        if progress is not None:
            progress(done, len(records))
    report.rejected_by = dict(rejected.most_common())
    report.kept_by = dict(kept.most_common())
    report.by_role = {role: dict(c) for role, c in roles.items()}
    logger.info(
        "imported %s into %s: %d read, %d stored, %d duplicates, %d rejected, %d already there",
        path, scope, report.read, report.stored, report.duplicates, report.rejected,
        report.already,
    )  # fmt: skip
    return report
