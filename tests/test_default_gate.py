"""The default gate: a scope without its own goal keeps what an assistant's memory is for.

Measured on the held-out test part of the labelled set (tests/data/gate_default_test.json,
written apart from the tuning part and never tuned on), through the real engine.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import defaultdict
from dataclasses import fields
from pathlib import Path

import pytest

from cranimem_mcp.gate.default import DefaultGate, judged
from cranimem_mcp.gate.judgment import Durability

pytestmark = pytest.mark.anyio
DATA = Path(__file__).parent / "data"
ROOT = Path(__file__).parent.parent
TEST_PART = json.loads((DATA / "gate_default_test.json").read_text())["items"]
# Issue 13's targets on the held-out part (docs/gate-measurement.md: 0.991 / 0.964 when
# this was written).
# The gate rejects only what a noise rule recognises (gate/noise.py): measured 2026-12-04 on
# the held-out part, through the rules, 1.000 of the durable writes kept (117/117) and 0.450
# of the noise dropped (50/111; the rest, world knowledge and reports of the assistant's
# past work above all, kept at low importance for replay). The classifier alone had kept
# 0.991 and dropped 0.964 here, and lost a third of the project facts written elsewhere.
KEEP_TARGET, DROP_TARGET = 0.98, 0.40


async def _right(engine, items) -> list[bool]:
    """For each item: did the gate decide as labelled?"""
    return [
        ((await engine.remember(item["text"])).status != "rejected") == item["keep"]
        for item in items
    ]


def _table(items, right: list[bool]) -> str:
    by_category: dict[str, list[bool]] = defaultdict(list)
    for item, ok in zip(items, right, strict=True):
        by_category[item["category"]].append(ok)
    return "\n".join(f"{c}: {sum(v)}/{len(v)} right" for c, v in sorted(by_category.items()))


@pytest.mark.slow  # over ~5 s
async def test_default_gate_keeps_durable_writes_and_drops_noise_on_the_held_out_part(
    open_engine,
):
    async with open_engine() as engine:
        right = await _right(engine, TEST_PART)
    durable = [ok for i, ok in zip(TEST_PART, right, strict=True) if i["keep"]]
    noise = [ok for i, ok in zip(TEST_PART, right, strict=True) if not i["keep"]]
    keep, drop = sum(durable) / len(durable), sum(noise) / len(noise)
    assert keep >= KEEP_TARGET and drop >= DROP_TARGET, (
        f"keep {keep:.3f} drop {drop:.3f}\n{_table(TEST_PART, right)}"
    )


async def test_health_and_safety_facts_are_never_rejected(open_engine):
    health = [i for i in TEST_PART if i["category"] == "health_safety"]
    assert len(health) >= 10
    async with open_engine() as engine:
        for item in health:
            result = await engine.remember(item["text"])
            assert result.status == "stored", (item["text"], result.reason)


async def test_a_health_fact_outlasts_replay_however_short(open_engine):
    # "Lactose intolerant." was kept at the gate, tagged at the tagger's low importance for a
    # short calm text, and trashed by the next consolidation beside ordinary notes.
    health = [i["text"] for i in TEST_PART if i["category"] == "health_safety"]
    async with open_engine() as engine:
        short = await engine.remember("Lactose intolerant.")
        assert short.gate == "durable" and short.utility.importance == 1.0, short
        kept = [short.id] + [(await engine.remember(text)).id for text in health]
        for n in range(30):
            await engine.remember(f"Picked up the dry cleaning on errand run {n}.")
        await engine.consolidate("default")
        rows = await engine.episodic.get(kept)
        assert {r.content: r.tier for r in rows if r.tier == "trash"} == {}


async def test_a_standing_instruction_that_opens_like_a_request_is_kept_as_lasting(open_engine):
    # The classifier, trained on one-off requests, gives these P near 0: kept as doubtful at
    # low importance, replay trashed "Explain code changes ..." beside similar notes.
    async with open_engine() as engine:
        for text in (
            "Explain code changes with a short diff summary.",
            "Find the cheapest option when I ask for flights.",
            "Rule: Explain code changes with a short diff summary.",  # a label, as noise reads
        ):
            result = await engine.remember(text)
            assert result.status == "stored" and "standing instruction" in result.reason, result
            assert result.utility.importance == 1.0, result
        one_off = await engine.remember("Translate this paragraph into German.")
        assert one_off.status == "rejected"


async def test_a_convention_or_a_note_labelled_lasting_is_kept_as_lasting(open_engine):
    # The classifier gives these P 0.00-0.44 (it saw few imperatives about a kind of thing and
    # few tagged notes): kept as doubtful, replay trashed two of the other projects' dev
    # writes like them. A request about a thing at hand stays a doubtful or rejected one.
    async with open_engine() as engine:
        for text, reason in (
            ("Use snake_case for Python identifiers.", "standing instruction"),
            ("Use tabs, not spaces, in this codebase.", "standing instruction"),
            ("Put new migrations in db/migrations with a timestamp prefix.", "standing"),
            ("Make surgical changes when possible instead of rewriting whole files.", "standing"),
            ("[decision] Chose Argon2 for password hashing after the audit.", "(decision)"),
            ("Decision - the API stays on REST for v2.", "(decision)"),
        ):
            result = await engine.remember(text)
            assert result.status == "stored" and reason in result.reason, result
            assert result.utility.importance == 1.0, result
        for text in ("Use the blue one.", "Skip the intro.", "Learning Rust is fun."):
            result = await engine.remember(text)
            assert result.status == "rejected" or "lasting" not in result.reason, result


async def test_the_issue_reports_cases_are_kept_and_pleasantries_dropped(open_engine):
    """The writes a new user's assistant made on the first day (issue 13)."""
    kept = [
        "The user is allergic to penicillin.",
        "The user's daughter Mia is 7 and has a peanut allergy.",
        "I drink green tea every morning.",
        "User wants all code examples in TypeScript, not JavaScript.",
        "The staging database must never be reset without asking Lena first.",
        "User prefers dark mode in every editor",
        "I take my coffee black, no sugar",
        "I'm vegetarian, so please never suggest meat dishes.",
        "My partner Sam works night shifts at St. Mary's hospital.",
    ]
    dropped = ["Great question!", "Sure, I can help with that.", "Okay, next question."]
    async with open_engine() as engine:
        for text in kept:
            result = await engine.remember(text)
            assert result.status == "stored", (text, result.reason)
            assert result.gate == "durable" and result.durability is not None
        for text in dropped:
            result = await engine.remember(text)
            assert result.status == "rejected", (text, result.reason)
            assert "pin=true" in result.reason  # tells the caller how to insist


