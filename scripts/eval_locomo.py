"""Evidence recall@k on LoCoMo-dev (two conversations), per embedder: the default MiniLM on
onnxruntime against MiniLM on sentence-transformers/torch.

The protocol of ../shared/data/README.md: write every turn in order as one memory,
"[<session date_time>] <speaker>: <text>" (plus " [image: <caption>]"); ask each category 1-4
question; evidence recall@k is the share of the question's evidence turns whose text is in
one of the top k memories returned, averaged over questions. ``torch+onnx`` writes with
torch and asks with onnx: a store filled by the torch embedder, used by the default one.
Two paths per embedder:

- ``engine``: a fresh MemoryEngine per conversation (heuristic tagger and extractor, the gate
  on, consolidation as scheduled), ``remember`` each turn, ``recall(question, k)``;
- ``vector``: plain cosine top-k over every turn (the embedder alone).

The data is CC BY-NC 4.0: read from ../shared/data, never copied into the repository.

    .venv/bin/python scripts/eval_locomo.py [--data ../shared/data/locomo_dev2.json] [-k 5]
        [--embedder onnx --embedder torch --embedder torch+onnx] [--path engine --path vector]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio
import numpy as np

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("LANCE_LOG", "error")
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from cranimem_mcp.backends.embeddings import OnnxEmbedder, SentenceTransformerEmbedder  # noqa: E402
from cranimem_mcp.config import load_settings  # noqa: E402
from cranimem_mcp.engine import MemoryEngine  # noqa: E402
from cranimem_mcp.eval.locomo import evidence_ids, turn_texts  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent


def questions(sample: dict[str, Any]) -> list[dict[str, Any]]:
    return [q for q in sample["qa"] if q.get("category") in (1, 2, 3, 4) and q.get("evidence")]


def score(found: list[str], evidence: list[str], texts: dict[str, str]) -> float:
    wanted = [texts[e] for e in evidence if e in texts]
    if not wanted:
        return float("nan")
    return sum(any(w in f for f in found) for w in wanted) / len(wanted)


async def run_vector(
    writer: Any, asker: Any, sample: dict[str, Any], k: int
) -> list[tuple[int, float]]:
    ts = turn_texts(sample["conversation"])
    texts = dict(ts)
    vectors = await writer.embed([t for _, t in ts])
    rows = []
    for q in questions(sample):
        qv = (await asker.embed([q["question"]]))[0]
        top = np.argsort(-(vectors @ qv))[:k]
        found = [ts[i][1] for i in top]
        rows.append((q["category"], score(found, evidence_ids(q["evidence"]), texts)))
    return rows


async def run_engine(
    writer: Any, asker: Any, sample: dict[str, Any], k: int
) -> list[tuple[int, float]]:
    ts = turn_texts(sample["conversation"])
    texts = dict(ts)
    scope = re.sub(r"[^A-Za-z0-9_.:-]", "-", sample["sample_id"])
    with tempfile.TemporaryDirectory(prefix="cranimem-locomo-") as home:
        settings = load_settings(home=Path(home))
        async with MemoryEngine(settings, embedder=writer, background=False) as engine:
            for _, text in ts:
                await engine.remember(text, scope=scope)
            await engine.consolidate(scope)
        # Reopened (with the asking embedder): the store as a later process finds it.
        async with MemoryEngine(settings, embedder=asker, background=False) as engine:
            rows = []
            for q in questions(sample):
                result = await engine.recall(q["question"], scope=scope, k=k)
                found = [item.content for item in result.items][:k]
                rows.append((q["category"], score(found, evidence_ids(q["evidence"]), texts)))
    return rows


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--data", type=Path, default=ROOT.parent / "shared/data/locomo_dev2.json")
    parser.add_argument("-k", type=int, default=5)
    parser.add_argument("--embedder", action="append", choices=["onnx", "torch", "torch+onnx"])
    parser.add_argument("--path", action="append", choices=["engine", "vector"])
    args = parser.parse_args()
    samples = json.loads(args.data.read_text(encoding="utf-8"))
    onnx = OnnxEmbedder(threads=1)
    torch = SentenceTransformerEmbedder("all-MiniLM-L6-v2", threads=1)
    embedders = {"onnx": (onnx, onnx), "torch": (torch, torch), "torch+onnx": (torch, onnx)}
    print("| embedder | path | cat 1 | cat 2 | cat 3 | cat 4 | all (n) | seconds |")
    print("|---|---|---:|---:|---:|---:|---:|---:|")
    for name in args.embedder or ["onnx", "torch", "torch+onnx"]:
        writer, asker = embedders[name]
        for path in args.path or ["vector", "engine"]:
            started = time.perf_counter()
            rows: list[tuple[int, float]] = []
            for sample in samples:
                run = run_engine if path == "engine" else run_vector
                rows += await run(writer, asker, sample, args.k)
            rows = [r for r in rows if r[1] == r[1]]  # evidence ids that name no turn: out
            by_cat = {c: [s for cat, s in rows if cat == c] for c in (1, 2, 3, 4)}
            cells = " | ".join(f"{np.mean(v):.3f}" for v in by_cat.values())
            print(f"| {name} | {path} | {cells} | {np.mean([s for _, s in rows]):.3f} "
                  f"({len(rows)}) | {time.perf_counter() - started:.0f} |", flush=True)  # fmt: skip


if __name__ == "__main__":
    anyio.run(main)
