"""Recall latency in one conversation scope of N memories (issue 18's target: p50 <= 40 ms
at 1k memories per scope), speaker-centred recall on (the default) and off, alternating.

The dev conversations' turns go into one scope (repeated with a mark past the end, so N can
exceed them), every turn pinned so that all N are stored, then one consolidation; two
engines open copies of that store, one with the default settings, one with
``retrieval.speaker_turns = 0``; the dev questions are asked of both in turn at k = 10.
Reports ``took_ms`` (the engine's own account) and the CPU time of each recall.

    PYTHONPATH=. .venv/bin/python scripts/measure_conversation_recall.py [--turns 1000]
        [--questions 80] [--data ../shared/data/locomo_dev2.json] [--filled DIR]

``--filled DIR`` keeps the filled store in DIR (filled on the first run, reused after: the
fill takes minutes, and a before/after comparison should read the same store).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import statistics
import tempfile
import time
from pathlib import Path

from cranimem_mcp.backends.embeddings import EmbeddingCache, OnnxEmbedder
from cranimem_mcp.config import Settings
from cranimem_mcp.engine import MemoryEngine
from cranimem_mcp.eval.locomo import load_conversations
from cranimem_mcp.eval.systems import eval_settings

SCOPE = "talk"
WARM_UP = ("What did they talk about?", "Who likes painting?", "Where did the trip go?")


def settings(home: Path, speaker_turns: int | None = None) -> Settings:
    base = eval_settings(Settings(), home)
    if speaker_turns is None:
        return base
    data = base.model_dump()
    data["retrieval"]["speaker_turns"] = speaker_turns
    return Settings.model_validate(data)


async def fill(home: Path, turns: list[str], embedder: EmbeddingCache) -> None:
    async with MemoryEngine(settings(home), embedder=embedder, background=False) as engine:
        for text in turns:
            result = await engine.remember(text, SCOPE, pin=True)
            if result.status != "stored":
                raise SystemExit(f"not stored ({result.status}): {text[:80]}")
        await engine.consolidate(SCOPE)


async def measure(root: Path, questions: list[str], k: int, embedder: OnnxEmbedder) -> None:
    homes = {"on (default)": root / "on", "off": root / "off"}
    shutil.copytree(root / "filled", homes["off"])
    shutil.move(root / "filled", homes["on (default)"])
    took: dict[str, list[float]] = {name: [] for name in homes}
    cpu: dict[str, list[float]] = {name: [] for name in homes}
    async with (
        MemoryEngine(settings(homes["on (default)"]), embedder=embedder, background=False) as on,
        MemoryEngine(settings(homes["off"], 0), embedder=embedder, background=False) as off,
    ):
        engines = {"on (default)": on, "off": off}
        for engine in engines.values():  # open the stores; no measured question is cached
            for q in WARM_UP:
                await engine.recall(q, SCOPE, k, 4000)
        for q in questions:
            for name, engine in engines.items():
                started = time.process_time()
                result = await engine.recall(q, SCOPE, k, 4000)
                cpu[name].append((time.process_time() - started) * 1000)
                took[name].append(result.took_ms)
    print(f"load average {os.getloadavg()[0]:.1f}, {len(questions)} questions, k = {k}")
    print("| speaker focus | took_ms p50 / p95 | CPU p50 ms |")
    print("|---|---:|---:|")
    for name in homes:
        t = sorted(took[name])
        p95 = t[int(0.95 * (len(t) - 1))]
        print(f"| {name} | {statistics.median(t):.1f} / {p95:.1f} | "
              f"{statistics.median(cpu[name]):.1f} |")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=Path("../shared/data/locomo_dev2.json"))
    parser.add_argument("--turns", type=int, default=1000)
    parser.add_argument("--questions", type=int, default=80)
    parser.add_argument("-k", type=int, default=10)
    parser.add_argument("--filled", type=Path, help="fill into DIR once, reuse it after")
    args = parser.parse_args()
    conversations = load_conversations(args.data)
    turns = [text for c in conversations for _id, text in c.turns]
    round_ = 1
    while len(turns) < args.turns:  # repeated, marked, so no repeat is a duplicate
        turns += [f"{t} (retold {round_})" for t in turns[: args.turns - len(turns)]]
        round_ += 1
    turns = turns[: args.turns]
    questions = [q.text for c in conversations for q in c.questions][: args.questions]
    embedder = OnnxEmbedder()  # each engine keeps its own cache (a question is new to both)
    with tempfile.TemporaryDirectory(prefix="cranimem-convrecall-") as tmp:
        root = Path(tmp)
        if args.filled is not None and args.filled.exists():
            shutil.copytree(args.filled, root / "filled")
            print(f"reusing the store in {args.filled}")
        else:
            started = time.perf_counter()
            asyncio.run(fill(root / "filled", turns, EmbeddingCache(embedder, size=len(turns))))
            took = time.perf_counter() - started
            print(f"{len(turns)} turns stored in one scope in {took:.0f} s")
            if args.filled is not None:
                shutil.copytree(root / "filled", args.filled)
        asyncio.run(measure(root, questions, args.k, embedder))


if __name__ == "__main__":
    main()
