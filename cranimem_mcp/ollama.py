"""Ollama as the model layer: embeddings (``/api/embed``), utility tags, the gate's second
look and knowledge-graph extraction (``/api/chat`` with ``format`` set to the JSON schema of
the reply model), through the official ``ollama.AsyncClient``.

Invariants. Every call is bounded: it waits for a slot of the concurrency limit and runs
under one deadline (``timeout_seconds``; the client's own default is no timeout). Connection
errors and timeouts are mapped once, in :meth:`OllamaBackend._call`, to
``BackendUnavailable``, after which the backend rests for ``cooldown_seconds`` so that a dead
server costs one timeout, not one per write. A reply is valid only if it was not cut off
(``done_reason``), parses, and validates against the pydantic model (scores clamped to
[0, 1]); an invalid reply is retried once with the validation error in the prompt. After
that, the heuristic tagger or extractor answers for that item and says so (``tagged_by`` /
``extracted_by`` = "heuristic"); the engine re-tags or re-extracts such items at a later
consolidation. Nothing is ever lost to a model failure, and every fallback is logged and
counted.
"""

from __future__ import annotations

import logging
import sys
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Literal, TypeVar

import anyio
import httpx
import numpy as np
import ollama
from pydantic import AfterValidator, BaseModel, BeforeValidator, Field, ValidationError

from .errors import BackendUnavailable, ConfigError, ModelOutputError
from .extraction import HeuristicExtractor
from .heuristics import HeuristicTagger
from .llm import current_meter
from .models import ENTITY_TYPES, Entity, EntityType, Extraction, Judgement, Relation, Tagging
from .models import Utility as UtilityModel

logger = logging.getLogger(__name__)

T = TypeVar("T")
R = TypeVar("R", bound=BaseModel)

USER_MARK = "=== user ==="


# --- reply models: their JSON schema is what the model is told to produce ----------------


def _clamp(value: float) -> float:
    # Why: JSON-schema bounds are advisory for some backends (llama.cpp ignores float bounds).
    return min(1.0, max(0.0, value))


Score = Annotated[float, AfterValidator(_clamp), Field(description="0.0 to 1.0")]


class TagReply(BaseModel):
    importance: Score
    surprise: Score
    emotion: Score


class JudgeReply(BaseModel):
    keep: bool
    kind: Literal["constraint", "preference", "plan", "command", "goal_change", "fact", "noise"]
    reason: str = Field(max_length=300)


def _entity_type(value: Any) -> Any:
    return value if value in ENTITY_TYPES else "Other"


class EntityReply(BaseModel):
    name: str = Field(min_length=1, max_length=200)
    type: Annotated[EntityType, BeforeValidator(_entity_type)]


class RelationReply(BaseModel):
    subject: str = Field(min_length=1, max_length=200)
    predicate: str = Field(min_length=1, max_length=80)
    object: str = Field(min_length=1, max_length=200)


class ExtractionItem(BaseModel):
    id: int
    entities: list[EntityReply]
    relations: list[RelationReply]


class ExtractionReply(BaseModel):
    items: list[ExtractionItem]


# --- prompts ----------------------------------------------------------------------------


def prompts_dir(configured: Path | None = None) -> Path:
    """The prompt files: the configured directory, the source tree's ``configs/prompts``,
    or the copy a wheel installs under ``<prefix>/share/cranimem-mcp/prompts``."""
    candidates = [configured] if configured else []
    candidates += [
        Path(__file__).resolve().parent.parent / "configs" / "prompts",
        Path(sys.prefix) / "share" / "cranimem-mcp" / "prompts",
    ]
    for path in candidates:
        if path is not None and (path / "tag.md").is_file():
            return path
    raise ConfigError(f"prompt files not found in {[str(c) for c in candidates]}")


@dataclass(frozen=True)
class Prompt:
    """A prompt file: the system text, then ``=== user ===`` and the user template with
    ``{name}`` fields (only known names are replaced, so braces in the text are safe)."""

    system: str
    user: str

    @classmethod
    def load(cls, path: Path) -> Prompt:
        try:
            text = path.read_text(encoding="utf-8")
        except OSError as exc:
            raise ConfigError(f"cannot read prompt {path}: {exc}") from exc
        system, mark, user = text.partition(USER_MARK)
        if not mark:
            raise ConfigError(f"prompt {path} has no '{USER_MARK}' line")
        return cls(system.strip(), user.strip())

    def messages(self, **fields: str) -> list[dict[str, str]]:
        user = self.user
        for name, value in fields.items():
            user = user.replace("{" + name + "}", value)
        return [{"role": "system", "content": self.system}, {"role": "user", "content": user}]


# --- the backend ------------------------------------------------------------------------


