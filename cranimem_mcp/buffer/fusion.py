"""The fusion of a hybrid search's two halves (the vector half, answered by the working set
or LanceDB, and LanceDB's full-text half): by the reranker LanceDB's own hybrid query uses
(linear or reciprocal rank, :func:`fuse`), or by the ``lift`` fusion (:func:`lift`).

Invariants: :func:`fuse` ranks as LanceDB's hybrid query over the same rows would (scores
normalised per half as LanceDB normalises them before it fuses; tests/test_working_set.py
checks the ranking, tests/test_fusion.py the normalisation). Every hit's ``score`` is on the
cosine's scale and rises with the relevance that ranks it: a recall shows it, so a memory
shown above another never scores less (:func:`on_cosine_scale`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from cranimem_mcp.buffer.records import Hit
from cranimem_mcp.buffer.working_set import Entry


def normalise(scores: pa.Array) -> pa.Array:
    """Min-max normalised ``scores``, exactly as LanceDB's hybrid query normalises each half
    before it fuses (``LanceHybridQueryBuilder._normalize_scores`` in lancedb 0.40, a private
    method we may not call: its few lines are repeated here, in the same Arrow kernels so the
    float32 results are bit for bit LanceDB's).

    Empty: unchanged. All equal: all 0 (unchanged when they are all 0 already). Otherwise
    ``(s - min) / (max - min)``, so the least is 0 and the greatest 1.
    """
    if len(scores) == 0:
        return scores
    low, high = pc.min_max(scores).values()
    spread = pc.subtract(high, low)
    if not pc.equal(spread, pa.scalar(0.0)).as_py():
        return pc.divide(pc.subtract(scores, low), spread)
    if not pc.equal(high, pa.scalar(0.0)).as_py():
        return pc.subtract(scores, low)
    return scores


def fuse(
    reranker: Any,
    weight: float | None,
    near: Sequence[tuple[Entry, float]],
    text: Sequence[tuple[Entry, float, float]],
    limit: int,
) -> list[Hit]:
    """The best ``limit`` of the vector half ``near`` (entries and cosines, best first) and
    the full-text half ``text`` (entries, cosines and BM25 scores, best first), in the
    order of ``reranker`` (LanceDB's, which ``weight`` parametrises for the linear fusion;
    None: reciprocal rank), each with its fused relevance on the cosine's scale
    (:func:`on_cosine_scale`): the score that ranks it is the score it shows."""
    entries = {e.id: (e, sim) for e, sim in near} | {e.id: (e, sim) for e, sim, _s in text}
    ids = list(entries)
    number = {memory_id: n for n, memory_id in enumerate(ids)}
    # The reranker wants integer row ids, and scores normalised as LanceDB's hybrid
    # query normalises them (min-max per list) before it fuses.
    vector_half = pa.table({
        "_rowid": pa.array([number[e.id] for e, _s in near], pa.uint64()),
        "_distance": normalise(pa.array([1.0 - s for _e, s in near], pa.float32())),
    })  # fmt: skip
    text_half = pa.table({
        "_rowid": pa.array([number[e.id] for e, _sim, _s in text], pa.uint64()),
        "_score": normalise(pa.array([score for _e, _sim, score in text], pa.float32())),
    })  # fmt: skip
    fused = reranker.rerank_hybrid("", vector_half, text_half)
    ranked = zip(fused["_rowid"].to_pylist(), fused["_relevance_score"].to_pylist(), strict=True)
    out = []
    for rowid, relevance in list(ranked)[:limit]:
        found, sim = entries[ids[rowid]]
        out.append(Hit(found, sim, float(relevance)))
    # No full-text half: LanceDB's linear relevance is the vector half's share alone (w = 1).
    alone = 1.0 if not text and weight is not None else weight
    return on_cosine_scale(out, [sim for _e, sim in near], alone)


# The cosines' spread assumed when the vector half's are all equal (one candidate): what the
# best full-text match can add is then (1 - weight) / weight x this.
NOMINAL_SPREAD = 0.1


def on_cosine_scale(hits: list[Hit], cosines: Sequence[float], weight: float | None) -> list[Hit]:
    """``hits`` (best first, ``fused``: LanceDB's relevance), each told how its search's
    relevance maps onto the cosine's scale (``base + per x relevance``, rising with it), so
    that the score a recall shows is the score that ranked it. ``cosines``: the vector
    half's.

    Linear fusion (``weight`` w, the vector half's share): LanceDB's relevance is
    ``w x (cos - lo) / (hi - lo) + (1 - w) x t``, with ``lo`` and ``hi`` the vector half's
    least and greatest cosine and ``t`` the full-text score's min-max share (0 when full-text
    search did not find it). So ``lo + (hi - lo) / w x relevance`` is exactly
    ``cos + (1 - w) / w x (hi - lo) x t``: the memory's cosine (the vector half's least, for a
    memory only full-text search found) lifted by its words; with no full-text half
    (``weight`` 1), the cosine itself. Reciprocal rank (``weight`` None) or text alone (0):
    the relevance's range mapped onto the cosines' (the best shows ``hi``, the least
    ``lo``)."""
    if not hits:
        return hits
    pool = list(cosines) or [h.similarity for h in hits]
    hi, lo = max(pool), min(pool)
    spread = hi - lo or NOMINAL_SPREAD
    if weight is not None and weight > 0:
        base, per = hi - spread, spread / weight
    else:
        top, least = max(h.fused for h in hits), min(h.fused for h in hits)
        per = spread / (top - least) if top > least else 0.0
        base = lo - per * least if top > least else hi
    return [Hit(h.entry, h.similarity, h.fused, base, per) for h in hits]


def lift(
    near: Sequence[tuple[Entry, float]],
    text: Sequence[tuple[Entry, float, float]],
    weight: float,
    limit: int,
) -> list[Hit]:
    """The ``lift`` fusion: every candidate of either half scored by its cosine to the query
    plus ``weight`` times its full-text score over the best full-text score (so the best
    lexical match gains ``weight``, a memory full-text search did not find nothing). ``near``:
    the vector half (entries and cosines), ``text``: the full-text half (entries, cosines,
    BM25 scores), each best first. The score is on the cosine's scale, so the one shown is the
    one that ranks and an absolute floor keeps its meaning; a lexical match the vector half
    missed still competes with its own meaning, not with a rank."""
    best = max((score for _e, _sim, score in text), default=0.0)
    scored: dict[str, tuple[Entry, float, float]] = {e.id: (e, sim, sim) for e, sim in near}
    for found, sim, score in text:
        share = weight * score / best if best > 0 else 0.0
        scored[found.id] = (found, sim, sim + share)
    ranked = sorted(scored.values(), key=lambda es: -es[2])[:limit]
    return [Hit(found, sim, fused) for found, sim, fused in ranked]
