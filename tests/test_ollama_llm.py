"""The Ollama layer against a real model (Qwen2.5-Coder-1.5B-Instruct Q4_K_M in llama.cpp via
xllamacpp) behind an Ollama-compatible server, through the real ``ollama`` client: the
prompts and schemas meet an actual LLM. Marked ``llm``; skipped when the model file or
xllamacpp is absent (fetch with ``scripts/fetch_test_model.sh``, install the ``test-llm``
extra)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import numpy as np
import pytest
from conftest import make_settings
from ollama_compat_server import CHAT_NAME, EMBED_NAME, CompatServer, model_path, serving

from cranimem_mcp.backends.ollama import (
    OllamaBackend,
    OllamaEmbedder,
    OllamaExtractor,
    OllamaTagger,
    prompts_dir,
)
from cranimem_mcp.engine import MemoryEngine
from cranimem_mcp.extraction.extractor import HeuristicExtractor
from cranimem_mcp.gate.tagger import HeuristicTagger

pytestmark = [pytest.mark.llm, pytest.mark.anyio]

MODEL = model_path()
if MODEL is None:
    pytest.skip("test model absent: run scripts/fetch_test_model.sh", allow_module_level=True)
pytest.importorskip("xllamacpp", reason="install the test-llm extra")

GOAL = "Help the user plan their trip to Japan in May"


@pytest.fixture(scope="module")
def compat_host() -> Iterator[str]:
    assert MODEL is not None
    with serving(CompatServer(MODEL, threads=1)) as host:
        yield host


@pytest.fixture
async def backend(compat_host: str) -> AsyncIterator[OllamaBackend]:
    # Generous per-call timeout: one CPU thread on a shared 2-core machine.
    b = OllamaBackend(compat_host, timeout=240.0, keep_alive="5m", cooldown=0.0)
    yield b
    await b.aclose()


async def test_tagger_scores_a_goal_relevant_constraint_above_a_distractor(backend):
    tagger = OllamaTagger(backend, CHAT_NAME, prompts_dir(), HeuristicTagger())
    constraint = await tagger.tag(
        "I am allergic to shellfish, so no seafood restaurants please.", GOAL, novelty=0.5
    )
    distractor = await tagger.tag(
        "The stock market closed slightly lower today after a quiet session.", GOAL, novelty=0.5
    )
    assert constraint.tagged_by == distractor.tagged_by == f"ollama:{CHAT_NAME}"
    assert backend.usage.fallbacks == {}
    assert constraint.utility.importance > distractor.utility.importance
    assert constraint.utility.base > distractor.utility.base


async def test_extracted_facts_land_in_the_graph_with_provenance(backend, tmp_path: Path, minilm):
    extractor = OllamaExtractor(
        backend, CHAT_NAME, prompts_dir(), batch_size=4, fallback=HeuristicExtractor()
    )
    # This test is about extraction: admit the write and promote it whatever its scores.
    settings = make_settings(
        tmp_path / "data",
        gating={"tau_noise": -1.0, "default_gate": False},
        consolidation={"tau_consolidation": 0.0},
    )
    text = "Maria Lopez works at Acme Robotics in Berlin. She leads the Atlas project."
    async with MemoryEngine(
        settings, embedder=minilm, tagger=HeuristicTagger(), extractor=extractor, background=False
    ) as engine:
        stored = await engine.remember(text, goal="Remember facts about the user's colleagues")
        assert stored.status == "stored"
        report = await engine.consolidate()
        assert report.promoted == 1
        assert report.llm_calls == 1 and report.llm_fallbacks == 0
        assert report.llm_prompt_tokens > 0 and report.llm_completion_tokens > 0
        assert engine.state.reextract == {}
        recalled = await engine.recall("Where does Maria Lopez work?", paths=["graph"])
    facts = {(f.subject.lower(), f.object.lower()) for f in recalled.facts}
    assert any("maria" in s and "acme" in o for s, o in facts), recalled.facts
    assert all(f.sources == [stored.id] for f in recalled.facts)


async def test_embeddings_come_back_unit_length_in_the_models_dimension(backend):
    embedder = OllamaEmbedder(backend, EMBED_NAME, dim=1536, batch_size=8)
    vectors = await embedder.embed(["I live in Paris.", "My home is in Paris, France."])
    assert vectors.shape == (2, 1536)
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-4)
