"""Goal-conditioned gating and utility tagging (paper B.1).

A write u is kept when cosine(E(u), E(g)) >= tau_noise. Below the threshold it gets a
second look, as in the paper's reference code, because a bare cosine barely separates a
user's constraint from noise (MiniLM scores "I am allergic to shellfish..." at 0.12 against a
trip goal, off-topic news at up to 0.09). The second look keeps a write that is close to what
the scope already holds (the agent's *state*, tau_context) or that the tagger judges to be a
constraint, preference, plan, command or goal change; everything else is rejected and stored
nowhere. Kept writes are tagged; BaseUtility is the mean of importance, surprise, emotion.

A scope without a goal of its own has only the default goal, which no single sentence can
express; its writes go through the default gate instead (:mod:`.default`). Both are a
:class:`Gate`; the engine picks them from the settings and the write path asks the one
for the scope's goal. A pinned write (the user asked to remember it) skips the gate
(:func:`pinned`); the secrets guard runs before any of this, in the write path.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from cranimem_mcp.backends.llm import Tagger
from cranimem_mcp.models import Judgement

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class GateDecision:
    keep: bool
    relevance: float
    threshold: float
    stage: str  # "similarity" | "context" | "second_look" | "durable" | "noise" | "pin"
    kind: str | None
    reason: str
    durability: float | None = None  # the default gate's P(durable)


INSIST = " If the user asked you to remember this, call remember again with pin=true."


def relevance(content_vector: np.ndarray, goal_vector: np.ndarray) -> float:
    """Cosine similarity of unit vectors."""
    return float(np.dot(content_vector, goal_vector))


def pinned(relevance: float, threshold: float) -> GateDecision:
    """A pinned write (the user asked to remember it) skips whichever gate the scope has."""
    return GateDecision(
        True, relevance, threshold, "pin", "pinned",
        "pinned: the caller asked to remember it, so the noise gate was skipped",
    )  # fmt: skip


class Gate(Protocol):
    """Decides whether a write enters memory. The engine picks one per kind of scope: the
    goal-conditioned :class:`GoalGate` for a scope with a goal of its own, the default gate
    (:class:`~cranimem_mcp.gate.default.DefaultGate`) for a scope with the default goal."""

    async def decide(
        self, content: str, goal: str, vector: np.ndarray, relevance: float, nearest: float
    ) -> GateDecision:
        """``vector`` is the write's embedding, ``relevance`` its cosine to ``goal``'s, and
        ``nearest`` its highest cosine to the scope's stored memories (-1.0 when empty)."""
        ...


@dataclass(frozen=True)
class GoalGate:
    """The paper's gate: cosine to the goal, then the second look (the module docstring)."""

    tau_noise: float
    tau_context: float
    second_look: bool
    tagger: Tagger

    async def decide(
        self, content: str, goal: str, vector: np.ndarray, relevance: float, nearest: float
    ) -> GateDecision:
        tau_noise, tau_context = self.tau_noise, self.tau_context
        if relevance >= tau_noise:
            return GateDecision(
                True, relevance, tau_noise, "similarity", None,
                f"relevance {relevance:.3f} >= tau_noise {tau_noise:.3f}",
            )  # fmt: skip
        if not self.second_look:
            return GateDecision(
                False, relevance, tau_noise, "similarity", "noise",
                f"relevance {relevance:.3f} < tau_noise {tau_noise:.3f}." + INSIST,
            )  # fmt: skip
        # Why: the goal text is only half of the agent's state; a write close to what the
        # scope already remembers is on-topic even when the goal's wording does not match it.
        if nearest >= tau_context:
            return GateDecision(
                True, relevance, tau_noise, "context", "fact",
                f"relevance {relevance:.3f} < tau_noise {tau_noise:.3f}, but similarity "
                f"{nearest:.3f} to stored memories >= tau_context {tau_context:.3f}",
            )  # fmt: skip
        tagger = self.tagger
        judgement: Judgement = await tagger.judge(content, goal)
        verdict = "kept" if judgement.keep else "rejected"
        return GateDecision(
            judgement.keep, relevance, tau_noise, "second_look", judgement.kind,
            f"relevance {relevance:.3f} < tau_noise {tau_noise:.3f}; second look "
            f"({tagger.name}) {verdict} it: {judgement.reason}"
            + ("" if judgement.keep else "." + INSIST),
        )  # fmt: skip
