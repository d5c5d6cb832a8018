"""MemoryEngine: the CraniMem pipeline behind one async facade.

    remember ─► gate (B.1) ─► episodic buffer (B.2) ─► replay (B.3) ─┬► linkage ─► graph (B.4)
                                                                      └► trash
    recall ──► episodic path + graph path ─► one context block (B.5)

It is the only core module that sees :class:`Settings`. Writes to a scope are serialised by
that scope's lock and never wait on a model call or the graph work of a running
consolidation: replay reads the buffer under the lock, extracts and links outside it (forget
and restore wait on the scope's linking lock meanwhile), and moves the items still in the
buffer under the lock again. Consolidations never overlap. Background work
(every-N-writes and idle-timer consolidation, batched recall counts) lives in the engine's
task group.

The write path is in :mod:`.intake`, the read path in :mod:`.retrieval`. The engine creates
what its parts share (the locks, the background owner, the state keeper, the recall counts:
:mod:`.coordination`) and hands it to them: writes to the :class:`.intake.Intake`, recall to
the :class:`.retrieval.DualPathRecall`, consolidation and the buffer's bound to the
:class:`.replay.Consolidator`, forget and restore to :mod:`.forgetting`, the stores'
cross-check to :mod:`.consistency`. Each operation of the memory service is written here
once, as a method: its signature, its defaults and the checks of its arguments at the
engine's door (:mod:`.validation`); the parts it hands the work to take checked values.
"""

from __future__ import annotations

import logging
from contextlib import AsyncExitStack
from datetime import datetime, timedelta

import anyio

from cranimem_mcp.backends.embeddings import Embedder, EmbeddingCache, local_embedder
from cranimem_mcp.backends.llm import Extractor, Tagger
from cranimem_mcp.buffer.episodic import EpisodicStore
from cranimem_mcp.buffer.records import TIERS
from cranimem_mcp.buffer.retention import VersionRetention
from cranimem_mcp.buffer.table import LocalTable, SharedTable
from cranimem_mcp.config import Settings
from cranimem_mcp.conversation.ranking import ConversationRanker
from cranimem_mcp.conversation.rerank import Rerank
from cranimem_mcp.conversation.threads import Thread
from cranimem_mcp.coordination import Background, EngineState, RecallCounts, ScopeLocks, StateKeeper
from cranimem_mcp.errors import ConfigError, InvalidInput, StoreError
from cranimem_mcp.extraction.extractor import HeuristicExtractor
from cranimem_mcp.gate.default import DefaultGate
from cranimem_mcp.gate.goal import Gate, GoalGate
from cranimem_mcp.gate.judgment import DurableClassifier
from cranimem_mcp.gate.tagger import HeuristicTagger
from cranimem_mcp.graph.journal import JournaledDataset
from cranimem_mcp.graph.lease import consolidation_lease
from cranimem_mcp.graph.store import GraphStore, QuadStore
from cranimem_mcp.intake import Intake, IntakePolicy
from cranimem_mcp.models import (
    ENTITY_FACTS,
    GRAPH_NODES,
    MAX_CONTENT,
    MAX_ENTITY,
    MAX_GOAL,
    MAX_IDS,
    MAX_INSPECT,
    MAX_K,
    MAX_PAGE,
    MAX_SOURCE,
    MAX_TAG,
    MAX_TAGS,
    MIN_CHARS,
    MIN_K,
    ConsolidationReport,
    EntityView,
    ForgetResult,
    GoalResult,
    GraphView,
    MemoryDetail,
    MemoryPage,
    RecallResult,
    RememberResult,
    RestoreResult,
    ScopeStats,
    Stats,
    Tier,
)
from cranimem_mcp.recall import inspection
from cranimem_mcp.recall.dual_path import DEFAULT_PATHS, PATHS, DualPathRecall, RecallPolicy
from cranimem_mcp.recall.ranking import HybridRanker, Ranker
from cranimem_mcp.replay import consistency, forgetting
from cranimem_mcp.replay.consolidator import ConsolidationPolicy, Consolidator
from cranimem_mcp.replay.progress import Progress
from cranimem_mcp.replay.score import ReplayParams
from cranimem_mcp.secrets import guard as redaction
from cranimem_mcp.validation import check_ids, check_scope, check_text, check_time

