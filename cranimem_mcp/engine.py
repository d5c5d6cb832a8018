"""MemoryEngine: the CraniMem pipeline behind one async facade.

    remember ─► gate (B.1) ─► episodic buffer (B.2) ─► replay (B.3) ─┬► linkage ─► graph (B.4)
                                                                      └► trash
    recall ──► episodic path + graph path ─► one context block (B.5)

It is the only core module that sees :class:`Settings`. Writes to a scope are serialised by
that scope's lock and never wait on a model call made by a running consolidation: replay
reads the buffer under the lock, extracts outside it, and applies its decisions under the
lock again to the items still in the buffer. Consolidations never overlap. Background work
(every-N-writes and idle-timer consolidation) lives in the engine's task group.
"""

from __future__ import annotations

import logging
import re
import time
import uuid
from contextlib import AsyncExitStack
from datetime import UTC, datetime, timedelta
from hashlib import sha256
from typing import Any

import anyio
import numpy as np

from . import consolidation, gating, linkage, retrieval
from .config import Settings
from .embeddings import Embedder, EmbeddingCache, LocalEmbedder
from .episodic import EpisodicStore
from .errors import ConfigError, InvalidInput, NotFound, StoreError
from .graph import GraphStore
from .heuristics import HeuristicExtractor, HeuristicTagger, canonical_name
from .llm import Extractor, Tagger, current_meter, metered
from .models import (
    MEMORY_ID_RE,
    SCOPE_RE,
    BufferInfo,
    ConsolidationReport,
    Decision,
    ForgetResult,
    GoalResult,
    RecallResult,
    RememberResult,
    RestoreResult,
    ScopeStats,
    Stats,
    Utility,
)
from .state import EngineState, load_state, save_state
from .temporal import decay, observed_at

logger = logging.getLogger(__name__)

MAX_CONTENT = 32_000
MAX_TAGS = 32
RECALL_FLUSH_SECONDS = 1.0  # recall counts are written in one batch this long after
PATHS = ("episodic", "graph")


def now() -> datetime:
    return datetime.now(UTC)


def content_hash(content: str) -> str:
    return sha256(" ".join(content.casefold().split()).encode("utf-8")).hexdigest()


def new_id() -> str:
    return "m_" + uuid.uuid4().hex[:20]


def _check_scope(scope: str) -> str:
    if not isinstance(scope, str) or not SCOPE_RE.match(scope):
        raise InvalidInput(
            f"invalid scope {scope[:80]!r}: use 1-64 characters of [A-Za-z0-9_.:-]"
            if isinstance(scope, str)
            else "scope must be a string"
        )
    return scope


def _check_text(name: str, value: str, max_len: int) -> str:
    if not isinstance(value, str):
        raise InvalidInput(f"{name} must be a string")
    if "\x00" in value:
        raise InvalidInput(f"{name} must not contain NUL characters")
    try:
        # Lone surrogates: what Python makes of invalid UTF-8 on the command line, and what
        # a JSON "\\ud800" escape decodes to. No store can hold them.
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InvalidInput(
            f"{name} is not valid UTF-8 text (a lone surrogate at position {exc.start})"
        ) from exc
    if not value.strip():
        raise InvalidInput(f"{name} must not be empty")
    if len(value) > max_len:
        raise InvalidInput(f"{name} is {len(value)} characters; the limit is {max_len}")
    return value.strip()


def _check_time(value: str | datetime) -> datetime:
    if isinstance(value, datetime):
        when = value
    else:
        try:
            when = datetime.fromisoformat(str(value).strip().replace("Z", "+00:00"))
        except ValueError as exc:
            raise InvalidInput(f"as_of must be an ISO 8601 date or time, got {value!r}") from exc
    return when if when.tzinfo else when.replace(tzinfo=UTC)


def _check_ids(ids: list[str]) -> list[str]:
    bad = [i for i in ids if not isinstance(i, str) or not MEMORY_ID_RE.match(i)]
    if bad:
        raise InvalidInput(f"invalid memory id {str(bad[0])[:80]!r}: ids look like m_ + 20 hex")
    return list(dict.fromkeys(ids))


