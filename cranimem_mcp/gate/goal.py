"""Goal-conditioned gating and utility tagging (paper B.1).

A write u is kept when cosine(E(u), E(g)) >= tau_noise. Below the threshold it gets a
second look, as in the paper's reference code, because a bare cosine barely separates a
user's constraint from noise (MiniLM scores "I am allergic to shellfish..." at 0.12 against a
trip goal, off-topic news at up to 0.09). The second look keeps a write that is close to what
the scope already holds (the agent's *state*, tau_context) or that the tagger judges to be a
constraint, preference, plan, command or goal change; everything else is rejected and stored
nowhere. Kept writes are tagged; BaseUtility is the mean of importance, surprise, emotion.

A scope without a goal of its own has only the default goal, which no single sentence can
express; its writes go through the default gate instead: rejected only when a noise rule
recognises them (:mod:`.noise`), kept otherwise, at the importance their P(durable) says
(:mod:`.judgment`). A pinned write (the user asked to remember it) skips the gate; the
secrets guard runs before any of this, in the engine.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import numpy as np

from cranimem_mcp.backends.llm import Tagger
from cranimem_mcp.gate.judgment import Durability
from cranimem_mcp.gate.noise import noise
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
    durability: Durability | None = None,
    pin: bool = False,
) -> GateDecision:
    """Decide whether a write enters memory. ``nearest`` is the highest cosine similarity
    to the scope's stored memories (-1.0 for an empty scope). ``durability`` is the default
    gate's judgement (a scope with the default goal): the noise rules decide there."""
    if pin:
        return GateDecision(
            True, relevance, tau_noise, "pin", "pinned",
            "pinned: the caller asked to remember it, so the noise gate was skipped",
        )  # fmt: skip
    if durability is not None:
        return _default_gate(content, relevance, durability)
    if relevance >= tau_noise:
        return GateDecision(
            True, relevance, tau_noise, "similarity", None,
            f"relevance {relevance:.3f} >= tau_noise {tau_noise:.3f}",
        )  # fmt: skip
    if not second_look:
        return GateDecision(
            False, relevance, tau_noise, "similarity", "noise",
            f"relevance {relevance:.3f} < tau_noise {tau_noise:.3f}." + INSIST,
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
        f"{verdict} it: {judgement.reason}" + ("" if judgement.keep else "." + INSIST),
    )  # fmt: skip


def _default_gate(content: str, relevance: float, d: Durability) -> GateDecision:
    """The default gate rejects only what a noise rule recognises (:mod:`.noise`); all else is
    kept, and the classifier's P(durable) says how durable it looks: a write below its
    threshold is kept as *doubtful*, at low importance, and replay decides (paper B.3). The
    classifier never rejects: on writes from other projects it lost a third of the project
    facts ("The build uses Node 20": p 0.01). A model's second look is for goal scopes."""
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
