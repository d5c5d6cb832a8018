"""The embedding cache (goals and graph facts recur from call to call): a call that fills it
past its size still answers every text it asked for, with the vector the embedder gives."""

from __future__ import annotations

import anyio
import numpy as np
import pytest

from cranimem_mcp.embeddings import EmbeddingCache
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
