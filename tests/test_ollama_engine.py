"""The Ollama layer inside the engine, the provider selection, the MCP server and the CLI,
against the fake Ollama (tests/fake_ollama.py): nothing is lost when the model fails,
fallback items are redone once it answers, the call budget holds, and OLLAMA_HOST is enough
to make ``serve`` use an Ollama-compatible server."""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
import pytest
from conftest import make_settings
from fake_ollama import CHAT_MODEL, EMBED_DIM, FakeOllama, refused_host, running
from mcp import Client

from cranimem_mcp.backends.ollama import OllamaBackend, OllamaExtractor, OllamaTagger, prompts_dir
from cranimem_mcp.cli import main as cli
from cranimem_mcp.coordination import load_state
from cranimem_mcp.engine import MemoryEngine
from cranimem_mcp.errors import BackendUnavailable
from cranimem_mcp.extraction.extractor import HeuristicExtractor
from cranimem_mcp.gate.tagger import HeuristicTagger
from cranimem_mcp.providers import select_providers
from cranimem_mcp.server.tools import build_server

pytestmark = pytest.mark.anyio

GOAL = "Help the user plan their trip to Japan in May"
OLLAMA = f"ollama:{CHAT_MODEL}"


@pytest.fixture
def fake() -> Iterator[FakeOllama]:
    with running() as server:
        yield server


@asynccontextmanager
async def llm_engine(
    home: Path, host: str, minilm, timeout: float = 5.0, **sections
) -> AsyncIterator[MemoryEngine]:
    """An engine with the Ollama tagger and extractor on ``host`` and MiniLM embeddings."""
    backend = OllamaBackend(host, timeout=timeout, cooldown=0.0)
    settings = make_settings(home, **sections)
    try:
        async with MemoryEngine(
            settings,
            embedder=minilm,
            tagger=OllamaTagger(backend, CHAT_MODEL, prompts_dir(), HeuristicTagger()),
            extractor=OllamaExtractor(
                backend,
                CHAT_MODEL,
                prompts_dir(),
                settings.ollama.extract_batch_size,
                fallback=HeuristicExtractor(),
            ),
            background=False,
        ) as engine:
            yield engine
    finally:
        await backend.aclose()


PROMOTE_ALL = {"tau_consolidation": 0.0}


# --- the engine: nothing lost, redone later -------------------------------------------------


@pytest.mark.slow  # over ~5 s
async def test_remember_is_acknowledged_with_fallback_tags_when_the_model_is_too_slow(
    fake, tmp_path, minilm
):
    fake.fail("slow", times=5)
    async with llm_engine(tmp_path, fake.host, minilm, timeout=0.5) as engine:
        await engine.set_goal(GOAL)
        await minilm.embed([GOAL])  # load MiniLM before the clock starts
        # The fake never answers: a write that waited for it would hang. The bound is on that
        # hang, not on the write's speed (embedding and LanceDB vary with the machine's load).
        with anyio.fail_after(60):
            result = await engine.remember("I prefer window seats on long flights to Tokyo.")
        assert result.status == "stored" and result.tagged_by == "heuristic"
        rows = await engine.episodic.scope_rows("default", ("buffer",))
        assert [r.id for r in rows] == [result.id]
        assert rows[0].tagged_by == "heuristic"
        assert (await engine.stats()).fallbacks["tag"] == 1


async def test_consolidation_retags_fallback_items_once_the_model_answers(fake, tmp_path, minilm):
    fake.fail("http500", times=2)  # the gate's second look and the tagging call
    async with llm_engine(tmp_path, fake.host, minilm) as engine:
        stored = await engine.remember(
            "I am allergic to shellfish, so no seafood please.", goal=GOAL
        )
        assert stored.tagged_by == "heuristic"
        report = await engine.consolidate(dry_run=False)
        (row,) = await engine.episodic.get([stored.id])
    assert report.retagged == 1
    assert row.tagged_by == OLLAMA and row.importance == pytest.approx(0.9)
    assert report.llm_calls >= 1 and report.llm_prompt_tokens > 0


async def test_consolidation_reextracts_memories_linked_by_the_fallback(fake, tmp_path, minilm):
    async with llm_engine(tmp_path, fake.host, minilm, consolidation=PROMOTE_ALL) as engine:
        stored = await engine.remember("I am flying to Osaka with Kenji in May.", goal=GOAL)
        fake.fail("http500")  # the extraction call of the first consolidation
        first = await engine.consolidate()
        assert first.promoted == 1 and first.llm_fallbacks == 1
        assert engine.state.reextract == {"default": [stored.id]}
        assert load_state(tmp_path / "state.json").reextract == {"default": [stored.id]}
        before = await engine.recall("Osaka", paths=["graph"])
        assert not any(f.predicate == "mentions" for f in before.facts)

        second = await engine.consolidate()
        after = await engine.recall("Who goes to Osaka?", paths=["graph"])
    assert second.reextracted == 1 and engine.state.reextract == {}
    mentions = [f for f in after.facts if f.predicate == "mentions"]
    assert {f.object for f in mentions} >= {"Osaka", "Kenji"}
    assert all(f.sources == [stored.id] for f in mentions)


