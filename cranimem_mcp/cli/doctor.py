"""``cranimem-mcp doctor``, ``reembed`` and ``rewrite-graph``: checking the model setup,
moving a store to another embedder, and rewriting the graph server's store after a hard
forget (:mod:`.graph_rewrite`).

Doctor checks the data directory, the Ollama host (``/api/version``), that each configured
model is pulled (``/api/tags``, ``/api/show``), the embedding dimension, and that the store
was filled by the embedder this configuration selects; each failure comes with what to do.
With ``--try N`` it also makes N real tagging and extraction calls and reports latency and
how many replies were valid JSON on the first attempt.

Reembed never mixes vector spaces: it embeds every row of the episodic store with the new
embedder into a fresh table, swaps the directories, then records the new embedder in
``state.json``. The knowledge graph holds no vectors and is untouched. The server must not be
running on the same data directory meanwhile.
"""

from __future__ import annotations

import logging
import os
import shutil
import statistics
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Literal

import anyio
import numpy as np

from cranimem_mcp.backends.embeddings import Embedder, embed_read
from cranimem_mcp.backends.ollama import (
    ExtractionReply,
    OllamaBackend,
    Prompt,
    TagReply,
    ask,
    has_model,
    prompts_dir,
)
from cranimem_mcp.backends.passages import passages
from cranimem_mcp.buffer.episodic import EpisodicStore
from cranimem_mcp.buffer.table import LocalTable
from cranimem_mcp.config import Settings
from cranimem_mcp.conversation import threads
from cranimem_mcp.coordination import load_state, save_state
from cranimem_mcp.errors import BackendUnavailable, ConfigError, CranimemError, ModelOutputError
from cranimem_mcp.graph.rewrite import Rewrite, rewrite
from cranimem_mcp.providers import backend_for, recorded_embedder, select_providers

logger = logging.getLogger(__name__)

Status = Literal["ok", "warn", "FAIL"]


@dataclass
class Check:
    status: Status
    what: str
    fix: str = ""


async def doctor(settings: Settings, try_calls: int = 0) -> list[Check]:
    checks: list[Check] = []
    checks.append(_check_home(settings))
    m, o = settings.models, settings.ollama
    backend = backend_for(settings)
    try:
        try:
            # quiet: a failure is this report's own line, not a log warning beside it
            version = await backend.version(timeout=o.probe_timeout_seconds, quiet=True)
            available = await backend.models(timeout=o.probe_timeout_seconds, quiet=True)
            checks.append(Check("ok", f"Ollama {version} answers at {backend.host}"))
        except BackendUnavailable as exc:
            available = None
            wanted = "ollama" in (m.embedder, m.tagger, m.extractor)
            checks.append(
                Check(
                    "FAIL" if wanted else "warn",
                    f"Ollama does not answer at {backend.host}: {exc}",
                    "start it (`ollama serve`) or set OLLAMA_HOST / [ollama] host to a server "
                    "that answers; meanwhile 'auto' uses the local embedder and the heuristics",
                )
            )
        if available is not None:
            checks += await _check_models(settings, backend, available)
            if try_calls and has_model(available, o.tagger_model):
                # Measuring, not serving: a generous deadline and no cooldown, so a slow
                # first call (the model loading) is timed instead of cut off.
                patient = OllamaBackend(
                    o.host, timeout=max(o.timeout_seconds, 600.0), keep_alive=o.keep_alive,
                    num_ctx=o.num_ctx, cooldown=0.0,
                )  # fmt: skip
                try:
                    checks += await _try_calls(
                        patient, o.tagger_model, o.extractor_model, try_calls
                    )
                finally:
                    await patient.aclose()
    finally:
        await backend.aclose()
    checks += await _check_store(settings)
    return checks


def _check_home(settings: Settings) -> Check:
    home = settings.home
    if not home.exists():
        return Check("ok", f"data directory {home} (will be created on first use)")
    if not os.access(home, os.W_OK):
        return Check("FAIL", f"data directory {home} is not writable", f"chmod u+w {home}")
    return Check("ok", f"data directory {home}")


