"""Ollama as the model layer: embeddings (``/api/embed``), utility tags, the gate's second
look and knowledge-graph extraction (``/api/chat`` with ``format`` set to the JSON schema of
the reply model), through the official ``ollama.AsyncClient``.

Invariants. Every call is bounded: it waits for a slot of the concurrency limit and runs
under one deadline (``timeout_seconds``; the client's own default is no timeout). Connection
errors and timeouts are mapped once, in :meth:`OllamaBackend._call`, to
``BackendUnavailable``, after which the backend rests for ``cooldown_seconds`` so that a dead
server costs one timeout, not one per write. A reply is valid only if it was not cut off
(``done_reason``), parses, and validates against the pydantic model (scores clamped to
[0, 1]); an invalid reply is retried once with the validation error in the prompt. After
that, the heuristic tagger or extractor answers for that item and says so (``tagged_by`` /
``extracted_by`` = "heuristic"); the engine re-tags or re-extracts such items at a later
consolidation. Nothing is ever lost to a model failure, and every fallback is logged and
counted.

This module is the adapters (tagger, extractor, embedder) and the package's Ollama API; the
server connection is :mod:`~cranimem_mcp.backends.ollama_backend`, the prompts and reply models
:mod:`~cranimem_mcp.backends.ollama_prompts`.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from cranimem_mcp.backends.llm import Extractor, Tagger, current_meter
from cranimem_mcp.backends.ollama_backend import ChatReply, OllamaBackend, Usage, has_model
from cranimem_mcp.backends.ollama_prompts import (
    EntityReply,
    ExtractionItem,
    ExtractionReply,
    JudgeReply,
    Prompt,
    RelationReply,
    TagReply,
    ask,
    clamp,
    prompts_dir,
)
from cranimem_mcp.errors import BackendUnavailable, ModelOutputError
from cranimem_mcp.models import Entity, Extraction, Judgement, Relation, Tagging
from cranimem_mcp.models import Utility as UtilityModel

__all__ = [
    "ChatReply",
    "EntityReply",
    "ExtractionItem",
    "ExtractionReply",
    "JudgeReply",
    "OllamaBackend",
    "OllamaEmbedder",
    "OllamaExtractor",
    "OllamaTagger",
    "Prompt",
    "RelationReply",
    "TagReply",
    "Usage",
    "ask",
    "has_model",
    "prompts_dir",
]

logger = logging.getLogger(__name__)


def _budget_allows() -> bool:
    meter = current_meter()
    return meter is None or meter.allows()


def _note_fallback(usage: Usage, what: str, model: str, reason: str) -> None:
    usage.fallbacks[what] += 1
    meter = current_meter()
    if meter is not None:
        meter.fallbacks += 1
    logger.warning("%s by %s failed, heuristic fallback: %s", what, model, reason)


# --- the adapters -----------------------------------------------------------------------


class OllamaTagger:
    """Goal-conditioned utility tags and the gate's second look by a chat model.

    Surprise blends the model's judgement (how unexpected, given the goal) with the measured
    novelty against the scope's memories: the model cannot see the store, the embedding can.
    """

    def __init__(
        self,
        backend: OllamaBackend,
        model: str,
        prompts: Path,
        fallback: Tagger,
    ) -> None:
        self.backend = backend
        self.model = model
        self._tag = Prompt.load(prompts / "tag.md")
        self._judge = Prompt.load(prompts / "judge.md")
        self._fallback = fallback

    @property
    def name(self) -> str:
        return f"ollama:{self.model}"

    async def judge(self, content: str, goal: str) -> Judgement:
        reason = "the LLM-call budget of this run is spent"
        if _budget_allows():
            messages = self._judge.messages(goal=goal, content=content)
            try:
                reply = await ask(self.backend, self.model, messages, JudgeReply)
                return Judgement(
                    keep=reply.keep, kind=reply.kind, reason=reply.reason, judged_by=self.name
                )
            except (BackendUnavailable, ModelOutputError) as exc:
                reason = str(exc)
        _note_fallback(self.backend.usage, "judge", self.model, reason)
        judgement = await self._fallback.judge(content, goal)
        return judgement.model_copy(
            update={"reason": f"{judgement.reason} (heuristic fallback: {reason[:160]})"}
        )

    async def tag(self, content: str, goal: str, novelty: float) -> Tagging:
        reason = "the LLM-call budget of this run is spent"
        if _budget_allows():
            messages = self._tag.messages(goal=goal, content=content, novelty=f"{novelty:.2f}")
            try:
                reply = await ask(self.backend, self.model, messages, TagReply)
                surprise = (reply.surprise + clamp(novelty)) / 2
                utility = UtilityModel.of(reply.importance, surprise, reply.emotion)
                return Tagging(utility=utility, tagged_by=self.name)
            except (BackendUnavailable, ModelOutputError) as exc:
                reason = str(exc)
        _note_fallback(self.backend.usage, "tag", self.model, reason)
        return await self._fallback.tag(content, goal, novelty)


class OllamaExtractor:
    """Typed entities and relations for several memories per chat call (``batch_size``)."""

    def __init__(
        self,
        backend: OllamaBackend,
        model: str,
        prompts: Path,
        batch_size: int = 4,
        *,
        fallback: Extractor,
    ) -> None:
        self.backend = backend
        self.model = model
        self.batch_size = batch_size
        self._prompt = Prompt.load(prompts / "extract.md")
        self._fallback = fallback

    @property
    def name(self) -> str:
        return f"ollama:{self.model}"

    async def extract(self, texts: list[str]) -> list[Extraction]:
        out: list[Extraction] = []
        for start in range(0, len(texts), self.batch_size):
            out += await self._extract_batch(texts[start : start + self.batch_size])
        return out

    async def _extract_batch(self, texts: list[str]) -> list[Extraction]:
        reason = "the LLM-call budget of this run is spent"
        items: dict[int, ExtractionItem] = {}
        if _budget_allows():
            numbered = "\n".join(f"{i}. {' '.join(t.split())}" for i, t in enumerate(texts, 1))
            messages = self._prompt.messages(texts=numbered)
            try:
                reply = await ask(self.backend, self.model, messages, ExtractionReply)
                items = {item.id: item for item in reply.items}
                reason = "the reply had no item for this memory"
            except (BackendUnavailable, ModelOutputError) as exc:
                reason = str(exc)
        out = []
        for i, text in enumerate(texts, 1):
            item = items.get(i)
            if item is None:
                _note_fallback(self.backend.usage, "extract", self.model, reason)
                (fallback,) = await self._fallback.extract([text])
                out.append(fallback.model_copy(update={"extracted_by": "heuristic"}))
                continue
            out.append(
                Extraction(
                    entities=[Entity(name=e.name, type=e.type) for e in item.entities],
                    relations=[
                        Relation(subject=r.subject, predicate=r.predicate, object=r.object)
                        for r in item.relations
                    ],
                    extracted_by=self.name,
                )
            )
        return out


class OllamaEmbedder:
    """``/api/embed`` in batches; rows are re-normalised to unit length."""

    def __init__(self, backend: OllamaBackend, model: str, dim: int, batch_size: int = 32) -> None:
        self.backend = backend
        self.model = model
        self._dim = dim
        self.batch_size = batch_size

    @property
    def id(self) -> str:
        return f"ollama:{self.model}"

    @property
    def dim(self) -> int:
        return self._dim

    async def embed(self, texts: list[str]) -> np.ndarray:
        rows: list[Sequence[float]] = []
        for start in range(0, len(texts), self.batch_size):
            batch = texts[start : start + self.batch_size]
            vectors = await self.backend.embed(self.model, batch)
            if len(vectors) != len(batch) or any(len(v) != self._dim for v in vectors):
                raise ModelOutputError(
                    f"{self.model} returned {len(vectors)} vectors of "
                    f"{sorted({len(v) for v in vectors})} dimensions for {len(batch)} texts; "
                    f"expected {self._dim}"
                )
            rows += vectors
        matrix = np.asarray(rows, dtype=np.float32).reshape(len(texts), self._dim)
        norms = np.linalg.norm(matrix, axis=1, keepdims=True)
        return matrix / np.where(norms == 0, 1.0, norms)