async def test_consolidation_stays_within_its_llm_call_budget(fake, tmp_path, minilm):
    sections = {
        "consolidation": PROMOTE_ALL,
        "ollama": {"max_calls_per_consolidation": 1, "extract_batch_size": 1},
    }
    async with llm_engine(tmp_path, fake.host, minilm, **sections) as engine:
        for text in ("I live in Kyoto.", "I work at Sony in Tokyo.", "My sister Yumi is a nurse."):
            await engine.remember(text, goal="Remember durable facts about the user")
        calls_before = len(fake.calls("/api/chat"))
        report = await engine.consolidate()
    assert report.promoted == 3
    assert len(fake.calls("/api/chat")) - calls_before == 1 == report.llm_calls
    assert report.llm_fallbacks == 2
    assert len(engine.state.reextract["default"]) == 2


async def test_overflow_eviction_inside_remember_never_calls_the_model(fake, tmp_path, minilm):
    sections = {"episodic": {"capacity": 1}, "consolidation": PROMOTE_ALL}
    async with llm_engine(tmp_path, fake.host, minilm, **sections) as engine:
        first = await engine.remember("I live in Kyoto with my cat Mochi.", goal=GOAL)
        chat_calls = len(fake.calls("/api/chat"))
        second = await engine.remember("I am allergic to shellfish.", goal=GOAL)
        extraction_calls = [
            c for c in fake.calls("/api/chat")[chat_calls:] if "items" in c["format"]["properties"]
        ]
    assert [d.id for d in second.evicted] == [first.id]
    assert extraction_calls == []
    assert engine.state.reextract == {"default": [first.id]}


# --- provider selection ----------------------------------------------------------------------


async def test_auto_selects_ollama_when_it_answers_and_has_the_models(fake, tmp_path):
    settings = make_settings(tmp_path, ollama={"host": fake.host})
    async with await select_providers(settings) as p:
        assert p.embedder.id == "ollama:all-minilm" and p.embedder.dim == EMBED_DIM
        assert p.tagger.name == p.extractor.name == OLLAMA
        assert "auto: Ollama answered" in p.reasons["tagger"]


async def test_auto_falls_back_quickly_when_ollama_is_down(tmp_path):
    # A refused connection is an answer: the probe must not wait out its timeout. The
    # timeout is set far above what the rest takes on a loaded machine (opening the local
    # embedder: ~1 s, more under load), so waiting it out is what fails, not the load.
    probe = 60.0
    settings = make_settings(
        tmp_path, ollama={"host": refused_host(), "probe_timeout_seconds": probe}
    )
    started = time.monotonic()
    async with await select_providers(settings) as p:
        assert time.monotonic() - started < probe / 2
        assert p.embedder.id == "local:all-MiniLM-L6-v2"
        assert p.tagger.name == p.extractor.name == "heuristic"
        assert "cannot connect" in p.reasons["tagger"] and p.backend is None


async def test_auto_falls_back_when_a_model_is_not_pulled(fake, tmp_path):
    del fake.models[CHAT_MODEL]
    settings = make_settings(tmp_path, ollama={"host": fake.host})
    async with await select_providers(settings) as p:
        assert p.tagger.name == "heuristic"
        assert f"ollama pull {CHAT_MODEL}" in p.reasons["tagger"]
        assert p.embedder.id == "ollama:all-minilm"


async def test_auto_keeps_the_embedder_that_filled_the_store(fake, tmp_path, minilm):
    settings = make_settings(tmp_path, ollama={"host": fake.host})
    async with MemoryEngine(settings, embedder=minilm, background=False):
        pass  # records local:all-MiniLM-L6-v2
    async with await select_providers(settings) as p:
        assert p.embedder.id == "local:all-MiniLM-L6-v2"
        assert p.tagger.name == OLLAMA


async def test_an_explicit_ollama_embedder_with_ollama_down_is_a_clear_error(tmp_path):
    settings = make_settings(
        tmp_path, models={"embedder": "ollama"}, ollama={"host": refused_host()}
    )
    with pytest.raises(BackendUnavailable, match="does not answer"):
        await select_providers(settings)