async def _check_models(
    settings: Settings, backend: OllamaBackend, available: list[str]
) -> list[Check]:
    m, o = settings.models, settings.ollama
    checks = []
    roles = [
        ("embedding", m.embedder, "local", o.embed_model),
        ("tagger", m.tagger, "heuristic", o.tagger_model),
        ("extractor", m.extractor, "heuristic", o.extractor_model),
    ]
    for role, choice, local, model in roles:
        if choice == local:
            checks.append(Check("ok", f"{role}: {local} (configured; Ollama not used)"))
            continue
        if not has_model(available, model):
            checks.append(
                Check(
                    "FAIL" if choice == "ollama" else "warn",
                    f"{role} model {model} is not pulled"
                    + ("" if choice == "ollama" else f" ('auto' falls back to {local})"),
                    f"ollama pull {model}",
                )
            )
            continue
        detail = f"{role} model {model} is pulled"
        if role == "embedding":
            try:
                dim = await backend.embedding_dim(model, timeout=o.timeout_seconds)
                detail += f"; embedding dimension {dim}"
            except CranimemError as exc:
                checks.append(Check("FAIL", f"{role} model {model}: {exc}", f"ollama pull {model}"))
                continue
        checks.append(Check("ok", detail))
    return checks


async def _check_store(settings: Settings) -> list[Check]:
    known = recorded_embedder(settings)
    if known is None:
        return [Check("ok", "store: empty (the first embedder used will be recorded)")]
    checks = []
    try:
        async with await select_providers(settings) as providers:
            selected = providers.embedder.id
    except CranimemError as exc:
        return [
            Check(
                "FAIL",
                f"store filled by {known['id']} ({known['dim']}-d), which cannot be opened now: "
                f"{exc}",
                "start Ollama, or move the store to the local embedder: "
                "cranimem-mcp reembed --to local",
            )
        ]
    if selected != known["id"]:
        checks.append(
            Check(
                "FAIL",
                f"store filled by {known['id']} ({known['dim']}-d) but this configuration "
                f"selects {selected}",
                "set [models] embedder back, or re-embed: cranimem-mcp reembed",
            )
        )
    store = EpisodicStore(LocalTable(settings.home / "episodic"), int(known["dim"]))
    try:
        await store.open()
        census = await store.census()
    except CranimemError as exc:
        return [*checks, Check("FAIL", f"episodic store: {exc}", "see the log; restore a backup")]
    totals: dict[str, int] = {}
    for (_scope, tier), n in census.items():
        totals[tier] = totals.get(tier, 0) + n
    pending = sum(len(v) for v in load_state(settings.home / "state.json").reextract.values())
    checks.append(
        Check(
            "ok",
            f"store: {known['id']} ({known['dim']}-d); "
            + ", ".join(f"{tier} {totals.get(tier, 0)}" for tier in ("buffer", "longterm", "trash"))
            + f"; {len({s for s, _ in census})} scopes; {pending} memories awaiting re-extraction",
        )
    )
    return checks


_SAMPLES = [
    ("Help the user plan their trip to Japan in May", "I am allergic to shellfish."),
    ("Help the user plan their trip to Japan in May", "The stock market closed lower today."),
    ("Remember facts about the user's software projects", "My project Atlas uses PostgreSQL 16."),
]


async def _try_calls(
    backend: OllamaBackend, tag_model: str, extract_model: str, n: int
) -> list[Check]:
    """Real calls, timed; validity counts replies valid on the first attempt."""
    folder = prompts_dir()
    tag, extract = Prompt.load(folder / "tag.md"), Prompt.load(folder / "extract.md")
    checks = []
    for label, model, reply_type, make in (
        (
            "tagging",
            tag_model,
            TagReply,
            lambda i: tag.messages(
                goal=_SAMPLES[i % 3][0], content=_SAMPLES[i % 3][1], novelty="1.00"
            ),
        ),
        (
            "extraction (2 memories per call)",
            extract_model,
            ExtractionReply,
            lambda i: extract.messages(
                texts=f"1. {_SAMPLES[i % 3][1]}\n2. Maria Lopez works at Acme Robotics in Berlin."
            ),
        ),
    ):
        seconds, first_try, failed = [], 0, 0
        for i in range(n):
            retries = backend.usage.retries
            started = time.perf_counter()
            try:
                await ask(backend, model, make(i), reply_type)
            except (BackendUnavailable, ModelOutputError) as exc:
                failed += 1
                logger.warning("%s call failed: %s", label, exc)
                continue
            first_try += backend.usage.retries == retries
            seconds.append((time.perf_counter() - started) / (backend.usage.retries - retries + 1))
        timing = (
            f"median {statistics.median(seconds):.1f} s per call (max {max(seconds):.1f} s)"
            if seconds
            else "no call succeeded"
        )
        checks.append(
            Check(
                "ok" if first_try == n else "warn",
                f"{label} with {model}: {first_try}/{n} replies valid JSON on the first attempt"
                f"{f', {failed} failed' if failed else ''}; {timing}",
                "" if first_try == n else "try a larger model (see docs/OLLAMA.md)",
            )
        )
    return checks


