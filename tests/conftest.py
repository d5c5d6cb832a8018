"""Shared fixtures: real LanceDB and rdflib stores in temporary directories, and the real
MiniLM embedder (loaded once per session) wherever behaviour depends on meaning; a real MCP
client on an in-process server (``connected``); server subprocesses (``server_process``,
``http_server``, built on servers.py); and the ``slow`` marker's guard (see the end)."""

from __future__ import annotations

import os
import sys
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import ExitStack, asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("LANCE_LOG", "error")

# The server helpers live in servers.py (the fake servers use them outside pytest too);
# tests import them from here.
from servers import (  # noqa: E402, F401
    CLI,
    S3Server,
    Served,
    answering,
    free_port,
    http_server_cmd,
    s3_server,
    serve_cmd,
    server_env,
    stdio_params,
    uvicorn_task,
    uvicorn_thread,
)

from cranimem_mcp.backends.embeddings import OnnxEmbedder  # noqa: E402
from cranimem_mcp.config import Settings, load_settings  # noqa: E402
from cranimem_mcp.engine import MemoryEngine  # noqa: E402


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="session")
def minilm() -> OnnxEmbedder:
    """all-MiniLM-L6-v2, the paper's embedder, shared by every test of the session."""
    return OnnxEmbedder(threads=1)


@pytest.fixture(scope="session")
def s3() -> Iterator[S3Server]:
    """An S3-compatible server on loopback (moto's, in this process), one per session; each
    test takes a bucket of its own (:meth:`S3Server.location`). Skips the test without moto
    (the dev extra's ``moto[server]``)."""
    pytest.importorskip("moto", reason="moto[server] (the dev extra) serves S3 on loopback")
    with s3_server() as server:
        yield server


_BUCKETS = iter(range(1, 1_000_000))


@pytest.fixture
def episodic_location(request: pytest.FixtureRequest) -> dict[str, Any]:
    """Where the episodic table lives: ``{}`` (under the data directory), or, for a test
    marked ``object_store`` in its "s3" run, the ``[episodic]`` settings of a fresh bucket
    on the :func:`s3` server. ``open_engine`` uses it."""
    if getattr(request, "param", "local") == "local":
        return {}
    server = request.getfixturevalue("s3")
    return server.location(f"bucket-{next(_BUCKETS)}")


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """A test marked ``object_store`` runs twice: on a local table and on S3 (moto). The S3
    run is slow (every table operation is several HTTP requests to a server in Python):
    ``scripts/test`` runs it, ``--quick`` keeps to the local one."""
    if metafunc.definition.get_closest_marker("object_store") is not None:
        if "episodic_location" in metafunc.fixturenames:
            s3 = pytest.param("s3", marks=pytest.mark.slow)
            metafunc.parametrize("episodic_location", ["local", s3], indirect=True)


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
def open_engine(
    tmp_path: Path, minilm: OnnxEmbedder, episodic_location: dict[str, Any]
) -> Callable[..., Any]:
    """``async with open_engine(consolidation={...}) as engine:`` on a fresh data dir
    (``home=`` to reopen an existing one). Background consolidation is off unless asked.
    The episodic table is where ``episodic_location`` says (on S3 in the "s3" run of a test
    marked ``object_store``)."""

    @asynccontextmanager
    async def opener(
        home: Path | None = None, background: bool = False, **sections: dict[str, Any]
    ) -> AsyncIterator[MemoryEngine]:
        if episodic_location:
            sections["episodic"] = {**episodic_location, **sections.get("episodic", {})}
        settings = make_settings(home or tmp_path / "data", **sections)
        async with MemoryEngine(settings, embedder=minilm, background=background) as engine:
            yield engine

    return opener


@asynccontextmanager
async def connected(open_engine: Callable[..., Any], **sections: dict[str, Any]):
    """``async with connected(open_engine) as (client, engine):`` a real MCP client on an
    in-process server over a fresh engine."""
    from mcp import Client

    from cranimem_mcp.server.tools import build_server

    async with open_engine(**sections) as engine:
        server = build_server(engine.settings, engine=engine)
        async with Client(server, cache=None) as client:
            yield client, engine