# --- the server and the CLI follow OLLAMA_HOST -----------------------------------------------


async def test_serve_uses_the_server_named_by_ollama_host(fake, tmp_path, monkeypatch):
    monkeypatch.setenv("OLLAMA_HOST", fake.host)
    server = build_server(make_settings(tmp_path))
    async with Client(server, cache=None) as client:
        stored = await client.call_tool(
            "remember", {"content": "I am allergic to shellfish.", "goal": GOAL}
        )
        stats = json.loads((await client.read_resource("cranimem://stats")).contents[0].text)
    assert stored.structured_content["tagged_by"] == OLLAMA
    assert stats["models"]["embedder"] == "ollama:all-minilm"
    assert stats["models"]["tagger"] == OLLAMA
    assert "auto" in stats["models"]["tagger_reason"]
    assert fake.calls("/api/embed") and fake.calls("/api/chat")


def test_doctor_reports_each_check_and_how_to_fix_failures(fake, tmp_path, monkeypatch, capsys):
    del fake.models[CHAT_MODEL]
    monkeypatch.setenv("OLLAMA_HOST", fake.host)
    code = cli.main(["doctor", "--data-dir", str(tmp_path)])
    out = capsys.readouterr().out
    assert code == 0  # "auto" falls back, so a missing model is a warning
    assert "ok    Ollama 0.12.0-fake answers at" in out
    assert f"embedding model all-minilm is pulled; embedding dimension {EMBED_DIM}" in out
    assert f"fix: ollama pull {CHAT_MODEL}" in out


def test_doctor_fails_when_a_required_ollama_is_down(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("OLLAMA_HOST", refused_host())
    monkeypatch.setenv("CRANIMEM_MODELS__TAGGER", "ollama")
    code = cli.main(["doctor", "--data-dir", str(tmp_path)])
    out = capsys.readouterr().out
    assert code == 1
    assert "FAIL  Ollama does not answer" in out and "ollama serve" in out


def test_reembed_moves_the_store_to_ollama_and_recall_still_works(
    fake, tmp_path, monkeypatch, capsys, minilm
):
    home = tmp_path / "data"
    settings = make_settings(home, models={"tagger": "heuristic", "extractor": "heuristic"})

    async def fill() -> str:
        async with MemoryEngine(settings, embedder=minilm, background=False) as engine:
            result = await engine.remember("I live in Kyoto with my cat Mochi.")
            return str(result.id)

    memory_id = anyio.run(fill)
    monkeypatch.setenv("OLLAMA_HOST", fake.host)
    monkeypatch.setenv("CRANIMEM_MODELS__TAGGER", "heuristic")
    monkeypatch.setenv("CRANIMEM_MODELS__EXTRACTOR", "heuristic")
    assert cli.main(["reembed", "--data-dir", str(home), "--to", "ollama"]) == 0
    assert "re-embedded 1 memories: local:all-MiniLM-L6-v2 -> ollama:all-minilm" in (
        capsys.readouterr().out
    )
    assert load_state(home / "state.json").embedder == {"id": "ollama:all-minilm", "dim": 48}
    assert cli.main(["recall", "Mochi the cat", "--data-dir", str(home), "--json"]) == 0
    recalled = json.loads(capsys.readouterr().out)
    assert [i["id"] for i in recalled["items"]] == [memory_id]


async def test_heuristic_tagger_is_never_redone(tmp_path, minilm):
    """Without an LLM tagger, tagged_by="heuristic" is the design, not a fallback."""
    settings = make_settings(tmp_path)
    async with MemoryEngine(
        settings, embedder=minilm, tagger=HeuristicTagger(), background=False
    ) as engine:
        await engine.remember("I am allergic to shellfish.", goal=GOAL)
        report = await engine.consolidate()
    assert report.retagged == 0 and report.llm_calls == 0


async def test_an_item_promoted_during_an_outage_is_retagged_at_a_later_consolidation(
    fake, tmp_path, minilm
):
    async with llm_engine(tmp_path, fake.host, minilm, consolidation=PROMOTE_ALL) as engine:
        fake.fail("http500", times=100)  # Ollama is down for this write and its consolidation
        stored = await engine.remember("I am allergic to penicillin, please note.", goal=GOAL)
        assert stored.tagged_by == "heuristic"
        first = await engine.consolidate()
        assert first.retagged == 0
        (row,) = await engine.episodic.get([stored.id])
        assert row.tier == "longterm" and row.tagged_by == "heuristic"
        fake.failures.clear()  # Ollama is back
        second = await engine.consolidate()
        assert second.retagged == 1
        (row,) = await engine.episodic.get([stored.id])
        assert row.tagged_by.startswith("ollama:")
