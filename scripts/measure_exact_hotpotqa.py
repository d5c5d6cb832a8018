"""The exact-token rule on HotpotQA, paired: each question's stream written once, then the
same store recalled with the rule off and with each variant of it.

Only questions with an exact token (a year, a number, an identifier: ``exact.tokens``) can
rank differently, so only those are run (139 of the 412 dev questions); the write streams
are the full run's (the noise comes from all 412). Metrics as `cranimem-mcp eval hotpotqa`:
answer recall and supporting-fact recall of the context block (k = 8, 4,000 characters).
Each text is embedded once (a cache), so no latency here means anything.

    PYTHONPATH=. .venv/bin/python scripts/measure_exact_hotpotqa.py --setting clean
    PYTHONPATH=. .venv/bin/python scripts/measure_exact_hotpotqa.py --setting noisy --limit 40
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
from collections.abc import Callable
from pathlib import Path

import anyio

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("LANCE_LOG", "error")

from cranimem_mcp.backends.embeddings import EmbeddingCache, OnnxEmbedder  # noqa: E402
from cranimem_mcp.config import load_settings  # noqa: E402
from cranimem_mcp.engine import MemoryEngine  # noqa: E402
from cranimem_mcp.eval import metrics  # noqa: E402
from cranimem_mcp.eval.data import load_questions  # noqa: E402
from cranimem_mcp.eval.stream import write_stream  # noqa: E402
from cranimem_mcp.eval.systems import eval_settings  # noqa: E402
from cranimem_mcp.recall import exact  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared/data/hotpotqa_dev412.jsonl"
ORIGINAL = (exact.tokens, exact.SHARE)


def variant(name: str) -> Callable[[], None]:
    def apply() -> None:
        exact.tokens, exact.SHARE = ORIGINAL
        if name == "off":
            exact.tokens = lambda query: []
        elif name == "k":
            exact.SHARE = 1.0
        elif name.startswith("share"):
            exact.SHARE = float(name.removeprefix("share")) / 100

    return apply


async def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", type=Path, default=DATA)
    ap.add_argument("--setting", choices=["clean", "noisy"], default="clean")
    ap.add_argument("--limit", type=int)
    ap.add_argument("--variants", default="off,k,share5")
    ap.add_argument("--rows", type=Path)
    args = ap.parse_args()
    questions = load_questions(args.data)
    chosen = [i for i, q in enumerate(questions) if ORIGINAL[0](q.question)][: args.limit]
    names = args.variants.split(",")
    out = args.rows.open("w") if args.rows else None
    totals = {n: {"answer_recall": 0.0, "supporting_fact_recall": 0.0} for n in names}
    changed: dict[str, list[int]] = {n: [] for n in names}
    home = Path(tempfile.mkdtemp(prefix="cranimem-exact-hq-"))
    settings = eval_settings(load_settings(home=home), home)
    embedder = EmbeddingCache(OnnxEmbedder(), size=1_000_000)  # every text, once
    async with MemoryEngine(settings, embedder=embedder, background=True) as engine:
        for index in chosen:
            q, scope = questions[index], f"hotpotqa-{index}"
            await engine.set_goal(q.question, scope)
            for w in write_stream(questions, index, seed=0, noisy=args.setting == "noisy"):
                await engine.remember(w.text, scope)
                await engine.wait_idle()
            await engine.consolidate(scope, trigger="before_exam")
            row = {"index": index, "id": q.id}
            for name in names:
                variant(name)()
                result = await engine.recall(q.question, scope, 8, 4000, ["episodic", "graph"])
                ar = metrics.answer_recall(result.context, q.answer)
                sf = metrics.supporting_fact_recall(result.context, q.supporting_sentences())
                row[name] = {"answer_recall": ar, "supporting_fact_recall": sf}
                totals[name]["answer_recall"] += ar or 0.0
                totals[name]["supporting_fact_recall"] += sf or 0.0
                if ar != row[names[0]]["answer_recall"]:
                    changed[name].append(index)
            variant("original")()
            if out:
                out.write(json.dumps(row) + "\n")
                out.flush()
    n = len(chosen)
    for name in names:
        t = totals[name]
        print(
            f"{args.setting} {name}: {n} questions, answer recall "
            f"{t['answer_recall'] / n:.3f}, SF recall {t['supporting_fact_recall'] / n:.3f}, "
            f"answer recall differs from {names[0]} on {changed[name]}"
        )


if __name__ == "__main__":
    anyio.run(main)
