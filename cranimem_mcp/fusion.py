"""Fusion: how the vector half and the full-text half of a hybrid search become one ranking.

LanceDB's hybrid query normalises each half min-max over its own list and hands both to a
reranker (reciprocal rank, or a linear combination weighted towards the vector half). A scope
mirrored in memory runs its vector half on the working set; :func:`fuse` fuses the two halves
exactly as LanceDB's hybrid query would, with the same reranker, so both paths rank alike.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa

from .lance import LanceHybridQueryBuilder


def fuse(
    reranker: Any, near: list[tuple[str, float]], text: list[tuple[str, float]]
) -> list[tuple[str, float]]:
    """``near``: (id, cosine) of the vector half, best first; ``text``: (id, BM25 score) of
    the full-text half, best first. Returns (id, fused relevance), best first."""
    ids = list(dict.fromkeys([*(i for i, _s in near), *(i for i, _s in text)]))
    number = {memory_id: n for n, memory_id in enumerate(ids)}
    # The reranker wants integer row ids, and scores normalised as LanceDB's hybrid query
    # normalises them (min-max per list) before it fuses.
    normalise = LanceHybridQueryBuilder._normalize_scores
    vector_half = pa.table({
        "_rowid": pa.array([number[i] for i, _s in near], pa.uint64()),
        "_distance": normalise(pa.array([1.0 - s for _i, s in near], pa.float32())),
    })  # fmt: skip
    text_half = pa.table({
        "_rowid": pa.array([number[i] for i, _s in text], pa.uint64()),
        "_score": normalise(pa.array([s for _i, s in text], pa.float32())),
    })  # fmt: skip
    fused = reranker.rerank_hybrid("", vector_half, text_half)
    ranked = zip(fused["_rowid"].to_pylist(), fused["_relevance_score"].to_pylist(), strict=True)
    return [(ids[rowid], float(score)) for rowid, score in ranked]
