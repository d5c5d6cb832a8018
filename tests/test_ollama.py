"""The Ollama layer against a fake Ollama that speaks the HTTP API (tests/fake_ollama.py),
through the real ``ollama`` client: request bodies, and every failure mode ending as
documented (heuristic fallback, visible in ``tagged_by`` / ``extracted_by``, nothing lost)."""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path

import anyio
import numpy as np
import pytest
from fake_ollama import CHAT_MODEL, EMBED_DIM, EMBED_MODEL, FakeOllama, refused_host, running

from cranimem_mcp import backends
from cranimem_mcp.backends.llm import metered
from cranimem_mcp.backends.ollama import (
    ExtractionReply,
    JudgeReply,
    OllamaBackend,
    OllamaEmbedder,
    OllamaExtractor,
    OllamaTagger,
    TagReply,
    prompts_dir,
)
from cranimem_mcp.backends.ollama_backend import ollama_url
from cranimem_mcp.errors import BackendUnavailable, ModelOutputError
from cranimem_mcp.extraction.extractor import HeuristicExtractor
from cranimem_mcp.gate.tagger import HeuristicTagger

pytestmark = pytest.mark.anyio

GOAL = "Help the user plan their trip to Japan in May"
CONSTRAINT = "I am allergic to shellfish, so no seafood restaurants please."


@pytest.fixture
def fake() -> Iterator[FakeOllama]:
    with running() as server:
        yield server


@pytest.fixture
async def backend() -> AsyncIterator[Callable[..., OllamaBackend]]:
    """``backend(host, timeout=...)``: an OllamaBackend, closed after the test."""
    made: list[OllamaBackend] = []

    def make(host: str, **kw: object) -> OllamaBackend:
        params: dict = {"timeout": 5.0, "keep_alive": "7m", "cooldown": 0.0} | kw
        made.append(OllamaBackend(host, **params))
        return made[-1]

    yield make
    for b in made:
        await b.aclose()


def tagger(b: OllamaBackend, model: str = CHAT_MODEL) -> OllamaTagger:
    return OllamaTagger(b, model, prompts_dir(), HeuristicTagger())


def extractor(b: OllamaBackend, batch_size: int = 4) -> OllamaExtractor:
    return OllamaExtractor(b, CHAT_MODEL, prompts_dir(), batch_size, fallback=HeuristicExtractor())


# --- request bodies ----------------------------------------------------------------------


async def test_tag_request_carries_schema_temperature_zero_keep_alive_and_goal(fake, backend):
    t = tagger(backend(fake.host))
    tagging = await t.tag(CONSTRAINT, GOAL, novelty=0.8)
    (body,) = fake.calls("/api/chat")
    assert body["model"] == CHAT_MODEL
    assert body["format"] == TagReply.model_json_schema()
    assert body["options"]["temperature"] == 0
    assert body["keep_alive"] == "7m"
    assert body["stream"] is False
    user = body["messages"][-1]["content"]
    assert GOAL in user and CONSTRAINT in user and "0.80" in user
    assert body["messages"][0]["role"] == "system"
    assert tagging.tagged_by == f"ollama:{CHAT_MODEL}"
    assert tagging.utility.importance == pytest.approx(0.9)
    # surprise blends the model's 0.4 with the measured novelty 0.8
    assert tagging.utility.surprise == pytest.approx(0.6)


async def test_judge_request_carries_judgement_schema(fake, backend):
    judgement = await tagger(backend(fake.host)).judge(CONSTRAINT, GOAL)
    (body,) = fake.calls("/api/chat")
    assert body["format"] == JudgeReply.model_json_schema()
    assert judgement.keep and judgement.kind == "constraint"
    assert judgement.reason == "fake judged constraint"


