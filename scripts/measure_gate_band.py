"""Should a model look again at the default gate's near misses? Measured on the tuning data.

    .venv/bin/python scripts/measure_gate_band.py [--host 127.0.0.1:11435] [--band 0.2]

Out-of-fold probabilities of the shipped network (scripts/train_gate.py's folds and penalty)
give the tuning writes that fall in the band below the threshold; the model (the Ollama
tagger's judge, the default goal) is asked about every durable one there and as many noise
ones drawn at random (at least 30). It prints each answer and how many of each it kept: a
model is worth asking when it keeps far more of the durable writes than of the noise,
weighed by how many of each the band holds. The test part is never read.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

import train_gate  # noqa: E402

from cranimem_mcp.backends.ollama import OllamaBackend, OllamaTagger, prompts_dir  # noqa: E402
from cranimem_mcp.config import load_settings  # noqa: E402
from cranimem_mcp.gate.judgment import WEIGHTS, about_health, features  # noqa: E402
from cranimem_mcp.gate.tagger import HeuristicTagger  # noqa: E402


async def ask(host: str, model: str, texts: list[str], goal: str) -> list[tuple[bool, str]]:
    backend = OllamaBackend(host, timeout=60, cooldown=0.0)
    tagger = OllamaTagger(backend, model, prompts_dir(), HeuristicTagger())
    try:
        out = []
        for text in texts:
            judgement = await tagger.judge(text, goal)
            out.append((judgement.keep, judgement.judged_by))
        return out
    finally:
        await backend.aclose()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--host", default="127.0.0.1:11435")
    ap.add_argument("--model", default="qwen2.5-coder:1.5b")
    ap.add_argument("--band", type=float, default=0.2)
    args = ap.parse_args()
    items = train_gate.training_items()
    texts = [t for t, _, _ in items]
    y = np.array([int(k) for _, k, _ in items])
    health = np.array([about_health(t) for t in texts])
    vectors, _, _ = asyncio.run(train_gate.embed(texts))
    x = np.stack([features(v, t) for v, t in zip(vectors, texts, strict=True)])
    alpha = float(json.loads(WEIGHTS.read_text())["alpha"])
    oof = train_gate.out_of_fold(x, y, alpha)
    tau = train_gate.threshold_for(oof, y, health)
    band = [i for i in range(len(y)) if tau - args.band <= oof[i] < tau and not health[i]]
    durable = [i for i in band if y[i] == 1]
    noise = [i for i in band if y[i] == 0]
    print(f"threshold {tau:.3f}; in the band: {len(durable)} durable, {len(noise)} noise")
    random.Random(0).shuffle(noise)
    asked = durable + noise[: max(len(durable), 30)]
    goal = load_settings().gating.default_goal
    answers = asyncio.run(ask(args.host, args.model, [texts[i] for i in asked], goal))
    kept = {1: 0, 0: 0}
    seen = {1: 0, 0: 0}
    for i, (keep, by) in zip(asked, answers, strict=True):
        print(f"{'durable' if y[i] else 'noise':<8} kept={keep!s:<5} by={by:<28} "
              f"p={oof[i]:.3f} {items[i][2]:<18} {texts[i][:80]!r}")  # fmt: skip
        if by != "heuristic":
            seen[int(y[i])] += 1
            kept[int(y[i])] += int(keep)
    print(f"model kept {kept[1]}/{seen[1]} durable and {kept[0]}/{seen[0]} noise it was asked "
          f"about; the band holds {len(durable)} durable, {len(noise)} noise")  # fmt: skip


if __name__ == "__main__":
    main()
