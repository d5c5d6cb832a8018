"""The default gate's judgement: is a write *durable*, worth an assistant's memory?

A scope with its own goal keeps the paper's goal-conditioned gate (cosine to the goal).
A scope without one has only the default goal, and one goal sentence cannot say "anything
durable about the user, their people, their work": cosine to it rejected allergies and kept
"Great question!" (docs/gate-measurement.md). So the default gate asks a different question,
answered by a small classifier (one hidden layer) over the write's MiniLM embedding (already
computed for the store), linguistic cues and cues from its dependency parse (the extractor's,
reused): who the sentence is about (first person, "User ...",
"The user's ...", no subject at all), rules for the assistant, team conventions, people,
schedules, health and safety; against pleasantries, the assistant's own narration, tool
output, transient status, one-off requests and world knowledge. The cues are
:mod:`~cranimem_mcp.gate.write_cues` (read from the text) and :mod:`~cranimem_mcp.gate.parse_cues`
(read from its parse); this module is the classifier over them and the embedding.

The weights are a small JSON file in the package, trained by ``scripts/train_gate.py`` on the
tuning part of ``tests/data/gate_default_*.json`` (reproducible: same data, same file). They
belong to one vector space (``embedder``): with another embedder the classifier does not
apply and the gate says so. Health and safety facts about a person are never rejected.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from cranimem_mcp.gate.parse_cues import PARSE_CUES, parse_cues
from cranimem_mcp.gate.write_cues import CUES, about_health, cues

WEIGHTS = Path(__file__).parent / "data" / "default_gate.json"


def features(vector: np.ndarray, text: str) -> np.ndarray:
    """The classifier's input row: the embedding, the text's cues, the parse's cues (the
    order its weights were trained in)."""
    return np.concatenate([np.asarray(vector, dtype=np.float32), cues(text), parse_cues(text)])


# --- the classifier -----------------------------------------------------------------------


@dataclass(frozen=True)
class Durability:
    probability: float  # that the write is durable
    threshold: float
    health: bool  # a health or safety fact about a person

    @property
    def keep(self) -> bool:
        return self.health or self.probability >= self.threshold


@dataclass(frozen=True)
class DurableClassifier:
    """A small neural network over standardised features: one hidden layer of rectified
    units, p = sigmoid(w2 . relu(W1 . (x - mean) / scale + b1) + b2). With the tuning files of
    issue 13 it dropped 0.04 more noise out of fold than a logistic regression at the same
    keep rate (docs/gate-measurement.md)."""

    embedder: str
    dim: int
    mean: np.ndarray
    scale: np.ndarray
    hidden: np.ndarray  # (features, units)
    hidden_bias: np.ndarray
    output: np.ndarray  # (units,)
    output_bias: float
    threshold: float

    @classmethod
    def load(cls, path: Path = WEIGHTS) -> DurableClassifier:
        data = json.loads(path.read_text())
        if data.get("cues") != list(CUES) + list(PARSE_CUES):
            raise ValueError(f"{path} was trained with other cues: retrain (scripts/train_gate.py)")
        return cls(
            embedder=data["embedder"],
            dim=int(data["dim"]),
            mean=np.asarray(data["mean"], dtype=np.float32),
            scale=np.asarray(data["scale"], dtype=np.float32),
            hidden=np.asarray(data["hidden"], dtype=np.float32),
            hidden_bias=np.asarray(data["hidden_bias"], dtype=np.float32),
            output=np.asarray(data["output"], dtype=np.float32),
            output_bias=float(data["output_bias"]),
            threshold=float(data["threshold"]),
        )

    def fits(self, embedder_id: str, dim: int) -> bool:
        return embedder_id == self.embedder and dim == self.dim

    def probability(self, vector: np.ndarray, text: str) -> float:
        return self.of_features(features(vector, text))

    def of_features(self, row: np.ndarray) -> float:
        x = (row - self.mean) / self.scale
        h = np.maximum(0.0, x @ self.hidden + self.hidden_bias)
        z = float(h @ self.output) + self.output_bias
        return 1.0 / (1.0 + math.exp(-max(-60.0, min(60.0, z))))

    def judge(self, vector: np.ndarray, text: str, threshold: float | None = None) -> Durability:
        return Durability(
            probability=self.probability(vector, text),
            threshold=self.threshold if threshold is None else threshold,
            health=about_health(text),
        )