async def test_embedder_batches_and_returns_unit_rows(fake, backend):
    e = OllamaEmbedder(backend(fake.host), EMBED_MODEL, EMBED_DIM, batch_size=2)
    texts = ["a red apple", "a green apple", "stock markets fell", "qubits", "apples"]
    vectors = await e.embed(texts)
    calls = fake.calls("/api/embed")
    assert [c["input"] for c in calls] == [texts[0:2], texts[2:4], texts[4:5]]
    assert all(c["model"] == EMBED_MODEL and c["keep_alive"] == "7m" for c in calls)
    assert vectors.shape == (5, EMBED_DIM) and vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert vectors[0] @ vectors[1] > vectors[0] @ vectors[2]


async def test_embedder_refuses_vectors_of_the_wrong_dimension(fake, backend):
    fake.fail("wrong_shape")
    e = OllamaEmbedder(backend(fake.host), EMBED_MODEL, EMBED_DIM)
    with pytest.raises(ModelOutputError, match="expected 48"):
        await e.embed(["hello"])


async def test_extractor_sends_several_memories_per_call(fake, backend):
    texts = [f"I visited Kyoto with Alice number {i}." for i in range(5)]
    out = await extractor(backend(fake.host), batch_size=2).extract(texts)
    calls = fake.calls("/api/chat")
    assert len(calls) == 3
    assert calls[0]["format"] == ExtractionReply.model_json_schema()
    assert "1. I visited Kyoto" in calls[0]["messages"][-1]["content"]
    assert "2. I visited Kyoto" in calls[0]["messages"][-1]["content"]
    assert len(out) == 5 and all(x.extracted_by == f"ollama:{CHAT_MODEL}" for x in out)
    assert {"User", "Kyoto", "Alice"} <= {e.name for e in out[4].entities}
    assert any(r.predicate == "mentions" and r.object == "Kyoto" for r in out[4].relations)


async def test_entity_types_outside_the_list_become_other(fake, backend):
    fake.chat_replies.append(
        json.dumps(
            {
                "items": [
                    {"id": 1, "entities": [{"name": "Rust", "type": "Language"}], "relations": []}
                ]
            }
        )
    )
    (out,) = await extractor(backend(fake.host)).extract(["I write Rust."])
    assert [(e.name, e.type) for e in out.entities] == [("Rust", "Other")]


async def test_scores_outside_zero_one_are_clamped(fake, backend):
    fake.chat_replies.append('{"importance": 1.7, "surprise": -0.3, "emotion": 0.5}')
    tagging = await tagger(backend(fake.host)).tag(CONSTRAINT, GOAL, novelty=0.2)
    u = tagging.utility
    assert (u.importance, u.emotion) == (1.0, 0.5)
    assert u.surprise == pytest.approx(0.1)  # (0 clamped + 0.2) / 2


# --- invalid replies: one retry with the error, then the heuristic fallback ----------------


@pytest.mark.parametrize("mode", ["malformed", "wrong_shape", "length"])
async def test_one_invalid_reply_is_retried_with_the_validation_error(fake, mode, backend):
    fake.fail(mode)
    b = backend(fake.host)
    tagging = await tagger(b).tag(CONSTRAINT, GOAL, novelty=1.0)
    first, second = fake.calls("/api/chat")
    assert tagging.tagged_by == f"ollama:{CHAT_MODEL}"
    assert "That reply was invalid" in second["messages"][-1]["content"]
    assert second["messages"][-2]["role"] == "assistant"
    assert len(second["messages"]) == len(first["messages"]) + 2
    assert b.usage.retries == 1 and not b.usage.fallbacks


async def test_a_reply_cut_off_at_the_token_limit_is_invalid_even_if_it_parses(fake, backend):
    fake.fail("length", times=2)
    fake.chat_replies += ['{"importance": 0.9, "surprise": 0.1, "emotion": 0.1}'] * 2
    b = backend(fake.host)
    tagging = await tagger(b).tag(CONSTRAINT, GOAL, novelty=1.0)
    assert tagging.tagged_by == "heuristic"
    second = fake.calls("/api/chat")[1]
    assert "cut off" in second["messages"][-1]["content"]


