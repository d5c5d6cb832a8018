"""The hybrid search of a mirrored scope: the vector half answered by the working set, the
full-text half by LanceDB, fused by the reranker LanceDB's own hybrid query uses; and the
score a hybrid search's hit shows (:func:`shown`).

Invariant: it ranks as LanceDB's hybrid query over the same rows would (scores normalised
per half as LanceDB normalises them before it fuses; tests/test_working_set.py checks the
ranking, tests/test_fusion.py the normalisation).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from cranimem_mcp.buffer.records import Hit
from cranimem_mcp.buffer.working_set import Entry, ScopeSet


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
    mirrored: ScopeSet,
    vector: np.ndarray,
    near: Sequence[tuple[Entry, float]],
    text: Sequence[tuple[str, float]],
    limit: int,
) -> list[Hit]:
    """The best ``limit`` of the vector half ``near`` (entries and cosines, best first) and
    the full-text half ``text`` (ids and scores, best first, all in ``mirrored``)."""
    text_ids = [memory_id for memory_id, _score in text]
    # The reranker wants integer row ids, and scores normalised as LanceDB's hybrid
    # query normalises them (min-max per list) before it fuses.
    ids = list(dict.fromkeys([*(e.id for e, _s in near), *text_ids]))
    number = {memory_id: n for n, memory_id in enumerate(ids)}
    vector_half = pa.table({
        "_rowid": pa.array([number[e.id] for e, _s in near], pa.uint64()),
        "_distance": normalise(pa.array([1.0 - s for _e, s in near], pa.float32())),
    })  # fmt: skip
    text_half = pa.table({
        "_rowid": pa.array([number[i] for i in text_ids], pa.uint64()),
        "_score": normalise(pa.array([score for _i, score in text], pa.float32())),
    })  # fmt: skip
    fused = reranker.rerank_hybrid("", vector_half, text_half)
    out = []
    ranked = zip(fused["_rowid"].to_pylist(), fused["_relevance_score"].to_pylist(), strict=True)
    for rowid, score in list(ranked)[:limit]:
        found_entry = mirrored.entry(ids[rowid])
        if found_entry is not None:
            sim = mirrored.similarity(found_entry.id, vector)
            out.append(Hit(found_entry, sim, float(score)))
    return out


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


def shown(hits: Sequence[Hit], scored: bool) -> list[float]:
    """The score each of ``hits`` (a hybrid search's, best first) shows: its fused score when
    the fusion is on the cosine's scale and ranks (``scored``: the ``lift`` fusion), else its
    cosine, lifted a little by its rank (an rrf or linear fused score is on no scale a reader
    knows, and a context block's ``min_score`` is a cosine)."""
    return [
        h.fused if scored else h.similarity + 0.05 * (1.0 - rank / len(hits))
        for rank, h in enumerate(hits)
    ]
