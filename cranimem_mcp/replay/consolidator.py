"""Consolidation runs (paper B.3): replay the buffer, promote or trash, link what is
promoted into the graph; keep long-term memory bounded; purge expired trash; redo the work
the heuristics did while the LLM was down (re-tagging, re-extraction).

A :class:`Consolidator` owns this and its state: the items a run has claimed, the writes
since each scope's last run (the every-N-writes and idle-timer triggers), and the overflow
eviction that keeps the buffer bounded. It is handed its stores, models, locks, background
owner and state keeper by the engine. The scores themselves are pure functions in
:mod:`cranimem_mcp.replay.score`.

Runs and evictions hold the consolidation lease (:mod:`.lease`; always held on one machine).
Without it a background run is skipped (the next trigger tries again), an explicit one is
LeaseHeld; a run that loses it stops at its next commit (LeaseLost): graph commits are
fenced by the server, LanceDB ones checked just before.

The buffer is hard-bounded: after a write or a restore (under the scope lock) a scope's
buffer holds at most ``capacity`` items, those claimed by a running consolidation
included. Claimed items stay until their run applies its decisions, so the oldest free
items make room, through replay (promoted or trashed), never silently dropped. With
background work, a write that fills the buffer returns first and a background task makes
room for the next writes, a batch at once (:data:`ROOM_SHARE`); a write finding the buffer
still full evicts inline, so the bound never waits on the background. A process killed
between a write and its eviction left one item too many: the engine restores the bound at
open (:meth:`Consolidator.keep_bounds`), before it serves a call.
"""

from __future__ import annotations

import logging
import time
from contextlib import nullcontext
from dataclasses import dataclass, replace
from typing import Any

import anyio

from cranimem_mcp.backends.embeddings import EmbeddingCache
from cranimem_mcp.backends.llm import Extractor, Tagger, current_meter, metered
from cranimem_mcp.buffer.episodic import EpisodicStore
from cranimem_mcp.conversation.threads import Thread
from cranimem_mcp.coordination import Background, RecallCounts, ScopeLocks, StateKeeper
from cranimem_mcp.errors import (
    BackendUnavailable,
    LeaseHeld,
    LeaseLost,
    ModelOutputError,
    StoreError,
)
from cranimem_mcp.extraction import linkage
from cranimem_mcp.extraction.extractor import HeuristicExtractor
from cranimem_mcp.gate.tagger import HeuristicTagger
from cranimem_mcp.graph.lease import Lease
from cranimem_mcp.graph.store import GraphStore
from cranimem_mcp.models import ConsolidationReport, Decision, Memory, fact_text
from cranimem_mcp.naming import canonical_name
from cranimem_mcp.replay import score as consolidation
from cranimem_mcp.replay.progress import Progress, Steps
from cranimem_mcp.replay.pruning import prune_longterm, purge_expired_trash
from cranimem_mcp.validation import check_scope, now

logger = logging.getLogger(__name__)

# Facts embedded ahead per consolidation run and scope (the engine's cache keeps 4,096).
FACTS_EMBEDDED_PER_RUN = 1024

# A full buffer is made room in by this share of its capacity at once (at least one item),
# after the write that filled it has its answer. Why: one replay per batch instead of one
# per write, off the write's path (measured in docs/RESULTS.md, "Speed, memory and disk").
ROOM_SHARE = 0.1

# After the lease refuses a background eviction or maintenance (another replica holds it),
# background attempts pause this long. Why: a replica that is not the holder would otherwise
# ask the lease's server once per write; the holder's runs keep the bound and the table.
REFUSED_PAUSE_SECONDS = 30.0

# Steps of a run: per scope, claim, score and link (dry run: claim and score); then, when
# applied, prune and purge; then the summary. The total is known before the first step.
_SCOPE_STEPS = 3
_DRY_SCOPE_STEPS = 2


