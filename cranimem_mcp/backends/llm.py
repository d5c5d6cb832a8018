"""The model protocols of the pipeline: ``Tagger`` (the gate's second look and utility tags,
paper B.1) and ``Extractor`` (typed entities and relations for the linkage engine, B.4).

Implementations: the heuristic ones, no LLM needed (:mod:`cranimem_mcp.gate.tagger`, the
tagger; :mod:`cranimem_mcp.extraction.extractor`, the extractor), and the Ollama ones. Every
implementation returns validated pydantic models, so the engine never sees a score outside
[0, 1] or an untyped entity.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from cranimem_mcp.models import Extraction, Judgement, Tagging


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


@dataclass
class CallMeter:
    """Counts the model calls made inside one unit of work (a consolidation run) and caps
    them at ``limit``: an implementation that calls a model checks :meth:`allows` first and
    falls back when the budget is spent."""

    limit: int | None = None
    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    fallbacks: int = 0

    def allows(self, calls: int = 1) -> bool:
        return self.limit is None or self.calls + calls <= self.limit


_meter: ContextVar[CallMeter | None] = ContextVar("cranimem_call_meter", default=None)


@contextmanager
def metered(limit: int | None) -> Iterator[CallMeter]:
    """Model calls awaited inside this block (in this task) are counted on, and limited by,
    the yielded meter. Concurrent work in other tasks (a ``remember``) is not."""
    meter = CallMeter(limit=limit)
    token = _meter.set(meter)
    try:
        yield meter
    finally:
        _meter.reset(token)


def current_meter() -> CallMeter | None:
    return _meter.get()
