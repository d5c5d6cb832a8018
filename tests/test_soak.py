"""Bounded resources (issue 5, item 8): over a long write stream the buffer, the long-term
side, the trash and the graph stay within their bounds, memory levels off, and recall never
returns more than max_chars. CI runs 400 writes; CRANIMEM_FULL=1 runs the 10k-write soak."""

from __future__ import annotations

import os
import random
import resource

import pytest

pytestmark = pytest.mark.anyio
FULL = os.environ.get("CRANIMEM_FULL") == "1"
WRITES = 10_000 if FULL else 400
NAMES = ["Ana", "Bo", "Chen", "Dara", "Eli", "Femi", "Gus", "Hana", "Ivo", "Jun"]
CITIES = ["Oslo", "Lima", "Pune", "Kyiv", "Faro", "Nice", "Bern", "Graz", "Riga", "Cork"]
THINGS = ["a bike", "tickets", "a table", "a guide", "a car", "a room", "a class", "a tour"]


def rss_mb() -> float:
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
