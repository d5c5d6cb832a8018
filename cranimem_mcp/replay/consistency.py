"""Consistency of the two stores: what ``cranimem-mcp check`` reports, and the repair
run at open after a crash."""

from __future__ import annotations

from cranimem_mcp.buffer.episodic import EpisodicStore
from cranimem_mcp.coordination import ScopeLocks
from cranimem_mcp.extraction import linkage
from cranimem_mcp.graph.store import GraphStore


async def check(episodic: EpisodicStore, graph: GraphStore, locks: ScopeLocks) -> list[str]:
    """Check that the two stores agree; returns the problems found (none: empty list).

    Every long-term memory has its graph provenance; every graph belongs to a memory that
    still exists (so no fact outlives all its sources), active graphs to memories not in
    the trash and trashed graphs to trashed memories; no content is stored twice in a
    scope's buffer and long-term memory; ids are unique. A buffer item with a memory
    graph is allowed: a crash between linking and moving it leaves that, and the next
    consolidation replaces the graph. Meant for a quiet engine (at start, from the CLI,
    after a crash): a write in flight can show as a passing disagreement."""
    async with locks.consolidation:
        rows = await episodic.keys()
        graphs = await graph.provenance()
    problems: list[str] = []
    tier: dict[tuple[str, str], str] = {}
    seen: dict[tuple[str, str], str] = {}
    for r in rows:
        key = (r.scope, r.id)
        if key in tier:
            problems.append(f"memory {r.id} has more than one row")
        tier[key] = r.tier
        if r.tier in ("buffer", "longterm"):
            dup = (r.scope, r.content_hash)
            if dup in seen:
                problems.append(
                    f"memories {seen[dup]} and {r.id} in {r.scope} hold the same content"
                )
            seen.setdefault(dup, r.id)
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


async def repair(episodic: EpisodicStore, graph: GraphStore, locks: ScopeLocks) -> list[str]:
    """Bring the graph back in line with the rows after a crash between the two steps of a
    forget, prune, restore or purge; returns what was done (empty: nothing to do).

    The rows are the truth, because each of those operations changes the graph first and
    the row last, and only a changed row means the operation finished: a live memory whose
    graph is in the trash (forget or prune cut short) gets it back; a trashed memory with an
    active graph (restore cut short) has it moved to the trash; a graph whose memory is gone
    is purged; a long-term memory with no graph at all (a hard forget cut short, or a lost
    graph) is linked again by the heuristic extractor. Duplicate rows are reported by
    :func:`check`, never changed here."""
    async with locks.consolidation:
        rows = await episodic.keys()
        graphs = await graph.provenance()
        tier = {(r.scope, r.id): r.tier for r in rows}
        todo: dict[str, dict[str, set[str]]] = {
            "activate": {},
            "deactivate": {},
            "purge": {},
            "relink": {},
        }  # fmt: skip
        for (scope, kind), ids in graphs.items():
            for mid in ids:
                t = tier.get((scope, mid))
                if t is None:
                    todo["purge"].setdefault(scope, set()).add(mid)
                elif kind in ("memory", "ends") and t == "trash":
                    todo["deactivate"].setdefault(scope, set()).add(mid)
                elif kind in ("trash", "trash-ends") and t != "trash":
                    todo["activate"].setdefault(scope, set()).add(mid)
        for (scope, mid), t in tier.items():
            linked = mid in graphs.get((scope, "memory"), set()) | graphs.get(
                (scope, "trash"), set()
            )
            if t == "longterm" and not linked:
                todo["relink"].setdefault(scope, set()).add(mid)
        done = []
        for scope, ids in sorted(todo["purge"].items()):
            await graph.retract(scope, sorted(ids), purge=True)
            done.append(f"purged the graphs of {len(ids)} deleted memories in {scope}")
        for scope, ids in sorted(todo["deactivate"].items()):
            await graph.deactivate(scope, sorted(ids))
            done.append(f"moved the graphs of {len(ids)} trashed memories in {scope} to the trash")
        for scope, ids in sorted(todo["activate"].items()):
            await graph.activate(scope, sorted(ids))
            done.append(f"restored the graphs of {len(ids)} live memories in {scope}")
        for scope, ids in sorted(todo["relink"].items()):
            for memory in await episodic.get(sorted(ids)):
                extraction = linkage.quick(memory.content)
                await graph.put(scope, memory.id, extraction, memory.created_at, memory.happened_at)
            done.append(f"linked {len(ids)} long-term memories in {scope} again")
    return done
