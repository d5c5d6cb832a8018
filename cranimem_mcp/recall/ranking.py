"""How the episodic path ranks a scope's memories for a query: the :class:`Ranker` seam.

The engine picks one from the settings and hands it to recall. :class:`HybridRanker` is the
plain one: the hybrid search's own order (vector and full-text halves, fused), each memory
with the fused score that ranked it, on the cosine's scale
(:mod:`~cranimem_mcp.buffer.fusion`). The conversation-aware one
(:class:`~cranimem_mcp.conversation.ranking.ConversationRanker`) searches a named speaker's
own turns first and lends a turn's neighbours part of its score; it applies only to a scope
that holds a conversation's turns.

Invariant: a ranker only orders and scores candidates, best first, and the score it gives is
the one that ordered them (never rising down the list); recall then puts the memories holding
a query's exact tokens first (:mod:`.exact`) and keeps the best ``k``.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Protocol

import numpy as np

from cranimem_mcp.buffer.episodic import EpisodicStore
from cranimem_mcp.buffer.working_set import Entry
from cranimem_mcp.conversation.speakers import Focus


class Ranker(Protocol):
    """Ranks a scope's memories of some tiers for a query."""

    async def focus(self, scope: str, query: str, tiers: tuple[str, ...]) -> Focus | None:
        """Who of the scope's speakers the query names, and what the search then looks for
        (the query without their names); None: the query is searched as it is."""
        ...

    async def rank(
        self, scope: str, query: str, qvec: np.ndarray, k: int, as_of: datetime | None,
        tiers: tuple[str, ...], focus: Focus | None,
    ) -> list[tuple[Entry, float]]:  # fmt: skip
        """The candidates for ``query`` (embedded as ``qvec``; with a ``focus``, its query),
        best first, each with the score that ranked it: at least ``k`` when the tiers hold as
        many, of events up to ``as_of`` when it is given."""
        ...

    async def read_ahead(
        self, scope: str, query: str, k: int, as_of: datetime | None,
        tiers: tuple[str, ...], focus: Focus | None,
    ) -> None:  # fmt: skip
        """Run now what :meth:`rank` of the same arguments reads that needs no query vector
        (the hybrid search's full-text half): recall runs it while the query is embedded.
        Never raises."""
        ...


@dataclass(frozen=True)
class HybridRanker:
    """The hybrid search's top ``k`` as it ranks them, with its fused scores."""

    episodic: EpisodicStore

    async def focus(self, scope: str, query: str, tiers: tuple[str, ...]) -> Focus | None:
        return None

    async def read_ahead(
        self, scope: str, query: str, k: int, as_of: datetime | None,
        tiers: tuple[str, ...], focus: Focus | None,
    ) -> None:  # fmt: skip
        await self.episodic.read_ahead(scope, query, tiers, _searched(k, as_of))

    async def rank(
        self, scope: str, query: str, qvec: np.ndarray, k: int, as_of: datetime | None,
        tiers: tuple[str, ...], focus: Focus | None,
    ) -> list[tuple[Entry, float]]:  # fmt: skip
        limit = _searched(k, as_of)
        hits = await self.episodic.hybrid(scope, qvec, query, tiers, limit=limit)
        if as_of is not None:  # what was known then: memories of events up to that time
            hits = [h for h in hits if h.entry.happened_at <= as_of][:k]
        return [(h.entry, h.score) for h in hits]


def _searched(k: int, as_of: datetime | None) -> int:
    """How many hits to ask the hybrid search for to rank ``k``: more when only the events
    up to ``as_of`` count (the search cannot filter by event time)."""
    return k if as_of is None else 4 * k
