"""The default embedder: all-MiniLM-L6-v2 on onnxruntime, without torch. Its vectors, the
pinned checksum of its model file, its lazy load, its warm-up at `serve` start (which never
delays `initialize`), and stores filled by the torch embedder (same vector space, same id)."""

from __future__ import annotations

import shutil
import subprocess
import sys
import textwrap

import anyio
import numpy as np
import pytest
from conftest import make_settings, server_env, stdio_params
from mcp import Client

from cranimem_mcp.backends.embeddings import (
    MINILM_ID,
    MINILM_ONNX,
    OnnxEmbedder,
    SentenceTransformerEmbedder,
    local_embedder,
)
from cranimem_mcp.backends.onnx_graph import gather_int8_embeddings
from cranimem_mcp.coordination import EngineState, save_state
from cranimem_mcp.engine import MemoryEngine
from cranimem_mcp.errors import ConfigError
from cranimem_mcp.sharing.preload import embedder_to_preload

pytestmark = pytest.mark.anyio

SENTENCES = [
    "I live in Paris with my partner Alex.",
    "My project Atlas uses PostgreSQL and runs on Kubernetes.",
    "I am allergic to shellfish, so no seafood restaurants please.",
    "The Mascogos are descendants of Black Seminoles who settled in Coahuila, Mexico.",
    "ok",
    "",
]


async def test_vectors_are_unit_length_384_d_deterministic_and_batch_equals_single(minilm):
    long_text = "memory " * 2000  # past the 256-token window: truncated, not an error
    texts = [*SENTENCES, long_text]
    batch = await minilm.embed(texts)
    assert batch.shape == (len(texts), 384) and batch.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(batch, axis=1), 1.0, atol=1e-5)
    again = await minilm.embed(texts)
    assert np.array_equal(batch, again)
    single = np.stack([(await minilm.embed([t]))[0] for t in texts])
    np.testing.assert_allclose(batch, single, atol=1e-6)
    assert minilm.id == MINILM_ID == "local:all-MiniLM-L6-v2" and minilm.dim == 384


async def test_vectors_carry_meaning(minilm):
    home, same, other = await minilm.embed(
        ["I live in Paris.", "My home is in Paris, France.", "The stock market fell sharply."]
    )
    assert home @ same > home @ other + 0.3


@pytest.mark.slow  # over ~5 s
async def test_vectors_match_the_torch_model(minilm):
    pytest.importorskip("sentence_transformers", reason="the sentence-transformers extra")
    torch_minilm = SentenceTransformerEmbedder("all-MiniLM-L6-v2", threads=1)
    ours, theirs = await minilm.embed(SENTENCES[:5]), await torch_minilm.embed(SENTENCES[:5])
    cosines = (ours * theirs).sum(axis=1)
    # Sentences agree to 0.999; a one-word text ("ok") the least, at 0.996.
    assert np.median(cosines) > 0.999 and cosines.min() > 0.995
    assert torch_minilm.id == minilm.id


async def test_the_int8_table_lookup_gives_the_pinned_graphs_vectors(minilm):
    # The pinned file as published, in a plain session: it dequantises the whole table.
    import onnxruntime as ort

    plain = ort.InferenceSession(str(MINILM_ONNX.locate()), providers=["CPUExecutionProvider"])
    texts = [t for t in SENTENCES if t] + ["Noor went to the pottery workshop on 7 May."]
    ours = await minilm.embed(texts)
    for text, vector in zip(texts, ours, strict=True):
        ids = np.array([minilm._tokenizer.encode(text).ids], dtype=np.int64)
        feeds = {"input_ids": ids, "attention_mask": np.ones_like(ids)}
        hidden = plain.run(None, {**feeds, "token_type_ids": np.zeros_like(ids)})[0][0]
        pooled = hidden.mean(axis=0)
        np.testing.assert_allclose(vector, pooled / np.linalg.norm(pooled), rtol=0, atol=1e-6)


def test_the_table_rewrite_refuses_a_graph_without_the_pattern():
    model = MINILM_ONNX.locate().read_bytes()
    rewritten = gather_int8_embeddings(model)
    assert len(rewritten) > len(model) // 2 and rewritten != model
    with pytest.raises(ValueError, match="word_embeddings"):
        gather_int8_embeddings(rewritten)  # already rewritten: no dequantised table left


