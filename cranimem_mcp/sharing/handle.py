"""Sharing one data directory between processes: never two writers.

:class:`EngineHandle` is what the faces (MCP tools, CLI, inspector) talk to: a
:class:`~cranimem_mcp.service.MemoryService` whose operations go to the engine that is
current, local or remote. On start it tries to become the directory's owner
(:mod:`.ownership`): the owner opens the stores, and serves the engine's operations to other
processes over MCP on a loopback port (the endpoint is handed in: the MCP layer's
:func:`~cranimem_mcp.server.owner.owner_app`). A process that finds the directory owned
becomes a *bridge*: its calls go to the owner through the SDK's client (:mod:`.remote`).
When the owner exits, the kernel frees its lock and a bridge takes over (it watches the
lock); if no owner appears and the lock stays held (a long one-shot command, say) for
``server.owner_wait_seconds``, calls fail with a message that says who holds the directory.

Opening happens in the background, so the MCP handshake never waits on it: the heavy
imports (LanceDB; :func:`_engine_half`) run in a worker thread and tools wait on
:meth:`EngineHandle.get`. The local embedder loads in a thread of its own
(:class:`EmbedderPreload`), started by ``serve``'s handle as the open begins and in parallel
with it; a bridge never starts it.

A request the owner may have applied before it died is not repeated (a write could count
twice); the caller gets a clear error. Reads, and requests that never reached the owner,
are repeated on the next owner.
"""

from __future__ import annotations

import logging
import os
import socket
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AsyncExitStack, asynccontextmanager, nullcontext
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import anyio

from cranimem_mcp.config import HTTP_KEEP_ALIVE_SECONDS, Settings
from cranimem_mcp.errors import ConfigError, CranimemError, StoreError
from cranimem_mcp.service import READ_ONLY, MemoryService, forwarding
from cranimem_mcp.sharing.ownership import (
    DirectoryLock,
    OwnerGone,
    owner_token,
    read_owner_info,
    write_owner_info,
)
from cranimem_mcp.sharing.preload import EmbedderPreload

if TYPE_CHECKING:
    from cranimem_mcp.engine import MemoryEngine

logger = logging.getLogger(__name__)

POLL = 0.2  # seconds between looks at the lock while waiting for an owner
GRACE = 0.5  # seconds the open waits after start unless a call needs the engine sooner


@asynccontextmanager
async def open_local(
    settings: Settings, background: bool = True, local: Any = None
) -> AsyncIterator[MemoryEngine]:
    """Select the model providers and open a :class:`MemoryEngine` (the caller owns the
    directory). ``local``: the local embedder to use if the choice is local (preloaded)."""
    memory_engine, select_providers = await anyio.to_thread.run_sync(_engine_half)
    async with (
        await select_providers(settings, local=local) as providers,
        memory_engine(
            settings,
            embedder=providers.embedder,
            tagger=providers.tagger,
            extractor=providers.extractor,
            model_notes=providers.reasons,
            background=background,
        ) as engine,
    ):
        yield engine


def _engine_half() -> tuple[type[MemoryEngine], Any]:
    """The owner's half, imported only by a process that opens the stores (a bridge never
    does), and in a worker thread: ``import lancedb`` is seconds of CPU, which the event loop
    (answering the MCP handshake meanwhile) must not wait for."""
    from cranimem_mcp.engine import MemoryEngine
    from cranimem_mcp.providers import select_providers

    return MemoryEngine, select_providers


def _open_error(exc: BaseException, home: Path) -> CranimemError:
    """What a call reads when the directory cannot be served: the store's own error, taken out
    of the task group that wraps it (a group would reach the model as a bare crash), else a
    ``StoreError`` that names the directory and the system's reason (a full disk, a file
    where the directory should be)."""
    leaves = _leaves(exc)
    ours = next((e for e in leaves if isinstance(e, CranimemError)), None)
    if ours is not None:
        return ours
    leaf = leaves[0]
    if isinstance(leaf, OSError) and leaf.strerror:
        why = leaf.strerror + (f": {leaf.filename}" if leaf.filename else "")
    else:
        why = str(leaf) or type(leaf).__name__
    error = StoreError(f"cannot open the memory store in {home}: {why}")
    error.__cause__ = leaf
    return error