@asynccontextmanager
async def bridged(engine: MemoryEngine, token: str = "t" * 32):
    """``async with bridged(engine) as remote:`` the bridge's client (a connected
    ``RemoteEngine``) on the owner's MCP endpoint over ``engine``, served on loopback."""
    from cranimem_mcp.server.owner import owner_app
    from cranimem_mcp.sharing.remote import RemoteEngine

    async def service() -> MemoryEngine:
        return engine

    async with uvicorn_task(owner_app(service, token)) as port:
        remote = RemoteEngine(port, token)
        try:
            await remote.connect()
            yield remote
        finally:
            await remote.aclose()


TOKEN = "test-token-" + "x" * 24  # the bearer token of the `http_server` fixture


@pytest.fixture
def server_process() -> Iterator[Callable[..., Served]]:
    """``server_process(argv, env=..., probe=url)``: a subprocess handed over once an HTTP GET
    of ``probe`` answers (:func:`servers.answering`), stopped at teardown. A test using it
    starts a subprocess, so it is marked ``slow``."""
    with ExitStack() as stack:
        yield lambda *args, **kwargs: stack.enter_context(answering(*args, **kwargs))


@pytest.fixture
def http_server(tmp_path: Path, server_process: Callable[..., Served]) -> Iterator[str]:
    """`cranimem-mcp serve --transport http` in a subprocess on ``tmp_path / "data"``, with
    bearer token :data:`TOKEN`; yields its /mcp URL once it answers. Checks at the end that
    nothing but protocol (here: nothing) went to stdout."""
    home, port = tmp_path / "data", free_port()
    url = f"http://127.0.0.1:{port}/mcp"
    served = server_process(
        http_server_cmd(home, port), env=server_env(home, CRANIMEM_TOKEN=TOKEN), probe=url
    )
    yield url
    out, _err = served.stop()
    assert out == b""


# --- slow tests ------------------------------------------------------------------------------
# `scripts/test --quick` runs `-m "not slow"`. A test that starts a subprocess is slow (a
# Python server process alone spends seconds importing on a busy machine), and so is a test
# against a real model. The audit hook below fails an unmarked test that starts a subprocess,
# so the quick run cannot quietly grow one.

_launched: list[str] = []
_watching = False  # True during the setup and call of a test not marked slow
# What libraries run on their own to find a shared library (ctypes.util.find_library runs
# `ldconfig -p`, then gcc or ld) or the platform: not a test's subprocess.
_PROBES = {"ldconfig", "gcc", "cc", "ld", "objdump", "uname", "file"}


def _audit(event: str, args: tuple[Any, ...]) -> None:
    if _watching and event == "subprocess.Popen":
        executable, argv = args[0], list(args[1] or [])
        program = os.path.basename(str(argv[0] if argv else executable))
        if program not in _PROBES:
            _launched.append(" ".join(map(str, argv)) if argv else str(executable))


sys.addaudithook(_audit)


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:  # before -m deselects: a real model's tests are slow
        if item.get_closest_marker("llm"):
            item.add_marker(pytest.mark.slow)


@contextmanager
def _no_subprocess_unless_slow(item: pytest.Item) -> Iterator[None]:
    global _watching
    if item.get_closest_marker("slow"):
        yield
        return
    _launched.clear()
    _watching = True
    try:
        yield
    finally:
        _watching = False
    if _launched:
        pytest.fail(
            f"{item.nodeid} starts a subprocess ({_launched[0][:200]}): mark it "
            "@pytest.mark.slow, or `scripts/test --quick` is not quick",
            pytrace=False,
        )


@pytest.hookimpl(wrapper=True)
def pytest_runtest_setup(item: pytest.Item) -> Any:
    with _no_subprocess_unless_slow(item):
        return (yield)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Any:
    with _no_subprocess_unless_slow(item):
        return (yield)
