"""One conversation's memory under test, behind one small interface: written turn by turn,
settled once after the last write, then asked. ``eval locomo`` and ``eval longmemeval`` run
the same systems through it, each on a fresh store per conversation:

- ``cranimem``: the engine with its default settings (default goal, heuristic tagger and
  extractor, the embedder it is handed) and no background work, so the only consolidation
  during the writes is the buffer bound's (overflow goes through replay); one ``consolidate``
  after the last turn;
- ``cranimem-mcp``: the same through a real MCP stdio client (:mod:`.through_mcp`);
- ``vanilla``: cosine top-k over every turn (:class:`.systems.VanillaRAG`);
- ``bm25``: Okapi BM25 top-k over every turn (:mod:`.bm25`).
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Protocol

from cranimem_mcp.backends.embeddings import Embedder
from cranimem_mcp.config import Settings
from cranimem_mcp.engine import MemoryEngine
from cranimem_mcp.errors import InvalidInput

from .bm25 import BM25
from .systems import VanillaRAG, eval_settings
from .through_mcp import Recalled

SYSTEMS = ("cranimem", "vanilla", "bm25", "cranimem-mcp")


class ConversationMemory(Protocol):
    """One conversation's memory: written turn by turn, settled once, then asked."""

    async def remember(self, text: str) -> str: ...  # stored | merged | rejected

    async def settle(self) -> None: ...  # after the last write

    async def recall(self, query: str, k: int) -> Recalled: ...


class EngineMemory:
    def __init__(self, engine: MemoryEngine, scope: str, max_chars: int) -> None:
        self._engine, self._scope, self._max_chars = engine, scope, max_chars

    async def remember(self, text: str) -> str:
        return (await self._engine.remember(text, self._scope)).status

    async def settle(self) -> None:
        await self._engine.consolidate(self._scope)

    async def recall(self, query: str, k: int) -> Recalled:
        result = await self._engine.recall(query, self._scope, k, self._max_chars)
        return Recalled([it.content for it in result.items][:k], result.took_ms)


class VanillaMemory:
    def __init__(self, rag: VanillaRAG, scope: str, max_chars: int) -> None:
        self._rag, self._scope, self._max_chars = rag, scope, max_chars

    async def remember(self, text: str) -> str:
        return (await self._rag.remember(self._scope, text)).status

    async def settle(self) -> None:
        return None

    async def recall(self, query: str, k: int) -> Recalled:
        exam = await self._rag.exam(self._scope, query, k, self._max_chars, [])
        return Recalled([it.content for it in exam.result.items][:k], exam.result.took_ms)


class BM25Memory:
    """Every write kept whole; no context budget, no score floor: the ranking is the recall."""

    def __init__(self) -> None:
        self._index = BM25()
        self._texts: list[str] = []

    async def remember(self, text: str) -> str:
        self._index.add(text)
        self._texts.append(text)
        return "stored"

    async def settle(self) -> None:
        return None

    async def recall(self, query: str, k: int) -> Recalled:
        started = time.perf_counter()
        found = [self._texts[i] for i, _score in self._index.top(query, k)]
        return Recalled(found, round((time.perf_counter() - started) * 1000, 2))


@asynccontextmanager
async def open_memory(
    system: str,
    home: Path,
    scope: str,
    base: Settings,
    embedder: Embedder,
    max_chars: int,
    config_file: Path | None = None,
) -> AsyncIterator[ConversationMemory]:
    """A fresh memory of ``system`` for one conversation; ``home`` is its data directory (the
    engine's; the baselines keep everything in memory)."""
    if system == "vanilla":
        async with VanillaRAG(embedder) as rag:
            await rag.begin(scope, "")
            yield VanillaMemory(rag, scope, max_chars)
    elif system == "bm25":
        yield BM25Memory()
    elif system == "cranimem":
        settings = eval_settings(base, home)
        async with MemoryEngine(settings, embedder=embedder, background=False) as engine:
            yield EngineMemory(engine, scope, max_chars)
    elif system == "cranimem-mcp":
        from .through_mcp import open_mcp_memory

        async with open_mcp_memory(home, scope, max_chars, config_file) as memory:
            yield memory
    else:
        raise InvalidInput(f"no memory system {system!r}; known: {', '.join(SYSTEMS)}")
