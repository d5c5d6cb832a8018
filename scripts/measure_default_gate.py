"""Measure the default gate: keep / drop rates per category, old gate against new, through
the real engine (MiniLM, a fresh data directory per run, no goal set).

    .venv/bin/python scripts/measure_default_gate.py                      # heuristic, both parts
    .venv/bin/python scripts/measure_default_gate.py --ollama HOST        # + a model's second look
    .venv/bin/python scripts/measure_default_gate.py --secrets            # + the canaries

"old" is the gate before the default gate (cosine to the default goal sentence, then the
second look); "new" is the default gate. With ``--ollama`` both run again with the Ollama
tagger at HOST as the second look (e.g. tests/ollama_compat_server.py with the test model:
``python tests/ollama_compat_server.py "$(scripts/fetch_test_model.sh)" --port 11435``).
Prints markdown for docs/gate-measurement.md.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

import anyio

os.environ.setdefault("HF_HUB_OFFLINE", "1")
ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from cranimem_mcp.backends.embeddings import local_embedder  # noqa: E402
from cranimem_mcp.config import load_settings  # noqa: E402
from cranimem_mcp.engine import MemoryEngine  # noqa: E402
from cranimem_mcp.extraction import extractor as extraction  # noqa: E402
from cranimem_mcp.extraction import linkage, syntax  # noqa: E402
from cranimem_mcp.gate.judgment import DurableClassifier  # noqa: E402
from cranimem_mcp.gate.tagger import HeuristicTagger  # noqa: E402
from cranimem_mcp.secrets import guard as redaction  # noqa: E402

DATA = ROOT / "tests" / "data"
PARTS = {
    "test": ["gate_default_test.json"],
    "tune": sorted(p.name for p in DATA.glob("gate_default_tune*.json")),
}


def items_of(part: str) -> list[dict]:
    return [i for name in PARTS[part] for i in json.loads((DATA / name).read_text())["items"]]


async def run(items: list[dict], embedder, *, default_gate: bool, tagger=None) -> list[bool]:
    """For each item: kept?"""
    with tempfile.TemporaryDirectory() as home:
        settings = load_settings(home=Path(home))
        settings.gating.default_gate = default_gate
        async with MemoryEngine(
            settings, embedder=embedder, tagger=tagger, background=False
        ) as engine:
            return [(await engine.remember(i["text"])).status != "rejected" for i in items]


def table(items: list[dict], runs: dict[str, list[bool]]) -> str:
    names = list(runs)
    lines = [
        "| category | n | " + " | ".join(names) + " |",
        "|---|---:|" + "---:|" * len(names),
    ]
    cats = defaultdict(list)
    for n, i in enumerate(items):
        cats[(not i["keep"], i["category"])].append(n)
    for (noise, cat), idx in sorted(cats.items()):
        what = "drop" if noise else "keep"
        cells = []
        for name in names:
            right = sum(runs[name][n] != noise for n in idx)
            cells.append(f"{right / len(idx):.2f}")
        lines.append(f"| {what}: {cat} | {len(idx)} | " + " | ".join(cells) + " |")
    for noise, label in ((False, "**keep rate (durable)**"), (True, "**drop rate (noise)**")):
        idx = [n for n, i in enumerate(items) if (not i["keep"]) == noise]
        cells = [f"**{sum(runs[x][n] != noise for n in idx) / len(idx):.3f}**" for x in names]
        lines.append(f"| {label} | {len(idx)} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def cost(items: list[dict], vectors) -> str:
    """p50 CPU of what the new gate adds to a write: the classifier (with the parse it reads:
    a rejected write pays for it, a kept one reads it again in the extractor, cached) and
    the secrets guard. Thread CPU time: a busy machine does not inflate it."""
    classifier = DurableClassifier.load()
    timings = {"classifier, parse included": [], "classifier, parse cached": [],
               "secrets guard": []}  # fmt: skip
    for _ in range(3):
        syntax.parse.cache_clear()
        extraction.extract_one.cache_clear()
        linkage.quick.cache_clear()
        for i, v in zip(items, vectors, strict=True):
            t0 = time.thread_time()
            classifier.judge(v, i["text"])
            t1 = time.thread_time()
            classifier.judge(v, i["text"])
            t2 = time.thread_time()
            redaction.redact(i["text"])
            t3 = time.thread_time()
            timings["classifier, parse included"].append((t1 - t0) * 1000)
            timings["classifier, parse cached"].append((t2 - t1) * 1000)
            timings["secrets guard"].append((t3 - t2) * 1000)
    return "\n".join(
        f"- {k}: p50 {statistics.median(v):.3f} ms, p95 "
        f"{statistics.quantiles(v, n=20)[18]:.3f} ms CPU per write ({len(v)} calls)"
        for k, v in timings.items()
    )


async def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ollama", metavar="HOST", help="also run with the Ollama tagger at HOST")
    ap.add_argument("--model", default="qwen2.5-coder:1.5b")
    ap.add_argument("--parts", default="test,tune")
    ap.add_argument("--timeout", type=float, default=30.0, help="per model call")
    ap.add_argument("--new-only", action="store_true", help="skip the old gate's runs")
    args = ap.parse_args()
    embedder = local_embedder()
    for part in args.parts.split(","):
        items = items_of(part)
        runs = {} if args.new_only else {"old gate": await run(items, embedder, default_gate=False)}
        runs["new gate"] = await run(items, embedder, default_gate=True)
        if args.ollama:
            from cranimem_mcp.backends.ollama import OllamaBackend, OllamaTagger, prompts_dir

            backend = OllamaBackend(args.ollama, timeout=args.timeout, cooldown=0.0)
            tagger = OllamaTagger(backend, args.model, prompts_dir(), HeuristicTagger())
            started = time.perf_counter()
            if not args.new_only:
                runs["old gate + model"] = await run(
                    items, embedder, default_gate=False, tagger=tagger
                )
            runs["new gate + model"] = await run(items, embedder, default_gate=True, tagger=tagger)
            u = backend.usage
            print(f"<!-- model calls {u.calls}, fallbacks {u.fallbacks}, "
                  f"{time.perf_counter() - started:.0f} s -->")  # fmt: skip
            await backend.aclose()
        print(f"\n### {part} part ({len(items)} writes)\n")
        print(table(items, runs))
        if part == "test":
            vectors = await embedder.embed([i["text"] for i in items])
            print("\nWhat the new gate adds to a write (this machine, shared):\n")
            print(cost(items, vectors))


if __name__ == "__main__":
    anyio.run(main)
