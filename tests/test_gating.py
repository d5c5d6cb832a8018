"""Gate (paper B.1): cosine to the goal, a second look below tau_noise, utility tags."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cranimem_mcp.config import DEFAULT_GOAL

pytestmark = pytest.mark.anyio
LABELLED = json.loads((Path(__file__).parent / "data" / "gate_labelled.json").read_text())


async def test_distractor_below_tau_noise_is_not_stored(open_engine):
    async with open_engine() as engine:
        await engine.set_goal("Help the user plan their trip to Japan in May")
        result = await engine.remember("NASA released new photos from the Mars rover today.")
        assert result.status == "rejected"
        assert result.id is None
        assert result.relevance < result.threshold == engine.settings.gating.tau_noise
        assert "tau_noise" in result.reason
        stats = await engine.stats()
        (scope,) = stats.scopes
        assert scope.rejected_writes == 1
        assert scope.buffer_size == scope.longterm == scope.trash == 0
        rows = await engine.episodic.scope_rows(None, None)
        assert rows == []


async def test_relevant_write_passes_on_similarity(open_engine):
    async with open_engine() as engine:
        await engine.set_goal("Help the user plan their trip to Japan in May")
        result = await engine.remember("Book a day trip from Tokyo to Nikko on May 6th.")
        assert result.status == "stored"
        assert result.relevance >= engine.settings.gating.tau_noise
        assert result.utility is not None
        u = result.utility
        assert u.base == pytest.approx((u.importance + u.surprise + u.emotion) / 3)


async def test_low_similarity_constraint_is_kept_by_the_second_look(open_engine):
    async with open_engine() as engine:
        await engine.set_goal("Help the user plan their trip to Japan in May")
        result = await engine.remember("I never eat raw egg, please keep that in mind.")
        assert result.relevance < engine.settings.gating.tau_noise
        assert result.status == "stored"
        assert "second look" in result.reason


async def test_without_second_look_the_same_constraint_is_lost(open_engine):
    """The second stage is what saves it: switch it off and the bare threshold drops it."""
    async with open_engine(gating={"second_look": False}) as engine:
        await engine.set_goal("Help the user plan their trip to Japan in May")
        result = await engine.remember("I never eat raw egg, please keep that in mind.")
        assert result.status == "rejected"


async def test_per_call_goal_overrides_the_scope_goal(open_engine):
    async with open_engine(gating={"second_look": False}) as engine:
        await engine.set_goal("Help the user build their Rust web service")
        text = "We land at Narita airport on May 3rd and leave from Osaka on May 17th."
        assert (await engine.remember(text)).status == "rejected"
        kept = await engine.remember(text, goal="Help the user plan their trip to Japan in May")
        assert kept.status == "stored"


async def test_gate_precision_and_recall_on_the_labelled_set(open_engine):
    """Each labelled write is judged alone (fresh scope) against its set's goal. A set with
    the default goal goes through the default gate, which rejects only certain noise: its
    off-topic distractors (news, world knowledge) are kept as doubtful, for replay to prune,
    and only "haha ok" is rejected."""
    tp = fp = fn = tn = 0
    async with open_engine() as engine:
        default = [s for s in LABELLED["sets"] if s["goal"] == DEFAULT_GOAL]
        assert len(default) == 1
        for m, text in enumerate(default[0]["relevant"] + default[0]["distractors"]):
            result = await engine.remember(text, scope=f"d-{m}")
            if text == "haha ok":
                assert result.status == "rejected" and "rule: pleasantry" in result.reason
            else:
                assert result.status == "stored", (text, result.reason)
            if text in default[0]["distractors"] and result.status == "stored":
                assert result.utility is not None and result.utility.importance < 0.5, text
        for n, labelled in enumerate(s for s in LABELLED["sets"] if s["goal"] != DEFAULT_GOAL):
            for m, (text, relevant) in enumerate(
                [(t, True) for t in labelled["relevant"]]
                + [(t, False) for t in labelled["distractors"]]
            ):
                scope = f"s{n}-{m}"
                result = await engine.remember(text, scope=scope, goal=labelled["goal"])
                kept = result.status == "stored"
                tp += kept and relevant
                fp += kept and not relevant
                fn += (not kept) and relevant
                tn += (not kept) and not relevant
    precision, recall = tp / (tp + fp), tp / (tp + fn)
    # Measured 2026-11-29 with MiniLM + heuristic second look: precision 1.00, recall 0.93
    # (three sets); 2026-12-04, the two goal-conditioned ones: 1.00, 0.90 (18, 0, 2, 20).
    assert precision >= 0.95, (tp, fp, fn, tn)
    assert recall >= 0.9, (tp, fp, fn, tn)


async def test_default_goal_keeps_ordinary_user_facts(open_engine):
    async with open_engine() as engine:
        assert engine.goal_of("default") == DEFAULT_GOAL
        for text in [
            "I work at Acme Robotics as a firmware engineer.",
            "I'm allergic to penicillin.",
        ]:
            assert (await engine.remember(text)).status == "stored"
        assert (await engine.remember("haha ok")).status == "rejected"


async def test_write_close_to_stored_memories_is_kept_as_context(open_engine):
    async with open_engine(gating={"second_look": True}) as engine:
        await engine.set_goal("Help the user plan their trip to Japan in May")
        await engine.remember("We stay at the Hoshino ryokan in Karuizawa from May 8th.")
        follow = await engine.remember("The Hoshino ryokan in Karuizawa has a hot spring bath.")
        assert follow.status == "stored"
