"""An Ollama-compatible HTTP server over a real model: llama.cpp in-process through the
``xllamacpp`` wheel (prebuilt; never build llama.cpp natively here: SIGILL on AMX).

It translates Ollama's ``/api/chat`` (``format`` = a JSON schema, ``options``) to
``Server.handle_chat_completions`` (``response_format`` json_schema) and ``/api/embed`` to
``Server.handle_embeddings``, and answers ``/api/tags``, ``/api/show`` (with ``model_info``)
and ``/api/version`` as Ollama does, so the real ``ollama`` client and cranimem-mcp talk to
it unchanged. One model serves chat and embeddings; it is listed under the names in
``CHAT_NAME`` and ``EMBED_NAME``. Calls run one at a time in a worker thread, 1 CPU thread
(2 spinning threads on a loaded 2-core machine were ~10x slower).

Run it standalone (e.g. for ``OLLAMA_HOST=127.0.0.1:11435 cranimem-mcp doctor``)::

    python tests/ollama_compat_server.py "$(scripts/fetch_test_model.sh)" --port 11435
"""

from __future__ import annotations

import argparse
import os
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import anyio
import uvicorn
from servers import uvicorn_thread
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

CHAT_NAME = "qwen2.5-coder:1.5b"
EMBED_NAME = "qwen2.5-coder-embed:latest"
DEFAULT_MODEL = (
    Path(os.environ.get("CRANIMEM_TEST_MODEL_DIR", "~/.cache/cranimem-test-model")).expanduser()
    / "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"
)


def model_path() -> Path | None:
    """The test model if it was fetched (``scripts/fetch_test_model.sh``), else None."""
    path = Path(os.environ.get("CRANIMEM_TEST_MODEL", DEFAULT_MODEL)).expanduser()
    return path if path.is_file() else None


class CompatServer:
    def __init__(self, model: Path, threads: int = 1, n_ctx: int = 4096) -> None:
        import xllamacpp as xl

        params = xl.CommonParams()
        params.model.path = str(model)
        params.n_ctx = n_ctx
        params.n_parallel = 1
        params.cpuparams.n_threads = threads
        params.cpuparams_batch.n_threads = threads
        params.embedding = True
        params.pooling_type = xl.llama_pooling_type.LLAMA_POOLING_TYPE_MEAN
        params.verbosity = -1
        self.server = xl.Server(params)
        self._lock = threading.Lock()
        self.requests: list[tuple[str, dict[str, Any]]] = []
        self.chat_seconds: list[float] = []

    def _run(self, fn: Any, request: dict[str, Any]) -> dict[str, Any]:
        with self._lock:
            return fn(request)

    async def chat(self, request: Request) -> Response:
        body = await request.json()
        self.requests.append(("/api/chat", body))
        options = body.get("options") or {}
        req: dict[str, Any] = {
            "messages": body["messages"],
            "temperature": options.get("temperature", 0.8),
            "max_tokens": options.get("num_predict", 1024),
            "stream": False,
        }
        fmt = body.get("format")
        if isinstance(fmt, dict):
            req["response_format"] = {"type": "json_schema", "json_schema": {"schema": fmt}}
        elif fmt == "json":
            req["response_format"] = {"type": "json_object"}
        started = time.perf_counter()
        out = await anyio.to_thread.run_sync(self._run, self.server.handle_chat_completions, req)
        elapsed = time.perf_counter() - started
        self.chat_seconds.append(elapsed)
        if "error" in out:
            return JSONResponse({"error": str(out["error"])}, status_code=500)
        choice = out["choices"][0]
        usage = out.get("usage", {})
        return JSONResponse(
            {
                "model": body["model"],
                "created_at": "2026-11-01T00:00:00Z",
                "message": {"role": "assistant", "content": choice["message"]["content"] or ""},
                "done": True,
                "done_reason": "length" if choice["finish_reason"] == "length" else "stop",
                "total_duration": int(elapsed * 1e9),
                "prompt_eval_count": usage.get("prompt_tokens", 0),
                "eval_count": usage.get("completion_tokens", 0),
            }
        )

    async def embed(self, request: Request) -> Response:
        body = await request.json()
        self.requests.append(("/api/embed", body))
        texts = body["input"] if isinstance(body["input"], list) else [body["input"]]
        out = await anyio.to_thread.run_sync(
            self._run, self.server.handle_embeddings, {"input": texts}
        )
        if "error" in out:
            return JSONResponse({"error": str(out["error"])}, status_code=500)
        vectors = [d["embedding"] for d in sorted(out["data"], key=lambda d: d["index"])]
        return JSONResponse({"model": body["model"], "embeddings": vectors})

    async def tags(self, _request: Request) -> Response:
        models = [
            {"name": n, "model": n, "size": 1117320768, "digest": "cc324af070c2", "details": {}}
            for n in (CHAT_NAME, EMBED_NAME)
        ]
        return JSONResponse({"models": models})

    async def show(self, request: Request) -> Response:
        body = await request.json()
        if body.get("model") not in (CHAT_NAME, EMBED_NAME, EMBED_NAME.removesuffix(":latest")):
            return JSONResponse({"error": f"model '{body.get('model')}' not found"}, 404)
        info = {
            "general.architecture": "qwen2",
            "qwen2.context_length": 32768,
            "qwen2.embedding_length": 1536,
        }
        return JSONResponse({"modelfile": "", "details": {"format": "gguf"}, "model_info": info})

    async def version(self, _request: Request) -> Response:
        return JSONResponse({"version": "0.0.0-xllamacpp-compat"})

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


@contextmanager
def serving(compat: CompatServer, port: int = 0) -> Iterator[str]:
    """Serve ``compat`` on a loopback port in a thread; yields its host URL."""
    with uvicorn_thread(compat.app(), port or None, name="ollama-compat") as host:
        yield host


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("model", type=Path, nargs="?", default=model_path())
    parser.add_argument("--port", type=int, default=11435)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    if args.model is None:
        parser.error("no model: run scripts/fetch_test_model.sh first")
    compat = CompatServer(args.model, threads=args.threads)
    uvicorn.run(compat.app(), host="127.0.0.1", port=args.port, log_level="warning")


if __name__ == "__main__":
    main()