async def test_a_scope_with_its_own_goal_keeps_the_goal_conditioned_gate(open_engine):
    async with open_engine() as engine:
        await engine.set_goal("Help the user plan their trip to Japan in May", "trip")
        result = await engine.remember("Book a day trip from Tokyo to Nikko on May 6th.", "trip")
        assert result.gate == "similarity" and result.durability is None


async def test_the_default_gate_can_be_switched_off(open_engine):
    async with open_engine(gating={"default_gate": False}) as engine:
        result = await engine.remember("Sure, I can help with that.")
        assert result.gate != "durable" and result.durability is None


@pytest.mark.slow
def test_the_shipped_weights_are_what_the_training_script_makes():
    """The classifier is reproducible from the tuning data (scripts/train_gate.py): up to
    the rounding of another CPU's BLAS kernels (one BLAS thread, so neither the machine's
    core count nor its load adds its own). Measured:

    - CI's kind of machine (2 cores, at load 11): the shipped file exactly (differences 0).
    - another CPU (AMD EPYC, the script's docstring): probabilities within 0.019 at most,
      0.0004 on average, the threshold within 0.002.
    - the failure CI met (shipped weights older than a change of the cues: the file of
      b1b1b1c^, retrained by today's code): probabilities 0.028 / 0.00056, the threshold
      0.013 off (0.207 retrained, 0.220 shipped). Only the threshold tells it from another
      CPU; its tolerance, 0.006, is x3 the other CPU's and under half of that failure's.
      The probability tolerances catch larger changes only."""
    pytest.importorskip("sklearn")
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"}
    out = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "train_gate.py"), "--check"],
        capture_output=True, text=True, check=True, cwd=ROOT, timeout=1200, env=env,
    )  # fmt: skip
    said = {
        line.split(" difference ")[0]: float(line.rsplit(" ", 1)[1])
        for line in out.stdout.splitlines()
        if line.startswith("probability: ")
    }
    assert said["probability: max"] < 0.05, out.stdout
    assert said["probability: mean"] < 0.002, out.stdout
    threshold = next(line for line in out.stdout.splitlines() if line.startswith("threshold"))
    _, trained, _, _, shipped = threshold.split()
    assert abs(float(trained) - float(shipped)) < 0.006, out.stdout


