"""MemoryEngine: the CraniMem pipeline behind one async facade.

    remember ─► gate (B.1) ─► episodic buffer (B.2) ─► replay (B.3) ─┬► linkage ─► graph (B.4)
                                                                      └► trash
    recall ──► episodic path + graph path ─► one context block (B.5)

It is the only core module that sees :class:`Settings`. Writes to a scope are serialised by
that scope's lock and never wait on a model call made by a running consolidation: replay
reads the buffer under the lock, extracts outside it, and applies its decisions under the
lock again to the items still in the buffer. Consolidations never overlap. Background work
(every-N-writes and idle-timer consolidation, batched recall counts) lives in the engine's
task group.

The write and read paths are here. The engine creates what its parts share (the locks, the
background owner, the state keeper, the recall counts: :mod:`.coordination`) and hands it
to them: consolidation and the buffer's bound to the :class:`.replay.Consolidator`, forget
and restore to :mod:`.forgetting`, the stores' cross-check to :mod:`.consistency`. Input
checks are in :mod:`.validation`.
"""

from __future__ import annotations

import logging
import time
from contextlib import AsyncExitStack
from dataclasses import replace
from datetime import datetime
from typing import Any

import anyio
import numpy as np

from . import consistency, forgetting, gating, linkage, redaction, retrieval
from .config import Settings
from .consolidation import ReplayParams
from .coordination import Background, RecallCounts, ScopeLocks, StateKeeper
from .durable import DurableClassifier
from .embeddings import Embedder, EmbeddingCache, local_embedder
from .episodic import TIERS, EpisodicStore, VersionRetention
from .errors import ConfigError, InvalidInput
from .extraction import HeuristicExtractor
from .graph import GraphStore
from .heuristics import HeuristicTagger
from .llm import Extractor, Tagger
from .models import (
    MAX_PAGE,
    BufferInfo,
    ConsolidationReport,
    ForgetResult,
    GoalResult,
    Memory,
    MemoryPage,
    RecallResult,
    RememberResult,
    RestoreResult,
    ScopeStats,
    Stats,
    Utility,
)
from .replay import ConsolidationPolicy, Consolidator, Progress
from .state import EngineState
from .temporal import observed_at
from .validation import (
    check_scope,
    check_text,
    check_time,
    content_hash,
    new_id,
    now,
)

logger = logging.getLogger(__name__)

