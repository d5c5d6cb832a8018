"""Bounded resources (issue 5, item 8): over a long write stream the buffer, the long-term
side, the trash and the graph stay within their bounds, memory levels off, and recall never
returns more than max_chars. CI runs 400 writes; CRANIMEM_FULL=1 runs the 10k-write soak.

Memory in CI: the Python heap's growth over 300 writes (tracemalloc), with a bound per
write that a leak of one small object per write (every RememberResult kept) exceeds."""

from __future__ import annotations

import gc
import itertools
import os
import random
import resource
import sys
import tracemalloc
from itertools import pairwise

import pytest

from cranimem_mcp.extraction import extractor as extraction
from cranimem_mcp.extraction import linkage, syntax

pytestmark = [pytest.mark.anyio, pytest.mark.slow]  # minutes of writes
FULL = os.environ.get("CRANIMEM_FULL") == "1"
WRITES = 10_000 if FULL else 400
NAMES = ["Ana", "Bo", "Chen", "Dara", "Eli", "Femi", "Gus", "Hana", "Ivo", "Jun"]
CITIES = ["Oslo", "Lima", "Pune", "Kyiv", "Faro", "Nice", "Bern", "Graz", "Riga", "Cork"]
THINGS = ["a bike", "tickets", "a table", "a guide", "a car", "a room", "a class", "a tour"]


def rss_mb() -> float:
    """The resident set now (Linux), not the peak: the peak is set by whichever earlier test
    of the session used most, and hides any growth below it."""
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20
    except OSError:
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


async def test_a_long_write_stream_stays_within_every_bound(open_engine):
    rng = random.Random(0)
    capacity, longterm_cap, budget = 10, 60, 600
    async with open_engine(
        gating={"tau_noise": -1.0, "default_gate": False},
        episodic={"capacity": capacity},
        consolidation={"every_n_writes": 25, "trash_retention_days": 0.0},
        temporal={"longterm_capacity": longterm_cap},
    ) as engine:
        rss = []
        for i in range(WRITES):
            text = (
                f"On day {i} {rng.choice(NAMES)} booked {rng.choice(THINGS)} in "
                f"{rng.choice(CITIES)} for trip {i}."
            )
            result = await engine.remember(text)
            assert result.status == "stored"
            assert result.buffer.size <= capacity
            if i % 25 == 24:
                await engine.consolidate()
                stats = (await engine.stats()).scopes[0]
                assert stats.buffer_size <= capacity
                assert stats.longterm <= longterm_cap
                assert stats.trash == 0  # retention 0: purged at each consolidation
                # Each long-term memory links a handful of facts; the graph cannot outgrow it.
                assert stats.facts <= 6 * longterm_cap
                recalled = await engine.recall(f"What was booked in {rng.choice(CITIES)}?",
                                               max_chars=budget)  # fmt: skip
                assert len(recalled.context) <= budget
            if i % (WRITES // 10) == 0:
                rss.append(rss_mb())
        rows = await engine.episodic.scope_rows("default", None)
        assert len(rows) <= capacity + longterm_cap
        if FULL:
            # Memory levels off: the last tenth of the stream adds little to the peak.
            assert rss[-1] - rss[len(rss) // 2] < 0.2 * rss[len(rss) // 2], rss


# The heap's growth per write over writes 100 -> 400, measured on this stream (tracemalloc,
# at load 10-13 on 2 cores, two runs each): 2.75-2.76 KiB per write without a leak, 6.04-6.07
# with every RememberResult kept (the leak of one small object per write this test exists
# for). Not zero: the graph and the caches are still filling, in steps (each 25 writes grew
# -0.9 to 5.5 KiB a write; dicts resize, a consolidation frees). Over writes 100 -> 250 the
# same stream measured 2.3-3.5, and 5.0 in CI's full suite on a loaded machine, over a
# bound of 4.5: 150 writes are too few to average the steps out. The bound sits between the
# two with margin on each side (x1.6 over the clean stream, x1.4 under the leak).
HEAP_GROWTH_PER_WRITE = 4.4 * 1024


def clear_text_caches() -> None:
    """Empty the per-text caches (bounded at 256-4096 entries, so still filling in a short
    run: growth that levels off, but only after thousands of writes), then collect."""
    syntax.parse.cache_clear()
    linkage.quick.cache_clear()
    extraction.extract_one.cache_clear()
    gc.collect()


async def test_the_python_heap_levels_off_over_a_write_stream(open_engine):
    """60 writes to warm up, then the heap's growth from write 100 to write 400, each text
    new (stored, not merged) but from a bounded vocabulary: spaCy's string store keeps every
    new token by design, which would otherwise grow with the stream."""
    rng = random.Random(0)
    combos = list(itertools.product(range(1, 29), NAMES, THINGS, CITIES))
    rng.shuffle(combos)
    warmup, start, end = 60, 100, 400
    async with open_engine(
        gating={"tau_noise": -1.0, "default_gate": False},
        episodic={"capacity": 10},
        consolidation={"every_n_writes": 25, "trash_retention_days": 0.0},
        temporal={"longterm_capacity": 60},
    ) as engine:
        tracing = tracemalloc.is_tracing()
        heap: dict[int, int] = {}
        try:
            for i, (day, name, thing, city) in enumerate(combos[:end]):
                if i == warmup:
                    clear_text_caches()
                    if not tracing:
                        tracemalloc.start()
                result = await engine.remember(f"On day {day} {name} booked {thing} in {city}.")
                assert result.status == "stored", result
                if i % 25 == 24:
                    await engine.consolidate()
                    await engine.recall(f"What was booked in {rng.choice(CITIES)}?", max_chars=600)
                    clear_text_caches()
                    if i + 1 >= start:
                        heap[i + 1] = tracemalloc.get_traced_memory()[0]
        finally:
            if not tracing:
                tracemalloc.stop()
    per_write = (heap[end] - heap[start]) / (end - start)
    marks = sorted(heap)
    steps = " ".join(f"{(heap[b] - heap[a]) / (b - a) / 1024:.1f}" for a, b in pairwise(marks))
    said = f"{per_write / 1024:.2f} KiB per write over writes {start}-{end} (each 25: {steps})"
    sys.stderr.write(f"heap growth: {said}\n")
    assert per_write < HEAP_GROWTH_PER_WRITE, (
        f"the Python heap grew {said}; bound {HEAP_GROWTH_PER_WRITE / 1024:.1f}: something "
        "keeps what each write made"
    )
