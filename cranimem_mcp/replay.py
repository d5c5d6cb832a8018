"""Consolidation runs (paper B.3): replay the buffer, promote or trash, link what is
promoted into the graph; keep long-term memory bounded; purge expired trash; redo the work
the heuristics did while the LLM was down (re-tagging, re-extraction).

Functions of the engine (its stores, locks and state), kept apart from the write and read
paths. The scores themselves are pure functions in :mod:`cranimem_mcp.consolidation`.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from . import consolidation, linkage
from .errors import BackendUnavailable, ModelOutputError
from .extraction import HeuristicExtractor
from .heuristics import HeuristicTagger
from .llm import current_meter, metered
from .models import ConsolidationReport, Decision
from .naming import canonical_name
from .retrieval import fact_text
from .temporal import decay
from .validation import check_scope, now

if TYPE_CHECKING:
    from .engine import MemoryEngine

logger = logging.getLogger(__name__)

# Facts embedded ahead per consolidation run and scope (the engine's cache keeps 4,096).
FACTS_EMBEDDED_PER_RUN = 1024

Progress = Callable[[float, float | None, str | None], Awaitable[None]]
"""Told after each step of a run: (steps done, steps in all, what the step did). The MCP
layer passes one that sends ``notifications/progress``; the engine knows nothing of MCP."""

# Steps of a run: per scope, claim, score and link (dry run: claim and score); then, when
# applied, prune and purge; then the summary. The total is known before the first step.
_SCOPE_STEPS = 3
_DRY_SCOPE_STEPS = 2


class Steps:
    """A run's progress: counts the steps done against a total fixed at the start and tells
    ``progress`` after each one, so what a client sees only grows and ends at the total."""

    def __init__(self, progress: Progress | None, total: int) -> None:
        self.progress, self.total, self.done = progress, total, 0

    async def step(self, message: str, count: int = 1) -> None:
        """``count`` steps are done (more than one when a phase has nothing to do)."""
        self.done = min(self.total, self.done + count)
        if self.progress is not None:
            await self.progress(self.done, self.total, message)


async def replay(
    engine: MemoryEngine,
    scope: str,
    rows: list[dict[str, Any]],
    *,
    all_rows: list[dict[str, Any]],
    trigger: str,
    report: ConsolidationReport | None = None,
) -> list[Decision]:
    """Decide and apply replay for ``rows`` (buffer items of ``scope``). The caller holds
    the scope lock."""
    decisions = await _decide(engine, scope, rows, all_rows)
    promoted = [r for r, d in zip(rows, decisions, strict=True) if d.decision == "promote"]
    # Why: this runs inside remember, under the scope lock; an LLM call here would hold
    # the write for seconds. The heuristics link it now, the LLM redoes it later.
    extractions = await engine._heuristic_extractor.extract([r["content"] for r in promoted])
    await _apply(engine, scope, rows, decisions, extractions, report)
    if promoted and engine._llm_extractor:
        await engine._save_state()
    if promoted and engine._background:  # after the write returns, not on its path
        engine._spawn(embed_new_facts, engine, scope, [r["id"] for r in promoted])
    return decisions


async def _decide(
    engine: MemoryEngine, scope: str, rows: list[dict[str, Any]], all_rows: list[dict[str, Any]]
) -> list[Decision]:
    counts = consolidation.entity_counts(all_rows)
    names = {canonical_name(e) for r in rows for e in r.get("entities") or []}
    support = await engine.graph.entity_support(scope, names)
    c = engine.settings.consolidation
    params = consolidation.ReplayParams(c.tau_consolidation, c.alpha, c.freq_cap)
    return consolidation.decide(rows, buffer_counts=counts, graph_support=support, params=params)


async def _apply(
    engine: MemoryEngine,
    scope: str,
    rows: list[dict[str, Any]],
    decisions: list[Decision],
    extractions: list[Any],
    report: ConsolidationReport | None,
) -> None:
    """Link promoted memories into the graph first, then move the rows: after a crash in
    between, the row is still in the buffer and re-linking replaces its graph."""
    stamp = now()
    by_id = {r["id"]: r for r in rows}
    extraction_of = dict(
        zip(
            [d.id for d in decisions if d.decision == "promote"],
            extractions,
            strict=True,
        )
    )
    updated, trashed = [], []
    for d in decisions:
        row = by_id[d.id]
        if d.decision == "promote":
            note_extraction(engine, scope, d.id, extraction_of[d.id])
            checked = linkage.check(extraction_of[d.id])
            observed = row.get("observed_at") or row["created_at"]
            stats = await engine.graph.put(scope, d.id, checked, row["created_at"], observed)
            await engine.graph.supersede(
                scope, d.id, checked.relations, observed, engine._functional
            )
            if report is not None:
                report.triples_added += stats.added
                report.triples_reinforced += stats.reinforced
            row["entities"] = list(
                dict.fromkeys([*(row.get("entities") or []), *(e.name for e in checked.entities)])
            )
        else:
            trashed.append(d.id)
        row.update(
            tier="longterm" if d.decision == "promote" else "trash",
            prev_tier="buffer",
            replay_score=d.replay_score,
            decision_reason=d.reason,
            tier_changed_at=stamp,
        )
        updated.append(row)
    if trashed:
        # A graph left by a crash between linking and moving the row must not outlive it.
        await engine.graph.retract(scope, trashed)
    await engine.episodic.upsert(updated)
    if report is not None:
        report.promoted += sum(d.decision == "promote" for d in decisions)
        report.pruned += len(trashed)


async def consolidate(
    engine: MemoryEngine,
    scope: str | None = None,
    dry_run: bool = False,
    trigger: str = "on_demand",
    progress: Progress | None = None,
) -> ConsolidationReport:
    """Replay every buffer item of ``scope`` (or of all scopes): promote or trash. Each step
    done is told to ``progress`` (see :class:`Steps`), outside the scope locks."""
    started = time.perf_counter()
    if scope is not None:
        check_scope(scope)
        scopes = [scope]
    else:
        census = await engine.episodic.census()
        scopes = sorted({s for s, _t in census} | set(engine._writes_since))
    report = ConsolidationReport(scope=scope, dry_run=dry_run, trigger=trigger)
    per_scope = _DRY_SCOPE_STEPS if dry_run else _SCOPE_STEPS
    steps = Steps(progress, len(scopes) * per_scope + (0 if dry_run else 2) + 1)
    await engine._flush_recalled(None if scope is None else [scope])
    budget = engine.settings.ollama.max_calls_per_consolidation
    async with engine._consolidation_lock:
        with metered(budget) as meter:
            for s in scopes:
                await _consolidate_scope(engine, s, dry_run, report, steps)
        report.llm_calls = meter.calls
        report.llm_prompt_tokens = meter.prompt_tokens
        report.llm_completion_tokens = meter.completion_tokens
        report.llm_fallbacks = meter.fallbacks
        if not dry_run:
            pruned = report.pruned
            for s in scopes:
                await _prune_longterm(engine, s, report)
            await steps.step(f"pruned {report.pruned - pruned} long-term memories past the bound")
            report.purged += await _purge_expired_trash(engine, scopes)
            # In proportion to what changed (EpisodicStore.maintenance_due), not every run.
            await engine.episodic.maintain(force=trigger == "on_demand")
            await steps.step(f"purged {report.purged} expired trash items")
    report.took_ms = round((time.perf_counter() - started) * 1000, 2)
    report.finished_at = now()
    if not dry_run:
        for s in scopes:
            engine.state.reports[s] = report
        await engine._save_state()
    await steps.step(
        f"done: replayed {report.replayed}, promoted {report.promoted}, pruned {report.pruned}"
    )
    return report


async def _consolidate_scope(
    engine: MemoryEngine, scope: str, dry_run: bool, report: ConsolidationReport, steps: Steps
) -> None:
    # Only what earlier runs queued is re-extracted: a fallback of this run waits for the
    # next one, so a model that just failed is not asked again at once.
    queued = list(engine.state.reextract.get(scope, []))
    if not dry_run:
        await _retag(engine, scope, report)
    await _replay_scope(engine, scope, dry_run, report, steps)
    if not dry_run and queued:
        await _reextract(engine, scope, queued, report)


async def _replay_scope(
    engine: MemoryEngine, scope: str, dry_run: bool, report: ConsolidationReport, steps: Steps
) -> None:
    async with engine._lock(scope):
        rows = await engine.episodic.scope_rows(scope, ("buffer",), vectors=True)
        if not dry_run:
            engine._writes_since[scope] = 0
            engine._last_consolidation[scope] = time.monotonic()
    left = _DRY_SCOPE_STEPS if dry_run else _SCOPE_STEPS
    if not rows:
        await steps.step(f"{scope}: nothing in the buffer to replay", count=left)
        return
    await steps.step(f"{scope}: {len(rows)} in the buffer to replay")
    decisions = await _decide(engine, scope, rows, rows)
    report.replayed += len(rows)
    report.decisions += decisions
    promote = sum(d.decision == "promote" for d in decisions)
    await steps.step(
        f"{scope}: scored {len(rows)}: {promote} to promote, {len(rows) - promote} to trash"
    )
    if dry_run:
        report.promoted += promote
        report.pruned += len(rows) - promote
        return
    added = report.triples_added
    ids = {r["id"] for r in rows}
    engine._claimed |= ids
    linked: list[str] = []
    try:
        promoted = [r for r, d in zip(rows, decisions, strict=True) if d.decision == "promote"]
        # The model call happens outside the scope lock: writes go on meanwhile.
        extractions = await engine.extractor.extract([r["content"] for r in promoted])
        extraction_of = {r["id"]: e for r, e in zip(promoted, extractions, strict=True)}
        async with engine._lock(scope):
            # Re-read: an item may have been forgotten, evicted, merged into or recalled
            # meanwhile. Decisions apply to the items still in the buffer, as they are now.
            fresh = {r["id"]: r for r in await engine.episodic.get(sorted(ids), vectors=True)
                     if r["tier"] == "buffer"}  # fmt: skip
            keep = [d for d in decisions if d.id in fresh]
            linked = [d.id for d in keep if d.decision == "promote"]
            await _apply(
                engine,
                scope,
                [fresh[d.id] for d in keep],
                keep,
                [extraction_of[d.id] for d in keep if d.decision == "promote"],
                report,
            )
    finally:
        engine._claimed -= ids
    await steps.step(
        f"{scope}: linked {len(linked)} memories into the graph "
        f"({report.triples_added - added} facts added)"
    )
    await embed_new_facts(engine, scope, linked)


def note_extraction(engine: MemoryEngine, scope: str, memory_id: str, extraction: Any) -> None:
    """Queue a memory linked by the heuristic fallback for re-extraction by the LLM."""
    if engine._llm_extractor and extraction.extracted_by == HeuristicExtractor.name:
        pending = engine.state.reextract.setdefault(scope, [])
        if memory_id not in pending:
            pending.append(memory_id)


async def _retag(engine: MemoryEngine, scope: str, report: ConsolidationReport) -> None:
    """Re-tag memories that the heuristic tagger tagged because the LLM failed: buffer
    items first (their replay depends on it), then long-term ones (their decay weight
    does), so an item that left the buffer during an outage is still re-tagged later.
    Uses at most half of the run's call budget; stops at the first renewed failure."""
    if not engine._llm_tagger:
        return
    async with engine._lock(scope):
        rows = await engine.episodic.scope_rows(scope, ("buffer",))
        rows += await engine.episodic.scope_rows(scope, ("longterm",))
    for row in (r for r in rows if r.get("tagged_by") == HeuristicTagger.name):
        meter = current_meter()
        if meter is not None and meter.limit is not None and meter.calls * 2 >= meter.limit:
            return
        # The heuristic stored novelty as its surprise signal.
        novelty = float(row.get("surprise") or 0.0)
        tagging = await engine.tagger.tag(row["content"], row.get("goal") or "", novelty)
        if tagging.tagged_by == HeuristicTagger.name:
            return
        u = tagging.utility
        async with engine._lock(scope):
            await engine.episodic.update(
                [row["id"]],
                {
                    "importance": u.importance,
                    "surprise": u.surprise,
                    "emotion": u.emotion,
                    "base_utility": u.base,
                    "tagged_by": tagging.tagged_by,
                },
            )
        report.retagged += 1


