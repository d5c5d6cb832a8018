"""`measure_ranking.py` with the top of each ranking made diverse: maximal marginal relevance
(MMR) over the ranker's best ``POOL`` x k candidates (issue 41; tried, not kept: RESULTS).

Each next item is the remaining candidate with the best ``λ x relevance - (1 - λ) x
penalty``, the penalty its highest cosine to the items above it (with ``TH``: only the part
above ``TH``, rescaled to 0-1); the vectors are the stored ones. Both rankers are wrapped, so
the conversation rules run first. Environment: ``MMR`` (λ; 1 = off), ``POOL`` (3), ``TH`` (0).
Arguments as ``measure_ranking.py``'s:

    MMR=0.9 PYTHONPATH=. .venv/bin/python scripts/measure_diversity.py --filled /tmp/rk2/filled \\
        --per-type 100 --only locomo
"""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import measure_ranking  # noqa: E402

from cranimem_mcp.conversation.ranking import ConversationRanker  # noqa: E402
from cranimem_mcp.recall.ranking import HybridRanker  # noqa: E402

LAMBDA = float(os.environ.get("MMR", "1"))
POOL = int(os.environ.get("POOL", "3"))
TH = float(os.environ.get("TH", "0"))


def diverse(relevance: np.ndarray, vectors: np.ndarray) -> list[int]:
    """The candidates' order by MMR (the first: the most relevant)."""
    sims = vectors @ vectors.T
    chosen: list[int] = []
    left = list(range(len(relevance)))
    above = np.full(len(relevance), -1.0, dtype=np.float32)
    while left:
        values = [
            LAMBDA * relevance[i] - (1 - LAMBDA) * max(above[i] - TH, 0.0) / (1 - TH)
            if chosen
            else relevance[i]
            for i in left
        ]
        best = left[int(np.argmax(values))]
        chosen.append(best)
        left.remove(best)
        above = np.maximum(above, sims[best])
    return chosen


def wrap(cls: type) -> None:
    plain = cls.rank

    async def rank(self, scope, query, qvec, k, as_of, tiers, focus):  # type: ignore[no-untyped-def]
        if LAMBDA >= 1:
            return await plain(self, scope, query, qvec, k, as_of, tiers, focus)
        ranked = await plain(self, scope, query, qvec, POOL * k, as_of, tiers, focus)
        if len(ranked) <= 1:
            return ranked
        stored = {m.id: m for m in await self.episodic.get([e.id for e, _ in ranked], vectors=True)}
        vectors = np.array([np.asarray(stored[e.id].vector, np.float32) for e, _ in ranked])
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True) + 1e-9
        relevance = np.array([s for _, s in ranked], dtype=np.float32)
        return [ranked[i] for i in diverse(relevance, vectors)]

    cls.rank = rank


if __name__ == "__main__":
    wrap(HybridRanker)
    wrap(ConversationRanker)
    asyncio.run(measure_ranking.main())
