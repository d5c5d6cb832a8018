"""The conversation-aware ranking of the episodic path: recall's ranker for stores that hold
a conversation's turns (``[<when>] <Speaker>: <text>``, :mod:`.transcript`).

A query naming speakers of the scope is searched without their names, their own turns
first (:mod:`.speakers`); the candidates are re-scored by who speaks in them and which turns
stand beside them (:mod:`.rerank`). The engine picks this ranker when the settings turn any
of those rules on (``retrieval.speaker_turns``, ``speaker_boost``, ``neighbour_weight``,
``pool``); otherwise recall ranks by the hybrid search alone
(:class:`~cranimem_mcp.recall.ranking.HybridRanker`). It satisfies recall's ``Ranker``.

Invariant: a search that includes the trash is the hybrid search's order: the rules are for
live turns (a trashed turn's neighbours are not searched with it).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

import numpy as np

from cranimem_mcp.buffer.episodic import EpisodicStore
from cranimem_mcp.buffer.working_set import LIVE, Entry
from cranimem_mcp.conversation import speakers
from cranimem_mcp.conversation.rerank import Rerank, rerank


@dataclass(frozen=True)
class ConversationRanker:
    """``speaker_turns``: a name heading this many memories of the scope is a speaker (0: no
    speaker focus); ``rerank`` re-scores the search over everyone, ``speaker_rerank`` the
    search among the named speakers' turns."""

    episodic: EpisodicStore
    speaker_turns: int
    rerank: Rerank
    speaker_rerank: Rerank

    async def focus(self, scope: str, query: str, tiers: tuple[str, ...]) -> speakers.Focus | None:
        """Who of the scope's speakers the query names, and what the episodic search then
        looks for (the query without their names); None when it names none, or the search
        is not of the live tiers alone: the query is searched as it is."""
        if tiers != LIVE or self.speaker_turns <= 0:
            return None
        said = await self.episodic.speakers(scope, self.speaker_turns)
        return speakers.focus(query, said) if said else None

    async def rank(
        self, scope: str, query: str, qvec: np.ndarray, k: int, as_of: datetime | None,
        tiers: tuple[str, ...], focus: speakers.Focus | None,
    ) -> list[tuple[Entry, float]]:  # fmt: skip
        """The named speakers' own turns first (with ``focus``), then the others."""
        if tiers != LIVE:
            plain = Rerank()
            return await self._everyone(scope, query, qvec, k, as_of, plain, tiers, frozenset())
        named = focus.names if focus is not None else frozenset()
        own: list[tuple[Entry, float]] = []
        if focus is not None:
            own = await speakers.their_turns(
                self.episodic, scope, query, qvec, k, as_of, focus, self.speaker_rerank
            )
        # Why skip: with k of the speakers' turns in hand, the search over everyone would only
        # rank below them, past the k returned (-10 to 15 ms a recall at 1k memories).
        if len(own) >= k:
            return own
        others = await self._everyone(scope, query, qvec, k, as_of, self.rerank, tiers, named)
        return speakers.first(own, others)

    async def read_ahead(
        self, scope: str, query: str, k: int, as_of: datetime | None,
        tiers: tuple[str, ...], focus: speakers.Focus | None,
    ) -> None:  # fmt: skip
        """The search over everyone's full-text half; none when the query names speakers
        (their own turns are searched first, and may be all that is asked)."""
        if tiers != LIVE:
            await self.episodic.read_ahead(scope, query, tiers, _searched(k, as_of))
        elif focus is None:
            await self.episodic.read_ahead(
                scope, query, tiers, _searched(k * self.rerank.pool, as_of)
            )

    async def _everyone(
        self, scope: str, query: str, qvec: np.ndarray, k: int, as_of: datetime | None,
        policy: Rerank, tiers: tuple[str, ...], named: frozenset[str],
    ) -> list[tuple[Entry, float]]:  # fmt: skip
        """The hybrid search over every memory of ``tiers``, re-scored by ``policy``."""
        pool = k * policy.pool
        limit = _searched(pool, as_of)
        hits = await self.episodic.hybrid(scope, qvec, query, tiers, limit=limit)
        if as_of is not None:
            # What was known then: memories of events up to that time.
            hits = [h for h in hits if h.entry.happened_at <= as_of][:pool]
        live = policy.active and tiers == LIVE
        entries = await self.episodic.live_rows(scope, LIVE) if live else []
        if as_of is not None:
            entries = [e for e in entries if e.happened_at <= as_of]
        # The fused relevance orders the candidates, with the re-scoring; each shows that sum
        # on the cosine's scale.
        return rerank(hits, entries, named, policy)


def _searched(pool: int, as_of: datetime | None) -> int:
    """How many hits to ask the hybrid search for to re-score ``pool``: more when only the
    events up to ``as_of`` count (the search cannot filter by event time)."""
    return pool if as_of is None else 4 * pool