class MemoryEngine:
    """Open with ``async with MemoryEngine(settings) as engine``."""

    def __init__(
        self,
        settings: Settings,
        *,
        embedder: Embedder | None = None,
        tagger: Tagger | None = None,
        extractor: Extractor | None = None,
        background: bool = True,
        model_notes: dict[str, str] | None = None,
    ) -> None:
        self.settings = settings
        self.home = settings.home
        self.embedder = embedder or LocalEmbedder(
            settings.models.embedder_model, settings.models.torch_threads
        )
        self.tagger = tagger or HeuristicTagger()
        self.extractor = extractor or HeuristicExtractor()
        # With an LLM tagger/extractor, items that fell back to the heuristics (tagged_by /
        # extracted_by "heuristic") are redone at a later consolidation.
        self._llm_tagger = self.tagger.name != HeuristicTagger.name
        self._llm_extractor = self.extractor.name != HeuristicExtractor.name
        self._heuristic_extractor = HeuristicExtractor()
        self._model_notes = dict(model_notes or {})  # why each model was chosen (stats)
        self._background = background
        e = settings.episodic
        self.episodic = EpisodicStore(
            e.uri or self.home / "episodic",
            self.embedder.dim,
            e.storage_options,
            e.working_set_rows,
        )
        if settings.graph.store == "sparql":
            from .sparql import SparqlDataset

            g = settings.graph
            self.graph = GraphStore(store=SparqlDataset(g.query_endpoint, g.update_endpoint))
        else:
            self.graph = GraphStore(self.home / "graph")
        self._state_path = self.home / "state.json"
        self._functional = frozenset(settings.temporal.functional_predicates)
        self.state = EngineState()
        self._scope_locks: dict[str, anyio.Lock] = {}
        self._consolidation_lock = anyio.Lock()
        self._state_lock = anyio.Lock()
        self._claimed: set[str] = set()
        # Goals and graph facts recur from call to call: embed each text once.
        self._cached = EmbeddingCache(self.embedder)
        self._state_dirty = False
        self._writes_since: dict[str, int] = {}
        self._last_write: dict[str, float] = {}
        self._last_consolidation: dict[str, float] = {}
        self._pending: set[str] = set()
        self._recalled: dict[str, dict[str, int]] = {}  # scope -> id -> recalls not written
        self._recalled_at: dict[str, datetime] = {}
        self._recall_flush_due = False
        self._busy = 0
        self._idle = anyio.Event()
        self._idle.set()
        self._stack: AsyncExitStack | None = None
        self._tg: Any = None

    # --- lifecycle -------------------------------------------------------------------------

    async def __aenter__(self) -> MemoryEngine:
        self.home.mkdir(parents=True, exist_ok=True, mode=0o700)
        self.home.chmod(0o700)
        logger.info("data directory %s", self.home)
        self.state = await anyio.to_thread.run_sync(load_state, self._state_path)
        self._check_embedder()
        await self.episodic.open()
        await self.graph.open()
        async with AsyncExitStack() as stack:
            self._tg = await stack.enter_async_context(anyio.create_task_group())
            stack.push_async_callback(self.graph.close)
            if self._background and self.settings.consolidation.interval_seconds > 0:
                self._tg.start_soon(self._scheduler)
            self._stack = stack.pop_all()
        await self._save_state()
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._stack is not None
        self._tg.cancel_scope.cancel()
        with anyio.CancelScope(shield=True):
            await self._flush_recalled()
        await self._stack.__aexit__(None, None, None)
        if self._state_dirty:
            self._state_dirty = False
            await self._save_state()

    def _check_embedder(self) -> None:
        """Vector spaces never mix: a store remembers the embedder that filled it."""
        current = {"id": self.embedder.id, "dim": self.embedder.dim}
        known = self.state.embedder
        if known is None:
            self.state.embedder = current
        elif known != current:
            raise ConfigError(
                f"the data directory {self.home} was filled by embedder {known['id']} "
                f"({known['dim']}-d); refusing to open it with {current['id']} "
                f"({current['dim']}-d). Use the original embedder or another data directory."
            )

    async def _save_state(self) -> None:
        async with self._state_lock:
            await anyio.to_thread.run_sync(save_state, self._state_path, self.state)

    def _save_state_soon(self) -> None:
        """Counters (turn ids, rejected writes) are saved within a moment, not on every write:
        they are bookkeeping, not memories, and a crash can at worst lose the last increments.
        Goals and consolidation reports are saved at once."""
        if self._state_dirty or self._tg is None:
            return
        self._state_dirty = True

        async def flush() -> None:
            await anyio.sleep(0.5)
            self._state_dirty = False
            await self._save_state()

        self._tg.start_soon(flush)

    def _lock(self, scope: str) -> anyio.Lock:
        return self._scope_locks.setdefault(scope, anyio.Lock())

    def goal_of(self, scope: str) -> str:
        return self.state.goals.get(scope, self.settings.gating.default_goal)

    async def _goal_vector(self, goal: str) -> np.ndarray:
        return (await self._cached.embed([goal]))[0]

    # --- remember --------------------------------------------------------------------------

    async def remember(
        self,
        content: str,
        scope: str = "default",
        goal: str | None = None,
        source: str | None = None,
        tags: list[str] | None = None,
    ) -> RememberResult:
        content = _check_text("content", content, MAX_CONTENT)
        scope = _check_scope(scope)
        goal = _check_text("goal", goal, 2000) if goal is not None else self.goal_of(scope)
        source = _check_text("source", source, 200) if source is not None else None
        tags = [_check_text("tag", t, 64) for t in (tags or [])]
        if len(tags) > MAX_TAGS:
            raise InvalidInput(f"at most {MAX_TAGS} tags")
        capacity = self.settings.episodic.capacity
        digest = content_hash(content)

        # The duplicate check, embedding, gate and tags run outside the scope lock, so a slow
        # model call never holds up other writes; the lock covers check-again-and-insert.
        prepared = None
        if await self.episodic.find_hash(scope, digest) is None:
            prepared = await self._prepare(content, scope, goal)
            if isinstance(prepared, RememberResult):
                return prepared
        async with self._lock(scope):
            existing = await self.episodic.find_hash(scope, digest)
            if existing is not None:
                return await self._merge(existing, scope, tags, capacity)
            if prepared is None:  # the duplicate went away meanwhile (forgotten): start over
                prepared = await self._prepare(content, scope, goal)
                if isinstance(prepared, RememberResult):
                    return prepared
            vector, rel, decision, tagging = prepared
            utility = tagging.utility
            quick = linkage.quick(content)  # cheap, so it runs on every write
            entities = [e.name for e in quick.entities]
            turn = self.state.turns.get(scope, 0) + 1
            self.state.turns[scope] = turn
            stamp = now()
            observed = observed_at(content) or stamp
            memory_id = new_id()
            await self.episodic.add(
                [
                    {
                        "id": memory_id,
                        "scope": scope,
                        "tier": "buffer",
                        "content": content,
                        "content_hash": digest,
                        "vector": vector.tolist(),
                        "created_at": stamp,
                        "observed_at": observed,
                        "turn": turn,
                        "entities": entities,
                        "importance": utility.importance,
                        "surprise": utility.surprise,
                        "emotion": utility.emotion,
                        "base_utility": utility.base,
                        "relevance": rel,
                        "goal": goal,
                        "source": source,
                        "tags": tags,
                        "access_count": 0,
                        "last_access": None,
                        "frequency": 1,
                        "tagged_by": tagging.tagged_by,
                        "gate_reason": decision.reason,
                        "replay_score": None,
                        "decision_reason": None,
                        "prev_tier": None,
                        "tier_changed_at": stamp,
                    }
                ]
            )
            self._save_state_soon()
            # A new object for a single-valued relation ends the old fact now, so the agent
            # can confirm the change with the user (and recall stops offering the old one).
            superseded = await self.graph.supersede(
                scope,
                memory_id,
                quick.relations,
                observed,
                self._functional,
                await self._unlinked_relations(scope, quick.relations),
            )
            evicted = await self._evict_overflow(scope, capacity)
            size = await self.episodic.count(scope, ("buffer",))
        logger.info("stored %s in %s relevance=%.3f base=%.3f", memory_id, scope, rel, utility.base)
        self._note_write(scope)
        return RememberResult(
            status="stored",
            id=memory_id,
            relevance=round(rel, 4),
            threshold=self.settings.gating.tau_noise,
            utility=utility,
            entities=entities,
            tagged_by=tagging.tagged_by,
            reason=decision.reason,
            buffer=BufferInfo(size=size, capacity=capacity),
            scope=scope,
            evicted=evicted,
            superseded=superseded,
            observed_at=observed,
        )

    async def _unlinked_relations(
        self, scope: str, relations: list[Any]
    ) -> list[tuple[Any, str, datetime]]:
        """Single-valued facts stated by buffer items (not linked into the graph yet), so a
        change is caught even before consolidation. Only read when the write has one."""
        if not any(r.predicate in self._functional or r.functional for r in relations):
            return []
        out = []
        for row in await self.episodic.live_rows(scope, ("buffer",)):
            when = row.get("observed_at") or row["created_at"]
            for rel in linkage.quick(row["content"]).relations:
                if rel.predicate in self._functional:
                    out.append((rel, row["id"], when))
        return out

    async def _prepare(
        self, content: str, scope: str, goal: str
    ) -> RememberResult | tuple[np.ndarray, float, gating.GateDecision, Any]:
        """Embed, gate and tag a write: a rejected result, or what the insert needs."""
        vectors = await self.embedder.embed([content])
        vector, goal_vector = vectors[0], await self._goal_vector(goal)
        rel = gating.relevance(vector, goal_vector)
        near = await self.episodic.nearest(scope, vector, ("buffer", "longterm"), 1)
        nearest = near[0]["similarity"] if near else -1.0
        g = self.settings.gating
        decision = await gating.gate(
            content,
            goal,
            relevance=rel,
            nearest=nearest,
            tau_noise=g.tau_noise,
            tau_context=g.tau_context,
            second_look=g.second_look,
            tagger=self.tagger,
        )
        if not decision.keep:
            self.state.rejected[scope] = self.state.rejected.get(scope, 0) + 1
            self._save_state_soon()
            logger.info("rejected write to %s relevance=%.3f", scope, rel)
            size = await self.episodic.count(scope, ("buffer",))
            return RememberResult(
                status="rejected",
                relevance=round(rel, 4),
                threshold=g.tau_noise,
                reason=decision.reason,
                buffer=BufferInfo(size=size, capacity=self.settings.episodic.capacity),
                scope=scope,
            )
        # Surprise is novelty: 1 - the closest stored memory's similarity (paper B.1).
        tagging = await self.tagger.tag(content, goal, 1.0 - max(0.0, nearest))
        return vector, rel, decision, tagging

    async def _merge(
        self, row: dict[str, Any], scope: str, tags: list[str], capacity: int
    ) -> RememberResult:
        """An exact repeat strengthens the memory it repeats instead of storing a copy."""
        row["frequency"] = int(row.get("frequency") or 1) + 1
        row["tags"] = list(dict.fromkeys([*(row.get("tags") or []), *tags]))
        row["last_access"] = now()
        await self.episodic.upsert([row])
        size = await self.episodic.count(scope, ("buffer",))
        self._note_write(scope)
        return RememberResult(
            status="merged",
            id=row["id"],
            relevance=round(float(row.get("relevance") or 0.0), 4),
            threshold=self.settings.gating.tau_noise,
            utility=Utility(
                importance=row["importance"],
                surprise=row["surprise"],
                emotion=row["emotion"],
                base=row["base_utility"],
            ),
            entities=list(row.get("entities") or []),
            tagged_by=row.get("tagged_by"),
            reason=f"exact repeat of {row['id']}: frequency is now {row['frequency']}",
            buffer=BufferInfo(size=size, capacity=capacity),
            scope=scope,
        )

    async def _evict_overflow(self, scope: str, capacity: int) -> list[Decision]:
        """The buffer never holds more than ``capacity`` items: the oldest go through replay
        now (promoted or trashed), never silently away. Items a running consolidation has
        claimed are already in replay and leaving, so they do not count. Called under the
        scope lock."""
        if await self.episodic.count(scope, ("buffer",)) <= capacity:
            return []  # the common case, answered by the scope/tier indexes
        rows = await self.episodic.scope_rows(scope, ("buffer",), vectors=True)
        free = [r for r in rows if r["id"] not in self._claimed]
        excess = len(free) - capacity
        if excess <= 0:
            return []
        return await self._replay(scope, free[:excess], all_rows=rows, trigger="overflow")

    def _note_write(self, scope: str) -> None:
        self._last_write[scope] = time.monotonic()
        self._writes_since[scope] = self._writes_since.get(scope, 0) + 1
        n = self.settings.consolidation.every_n_writes
        if self._background and n and self._writes_since[scope] >= n and scope not in self._pending:
            self._pending.add(scope)
            self._spawn(self._consolidate_bg, scope, "every_n_writes")

    def _spawn(self, fn: Any, *args: Any) -> None:
        self._busy += 1
        self._idle = anyio.Event() if self._idle.is_set() else self._idle

        async def run() -> None:
            try:
                await fn(*args)
            except Exception:
                logger.exception("background task %s failed", getattr(fn, "__name__", fn))
            finally:
                self._busy -= 1
                if self._busy == 0:
                    self._idle.set()

        self._tg.start_soon(run)

    async def wait_idle(self) -> None:
        """Wait until background consolidations started so far have finished."""
        await self._idle.wait()

    async def _consolidate_bg(self, scope: str, trigger: str) -> None:
        try:
            await self.consolidate(scope, trigger=trigger)
        finally:
            self._pending.discard(scope)

    async def _scheduler(self) -> None:
        """Idle-timer consolidation: a scope with new writes is consolidated once it has
        been idle for ``idle_seconds``, at most every ``interval_seconds``."""
        c = self.settings.consolidation
        tick = max(0.5, min(c.idle_seconds or 1.0, c.interval_seconds) / 2)
        while True:
            await anyio.sleep(tick)
            clock = time.monotonic()
            for scope, count in list(self._writes_since.items()):
                if count <= 0 or scope in self._pending:
                    continue
                idle = clock - self._last_write.get(scope, 0.0) >= c.idle_seconds
                due = clock - self._last_consolidation.get(scope, 0.0) >= c.interval_seconds
                if idle and due:
                    self._pending.add(scope)
                    self._spawn(self._consolidate_bg, scope, "timer")

    # --- replay and consolidation ----------------------------------------------------------

    async def _replay(
        self,
        scope: str,
        rows: list[dict[str, Any]],
        *,
        all_rows: list[dict[str, Any]],
        trigger: str,
        report: ConsolidationReport | None = None,
    ) -> list[Decision]:
        """Decide and apply replay for ``rows`` (buffer items of ``scope``). The caller holds
        the scope lock."""
        decisions = await self._decide(scope, rows, all_rows)
        promoted = [r for r, d in zip(rows, decisions, strict=True) if d.decision == "promote"]
        # Why: this runs inside remember, under the scope lock; an LLM call here would hold
        # the write for seconds. The heuristics link it now, the LLM redoes it later.
        extractions = await self._heuristic_extractor.extract([r["content"] for r in promoted])
        await self._apply(scope, rows, decisions, extractions, report)
        if promoted and self._llm_extractor:
            await self._save_state()
        return decisions

    async def _decide(
        self, scope: str, rows: list[dict[str, Any]], all_rows: list[dict[str, Any]]
    ) -> list[Decision]:
        counts = consolidation.entity_counts(all_rows)
        names = {canonical_name(e) for r in rows for e in r.get("entities") or []}
        support = await self.graph.entity_support(scope, names)
        c = self.settings.consolidation
        params = consolidation.ReplayParams(c.tau_consolidation, c.alpha, c.freq_cap)
        return consolidation.decide(
            rows, buffer_counts=counts, graph_support=support, params=params
        )

    async def _apply(
        self,
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
                self._note_extraction(scope, d.id, extraction_of[d.id])
                checked = linkage.check(extraction_of[d.id])
                observed = row.get("observed_at") or row["created_at"]
                stats = await self.graph.put(scope, d.id, checked, row["created_at"], observed)
                await self.graph.supersede(
                    scope, d.id, checked.relations, observed, self._functional
                )
                if report is not None:
                    report.triples_added += stats.added
                    report.triples_reinforced += stats.reinforced
                row["entities"] = list(
                    dict.fromkeys(
                        [*(row.get("entities") or []), *(e.name for e in checked.entities)]
                    )
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
            await self.graph.retract(scope, trashed)
        await self.episodic.upsert(updated)
        if report is not None:
            report.promoted += sum(d.decision == "promote" for d in decisions)
            report.pruned += len(trashed)

    async def consolidate(
        self, scope: str | None = None, dry_run: bool = False, trigger: str = "on_demand"
    ) -> ConsolidationReport:
        """Replay every buffer item of ``scope`` (or of all scopes): promote or trash."""
        started = time.perf_counter()
        if scope is not None:
            _check_scope(scope)
            scopes = [scope]
        else:
            census = await self.episodic.census()
            scopes = sorted({s for s, _t in census} | set(self._writes_since))
        report = ConsolidationReport(scope=scope, dry_run=dry_run, trigger=trigger)
        await self._flush_recalled(None if scope is None else [scope])
        budget = self.settings.ollama.max_calls_per_consolidation
        async with self._consolidation_lock:
            with metered(budget) as meter:
                for s in scopes:
                    await self._consolidate_scope(s, dry_run, report)
            report.llm_calls = meter.calls
            report.llm_prompt_tokens = meter.prompt_tokens
            report.llm_completion_tokens = meter.completion_tokens
            report.llm_fallbacks = meter.fallbacks
            if not dry_run:
                for s in scopes:
                    await self._prune_longterm(s, report)
                report.purged += await self._purge_expired_trash(scopes)
                await self.episodic.maintain()
        report.took_ms = round((time.perf_counter() - started) * 1000, 2)
        report.finished_at = now()
        if not dry_run:
            for s in scopes:
                self.state.reports[s] = report
            await self._save_state()
        return report

    async def _consolidate_scope(
        self, scope: str, dry_run: bool, report: ConsolidationReport
    ) -> None:
        # Only what earlier runs queued is re-extracted: a fallback of this run waits for the
        # next one, so a model that just failed is not asked again at once.
        queued = list(self.state.reextract.get(scope, []))
        if not dry_run:
            await self._retag(scope, report)
        await self._replay_scope(scope, dry_run, report)
        if not dry_run and queued:
            await self._reextract(scope, queued, report)

    async def _replay_scope(self, scope: str, dry_run: bool, report: ConsolidationReport) -> None:
        async with self._lock(scope):
            rows = await self.episodic.scope_rows(scope, ("buffer",), vectors=True)
            if not dry_run:
                self._writes_since[scope] = 0
                self._last_consolidation[scope] = time.monotonic()
        if not rows:
            return
        decisions = await self._decide(scope, rows, rows)
        report.replayed += len(rows)
        report.decisions += decisions
        if dry_run:
            report.promoted += sum(d.decision == "promote" for d in decisions)
            report.pruned += sum(d.decision == "trash" for d in decisions)
            return
        ids = {r["id"] for r in rows}
        self._claimed |= ids
        try:
            promoted = [r for r, d in zip(rows, decisions, strict=True) if d.decision == "promote"]
            # The model call happens outside the scope lock: writes go on meanwhile.
            extractions = await self.extractor.extract([r["content"] for r in promoted])
            extraction_of = {r["id"]: e for r, e in zip(promoted, extractions, strict=True)}
            async with self._lock(scope):
                # Re-read: an item may have been forgotten, evicted, merged into or recalled
                # meanwhile. Decisions apply to the items still in the buffer, as they are now.
                fresh = {r["id"]: r for r in await self.episodic.get(sorted(ids), vectors=True)
                         if r["tier"] == "buffer"}  # fmt: skip
                keep = [d for d in decisions if d.id in fresh]
                await self._apply(
                    scope,
                    [fresh[d.id] for d in keep],
                    keep,
                    [extraction_of[d.id] for d in keep if d.decision == "promote"],
                    report,
                )
        finally:
            self._claimed -= ids

    def _note_extraction(self, scope: str, memory_id: str, extraction: Any) -> None:
        """Queue a memory linked by the heuristic fallback for re-extraction by the LLM."""
        if self._llm_extractor and extraction.extracted_by == HeuristicExtractor.name:
            pending = self.state.reextract.setdefault(scope, [])
            if memory_id not in pending:
                pending.append(memory_id)

    async def _retag(self, scope: str, report: ConsolidationReport) -> None:
        """Re-tag memories that the heuristic tagger tagged because the LLM failed: buffer
        items first (their replay depends on it), then long-term ones (their decay weight
        does), so an item that left the buffer during an outage is still re-tagged later.
        Uses at most half of the run's call budget; stops at the first renewed failure."""
        if not self._llm_tagger:
            return
        async with self._lock(scope):
            rows = await self.episodic.scope_rows(scope, ("buffer",))
            rows += await self.episodic.scope_rows(scope, ("longterm",))
        for row in (r for r in rows if r.get("tagged_by") == HeuristicTagger.name):
            meter = current_meter()
            if meter is not None and meter.limit is not None and meter.calls * 2 >= meter.limit:
                return
            # The heuristic stored novelty as its surprise signal.
            novelty = float(row.get("surprise") or 0.0)
            tagging = await self.tagger.tag(row["content"], row.get("goal") or "", novelty)
            if tagging.tagged_by == HeuristicTagger.name:
                return
            u = tagging.utility
            async with self._lock(scope):
                await self.episodic.update(
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

    async def _reextract(self, scope: str, pending: list[str], report: ConsolidationReport) -> None:
        """Re-link long-term memories whose extraction fell back to the heuristics."""
        if not self._llm_extractor:
            return
        rows = [r for r in await self.episodic.get(pending) if r["scope"] == scope]
        todo = [r for r in rows if r["tier"] == "longterm"]
        extractions = await self.extractor.extract([r["content"] for r in todo]) if todo else []
        done: set[str] = set()
        async with self._lock(scope):
            current = {r["id"]: r for r in await self.episodic.get([r["id"] for r in todo])}
            for row, extraction in zip(todo, extractions, strict=True):
                now_row = current.get(row["id"])
                if extraction.extracted_by == HeuristicExtractor.name or now_row is None:
                    continue
                if now_row["tier"] != "longterm":
                    continue
                await self.graph.put(scope, row["id"], linkage.check(extraction), row["created_at"])
                done.add(row["id"])
        # Trashed ones stay queued (a restore may bring them back); purged ones are dropped.
        gone = {i for i in pending if i not in {r["id"] for r in rows}} | done
        left = [i for i in self.state.reextract.get(scope, []) if i not in gone]
        if left:
            self.state.reextract[scope] = left
        else:
            self.state.reextract.pop(scope, None)
        report.reextracted += len(done)

    async def _prune_longterm(self, scope: str, report: ConsolidationReport) -> None:
        """Keep long-term memory bounded: past ``longterm_capacity`` the weakest go to the
        trash. Weight = BaseUtility x decay(time since last written, merged or recalled),
        lifted by recalls, so what is old and unused goes first; restore brings it back."""
        t = self.settings.temporal
        async with self._lock(scope):
            if await self.episodic.count(scope, ("longterm",)) <= t.longterm_capacity:
                return  # the common case, answered without reading the rows
            rows = await self.episodic.scope_rows(scope, ("longterm",))
            excess = len(rows) - t.longterm_capacity
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
            await self.graph.deactivate(scope, ids)
            full = await self.episodic.get(ids, vectors=True)
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
            await self.episodic.upsert(full)
            report.pruned += len(full)

    async def _purge_expired_trash(self, scopes: list[str]) -> int:
        days = self.settings.consolidation.trash_retention_days
        cutoff = now() - timedelta(days=days)
        purged = 0
        for scope in scopes:
            async with self._lock(scope):
                old = await self.episodic.trashed_before(scope, cutoff)
                if old:
                    await self.graph.retract(scope, old, purge=True)
                    await self.episodic.delete(old)
                    purged += len(old)
        if purged:
            await self.episodic.purge_history()
        return purged

    # --- recall ----------------------------------------------------------------------------

    async def recall(
        self,
        query: str,
        scope: str = "default",
        k: int | None = None,
        max_chars: int | None = None,
        paths: list[str] | None = None,
        as_of: str | datetime | None = None,
        all_scopes: bool = False,
    ) -> RecallResult:
        """Dual-path recall. ``as_of`` (ISO 8601) recalls what was known to hold then:
        facts valid at that time and memories of events up to it. ``all_scopes`` searches
        every scope (``scope`` is then ignored) and keeps the best ``k`` memories overall;
        each item names its scope."""
        started = time.perf_counter()
        query = _check_text("query", query, MAX_CONTENT)
        scope = _check_scope(scope)
        r = self.settings.retrieval
        k = r.k if k is None else k
        max_chars = r.max_chars if max_chars is None else max_chars
        if not 1 <= k <= 50:
            raise InvalidInput("k must be between 1 and 50")
        if max_chars < 200:
            raise InvalidInput("max_chars must be at least 200")
        paths = list(PATHS) if paths is None else paths
        if not paths or any(p not in PATHS for p in paths):
            raise InvalidInput(f"paths must be a non-empty subset of {list(PATHS)}")

        when = _check_time(as_of) if as_of is not None else None

        qvec = (await self.embedder.embed([query]))[0]
        scopes = [scope]
        if all_scopes:
            scopes = sorted({s for s, _t in await self.episodic.census()}) or [scope]
        items: list[Any] = []
        facts: list[Any] = []
        for s in scopes:
            found = []
            if "episodic" in paths:
                found = await retrieval.episodic_path(self.episodic, s, query, qvec, k, when)
            if found:
                await self._mark_outdated(s, found, when or now())
            for it in found:
                it.scope = s
            items += found
            if "graph" in paths:
                seeds = [it.content for it in found[:3]]
                facts += await retrieval.graph_path(
                    self.graph, self._cached, s, query, qvec, seeds, r.hops, r.max_facts,
                    as_of=when, half_life_days=self.settings.temporal.half_life_days,
                )  # fmt: skip
        if len(scopes) > 1:  # one budget across scopes: the best overall
            items = sorted(items, key=lambda it: -it.score)[:k]
            facts = sorted(facts, key=lambda f: -f.score)[: r.max_facts]
        context, items, facts = retrieval.render(items, facts, max_chars, r.min_score)
        for s in scopes:
            self._note_recalled(s, [it.id for it in items if it.scope == s])
        return RecallResult(
            context=context,
            items=items,
            facts=facts,
            took_ms=round((time.perf_counter() - started) * 1000, 2),
        )

    def _note_recalled(self, scope: str, ids: list[str]) -> None:
        """Count recalls (the replay score's frequency bonus, the decay weight) in memory;
        they are written in one update per scope a moment later, before any consolidation
        reads them, and at close, so a recall never waits on a commit. A crash can lose
        the last moment's counts: they are soft signals, not memories."""
        if not ids:
            return
        pending = self._recalled.setdefault(scope, {})
        for memory_id in ids:
            pending[memory_id] = pending.get(memory_id, 0) + 1
        self._recalled_at[scope] = now()
        if self._background and self._tg is not None and not self._recall_flush_due:
            self._recall_flush_due = True

            async def later() -> None:
                await anyio.sleep(RECALL_FLUSH_SECONDS)
                self._recall_flush_due = False
                await self._flush_recalled()

            self._tg.start_soon(later)

    async def _flush_recalled(self, scopes: list[str] | None = None) -> None:
        for scope in list(self._recalled) if scopes is None else scopes:
            if not self._recalled.get(scope):
                continue
            # Under the scope lock: never between a locked read and its upsert. Shielded:
            # counts taken from the queue are written, not dropped by a cancellation.
            with anyio.CancelScope(shield=True):
                async with self._lock(scope):
                    pending = self._recalled.pop(scope, {})
                    by_count: dict[int, list[str]] = {}
                    for memory_id, n in pending.items():
                        by_count.setdefault(n, []).append(memory_id)
                    try:
                        for n, ids in by_count.items():
                            await self.episodic.touch(ids, self._recalled_at[scope], n)
                    except StoreError as exc:
                        logger.warning("recall counts of %s not written: %s", scope, exc)

    async def _mark_outdated(self, scope: str, items: list[Any], when: datetime) -> None:
        """A memory whose every fact has since changed ("In 2014 I moved to Oslo", once the
        user moved on) is kept but counts half and is labelled "previously", like its facts."""
        memories = {}
        for it in items:
            observed = it.observed_at or it.created_at
            if it.tier == "longterm":
                memories[it.id] = (observed, None)
            else:
                relations = linkage.quick(it.content).relations
                memories[it.id] = (observed, relations)
        stale = await self.graph.outdated(scope, memories, when)
        for it in items:
            if it.id in stale:
                it.superseded = True
                it.score = round(it.score * 0.5, 4)
        items.sort(key=lambda it: -it.score)

    # --- forget and restore ----------------------------------------------------------------

    async def forget(
        self,
        ids: list[str] | None = None,
        entity: str | None = None,
        scope: str = "default",
        all_in_scope: bool = False,
        hard: bool = False,
        dry_run: bool = False,
    ) -> ForgetResult:
        scope = _check_scope(scope)
        ids = _check_ids(ids or [])
        if entity is not None:
            entity = _check_text("entity", entity, 500)
        if not ids and entity is None and not all_in_scope:
            raise InvalidInput("say what to forget: ids, an entity, or all_in_scope=true")
        tiers = ("buffer", "longterm", "trash") if hard else ("buffer", "longterm")
        async with self._lock(scope):
            rows = await self.episodic.scope_rows(scope, tiers)
            by_id = {r["id"]: r for r in rows}
            missing = [i for i in ids if i not in by_id]
            if missing:
                raise NotFound(f"no memory {missing[0]} in scope {scope!r} (tiers {list(tiers)})")
            chosen = set(ids)
            if all_in_scope:
                chosen |= set(by_id)
            if entity is not None:
                chosen |= self._mentioning(rows, entity)
                chosen |= await self.graph.memories_mentioning(scope, entity) & set(by_id)
            chosen_rows = [by_id[i] for i in sorted(chosen)]
            facts = await self.graph.orphaned_by(scope, sorted(chosen))
            if dry_run or not chosen_rows:
                return ForgetResult(
                    forgotten=len(chosen_rows),
                    ids=[r["id"] for r in chosen_rows],
                    facts_removed=facts,
                    hard=hard,
                    dry_run=dry_run,
                )
            chosen_ids = [r["id"] for r in chosen_rows]
            if hard:
                await self.graph.retract(scope, chosen_ids, purge=True)
                await self.episodic.delete(chosen_ids)
                await self.episodic.purge_history()
            else:
                await self.graph.deactivate(scope, chosen_ids)
                stamp = now()
                for row in chosen_rows:
                    row.update(
                        prev_tier=row["tier"],
                        tier="trash",
                        tier_changed_at=stamp,
                        decision_reason="forgotten by request",
                    )
                full = await self.episodic.get(chosen_ids, vectors=True)
                for row in full:
                    row.update({k: by_id[row["id"]][k] for k in (
                        "prev_tier", "tier", "tier_changed_at", "decision_reason")})  # fmt: skip
                await self.episodic.upsert(full)
        logger.info("forgot %d memories in %s (hard=%s)", len(chosen_ids), scope, hard)
        return ForgetResult(
            forgotten=len(chosen_ids), ids=chosen_ids, facts_removed=facts, hard=hard
        )

    @staticmethod
    def _mentioning(rows: list[dict[str, Any]], entity: str) -> set[str]:
        key = canonical_name(entity)
        pattern = re.compile(rf"(?<!\w){re.escape(' '.join(entity.split()))}(?!\w)", re.I)
        return {
            r["id"]
            for r in rows
            if key in {canonical_name(e) for e in r.get("entities") or []}
            or pattern.search(r["content"])
        }

    async def restore(self, ids: list[str], scope: str = "default") -> RestoreResult:
        """Bring trashed memories back: forgotten ones to the tier they were in, replay-pruned
        ones to long-term memory (the user overrules the replay decision) and linked."""
        scope = _check_scope(scope)
        ids = _check_ids(ids)
        if not ids:
            raise InvalidInput("give the ids to restore")
        async with self._lock(scope):
            rows = await self.episodic.get(ids, vectors=True)
            found = {r["id"]: r for r in rows if r["scope"] == scope and r["tier"] == "trash"}
            missing = [i for i in ids if i not in found]
            if missing:
                raise NotFound(f"no trashed memory {missing[0]} in scope {scope!r}")
            stamp = now()
            relink = []
            for row in found.values():
                pruned = row.get("decision_reason") != "forgotten by request"
                target = "longterm" if pruned else (row.get("prev_tier") or "buffer")
                row.update(
                    tier=target,
                    prev_tier="trash",
                    tier_changed_at=stamp,
                    decision_reason="restored by request",
                )
                if target == "longterm":
                    relink.append(row)
            await self.graph.activate(scope, [r["id"] for r in relink])
            for row in relink:
                if not await self.graph.has_memory(scope, row["id"]):
                    (extraction,) = await self.extractor.extract([row["content"]])
                    self._note_extraction(scope, row["id"], extraction)
                    await self.graph.put(scope, row["id"], linkage.check(extraction), stamp)
            await self.episodic.upsert(list(found.values()))
            await self._evict_overflow(scope, self.settings.episodic.capacity)
        return RestoreResult(restored=len(found), ids=list(found))

    # --- goals and stats -------------------------------------------------------------------

    async def set_goal(self, goal: str, scope: str = "default") -> GoalResult:
        goal = _check_text("goal", goal, 2000)
        scope = _check_scope(scope)
        self.state.goals[scope] = goal
        await self._save_state()
        return GoalResult(scope=scope, goal=goal)

    async def stats(self) -> Stats:
        census = await self.episodic.census()
        facts = await self.graph.count_facts()
        scopes = sorted(
            {s for s, _ in census} | set(self.state.goals) | set(self.state.rejected) | set(facts)
        )
        return Stats(
            data_dir=str(self.home),
            models={
                "embedder": self.embedder.id,
                "tagger": self.tagger.name,
                "extractor": self.extractor.name,
                **{f"{role}_reason": why for role, why in self._model_notes.items()},
            },
            scopes=[
                ScopeStats(
                    scope=s,
                    goal=self.goal_of(s),
                    buffer_size=census.get((s, "buffer"), 0),
                    buffer_capacity=self.settings.episodic.capacity,
                    longterm=census.get((s, "longterm"), 0),
                    trash=census.get((s, "trash"), 0),
                    facts=facts.get(s, 0),
                    rejected_writes=self.state.rejected.get(s, 0),
                    last_consolidation=self.state.reports.get(s),
                )
                for s in scopes
            ],
            fallbacks=self._fallback_counts(),
        )

    def _fallback_counts(self) -> dict[str, int]:
        """Model calls the heuristics answered instead (by kind), and work queued for redo."""
        counts: dict[str, int] = {}
        found = (getattr(getattr(x, "backend", None), "usage", None) for x in (
            self.tagger, self.extractor))  # fmt: skip
        usages = {id(u): u for u in found if u is not None}
        for usage in usages.values():
            for kind, n in usage.fallbacks.items():
                counts[kind] = counts.get(kind, 0) + n
        pending = sum(len(ids) for ids in self.state.reextract.values())
        if pending:
            counts["pending_reextract"] = pending
        return counts

    async def check(self) -> list[str]:
        """Check that the two stores agree; returns the problems found (none: empty list).

        Every long-term memory has its graph provenance; every graph belongs to a memory that
        still exists (so no fact outlives all its sources), active graphs to memories not in
        the trash and trashed graphs to trashed memories; no content is stored twice in a
        scope's buffer and long-term memory; ids are unique. A buffer item with a memory
        graph is allowed: a crash between linking and moving it leaves that, and the next
        consolidation replaces the graph. Meant for a quiet engine (at start, from the CLI,
        after a crash): a write in flight can show as a passing disagreement."""
        async with self._consolidation_lock:
            rows = await self.episodic.rows(
                where=None, columns=["id", "scope", "tier", "content_hash"]
            )
            graphs = await self.graph.provenance()
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

    async def graph_turtle(self, scope: str) -> str:
        scope = _check_scope(scope)
        return await self.graph.turtle(scope, self.settings.retrieval.graph_resource_max_triples)