@dataclass
class Usage:
    """Cumulative counts since start, shown by ``doctor`` and in stats."""

    calls: int = 0
    failures: int = 0
    retries: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    fallbacks: Counter[str] = field(default_factory=Counter)


@dataclass(frozen=True)
class ChatReply:
    content: str
    done_reason: str | None
    prompt_tokens: int
    completion_tokens: int


class OllamaBackend:
    """One Ollama server: the client, the concurrency limit, the per-call deadline, the
    cooldown after a failure, and the translation of the client's exceptions."""

    def __init__(
        self,
        host: str | None = None,
        *,
        timeout: float = 30.0,
        concurrency: int = 2,
        keep_alive: str | float | None = "10m",
        num_ctx: int = 4096,
        cooldown: float = 30.0,
    ) -> None:
        self.client = ollama.AsyncClient(host=host, timeout=timeout)
        self.host = str(self.client._client.base_url).rstrip("/")
        self.timeout = timeout
        self.keep_alive = keep_alive
        self.num_ctx = num_ctx
        self.cooldown = cooldown
        self.usage = Usage()
        self._slots = anyio.Semaphore(concurrency)
        self._down_until = 0.0
        self._down_reason = ""

    async def aclose(self) -> None:
        await self.client.close()

    @property
    def resting(self) -> bool:
        return time.monotonic() < self._down_until

    def _rest(self, reason: str) -> None:
        self._down_until = time.monotonic() + self.cooldown
        self._down_reason = reason

    async def _call(
        self,
        what: str,
        fn: Callable[[], Awaitable[T]],
        timeout: float | None = None,
        quiet: bool = False,
    ) -> T:
        """Run one client call under the concurrency limit and the deadline (waiting for a
        slot included); translate every failure once. ``quiet``: the caller reports a failed
        connection itself, so it is logged here at INFO, not WARNING."""
        if self.resting:
            raise BackendUnavailable(f"Ollama at {self.host} is resting after: {self._down_reason}")
        limit = self.timeout if timeout is None else timeout
        try:
            with anyio.fail_after(limit):
                async with self._slots:
                    return await fn()
        except ConnectionError as exc:  # the client's translation of httpx.ConnectError
            reason = f"cannot connect to Ollama at {self.host} (is `ollama serve` running?)"
            self._failed(reason, quiet)
            raise BackendUnavailable(reason) from exc
        except (TimeoutError, httpx.TimeoutException) as exc:
            reason = f"Ollama at {self.host} did not answer {what} within {limit:g} s"
            self._failed(reason, quiet)
            raise BackendUnavailable(reason) from exc
        except httpx.HTTPError as exc:
            reason = f"Ollama at {self.host} failed during {what}: {exc!r}"
            self._failed(reason, quiet)
            raise BackendUnavailable(reason) from exc
        except ollama.ResponseError as exc:
            self.usage.failures += 1
            if exc.status_code == 404:
                raise BackendUnavailable(
                    f"Ollama at {self.host}: {exc.error} (run `ollama pull <model>`)"
                ) from exc
            raise BackendUnavailable(
                f"Ollama at {self.host} answered HTTP {exc.status_code} to {what}: {exc.error}"
            ) from exc
        except (ValueError, ValidationError) as exc:
            # The HTTP body was not JSON, or not the shape of Ollama's API.
            self.usage.failures += 1
            raise BackendUnavailable(
                f"{self.host} answered {what} with something that is not Ollama's API: {exc}"
            ) from exc

    def _failed(self, reason: str, quiet: bool = False) -> None:
        self.usage.failures += 1
        self._rest(reason)
        level = logging.INFO if quiet else logging.WARNING
        logger.log(level, "%s; using fallbacks for %g s", reason, self.cooldown)

    async def chat(
        self, model: str, messages: Sequence[dict[str, str]], schema: dict[str, Any]
    ) -> ChatReply:
        response = await self._call(
            f"a chat call to {model}",
            lambda: self.client.chat(
                model=model,
                messages=list(messages),
                format=schema,
                options={"temperature": 0, "num_ctx": self.num_ctx},
                keep_alive=self.keep_alive,
                stream=False,
            ),
        )
        reply = ChatReply(
            content=response.message.content or "",
            done_reason=response.done_reason,
            prompt_tokens=response.prompt_eval_count or 0,
            completion_tokens=response.eval_count or 0,
        )
        self.usage.calls += 1
        self.usage.prompt_tokens += reply.prompt_tokens
        self.usage.completion_tokens += reply.completion_tokens
        meter = current_meter()
        if meter is not None:
            meter.calls += 1
            meter.prompt_tokens += reply.prompt_tokens
            meter.completion_tokens += reply.completion_tokens
        return reply

    async def embed(self, model: str, texts: list[str]) -> list[Sequence[float]]:
        response = await self._call(
            f"an embedding call to {model}",
            lambda: self.client.embed(model=model, input=texts, keep_alive=self.keep_alive),
        )
        return list(response.embeddings)

    async def models(self, timeout: float | None = None, quiet: bool = False) -> list[str]:
        """Names of the pulled models (``/api/tags``); ``quiet`` as in :meth:`_call`."""
        response = await self._call("/api/tags", self.client.list, timeout, quiet)
        return [m.model for m in response.models if m.model]

    async def show(self, model: str, timeout: float | None = None) -> dict[str, Any]:
        """The model's ``model_info`` (``/api/show``)."""
        response = await self._call(f"/api/show {model}", lambda: self.client.show(model), timeout)
        return dict(response.modelinfo or {})

    async def version(self, timeout: float | None = None, quiet: bool = False) -> str:
        async def get() -> str:
            # The client has no method for /api/version; its raw request keeps the mapping.
            r = await self.client._request_raw("GET", "/api/version")
            return str(r.json().get("version", "?"))

        return await self._call("/api/version", get, timeout, quiet)

    async def embedding_dim(self, model: str, timeout: float | None = None) -> int:
        """From ``model_info`` (``<arch>.embedding_length``), else by embedding one text."""
        info = await self.show(model, timeout)
        for key, value in info.items():
            if key.endswith(".embedding_length") and isinstance(value, int):
                return value
        (vector,) = await self.embed(model, ["dimension probe"])
        return len(vector)


