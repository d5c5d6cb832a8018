"""Servers for tests, written once: the argv and environment of a `cranimem-mcp serve`
subprocess, a subprocess that is handed over only once it answers (and is always stopped),
an ASGI app served by uvicorn in a thread (the fake Ollama, the real-model server) or in the
test's own event loop (the owner's endpoint over an engine the test opened), and an
S3-compatible server in a thread (moto's), for the episodic table on object storage.

conftest.py re-exports the names tests use (``from conftest import free_port``) and builds
the ``server_process`` and ``http_server`` fixtures on :func:`answering`; the fake servers
import :func:`uvicorn_thread` from here, since they also run outside pytest."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager, nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import httpx

CLI = [sys.executable, "-m", "cranimem_mcp.cli"]
# Imports alone take tens of seconds on a busy 2-core machine: wait long, fail clearly.
READY_TIMEOUT = 180.0


def free_port() -> int:
    """A loopback port nobody listens on (now)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def server_env(home: Path, **extra: str) -> dict[str, str]:
    """The environment of a server subprocess: ours without CRANIMEM_* settings, offline."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("CRANIMEM_")}
    env.update(CRANIMEM_HOME=str(home), HF_HUB_OFFLINE="1", LANCE_LOG="error", **extra)
    return env


def serve_cmd(
    home: Path | None, *extra: str, transport: str | None = None, port: int | None = None
) -> list[str]:
    """argv of ``cranimem-mcp serve [extra] [--transport T] [--port P] [--data-dir home]``:
    stdio unless ``transport="http"``. Without ``home`` the data directory comes from the
    environment (CRANIMEM_HOME)."""
    argv = [*CLI, "serve", *extra]
    if transport is not None:
        argv += ["--transport", transport]
    if port is not None:
        argv += ["--port", str(port)]
    if home is not None:
        argv += ["--data-dir", str(home)]
    return argv


def http_server_cmd(home: Path, port: int, *extra: str) -> list[str]:
    """argv of `cranimem-mcp serve --transport http` on a loopback port, as a subprocess."""
    return serve_cmd(home, *extra, transport="http", port=port)


def stdio_params(home: Path | None, env: dict[str, str] | None = None, **kwargs: Any) -> Any:
    """``StdioServerParameters`` of `cranimem-mcp serve` over stdio, for ``mcp.Client``;
    ``env`` defaults to :func:`server_env` on ``home``."""
    from mcp.client.stdio import StdioServerParameters

    assert home is not None or env is not None, "a data directory, or an env that names one"
    argv = serve_cmd(home)
    return StdioServerParameters(
        command=argv[0], args=argv[1:], env=env if env is not None else server_env(home), **kwargs
    )


@dataclass
class Served:
    """A server subprocess. Its stdout and stderr go to files, never to pipes nobody reads:
    a chatty server (``-vv``) cannot block on a full pipe."""

    proc: subprocess.Popen[bytes]
    url: str | None
    _out: IO[bytes]
    _err: IO[bytes]
    _stopped: tuple[bytes, bytes] | None = field(default=None, repr=False)

    def output(self) -> tuple[bytes, bytes]:
        """(stdout, stderr) so far."""
        return _read(self._out), _read(self._err)

    def first_line(self, timeout: float = READY_TIMEOUT) -> str:
        """The first line the server prints on stdout, once it has printed it."""
        deadline = time.monotonic() + timeout
        while b"\n" not in (out := _read(self._out)):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise AssertionError(f"no line on stdout; stderr:\n{self.output()[1].decode()}")
            time.sleep(0.05)
        return out.split(b"\n", 1)[0].decode()

    def stop(self, timeout: float = 60) -> tuple[bytes, bytes]:
        """Terminate it (kill it if it will not go) and return its (stdout, stderr)."""
        if self._stopped is None:
            if self.proc.poll() is None:
                self.proc.terminate()
            try:
                self.proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:  # a loaded machine: do not leave it running
                self.proc.kill()
                self.proc.wait()
            self._stopped = self.output()
            self._out.close()
            self._err.close()
        return self._stopped


def _read(f: IO[bytes]) -> bytes:
    # pread, not seek + read: the child writes through the same file offset.
    chunks, at = [], 0
    while chunk := os.pread(f.fileno(), 1 << 16, at):
        chunks.append(chunk)
        at += len(chunk)
    return b"".join(chunks)


@contextmanager
def answering(
    argv: list[str],
    env: dict[str, str] | None = None,
    probe: str | None = None,
    timeout: float = READY_TIMEOUT,
) -> Iterator[Served]:
    """Start ``argv``; once an HTTP GET of ``probe`` gets any answer, yield the process
    (``probe=None``: yield at once). It is stopped on the way out, whatever happened. A
    server that exits or never answers fails the caller with its stderr."""
    out, err = tempfile.TemporaryFile(), tempfile.TemporaryFile()
    proc = subprocess.Popen(argv, env=env, stdin=subprocess.DEVNULL, stdout=out, stderr=err)
    served = Served(proc, probe, out, err)
    try:
        if probe is not None:
            wait_answering(served, probe, timeout)
        yield served
    finally:
        served.stop()


def wait_answering(served: Served, url: str, timeout: float = READY_TIMEOUT) -> None:
    """Until an HTTP GET of ``url`` gets any answer; a server that exits or never answers
    is stopped and fails the caller with its stderr."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            httpx.get(url, timeout=2)
            return
        except httpx.TransportError:
            if served.proc.poll() is not None or time.monotonic() > deadline:
                why = "exited" if served.proc.poll() is not None else f"no answer in {timeout} s"
                _out, err = served.stop()
                raise AssertionError(f"{url}: the server {why}:\n{err.decode()}") from None
            time.sleep(0.2)