async def _reextract(
    engine: MemoryEngine, scope: str, pending: list[str], report: ConsolidationReport
) -> None:
    """Re-link long-term memories whose extraction fell back to the heuristics."""
    if not engine._llm_extractor:
        return
    rows = [r for r in await engine.episodic.get(pending) if r["scope"] == scope]
    todo = [r for r in rows if r["tier"] == "longterm"]
    extractions = await engine.extractor.extract([r["content"] for r in todo]) if todo else []
    done: set[str] = set()
    async with engine._lock(scope):
        current = {r["id"]: r for r in await engine.episodic.get([r["id"] for r in todo])}
        for row, extraction in zip(todo, extractions, strict=True):
            now_row = current.get(row["id"])
            if extraction.extracted_by == HeuristicExtractor.name or now_row is None:
                continue
            if now_row["tier"] != "longterm":
                continue
            await engine.graph.put(scope, row["id"], linkage.check(extraction), row["created_at"])
            done.add(row["id"])
    # Trashed ones stay queued (a restore may bring them back); purged ones are dropped.
    gone = {i for i in pending if i not in {r["id"] for r in rows}} | done
    left = [i for i in engine.state.reextract.get(scope, []) if i not in gone]
    if left:
        engine.state.reextract[scope] = left
    else:
        engine.state.reextract.pop(scope, None)
    report.reextracted += len(done)
    await embed_new_facts(engine, scope, sorted(done))