def _leaves(exc: BaseException) -> list[BaseException]:
    if isinstance(exc, BaseExceptionGroup):
        return [leaf for inner in exc.exceptions for leaf in _leaves(inner)]
    return [exc]


def _quiet_server_class() -> Any:
    """uvicorn's server, quiet (imported as :func:`_engine_half`, by an owner that serves
    bridges)."""
    import uvicorn

    class QuietServer(uvicorn.Server):
        """uvicorn without its signal handlers: the process's own exit path stays in charge."""

        def capture_signals(self) -> Any:  # type: ignore[override]
            return nullcontext()

    return QuietServer


# What an owner serves bridges: an ASGI app over the service (a call waits for the open) that
# accepts the directory's token.
BridgeEndpoint = Callable[[Callable[[], Awaitable[MemoryService]], str], Any]


@forwarding
class EngineHandle:
    """The engine of a data directory, local (owner) or remote (bridge), behind one API: the
    operations of :class:`MemoryService`, each one :meth:`call`.

    ``async with EngineHandle(settings) as handle`` returns at once; the first tool call
    waits for the open. ``require_owner``: refuse to bridge (the HTTP daemon). ``bridges``:
    the endpoint an owner serves other processes with (None: it serves none). ``preload``:
    ``serve``'s :class:`EmbedderPreload`, started if this process becomes the owner."""

    def __init__(
        self,
        settings: Settings,
        *,
        require_owner: bool = False,
        bridges: BridgeEndpoint | None = None,
        background: bool = True,
        preload: EmbedderPreload | None = None,
    ) -> None:
        self.settings = settings
        self.home = settings.home
        self.require_owner = require_owner
        self.bridges = bridges
        self.background = background
        self._preload = preload
        self.role = "starting"  # "owner" | "bridge"
        self.local: MemoryEngine | None = None  # while this process owns the directory
        self._current: MemoryService | None = None
        self._ready = anyio.Event()
        self._lost = anyio.Event()
        self._error: BaseException | None = None
        self._lock = DirectoryLock(self.home)
        self._stack: AsyncExitStack | None = None
        self._closing = anyio.Event()
        self._wanted = anyio.Event()
        self._done = anyio.Event()
        self._tg: Any = None
        self.takeovers = 0

    @property
    def service(self) -> MemoryService:
        """This handle as what it is: a :class:`MemoryService` (its operations are made from
        the Protocol by :func:`forwarding`, so a type checker needs to be told, once, here)."""
        return cast(MemoryService, self)

    @classmethod
    def of(cls, engine: MemoryEngine) -> EngineHandle:
        """A handle over an engine opened elsewhere (tests, the CLI)."""
        handle = cls(engine.settings)
        handle.role, handle.local, handle._current = "owner", engine, engine
        handle._ready.set()
        return handle

    async def __aenter__(self) -> EngineHandle:
        async with AsyncExitStack() as stack:
            self._tg = await stack.enter_async_context(anyio.create_task_group())
            stack.callback(self._lock.release)
            self._tg.start_soon(self._run)
            self._stack = stack.pop_all()
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._stack is not None
        self._closing.set()
        if self.role == "owner":
            with anyio.move_on_after(60):  # an open in progress finishes, then closes
                await self._done.wait()
        self._tg.cancel_scope.cancel()
        await self._stack.__aexit__(None, None, None)

    # --- the engine, when ready ------------------------------------------------------------

    async def get(self) -> MemoryService:
        """The current engine; waits for the open (or the takeover) to finish."""
        self._wanted.set()
        while True:
            if self._current is not None:
                return self._current
            if self._error is not None:
                raise self._error
            await self._ready.wait()

    async def call(self, method: str, /, **params: Any) -> Any:
        """One operation on the current engine (local or bridged); a read the owner may have
        got before it died is repeated on the next owner, a write is not."""
        for _attempt in range(3):
            engine = await self.get()
            try:
                return await getattr(engine, method)(**params)
            except OwnerGone as exc:
                self._owner_lost(engine)
                if exc.sent and method not in READ_ONLY:
                    raise StoreError(
                        f"the process that owned {self.home} exited during this {method}; it "
                        "may or may not have been applied. This process is taking over: "
                        "check (e.g. with recall) and retry."
                    ) from exc
                logger.info("owner gone during %s; retrying on the next owner", method)
        raise StoreError(f"no owner of {self.home} answered {method} after a takeover")

    def _owner_lost(self, engine: MemoryService) -> None:
        if self._current is engine and self.role == "bridge":
            self._current = None
            self._ready = anyio.Event()
            self._lost.set()

    # --- lifecycle -------------------------------------------------------------------------

    async def _run(self) -> None:
        # Let the handshake go first: clients send initialize as soon as they spawn us, and
        # the open (imports in a worker thread still take the GIL) would slow its answer.
        # The first call that needs the engine ends the wait at once.
        with anyio.move_on_after(GRACE):
            await self._wanted.wait()
        try:
            await self._serve()
        finally:
            self._done.set()

    async def _serve(self) -> None:
        while not self._closing.is_set():
            try:
                if await self._claim():
                    await self._own()
                else:
                    await self._bridge()
            except anyio.get_cancelled_exc_class():
                raise
            except Exception as exc:
                error = _open_error(exc, self.home)
                logger.error("%s", error)
                self._error = error
                self._ready.set()
                if isinstance(error, ConfigError):
                    return
                await anyio.sleep(1.0)
                self._error = None
                self._ready = anyio.Event()

    async def _claim(self) -> bool:
        """True once this process owns the directory; False once an owner answers. Raises
        after ``owner_wait_seconds`` of neither."""
        wait = self.settings.server.owner_wait_seconds
        deadline = time.monotonic() + wait
        token = await anyio.to_thread.run_sync(owner_token, self.home)
        while True:
            if await anyio.to_thread.run_sync(self._lock.try_acquire):
                return True
            if self.require_owner:
                raise ConfigError(self._held_message("refusing to be a second writer"))
            info = read_owner_info(self.home)
            if info is not None and info.pid != os.getpid():
                # Imported only here: an owner never needs the client.
                from cranimem_mcp.sharing.remote import RemoteEngine

                remote = RemoteEngine(info.port, token)
                try:
                    await remote.connect()  # lists the owner's tools: the port and token hold
                except StoreError:
                    await remote.aclose()
                except BaseException:
                    with anyio.CancelScope(shield=True):
                        await remote.aclose()
                    raise
                else:
                    self._install(cast(MemoryService, remote), "bridge")
                    logger.info("bridging to the owner of %s (pid %d)", self.home, info.pid)
                    return False
            if time.monotonic() > deadline:
                why = f"no owner answered within {wait:.0f} s (server.owner_wait_seconds)"
                raise StoreError(self._held_message(why))
            await anyio.sleep(POLL)

    def _held_message(self, what: str) -> str:
        pid = self._lock.holder_pid()
        return (
            f"the data directory {self.home} is in use by another cranimem-mcp process"
            f"{f' (pid {pid})' if pid else ''}: {what}"
        )

    def _install(self, engine: MemoryService, role: str) -> None:
        if role == "bridge":
            self._preload = None  # the owner embeds; a takeover loads its own
        self.role, self._current, self._error = role, engine, None
        self._lost = anyio.Event()
        self._ready.set()

    async def _own(self) -> None:
        if self.takeovers:
            logger.warning("took over ownership of %s", self.home)
        self.role = "owner"
        preload, self._preload = self._preload, None
        if preload is not None:
            preload.start()  # loads beside the open below
        async with anyio.create_task_group() as tg:
            # Listen first: bridges that start meanwhile connect now and wait for the open.
            server = await self._listen(tg, self.bridges) if self.bridges else None
            try:
                # Closed by the event, not by cancellation: the engine then shuts down in
                # order (background work stopped, graph compacted), as outside a server.
                local = await preload.take() if preload is not None else None
                async with open_local(self.settings, self.background, local) as engine:
                    self.local = engine
                    self._install(engine, "owner")
                    try:
                        await self._closing.wait()
                    finally:
                        self.local = self._current = None
            finally:
                if server is not None:
                    # uvicorn must shut down by itself (cancelled, it leaves its listener
                    # half-closed and the event loop spinning); requests in flight get 5 s.
                    server.should_exit = True
                    with anyio.CancelScope(shield=True), anyio.move_on_after(5):
                        await server.stopped.wait()
                tg.cancel_scope.cancel()

    async def _listen(self, tg: Any, endpoint: BridgeEndpoint) -> Any:
        """Serve the engine to bridges on a loopback port, recorded in owner.json."""
        quiet_server = await anyio.to_thread.run_sync(_quiet_server_class)
        import uvicorn

        token = owner_token(self.home)
        app = await anyio.to_thread.run_sync(endpoint, self.get, token)  # ~40 ms of models
        # IPPROTO_TCP named, not left 0: asyncio sets TCP_NODELAY only on connections of a
        # socket that says it is TCP. Without it each answer waited for the bridge's delayed
        # ACK (Nagle): a round trip on loopback took ~44 ms instead of ~3 ms.
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("127.0.0.1", 0))
        sock.listen(64)
        port = sock.getsockname()[1]
        config = uvicorn.Config(
            app,
            log_level="warning",
            lifespan="on",  # the MCP app's session manager runs in it
            access_log=False,
            timeout_keep_alive=HTTP_KEEP_ALIVE_SECONDS,
        )
        server = quiet_server(config)

        server.stopped = anyio.Event()

        async def serve() -> None:
            try:
                await server.serve([sock])
            finally:
                sock.close()
                server.stopped.set()

        tg.start_soon(serve)
        await anyio.to_thread.run_sync(write_owner_info, self.home, port)
        logger.info("serving bridges on 127.0.0.1:%d", port)
        return server

    async def _bridge(self) -> None:
        """Serve through the owner until it is gone: then try again to own."""
        remote: Any = self._current  # the RemoteEngine _claim connected
        try:
            async with anyio.create_task_group() as tg:

                async def watch() -> None:
                    # The kernel frees the lock when the owner dies: take over at once.
                    while True:
                        await anyio.sleep(POLL * 5)
                        if await anyio.to_thread.run_sync(self._lock.try_acquire):
                            self._owner_lost(remote)
                            tg.cancel_scope.cancel()
                            return

                tg.start_soon(watch)
                await self._lost.wait()
                tg.cancel_scope.cancel()
        finally:
            self.takeovers += 1
            if self._current is remote:
                self._current = None
                self._ready = anyio.Event()
            await remote.aclose()


@asynccontextmanager
async def shared_engine(settings: Settings) -> AsyncIterator[MemoryService]:
    """The memory service for a one-shot command: the local engine while this process holds
    the directory (no bridges served, no background work), else the owner's, bridged."""
    # As in serve: if this process opens the stores, the model loads beside the open (its
    # session build is native code, mostly off the GIL) instead of after it; and the parser
    # beside both, since the command waits for all three.
    preload = EmbedderPreload(settings, parser_beside=True)
    handle = EngineHandle(settings, background=False, preload=preload)
    try:
        async with handle:
            await handle.get()
            yield handle.service
    finally:
        await anyio.to_thread.run_sync(preload.join)


@asynccontextmanager
async def exclusive_directory(settings: Settings) -> AsyncIterator[DirectoryLock]:
    """Hold the directory's lock for a command that opens the stores itself (reembed,
    import); an owned directory is an error that names the owner."""
    lock = DirectoryLock(settings.home)
    if not lock.try_acquire():
        pid = lock.holder_pid()
        raise ConfigError(
            f"the data directory {settings.home} is in use by another cranimem-mcp process"
            f"{f' (pid {pid})' if pid else ''}: stop it first"
        )
    try:
        yield lock
    finally:
        lock.release()