@pytest.mark.parametrize("mode", ["malformed", "wrong_shape"])
async def test_two_invalid_replies_fall_back_to_the_heuristic_tagger(fake, mode, backend):
    fake.fail(mode, times=2)
    b = backend(fake.host)
    tagging = await tagger(b).tag(CONSTRAINT, GOAL, novelty=1.0)
    assert tagging.tagged_by == "heuristic"
    assert len(fake.calls("/api/chat")) == 2
    assert b.usage.fallbacks["tag"] == 1
    assert 0.0 < tagging.utility.base <= 1.0


async def test_judge_fallback_says_so_in_its_reason(fake, backend):
    fake.fail("malformed", times=2)
    judgement = await tagger(backend(fake.host)).judge(CONSTRAINT, GOAL)
    assert judgement.keep and "heuristic fallback" in judgement.reason


async def test_extractor_falls_back_only_for_items_missing_from_the_reply(fake, backend):
    fake.chat_replies.append(
        json.dumps(
            {
                "items": [
                    {
                        "id": 1,
                        "entities": [
                            {"name": "User", "type": "Person"},
                            {"name": "Osaka", "type": "Location"},
                        ],
                        "relations": [
                            {"subject": "User", "predicate": "lives_in", "object": "Osaka"}
                        ],
                    }
                ]
            }
        )
    )
    b = backend(fake.host)
    first, second = await extractor(b).extract(["I live in Osaka.", "Bob works at Acme Corp."])
    assert first.extracted_by == f"ollama:{CHAT_MODEL}"
    assert second.extracted_by == "heuristic"
    assert second.entities  # the heuristics found something
    assert b.usage.fallbacks["extract"] == 1


# --- the backend fails: fallback at once, mapped once to BackendUnavailable ----------------


async def test_connection_refused_falls_back_and_rests(backend):
    b = backend(refused_host(), cooldown=60.0)
    t = tagger(b)
    tagging = await t.tag(CONSTRAINT, GOAL, novelty=1.0)
    assert tagging.tagged_by == "heuristic"
    assert b.resting
    with pytest.raises(BackendUnavailable, match="resting after: cannot connect"):
        await b.chat(CHAT_MODEL, [{"role": "user", "content": "hi"}], {})


async def test_a_server_slower_than_the_timeout_costs_one_timeout(fake, backend):
    fake.fail("slow", times=10)
    b = backend(fake.host, timeout=0.5, cooldown=60.0)
    t = tagger(b)
    started = time.monotonic()
    with anyio.fail_after(5):
        judgement = await t.judge(CONSTRAINT, GOAL)
        tagging = await t.tag(CONSTRAINT, GOAL, novelty=1.0)
    elapsed = time.monotonic() - started
    assert judgement.keep and "did not answer" in judgement.reason
    assert tagging.tagged_by == "heuristic"
    assert elapsed >= 0.5  # the judge waited out its timeout (fail_after bounds a hang)
    assert len(fake.calls("/api/chat")) == 1  # the tag call did not wait again: the backend rests


@pytest.mark.parametrize(
    ("mode", "message"),
    [("http500", "HTTP 500"), ("garbage", "not Ollama's API")],
)
async def test_server_errors_map_to_backend_unavailable(fake, mode, message, backend):
    fake.fail(mode)
    b = backend(fake.host)
    with pytest.raises(BackendUnavailable, match=message):
        await b.chat(CHAT_MODEL, [{"role": "user", "content": "hi"}], {})
    fake.fail(mode)
    assert (await tagger(b).tag(CONSTRAINT, GOAL, 1.0)).tagged_by == "heuristic"


async def test_unknown_model_is_a_404_that_says_how_to_pull_it(fake, backend):
    b = backend(fake.host)
    with pytest.raises(BackendUnavailable, match="not found.*ollama pull"):
        await b.chat("llama9:400b", [{"role": "user", "content": "hi"}], {})
    tagging = await tagger(b, model="llama9:400b").tag(CONSTRAINT, GOAL, 1.0)
    assert tagging.tagged_by == "heuristic"


