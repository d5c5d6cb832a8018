"""The memory systems the benchmark compares, behind one small interface.

``cranimem`` is the full engine (gate, bounded buffer, replay, graph, dual-path recall);
``no-gate`` and ``no-graph`` are ablations of it (every write passes the gate; recall uses the
episodic path only). ``vanilla`` is the baseline RAG memory: every write stored, no gate, no
consolidation, top-k cosine over everything. It shares the embedder and renders its context
with the engine's own renderer, so the k and the character budget mean the same for every
system.
"""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from cranimem_mcp.backends.embeddings import Embedder
from cranimem_mcp.config import Settings
from cranimem_mcp.engine import MemoryEngine
from cranimem_mcp.models import RecallItem, RecallResult
from cranimem_mcp.recall.context import render

SYSTEMS = ("cranimem", "vanilla", "no-gate", "no-graph")


@dataclass
class Written:
    status: str  # stored | merged | rejected
    id: str | None
    consolidate_ms: float = 0.0  # time spent in a consolidation the write triggered


@dataclass
class Exam:
    result: RecallResult
    consolidate_ms: float
    recall_ms: float
    tiers: dict[str, str] = field(default_factory=dict)  # memory id -> tier at exam time
    stored: int = 0  # memories the scope holds (buffer + long-term) at exam time


class System(Protocol):
    name: str

    async def __aenter__(self) -> System: ...

    async def __aexit__(self, *exc: object) -> None: ...

    async def begin(self, scope: str, goal: str) -> None: ...

    async def remember(self, scope: str, text: str) -> Written: ...

    async def exam(
        self, scope: str, query: str, k: int, max_chars: int, ids: list[str]
    ) -> Exam: ...


def eval_settings(base: Settings, home: Path, *, gate: bool = True) -> Settings:
    """The engine's settings for a benchmark run. The idle timer is off: it fires on wall-clock
    time, which would make the run depend on the machine's speed; the every-N-writes schedule
    stays as configured."""
    data = base.model_dump()
    data["home"] = home
    data["consolidation"]["interval_seconds"] = 0.0
    if not gate:
        # Every write passes: the default gate (a scope with the default goal) is off, and
        # the goal-conditioned gate's threshold is -1, which no cosine falls below.
        data["gating"]["default_gate"] = False
        data["gating"]["tau_noise"] = -1.0
    return Settings.model_validate(data)


class CraniMemSystem:
    """The engine, one data directory per run, one scope per question."""

    def __init__(
        self, name: str, settings: Settings, embedder: Embedder, *, graph: bool = True
    ) -> None:
        self.name = name
        self._engine = MemoryEngine(settings, embedder=embedder, background=True)
        self._paths = ["episodic", "graph"] if graph else ["episodic"]

    async def __aenter__(self) -> CraniMemSystem:
        await self._engine.__aenter__()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self._engine.__aexit__(*exc)

    async def begin(self, scope: str, goal: str) -> None:
        await self._engine.set_goal(goal, scope)

    async def remember(self, scope: str, text: str) -> Written:
        result = await self._engine.remember(text, scope)
        # The engine consolidates every N writes in the background; waiting for it here
        # keeps the run deterministic and charges its cost to the write that caused it.
        started = time.perf_counter()
        await self._engine.wait_idle()
        waited = (time.perf_counter() - started) * 1000
        # Under a millisecond means nothing was running: that is the write's own cost.
        return Written(result.status, result.id, waited if waited >= 1.0 else 0.0)

    async def exam(self, scope: str, query: str, k: int, max_chars: int, ids: list[str]) -> Exam:
        started = time.perf_counter()
        await self._engine.consolidate(scope, trigger="before_exam")
        consolidated = time.perf_counter()
        result = await self._engine.recall(query, scope, k, max_chars, self._paths)
        done = time.perf_counter()
        rows = await self._engine.episodic.get(ids) if ids else []
        tiers = {r.id: r.tier for r in rows}
        stored = await self._engine.episodic.count(scope, ("buffer", "longterm"))
        return Exam(
            result=result,
            consolidate_ms=(consolidated - started) * 1000,
            recall_ms=(done - consolidated) * 1000,
            tiers=tiers,
            stored=stored,
        )


class VanillaRAG:
    """Baseline: store every write, retrieve the top-k by cosine, nothing else."""

    def __init__(self, embedder: Embedder, name: str = "vanilla") -> None:
        self.name = name
        self._embedder = embedder
        self._scopes: dict[str, tuple[list[str], list[str], list[np.ndarray]]] = {}

    async def __aenter__(self) -> VanillaRAG:
        return self

    async def __aexit__(self, *exc: object) -> None:
        self._scopes.clear()

    async def begin(self, scope: str, goal: str) -> None:
        self._scopes[scope] = ([], [], [])

    async def remember(self, scope: str, text: str) -> Written:
        ids, texts, vectors = self._scopes.setdefault(scope, ([], [], []))
        vectors.append((await self._embedder.embed([text]))[0])
        ids.append("m_" + uuid.uuid4().hex[:20])
        texts.append(text)
        return Written("stored", ids[-1])

    async def exam(self, scope: str, query: str, k: int, max_chars: int, ids: list[str]) -> Exam:
        started = time.perf_counter()
        memory_ids, texts, vectors = self._scopes.get(scope, ([], [], []))
        qvec = (await self._embedder.embed([query]))[0]
        items: list[RecallItem] = []
        if vectors:
            scores = np.stack(vectors) @ qvec
            stamp = datetime.now(UTC)
            for i in np.argsort(-scores, kind="stable")[:k]:
                items.append(
                    RecallItem(
                        id=memory_ids[i],
                        path="recent",
                        content=texts[i],
                        score=round(float(scores[i]), 4),
                        created_at=stamp,
                        tier="buffer",
                    )
                )
        context, items, _ = render(items, [], max_chars, min_score=-1.0)
        result = RecallResult(context=context, items=items, facts=[], took_ms=0.0)
        elapsed = (time.perf_counter() - started) * 1000
        result.took_ms = round(elapsed, 2)
        return Exam(
            result=result,
            consolidate_ms=0.0,
            recall_ms=elapsed,
            tiers=dict.fromkeys(ids, "buffer"),
            stored=len(memory_ids),
        )


def build_system(name: str, base: Settings, home: Path, embedder: Embedder) -> Any:
    if name == "vanilla":
        return VanillaRAG(embedder)
    if name == "cranimem":
        return CraniMemSystem(name, eval_settings(base, home), embedder)
    if name == "no-gate":
        return CraniMemSystem(name, eval_settings(base, home, gate=False), embedder)
    if name == "no-graph":
        return CraniMemSystem(name, eval_settings(base, home), embedder, graph=False)
    raise ValueError(f"unknown system {name!r}; known: {', '.join(SYSTEMS)}")
