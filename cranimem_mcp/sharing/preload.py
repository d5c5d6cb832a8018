"""The local embedder loaded ahead of its first use, beside the engine's open.

``serve`` (and a one-shot command that may open the stores) makes an
:class:`EmbedderPreload` and hands it to its :class:`~cranimem_mcp.sharing.handle.EngineHandle`,
which starts it only if this process becomes the directory's owner; a bridge never loads a
model. The preload never raises: a failed load is logged, and the first call that needs the
embedder meets the same problem and raises it to its caller.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Any

import anyio

from cranimem_mcp.config import Settings

logger = logging.getLogger(__name__)


def _load_parser() -> None:
    """Load the parser every write's quick extraction reads, and parse once; never raises."""
    started = time.perf_counter()
    try:
        from cranimem_mcp.extraction import syntax

        syntax.warm_up()
    except Exception as exc:  # the first write meets the same problem and raises it
        logger.warning("preloading the parser failed: %s", exc)
    else:
        logger.info("parser warm in %.2f s", time.perf_counter() - started)


def embedder_to_preload(settings: Settings) -> Any:
    """The local embedder (not loaded yet) when the settings and the store point to it
    (``local``, or ``auto`` with a store that is empty or was filled by a local embedder);
    else None. Imports only what that takes (numpy; not providers and the Ollama client): it
    runs beside the engine's open, and its Python work takes the GIL from the open's."""
    from cranimem_mcp.backends.embeddings import local_embedder
    from cranimem_mcp.coordination import load_state

    choice = settings.models.embedder
    if choice == "ollama":
        return None
    if choice == "auto":
        path = settings.home / "state.json"
        known = load_state(path).embedder if path.exists() else None
        if known is not None and not str(known["id"]).startswith("local:"):
            return None
    return local_embedder(settings.models.embedder_model, settings.models.threads)


class EmbedderPreload:
    """Loads the local embedder in a daemon thread. ``serve`` makes one and hands it to its
    :class:`EngineHandle`, which starts it the moment it becomes the directory's owner, at
    the start of the engine's open: the model loads beside the open instead of after it.

    Why not on the first line of ``serve``: measured (docs/RESULTS.md), a thread started
    there took the GIL from the MCP layer's imports and delayed ``initialize`` by ~0.6 s;
    the open itself waits for the handshake (``GRACE``), and so does this.

    The thread decides whether this run will use the local embedder at all
    (:func:`embedder_to_preload`), then loads it and embeds once, then loads the parser
    (:mod:`cranimem_mcp.extraction.syntax`) and parses once. ``parser_beside``: the parser loads in
    a
    thread of its own from the start instead, beside the embedder's session build (native
    code, mostly off the GIL): a one-shot command waits for both before its answer, and no
    handshake waits behind them (docs/RESULTS.md, "One-shot commands, again").
    :meth:`take` waits for the decision only, never for the load: a call that needs the
    embedder before it is warm waits on the embedder's own load lock. A failed load is
    logged here and raised again by the first call, to its caller."""

    def __init__(self, settings: Settings, *, parser_beside: bool = False) -> None:
        self._parser_beside = parser_beside
        self._embedder: Any = None
        self._decided = threading.Event()
        self._embedder_done = threading.Event()
        self._thread = threading.Thread(
            target=self._run, args=(settings,), name="embedder preload", daemon=True
        )

    def start(self) -> None:
        if self._thread.ident is None:
            self._thread.start()

    def _run(self, settings: Settings) -> None:
        if self._parser_beside:
            threading.Thread(target=_load_parser, name="parser preload", daemon=True).start()
        embedder = None
        try:
            self._embedder = embedder = embedder_to_preload(settings)
        except Exception as exc:  # the engine's open meets the same problem and raises it
            logger.warning("not preloading the embedder: %s", exc)
        finally:
            self._decided.set()
        try:
            if embedder is not None:
                started = time.perf_counter()
                try:
                    embedder.embed_sync(["warm up"])  # loads it; onnxruntime allocates buffers
                except Exception as exc:
                    logger.warning("preloading the embedder %s failed: %s", embedder.id, exc)
                else:
                    logger.info(
                        "embedder %s warm in %.2f s", embedder.id, time.perf_counter() - started
                    )
        finally:
            self._embedder_done.set()
        if not self._parser_beside:
            # Then the parser every write's quick extraction reads (after the embedder, so
            # the two loads do not fight over the GIL while a server answers its client).
            _load_parser()

    def join(self, timeout: float = 30.0) -> None:
        """Wait for the load to end before the process exits: an exit while onnxruntime
        builds its session in this thread aborts the process (std::terminate, seen here)."""
        if self._thread.ident is not None:
            # The parser's load after it is plain Python: an exit may cut it short.
            self._embedder_done.wait(timeout)

    async def take(self) -> Any:
        """The preloaded embedder (or None), once; later calls return None."""
        self.start()
        await anyio.to_thread.run_sync(self._decided.wait)
        embedder, self._embedder = self._embedder, None
        return embedder