@dataclass(frozen=True)
class ConsolidationPolicy:
    """The settings values a consolidator works by (the engine reads them from Settings)."""

    capacity: int  # of each scope's buffer
    replay: consolidation.ReplayParams
    functional: frozenset[str]  # single-valued predicates: a new object ends the old fact
    longterm_capacity: int
    half_life_days: float
    trash_retention_days: float
    max_model_calls: int | None  # per run
    every_n_writes: int  # 0: no every-N-writes trigger
    interval_seconds: float  # idle timer: at most this often per scope
    idle_seconds: float  # ... once a scope has been quiet this long


class Consolidator:
    """Replays buffers into long-term memory or the trash; see the module docstring."""

    def __init__(
        self,
        *,
        episodic: EpisodicStore,
        graph: GraphStore,
        tagger: Tagger,
        extractor: Extractor,
        policy: ConsolidationPolicy,
        locks: ScopeLocks,
        background: Background,
        keeper: StateKeeper,
        cached: EmbeddingCache,
        recalls: RecallCounts,
        lease: Lease,
        thread: Thread,
    ) -> None:
        self.episodic, self.graph, self.thread = episodic, graph, thread
        self.lease = lease
        self.tagger, self.extractor = tagger, extractor
        self.policy = policy
        self.locks, self.background, self.keeper = locks, background, keeper
        self.cached, self.recalls = cached, recalls
        # With an LLM tagger/extractor, items that fell back to the heuristics (tagged_by /
        # extracted_by "heuristic") are redone at a later consolidation.
        self.llm_tagger = tagger.name != HeuristicTagger.name
        self.llm_extractor = extractor.name != HeuristicExtractor.name
        self.heuristic_extractor = HeuristicExtractor()
        self._claimed: set[str] = set()  # buffer items a running consolidation has read
        self._writes_since: dict[str, int] = {}
        self._last_write: dict[str, float] = {}
        self._last_consolidation: dict[str, float] = {}
        self._pending: set[str] = set()  # scopes with a background run queued or running
        self._making_room: set[str] = set()  # scopes with a background eviction queued
        self._maintaining = False  # a background table maintenance queued or running
        self._refused_until = 0.0  # monotonic: background eviction and maintenance pause

    # --- triggers ------------------------------------------------------------------------

    def note_write(self, scope: str) -> None:
        """Count a write; every ``every_n_writes`` writes start a background run."""
        self._last_write[scope] = time.monotonic()
        self._writes_since[scope] = self._writes_since.get(scope, 0) + 1
        n = self.policy.every_n_writes
        due = n > 0 and self._writes_since[scope] >= n
        if self.background.enabled and due and scope not in self._pending:
            self._pending.add(scope)
            self.background.spawn(self._run_in_background, scope, "every_n_writes")

    async def after_write(self, scope: str, size: int | None) -> None:
        """What a write leaves for after its answer (outside the scope lock): with
        background work, make room in a buffer it filled (``size``: the buffer's size it
        left, None if it stored nothing) and maintain the table when due, both as background
        tasks; without, maintain here (:meth:`maintain_inline`)."""
        if not self.background.enabled:
            await self.maintain_inline()
            return
        if time.monotonic() < self._refused_until:
            return
        if size is not None and size >= self.policy.capacity and scope not in self._making_room:
            self._making_room.add(scope)
            self.background.spawn(self._make_room, scope)
        self.maintain_when_due()

    def maintain_when_due(self) -> None:
        """Start the table's maintenance in the background if it is due and none runs (and
        no other process's lease paused it)."""
        if time.monotonic() < self._refused_until or not self.background.enabled:
            return
        if not self._maintaining and self.episodic.maintenance_due():
            # Why: a server whose buffers overflow before any run (every_n_writes = 0, a slow
            # timer) maintained only at the end of runs: 600 writes left 1,122 versions.
            self._maintaining = True
            self.background.spawn(self._maintain_in_background)

    async def maintain_inline(self) -> None:
        """Without background work (a one-shot command, ``background=False``) the write that
        makes maintenance due runs it (:meth:`EpisodicStore.maintenance_due` counts earlier
        processes' commits too); never waiting, as a run in progress maintains at its end.
        Why: 400 one-shot writes left 595 versions, 24.5 MB, 674 ms a write (RESULTS.md)."""
        busy = self.locks.consolidation.locked()  # no await before it is taken below
        if self.background.enabled or busy or not self.episodic.maintenance_due():
            return
        await self._maintain()

    async def _maintain_in_background(self) -> None:
        try:
            await self._maintain()
        finally:
            self._maintaining = False

    async def _maintain(self) -> None:
        try:
            async with self.locks.consolidation, self.lease.hold("maintenance"):
                await self.episodic.maintain(force=False)  # a run may have done it meanwhile
        except (LeaseHeld, LeaseLost) as exc:  # the holder's own runs maintain the table
            self._refused_until = time.monotonic() + REFUSED_PAUSE_SECONDS
            logger.info("table maintenance left to the lease's holder: %s", exc)
        except StoreError as exc:  # the write is committed: tell it stored, retry next write
            logger.warning("table maintenance failed, retried on a later write: %s", exc)

    async def schedule(self) -> None:
        """Idle-timer consolidation: a scope with new writes is consolidated once it has
        been idle for ``idle_seconds``, at most every ``interval_seconds``."""
        p = self.policy
        tick = max(0.5, min(p.idle_seconds or 1.0, p.interval_seconds) / 2)
        while True:
            await anyio.sleep(tick)
            clock = time.monotonic()
            for scope, count in list(self._writes_since.items()):
                if count <= 0 or scope in self._pending:
                    continue
                idle = clock - self._last_write.get(scope, 0.0) >= p.idle_seconds
                due = clock - self._last_consolidation.get(scope, 0.0) >= p.interval_seconds
                if idle and due:
                    self._pending.add(scope)
                    self.background.spawn(self._run_in_background, scope, "timer")

    async def _run_in_background(self, scope: str, trigger: str) -> None:
        try:
            await self.run(scope, trigger=trigger)
        except LeaseHeld as exc:  # another replica consolidates: it replays this buffer too
            logger.info("background consolidation of %s skipped: %s", scope, exc)
        except LeaseLost as exc:
            logger.warning("background consolidation of %s stopped: %s", scope, exc)
        finally:
            self._pending.discard(scope)

    # --- the bound -------------------------------------------------------------------------

    async def evict_overflow(self, scope: str, size: int | None = None) -> list[Decision]:
        """Past ``capacity`` buffer items (claimed ones counted), the oldest free items go
        through replay now (promoted or trashed), the newest write among them if nothing
        older is free. Claimed items stay: their run applies its decisions to them. Called
        under the scope lock; ``size``: the buffer's size if the caller just counted it."""
        capacity = self.policy.capacity
        if size is None:
            size = await self.episodic.count(scope, ("buffer",))
        if size <= capacity:
            return []  # the common case, answered by the working set
        try:
            return await self._evict(scope, capacity, "overflow")
        except (LeaseHeld, LeaseLost) as exc:
            # Why: eviction promotes, which only the lease's holder may do. The holder's next
            # run replays the whole buffer, so the bound is restored there; the write stands.
            logger.info("buffer of %s over capacity, left to the lease's holder: %s", scope, exc)
            return []

    async def _make_room(self, scope: str) -> None:
        """In the background, after the write that filled the buffer: replay its oldest
        free items down to ``capacity`` less a batch (:data:`ROOM_SHARE`), so the next
        writes find room without evicting."""
        try:
            capacity = self.policy.capacity
            keep = capacity - max(1, int(capacity * ROOM_SHARE))
            async with self.locks.scope(scope):
                if await self.episodic.count(scope, ("buffer",)) >= capacity:
                    await self._evict(scope, keep, "room")
        except (LeaseHeld, LeaseLost) as exc:  # as in evict_overflow; and pause the retries
            self._refused_until = time.monotonic() + REFUSED_PAUSE_SECONDS
            logger.info("room in %s's buffer left to the lease's holder: %s", scope, exc)
        finally:
            self._making_room.discard(scope)

    async def _evict(self, scope: str, keep: int, trigger: str) -> list[Decision]:
        """Replay the oldest free buffer items of ``scope`` until ``keep`` remain (claimed
        ones counted), under the scope lock; raises LeaseHeld or LeaseLost."""
        async with self.lease.hold(trigger):
            rows = await self.episodic.scope_rows(scope, ("buffer",), vectors=True)
            free = [r for r in rows if r.id not in self._claimed]
            # More claimed items than capacity only if the capacity was lowered since they
            # were written: every free item goes, and the bound holds once the run ends.
            excess = min(len(rows) - keep, len(free))
            if excess <= 0:
                return []
            return await self.replay(scope, free[:excess], all_rows=rows, trigger=trigger)

    async def keep_bounds(self) -> dict[str, int]:
        """At open, before any call: a process killed between a write and its eviction
        left a buffer past ``capacity`` (as did a capacity lowered since); its oldest items
        go through replay now. Returns how many left each such scope."""
        census = await self.episodic.census(("buffer",))  # reads the buffers' rows only
        capacity, out = self.policy.capacity, {}
        for (scope, _tier), n in sorted(census.items()):
            if n > capacity:
                async with self.locks.scope(scope):
                    out[scope] = len(await self.evict_overflow(scope))
        return out

    # --- replay ---------------------------------------------------------------------------

    async def replay(
        self,
        scope: str,
        rows: list[Memory],
        *,
        all_rows: list[Memory],
        trigger: str,
        report: ConsolidationReport | None = None,
    ) -> list[Decision]:
        """Decide and apply replay for ``rows`` (buffer items of ``scope``), under its lock."""
        decisions = await self._decide(scope, rows, all_rows)
        promoted = [r for r, d in zip(rows, decisions, strict=True) if d.decision == "promote"]
        # Why: this runs inside remember, under the scope lock; an LLM call here would hold
        # the write for seconds. The heuristics link it now, the LLM redoes it later.
        extractions = await self.heuristic_extractor.extract([r.content for r in promoted])
        await self._apply(scope, rows, decisions, extractions, report)
        if promoted and self.llm_extractor:
            await self.keeper.save()
        if promoted and self.background.enabled:  # after the write returns, not on its path
            self.background.spawn(self.embed_new_facts, scope, [r.id for r in promoted])
        return decisions

    async def _decide(
        self, scope: str, rows: list[Memory], all_rows: list[Memory]
    ) -> list[Decision]:
        counts = consolidation.entity_counts(all_rows)
        names = {canonical_name(e) for r in rows for e in r.entities or []}
        support = await self.graph.entity_support(scope, names)
        return consolidation.decide(
            rows, buffer_counts=counts, graph_support=support, params=self.policy.replay
        )

    async def _apply(
        self,
        scope: str,
        rows: list[Memory],
        decisions: list[Decision],
        extractions: list[Any],
        report: ConsolidationReport | None,
    ) -> None:
        """Link promoted memories into the graph first, then move the rows: after a crash in
        between, the row is still in the buffer and re-linking replaces its graph. Called
        under the scope lock (an eviction's replay)."""
        entities = await self._link(scope, rows, decisions, extractions, report)
        await self._move(scope, rows, decisions, entities, report)

    async def _link(
        self,
        scope: str,
        rows: list[Memory],
        decisions: list[Decision],
        extractions: list[Any],
        report: ConsolidationReport | None,
    ) -> dict[str, list[str]]:
        """Link the promoted ones of ``rows`` into the graph (their facts, and what their
        single-valued facts end); returns each one's entity names, its own and the
        extraction's. Touches the graph only: a run calls it outside the scope lock."""
        by_id = {r.id: r for r in rows}
        promoted = [d.id for d in decisions if d.decision == "promote"]
        entities: dict[str, list[str]] = {}
        for memory_id, extraction in zip(promoted, extractions, strict=True):
            memory = by_id[memory_id]
            self.note_extraction(scope, memory_id, extraction)
            checked = linkage.check(extraction)
            observed = memory.happened_at
            async with self.graph.reading():  # one check for both (over SPARQL)
                stats = await self.graph.put(scope, memory_id, checked, memory.created_at, observed)
                await self.graph.supersede(
                    scope, memory_id, checked.relations, observed, self.policy.functional
                )
            if report is not None:
                report.triples_added += stats.added
                report.triples_reinforced += stats.reinforced
            names = [*(memory.entities or []), *(e.name for e in checked.entities)]
            entities[memory_id] = list(dict.fromkeys(names))
        return entities

    async def _move(
        self,
        scope: str,
        rows: list[Memory],
        decisions: list[Decision],
        entities: dict[str, list[str]],
        report: ConsolidationReport | None,
    ) -> None:
        """Move ``rows`` (as they are now) to long-term memory (the promoted, with their
        ``entities``) or the trash, in one commit, under the scope lock."""
        stamp = now()
        by_id = {r.id: r for r in rows}
        updated, trashed = [], []
        for d in decisions:
            memory = by_id[d.id]
            if d.decision == "promote":
                memory = replace(memory, entities=entities[d.id])
            else:
                trashed.append(d.id)
            tier = "longterm" if d.decision == "promote" else "trash"
            updated.append(memory.moved(tier, stamp, d.reason, replay_score=d.replay_score))
        if trashed:  # a graph left by a crash between linking and moving must not outlive it
            await self.graph.retract(scope, trashed)
        await self.lease.check(server=True)  # the table's commit is checked, not fenced
        await self.episodic.upsert(updated)
        promoted = " ".join(d.id for d in decisions if d.decision == "promote") or "none"
        logger.info("promoted by %s: %s", self.lease.holder, promoted)  # read by the proof
        if report is not None:
            report.promoted += sum(d.decision == "promote" for d in decisions)
            report.pruned += len(trashed)

    async def run(
        self,
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
            census = await self.episodic.census()
            scopes = sorted({s for s, _t in census} | set(self._writes_since))
        report = ConsolidationReport(scope=scope, dry_run=dry_run, trigger=trigger)
        per_scope = _DRY_SCOPE_STEPS if dry_run else _SCOPE_STEPS
        steps = Steps(progress, len(scopes) * per_scope + (0 if dry_run else 2) + 1)
        await self.recalls.flush(None if scope is None else [scope])
        budget = self.policy.max_model_calls
        held = nullcontext() if dry_run else self.lease.hold(trigger)  # a dry run changes nothing
        async with self.locks.consolidation, held as fence:
            token = getattr(fence, "token", None)
            logger.info("consolidation started by %s (%s, token %s)", self.lease.holder, trigger,
                        token)  # fmt: skip
            with metered(budget) as meter:
                for s in scopes:
                    await self._consolidate_scope(s, dry_run, report, steps)
            report.llm_calls = meter.calls
            report.llm_prompt_tokens = meter.prompt_tokens
            report.llm_completion_tokens = meter.completion_tokens
            report.llm_fallbacks = meter.fallbacks
            if not dry_run:
                pruned = report.pruned
                for s in scopes:  # the lease is checked before each batch it moves
                    await prune_longterm(
                        self.episodic,
                        self.graph,
                        self.locks.scope(s),
                        s,
                        self.policy.longterm_capacity,
                        self.policy.half_life_days,
                        report,
                        before_commit=lambda: self.lease.check(server=True),
                    )
                await steps.step(
                    f"pruned {report.pruned - pruned} long-term memories past the bound"
                )
                await self.lease.check(server=True)
                days = self.policy.trash_retention_days
                report.purged += await purge_expired_trash(
                    self.episodic, self.graph, self.locks, self.thread, scopes, days
                )
                # In proportion to what changed (EpisodicStore.maintenance_due), not every run.
                await self.episodic.maintain(force=trigger == "on_demand")
                await steps.step(f"purged {report.purged} expired trash items")
            logger.info("consolidation finished by %s (%s, token %s)", self.lease.holder, trigger,
                        token)  # fmt: skip
        report.took_ms = round((time.perf_counter() - started) * 1000, 2)
        report.finished_at = now()
        if not dry_run:
            for s in scopes:
                self.keeper.state.reports[s] = report
            await self.keeper.save()
        await steps.step(
            f"done: replayed {report.replayed}, promoted {report.promoted}, pruned {report.pruned}"
        )
        return report

    async def _consolidate_scope(
        self, scope: str, dry_run: bool, report: ConsolidationReport, steps: Steps
    ) -> None:
        # Only what earlier runs queued is re-extracted: a fallback of this run waits for the
        # next one, so a model that just failed is not asked again at once.
        queued = list(self.keeper.state.reextract.get(scope, []))
        if not dry_run:
            await self._retag(scope, report)
        await self._replay_scope(scope, dry_run, report, steps)
        if not dry_run and queued:
            await self._reextract(scope, queued, report)

    async def _replay_scope(
        self, scope: str, dry_run: bool, report: ConsolidationReport, steps: Steps
    ) -> None:
        async with self.locks.scope(scope):
            read = self.episodic.rewrites  # rows as read here, until a change is counted
            rows = await self.episodic.scope_rows(scope, ("buffer",), vectors=True)
            if not dry_run:
                self._writes_since[scope] = 0
                self._last_consolidation[scope] = time.monotonic()
        left = _DRY_SCOPE_STEPS if dry_run else _SCOPE_STEPS
        if not rows:
            await steps.step(f"{scope}: nothing in the buffer to replay", count=left)
            return
        await steps.step(f"{scope}: {len(rows)} in the buffer to replay")
        decisions = await self._decide(scope, rows, rows)
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
        ids = {r.id for r in rows}
        self._claimed |= ids
        linked: list[str] = []
        try:
            promoted = [r for r, d in zip(rows, decisions, strict=True) if d.decision == "promote"]
            # The model call happens outside the scope lock: writes go on meanwhile.
            extractions = await self.extractor.extract([r.content for r in promoted])
            extraction_of = {r.id: e for r, e in zip(promoted, extractions, strict=True)}
            # Forget and restore wait on the linking lock, so no item changes tier from here
            # to the move (an eviction skips claimed items); writes take the scope lock only
            # and go on while the graph work runs. Why: linking ~20 memories held the scope
            # lock ~40-100 ms, the long tail of a server's writes (docs/RESULTS.md).
            async with self.locks.linking(scope):
                # An item may have been forgotten or evicted before the claim held them.
                async with self.locks.scope(scope):
                    still = {e.id for e in await self.episodic.live_rows(scope, ("buffer",))}
                keep = [d for d in decisions if d.id in still]
                linked = [d.id for d in keep if d.decision == "promote"]
                by_id = {r.id: r for r in rows}
                entities = await self._link(
                    scope,
                    [by_id[d.id] for d in keep],
                    keep,
                    [extraction_of[i] for i in linked],
                    report,
                )
                # The decisions apply to the items as they are now: an item may have been
                # merged into or recalled since the first read. Re-read only then, and
                # outside the scope lock unless a change comes after that too.
                if read is None or self.episodic.rewrites != read:
                    read = self.episodic.rewrites
                    rows = await self.episodic.get(sorted(ids), vectors=True)
                async with self.locks.scope(scope):
                    if read is None or self.episodic.rewrites != read:
                        rows = await self.episodic.get(sorted(ids), vectors=True)
                    fresh = {r.id: r for r in rows if r.id in ids and r.tier == "buffer"}
                    gone = [i for i in linked if i not in fresh]
                    if gone:  # never, while the claim and the linking lock hold; a graph
                        await self.graph.retract(scope, gone)  # never outlives its memory
                    keep = [d for d in keep if d.id in fresh]
                    linked = [d.id for d in keep if d.decision == "promote"]
                    await self._move(scope, [fresh[d.id] for d in keep], keep, entities, report)
        finally:
            self._claimed -= ids
        await steps.step(
            f"{scope}: linked {len(linked)} memories into the graph "
            f"({report.triples_added - added} facts added)"
        )
        await self.embed_new_facts(scope, linked)

    def note_extraction(self, scope: str, memory_id: str, extraction: Any) -> None:
        """Queue a memory linked by the heuristic fallback for re-extraction by the LLM."""
        if self.llm_extractor and extraction.extracted_by == HeuristicExtractor.name:
            pending = self.keeper.state.reextract.setdefault(scope, [])
            if memory_id not in pending:
                pending.append(memory_id)

    async def _retag(self, scope: str, report: ConsolidationReport) -> None:
        """Re-tag memories that the heuristic tagger tagged because the LLM failed: buffer
        items first (their replay depends on it), then long-term ones (their decay weight
        does), so an item that left the buffer during an outage is still re-tagged later.
        Uses at most half of the run's call budget; stops at the first renewed failure."""
        if not self.llm_tagger:
            return
        async with self.locks.scope(scope):
            rows = await self.episodic.scope_rows(scope, ("buffer",))
            rows += await self.episodic.scope_rows(scope, ("longterm",))
        for row in (r for r in rows if r.tagged_by == HeuristicTagger.name):
            meter = current_meter()
            if meter is not None and meter.limit is not None and meter.calls * 2 >= meter.limit:
                return
            # The heuristic stored novelty as its surprise signal.
            novelty = float(row.surprise or 0.0)
            tagging = await self.tagger.tag(row.content, row.goal or "", novelty)
            if tagging.tagged_by == HeuristicTagger.name:
                return
            u = tagging.utility
            await self.lease.check()
            async with self.locks.scope(scope):
                await self.episodic.update(
                    [row.id],
                    {
                        "importance": u.importance,
                        "surprise": u.surprise,
                        "emotion": u.emotion,
                        "base_utility": u.base,
                        "tagged_by": tagging.tagged_by,
                    },
                )
            report.retagged += 1

    async def _reextract(self, scope: str, pending: list[str], report: ConsolidationReport) -> None:
        """Re-link long-term memories whose extraction fell back to the heuristics."""
        if not self.llm_extractor:
            return
        rows = [r for r in await self.episodic.get(pending) if r.scope == scope]
        todo = [r for r in rows if r.tier == "longterm"]
        extractions = await self.extractor.extract([r.content for r in todo]) if todo else []
        done: set[str] = set()
        async with self.locks.scope(scope):
            current = {r.id: r for r in await self.episodic.get([r.id for r in todo])}
            for row, extraction in zip(todo, extractions, strict=True):
                now_row = current.get(row.id)
                if extraction.extracted_by == HeuristicExtractor.name or now_row is None:
                    continue
                if now_row.tier != "longterm":
                    continue
                await self.graph.put(scope, row.id, linkage.check(extraction), row.created_at)
                done.add(row.id)
        # Trashed ones stay queued (a restore may bring them back); purged ones are dropped.
        gone = {i for i in pending if i not in {r.id for r in rows}} | done
        left = [i for i in self.keeper.state.reextract.get(scope, []) if i not in gone]
        if left:
            self.keeper.state.reextract[scope] = left
        else:
            self.keeper.state.reextract.pop(scope, None)
        report.reextracted += len(done)
        await self.embed_new_facts(scope, sorted(done))

    async def embed_new_facts(self, scope: str, memory_ids: list[str]) -> None:
        """Embed the facts just linked here, off the read path: a recall scores the facts it
        reaches by cosine to the query and finds their vectors in the engine's cache instead of
        embedding them itself. Best effort: a fact the cache lost is embedded by the recall."""
        if not memory_ids:
            return
        facts = await self.graph.memory_facts(scope, memory_ids)
        texts = list(dict.fromkeys(fact_text(f) for f in facts))[:FACTS_EMBEDDED_PER_RUN]
        try:
            await self.cached.embed(texts)
        except (BackendUnavailable, ModelOutputError) as exc:
            logger.info(
                "facts of scope %s not embedded ahead (%s): recall will embed them", scope, exc
            )
