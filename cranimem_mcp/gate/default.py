"""The default gate: for a scope with the default goal, which no single sentence can express.

A write is rejected only when a noise rule recognises it (:mod:`.noise`), each rejection
naming its rule; all else is kept, and the classifier's P(durable) (:mod:`.judgment`) says
how durable it looks: a write below its threshold is kept as *doubtful*, at low importance,
and replay decides (paper B.3). The classifier never rejects: on writes from other projects
it lost a third of the project facts ("The build uses Node 20": p 0.01). A model's second
look is for goal scopes (:class:`~cranimem_mcp.gate.goal.GoalGate`). Health and safety facts
about a person are always kept; they, standing instructions that open like a request
("Find the cheapest option when I ask for flights."), conventions said as imperatives ("Use
snake_case for Python identifiers.") and notes labelled as lasting ("[decision] ...") are
kept as lasting (top importance: the classifier, trained on one-off requests and untagged
text, gives many of them P near 0).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from cranimem_mcp.gate.goal import INSIST, GateDecision
from cranimem_mcp.gate.judgment import Durability, DurableClassifier
from cranimem_mcp.gate.noise import (
    convention,
    labelled_lasting,
    noise,
    standing_instruction,
)


@dataclass(frozen=True)
class DefaultGate:
    """The noise rules and the durable classifier, as a :class:`~cranimem_mcp.gate.goal.Gate`.
    ``tau_durable``: the P(durable) below which a kept write is doubtful (None: the
    classifier's own threshold)."""

    classifier: DurableClassifier
    tau_durable: float | None = None

    async def decide(
        self, content: str, goal: str, vector: np.ndarray, relevance: float, nearest: float
    ) -> GateDecision:
        return judged(content, relevance, self.classifier.judge(vector, content, self.tau_durable))


def judged(content: str, relevance: float, d: Durability) -> GateDecision:
    """The default gate's decision, given the classifier's judgement ``d`` of the write."""
    p, tau = d.probability, d.threshold
    if d.health:
        return GateDecision(
            True, relevance, tau, "durable", "health",
            "a health or safety fact about a person: always kept", p,
        )  # fmt: skip
    found = noise(content)
    if found is not None:
        return GateDecision(
            False, relevance, tau, "noise", "noise",
            f"rejected as {found.why} (rule: {found.rule})." + INSIST, p,
        )  # fmt: skip
    if standing_instruction(content) or convention(content):
        return GateDecision(
            True, relevance, tau, "durable", "standing",
            "a standing instruction, for every time: kept as lasting", p,
        )  # fmt: skip
    if label := labelled_lasting(content):
        return GateDecision(
            True, relevance, tau, "durable", "standing",
            f"labelled a lasting note ({label}): kept as lasting", p,
        )  # fmt: skip
    if p >= tau:
        return GateDecision(
            True, relevance, tau, "durable", "fact",
            f"durable (default gate): p {p:.2f} >= {tau:.2f}", p,
        )  # fmt: skip
    return GateDecision(
        True, relevance, tau, "durable", "doubtful",
        f"kept as doubtful (default gate): p {p:.2f} < {tau:.2f}, no noise rule applies; "
        "its importance is low, and replay decides whether it lasts", p,
    )  # fmt: skip


def judged_importance(heuristic: float, p: float, durable: bool) -> float:
    """The importance of a write the default gate kept (paper B.1's importance signal), from
    the tagger's ``heuristic`` one (specificity: names, numbers, first-person cues) and the
    classifier's P(durable) ``p``. A durable write gets the higher of the two: a short, plain
    rule ("Format dates as YYYY-MM-DD.", heuristic 0.44) is as durable as a long one, and
    replay would otherwise trash it for being short and calm (BaseUtility 0.23). A doubtful
    write gets their mean: it ranks below what the classifier trusts, but P near 0 alone does
    not condemn it; that P is least reliable on what the classifier saw least of (a chat turn
    that wraps a life event in small talk, a tagged project note: docs/gate-measurement.md,
    "What replay keeps")."""
    return max(heuristic, p) if durable else (heuristic + p) / 2
