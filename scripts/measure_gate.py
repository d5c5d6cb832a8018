"""Measure the gate on the labelled set (tests/data/gate_labelled.json) with MiniLM:
cosine(content, goal) for relevant writes and distractors, and precision/recall of the
bare threshold and of the full gate (threshold + second look) at several tau_noise values.

    .venv/bin/python scripts/measure_gate.py > docs/gate-measurement.md
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import anyio

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from cranimem_mcp.backends.embeddings import OnnxEmbedder  # noqa: E402
from cranimem_mcp.gate.tagger import HeuristicTagger  # noqa: E402

DATA = Path(__file__).parent.parent / "tests" / "data" / "gate_labelled.json"
TAUS = [0.05, 0.10, 0.12, 0.15, 0.18, 0.20, 0.25, 0.30]


async def main() -> None:
    sets = json.loads(DATA.read_text())["sets"]
    embedder = OnnxEmbedder()
    tagger = HeuristicTagger()
    rows = []  # (set index, text, relevant, cosine, second look keeps)
    print("# Gate measurement (all-MiniLM-L6-v2, heuristic second look)\n")
    for n, s in enumerate(sets):
        texts = s["relevant"] + s["distractors"]
        labels = [True] * len(s["relevant"]) + [False] * len(s["distractors"])
        vecs = await embedder.embed([s["goal"], *texts])
        sims = vecs[1:] @ vecs[0]
        rel = sorted(float(x) for x, y in zip(sims, labels, strict=True) if y)
        dis = sorted(float(x) for x, y in zip(sims, labels, strict=True) if not y)
        print(f'## Set {n + 1}: goal "{s["goal"]}"\n')
        print(f"- relevant cosines: {', '.join(f'{x:.2f}' for x in rel)}")
        print(f"- distractor cosines: {', '.join(f'{x:.2f}' for x in dis)}\n")
        for text, label, sim in zip(texts, labels, sims, strict=True):
            keep = (await tagger.judge(text, s["goal"])).keep
            rows.append((n, text, label, float(sim), keep))
    print("## Precision / recall over all sets\n")
    print("| tau_noise | threshold only: P | R | with second look: P | R |")
    print("|---|---|---|---|---|")
    for tau in TAUS:
        out = []
        for second in (False, True):
            kept = [(sim >= tau) or (second and look) for _n, _t, _l, sim, look in rows]
            labels = [label for _n, _t, label, _s, _k in rows]
            tp = sum(k and y for k, y in zip(kept, labels, strict=True))
            fp = sum(k and not y for k, y in zip(kept, labels, strict=True))
            fn = sum(y and not k for k, y in zip(kept, labels, strict=True))
            out += [tp / max(1, tp + fp), tp / max(1, tp + fn)]
        print(f"| {tau:.2f} | " + " | ".join(f"{x:.2f}" for x in out) + " |")
    lost = [t for _n, t, label, sim, look in rows if label and sim < 0.15 and not look]
    print("\nRelevant writes the full gate loses at tau_noise = 0.15 (no stored context):\n")
    for t in lost:
        print(f"- {t}")
    noisy = [t for _n, t, label, sim, look in rows if not label and (sim >= 0.15 or look)]
    print("\nDistractors the full gate keeps at tau_noise = 0.15:\n")
    for t in noisy or ["(none)"]:
        print(f"- {t}")


if __name__ == "__main__":
    anyio.run(main)