logger = logging.getLogger(__name__)

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
            # A table at a URI may have other writers (replicas); else it is this directory's.
            SharedTable(e.uri, e.storage_options) if e.uri else LocalTable(self.home / "episodic"),
            self.embedder.dim,
            e.working_set_rows,
            settings.retrieval.fusion,
            settings.retrieval.vector_weight,
            settings.retrieval.text_lift,
            VersionRetention(e.keep_versions, e.keep_versions_seconds, e.max_disk_ratio),
        )
        self.graph = GraphStore(self._quad_store())
        self._open_marker = self.home / "open.marker"  # present while open: gone at close
        self._functional = frozenset(settings.temporal.functional_predicates)
        gating = settings.gating  # a scope with its own goal: the paper's gate
        self._goal_gate = GoalGate(
            gating.tau_noise, gating.tau_context, gating.second_look, self.tagger
        )
        # Goals and graph facts recur from call to call: embed each text once.
        self._cached = EmbeddingCache(self.embedder)
        self._locks = ScopeLocks()
        self._background = Background(background)
        self._keeper = StateKeeper(self.home / "state.json", self._background)
        self._recalls = RecallCounts(
            self.episodic, self._locks, self._background,
            settle=lambda: self._consolidator.maintain_when_due(),
        )  # fmt: skip
        c, g = settings.consolidation, settings.graph
        self._lease = consolidation_lease(
            c.lease, g.store, g.query_endpoint, g.update_endpoint, c.lease_seconds,
            self._background.start_soon,
        )  # fmt: skip
        gap = timedelta(hours=settings.retrieval.session_hours)  # one setting: transcript.follows
        self._thread = Thread(self.episodic, self.embedder, settings.episodic.thread_turns, gap)
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
            lease=self._lease,
            thread=self._thread,
        )
        self._intake = Intake(
            policy=_intake_policy(settings, self._functional),
            embedder=self.embedder,
            cached=self._cached,
            episodic=self.episodic,
            graph=self.graph,
            tagger=self.tagger,
            goal_gate=self._goal_gate,
            default_gate=self._default_gate(),
            locks=self._locks,
            keeper=self._keeper,
            consolidator=self._consolidator,
            thread=self._thread,
        )
        r = settings.retrieval
        self._recall = DualPathRecall(
            policy=RecallPolicy(
                k=r.k,
                max_chars=r.max_chars,
                hops=r.hops,
                max_facts=r.max_facts,
                min_score=r.min_score,
                context_ratio=r.context_ratio,
                date_boost=r.date_boost,
                split_queries=r.split_queries,
                half_life_days=settings.temporal.half_life_days,
            ),
            ranker=_ranker(settings, self.episodic),
            embedder=self.embedder,
            cached=self._cached,
            episodic=self.episodic,
            graph=self.graph,
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
            # Pushed before the task group, so it runs after it: once the background work
            # has ended, outside its cancelled scope (inside it, the graph's compaction on
            # close was cancelled before it began: a reopen replayed the whole journal).
            stack.push_async_callback(self.graph.close)
            self._background.attach(await stack.enter_async_context(anyio.create_task_group()))
            # The bound holds before the first call (a replay may start background work).
            for scope, n in (await self._consolidator.keep_bounds()).items():
                logger.warning("buffer of %s was past capacity at open: %d replayed", scope, n)
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
        if self._background.enabled:
            # A server's last act on its table: no old version on disk once it has stopped.
            # A one-shot command leaves them to the next maintenance (~0.1 s each at 1k).
            with anyio.CancelScope(shield=True):
                try:
                    await self.episodic.close()
                except StoreError as exc:  # the versions stay; the next maintenance drops them
                    logger.warning("old table versions kept: %s", exc)
        await self._keeper.close()
        await self._lease.aclose()
        self._open_marker.unlink(missing_ok=True)

    def _default_gate(self) -> Gate:
        """The gate of a scope with the default goal: the default gate if it is on and its
        classifier was trained in this embedder's vector space, else the goal-conditioned one."""
        if not self.settings.gating.default_gate:
            return self._goal_gate
        classifier = DurableClassifier.load()
        if classifier.fits(self.embedder.id, self.embedder.dim):
            self._model_notes.setdefault("default_gate", f"classifier over {classifier.embedder}")
            return DefaultGate(classifier, self.settings.gating.tau_durable)
        note = (
            f"trained for {classifier.embedder}, not {self.embedder.id}: scopes without a goal "
            "use cosine to the default goal with the second look"
        )
        logger.warning("default gate off: %s", note)
        self._model_notes["default_gate"] = "off: " + note
        return self._goal_gate

    def _quad_store(self) -> QuadStore:
        """Where the graph lives, by ``graph.store``: a SPARQL server, or this directory."""
        g = self.settings.graph
        if g.store == "sparql":
            from cranimem_mcp.graph.sparql import SparqlDataset  # rdflib's SPARQL store

            return SparqlDataset(g.query_endpoint, g.update_endpoint)
        return JournaledDataset(self.home / "graph")

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
        return self._intake.goal_of(scope)

    # --- remember --------------------------------------------------------------------------

    async def remember(
        self,
        content: str,
        scope: str = "default",
        goal: str | None = None,
        source: str | None = None,
        tags: list[str] | None = None,
        pin: bool = False,
        said_at: str | datetime | None = None,
    ) -> RememberResult:
        """Gate a write and store it in the scope's buffer (see :mod:`.intake`)."""
        content = check_text("content", content, MAX_CONTENT)
        said = check_time(said_at, "said_at") if said_at is not None else None
        scope = check_scope(scope)
        goal = check_text("goal", goal, MAX_GOAL) if goal is not None else None
        source = check_text("source", source, MAX_SOURCE) if source is not None else None
        tags = [check_text("tag", t, MAX_TAG) for t in (tags or [])]
        if len(tags) > MAX_TAGS:
            raise InvalidInput(f"at most {MAX_TAGS} tags")
        return await self._intake.admit(content, scope, goal, source, tags, pin, said)

    # --- replay and consolidation ----------------------------------------------------------

    async def consolidate(
        self,
        scope: str | None = None,
        dry_run: bool = False,
        trigger: str = "on_demand",
        progress: Progress | None = None,
    ) -> ConsolidationReport:
        """Replay every buffer item of ``scope`` (or of all scopes): promote or trash. Each step
        done is told to ``progress`` (see :class:`.progress.Steps`), outside the scope locks."""
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
        query = check_text("query", query, MAX_CONTENT)
        scope = check_scope(scope)
        r = self.settings.retrieval
        k = r.k if k is None else k
        max_chars = r.max_chars if max_chars is None else max_chars
        if not MIN_K <= k <= MAX_K:
            raise InvalidInput(f"k must be between {MIN_K} and {MAX_K}")
        if max_chars < MIN_CHARS:
            raise InvalidInput(f"max_chars must be at least {MIN_CHARS}")
        paths = list(DEFAULT_PATHS) if paths is None else paths
        if not paths or any(p not in PATHS for p in paths):
            raise InvalidInput(f"paths must be a non-empty subset of {list(PATHS)}")
        when = check_time(as_of) if as_of is not None else None
        return await self._recall.run(query, scope, k, max_chars, paths, when, all_scopes)

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
        """Move the memories named by ``ids``, ``entity`` or ``all_in_scope`` to the trash,
        or erase them (``hard``), with their graph facts; ``dry_run`` only reports."""
        scope = check_scope(scope)
        ids = check_ids(ids or [])
        if entity is not None:
            entity = check_text("entity", entity, MAX_ENTITY)
        if not ids and entity is None and not all_in_scope:
            raise InvalidInput("say what to forget: ids, an entity, or all_in_scope=true")
        return await forgetting.remove(
            self.episodic, self.graph, self._locks, self._thread, ids, entity, scope,
            all_in_scope, hard, dry_run,
        )  # fmt: skip

    async def restore(self, ids: list[str], scope: str = "default") -> RestoreResult:
        """Bring trashed memories back: forgotten ones to the tier they were in, replay-pruned
        ones to long-term memory (the user overrules the replay decision) and linked."""
        scope = check_scope(scope)
        ids = check_ids(ids)
        if not ids:
            raise InvalidInput("give the ids to restore")
        return await forgetting.bring_back(self._consolidator, self._locks, ids, scope)

    # --- goals, stats, listing -------------------------------------------------------------

    async def set_goal(self, goal: str, scope: str = "default") -> GoalResult:
        # A goal is saved in state.json: a credential in it is replaced as in a memory.
        goal = redaction.redact(check_text("goal", goal, MAX_GOAL)).text
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
        tier: Tier | None = None,
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

    # --- inspection (the web inspector's queries, in :mod:`.inspection`) ---------------------

    async def get_memories(self, ids: list[str], scope: str = "default") -> list[MemoryDetail]:
        """The memories of the scope with these ids, in that order (unknown ids left out)."""
        scope = check_scope(scope)
        if len(ids) > MAX_IDS:
            raise InvalidInput(f"at most {MAX_IDS} ids")
        return await inspection.get_memories(self.episodic, check_ids(ids), scope)

    async def recent_memories(
        self, scope: str = "default", tier: Tier | None = None, limit: int = MAX_INSPECT
    ) -> list[MemoryDetail]:
        """The scope's newest memories (of one tier, or all), newest first."""
        scope = check_scope(scope)
        if tier is not None and tier not in TIERS:
            raise InvalidInput(f"tier must be one of {', '.join(TIERS)} (or left out for all)")
        _check_limit(limit, MAX_INSPECT)
        tiers = (tier,) if tier is not None else TIERS
        return await inspection.recent_memories(self.episodic, scope, tiers, limit)

    async def graph_overview(self, scope: str = "default", limit: int = GRAPH_NODES) -> GraphView:
        """The best-supported entities of the scope's long-term memory, and their facts."""
        scope = check_scope(scope)
        _check_limit(limit, MAX_INSPECT)
        return await inspection.graph_overview(self.episodic, self.graph, scope, limit)

    async def entity_neighbourhood(
        self, name: str, scope: str = "default", limit: int = ENTITY_FACTS
    ) -> EntityView:
        """One entity's facts, the entities at their other ends, their source memories."""
        name = check_text("name", name, MAX_ENTITY)
        scope = check_scope(scope)
        _check_limit(limit, MAX_INSPECT)
        return await inspection.entity_neighbourhood(self.episodic, self.graph, scope, name, limit)


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


def _ranker(settings: Settings, episodic: EpisodicStore) -> Ranker:
    """The episodic path's ranker: conversation-aware when the settings turn on any of its
    rules (a speaker focus, a speaker's lift, neighbours' lent scores, a wider pool to
    re-score), else the hybrid search's own order."""
    r = settings.retrieval
    rerank = Rerank(r.pool, r.speaker_boost, r.neighbour_weight, r.session_hours)
    if r.speaker_turns <= 0 and not rerank.active and r.pool == 1:
        return HybridRanker(episodic)
    speaker_rerank = Rerank(r.speaker_pool, 0.0, r.speaker_neighbour_weight, r.session_hours)
    return ConversationRanker(episodic, r.speaker_turns, rerank, speaker_rerank)


def _intake_policy(settings: Settings, functional: frozenset[str]) -> IntakePolicy:
    g = settings.gating
    return IntakePolicy(
        capacity=settings.episodic.capacity,
        default_goal=g.default_goal,
        secrets=g.secrets,
        tau_noise=g.tau_noise,
        functional=functional,
        windows=settings.episodic.windows,
    )


def _check_limit(limit: int, most: int) -> None:
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= most:
        raise InvalidInput(f"limit must be an integer from 1 to {most}, got {limit!r}")
