"""One Ollama server as a backend: the client, its limits and the translation of its failures.

Invariants. Every call is bounded: it waits for a slot of the concurrency limit and runs
under one deadline (``timeout_seconds``; the client's own default is no timeout). Connection
errors and timeouts are mapped once, in :meth:`OllamaBackend._call`, to
``BackendUnavailable``, after which the backend rests for ``cooldown_seconds`` so that a dead
server costs one timeout, not one per write. Every call and failure is counted in
:class:`Usage` (and in the run's meter, when one is set).
"""

from __future__ import annotations

import ipaddress
import logging
import os
import time
import urllib.parse
from collections import Counter
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

import anyio
import httpx
import ollama
from pydantic import ValidationError

from cranimem_mcp.backends.llm import current_meter
from cranimem_mcp.errors import BackendUnavailable

logger = logging.getLogger(__name__)

T = TypeVar("T")


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
        base = ollama_url(host or os.getenv("OLLAMA_HOST"))
        self.client = ollama.AsyncClient(host=base, timeout=timeout)
        # As the client's own httpx client reads it (its base URL, no trailing slash).
        self.host = str(httpx.URL(base)).rstrip("/")
        self.timeout = timeout
        self._http: httpx.AsyncClient | None = None  # for /api/version, made on first use
        self.keep_alive = keep_alive
        self.num_ctx = num_ctx
        self.cooldown = cooldown
        self.usage = Usage()
        self._slots = anyio.Semaphore(concurrency)
        self._down_until = 0.0
        self._down_reason = ""

    async def aclose(self) -> None:
        await self.client.close()
        if self._http is not None:
            await self._http.aclose()

    def _raw(self) -> httpx.AsyncClient:
        """Our own httpx client for what the ollama client has no method for, made as the
        ollama client makes its own: same base URL, timeout, redirects, JSON and API key."""
        if self._http is None:
            headers = {"Content-Type": "application/json", "Accept": "application/json"}
            api_key = os.getenv("OLLAMA_API_KEY")
            if api_key:
                headers["Authorization"] = f"Bearer {api_key}"
            self._http = httpx.AsyncClient(
                base_url=self.host, timeout=self.timeout, follow_redirects=True, headers=headers
            )
        return self._http

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
            # The client has no method for /api/version: our own request, its failures
            # raised as the client raises them (for :meth:`_call` to translate).
            try:
                r = await self._raw().get("/api/version")
                r.raise_for_status()
            except httpx.HTTPStatusError as exc:
                raise ollama.ResponseError(exc.response.text, exc.response.status_code) from exc
            except httpx.ConnectError as exc:
                raise ConnectionError(f"cannot connect to Ollama at {self.host}") from exc
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


def ollama_url(host: str | None) -> str:
    """The server URL the ollama client makes of ``host`` (``OLLAMA_HOST``'s forms: a bare
    host, ``host:port``, ``:port``, with or without scheme and path; IPv6 in brackets): the
    scheme defaults to http, the port to 11434 (80, 443 with an explicit scheme), the host to
    127.0.0.1, and a trailing slash is dropped. The client's own parser is private
    (``ollama._client._parse_host``, 0.6.3), so its few lines are repeated here; the result
    is what both the client and our own requests are given, so they reach one server.

    >>> ollama_url(None), ollama_url(":56789"), ollama_url("https://example.com/path/")
    ('http://127.0.0.1:11434', 'http://127.0.0.1:56789', 'https://example.com:443/path')
    """
    host, port = host or "", 11434
    scheme, _, hostport = host.partition("://")
    if not hostport:
        scheme, hostport = "http", host
    elif scheme == "http":
        port = 80
    elif scheme == "https":
        port = 443
    split = urllib.parse.urlsplit(f"{scheme}://{hostport}")
    name = split.hostname or "127.0.0.1"
    port = split.port or port
    try:
        if isinstance(ipaddress.ip_address(name), ipaddress.IPv6Address):
            name = f"[{name}]"  # urlsplit drops the brackets
    except ValueError:
        pass
    if path := split.path.strip("/"):
        return f"{scheme}://{name}:{port}/{path}"
    return f"{scheme}://{name}:{port}"


def has_model(available: Sequence[str], model: str) -> bool:
    """Ollama lists "all-minilm:latest" for a model pulled as "all-minilm"."""
    wanted = model if ":" in model else f"{model}:latest"
    return wanted in available or model in available
