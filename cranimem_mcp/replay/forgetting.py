"""Forgetting and restoring: forget moves memories to the trash (restorable) or, hard,
deletes them with their graph provenance and every old version on disk; restore brings
trashed memories back, relinking what goes back to long-term memory. Both are given the
stores and the scope locks they work under, and the arguments the engine's ``forget`` and
``restore`` checked (:func:`remove`, :func:`bring_back`); a restore that refills the buffer
hands the overflow to the consolidator's bound."""

from __future__ import annotations

import logging
import re

from cranimem_mcp.buffer.episodic import EpisodicStore
from cranimem_mcp.conversation.threads import Thread
from cranimem_mcp.coordination import ScopeLocks
from cranimem_mcp.errors import NotFound
from cranimem_mcp.extraction import linkage
from cranimem_mcp.graph.store import GraphStore
from cranimem_mcp.models import ForgetResult, Memory, RestoreResult
from cranimem_mcp.naming import canonical_name
from cranimem_mcp.replay.consolidator import Consolidator
from cranimem_mcp.validation import now

logger = logging.getLogger(__name__)


async def remove(
    episodic: EpisodicStore,
    graph: GraphStore,
    locks: ScopeLocks,
    thread: Thread,
    ids: list[str],
    entity: str | None,
    scope: str,
    all_in_scope: bool,
    hard: bool,
    dry_run: bool,
) -> ForgetResult:
    """The engine's ``forget``, its arguments checked: trash (or, ``hard``, erase) the chosen
    memories of ``scope`` and their graph provenance."""
    tiers = ("buffer", "longterm", "trash") if hard else ("buffer", "longterm")
    # The linking lock first: a consolidation linking buffer items outside the scope lock
    # finishes their move before any of them is forgotten.
    async with locks.linking(scope), locks.scope(scope):
        rows = await episodic.scope_rows(scope, tiers)
        by_id = {r.id: r for r in rows}
        missing = [i for i in ids if i not in by_id]
        # Forgetting is idempotent: an id a soft forget already put in the trash is done.
        unchanged = [] if hard or not missing else await _trashed(episodic, scope, missing)
        missing = [i for i in missing if i not in unchanged]
        if missing:
            # Never passed off as done: a mistyped id would leave the memory the user meant.
            raise NotFound(
                f"no memory {missing[0]} in scope {scope!r} (a wrong id, another scope's, or "
                "one a hard forget erased)"
            )
        chosen = set(ids) - set(unchanged)
        if all_in_scope:
            chosen |= set(by_id)
        if entity is not None:
            chosen |= _mentioning(rows, entity)
            chosen |= await graph.memories_mentioning(scope, entity) & set(by_id)
        chosen_rows = [by_id[i] for i in sorted(chosen)]
        facts = await graph.orphaned_by(scope, sorted(chosen))
        if dry_run or not chosen_rows:
            return ForgetResult(
                forgotten=len(chosen_rows),
                ids=[r.id for r in chosen_rows],
                facts_removed=facts,
                hard=hard,
                dry_run=dry_run,
                unchanged=unchanged,
            )
        chosen_ids = [r.id for r in chosen_rows]
        thread.forgot(scope)
        if hard:
            # No vector keeps a deleted text's meaning: the turns that follow one are
            # embedded by themselves first (a crash before the delete leaves only that).
            await thread.unthread(scope, chosen_ids)
            await graph.retract(scope, chosen_ids, purge=True)
            await episodic.delete(chosen_ids)
            await episodic.purge_history()
        else:
            await graph.deactivate(scope, chosen_ids)
            stamp = now()
            # Read whole (vectors too): the upsert replaces whole rows. Each leaves the tier
            # it had when chosen, under this lock the tier it has now.
            full = await episodic.get(chosen_ids, vectors=True)
            moved = [m.moved("trash", stamp, "forgotten by request", prev_tier=by_id[m.id].tier)
                     for m in full]  # fmt: skip
            await episodic.upsert(moved)
    logger.info("forgot %d memories in %s (hard=%s)", len(chosen_ids), scope, hard)
    return ForgetResult(
        forgotten=len(chosen_ids), ids=chosen_ids, facts_removed=facts, hard=hard,
        unchanged=unchanged,
    )  # fmt: skip


async def _trashed(episodic: EpisodicStore, scope: str, ids: list[str]) -> list[str]:
    """Those of ``ids`` already in the scope's trash, in their order."""
    found = {r.id for r in await episodic.get(ids) if r.scope == scope and r.tier == "trash"}
    return [i for i in ids if i in found]


def _mentioning(rows: list[Memory], entity: str) -> set[str]:
    key = canonical_name(entity)
    pattern = re.compile(rf"(?<!\w){re.escape(' '.join(entity.split()))}(?!\w)", re.I)
    return {
        r.id
        for r in rows
        if key in {canonical_name(e) for e in r.entities or []} or pattern.search(r.content)
    }


async def bring_back(
    consolidator: Consolidator, locks: ScopeLocks, ids: list[str], scope: str
) -> RestoreResult:
    """The engine's ``restore``, its arguments checked: trashed memories go back, forgotten
    ones to the tier they were in, replay-pruned ones to long-term memory (the user
    overrules the replay decision) and linked. The buffer stays within its bound: what no
    longer fits goes through replay."""
    episodic, graph = consolidator.episodic, consolidator.graph
    async with locks.linking(scope), locks.scope(scope):  # the linking lock first, as forget
        rows = await episodic.get(ids, vectors=True)
        found = {r.id: r for r in rows if r.scope == scope and r.tier == "trash"}
        missing = [i for i in ids if i not in found]
        if missing:
            raise NotFound(f"no trashed memory {missing[0]} in scope {scope!r}")
        stamp = now()
        relink = []
        restored = []
        for memory in found.values():
            pruned = memory.decision_reason != "forgotten by request"
            target = "longterm" if pruned else (memory.prev_tier or "buffer")
            restored.append(memory.moved(target, stamp, "restored by request"))
        relink = [m for m in restored if m.tier == "longterm"]
        await graph.activate(scope, [m.id for m in relink])
        for memory in relink:
            if not await graph.has_memory(scope, memory.id):
                (extraction,) = await consolidator.extractor.extract([memory.content])
                consolidator.note_extraction(scope, memory.id, extraction)
                await graph.put(scope, memory.id, linkage.check(extraction), stamp)
        await episodic.upsert(restored)
        await consolidator.evict_overflow(scope)
    return RestoreResult(restored=len(found), ids=list(found))
