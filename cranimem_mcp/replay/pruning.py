"""Long-term memory's bounds (paper B.3, with decay): past ``longterm_capacity`` the weakest
long-term memories go to the trash, and trash past its retention is deleted for good.

Run at the end of a consolidation (:class:`cranimem_mcp.replay.consolidator.Consolidator`), which
hands
in the stores and the locks."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import timedelta

import anyio

from cranimem_mcp.buffer.episodic import EpisodicStore
from cranimem_mcp.buffer.records import Standing
from cranimem_mcp.conversation.threads import Thread
from cranimem_mcp.coordination import ScopeLocks
from cranimem_mcp.graph.store import GraphStore
from cranimem_mcp.models import ConsolidationReport, Decision
from cranimem_mcp.temporal import decay
from cranimem_mcp.validation import now

PRUNE_BATCH = 250  # memories moved to the trash per hold of the scope's lock


async def prune_longterm(
    episodic: EpisodicStore,
    graph: GraphStore,
    lock: anyio.Lock,
    scope: str,
    bound: int,
    half_life_days: float,
    report: ConsolidationReport,
    before_commit: Callable[[], Awaitable[None]] | None = None,
) -> None:
    """Keep long-term memory bounded: past ``bound`` (``longterm_capacity``) the weakest go
    to the trash. Weight = BaseUtility x decay(time since last written, merged or recalled),
    lifted by recalls, so what is old and unused goes first; restore brings it back. Pinned
    memories are never pruned (so pinning more than the bound lets it grow).
    ``before_commit`` is awaited before each batch is moved (the consolidation lease's
    check: it raises when the lease is lost)."""
    async with lock:
        if await episodic.count(scope, ("longterm",)) <= bound:
            return  # the common case, answered without reading the rows
        standings = await episodic.standings(scope, ("longterm",))
        excess = len(standings) - bound
        rows = [r for r in standings if not r.pinned]  # pinned: forget only, never decay
        excess = min(excess, len(rows))
        if excess <= 0:
            return
        clock = now()

        def weight(memory: Standing) -> float:
            times = (memory.last_access, memory.tier_changed_at, memory.created_at)
            last = max(x for x in times if x is not None)
            recalls = 1.0 + 0.1 * min(10, int(memory.access_count or 0))
            return float(memory.base_utility or 0.0) * decay(clock - last, half_life_days) * recalls

        weakest = sorted(rows, key=weight)[:excess]
        weights = {r.id: weight(r) for r in weakest}
    # Moved in batches, the scope's lock taken for each: a write into the scope waits for one
    # batch, not for the whole prune (5,000 at once held it 85-102 s, docs/RESULTS.md). Each
    # batch is a whole step (graph, then table), so a crash between two leaves both stores
    # consistent and the next run prunes the rest. A memory that changed meanwhile (forgotten,
    # pinned) is left as it now is.
    ids = list(weights)
    for start in range(0, len(ids), PRUNE_BATCH):
        async with lock:
            batch = [
                m
                for m in await episodic.get(ids[start : start + PRUNE_BATCH], vectors=True)
                if m.tier == "longterm" and not m.pinned
            ]
            if not batch:
                continue
            if before_commit is not None:
                await before_commit()
            await graph.deactivate(scope, [m.id for m in batch])
            trashed = []
            for memory in batch:
                reason = (
                    f"decayed: weight {weights[memory.id]:.3f} is among the {excess} weakest "
                    f"of {len(rows)} long-term memories (bound {bound})"
                )
                trashed.append(memory.moved("trash", clock, reason))
                report.decisions.append(
                    Decision(
                        id=memory.id,
                        replay_score=round(weights[memory.id], 4),
                        decision="trash",
                        reason=reason,
                    )  # fmt: skip
                )
            await episodic.upsert(trashed)
            report.pruned += len(trashed)


async def purge_expired_trash(
    episodic: EpisodicStore, graph: GraphStore, locks: ScopeLocks, thread: Thread,
    scopes: list[str], days: float,
) -> int:  # fmt: skip
    """Delete trashed memories older than ``days``, with their graphs and old versions (the
    turns that follow one are embedded by themselves first, :mod:`.threads`)."""
    cutoff = now() - timedelta(days=days)
    purged = 0
    for scope in scopes:
        async with locks.scope(scope):
            old = await episodic.trashed_before(scope, cutoff)
            if old:
                await thread.unthread(scope, old)
                await graph.retract(scope, old, purge=True)
                await episodic.delete(old)
                purged += len(old)
    if purged:
        await episodic.purge_history()
    return purged