def has_model(available: Sequence[str], model: str) -> bool:
    """Ollama lists "all-minilm:latest" for a model pulled as "all-minilm"."""
    wanted = model if ":" in model else f"{model}:latest"
    return wanted in available or model in available


async def ask(
    backend: OllamaBackend, model: str, messages: list[dict[str, str]], reply_type: type[R]
) -> R:
    """One chat call whose reply must validate as ``reply_type``; one retry with the error.
    Raises ``ModelOutputError`` after two invalid replies, ``BackendUnavailable`` if the
    backend fails (no retry: the cooldown takes over)."""
    schema = reply_type.model_json_schema()
    for attempt in (1, 2):
        reply = await backend.chat(model, messages, schema)
        try:
            return _parse(reply, reply_type)
        except ModelOutputError as exc:
            meter = current_meter()
            if attempt == 2 or (meter is not None and not meter.allows()):
                raise
            backend.usage.retries += 1
            logger.info("invalid reply from %s, retrying once: %s", model, exc)
            messages = [
                *messages,
                {"role": "assistant", "content": reply.content[:4000]},
                {
                    "role": "user",
                    "content": f"That reply was invalid: {exc}. Answer again with only a JSON "
                    "object that matches the schema.",
                },
            ]
    raise AssertionError("unreachable")


def _parse(reply: ChatReply, reply_type: type[R]) -> R:
    if reply.done_reason not in (None, "stop"):
        # Cut off at the token limit: even if it parses, it is missing what came after.
        raise ModelOutputError(f"the reply was cut off (done_reason={reply.done_reason!r})")
    try:
        return reply_type.model_validate_json(reply.content)
    except ValidationError as exc:
        errors = "; ".join(
            f"{'.'.join(str(p) for p in e['loc']) or 'reply'}: {e['msg']}" for e in exc.errors()
        )
        raise ModelOutputError(errors[:600]) from exc


def _budget_allows() -> bool:
    meter = current_meter()
    return meter is None or meter.allows()


def _note_fallback(usage: Usage, what: str, model: str, reason: str) -> None:
    usage.fallbacks[what] += 1
    meter = current_meter()
    if meter is not None:
        meter.fallbacks += 1
    logger.warning("%s by %s failed, heuristic fallback: %s", what, model, reason)


# --- the adapters -----------------------------------------------------------------------


