"""``serve`` and ``ui``: the long-running commands. Builds the server with the command line's
overrides of the ``[server]`` settings, owns the directory first when it is the HTTP daemon,
and for ``ui`` prints the inspector's address (it carries the token) only once the inspector
answers. Imported by :mod:`.cli` only for these two commands: the server, uvicorn and httpx
stay out of every one-shot command."""

from __future__ import annotations

import argparse
import logging
from collections.abc import Callable
from typing import Any

import anyio

from cranimem_mcp.config import Settings, load_settings
from cranimem_mcp.errors import ConfigError

logger = logging.getLogger("cranimem_mcp")


async def serve(args: argparse.Namespace, show: Callable[[str], None]) -> None:
    """Run ``serve`` or ``ui``; ``show`` puts a line on the user's terminal (the inspector's
    address, which carries the token: never the log). Only the CLI writes to stdout."""
    from cranimem_mcp.sharing.preload import EmbedderPreload

    base = load_settings(args.config, home=args.data_dir)
    # The local embedder loads in a thread of its own once the handshake is done and this
    # process owns the directory, beside the engine's open (initialize never waits for it).
    preload = EmbedderPreload(base)
    try:
        await _run_server(args, base, preload, show)
    finally:
        await anyio.to_thread.run_sync(preload.join)


async def _run_server(
    args: argparse.Namespace, base: Settings, preload: Any, show: Callable[[str], None]
) -> None:
    from cranimem_mcp.server.tools import build_server, service_of

    server_overrides = {
        k: v
        for k, v in {
            "transport": "http" if args.command == "ui" else args.transport,
            "host": args.host,
            "port": args.port,
            "allow_remote": args.allow_remote,
        }.items()
        if v is not None
    }
    settings = base.model_copy(update={"server": base.server.model_copy(update=server_overrides)})
    if server_overrides:
        settings = Settings.model_validate(settings.model_dump())
    # The HTTP daemon must own the directory: fail now, not at the first tool call. The
    # inspector need not: it bridges to the owner (Claude Desktop's serve, say) if there is one.
    daemon = args.command == "serve" and settings.server.transport == "http"
    if daemon:
        from cranimem_mcp.sharing.handle import exclusive_directory

        async with exclusive_directory(settings):
            pass
    mcp = build_server(settings, preload=preload, require_owner=daemon)
    logger.info("data directory %s", settings.home)

    async def serve_http() -> None:
        from cranimem_mcp.server.http import serve_http  # the stdio server never needs it

        # The inspector calls the tools' own memory service (local or bridged).
        await serve_http(settings, mcp, lambda: service_of(mcp))

    if args.command == "ui":
        from cranimem_mcp.server.auth import resolve_token

        token, _path = resolve_token(settings)
        host = settings.server.host
        host = f"[{host}]" if ":" in host else host
        url = f"http://{host}:{settings.server.port}/ui?token={token}"

        # Another program on the port would accept our probe below: say so, print nothing.
        _check_port_free(settings.server.host, settings.server.port)

        async def announce() -> None:
            # Only once the inspector answers: the address is then one to open.
            await _until_serving(settings.server.host, settings.server.port, token)
            # The address carries the token: it goes to this terminal only, never to the log.
            show(f"cranimem inspector: {url}")
            if args.open:
                import webbrowser

                webbrowser.open(url)

        try:
            async with anyio.create_task_group() as tg:
                tg.start_soon(announce)
                await serve_http()
                tg.cancel_scope.cancel()  # the server stopped: stop waiting for it
        except BaseExceptionGroup as group:
            # announce() raises nothing of its own: what failed is the server; surface it as
            # it was (a SystemExit from uvicorn, a CranimemError), not wrapped in a group.
            raise group.exceptions[0] from None
    elif settings.server.transport == "http":
        await serve_http()
    else:
        await mcp.run_stdio_async()


def _check_port_free(host: str, port: int) -> None:
    import socket

    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn binds
        try:
            probe.bind((host, port))
        except OSError as exc:
            raise ConfigError(
                f"cannot listen on {host}:{port}: {exc.strerror} (choose another with --port)"
            ) from exc


async def _until_serving(host: str, port: int, token: str) -> None:
    """Return once the inspector at ``host:port`` answers with the engine open: uvicorn accepts
    connections first, and the UI answers 503 until the engine's stores are open."""
    import httpx

    if port == 0:  # an ephemeral port we cannot name: nothing to wait for
        return
    # A wildcard address is reached through the loopback of its family.
    target = {"0.0.0.0": "127.0.0.1", "": "127.0.0.1", "::": "::1"}.get(host, host)
    target = f"[{target}]" if ":" in target else target
    url = f"http://{target}:{port}/ui/api/stats"
    # Say why nothing is printed if it takes much longer than an engine's open (~5 s).
    patience = anyio.current_time() + 60
    bearer = {"Authorization": f"Bearer {token}"}
    async with httpx.AsyncClient(headers=bearer, trust_env=False) as http:  # no proxy: loopback
        while True:
            try:
                answer = await http.get(url, timeout=10)
                if answer.status_code != 503:
                    return
                why = answer.text[:200]
            except httpx.TransportError as exc:
                why = f"not listening yet ({exc!r})"
            if patience and anyio.current_time() > patience:
                logger.warning("the inspector does not answer yet: %s", why)
                patience = 0.0
            await anyio.sleep(0.1)
