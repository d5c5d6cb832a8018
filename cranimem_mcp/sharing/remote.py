"""The bridge's client: the owner's memory operations, over MCP.

A process that finds its data directory owned sends each operation to the owner's loopback
endpoint (:mod:`cranimem_mcp.server.owner`: one MCP tool per operation of
:class:`~cranimem_mcp.service.MemoryService`, bearer token ``owner-token``) with the SDK's
client over streamable HTTP, one ``tools/call`` per operation (protocol 2026-07-28: no
handshake, no session). :class:`RemoteEngine` has every operation of the Protocol, made from
it (:func:`~cranimem_mcp.service.forwarding`), each one :meth:`RemoteEngine.call`; a result
is decoded from the call's structured content as the operation's return annotation says, so
the faces get the same pydantic models as from a local engine.

A failure to reach the owner is :class:`~.ownership.OwnerGone`, which says whether the
request may have been applied (``sent``): refused connections and a refused token were not;
a connection that broke after the request went out may have been. An error the owner's
engine raised is raised again here as its own class (``InvalidInput`` stays
``InvalidInput``).
"""

from __future__ import annotations

import logging
from contextlib import AsyncExitStack
from typing import Any

import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from pydantic import BaseModel
from pydantic_core import to_jsonable_python

from cranimem_mcp import errors
from cranimem_mcp.errors import CranimemError, StoreError
from cranimem_mcp.service import forwarding, result_adapter, returns
from cranimem_mcp.sharing.ownership import ENDPOINT, OPERATION_ERROR, OwnerGone

logger = logging.getLogger(__name__)

PROTOCOL = "2026-07-28"  # one self-contained POST per call: nothing to negotiate on loopback
OWNER_GONE = -32002  # stands for a transport failure, made here (never sent by the owner)
_FRAMING = {"content-length", "content-encoding", "transfer-encoding"}


class _Delivery(httpx2.AsyncBaseTransport):
    """Loopback HTTP that says what went wrong on the way to the owner: a refused connection
    or token, or a broken one, becomes a JSON-RPC error (:data:`OWNER_GONE`, ``data.sent``)
    that the MCP client hands back to the caller, instead of an exception in its transport's
    task group. The answer is read whole here, so a connection that breaks mid-answer is
    caught too."""

    def __init__(self, port: int) -> None:
        self.port = port
        # Plain HTTP on loopback: no TLS, so no verifying SSL context (its CA bundle costs
        # ~0.08 s of a one-shot command's start).
        self._inner = httpx2.AsyncHTTPTransport(verify=False)

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        try:
            response = await self._inner.handle_async_request(request)
            if response.status_code == 401:
                await response.aclose()
                return self._gone(f"port {self.port} refused the directory's token", sent=False)
            body = await response.aread()
        except (httpx2.ConnectError, httpx2.ConnectTimeout):
            return self._gone(f"the owner on port {self.port} does not answer", sent=False)
        except httpx2.TransportError as exc:
            return self._gone(f"the owner on port {self.port} went away: {exc}", sent=True)
        # ``body`` is decoded: the copy keeps the headers that do not describe the encoding.
        headers = [(k, v) for k, v in response.headers.items() if k.lower() not in _FRAMING]
        return httpx2.Response(response.status_code, headers=headers, content=body)

    def _gone(self, message: str, *, sent: bool) -> httpx2.Response:
        error = {"code": OWNER_GONE, "message": message, "data": {"sent": sent}}
        return httpx2.Response(502, json={"jsonrpc": "2.0", "id": None, "error": error})

    async def aclose(self) -> None:
        await self._inner.aclose()


@forwarding
class RemoteEngine:
    """The memory operations of the process that owns the data directory, over MCP. Open
    with :meth:`connect` and close with :meth:`aclose`, in the same task."""

    def __init__(self, port: int, token: str, timeout: float = 600.0) -> None:
        self.port = port
        self._token = token
        self._timeout = timeout
        self._stack = AsyncExitStack()
        self._client: Client | None = None

    async def connect(self) -> None:
        """Open the client and list the owner's tools (which checks the port and the token,
        and gives the client the output schemas it checks results against)."""
        http = httpx2.AsyncClient(
            transport=_Delivery(self.port),
            headers={"Authorization": f"Bearer {self._token}"},
            timeout=httpx2.Timeout(self._timeout, connect=5.0),
        )
        await self._stack.enter_async_context(http)
        url = f"http://127.0.0.1:{self.port}{ENDPOINT}"
        transport = streamable_http_client(url, http_client=http, terminate_on_close=False)
        client = Client(transport, mode=PROTOCOL, cache=None)
        self._client = await self._stack.enter_async_context(client)
        try:
            await self._client.list_tools()
        except MCPError as exc:
            raise _error(exc) from exc

    async def aclose(self) -> None:
        await self._stack.aclose()

    async def call(self, name: str, /, **params: Any) -> Any:
        """One operation on the owner. A ``progress`` callback hears one step, when the
        owner's answer arrives: the owner's own steps do not cross."""
        assert self._client is not None, "connect() first"
        # What cannot cross a process (LOCAL_ONLY: the progress callback) stays here.
        progress = params.pop("progress", None)
        try:
            result = await self._client.call_tool(name, to_jsonable_python(params))
        except MCPError as exc:
            raise _error(exc) from exc
        if result.is_error:  # the owner's tools raise MCP errors: this is the SDK's own
            text = " ".join(getattr(c, "text", "") for c in result.content)
            raise StoreError(f"the owner failed {name}: {text}")
        data = result.structured_content or {}
        kind = returns(name)
        if not (isinstance(kind, type) and issubclass(kind, BaseModel)):
            data = data.get("result")  # a list or a string: the SDK wraps it in an object
        if progress is not None:
            await progress(1, 1, "done by the process that owns the data directory")
        return result_adapter(name).validate_python(data)


def _error(exc: MCPError) -> CranimemError:
    """The error a failed call raises here: the owner's engine's own class, or OwnerGone."""
    data = exc.data if isinstance(exc.data, dict) else {}
    if exc.code == OWNER_GONE:
        return OwnerGone(exc.message, sent=bool(data.get("sent", True)))
    kind = getattr(errors, str(data.get("type", "")), None)
    if exc.code == OPERATION_ERROR and isinstance(kind, type) and issubclass(kind, CranimemError):
        return kind(exc.message)
    return StoreError(f"the owner answered with an error: {exc.message}")
