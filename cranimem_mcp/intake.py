"""The write path (paper B.1-B.2): a write goes through the secrets guard, the duplicate
check, the gate and the utility tags into the scope's episodic buffer (the engine hands in
two :class:`~cranimem_mcp.gate.goal.Gate`: the goal-conditioned one for a scope with a goal
of its own, and the one for a scope with the default goal); a new value of a single-valued
fact ends the old one at once (in the write's result), and the buffer's bound is kept by
replay of its oldest items (the :class:`~cranimem_mcp.replay.consolidator.Consolidator`):
inline only if the buffer is still full when a write arrives; a server makes room, and
maintains the table, after the answer.

The embedding, gate and tags run outside the scope lock, so a slow model call never holds
up other writes; the lock covers check-again-and-insert (and a transcript turn's embedding
with the write before it, :mod:`.threads`, which needs that write settled). Collaborators
are handed in by the engine; the settings values it works by are an :class:`IntakePolicy`.
The operation itself (its signature, defaults and argument checks) is the engine's
``remember``: :meth:`Intake.admit` takes what that door let through.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

import numpy as np

from cranimem_mcp.backends.embeddings import Embedder, EmbeddingCache, embed_read
from cranimem_mcp.backends.llm import Tagger
from cranimem_mcp.buffer.episodic import EpisodicStore
from cranimem_mcp.conversation.threads import Thread
from cranimem_mcp.coordination import ScopeLocks, StateKeeper
from cranimem_mcp.errors import StoreError
from cranimem_mcp.extraction import linkage, syntax
from cranimem_mcp.gate import goal as gating
from cranimem_mcp.gate.default import judged_importance
from cranimem_mcp.graph.store import GraphStore, ends_something
from cranimem_mcp.models import (
    BufferInfo,
    Memory,
    RememberResult,
    Utility,
)
from cranimem_mcp.replay.consolidator import Consolidator
from cranimem_mcp.secrets import guard as redaction
from cranimem_mcp.temporal import observed_at
from cranimem_mcp.validation import content_hash, new_id, now

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class IntakePolicy:
    """The settings values the write path works by (the engine reads them from Settings)."""

    capacity: int  # of each scope's buffer
    default_goal: str  # of a scope without a goal of its own
    secrets: str  # "redact" or "reject" a write holding a credential
    tau_noise: float  # the threshold a pinned or merged write reports
    functional: frozenset[str]  # single-valued predicates: a new object ends the old fact
    windows: int = 1  # a long text's vectors stored: its opening's and up to windows - 1 more


class Intake:
    """Gates and stores writes; see the module docstring."""

    def __init__(
        self,
        *,
        policy: IntakePolicy,
        embedder: Embedder,
        cached: EmbeddingCache,
        episodic: EpisodicStore,
        graph: GraphStore,
        tagger: Tagger,
        goal_gate: gating.Gate,
        default_gate: gating.Gate,
        locks: ScopeLocks,
        keeper: StateKeeper,
        consolidator: Consolidator,
        thread: Thread,
    ) -> None:
        self.policy = policy
        self.embedder = embedder
        self.cached = cached
        self.episodic = episodic
        self.graph = graph
        self.tagger = tagger
        self.goal_gate = goal_gate  # for a scope with a goal of its own
        self.default_gate = default_gate  # for a scope with the default goal
        self.locks = locks
        self.keeper = keeper
        self.consolidator = consolidator
        self.thread = thread

    def goal_of(self, scope: str) -> str:
        return self.keeper.state.goals.get(scope, self.policy.default_goal)

    async def _goal_vector(self, goal: str) -> np.ndarray:
        return (await self.cached.embed([goal]))[0]

    async def admit(
        self,
        content: str,
        scope: str,
        goal: str | None,
        source: str | None,
        tags: list[str],
        pin: bool,
        said: datetime | None = None,
    ) -> RememberResult:
        """Gate one write and store it (or merge it, or reject it), then keep the buffer's
        bound. The arguments are the engine's ``remember``'s, already checked at its door
        (``said``: its ``said_at``)."""
        result = await self._admit(content, scope, goal, source, tags, pin, said)
        # Outside the scope lock: making room and maintenance take it or the run's lock.
        size = result.buffer.size if result.status == "stored" else None
        await self.consolidator.after_write(scope, size)
        return result

    async def _admit(
        self,
        content: str,
        scope: str,
        goal: str | None,
        source: str | None,
        tags: list[str],
        pin: bool,
        said: datetime | None,
    ) -> RememberResult:
        capacity = self.policy.capacity
        # The secrets guard comes before everything else, pin included: from here on no
        # credential is embedded, logged, stored or sent to a model.
        guarded = [redaction.redact(t) for t in (content, goal or "", source or "", *tags)]
        found = [label for g in guarded for label in g.found]
        if found and self.policy.secrets == "reject":
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
        async with self.locks.scope(scope):
            existing = await self.episodic.find_hash(scope, digest)
            if existing is not None:
                return await self._merge(existing, scope, tags, capacity, pin, found)
            if prepared is None:  # the duplicate went away meanwhile (forgotten): start over
                prepared = await self._prepare(content, scope, goal, pin, found)
                if isinstance(prepared, RememberResult):
                    return prepared
            own, windows, rel, decision, tagging = prepared
            stamp = now()
            # A transcript turn is embedded with the turn it follows (the gate judged its own).
            vector, follows = await self.thread.vector(scope, content, own, stamp)
            utility = tagging.utility
            quick = linkage.quick(content)  # one parse per text, kept for consolidation
            entities = [e.name for e in quick.entities]
            turn = self.keeper.state.turns.get(scope, 0) + 1
            self.keeper.state.turns[scope] = turn
            # A date the text names is the event's; else when it was said (an import of an
            # older note or chat turn), else now.
            observed = observed_at(content) or said or stamp
            memory_id = new_id()
            memory = Memory(
                id=memory_id,
                scope=scope,
                tier="buffer",
                content=content,
                content_hash=digest,
                vector=vector,
                windows=windows,
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
                follows=follows,
            )
            if not await self.episodic.insert(memory):
                # Another replica stored this text since the check above (a shared table):
                # it is a repeat of theirs.
                existing = await self.episodic.find_hash(scope, digest)
                if existing is None:
                    raise StoreError(f"a write to {scope} was neither stored nor a repeat")
                return await self._merge(existing, scope, tags, capacity, pin, found)
            self.thread.wrote(scope, content, stamp, memory_id)
            self.keeper.save_soon()
            # A new object for a single-valued relation ends the old fact now, so the agent
            # can confirm the change with the user (and recall stops offering the old one).
            superseded = await self.graph.supersede(
                scope,
                memory_id,
                quick.relations,
                observed,
                self.policy.functional,
                await self._unlinked_relations(scope, quick.relations),
            )
            if superseded and utility.surprise < 1.0:
                # A write that ends a fact contradicts what memory held: its surprise is
                # whole (paper B.1), so replay keeps the change instead of trashing it (and its
                # ends with it) as a low-utility write ("I'm 35 now.").
                utility = Utility.of(utility.importance, 1.0, utility.emotion)
                await self.episodic.update(
                    [memory_id], {"surprise": 1.0, "base_utility": utility.base}
                )
            # Past capacity only if the background has not made room yet (or there is none).
            size = await self.episodic.count(scope, ("buffer",))
            evicted = await self.consolidator.evict_overflow(scope, size)
            size -= len(evicted)  # each went to long-term memory or the trash
        logger.info("stored %s in %s relevance=%.3f base=%.3f", memory_id, scope, rel, utility.base)
        self.consolidator.note_write(scope)
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
        if not any(ends_something(r, self.policy.functional) for r in relations):
            return []
        # Every relation: a denial or a departure may end a many-valued fact ("likes running"),
        # and a change marks a preference single-valued ("I prefer coffee these days").
        return [
            (rel, item.id, item.happened_at)
            for item in await self.episodic.live_rows(scope, ("buffer",))
            for rel in linkage.quick(item.content).relations
        ]

    async def _prepare(
        self, content: str, scope: str, goal: str, pin: bool, redacted: list[str]
    ) -> RememberResult | tuple[np.ndarray, np.ndarray | None, float, gating.GateDecision, Any]:
        """Embed, gate and tag a write: a rejected result, or what the insert needs."""
        vectors, (windows,) = await embed_read(self.embedder, [content], self.policy.windows)
        await syntax.ready()  # the gate and the insert parse: the load waits off the loop
        vector, goal_vector = vectors[0], await self._goal_vector(goal)
        rel = gating.relevance(vector, goal_vector)
        near = await self.episodic.nearest(scope, vector, ("buffer", "longterm"), 1)
        nearest = near[0].similarity if near else -1.0
        if pin:
            decision = gating.pinned(rel, self.policy.tau_noise)
        else:
            gate = self.default_gate if goal == self.policy.default_goal else self.goal_gate
            decision = await gate.decide(content, goal, vector, rel, nearest)
        if not decision.keep:
            self.thread.wrote(scope, content, now(), None)  # the next turn may answer it
            self.keeper.state.rejected[scope] = self.keeper.state.rejected.get(scope, 0) + 1
            self.keeper.save_soon()
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
                buffer=BufferInfo(size=size, capacity=self.policy.capacity),
                scope=scope,
            )
        # Surprise is novelty: 1 - the closest stored memory's similarity (paper B.1).
        tagging = await self.tagger.tag(content, goal, 1.0 - max(0.0, nearest))
        u = tagging.utility
        if pin or decision.kind in ("health", "standing"):
            # The user asked for it, a health or safety fact about a person (the gate keeps it
            # whatever the rules say), or a standing instruction: top importance (paper B.1's
            # importance signal), so replay does not trash it for being short or plain
            # ("Lactose intolerant.", "Explain code changes with a short diff summary.").
            tagging = tagging.model_copy(update={"utility": Utility.of(1.0, u.surprise, u.emotion)})
        elif decision.durability is not None and decision.kind in ("fact", "doubtful"):
            tagging = tagging.model_copy(update={"utility": Utility.of(
                judged_importance(u.importance, decision.durability, decision.kind == "fact"),
                u.surprise, u.emotion,
            )})  # fmt: skip
        return vector, windows, rel, decision, tagging

    async def _refuse_secret(self, scope: str, found: list[str]) -> RememberResult:
        """``gating.secrets = "reject"``: a write holding a credential is not stored."""
        self.keeper.state.rejected[scope] = self.keeper.state.rejected.get(scope, 0) + 1
        self.keeper.save_soon()
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
                capacity=self.policy.capacity,
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
        self.thread.wrote(scope, memory.content, now(), memory.id)
        size = await self.episodic.count(scope, ("buffer",))
        self.consolidator.note_write(scope)
        return RememberResult(
            status="merged",
            id=memory.id,
            relevance=round(float(memory.relevance or 0.0), 4),
            threshold=self.policy.tau_noise,
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
