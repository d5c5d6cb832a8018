"""Shared fixtures: real LanceDB and rdflib stores in temporary directories, and the real
MiniLM embedder (loaded once per session) wherever behaviour depends on meaning."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("LANCE_LOG", "error")

from cranimem_mcp.config import Settings, load_settings  # noqa: E402
from cranimem_mcp.embeddings import OnnxEmbedder  # noqa: E402
from cranimem_mcp.engine import MemoryEngine  # noqa: E402


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="session")
def minilm() -> OnnxEmbedder:
    """all-MiniLM-L6-v2, the paper's embedder, shared by every test of the session."""
    return OnnxEmbedder(threads=1)


def make_settings(home: Path, **sections: dict[str, Any]) -> Settings:
    """Settings for a test: defaults plus per-section overrides, e.g.
    ``make_settings(tmp_path, episodic={"capacity": 3})``."""
    base = load_settings(home=home)
    data = base.model_dump()
    for section, values in sections.items():
        if isinstance(values, dict):
            data[section].update(values)
        else:
            data[section] = values
    return Settings.model_validate(data)


@pytest.fixture
def open_engine(tmp_path: Path, minilm: OnnxEmbedder) -> Callable[..., Any]:
    """``async with open_engine(consolidation={...}) as engine:`` on a fresh data dir
    (``home=`` to reopen an existing one). Background consolidation is off unless asked."""

    @asynccontextmanager
    async def opener(
        home: Path | None = None, background: bool = False, **sections: dict[str, Any]
    ) -> AsyncIterator[MemoryEngine]:
        settings = make_settings(home or tmp_path / "data", **sections)
        async with MemoryEngine(settings, embedder=minilm, background=background) as engine:
            yield engine

    return opener


@asynccontextmanager
async def connected(open_engine: Callable[..., Any], **sections: dict[str, Any]):
    """``async with connected(open_engine) as (client, engine):`` a real MCP client on an
    in-process server over a fresh engine."""
    from mcp import Client

    from cranimem_mcp.server import build_server

    async with open_engine(**sections) as engine:
        server = build_server(engine.settings, engine=engine)
        async with Client(server, cache=None) as client:
            yield client, engine


def server_env(home: Path, **extra: str) -> dict[str, str]:
    """The environment of a server subprocess: ours without CRANIMEM_* settings, offline."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("CRANIMEM_")}
    env.update(CRANIMEM_HOME=str(home), HF_HUB_OFFLINE="1", LANCE_LOG="error", **extra)
    return env


def http_server_cmd(home: Path, port: int, *extra: str) -> list[str]:
    """argv of `cranimem-mcp serve --transport http` on a loopback port, as a subprocess."""
    return [sys.executable, "-m", "cranimem_mcp.cli", "serve", *extra, "--transport", "http",
            "--port", str(port), "--data-dir", str(home)]  # fmt: skip


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


TOKEN = "test-token-" + "x" * 24  # the bearer token of the `http_server` fixture


@pytest.fixture
def http_server(tmp_path: Path) -> Iterator[str]:
    """`cranimem-mcp serve --transport http` in a subprocess on ``tmp_path / "data"``, with
    bearer token :data:`TOKEN`; yields its /mcp URL once it answers. Checks at the end that
    nothing but protocol (here: nothing) went to stdout."""
    port = free_port()
    proc = subprocess.Popen(
        http_server_cmd(tmp_path / "data", port),
        env=server_env(tmp_path / "data", CRANIMEM_TOKEN=TOKEN),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    url = f"http://127.0.0.1:{port}/mcp"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            httpx.get(url, timeout=1)
            break
        except httpx.TransportError:
            if proc.poll() is not None:
                raise AssertionError(proc.stderr.read().decode()) from None
            time.sleep(0.2)
    yield url
    proc.terminate()
    out, _err = proc.communicate(timeout=30)
    assert out == b""
