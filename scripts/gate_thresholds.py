"""Measure the gate on HotpotQA dev: cosine(paragraph, question) for gold paragraphs, the
other context paragraphs, and the noisy setting's distractors (other questions' paragraphs,
chit-chat), and what each tau_noise would keep.

    .venv/bin/python scripts/gate_thresholds.py [N]
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import anyio
import numpy as np

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from cranimem_mcp.backends.embeddings import OnnxEmbedder  # noqa: E402
from cranimem_mcp.eval.data import load_questions  # noqa: E402
from cranimem_mcp.eval.stream import write_stream  # noqa: E402


async def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 412
    questions = load_questions(Path("../shared/data/hotpotqa_dev412.jsonl"))
    emb = OnnxEmbedder()
    groups: dict[str, list[float]] = {"gold": [], "context": [], "noise-para": [], "chit-chat": []}
    min_gold: list[float] = []
    for i in range(n):
        writes = write_stream(questions, i, seed=0, noisy=True)
        vecs = await emb.embed([questions[i].question] + [w.text for w in writes])
        sims = vecs[1:] @ vecs[0]
        golds = []
        for w, s in zip(writes, sims, strict=True):
            key = w.origin if w.origin != "noise" else ("noise-para" if w.title else "chit-chat")
            groups[key].append(float(s))
            if w.origin == "gold":
                golds.append(float(s))
        min_gold.append(min(golds))
    print(f"{n} questions; cosine to the question (p5 / p50 / p95 / max):")
    for key, vals in groups.items():
        v = np.array(vals)
        print(
            f"  {key:10} n={len(v):5}  {np.percentile(v, 5):.3f} / {np.median(v):.3f} / "
            f"{np.percentile(v, 95):.3f} / {v.max():.3f}"
        )
    print("tau_noise | gold kept | context kept | noise paragraphs kept | chit-chat kept")
    for tau in (0.0, 0.05, 0.08, 0.1, 0.12, 0.15, 0.2, 0.25):
        row = [np.mean(np.array(groups[k]) >= tau) for k in groups]
        print(f"  {tau:.2f} | " + " | ".join(f"{x:.3f}" for x in row))


anyio.run(main)