async def embed_new_facts(engine: MemoryEngine, scope: str, memory_ids: list[str]) -> None:
    """Embed the facts just linked here, off the read path: a recall scores the facts it
    reaches by cosine to the query and finds their vectors in the engine's cache instead of
    embedding them itself. Best effort: a fact the cache lost is embedded by the recall."""
    if not memory_ids:
        return
    facts = await engine.graph.memory_facts(scope, memory_ids)
    texts = list(dict.fromkeys(fact_text(f) for f in facts))[:FACTS_EMBEDDED_PER_RUN]
    try:
        await engine._cached.embed(texts)
    except (BackendUnavailable, ModelOutputError) as exc:
        logger.info("facts of scope %s not embedded ahead (%s): recall will embed them", scope, exc)


async def _prune_longterm(engine: MemoryEngine, scope: str, report: ConsolidationReport) -> None:
    """Keep long-term memory bounded: past ``longterm_capacity`` the weakest go to the
    trash. Weight = BaseUtility x decay(time since last written, merged or recalled),
    lifted by recalls, so what is old and unused goes first; restore brings it back. Pinned
    memories are never pruned (so pinning more than the bound lets it grow)."""
    t = engine.settings.temporal
    async with engine._lock(scope):
        if await engine.episodic.count(scope, ("longterm",)) <= t.longterm_capacity:
            return  # the common case, answered without reading the rows
        rows = await engine.episodic.scope_rows(scope, ("longterm",))
        excess = len(rows) - t.longterm_capacity
        rows = [r for r in rows if not r.get("pinned")]  # pinned: forget only, never decay
        excess = min(excess, len(rows))
        if excess <= 0:
            return
        clock = now()

        def weight(row: dict[str, Any]) -> float:
            times = (row.get("last_access"), row.get("tier_changed_at"), row["created_at"])
            last = max(x for x in times if x is not None)
            recalls = 1.0 + 0.1 * min(10, int(row.get("access_count") or 0))
            return (
                float(row.get("base_utility") or 0.0)
                * decay(clock - last, t.half_life_days)
                * recalls
            )

        weakest = sorted(rows, key=weight)[:excess]
        weights = {r["id"]: weight(r) for r in weakest}
        ids = list(weights)
        await engine.graph.deactivate(scope, ids)
        full = await engine.episodic.get(ids, vectors=True)
        for row in full:
            reason = (
                f"decayed: weight {weights[row['id']]:.3f} is among the {excess} weakest of "
                f"{len(rows)} long-term memories (bound {t.longterm_capacity})"
            )
            row.update(tier="trash", prev_tier="longterm", tier_changed_at=clock,
                       decision_reason=reason)  # fmt: skip
            report.decisions.append(
                Decision(
                    id=row["id"],
                    replay_score=round(weights[row["id"]], 4),
                    decision="trash",
                    reason=reason,
                )  # fmt: skip
            )
        await engine.episodic.upsert(full)
        report.pruned += len(full)


async def _purge_expired_trash(engine: MemoryEngine, scopes: list[str]) -> int:
    days = engine.settings.consolidation.trash_retention_days
    cutoff = now() - timedelta(days=days)
    purged = 0
    for scope in scopes:
        async with engine._lock(scope):
            old = await engine.episodic.trashed_before(scope, cutoff)
            if old:
                await engine.graph.retract(scope, old, purge=True)
                await engine.episodic.delete(old)
                purged += len(old)
    if purged:
        await engine.episodic.purge_history()
    return purged