def test_a_corrupted_model_file_is_a_config_error_naming_it(tmp_path):
    intact = tmp_path / "intact.onnx"
    shutil.copyfile(MINILM_ONNX.locate(), intact)
    OnnxEmbedder(model_path=intact).load()  # the control: an exact copy loads
    corrupted = tmp_path / "corrupted.onnx"
    data = bytearray(intact.read_bytes())
    data[len(data) // 2] ^= 0xFF
    corrupted.write_bytes(bytes(data))
    embedder = OnnxEmbedder(model_path=corrupted)
    with pytest.raises(ConfigError, match="sha256") as raised:
        embedder.load()
    assert str(corrupted) in str(raised.value) and MINILM_ONNX.requirement in str(raised.value)
    assert not embedder.loaded


@pytest.mark.slow
def test_importing_and_constructing_loads_nothing():
    code = textwrap.dedent(
        """
        import sys
        from cranimem_mcp.backends.embeddings import local_embedder
        e = local_embedder("all-MiniLM-L6-v2")
        print(type(e).__name__, e.id, e.dim, e.loaded,
              *(m in sys.modules for m in ("onnxruntime", "tokenizers", "torch")))
        """
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    expected = ["OnnxEmbedder", MINILM_ID, "384"] + ["False"] * 4
    assert out.stdout.split() == expected


async def test_opening_an_engine_does_not_load_the_model_the_first_write_does(tmp_path):
    embedder = OnnxEmbedder()
    settings = make_settings(tmp_path / "data")
    async with MemoryEngine(settings, embedder=embedder, background=False) as engine:
        assert not embedder.loaded
        stored = await engine.remember("I live in Lisbon with my partner Ana.")
        assert stored.status == "stored" and embedder.loaded


def test_other_models_need_the_sentence_transformers_extra(monkeypatch):
    assert isinstance(local_embedder("all-MiniLM-L6-v2"), OnnxEmbedder)
    other = local_embedder("paraphrase-MiniLM-L3-v2")
    assert isinstance(other, SentenceTransformerEmbedder)
    monkeypatch.setitem(sys.modules, "sentence_transformers", None)  # not installed
    with pytest.raises(ConfigError, match=r"cranimem-mcp\[sentence-transformers\]"):
        other.dim  # noqa: B018 - an unknown model's dimension needs the model


@pytest.mark.slow  # over ~5 s: loads torch
async def test_a_store_filled_by_the_torch_embedder_opens_and_recalls_with_onnx(tmp_path, minilm):
    pytest.importorskip("sentence_transformers", reason="the sentence-transformers extra")
    settings = make_settings(tmp_path / "data")
    torch_minilm = SentenceTransformerEmbedder("all-MiniLM-L6-v2", threads=1)
    async with MemoryEngine(settings, embedder=torch_minilm, background=False) as engine:
        for fact in SENTENCES[:3]:
            await engine.remember(fact)
        wanted = (await engine.remember("My sister Maria works at a hospital in Porto.")).id
    async with MemoryEngine(settings, embedder=minilm, background=False) as engine:
        result = await engine.recall("Where does my sister work?", k=3)
        assert result.items[0].id == wanted


def test_preload_only_when_the_run_will_use_the_local_embedder(tmp_path):
    empty = make_settings(tmp_path / "empty")
    assert isinstance(embedder_to_preload(empty), OnnxEmbedder)
    assert embedder_to_preload(make_settings(tmp_path / "x", models={"embedder": "ollama"})) is None
    filled = make_settings(tmp_path / "ollama-filled")
    filled.home.mkdir()
    save_state(filled.home / "state.json", EngineState(embedder={"id": "ollama:m", "dim": 8}))
    assert embedder_to_preload(filled) is None


# A stand-in for onnxruntime whose import waits for a file: the embedder's load is held for
# as long as the test wants, then the real onnxruntime is imported in its place.
SLOW_ONNXRUNTIME = """
import importlib, os, sys, time
from pathlib import Path

_shim = str(Path(__file__).resolve().parent.parent)
Path(os.environ["ORT_SHIM_STARTED"]).touch()
while not Path(os.environ["ORT_SHIM_RELEASE"]).exists():
    time.sleep(0.02)
sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != _shim]
del sys.modules["onnxruntime"]
sys.modules["onnxruntime"] = importlib.import_module("onnxruntime")
"""


@pytest.mark.slow
async def test_serve_warms_the_embedder_at_start_and_initialize_never_waits_for_it(tmp_path):
    shim = tmp_path / "shim"
    (shim / "onnxruntime").mkdir(parents=True)
    (shim / "onnxruntime" / "__init__.py").write_text(SLOW_ONNXRUNTIME)
    started, release = tmp_path / "ort-started", tmp_path / "ort-release"
    home = tmp_path / "data"
    env = server_env(home, PYTHONPATH=str(shim), ORT_SHIM_STARTED=str(started),
                     ORT_SHIM_RELEASE=str(release), CRANIMEM_MODELS__EMBEDDER="local")  # fmt: skip
    params = stdio_params(None, env=env)
    with anyio.fail_after(120):
        async with Client(params, cache=None) as client:
            # initialize was answered while the model's load cannot finish
            assert not release.exists()
            assert "remember" in {t.name for t in (await client.list_tools()).tools}
            # and the load began by itself, before any tool call
            while not started.exists():
                await anyio.sleep(0.05)
            release.touch()
            stored = await client.call_tool("remember", {"content": SENTENCES[0]})
            assert stored.structured_content["status"] == "stored", stored
            recalled = await client.call_tool("recall", {"query": "Where do I live?"})
            assert "Paris" in recalled.structured_content["context"]


async def test_a_long_text_is_read_in_windows_and_a_short_one_is_unchanged():
    """With windows, a text past the model's 256 word pieces is embedded whole: a detail at
    its end moves its vector; a text that fits one window keeps its vector bit for bit."""
    opening, windowed = OnnxEmbedder(), OnnxEmbedder(windows=8)
    filler = "We talked about the weather, the garden and the neighbours' new fence. " * 30
    tail = " By the way, my passport number expires in March and I keep it in the blue drawer."
    texts = [SENTENCES[0], filler + tail, filler]
    plain, whole = await opening.embed(texts), await windowed.embed(texts)
    assert np.array_equal(plain[0], whole[0])
    # Read from its opening only, the long text is the filler; read whole, it is not.
    assert plain[1] @ plain[2] > 0.999
    assert whole[1] @ whole[2] < plain[1] @ plain[2] - 0.01
    query = (await windowed.embed(["Where do I keep my passport?"]))[0]
    assert whole[1] @ query > plain[1] @ query + 0.02
    assert np.allclose(np.linalg.norm(whole, axis=1), 1.0, atol=1e-5)
