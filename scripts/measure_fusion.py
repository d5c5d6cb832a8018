"""Offline: how each way of choosing the k = 8 memories does on HotpotQA (clean setting).

Per question, the ten paragraphs go into their own LanceDB table with a full-text index;
the top 8 are chosen by cosine alone, by LanceDB's hybrid query with reciprocal-rank fusion
(what cranimem uses), and with LanceDB's linear-combination reranker at two vector weights;
the context is built as the engine builds it (best score first, 4,000 characters) and scored
with the benchmark's own metrics. No gate, no replay, no shared table: an upper bound for
the retrieval step alone. The numbers behind "What to try next" in docs/RESULTS.md.

    .venv/bin/python scripts/measure_fusion.py 150
"""

from __future__ import annotations

import re
import sys
import tempfile
from pathlib import Path

import anyio
import lancedb
import numpy as np
from lancedb.index import FTS
from lancedb.rerankers import LinearCombinationReranker, RRFReranker

from cranimem_mcp.backends.embeddings import OnnxEmbedder
from cranimem_mcp.eval import metrics
from cranimem_mcp.eval.data import load_questions

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "hotpotqa_dev412.jsonl"
RERANKERS = {
    "rrf": RRFReranker(),
    "linear 0.7": LinearCombinationReranker(0.7),
    "linear 0.85": LinearCombinationReranker(0.85),
}


async def main(count: int) -> None:
    embedder = OnnxEmbedder()
    db = lancedb.connect(tempfile.mkdtemp(prefix="cranimem-fusion-"))
    scores: dict[str, dict[str, list[float]]] = {}
    for n, q in enumerate(load_questions(DATA)[:count]):
        texts = [p.text for p in q.context]
        vectors = await embedder.embed(texts)
        qvec = (await embedder.embed([q.question]))[0]
        rows = [{"id": i, "content": t, "vector": v.tolist()} for i, (t, v) in
                enumerate(zip(texts, vectors, strict=True))]  # fmt: skip
        table = db.create_table(f"q{n}", data=rows, mode="overwrite")
        table.create_index("content", config=FTS(), replace=True)
        terms = " ".join(re.findall(r"\w+", q.question))
        sims = vectors @ qvec
        chosen = {"cosine": [int(i) for i in np.argsort(-sims)[:8]]}
        for name, reranker in RERANKERS.items():
            query = table.search(query_type="hybrid").vector(qvec.tolist()).text(terms)
            found = query.distance_type("cosine").rerank(reranker).limit(8).to_list()
            chosen[name] = [r["id"] for r in found]
        for name, ids in chosen.items():
            lifted = {i: sims[i] + 0.05 * (1 - rank / len(ids)) for rank, i in enumerate(ids)}
            context, budget = "", 4000
            for i in sorted(ids, key=lambda i: -lifted[i]):
                if len(texts[i]) + 1 <= budget:
                    context += texts[i] + "\n"
                    budget -= len(texts[i]) + 1
            got = scores.setdefault(name, {"answer": [], "sf": []})
            answer = metrics.answer_recall(context, q.answer)
            sf = metrics.supporting_fact_recall(context, q.supporting_sentences())
            if answer is not None:
                got["answer"].append(answer)
            if sf is not None:
                got["sf"].append(sf)
    for name, got in scores.items():
        print(f"{name:12s} answer recall {np.mean(got['answer']):.3f}  "
              f"SF recall {np.mean(got['sf']):.3f}")  # fmt: skip


if __name__ == "__main__":
    anyio.run(main, int(sys.argv[1]) if len(sys.argv) > 1 else 150)
