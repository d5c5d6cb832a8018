"""The model protocols of the pipeline: ``Tagger`` (the gate's second look and utility tags,
paper B.1) and ``Extractor`` (typed entities and relations for the linkage engine, B.4).

Implementations: the heuristic ones in :mod:`cranimem_mcp.heuristics` (no LLM needed) and,
later, the Ollama ones. Every implementation returns validated pydantic models, so the engine
never sees a score outside [0, 1] or an untyped entity.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from .models import Extraction, Judgement, Tagging


@runtime_checkable
class Tagger(Protocol):
    @property
    def name(self) -> str:
        """Recorded with every memory as ``tagged_by``."""
        ...

    async def judge(self, content: str, goal: str) -> Judgement:
        """Second look at a write whose similarity to the goal is below tau_noise:
        keep first-person constraints, preferences, plans, commands and goal changes;
        drop off-goal chatter."""
        ...

    async def tag(self, content: str, goal: str, novelty: float) -> Tagging:
        """Importance, surprise and emotion in [0, 1]; ``novelty`` is 1 - the highest cosine
        similarity to the scope's stored memories (1.0 for an empty scope). ``tagged_by``
        names who really tagged it (a wrapper that fell back says "heuristic")."""
        ...


@runtime_checkable
class Extractor(Protocol):
    @property
    def name(self) -> str: ...

    async def extract(self, texts: list[str]) -> list[Extraction]:
        """One extraction per text, in order (batched so an LLM sees several at once)."""
        ...
