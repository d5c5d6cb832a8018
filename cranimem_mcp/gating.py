"""Goal-conditioned gating and utility tagging (paper B.1).

A write u is kept when cosine(E(u), E(g)) >= tau_noise. Below the threshold it gets a
second look, as in the paper's reference code, because a bare cosine barely separates a
user's constraint from noise (MiniLM scores "I am allergic to shellfish..." at 0.12 against a
trip goal, off-topic news at up to 0.09). The second look keeps a write that is close to what
the scope already holds (the agent's *state*, tau_context) or that the tagger judges to be a
constraint, preference, plan, command or goal change; everything else is rejected and stored
nowhere. Kept writes are tagged; BaseUtility is the mean of importance, surprise, emotion.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import numpy as np

from .llm import Tagger
from .models import Judgement

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class GateDecision:
    keep: bool
    relevance: float
    threshold: float
    stage: str  # "similarity" | "context" | "second_look"
    kind: str | None
    reason: str


def relevance(content_vector: np.ndarray, goal_vector: np.ndarray) -> float:
    """Cosine similarity of unit vectors."""
    return float(np.dot(content_vector, goal_vector))


async def gate(
    content: str,
    goal: str,
    *,
    relevance: float,
    nearest: float,
    tau_noise: float,
    tau_context: float,
    second_look: bool,
    tagger: Tagger,
) -> GateDecision:
    """Decide whether a write enters memory. ``nearest`` is the highest cosine similarity
    to the scope's stored memories (-1.0 for an empty scope)."""
    if relevance >= tau_noise:
        return GateDecision(
            True, relevance, tau_noise, "similarity", None,
            f"relevance {relevance:.3f} >= tau_noise {tau_noise:.3f}",
        )  # fmt: skip
    if not second_look:
        return GateDecision(
            False, relevance, tau_noise, "similarity", "noise",
            f"relevance {relevance:.3f} < tau_noise {tau_noise:.3f}",
        )  # fmt: skip
    # Why: the goal text is only half of the agent's state; a write close to what the scope
    # already remembers is on-topic even when the goal's wording does not match it.
    if nearest >= tau_context:
        return GateDecision(
            True, relevance, tau_noise, "context", "fact",
            f"relevance {relevance:.3f} < tau_noise {tau_noise:.3f}, but similarity "
            f"{nearest:.3f} to stored memories >= tau_context {tau_context:.3f}",
        )  # fmt: skip
    judgement: Judgement = await tagger.judge(content, goal)
    verdict = "kept" if judgement.keep else "rejected"
    return GateDecision(
        judgement.keep, relevance, tau_noise, "second_look", judgement.kind,
        f"relevance {relevance:.3f} < tau_noise {tau_noise:.3f}; second look ({tagger.name}) "
        f"{verdict} it: {judgement.reason}",
    )  # fmt: skip
