"""The min-max normalisation the mirrored hybrid search applies to each half before it fuses
(:func:`cranimem_mcp.buffer.fusion.normalise`) is the one LanceDB's own hybrid query applies:
checked against what a real LanceDB table's hybrid query hands its reranker, and on the edge
cases (empty, one score, all equal, all zero)."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from cranimem_mcp.buffer.fusion import normalise
from cranimem_mcp.buffer.lance import FTS, LinearCombinationReranker, RRFReranker, lancedb

TEXTS = [
    "the cat sat on the mat",
    "a dog chased the cat across the yard",
    "stock prices fell sharply on monday",
    "the cat and the dog slept by the fire",
    "rain is expected over the weekend",
    "my cat likes tuna and warm blankets",
    "the committee approved the new budget",
    "a quiet cat watched the birds",
]


def recording(base: type) -> type:
    """``base`` (a LanceDB reranker) that keeps the two halves the hybrid query hands it:
    LanceDB has normalised their ``_distance`` and ``_score`` by then."""

    class Recording(base):  # type: ignore[misc, valid-type]
        def rerank_hybrid(self, query, vector_results, fts_results):  # noqa: ANN001, ANN201
            self.seen = (vector_results, fts_results)
            return super().rerank_hybrid(query, vector_results, fts_results)

    return Recording


def by_rowid(table: pa.Table, column: str) -> dict[int, float]:
    return dict(zip(table["_rowid"].to_pylist(), table[column].to_pylist(), strict=True))


@pytest.fixture
def table(tmp_path):
    rng = np.random.default_rng(7)
    vectors = rng.normal(size=(len(TEXTS), 8)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    db = lancedb.connect(tmp_path / "db")
    tbl = db.create_table(
        "t",
        pa.table(
            {
                "text": TEXTS,
                "vector": pa.FixedSizeListArray.from_arrays(pa.array(vectors.ravel()), 8),
            }
        ),  # fmt: skip
    )
    tbl.create_index("text", config=FTS())
    return tbl, rng


@pytest.mark.parametrize("reranker", [LinearCombinationReranker, RRFReranker])
@pytest.mark.parametrize("query", ["cat", "the cat dog", "budget"])
def test_normalise_is_lancedb_hybrid_normalisation(table, reranker, query):
    tbl, rng = table
    vector = rng.normal(size=8).astype(np.float32)
    vector /= np.linalg.norm(vector)
    rec = recording(reranker)()
    fused = (
        tbl.search(query_type="hybrid")
        .vector(vector.tolist())
        .text(query)
        .distance_type("cosine")
        .limit(len(TEXTS))
        .rerank(rec)
        .to_arrow()
    )
    assert fused.num_rows > 0
    seen_vector, seen_text = rec.seen
    # The raw halves, from the plain vector and full-text searches the hybrid query runs.
    raw_vector = (
        tbl.search(vector.tolist())
        .distance_type("cosine")
        .limit(len(TEXTS))
        .with_row_id(True)
        .to_arrow()
    )
    raw_text = tbl.search(query, query_type="fts").limit(len(TEXTS)).with_row_id(True).to_arrow()
    assert raw_vector.num_rows > 1 and raw_text.num_rows > 0

    ours = normalise(raw_vector["_distance"].combine_chunks())
    assert ours.type == seen_vector["_distance"].type
    assert dict(zip(raw_vector["_rowid"].to_pylist(), ours.to_pylist(), strict=True)) == (
        by_rowid(seen_vector, "_distance")
    )  # bit for bit: the same float32 arithmetic
    ours = normalise(raw_text["_score"].combine_chunks())
    assert ours.type == seen_text["_score"].type
    assert dict(zip(raw_text["_rowid"].to_pylist(), ours.to_pylist(), strict=True)) == (
        by_rowid(seen_text, "_score")
    )


def f32(values: list[float]) -> pa.Array:
    return pa.array(values, pa.float32())


@pytest.mark.parametrize(
    ("scores", "want"),
    [
        ([], []),
        ([0.0], [0.0]),  # one score, zero: unchanged
        ([3.5], [0.0]),  # one score: the least, so 0
        ([2.0, 2.0, 2.0], [0.0, 0.0, 0.0]),  # all equal: all 0, never a division by 0
        ([0.0, 0.0], [0.0, 0.0]),
        ([-1.0, -1.0], [0.0, 0.0]),
        ([1.0, 3.0, 2.0], [0.0, 1.0, 0.5]),
        ([0.25, 0.75, 0.5, 0.25], [0.0, 1.0, 0.5, 0.0]),
        ([-2.0, 0.0, 2.0], [0.0, 0.5, 1.0]),
    ],
)
def test_normalise_edge_cases(scores, want):
    got = normalise(f32(scores))
    assert got.type == pa.float32()
    assert got.to_pylist() == want


def test_normalise_keeps_float32_arithmetic():
    """Scaled in float32, as LanceDB scales (not in float64 and rounded afterwards)."""
    scores = [0.1, 0.7, 0.3]
    want = (np.float32(scores) - np.float32(0.1)) / (np.float32(0.7) - np.float32(0.1))
    assert normalise(f32(scores)).to_pylist() == want.astype(np.float32).tolist()


def test_lift_ranks_by_cosine_plus_a_share_of_the_best_text_score():
    """The ``lift`` fusion: a candidate's score is its cosine plus the weight times its
    full-text score over the best one; the score shown is the one that ranks."""
    from datetime import UTC, datetime

    from cranimem_mcp.buffer.fusion import lift
    from cranimem_mcp.buffer.working_set import Entry

    def entry(name: str) -> Entry:
        return Entry(name, "buffer", name, name, datetime.now(UTC), None, None)

    a, b, c, d = (entry(x) for x in "abcd")
    near = [(a, 0.58), (b, 0.55), (c, 0.40)]
    text = [(c, 0.40, 8.0), (d, 0.30, 4.0)]  # d: a lexical match the vector half missed
    hits = lift(near, text, 0.2, limit=3)
    assert [h.entry.id for h in hits] == ["c", "a", "b"]
    assert [round(h.fused, 6) for h in hits] == [0.60, 0.58, 0.55]
    assert hits[0].similarity == 0.40
    assert [h.fused for h in hits] == sorted((h.fused for h in hits), reverse=True)
    assert [h.entry.id for h in lift(near, [], 0.2, limit=5)] == ["a", "b", "c"]
    assert round(lift([], text, 0.2, limit=5)[1].fused, 6) == 0.40  # d: 0.30 + 0.2 x 4/8


@pytest.mark.parametrize("weight", [0.7, 0.5])
def test_the_linear_fusion_shows_each_cosine_lifted_by_its_words_in_the_order_it_ranks(weight):
    """LanceDB's linear relevance on the cosine's scale: a memory of the vector half shows its
    cosine plus (1 - w) / w x the vector half's cosine spread x its full-text share, one the
    vector half missed the half's least cosine plus the same; the order is LanceDB's, and the
    score never rises down the list (it did, with the cosine shown: issue 41)."""
    from datetime import UTC, datetime

    from cranimem_mcp.buffer.fusion import fuse
    from cranimem_mcp.buffer.working_set import Entry

    def entry(name: str) -> Entry:
        return Entry(name, "buffer", name, name, datetime.now(UTC), None, None)

    a, b, c, d = (entry(x) for x in "abcd")
    near = [(a, 0.60), (b, 0.50), (c, 0.40)]
    text = [(c, 0.40, 8.0), (d, 0.20, 6.0), (b, 0.50, 2.0)]  # d: only full-text found it
    hits = fuse(LinearCombinationReranker(weight), weight, near, text, limit=4)
    lift = (1 - weight) / weight * (0.60 - 0.40)
    share = {"a": 0.0, "b": 0.0, "c": 1.0, "d": (6.0 - 2.0) / (8.0 - 2.0)}  # min-max of 8, 6, 2
    base = {"a": 0.60, "b": 0.50, "c": 0.40, "d": 0.40}  # d: the vector half's least cosine
    want = {n: base[n] + lift * share[n] for n in "abcd"}
    assert {h.entry.id: h.score for h in hits} == pytest.approx(want, abs=1e-6)
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
    assert [h.entry.id for h in hits] == sorted(want, key=lambda n: -want[n])
    # No full-text half: the cosine itself; reciprocal rank: the order kept, the best shows
    # the best cosine.
    alone = fuse(LinearCombinationReranker(weight), weight, near, [], limit=3)
    assert [round(h.score, 6) for h in alone] == [0.60, 0.50, 0.40]
    rrf = fuse(RRFReranker(), None, near, text, limit=4)
    assert [h.score for h in rrf] == sorted((h.score for h in rrf), reverse=True)
    assert rrf[0].score == pytest.approx(0.60)
