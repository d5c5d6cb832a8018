"""What skipping the episodic table's maintenance (LanceDB ``optimize``: compaction, index
update, old-version cleanup) costs the read path, and what running it costs each
consolidation. The numbers behind "Table maintenance" in docs/RESULTS.md.

Fills a table like the bench (N memories, a tenth in the scope "bench"), then runs ROUNDS
rounds of 20 remembers + a consolidation with maintenance switched off, timing recall and
counting fragments and rows the full-text index has not seen; then one maintenance; then
the same rounds with maintenance on every consolidation, timing it.

    .venv/bin/python scripts/measure_maintain.py [N] [ROUNDS]
"""

from __future__ import annotations

import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

import anyio

from cranimem_mcp.config import Settings, load_settings
from cranimem_mcp.engine import MemoryEngine
from cranimem_mcp.eval.bench import (
    OTHER_SCOPES,
    SCOPE,
    SCOPE_SHARE,
    ConstantEmbedder,
    _row,
    synthetic_query,
    synthetic_text,
)


def table_state(engine: MemoryEngine) -> tuple[int, int]:
    table = engine.episodic._table
    fragments = table.stats()["fragment_stats"]["num_fragments"]
    unindexed = table.index_stats("content_idx").num_unindexed_rows
    return fragments, unindexed


async def rounds(engine: MemoryEngine, rng: random.Random, n: int, counter: int, say) -> int:  # type: ignore[no-untyped-def]
    for r in range(1, n + 1):
        for _ in range(20):
            await engine.remember(synthetic_text(rng, counter), SCOPE)
            counter += 1
        started = time.perf_counter()
        await engine.consolidate(SCOPE)
        consolidate_ms = (time.perf_counter() - started) * 1000
        recall = []
        for _ in range(15):
            started = time.perf_counter()
            await engine.recall(synthetic_query(rng), SCOPE)
            recall.append((time.perf_counter() - started) * 1000)
        if r in (1, 2, 5, 10, 15, 20, 30, 40, 50, 75, 100) or r == n:
            fragments, unindexed = table_state(engine)
            say(
                f"round {r:3d}: consolidate {consolidate_ms:7.0f} ms, recall p50 "
                f"{statistics.median(recall):5.1f} ms, fragments {fragments}, "
                f"unindexed rows {unindexed}"
            )
    return counter


async def main(size: int, n_rounds: int) -> None:
    home = Path(tempfile.mkdtemp(prefix="cranimem-maintain-"))
    data = load_settings(home=home).model_dump()
    data["consolidation"]["interval_seconds"] = 0.0
    data["consolidation"]["every_n_writes"] = 0
    settings = Settings.model_validate(data)
    embedder = ConstantEmbedder()
    rng = random.Random(0)
    say = print  # noqa: T201
    async with MemoryEngine(settings, embedder=embedder, background=False) as engine:
        await engine.set_goal("Remember what matters about my work, plans, people.", SCOPE)
        counter = 0
        while counter < size:
            texts = [synthetic_text(rng, counter + j) for j in range(min(5000, size - counter))]
            vectors = await embedder.embed(texts)
            rows = []
            for j, (text, vector) in enumerate(zip(texts, vectors, strict=True)):
                i = counter + j
                scope = SCOPE if (i % 10) < SCOPE_SHARE * 10 else f"user-{i % OTHER_SCOPES}"
                rows.append(_row(text, vector, scope, "longterm", i))
            await engine.episodic.add(rows)
            counter += len(rows)
        started = time.perf_counter()
        await engine.episodic.maintain()
        say(f"{size} memories; first maintenance {time.perf_counter() - started:.1f} s")

        maintain = engine.episodic.maintain

        async def skip(*args: object, **kwargs: object) -> None:
            return None

        say("-- maintenance off --")
        engine.episodic.maintain = skip  # type: ignore[method-assign]
        counter = await rounds(engine, rng, n_rounds, counter, say)
        engine.episodic.maintain = maintain  # type: ignore[method-assign]
        started = time.perf_counter()
        await engine.episodic.maintain()
        say(f"one maintenance after {n_rounds} rounds: {time.perf_counter() - started:.2f} s")
        say("-- maintenance at every consolidation --")
        await rounds(engine, rng, min(n_rounds, 10), counter, say)


if __name__ == "__main__":
    anyio.run(
        main,
        int(sys.argv[1]) if len(sys.argv) > 1 else 100_000,
        int(sys.argv[2]) if len(sys.argv) > 2 else 50,
    )