MAX_CONTENT = 32_000
MAX_TAGS = 32
PATHS = ("episodic", "graph")
PREVIEW_CHARS = 500  # of each memory's text in a listing


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
        self.embedder = embedder or local_embedder(
            settings.models.embedder_model, settings.models.threads
        )
        self.tagger = tagger or HeuristicTagger()
        self.extractor = extractor or HeuristicExtractor()
        self._model_notes = dict(model_notes or {})  # why each model was chosen (stats)
        e = settings.episodic
        self.episodic = EpisodicStore(
            e.uri or self.home / "episodic",
            self.embedder.dim,
            e.storage_options,
            e.working_set_rows,
            settings.retrieval.fusion,
            settings.retrieval.vector_weight,
            VersionRetention(e.keep_versions, e.keep_versions_seconds, e.max_disk_ratio),
        )
        if settings.graph.store == "sparql":
            from .sparql import SparqlDataset

            g = settings.graph
            self.graph = GraphStore(store=SparqlDataset(g.query_endpoint, g.update_endpoint))
        else:
            self.graph = GraphStore(self.home / "graph")
        self._open_marker = self.home / "open.marker"  # present while open: gone at close
        self._functional = frozenset(settings.temporal.functional_predicates)
        self._durable = self._default_gate()
        # Goals and graph facts recur from call to call: embed each text once.
        self._cached = EmbeddingCache(self.embedder)
        self._locks = ScopeLocks()
        self._background = Background(background)
        self._keeper = StateKeeper(self.home / "state.json", self._background)
        self._recalls = RecallCounts(self.episodic, self._locks, self._background)
        self._consolidator = Consolidator(
            episodic=self.episodic,
            graph=self.graph,
            tagger=self.tagger,
            extractor=self.extractor,
            policy=_policy(settings, self._functional),
            locks=self._locks,
            background=self._background,
            keeper=self._keeper,
            cached=self._cached,
            recalls=self._recalls,
        )
        self._stack: AsyncExitStack | None = None

    @property
    def state(self) -> EngineState:
        """Goals, turn counters, rejected-write counts, the last consolidation reports."""
        return self._keeper.state

    # --- lifecycle -------------------------------------------------------------------------

    async def __aenter__(self) -> MemoryEngine:
        self.home.mkdir(parents=True, exist_ok=True, mode=0o700)
        self.home.chmod(0o700)
        logger.info("data directory %s", self.home)
        await self._keeper.load()
        self._check_embedder()
        if self._background.enabled:
            # A server loads the secrets guard's rules here, not on its first write (0.2-0.5
            # s); a one-shot command loads them only if it writes (a recall never needs them).
            await anyio.to_thread.run_sync(redaction.warm_up)
        await self.episodic.open()
        await self.graph.open()
        if self._open_marker.exists():  # the last process here stopped without closing
            for line in await consistency.repair(self.episodic, self.graph, self._locks):
                logger.warning("repaired after an unclean stop: %s", line)
        self._open_marker.touch(mode=0o600)
        async with AsyncExitStack() as stack:
            self._background.attach(await stack.enter_async_context(anyio.create_task_group()))
            stack.push_async_callback(self.graph.close)
            if self._background.enabled and self.settings.consolidation.interval_seconds > 0:
                self._background.start_soon(self._consolidator.schedule)
            self._stack = stack.pop_all()
        await self.save_state()
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._stack is not None
        self._background.cancel()
        with anyio.CancelScope(shield=True):
            await self._recalls.flush()
        await self._stack.__aexit__(None, None, None)
        await self._keeper.close()
        self._open_marker.unlink(missing_ok=True)

    def _default_gate(self) -> DurableClassifier | None:
        """The default gate's classifier, if it was trained in this embedder's vector space."""
        if not self.settings.gating.default_gate:
            return None
        classifier = DurableClassifier.load()
        if classifier.fits(self.embedder.id, self.embedder.dim):
            self._model_notes.setdefault("default_gate", f"classifier over {classifier.embedder}")
            return classifier
        note = (
            f"trained for {classifier.embedder}, not {self.embedder.id}: scopes without a goal "
            "use cosine to the default goal with the second look"
        )
        logger.warning("default gate off: %s", note)
        self._model_notes["default_gate"] = "off: " + note
        return None

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

    async def save_state(self) -> None:
        """Save the engine state (goals, turn counters, reports) now."""
        await self._keeper.save()

    async def wait_idle(self) -> None:
        """Wait until background consolidations started so far have finished."""
        await self._background.wait_idle()

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
        pin: bool = False,
    ) -> RememberResult:
        content = check_text("content", content, MAX_CONTENT)
        scope = check_scope(scope)
        goal = check_text("goal", goal, 2000) if goal is not None else None
        source = check_text("source", source, 200) if source is not None else None
        tags = [check_text("tag", t, 64) for t in (tags or [])]
        if len(tags) > MAX_TAGS:
            raise InvalidInput(f"at most {MAX_TAGS} tags")
        capacity = self.settings.episodic.capacity
        # The secrets guard comes before everything else, pin included: from here on no
        # credential is embedded, logged, stored or sent to a model.
        guarded = [redaction.redact(t) for t in (content, goal or "", source or "", *tags)]
        found = [label for g in guarded for label in g.found]
        if found and self.settings.gating.secrets == "reject":
            return await self._refuse_secret(scope, found)
        content, goal_text, source_text, *tags = (g.text for g in guarded)
        goal = goal_text if goal is not None else self.goal_of(scope)
        source = source_text if source is not None else None
        if found:
            logger.info("redacted %d credential(s) from a write to %s", len(found), scope)
        digest = content_hash(content)

        # The duplicate check, embedding, gate and tags run outside the scope lock, so a slow
        # model call never holds up other writes; the lock covers check-again-and-insert.
        prepared = None
        if await self.episodic.find_hash(scope, digest) is None:
            prepared = await self._prepare(content, scope, goal, pin, found)
            if isinstance(prepared, RememberResult):
                return prepared
        async with self._locks.scope(scope):
            existing = await self.episodic.find_hash(scope, digest)
            if existing is not None:
                return await self._merge(existing, scope, tags, capacity, pin, found)
            if prepared is None:  # the duplicate went away meanwhile (forgotten): start over
                prepared = await self._prepare(content, scope, goal, pin, found)
                if isinstance(prepared, RememberResult):
                    return prepared
            vector, rel, decision, tagging = prepared
            utility = tagging.utility
            quick = linkage.quick(content)  # one parse per text, kept for consolidation
            entities = [e.name for e in quick.entities]
            turn = self.state.turns.get(scope, 0) + 1
            self.state.turns[scope] = turn
            stamp = now()
            observed = observed_at(content) or stamp
            memory_id = new_id()
            memory = Memory(
                id=memory_id,
                scope=scope,
                tier="buffer",
                content=content,
                content_hash=digest,
                vector=vector,
                created_at=stamp,
                observed_at=observed,
                turn=turn,
                entities=entities,
                importance=utility.importance,
                surprise=utility.surprise,
                emotion=utility.emotion,
                base_utility=utility.base,
                relevance=rel,
                goal=goal,
                source=source,
                tags=tags,
                tagged_by=tagging.tagged_by,
                gate_reason=decision.reason,
                tier_changed_at=stamp,
                pinned=pin,
            )
            await self.episodic.add([memory])
            self._keeper.save_soon()
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
            evicted = await self._consolidator.evict_overflow(scope)
            size = await self.episodic.count(scope, ("buffer",))
        logger.info("stored %s in %s relevance=%.3f base=%.3f", memory_id, scope, rel, utility.base)
        self._consolidator.note_write(scope)
        return RememberResult(
            status="stored",
            id=memory_id,
            relevance=round(rel, 4),
            threshold=decision.threshold,
            gate=decision.stage,
            durability=decision.durability,
            pinned=pin,
            redacted=found,
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
        for item in await self.episodic.live_rows(scope, ("buffer",)):
            for rel in linkage.quick(item.content).relations:
                if rel.predicate in self._functional:
                    out.append((rel, item.id, item.happened_at))
        return out

    async def _prepare(
        self, content: str, scope: str, goal: str, pin: bool, redacted: list[str]
    ) -> RememberResult | tuple[np.ndarray, float, gating.GateDecision, Any]:
        """Embed, gate and tag a write: a rejected result, or what the insert needs."""
        vectors = await self.embedder.embed([content])
        vector, goal_vector = vectors[0], await self._goal_vector(goal)
        rel = gating.relevance(vector, goal_vector)
        near = await self.episodic.nearest(scope, vector, ("buffer", "longterm"), 1)
        nearest = near[0].similarity if near else -1.0
        g = self.settings.gating
        durability = None
        if self._durable is not None and goal == g.default_goal and not pin:
            durability = self._durable.judge(vector, content, g.tau_durable)
        decision = await gating.gate(
            content,
            goal,
            relevance=rel,
            nearest=nearest,
            tau_noise=g.tau_noise,
            tau_context=g.tau_context,
            second_look=g.second_look,
            tagger=self.tagger,
            durability=durability,
            band=g.durable_band,
            pin=pin,
        )
        if not decision.keep:
            self.state.rejected[scope] = self.state.rejected.get(scope, 0) + 1
            self._keeper.save_soon()
            logger.info("rejected write to %s relevance=%.3f", scope, rel)
            size = await self.episodic.count(scope, ("buffer",))
            return RememberResult(
                status="rejected",
                relevance=round(rel, 4),
                threshold=decision.threshold,
                gate=decision.stage,
                durability=decision.durability,
                redacted=redacted,
                reason=decision.reason,
                buffer=BufferInfo(size=size, capacity=self.settings.episodic.capacity),
                scope=scope,
            )
        # Surprise is novelty: 1 - the closest stored memory's similarity (paper B.1).
        tagging = await self.tagger.tag(content, goal, 1.0 - max(0.0, nearest))
        if pin:  # the user asked for it: top importance (paper B.1's importance signal)
            u = tagging.utility
            tagging = tagging.model_copy(update={"utility": Utility.of(1.0, u.surprise, u.emotion)})
        return vector, rel, decision, tagging

    async def _refuse_secret(self, scope: str, found: list[str]) -> RememberResult:
        """``gating.secrets = "reject"``: a write holding a credential is not stored."""
        self.state.rejected[scope] = self.state.rejected.get(scope, 0) + 1
        self._keeper.save_soon()
        kinds = ", ".join(dict.fromkeys(found))
        return RememberResult(
            status="rejected",
            relevance=0.0,
            threshold=0.0,
            gate="secrets",
            redacted=found,
            reason=f"it holds a credential ({kinds}), and this server rejects credentials "
            "(gating.secrets = reject). Store what matters without the value, e.g. "
            "'the user has a GitHub token for the CI'.",
            buffer=BufferInfo(
                size=await self.episodic.count(scope, ("buffer",)),
                capacity=self.settings.episodic.capacity,
            ),
            scope=scope,
        )

    async def _merge(
        self,
        existing: Memory,
        scope: str,
        tags: list[str],
        capacity: int,
        pin: bool,
        redacted: list[str],
    ) -> RememberResult:
        """An exact repeat strengthens the memory it repeats instead of storing a copy; a
        pinned repeat pins it."""
        memory = replace(
            existing,
            frequency=int(existing.frequency or 1) + 1,
            tags=list(dict.fromkeys([*(existing.tags or []), *tags])),
            last_access=now(),
        )
        if pin and not memory.pinned:
            u = Utility.of(1.0, memory.surprise, memory.emotion)
            memory = replace(memory, pinned=True, importance=u.importance, base_utility=u.base)
        await self.episodic.upsert([memory])
        size = await self.episodic.count(scope, ("buffer",))
        self._consolidator.note_write(scope)
        return RememberResult(
            status="merged",
            id=memory.id,
            relevance=round(float(memory.relevance or 0.0), 4),
            threshold=self.settings.gating.tau_noise,
            gate="merge",
            pinned=bool(memory.pinned),
            redacted=redacted,
            utility=Utility(
                importance=memory.importance,
                surprise=memory.surprise,
                emotion=memory.emotion,
                base=memory.base_utility,
            ),
            entities=list(memory.entities or []),
            tagged_by=memory.tagged_by,
            reason=f"exact repeat of {memory.id}: frequency is now {memory.frequency}",
            buffer=BufferInfo(size=size, capacity=capacity),
            scope=scope,
        )

    # --- replay and consolidation ----------------------------------------------------------

    async def consolidate(
        self,
        scope: str | None = None,
        dry_run: bool = False,
        trigger: str = "on_demand",
        progress: Progress | None = None,
    ) -> ConsolidationReport:
        """Replay every buffer item of ``scope`` (or of all scopes): promote or trash. Each step
        done is told to ``progress`` (see :class:`.replay.Steps`), outside the scope locks."""
        return await self._consolidator.run(scope, dry_run, trigger, progress)

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
        query = check_text("query", query, MAX_CONTENT)
        scope = check_scope(scope)
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

        when = check_time(as_of) if as_of is not None else None

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
            self._recalls.note(s, [it.id for it in items if it.scope == s])
        return RecallResult(
            context=context,
            items=items,
            facts=facts,
            took_ms=round((time.perf_counter() - started) * 1000, 2),
        )

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
        return await forgetting.forget(
            self.episodic, self.graph, self._locks, ids, entity, scope, all_in_scope, hard, dry_run
        )

    async def restore(self, ids: list[str], scope: str = "default") -> RestoreResult:
        """Bring trashed memories back: forgotten ones to the tier they were in, replay-pruned
        ones to long-term memory (the user overrules the replay decision) and linked."""
        return await forgetting.restore(self._consolidator, self._locks, ids, scope)

    # --- goals, stats, listing -------------------------------------------------------------

    async def set_goal(self, goal: str, scope: str = "default") -> GoalResult:
        # A goal is saved in state.json: a credential in it is replaced as in a memory.
        goal = redaction.redact(check_text("goal", goal, 2000)).text
        scope = check_scope(scope)
        self.state.goals[scope] = goal
        await self.save_state()
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

    async def list_memories(
        self,
        scope: str = "default",
        tier: str | None = None,
        limit: int = 20,
        offset: int = 0,
    ) -> MemoryPage:
        """A page of the scope's memories (one tier, or all), newest in their tier first."""
        scope = check_scope(scope)
        if tier is not None and tier not in TIERS:
            raise InvalidInput(f"tier must be one of {', '.join(TIERS)} (or left out for all)")
        if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_PAGE:
            raise InvalidInput(f"limit must be an integer from 1 to {MAX_PAGE}, got {limit!r}")
        if isinstance(offset, bool) or not isinstance(offset, int) or offset < 0:
            raise InvalidInput(f"offset must be an integer of at least 0, got {offset!r}")
        tiers = (tier,) if tier is not None else TIERS
        total, items = await self.episodic.page(scope, tiers, limit, offset, PREVIEW_CHARS)
        following = offset + limit
        return MemoryPage(
            scope=scope,
            tier=tier,
            total=total,
            offset=offset,
            items=items,
            next_offset=following if following < total else None,
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
        """Check that the two stores agree; returns the problems found (none: empty list)."""
        return await consistency.check(self.episodic, self.graph, self._locks)

    async def graph_turtle(self, scope: str) -> str:
        scope = check_scope(scope)
        return await self.graph.turtle(scope, self.settings.retrieval.graph_resource_max_triples)


def _policy(settings: Settings, functional: frozenset[str]) -> ConsolidationPolicy:
    c, t = settings.consolidation, settings.temporal
    return ConsolidationPolicy(
        capacity=settings.episodic.capacity,
        replay=ReplayParams(c.tau_consolidation, c.alpha, c.freq_cap),
        functional=functional,
        longterm_capacity=t.longterm_capacity,
        half_life_days=t.half_life_days,
        trash_retention_days=c.trash_retention_days,
        max_model_calls=settings.ollama.max_calls_per_consolidation,
        every_n_writes=c.every_n_writes,
        interval_seconds=c.interval_seconds,
        idle_seconds=c.idle_seconds,
    )
