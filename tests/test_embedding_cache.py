"""The embedding cache (goals and graph facts recur from call to call): a call that fills it
past its size still answers every text it asked for, with the vector the embedder gives."""

from __future__ import annotations

import anyio
import numpy as np
import pytest

from cranimem_mcp.backends.embeddings import EmbeddingCache
from cranimem_mcp.eval.bench import ConstantEmbedder

pytestmark = pytest.mark.anyio


class Counting(ConstantEmbedder):
    def __init__(self) -> None:
        super().__init__(dim=8)
        self.asked: list[str] = []

    async def embed(self, texts: list[str]) -> np.ndarray:
        self.asked += texts
        await anyio.sleep(0.01)  # lets a concurrent call run in between
        return await super().embed(texts)


async def test_a_call_that_overflows_the_cache_still_answers_every_text():
    inner = Counting()
    cache = EmbeddingCache(inner, size=4)
    await cache.embed(["a", "b", "c", "d"])
    # "a" is cached and the oldest; five new texts push it (and the others) out.
    texts = ["a", "e", "f", "g", "h", "i"]
    got = await cache.embed(texts)
    assert np.allclose(got, np.stack([inner.vector(t) for t in texts]))
    assert inner.asked.count("a") == 1  # answered from the cache, not embedded again
    assert len(cache._vectors) == 4


async def test_concurrent_calls_evicting_each_others_texts_both_answer():
    inner = Counting()
    cache = EmbeddingCache(inner, size=3)
    await cache.embed(["x", "y", "z"])
    results = {}

    async def call(name: str, texts: list[str]) -> None:
        results[name] = (texts, await cache.embed(texts))

    async with anyio.create_task_group() as tg:
        tg.start_soon(call, "one", ["x", "p", "q", "r"])
        tg.start_soon(call, "two", ["y", "z", "s", "t"])
    for texts, got in results.values():
        assert np.allclose(got, np.stack([inner.vector(t) for t in texts]))


class Watching:
    """The real embedder, noting every text it is asked to embed."""

    def __init__(self, inner) -> None:  # type: ignore[no-untyped-def]
        self._inner = inner
        self.id, self.dim = inner.id, inner.dim
        self.asked: list[str] = []

    async def embed(self, texts: list[str]) -> np.ndarray:
        self.asked += texts
        return await self._inner.embed(texts)


async def test_consolidation_embeds_the_facts_it_links_so_recall_does_not(tmp_path, minilm):
    from conftest import make_settings

    from cranimem_mcp.engine import MemoryEngine

    watching = Watching(minilm)
    settings = make_settings(tmp_path / "d", gating={"tau_noise": -1.0, "default_gate": False})
    async with MemoryEngine(settings, embedder=watching, background=False) as engine:
        for text in [
            "In 2016 I moved to Lisbon.",
            "Since 2019 I work at Initech in Lisbon.",
            "I prefer green tea in the morning.",
        ]:
            await engine.remember(text)
        report = await engine.consolidate()
        assert report.promoted == 3 and report.triples_added > 0
        watching.asked.clear()
        query = "Where do I live and work?"
        result = await engine.recall(query)
        assert result.facts, "the graph path should reach the linked facts"
        assert watching.asked == [query]  # the facts' vectors were computed at linking time
        # ... and they are the vectors the recall would have computed itself.
        scores = {f.subject + f.predicate + f.object: f.score for f in result.facts}
        engine._cached._vectors.clear()
        again = await engine.recall(query)
        assert {f.subject + f.predicate + f.object: f.score for f in again.facts} == scores


async def test_a_buffer_overflow_embeds_what_it_links_in_the_background(tmp_path, minilm):
    from conftest import make_settings

    from cranimem_mcp.engine import MemoryEngine

    watching = Watching(minilm)
    settings = make_settings(
        tmp_path / "d",
        gating={"tau_noise": -1.0, "default_gate": False},
        episodic={"capacity": 1},
        consolidation={"tau_consolidation": 0.0, "every_n_writes": 0},
    )
    async with MemoryEngine(settings, embedder=watching, background=True) as engine:
        first = await engine.remember("Since 2010 I prefer mint tea.")
        assert first.evicted == []  # it filled the buffer: room is made after the answer
        await engine.wait_idle()
        assert [r.tier for r in await engine.episodic.get([first.id])] == ["longterm"]
        watching.asked.clear()
        query = "What do I prefer to drink?"
        result = await engine.recall(query, paths=["graph"])
        assert [(f.predicate, f.object) for f in result.facts] == [("prefers", "mint tea")]
        assert watching.asked == [query]