@contextmanager
def uvicorn_thread(
    app: Any, port: int | None = None, name: str = "test-server", join: float = 30
) -> Iterator[str]:
    """Serve the ASGI ``app`` on a loopback port (a free one unless given) in a daemon
    thread; yields ``http://127.0.0.1:<port>`` once uvicorn listens, and stops it on exit."""
    import uvicorn

    port = port or free_port()
    config = uvicorn.Config(app, host="127.0.0.1", port=port, log_level="error", lifespan="off")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, name=name, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            server.should_exit = True
            raise RuntimeError(f"{name} did not start on port {port}")
        time.sleep(0.01)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(join)


@asynccontextmanager
async def uvicorn_task(app: Any) -> AsyncIterator[int]:
    """Serve the ASGI ``app`` (its lifespan run) on a free loopback port in this event loop,
    so it may call what the test opened in it; yields the port once uvicorn listens."""
    import anyio
    import uvicorn

    class Quiet(uvicorn.Server):
        def capture_signals(self) -> Any:  # the test runner keeps its signal handlers
            return nullcontext()

    # IPPROTO_TCP named: asyncio then sets TCP_NODELAY on its connections (see handle.py).
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.bind(("127.0.0.1", 0))
    sock.listen(16)
    server = Quiet(uvicorn.Config(app, log_level="error", lifespan="on"))
    with sock:
        async with anyio.create_task_group() as tg:
            tg.start_soon(server.serve, [sock])
            with anyio.fail_after(10):
                while not server.started:  # uvicorn has no event for it
                    await anyio.sleep(0.01)
            try:
                yield sock.getsockname()[1]
            finally:
                server.should_exit = True


@dataclass(frozen=True)
class S3Server:
    """An S3-compatible server on loopback (moto's, in this process): ``location(bucket)``
    makes the bucket and gives the episodic settings that put the table in it."""

    url: str

    def storage_options(self) -> dict[str, str]:
        """What LanceDB's object store needs to reach this server (docs/SCALING.md)."""
        return {
            "aws_endpoint": self.url,
            "aws_access_key_id": "test",
            "aws_secret_access_key": "test",
            "aws_region": "us-east-1",
            "allow_http": "true",
        }

    def location(self, bucket: str, prefix: str = "cranimem") -> dict[str, Any]:
        """The ``[episodic]`` settings of a table in a fresh ``bucket`` (made here)."""
        httpx.put(f"{self.url}/{bucket}", timeout=10).raise_for_status()
        return {"uri": f"s3://{bucket}/{prefix}", "storage_options": self.storage_options()}


@contextmanager
def s3_server(port: int = 0) -> Iterator[S3Server]:
    """moto's S3 server (``moto[server]``) in a thread of this process on a loopback port
    (a free one unless given). Requests are served one at a time: moto checks a conditional
    put (``If-None-Match: *``, what LanceDB's commits rely on) and then stores, so two commits
    served at once could both win, which real S3 never allows. In process rather than a
    subprocess: nothing to spawn, so the tests that use it run in the quick suite too.
    Replicas in processes of their own reach one in a process of its own: ``python
    tests/servers.py s3 [--port P]`` (:func:`main`)."""
    import logging

    from moto.moto_server.werkzeug_app import (
        DomainDispatcherApplication,
        MotoRequestHandler,
        create_backend_app,
    )
    from werkzeug.serving import make_server

    logging.getLogger("werkzeug").setLevel(logging.WARNING)  # one line per request otherwise
    app = DomainDispatcherApplication(create_backend_app)
    one_at_a_time = threading.Lock()

    def serialised(environ: dict[str, Any], start_response: Any) -> Any:
        with one_at_a_time:
            return list(app(environ, start_response))

    server = make_server(
        "127.0.0.1", port, serialised, threaded=True, request_handler=MotoRequestHandler
    )
    thread = threading.Thread(target=server.serve_forever, name="moto-s3", daemon=True)
    thread.start()
    try:
        yield S3Server(f"http://127.0.0.1:{server.server_port}")
    finally:
        server.shutdown()
        thread.join(30)


def main(argv: list[str] | None = None) -> None:
    """``python tests/servers.py s3 [--port P]``: moto's S3 server (:func:`s3_server`, one
    request at a time) in this process until it is terminated; prints its URL first."""
    import argparse
    import signal

    parser = argparse.ArgumentParser(prog="servers.py")
    parser.add_argument("server", choices=["s3"])
    parser.add_argument("--port", type=int, default=0)
    args = parser.parse_args(argv)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    with s3_server(args.port) as server:
        sys.stdout.write(server.url + "\n")
        sys.stdout.flush()
        try:
            stop.wait()
        except KeyboardInterrupt:
            pass


if __name__ == "__main__":
    main()