# --- pin ------------------------------------------------------------------------------------


async def test_a_pinned_write_passes_the_gate_with_top_importance(open_engine):
    async with open_engine() as engine:
        assert (await engine.remember("Okay, next question.")).status == "rejected"
        result = await engine.remember("Okay, next question.", pin=True)
        assert result.status == "stored" and result.pinned and result.gate == "pin"
        assert result.utility is not None and result.utility.importance == 1.0
        (row,) = await engine.episodic.get([result.id])
        assert row.pinned is True


async def test_replay_never_prunes_a_pinned_memory_but_forget_still_does(open_engine):
    # tau_consolidation 0.99: every unpinned item is trashed at replay.
    async with open_engine(consolidation={"tau_consolidation": 0.99}) as engine:
        pinned = await engine.remember("Sure, I can help with that.", pin=True)
        plain = await engine.remember("The user's cat Miso is twelve years old.")
        report = await engine.consolidate("default")
        decisions = {d.id: d for d in report.decisions}
        assert decisions[pinned.id].decision == "promote"
        assert "pinned" in decisions[pinned.id].reason
        assert decisions[plain.id].decision == "trash"
        forgotten = await engine.forget(ids=[pinned.id])
        assert forgotten.forgotten == 1
        (row,) = await engine.episodic.get([pinned.id])
        assert row.tier == "trash"


async def test_long_term_bound_prunes_unpinned_memories_first(open_engine):
    async with open_engine(temporal={"longterm_capacity": 1}) as engine:
        pinned = await engine.remember("Okay, next question.", pin=True)
        plain = [
            await engine.remember(f"The user's {pet} is called {name}.")
            for pet, name in (("dog", "Rex"), ("parrot", "Kiwi"))
        ]
        await engine.consolidate("default")
        tiers = {r.id: r.tier for r in await engine.episodic.scope_rows("default", None)}
        assert tiers[pinned.id] == "longterm"
        assert [tiers[p.id] for p in plain] == ["trash", "trash"]


async def test_a_pinned_repeat_pins_the_memory_it_repeats(open_engine):
    async with open_engine() as engine:
        first = await engine.remember("The user's dentist is Dr. Okafor.")
        again = await engine.remember("The user's dentist is Dr. Okafor.", pin=True)
        assert again.status == "merged" and again.id == first.id and again.pinned
        (row,) = await engine.episodic.get([first.id])
        assert row.pinned is True and row.importance == 1.0


# --- the default gate's decision ------------------------------------------------------------


def _decide(p: float, text: str = "The build uses Node 20."):
    return judged(text, 0.0, Durability(probability=p, threshold=0.5, health=False))


def test_the_classifier_never_rejects_alone_and_no_model_is_asked():
    """A write the classifier doubts (p below its threshold) is kept as doubtful: the buffer's
    bound and replay decide whether it lasts. On writes from other projects the classifier
    lost a third of the project facts; "The build uses Node 20." had p 0.01. The default gate
    holds no tagger: no model is asked."""
    decision = _decide(0.01)
    assert decision.keep and decision.kind == "doubtful"
    assert "doubtful" in decision.reason and "replay" in decision.reason
    assert _decide(0.9).kind == "fact"
    assert {f.name for f in fields(DefaultGate)} == {"classifier", "tau_durable"}


def test_a_rejection_names_its_rule_and_how_to_insist():
    decision = _decide(0.9, "Thanks, that makes sense!")
    assert not decision.keep and decision.stage == "noise"
    assert "rule: pleasantry" in decision.reason and "pin=true" in decision.reason
