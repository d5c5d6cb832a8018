"""Provider selection: which embedder, tagger and extractor a server or CLI run uses.

``models.embedder`` is "auto" | "ollama" | "local"; ``models.tagger`` and
``models.extractor`` are "auto" | "ollama" | "heuristic". "auto" asks Ollama once at startup,
bounded by ``ollama.probe_timeout_seconds`` so the MCP ``initialize`` is never held longer:
when it answers and has the configured model, Ollama is used, otherwise the local/heuristic
fallback. Every choice and its reason is logged and kept in :attr:`Providers.reasons`.
A probe that finds no Ollama is a warning only when the user asked for Ollama (a role set to
"ollama", ``ollama.host`` or ``OLLAMA_HOST``); with everything on "auto" it is the normal case
of a machine without one, logged at INFO (``-v``), and the reasons still say it.

The embedder is special: vector spaces never mix. For a data directory that already records
an embedder, "auto" keeps that one (an Ollama-filled store with Ollama down is an error, not a
silent switch to another space); ``cranimem-mcp reembed`` changes it on request.

When ``serve`` opens the stores it starts loading the local embedder before this choice is
made, if the run will probably use it (:func:`cranimem_mcp.sharing.preload.embedder_to_preload`);
the preloaded embedder comes back here as ``local``. An unused preload costs a little CPU.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from cranimem_mcp.backends.embeddings import Embedder, LocalModel
from cranimem_mcp.backends.embeddings import local_embedder as embedder_for
from cranimem_mcp.backends.llm import Extractor, Tagger
from cranimem_mcp.config import Settings, ollama_host_from_env
from cranimem_mcp.coordination import load_state
from cranimem_mcp.errors import BackendUnavailable, ConfigError
from cranimem_mcp.extraction.extractor import HeuristicExtractor
from cranimem_mcp.gate.tagger import HeuristicTagger

if TYPE_CHECKING:  # the Ollama client (httpx, ollama: ~0.2 s) loads only when a role uses it
    from cranimem_mcp.backends.ollama import OllamaBackend

logger = logging.getLogger(__name__)


@dataclass
class Providers:
    embedder: Embedder
    tagger: Tagger
    extractor: Extractor
    backend: OllamaBackend | None = None
    reasons: dict[str, str] = field(default_factory=dict)

    async def aclose(self) -> None:
        if self.backend is not None:
            await self.backend.aclose()

    async def __aenter__(self) -> Providers:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    def describe(self) -> dict[str, str]:
        return {
            "embedder": self.embedder.id,
            "tagger": self.tagger.name,
            "extractor": self.extractor.name,
            **{f"{k}_reason": v for k, v in self.reasons.items()},
        }


def backend_for(settings: Settings) -> OllamaBackend:
    from cranimem_mcp.backends.ollama import OllamaBackend

    o = settings.ollama
    return OllamaBackend(
        o.host,
        timeout=o.timeout_seconds,
        concurrency=o.concurrency,
        keep_alive=o.keep_alive,
        num_ctx=o.num_ctx,
        cooldown=o.cooldown_seconds,
    )


def local_embedder(settings: Settings) -> LocalModel:
    return embedder_for(settings.models.embedder_model, settings.models.threads)


def recorded_embedder(settings: Settings) -> dict[str, Any] | None:
    path = settings.home / "state.json"
    return load_state(path).embedder if path.exists() else None


async def select_providers(
    settings: Settings, *, embedder: str | None = None, local: Embedder | None = None
) -> Providers:
    """Build the run's providers (``embedder`` overrides ``models.embedder``, for reembed;
    ``local`` is the local embedder to use if the choice is local, e.g. a preloaded one).
    Raises ``BackendUnavailable`` only when Ollama is required and cannot serve."""
    m, o = settings.models, settings.ollama
    embedder_choice = embedder or m.embedder
    backend: OllamaBackend | None = None
    available: list[str] | None = None
    probe_error = ""
    if "ollama" in (embedder_choice, m.tagger, m.extractor) or "auto" in (
        embedder_choice,
        m.tagger,
        m.extractor,
    ):
        backend = backend_for(settings)
        try:
            # quiet: the one log line about a failed probe is ours, just below
            available = await backend.models(timeout=o.probe_timeout_seconds, quiet=True)
            logger.info("Ollama at %s answers; models: %s", backend.host, ", ".join(available))
        except BackendUnavailable as exc:
            probe_error = str(exc)
            asked = ollama_requested(settings, embedder_choice)
            logger.log(logging.WARNING if asked else logging.INFO, "Ollama probe failed: %s", exc)
    reasons: dict[str, str] = {}
    try:
        chosen = await _embedder(
            settings, embedder_choice, backend, available, probe_error, reasons, local
        )
        tagger: Tagger = HeuristicTagger()
        extractor: Extractor = HeuristicExtractor()
        uses_backend = chosen.id.startswith("ollama:")  # as the store records it
        if _use_ollama("tagger", m.tagger, o.tagger_model, available, probe_error, reasons):
            from cranimem_mcp.backends.ollama import OllamaTagger, prompts_dir

            assert backend is not None
            tagger = OllamaTagger(backend, o.tagger_model, prompts_dir(None), HeuristicTagger())
            uses_backend = True
        if _use_ollama(
            "extractor", m.extractor, o.extractor_model, available, probe_error, reasons
        ):
            from cranimem_mcp.backends.ollama import OllamaExtractor, prompts_dir

            assert backend is not None
            extractor = OllamaExtractor(
                backend,
                o.extractor_model,
                prompts_dir(None),
                o.extract_batch_size,
                fallback=HeuristicExtractor(),
            )
            uses_backend = True
    except BaseException:
        if backend is not None:
            await backend.aclose()
        raise
    if backend is not None and not uses_backend:
        await backend.aclose()
        backend = None
    providers = Providers(chosen, tagger, extractor, backend, reasons)
    for role, reason in providers.reasons.items():
        logger.info("%s: %s", role, reason)
    return providers


def ollama_requested(settings: Settings, embedder: str | None = None) -> bool:
    """Whether the user asked for Ollama rather than leaving it to "auto": a role set to
    "ollama", or a host of their own (``ollama.host``, ``OLLAMA_HOST``)."""
    m = settings.models
    return (
        "ollama" in (embedder or m.embedder, m.tagger, m.extractor)
        or settings.ollama.host is not None
        or ollama_host_from_env() is not None
    )


def _use_ollama(
    role: str,
    choice: str,
    model: str,
    available: list[str] | None,
    probe_error: str,
    reasons: dict[str, str],
) -> bool:
    if choice == "heuristic":
        reasons[role] = "heuristic (configured)"
        return False
    if choice == "ollama":
        # Configured explicitly: use Ollama even if it is down now; each call falls back and
        # the engine re-tags at a later consolidation once it answers.
        note = "" if available is not None else f"; not answering at startup: {probe_error}"
        reasons[role] = f"ollama:{model} (configured{note})"
        return True
    if available is None:
        reasons[role] = f"heuristic (auto: {probe_error})"
        return False
    if not _has_model(available, model):
        reasons[role] = f"heuristic (auto: model {model} not pulled; ollama pull {model})"
        return False
    reasons[role] = f"ollama:{model} (auto: Ollama answered)"
    return True


async def _embedder(
    settings: Settings,
    choice: str,
    backend: OllamaBackend | None,
    available: list[str] | None,
    probe_error: str,
    reasons: dict[str, str],
    local: Embedder | None = None,
) -> Embedder:
    o = settings.ollama
    if choice == "auto":
        known = recorded_embedder(settings)
        if known is not None:
            choice = "ollama" if str(known["id"]).startswith("ollama:") else "local"
            if choice == "ollama" and known["id"] != f"ollama:{o.embed_model}":
                raise ConfigError(
                    f"the data directory {settings.home} was filled by {known['id']}, but "
                    f"ollama.embed_model is {o.embed_model}; set it back or run "
                    "`cranimem-mcp reembed`"
                )
            reasons["embedder"] = f"{known['id']} (auto: the store was filled by it)"
        elif available is not None and _has_model(available, o.embed_model):
            choice = "ollama"
            reasons["embedder"] = f"ollama:{o.embed_model} (auto: Ollama answered)"
        else:
            why = probe_error or f"model {o.embed_model} not pulled; ollama pull {o.embed_model}"
            reasons["embedder"] = f"local (auto: {why})"
            return local or local_embedder(settings)
    else:
        reasons["embedder"] = f"{choice} (configured)"
    if choice == "local":
        return local or local_embedder(settings)
    assert backend is not None
    if available is None:
        raise BackendUnavailable(
            f"the embedder is Ollama's {o.embed_model}, but Ollama does not answer: {probe_error}"
        )
    from cranimem_mcp.backends.ollama import OllamaEmbedder

    dim = await backend.embedding_dim(o.embed_model, timeout=max(o.probe_timeout_seconds, 5.0))
    return OllamaEmbedder(backend, o.embed_model, dim, o.embed_batch_size)


def _has_model(available: list[str], model: str) -> bool:
    from cranimem_mcp.backends.ollama import has_model

    return has_model(available, model)
