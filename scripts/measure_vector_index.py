"""Flat scan vs an IVF_PQ index for a scope's nearest-neighbour search, on a bench table.

Copies the `memories` table of a LanceDB directory (e.g. one `cranimem-mcp bench --workdir
DIR` left in DIR/constant/episodic), times 30 prefiltered top-8 searches of the scope
"bench" without and with an IVF_PQ index, and the overlap of the index's answers with the
exact ones. The numbers behind "Vector index" in docs/RESULTS.md.

    .venv/bin/python scripts/measure_vector_index.py DIR/constant/episodic
"""

from __future__ import annotations

import shutil
import sys
import tempfile
import time
from pathlib import Path

import lancedb
import numpy as np
from lancedb.index import IvfPq

WHERE = "scope = 'bench' AND tier IN ('buffer', 'longterm')"


def main(source: Path) -> None:
    copy = Path(tempfile.mkdtemp(prefix="cranimem-ivf-")) / "episodic"
    shutil.copytree(source, copy)
    table = lancedb.connect(str(copy)).open_table("memories")
    print("rows", table.count_rows())
    rng = np.random.default_rng(0)
    scope = table.search().where(WHERE).select(["vector"]).limit(None).to_arrow()
    vectors = scope.column("vector").combine_chunks().flatten().to_numpy().reshape(-1, 384)
    queries = vectors[rng.integers(0, len(vectors), 30)]
    queries = queries + rng.standard_normal(queries.shape).astype(np.float32) * 0.05
    queries /= np.linalg.norm(queries, axis=1, keepdims=True)

    def run(label: str, **options: int) -> list[list[str]]:
        times, answers = [], []
        for q in queries:
            started = time.perf_counter()
            query = table.search(q.tolist()).distance_type("cosine").where(WHERE, prefilter=True)
            query = query.limit(8).select(["id"])
            for name, value in options.items():
                query = getattr(query, name)(value)
            answers.append([r["id"] for r in query.to_list()])
            times.append((time.perf_counter() - started) * 1000)
        print(f"{label}: p50 {np.median(times):.1f} ms")
        return answers

    exact = run("flat scan")
    started = time.perf_counter()
    table.create_index(
        "vector", config=IvfPq(distance_type="cosine", num_partitions=128, num_sub_vectors=48)
    )
    print(f"IVF_PQ build: {time.perf_counter() - started:.0f} s")
    variants = {
        "nprobes 10": {"nprobes": 10},
        "nprobes 32": {"nprobes": 32},
        "nprobes 32, refine 4": {"nprobes": 32, "refine_factor": 4},
    }
    for label, options in variants.items():
        got = run(f"IVF_PQ {label}", **options)
        overlap = np.mean([len(set(a) & set(b)) / 8 for a, b in zip(got, exact, strict=True)])
        print(f"  top-8 overlap with the exact answer: {overlap:.2f}")
    shutil.rmtree(copy.parent)


if __name__ == "__main__":
    main(Path(sys.argv[1]))