async def test_concurrency_limit_bounds_calls_in_flight(fake, backend):
    fake.fail("busy", times=6)
    t = tagger(backend(fake.host, concurrency=2))
    async with anyio.create_task_group() as tg:
        for _ in range(6):
            tg.start_soon(t.tag, CONSTRAINT, GOAL, 1.0)
    assert len(fake.calls("/api/chat")) == 6
    assert fake.max_in_flight == 2


async def test_call_budget_spent_falls_back_without_calling(fake, backend):
    b = backend(fake.host)
    with metered(1) as meter:
        out = await extractor(b, batch_size=1).extract(["I live in Osaka.", "I use Vim.", "Hi"])
    assert len(fake.calls("/api/chat")) == 1
    assert [x.extracted_by for x in out] == [f"ollama:{CHAT_MODEL}", "heuristic", "heuristic"]
    assert meter.calls == 1 and meter.fallbacks == 2
    assert meter.prompt_tokens > 0 and meter.completion_tokens > 0


async def test_prompt_files_are_the_packages_own():
    folder = prompts_dir()
    assert folder == Path(backends.__file__).parent / "prompts"
    assert {p.name for p in folder.iterdir()} >= {"tag.md", "judge.md", "extract.md"}


# --- the server's address and /api/version ----------------------------------------------------


@pytest.mark.parametrize(
    ("host", "url"),
    [  # the ollama client's own examples (its host parser is private; ours repeats it)
        (None, "http://127.0.0.1:11434"),
        ("", "http://127.0.0.1:11434"),
        ("1.2.3.4", "http://1.2.3.4:11434"),
        (":56789", "http://127.0.0.1:56789"),
        ("1.2.3.4:56789", "http://1.2.3.4:56789"),
        ("http://1.2.3.4", "http://1.2.3.4:80"),
        ("https://1.2.3.4", "https://1.2.3.4:443"),
        ("https://example.com:56789", "https://example.com:56789"),
        ("example.com/", "http://example.com:11434"),
        ("example.com:56789/path/", "http://example.com:56789/path"),
        ("https://example.com:56789/path", "https://example.com:56789/path"),
        ("[0001:002:003:0004::1]", "http://[0001:002:003:0004::1]:11434"),
        ("https://[0001:002:003:0004::1]", "https://[0001:002:003:0004::1]:443"),
        ("[0001:002:003:0004::1]:56789/path/", "http://[0001:002:003:0004::1]:56789/path"),
    ],
)
def test_the_host_is_read_as_the_ollama_client_reads_it(host, url):
    assert ollama_url(host) == url
    assert ollama_url(url) == url  # what the client is given it reads back unchanged


async def test_the_host_comes_from_ollama_host_when_unset(fake, backend, monkeypatch):
    port = fake.host.rsplit(":", 1)[1]
    monkeypatch.setenv("OLLAMA_HOST", f":{port}")
    b = backend(None)
    assert b.host == f"http://127.0.0.1:{port}"
    assert await b.version() == "0.12.0-fake"
    assert await b.models()  # the client itself goes to the same server
    assert [r.path for r in fake.requests] == ["/api/version", "/api/tags"]


async def test_version_failures_map_as_the_clients_calls_do(fake, backend):
    refused = backend(refused_host())
    with pytest.raises(BackendUnavailable, match="cannot connect to Ollama"):
        await refused.version()
    # A path under the host is kept: /elsewhere/api/version is not Ollama's (404).
    elsewhere = backend(f"{fake.host}/elsewhere/")
    assert elsewhere.host == f"{fake.host}/elsewhere"
    with pytest.raises(BackendUnavailable, match="HTTP 404|Not Found"):
        await elsewhere.version()
