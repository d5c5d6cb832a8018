"""Full-text search alone on the filled stores of ``measure_ranking.py`` (issue 41): LanceDB's
FTS index under several tokenizer settings against a plain Okapi BM25
(:mod:`cranimem_mcp.eval.bm25`) over the same live memories, turn R@5 / R@10.

No engine, no embedder: each store's table is copied, its live memories read, and for each
index setting the full-text index rebuilt on the copy and every question searched as recall's
full-text half searches it (the query's words, OR, live tiers). So the rows compare the
full-text half itself, on exactly the memories the gate kept.

    PYTHONPATH=. .venv/bin/python scripts/measure_fts.py --filled /tmp/rk/filled [--only locomo]
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

import lancedb
from lancedb.index import FTS

sys.path.insert(0, str(Path(__file__).resolve().parent))
from measure_ranking import benchmarks  # noqa: E402

from cranimem_mcp.eval import metrics  # noqa: E402
from cranimem_mcp.eval.bm25 import BM25  # noqa: E402

# LanceDB's defaults: the simple tokenizer, lower case, English stemming and stop words,
# ASCII folding. Each other row turns some of that off.
SETTINGS: dict[str, dict[str, Any]] = {
    "lancedb default (stem, stop words)": {},
    "no stemming": {"stem": False},
    "no stop words": {"remove_stop_words": False},
    "neither, no folding": {"stem": False, "remove_stop_words": False, "ascii_folding": False},
}
KS = (5, 10)


def recall_row(found: list[str], wanted: list[str]) -> dict[int, float | None]:
    ranks = metrics.evidence_ranks(found, wanted)
    return {k: metrics.recall_at_k(ranks, k) for k in KS}


def measure(root: Path, bench: str, items: list[dict[str, Any]]) -> dict[str, list[float]]:
    rows: dict[str, list[dict[int, float | None]]] = {"plain BM25": [], **{n: [] for n in SETTINGS}}
    for item in items:
        with tempfile.TemporaryDirectory(prefix="fts-") as tmp:
            shutil.copytree(root / bench / item["scope"] / "episodic", Path(tmp) / "episodic")
            table = lancedb.connect(Path(tmp) / "episodic").open_table("memories")
            live = [
                r
                for r in table.to_arrow().select(["id", "content", "tier"]).to_pylist()
                if r["tier"] != "trash"
            ]
            content = {r["id"]: r["content"] for r in live}
            plain = BM25()
            for r in live:
                plain.add(r["content"])
            for q in item["questions"]:
                found = [live[i]["content"] for i, _s in plain.top(q["text"], max(KS))]
                rows["plain BM25"].append(recall_row(found, q["wanted"]))
            for name, config in SETTINGS.items():
                table.create_index("content", config=FTS(**config), replace=True)
                for q in item["questions"]:
                    terms = " ".join(re.findall(r"\w+", q["text"]))
                    hits = (
                        table.search(terms, query_type="fts")
                        .where("tier != 'trash'", prefilter=True)
                        .limit(max(KS))
                        .select(["id", "_score"])
                        .to_list()
                    )
                    found = [content[h["id"]] for h in hits if h["id"] in content]
                    rows[name].append(recall_row(found, q["wanted"]))
    return {
        name: [round(metrics.mean(r[k] for r in got) or 0.0, 3) for k in KS]
        for name, got in rows.items()
    }


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--filled", type=Path, required=True)
    p.add_argument("--per-type", type=int, default=100)
    p.add_argument("--only", choices=("locomo", "longmemeval"))
    args = p.parse_args()
    stores = benchmarks(args.per_type)
    for bench, items in stores.items():
        if args.only and bench != args.only:
            continue
        print(bench, json.dumps(measure(args.filled, bench, items)), flush=True)


if __name__ == "__main__":
    main()
