"""Consistency of the two stores: what ``cranimem-mcp check`` reports."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .engine import MemoryEngine


async def check(engine: MemoryEngine) -> list[str]:
    """Check that the two stores agree; returns the problems found (none: empty list).

    Every long-term memory has its graph provenance; every graph belongs to a memory that
    still exists (so no fact outlives all its sources), active graphs to memories not in
    the trash and trashed graphs to trashed memories; no content is stored twice in a
    scope's buffer and long-term memory; ids are unique. A buffer item with a memory
    graph is allowed: a crash between linking and moving it leaves that, and the next
    consolidation replaces the graph. Meant for a quiet engine (at start, from the CLI,
    after a crash): a write in flight can show as a passing disagreement."""
    async with engine._consolidation_lock:
        rows = await engine.episodic.rows(
            where=None, columns=["id", "scope", "tier", "content_hash"]
        )
        graphs = await engine.graph.provenance()
    problems: list[str] = []
    tier: dict[tuple[str, str], str] = {}
    seen: dict[tuple[str, str], str] = {}
    for r in rows:
        key = (r["scope"], r["id"])
        if key in tier:
            problems.append(f"memory {r['id']} has more than one row")
        tier[key] = r["tier"]
        if r["tier"] in ("buffer", "longterm"):
            dup = (r["scope"], r["content_hash"])
            if dup in seen:
                problems.append(
                    f"memories {seen[dup]} and {r['id']} in {r['scope']} hold the same content"
                )
            seen.setdefault(dup, r["id"])
    if len({mid for _s, mid in tier}) != len(tier):
        problems.append("a memory id is used in more than one scope")
    for (scope, mid), t in sorted(tier.items()):
        if t == "longterm" and mid not in graphs.get((scope, "memory"), set()):
            problems.append(f"long-term memory {mid} in {scope} has no graph provenance")
    for (scope, kind), ids in sorted(graphs.items()):
        for mid in sorted(ids):
            t = tier.get((scope, mid))
            if t is None:
                problems.append(f"the {kind} graph of {mid} in {scope} outlives its memory")
            elif kind in ("memory", "ends") and t == "trash":
                problems.append(f"trashed memory {mid} in {scope} still has an active graph")
            elif kind in ("trash", "trash-ends") and t != "trash":
                problems.append(f"{t} memory {mid} in {scope} has its graph in the trash")
    return problems