class OllamaTagger:
    """Goal-conditioned utility tags and the gate's second look by a chat model.

    Surprise blends the model's judgement (how unexpected, given the goal) with the measured
    novelty against the scope's memories: the model cannot see the store, the embedding can.
    """

    def __init__(
        self,
        backend: OllamaBackend,
        model: str,
        prompts: Path,
        fallback: HeuristicTagger | None = None,
    ) -> None:
        self.backend = backend
        self.model = model
        self._tag = Prompt.load(prompts / "tag.md")
        self._judge = Prompt.load(prompts / "judge.md")
        self._fallback = fallback or HeuristicTagger()

    @property
    def name(self) -> str:
        return f"ollama:{self.model}"

    async def judge(self, content: str, goal: str) -> Judgement:
        reason = "the LLM-call budget of this run is spent"
        if _budget_allows():
            messages = self._judge.messages(goal=goal, content=content)
            try:
                reply = await ask(self.backend, self.model, messages, JudgeReply)
                return Judgement(
                    keep=reply.keep, kind=reply.kind, reason=reply.reason, judged_by=self.name
                )
            except (BackendUnavailable, ModelOutputError) as exc:
                reason = str(exc)
        _note_fallback(self.backend.usage, "judge", self.model, reason)
        judgement = await self._fallback.judge(content, goal)
        return judgement.model_copy(
            update={"reason": f"{judgement.reason} (heuristic fallback: {reason[:160]})"}
        )

    async def tag(self, content: str, goal: str, novelty: float) -> Tagging:
        reason = "the LLM-call budget of this run is spent"
        if _budget_allows():
            messages = self._tag.messages(goal=goal, content=content, novelty=f"{novelty:.2f}")
            try:
                reply = await ask(self.backend, self.model, messages, TagReply)
                surprise = (reply.surprise + _clamp(novelty)) / 2
                utility = UtilityModel.of(reply.importance, surprise, reply.emotion)
                return Tagging(utility=utility, tagged_by=self.name)
            except (BackendUnavailable, ModelOutputError) as exc:
                reason = str(exc)
        _note_fallback(self.backend.usage, "tag", self.model, reason)
        return await self._fallback.tag(content, goal, novelty)


class OllamaExtractor:
    """Typed entities and relations for several memories per chat call (``batch_size``)."""

    def __init__(
        self,
        backend: OllamaBackend,
        model: str,
        prompts: Path,
        batch_size: int = 4,
        fallback: HeuristicExtractor | None = None,
    ) -> None:
        self.backend = backend
        self.model = model
        self.batch_size = batch_size
        self._prompt = Prompt.load(prompts / "extract.md")
        self._fallback = fallback or HeuristicExtractor()

    @property
    def name(self) -> str:
        return f"ollama:{self.model}"

    async def extract(self, texts: list[str]) -> list[Extraction]:
        out: list[Extraction] = []
        for start in range(0, len(texts), self.batch_size):
            out += await self._extract_batch(texts[start : start + self.batch_size])
        return out

    async def _extract_batch(self, texts: list[str]) -> list[Extraction]:
        reason = "the LLM-call budget of this run is spent"
        items: dict[int, ExtractionItem] = {}
        if _budget_allows():
            numbered = "\n".join(f"{i}. {' '.join(t.split())}" for i, t in enumerate(texts, 1))
            messages = self._prompt.messages(texts=numbered)
            try:
                reply = await ask(self.backend, self.model, messages, ExtractionReply)
                items = {item.id: item for item in reply.items}
                reason = "the reply had no item for this memory"
            except (BackendUnavailable, ModelOutputError) as exc:
                reason = str(exc)
        out = []
        for i, text in enumerate(texts, 1):
            item = items.get(i)
            if item is None:
                _note_fallback(self.backend.usage, "extract", self.model, reason)
                (fallback,) = await self._fallback.extract([text])
                out.append(fallback.model_copy(update={"extracted_by": "heuristic"}))
                continue
            out.append(
                Extraction(
                    entities=[Entity(name=e.name, type=e.type) for e in item.entities],
                    relations=[
                        Relation(subject=r.subject, predicate=r.predicate, object=r.object)
                        for r in item.relations
                    ],
                    extracted_by=self.name,
                )
            )
        return out


class OllamaEmbedder:
    """``/api/embed`` in batches; rows are re-normalised to unit length."""

    def __init__(self, backend: OllamaBackend, model: str, dim: int, batch_size: int = 32) -> None:
        self.backend = backend
        self.model = model
        self._dim = dim
        self.batch_size = batch_size

    @property
    def id(self) -> str:
        return f"ollama:{self.model}"

    @property
    def dim(self) -> int:
        return self._dim

    async def embed(self, texts: list[str]) -> np.ndarray:
        rows: list[Sequence[float]] = []
        for start in range(0, len(texts), self.batch_size):
            batch = texts[start : start + self.batch_size]
            vectors = await self.backend.embed(self.model, batch)
            if len(vectors) != len(batch) or any(len(v) != self._dim for v in vectors):
                raise ModelOutputError(
                    f"{self.model} returned {len(vectors)} vectors of "
                    f"{sorted({len(v) for v in vectors})} dimensions for {len(batch)} texts; "
                    f"expected {self._dim}"
                )
            rows += vectors
        matrix = np.asarray(rows, dtype=np.float32).reshape(len(texts), self._dim)
        norms = np.linalg.norm(matrix, axis=1, keepdims=True)
        return matrix / np.where(norms == 0, 1.0, norms)
