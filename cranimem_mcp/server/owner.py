"""The owner's endpoint for bridges: every operation of the memory service as an MCP tool, on
loopback, behind the data directory's token.

The process that owns a data directory serves the other processes of the same user (stdio
bridges, one-shot commands) over MCP, the protocol it speaks to its clients: the SDK's
streamable HTTP app (:meth:`MCPServer.streamable_http_app`, JSON answers, no sessions) behind
:class:`~cranimem_mcp.server.auth.BearerAuth` with ``<home>/owner-token``. Its tools are not
the public ones: they are made here from :class:`~cranimem_mcp.service.MemoryService`, one per
operation of :data:`~cranimem_mcp.service.OPERATIONS`, with the Protocol's signature (its
defaults, e.g. ``k=None`` for the settings' value, not a tool's default for a model) and its
return type as the output schema. So the inspection queries, ``stats`` and ``graph_turtle``
reach the owner like the rest, the public ``tools/list`` stays as it is, and an operation is
added to the Protocol and the engine, nowhere here. The engine checks the arguments, as for a
local caller; a :class:`~cranimem_mcp.errors.CranimemError` crosses as a JSON-RPC error that
names its class (:data:`~cranimem_mcp.sharing.ownership.OPERATION_ERROR`), which the bridge
raises again (:class:`~cranimem_mcp.sharing.remote.RemoteEngine`).
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable
from typing import Any

from mcp.server.mcpserver import MCPServer
from mcp.shared.exceptions import MCPError

from cranimem_mcp.errors import CranimemError
from cranimem_mcp.server.auth import BearerAuth
from cranimem_mcp.service import LOCAL_ONLY, OPERATIONS, MemoryService
from cranimem_mcp.sharing.ownership import ENDPOINT, OPERATION_ERROR

GetService = Callable[[], Awaitable[MemoryService]]


def owner_app(service: GetService, token: str) -> Any:
    """The ASGI app bridges call: ``/mcp`` with every operation as a tool, bearer-only.
    ``service`` waits until the engine is open."""
    mcp = MCPServer("cranimem-owner")
    for name in OPERATIONS:
        mcp.add_tool(_operation(name, service), name=name, structured_output=True)
    app = mcp.streamable_http_app(
        streamable_http_path=ENDPOINT, json_response=True, stateless_http=True, host="127.0.0.1"
    )
    return BearerAuth(app, token)


def _operation(name: str, service: GetService) -> Callable[..., Awaitable[Any]]:
    """The tool for operation ``name``: the Protocol's parameters (but ``self`` and what cannot
    cross a process, :data:`~cranimem_mcp.service.LOCAL_ONLY`) and return type."""
    protocol = inspect.signature(getattr(MemoryService, name), eval_str=True)
    # Typed Any: the engine checks the values, once, as for a local caller (the SDK would
    # answer a wrong type with its own error, not the engine's InvalidInput).
    params = [
        p.replace(annotation=Any)
        for p in list(protocol.parameters.values())[1:]
        if p.name not in LOCAL_ONLY
    ]

    async def operation(**arguments: Any) -> Any:
        try:
            return await getattr(await service(), name)(**arguments)
        except CranimemError as exc:
            data = {"type": type(exc).__name__}
            raise MCPError(code=OPERATION_ERROR, message=str(exc), data=data) from exc

    operation.__name__ = operation.__qualname__ = name
    operation.__doc__ = getattr(MemoryService, name).__doc__
    operation.__signature__ = protocol.replace(parameters=params)  # type: ignore[attr-defined]
    return operation