# --- reembed -----------------------------------------------------------------------------


async def reembed(settings: Settings, target: Embedder) -> tuple[str, str, int]:
    """Re-embed the episodic store with ``target``. Returns (old id, new id, rows)."""
    state_path = settings.home / "state.json"
    state = load_state(state_path)
    known = state.embedder
    if known is None:
        raise ConfigError(f"{settings.home} holds no store to re-embed")
    new = {"id": target.id, "dim": target.dim}
    if known == new:
        return known["id"], new["id"], await rewindow(settings, target)
    old_dir, tmp_dir = settings.home / "episodic", settings.home / "episodic.reembed"
    backup = settings.home / "episodic.before-reembed"
    if tmp_dir.exists():
        shutil.rmtree(tmp_dir)
    old = EpisodicStore(LocalTable(old_dir), int(known["dim"]))
    await old.open()
    rows = await old.rows(where=None)
    fresh = EpisodicStore(LocalTable(tmp_dir), target.dim)
    await fresh.open()
    # A turn is embedded with the one it follows, as the write path did (:mod:`.threads`).
    vectors = await threads.embed_all(target, rows, settings.episodic.windows)
    for start in range(0, len(rows), 1000):
        await fresh.add(
            threads.reembedded(rows[start : start + 1000], vectors[start : start + 1000], rows)
        )
    # Swap, then record: a crash before the record leaves the old embedder recorded and the
    # old table in episodic.before-reembed; rerunning reembed starts over.
    if backup.exists():
        shutil.rmtree(backup)
    await anyio.to_thread.run_sync(os.replace, old_dir, backup)
    await anyio.to_thread.run_sync(os.replace, tmp_dir, old_dir)
    state.embedder = new
    save_state(state_path, state)
    shutil.rmtree(backup)
    logger.info("re-embedded %d memories: %s -> %s", len(rows), known["id"], new["id"])
    return known["id"], new["id"], len(rows)


# A text this short fits the model's first window whatever its words (256 word pieces are
# ~1,000 characters of English; a word piece is at least one character).
ONE_WINDOW_CHARS = 255


def _same(new: Any, old: Any) -> bool:
    new, old = np.asarray(new, dtype=np.float32), np.asarray(old, dtype=np.float32)
    return new.shape == old.shape and bool(np.allclose(new, old, atol=1e-4))


async def rewindow(settings: Settings, embedder: Embedder) -> int:
    """The long memories of a store kept by the same embedder given the passage vectors
    ``episodic.windows`` asks for (memories stored before the setting or with another value
    kept their opening alone, or windows of 256 word pieces before passages): their vectors
    stay, only ``windows`` is written. The number of memories rewritten."""
    store = EpisodicStore(LocalTable(settings.home / "episodic"), embedder.dim)
    await store.open()
    long = [
        m.id
        for m in await store.rows(where=None)
        if len(m.content) > ONE_WINDOW_CHARS or passages(m.content)
    ]
    changed = 0
    for start in range(0, len(long), 256):
        rows = await store.get(long[start : start + 256], vectors=True)
        _vectors, windows = await embed_read(
            embedder, [m.content for m in rows], settings.episodic.windows
        )
        moved = [
            replace(m, windows=w)
            for m, w in zip(rows, windows, strict=True)
            if (w is None) != (m.windows is None) or (w is not None and not _same(w, m.windows))
        ]
        if moved:
            await store.upsert(moved)
            changed += len(moved)
    logger.info("gave %d long memories their passage vectors (%d at most)", changed,
                settings.episodic.windows)  # fmt: skip
    return changed


async def rewrite_graph(settings: Settings, target: Path, absent: list[str]) -> Rewrite:
    """Copy the graph server's live quads into a fresh Oxigraph store at ``target``,
    verified (:mod:`.graph_rewrite`). Reads the server only, never the data directory."""
    g = settings.graph
    if g.store != "sparql":
        raise ConfigError(
            'rewrite-graph is for a graph on a SPARQL server ([graph] store = "sparql"); '
            "a hard forget on the local store rewrites its files itself"
        )
    return await anyio.to_thread.run_sync(
        rewrite, g.query_endpoint, g.update_endpoint, target, absent
    )
