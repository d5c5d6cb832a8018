"""The arguments of ``cranimem-mcp eval`` and ``cranimem-mcp bench``. Kept apart from the
harness so that building the CLI parser imports nothing heavy."""

from __future__ import annotations

import argparse
from pathlib import Path

HOTPOTQA_DATA = Path("../shared/data/hotpotqa_dev412.jsonl")
LOCOMO_DATA = Path("../shared/data/locomo_dev2.json")  # CC BY-NC: read in place, never copied
LONGMEMEVAL_DATA = Path("../shared/data/longmemeval_s_dev40.json")  # read in place, never copied


def add_eval_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("benchmark", choices=["hotpotqa", "temporal", "locomo", "longmemeval"])
    p.add_argument("--histories", type=int, default=50,
                   help="temporal: synthetic user histories to run")  # fmt: skip
    p.add_argument("--paraphrased", action="store_true",
                   help="temporal: other verbs and word orders for the same changes")  # fmt: skip
    p.add_argument("--data", type=Path,
                   help=f"hotpotqa: distractor file, JSON list or JSON lines (default "
                   f"{HOTPOTQA_DATA}); locomo: conversations (default {LOCOMO_DATA}); "
                   f"longmemeval: instances (default {LONGMEMEVAL_DATA})")  # fmt: skip
    p.add_argument("--limit", type=int,
                   help="first N questions only (locomo: per conversation; longmemeval: first N "
                   "instances)")  # fmt: skip
    p.add_argument("--per-type", type=int,
                   help="longmemeval: the first N instances of each question type")  # fmt: skip
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--output", "--json", type=Path, default=Path("results.json"),
                   help="the results document (JSON)")  # fmt: skip
    p.add_argument("--inject-every", type=int, default=2, help="task writes between injections")
    p.add_argument("--noise", type=int, default=3, help="distractors per injection")
    p.add_argument("-k", type=int, help="memories per recall (default: retrieval.k)")
    p.add_argument("--max-chars", type=int,
                   help="context budget (default: retrieval.max_chars; longmemeval: 200,000, "
                   "the largest, so that the budget does not cut the ranking)")  # fmt: skip
    p.add_argument("--system", action="append", dest="systems",
                   choices=["cranimem", "vanilla", "bm25", "no-gate", "no-graph"],
                   help="repeatable; default: cranimem and vanilla (longmemeval: and bm25); "
                   "bm25 is for locomo and longmemeval")  # fmt: skip
    p.add_argument("--through-mcp", action="store_true",
                   help="locomo, longmemeval: also cranimem through a spawned `serve`, MCP "
                   "stdio")  # fmt: skip
    p.add_argument("--recall-at", default="5,10",
                   help="locomo, longmemeval: the k of R@k, comma-separated")  # fmt: skip
    p.add_argument("--ablations", action="store_true", help="also run no-gate and no-graph")
    p.add_argument("--setting", action="append", dest="settings", choices=["clean", "noisy"])
    p.add_argument("--answer-model", help="Ollama model that answers from the recalled context")
    p.add_argument("--workdir", type=Path, help="keep the memories here (default: a temp dir)")
    p.add_argument("--plots", type=Path, help="directory for the PNG plots (default: --output's)")
    p.add_argument("--plot", type=Path,
                   help="locomo, longmemeval: the PNG (default: --output with .png)")  # fmt: skip
    p.add_argument("--no-plots", action="store_true")


def add_bench_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--sizes", default="1000,10000,100000", help="memories stored, comma-separated")
    p.add_argument("--ops", type=int, default=200, help="remember and recall calls per size")
    p.add_argument("--embedder", action="append", dest="embedders", choices=["minilm", "constant"],
                   help="default: both")  # fmt: skip
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--output", type=Path, default=Path("bench.json"))
    p.add_argument("--workdir", type=Path, help="keep the stores here (default: a temp dir)")
    p.add_argument("--plots", type=Path, help="directory for the PNG plots (default: --output's)")
    p.add_argument("--no-plots", action="store_true")
