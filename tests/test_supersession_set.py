"""Facts change only when they change, on our own labelled pairs (tests/data/
supersession_test.json: invented change / no-change pairs, judged as
cranimem_mcp/eval/supersession.py says): the held-out part, through the engine, out of the box.
The tuning part (supersession_tune.json) is what the extraction rules were fixed on."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from cranimem_mcp.eval import supersession

pytestmark = [pytest.mark.anyio, pytest.mark.slow]  # ~20 s: 61 pairs, each replayed twice
DATA = Path(__file__).parent / "data"
logger = logging.getLogger(__name__)
# Measured on the held-out part (docs/RESULTS.md): 0.951 (58 of 61; on its first 41, 0.707
# before issue 40's fixes). One pair of slack: the negation pairs are read once replay has
# run, and replay's decisions hang on floating-point scores.
THRESHOLD = 0.92


def test_the_pairs_are_well_formed():
    for part in ("tune", "test"):
        pairs = supersession.load(DATA / f"supersession_{part}.json")
        assert len(pairs) >= 40
        assert {p.expect for p in pairs} == {"ends", "keeps"}
        assert len({p.id for p in pairs}) == len(pairs)


async def test_a_stated_change_ends_the_old_value_and_nothing_else_ends(open_engine):
    pairs = supersession.load(DATA / "supersession_test.json")
    async with open_engine() as engine:
        outcomes = await supersession.measure(engine, pairs, prefix="test")
    wrong = [o.describe() for o in outcomes if not o.right]
    logger.info("pairs judged wrong:\n%s", "\n".join(wrong))  # shown with -o log_cli=true
    assert supersession.accuracy(outcomes) >= THRESHOLD, wrong
    # No unrelated preference or like ends another: every "keeps" pair but negation ones.
    keeps = [o for o in outcomes if o.pair.expect == "keeps"]
    assert not [o.describe() for o in keeps if o.reported], "a fact ended with no change"
    # A change outlives replay: the write that ended a fact is not trashed as a low-utility
    # write, its ends with it (15 of 21 before the change's surprise was whole; 20 of 21 now).
    ends = [o for o in outcomes if o.pair.expect == "ends" and o.reported]
    kept = [o for o in ends if o.after_replay]
    assert len(kept) >= len(ends) - 1, [o.describe() for o in ends if not o.after_replay]
