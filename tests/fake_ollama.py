"""A fake Ollama server for protocol tests: a real HTTP server on a loopback port (uvicorn in
a thread) that speaks the parts of Ollama's API we use, records every request, and can be told
to fail.

Endpoints: ``/api/chat`` (non-streaming), ``/api/embed``, ``/api/tags``, ``/api/show`` (with
``model_info``), ``/api/version``. Replies to chat calls come from ``chat_replies`` (scripted
JSON strings, consumed in order) or, when none is queued, from a small rule-based responder
that answers whatever schema ``format`` carries. Embeddings are hashed bags of words:
deterministic, unit length, and similar for texts that share words.

"busy" answers normally after 50 ms (to observe concurrency, ``max_in_flight``).
Failure modes (``fail(mode, times=n)``, applied to the next n calls of ``/api/chat`` and
``/api/embed``): "slow" (sleeps past any timeout until the test ends), "http500",
"malformed" (content that is not JSON), "wrong_shape" (JSON of another shape), "length"
(``done_reason="length"``), "garbage" (an HTTP body that is not JSON).
An unknown model gets Ollama's 404. Connection refused is a port nobody listens on:
:func:`refused_host`.
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from servers import free_port, uvicorn_thread
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

EMBED_DIM = 48
CHAT_MODEL = "qwen2.5-coder:1.5b"
EMBED_MODEL = "all-minilm:latest"


def hashed_embedding(text: str, dim: int = EMBED_DIM) -> list[float]:
    vector = np.zeros(dim, dtype=np.float64)
    for word in re.findall(r"[a-z0-9]+", text.lower()):
        h = int.from_bytes(hashlib.sha256(word.encode()).digest()[:4], "little")
        vector[h % dim] += 1.0
    vector[0] += 0.1  # never all zero
    return (vector / np.linalg.norm(vector)).tolist()


@dataclass
class Recorded:
    path: str
    body: dict[str, Any]


@dataclass
class FakeOllama:
    models: dict[str, dict[str, Any]] = field(
        default_factory=lambda: {
            CHAT_MODEL: {"general.architecture": "qwen2", "qwen2.context_length": 32768},
            EMBED_MODEL: {"general.architecture": "bert", "bert.embedding_length": EMBED_DIM},
        }
    )
    requests: list[Recorded] = field(default_factory=list)
    chat_replies: list[str] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)
    host: str = ""
    release: threading.Event = field(default_factory=threading.Event)
    in_flight: int = 0
    max_in_flight: int = 0

    # --- control ------------------------------------------------------------------------

    def fail(self, mode: str, times: int = 1) -> None:
        self.failures += [mode] * times

    def calls(self, path: str) -> list[dict[str, Any]]:
        return [r.body for r in self.requests if r.path == path]

    # --- the API ------------------------------------------------------------------------

    def _known(self, model: str) -> str | None:
        for name in (model, f"{model}:latest"):
            if name in self.models:
                return name
        return None

    async def _body(self, request: Request) -> dict[str, Any]:
        body = json.loads(await request.body() or b"{}")
        self.requests.append(Recorded(request.url.path, body))
        return body

    def _failure(self) -> str | None:
        return self.failures.pop(0) if self.failures else None

    async def chat(self, request: Request) -> Response:
        body = await self._body(request)
        if self._known(body.get("model", "")) is None:
            return _not_found(body.get("model", ""))
        mode = self._failure()
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            if early := await _early(mode, self.release):
                return early
        finally:
            self.in_flight -= 1
        content = self.chat_replies.pop(0) if self.chat_replies else respond(body)
        done_reason = "stop"
        if mode == "malformed":
            content = '{"importance": 0.9, "surprise": oops'
        elif mode == "wrong_shape":
            content = json.dumps({"answer": "yes", "score": "high"})
        elif mode == "length":
            done_reason = "length"  # the content may even parse: it is still cut off
        return JSONResponse(
            {
                "model": body["model"],
                "created_at": "2026-11-01T00:00:00Z",
                "message": {"role": "assistant", "content": content},
                "done": True,
                "done_reason": done_reason,
                "total_duration": 1000,
                "prompt_eval_count": 100 + len(json.dumps(body["messages"])) // 4,
                "eval_count": 1 + len(content) // 4,
            }
        )

    async def embed(self, request: Request) -> Response:
        body = await self._body(request)
        model = self._known(body.get("model", ""))
        if model is None:
            return _not_found(body.get("model", ""))
        mode = self._failure()
        if early := await _early(mode, self.release):
            return early
        texts = body["input"] if isinstance(body["input"], list) else [body["input"]]
        dim = next(v for k, v in self.models[model].items() if k.endswith("embedding_length"))
        vectors = [hashed_embedding(t, dim) for t in texts]
        if mode == "wrong_shape":
            vectors = [v[: dim // 2] for v in vectors]
        return JSONResponse({"model": body["model"], "embeddings": vectors})

    async def tags(self, request: Request) -> Response:
        self.requests.append(Recorded(request.url.path, {}))
        return JSONResponse(
            {
                "models": [
                    {
                        "name": name,
                        "model": name,
                        "modified_at": "2026-11-01T00:00:00Z",
                        "size": 1000,
                        "digest": hashlib.sha256(name.encode()).hexdigest(),
                        "details": {"format": "gguf", "family": info["general.architecture"]},
                    }
                    for name, info in self.models.items()
                ]
            }
        )

    async def show(self, request: Request) -> Response:
        body = await self._body(request)
        model = self._known(body.get("model", ""))
        if model is None:
            return _not_found(body.get("model", ""))
        return JSONResponse(
            {
                "modelfile": "FROM fake",
                "details": {"format": "gguf"},
                "model_info": self.models[model],
                "capabilities": ["embedding"]
                if "bert" in str(self.models[model])
                else ["completion"],
            }
        )

    async def version(self, request: Request) -> Response:
        self.requests.append(Recorded(request.url.path, {}))
        return JSONResponse({"version": "0.12.0-fake"})

    def app(self) -> Starlette:
        return Starlette(
            routes=[
                Route("/api/chat", self.chat, methods=["POST"]),
                Route("/api/embed", self.embed, methods=["POST"]),
                Route("/api/tags", self.tags, methods=["GET"]),
                Route("/api/show", self.show, methods=["POST"]),
                Route("/api/version", self.version, methods=["GET"]),
            ]
        )


def _not_found(model: str) -> Response:
    return JSONResponse({"error": f"model '{model}' not found"}, status_code=404)


async def _early(mode: str | None, release: threading.Event) -> Response | None:
    import anyio

    if mode == "slow":
        # Longer than any timeout under test; released when the server stops.
        await anyio.to_thread.run_sync(release.wait, 60.0)
        return JSONResponse({"error": "too late"}, status_code=500)
    if mode == "busy":
        await anyio.sleep(0.05)  # long enough for concurrent calls to overlap
    if mode == "http500":
        return JSONResponse({"error": "llama runner process has terminated"}, status_code=500)
    if mode == "garbage":
        return Response(b"<html>502 Bad Gateway</html>", media_type="application/json")
    return None


# --- the rule-based responder: answers the schema it was given ------------------------------

_CAPITALISED = re.compile(r"\b([A-Z][a-z]+(?:\s+[A-Z][a-z]+)*)\b")


def respond(body: dict[str, Any]) -> str:
    props = (body.get("format") or {}).get("properties", {})
    user = body["messages"][-1]["content"]
    if "importance" in props:
        relevant = any(w in user.lower() for w in ("allergic", "prefer", "deadline", "never"))
        score = 0.9 if relevant else 0.2
        return json.dumps({"importance": score, "surprise": 0.4, "emotion": 0.1})
    if "keep" in props:
        message = user.split("<<<")[-1]
        keep = re.search(r"\b(i|my)\b", message, re.I) is not None
        kind = "constraint" if keep else "noise"
        return json.dumps({"keep": keep, "kind": kind, "reason": f"fake judged {kind}"})
    if "items" in props:
        items = []
        for line in user.splitlines():
            m = re.match(r"^(\d+)\.\s+(.*)$", line)
            if not m:
                continue
            names = [n for n in _CAPITALISED.findall(m.group(2)) if n not in ("I", "My")]
            entities = [{"name": "User", "type": "Person"}]
            entities += [{"name": n, "type": "Location"} for n in names]
            relations = [{"subject": "User", "predicate": "mentions", "object": n} for n in names]
            items.append({"id": int(m.group(1)), "entities": entities, "relations": relations})
        return json.dumps({"items": items})
    return json.dumps({})


# --- running it -----------------------------------------------------------------------------


def refused_host() -> str:
    """A loopback address where nothing listens: connecting is refused at once."""
    return f"http://127.0.0.1:{free_port()}"


@contextmanager
def running(fake: FakeOllama | None = None, port: int | None = None) -> Iterator[FakeOllama]:
    """Serve ``fake`` (a new one by default) on a loopback port; sets and yields it."""
    fake = fake or FakeOllama()
    with uvicorn_thread(fake.app(), port, name="fake-ollama", join=10) as host:
        fake.host = host
        try:
            yield fake
        finally:
            fake.release.set()  # a "slow" reply still waiting lets the server stop
