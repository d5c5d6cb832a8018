"""``cranimem-mcp import --from FORMAT FILE``: another memory server's file or a chat app's
export, read whole (a malformed file stops here, before the engine opens and before any
write), then written into a scope through the memory service (:mod:`cranimem_mcp.importers`),
with a progress bar on stderr and a report of what was kept and why on stdout.

Unlike an import of our own export, this goes into a data directory that may hold memories
already, and through a server that owns it if one runs (the memory service, bridged).
"""

from __future__ import annotations

import argparse
import sys

from cranimem_mcp.importers import READERS, ImportReport, Reading, import_reading
from cranimem_mcp.service import MemoryService


class Bar:
    """Progress on stderr: on a terminal a bar redrawn at most once a percent; elsewhere (a
    log file) a line every tenth."""

    WIDTH = 30

    def __init__(self, what: str) -> None:
        self.what = what
        self.shown = -1
        self.terminal = sys.stderr.isatty()

    def __call__(self, done: int, total: int) -> None:
        step = 100 * done // max(total, 1) // (1 if self.terminal else 10)
        if step == self.shown and done != total:
            return
        self.shown = step
        filled = self.WIDTH * done // max(total, 1)
        line = f"{self.what} [{'#' * filled}{'.' * (self.WIDTH - filled)}] {done}/{total}"
        if self.terminal:
            sys.stderr.write(f"\r{line}" + ("\n" if done == total else ""))
        else:
            sys.stderr.write(line + "\n")
        sys.stderr.flush()


def _counts(counts: dict[str, int]) -> str:
    return ", ".join(f"{n} {what}" for what, n in counts.items())


def report_text(r: ImportReport) -> str:
    lines = [f"read {r.read} records from {r.path} ({r.source}): {_counts(r.kinds) or 'none'}"]
    if r.skipped:
        lines.append(f"  left out: {_counts(r.skipped)}")
    if r.already:
        lines.append(f"  already imported into {r.scope}: {r.already}")
    if r.dry_run:
        lines.append(f"  dry run: {r.to_write} would be written to {r.scope}; nothing written")
        return "\n".join(lines)
    kept = f" ({_counts(r.kept_by)})" if r.kept_by else ""
    lines.append(f"  stored in {r.scope}: {r.stored}{kept}")
    lines.append(f"  duplicates (merged into the memory they repeat): {r.duplicates}")
    rejected = f" ({_counts(r.rejected_by)})" if r.rejected_by else ""
    lines.append(f"  rejected: {r.rejected}{rejected}")
    lines.append(f"  redacted (a credential replaced by its kind): {r.redacted}")
    for role, counts in r.by_role.items():
        lines.append(f"  {role} turns: {_counts(counts)}")
    return "\n".join(lines)


def read(args: argparse.Namespace) -> Reading:
    """The file's records, all of them, before anything opens (raises ``InvalidInput``)."""
    return READERS[args.fmt](args.src)


async def import_from(engine: MemoryService, reading: Reading, args: argparse.Namespace) -> str:
    """Write the records into ``--scope`` (or count them, ``--dry-run``); the report."""
    report = await import_reading(
        engine, reading, source=args.fmt, path=args.src, scope=args.scope or "default",
        gate=args.gate, dry_run=args.dry_run,
        progress=None if args.dry_run else Bar(f"importing {args.fmt}"),
    )  # fmt: skip
    return report.model_dump_json(indent=2) if args.json else report_text(report)
