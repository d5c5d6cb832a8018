"""The streamable HTTP transport: the MCP endpoint at ``/mcp`` and the inspector under
``/ui``, both behind :class:`~cranimem_mcp.server.auth.BearerAuth`.

A non-loopback address is refused unless remote access was allowed; on loopback (and
whenever remote access was not allowed) the Host and Origin headers must name this server
(DNS rebinding). The inspector calls the same memory service as the tools, so it works
whether this process owns the data directory or bridges to the process that does.
"""

from __future__ import annotations

import ipaddress
import logging
from collections.abc import Callable
from typing import Any

from mcp.server.mcpserver import MCPServer
from mcp.server.transport_security import TransportSecuritySettings

from cranimem_mcp.config import HTTP_KEEP_ALIVE_SECONDS, Settings
from cranimem_mcp.errors import ConfigError
from cranimem_mcp.server.auth import BearerAuth, resolve_token
from cranimem_mcp.service import MemoryService
from cranimem_mcp.ui.app import UI

logger = logging.getLogger(__name__)


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def http_app(
    settings: Settings, mcp: MCPServer, token: str, service: Callable[[], MemoryService]
) -> Any:
    """The ASGI app: ``mcp``'s endpoint and the inspector over ``service()`` (the service
    the MCP server's lifespan started)."""
    host, port = settings.server.host, settings.server.port
    if not is_loopback(host) and not settings.server.allow_remote:
        raise ConfigError(
            f"refusing to listen on non-loopback address {host} without --allow-remote"
        )
    hosts = [f"{h}:{port}" for h in ("127.0.0.1", "localhost", "[::1]")] + [f"{host}:{port}"]
    origins = [f"http://{h}" for h in hosts]
    security = TransportSecuritySettings(
        enable_dns_rebinding_protection=is_loopback(host) or not settings.server.allow_remote,
        allowed_hosts=hosts,
        allowed_origins=origins,
    )
    app = mcp.streamable_http_app(
        streamable_http_path="/mcp", transport_security=security, host=host
    )
    ui = UI(service, hosts if security.enable_dns_rebinding_protection else None, origins)
    app.router.routes.extend(ui.routes())
    return BearerAuth(app, token)


async def serve_http(
    settings: Settings, mcp: MCPServer, service: Callable[[], MemoryService]
) -> None:
    import uvicorn

    token, path = resolve_token(settings)
    app = http_app(settings, mcp, token, service)
    if path is not None:
        logger.info("HTTP bearer token is in %s", path)
    logger.info("listening on http://%s:%d/mcp", settings.server.host, settings.server.port)
    config = uvicorn.Config(
        app,
        host=settings.server.host,
        port=settings.server.port,
        log_level="warning",
        lifespan="on",
        timeout_keep_alive=HTTP_KEEP_ALIVE_SECONDS,
    )
    await uvicorn.Server(config).serve()
