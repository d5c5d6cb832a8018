"""The hybrid search of a mirrored scope: the vector half answered by the working set, the
full-text half by LanceDB, fused by the reranker LanceDB's own hybrid query uses.

Invariant: it ranks as LanceDB's hybrid query over the same rows would (scores normalised
per half as LanceDB normalises them before it fuses; tests/test_working_set.py checks it).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pyarrow as pa

from .lance import LanceHybridQueryBuilder
from .records import Hit
from .working_set import Entry, ScopeSet


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
    normalise = LanceHybridQueryBuilder._normalize_scores
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
