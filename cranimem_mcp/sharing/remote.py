"""The owner's loopback RPC and the bridge's client for it.

A data directory's owner serves ``POST /rpc`` on a loopback port to the other processes of
the same user (stdio bridges and one-shot CLI commands): a JSON body ``{"method", "params"}``
naming one engine operation, answered with ``{"result": ...}`` or ``{"error": {"type",
"message"}}``. Only the operations of :class:`~cranimem_mcp.service.MemoryService` exist
(:data:`~cranimem_mcp.service.OPERATIONS`, and ``ping``), each with the keyword parameters
of its signature, which the engine validates as it does for local callers; results are
encoded and decoded as the operation's return annotation says. The bearer token of
``owner-token`` is required and compared in constant time.

:class:`RemoteEngine` implements :class:`~cranimem_mcp.service.MemoryService` by sending each
operation, so the faces do not know whether their engine is local or bridged. A failure to
reach the owner is :class:`OwnerGone`, which says whether the request may have been applied
(``sent``).
"""

from __future__ import annotations

import hmac
import json
import logging
from collections.abc import Awaitable, Callable
from datetime import datetime
from typing import TYPE_CHECKING, Any

import httpx
from pydantic_core import to_jsonable_python

from cranimem_mcp import errors
from cranimem_mcp.errors import CranimemError, InvalidInput, StoreError
from cranimem_mcp.models import (
    ENTITY_FACTS,
    GRAPH_NODES,
    MAX_INSPECT,
    ConsolidationReport,
    EntityView,
    ForgetResult,
    GoalResult,
    GraphView,
    MemoryDetail,
    MemoryPage,
    RecallResult,
    RememberResult,
    RestoreResult,
    Stats,
    Tier,
)
from cranimem_mcp.service import (
    LOCAL_ONLY,
    OPERATIONS,
    MemoryService,
    Progress,
    result_adapter,
    signature,
)
from cranimem_mcp.sharing.ownership import OwnerGone

if TYPE_CHECKING:
    from starlette.applications import Starlette

logger = logging.getLogger(__name__)


def _arguments(method: str, params: Any) -> dict[str, Any]:
    """The request's parameters, checked against the operation's signature: names it has,
    none that cannot cross the RPC."""
    if method not in OPERATIONS or not isinstance(params, dict):
        raise InvalidInput(f"unknown operation {str(method)[:40]!r}")
    allowed = set(signature(method).parameters) - {"self"} - LOCAL_ONLY
    unknown = sorted(set(params) - allowed)
    if unknown:
        raise InvalidInput(f"{method} takes no parameter {str(unknown[0])[:40]!r}")
    return params


def rpc_app(get_engine: Callable[[], Awaitable[MemoryService]], token: str, pid: int) -> Starlette:
    """The owner's ``/rpc`` endpoint; ``get_engine`` waits until the engine is open."""
    # Imported here: a bridge (one-shot CLI commands too) needs only the client half.
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import JSONResponse
    from starlette.routing import Route

    secret = token.encode("utf-8")

    async def rpc(request: Request) -> JSONResponse:
        scheme, _, given = request.headers.get("authorization", "").partition(" ")
        if scheme.lower() != "bearer" or not hmac.compare_digest(given.encode(), secret):
            return JSONResponse({"error": {"type": "Unauthorized", "message": "bad token"}}, 401)
        try:
            body = json.loads(await request.body())
            method = body["method"]
            if method == "ping":
                return JSONResponse({"result": {"pid": pid}})
            params = _arguments(method, body.get("params") or {})
            engine = await get_engine()
            result = await getattr(engine, method)(**params)
        except CranimemError as exc:
            return JSONResponse({"error": {"type": type(exc).__name__, "message": str(exc)}})
        except (ValueError, KeyError, TypeError) as exc:
            message = f"bad request: {exc}"
            return JSONResponse({"error": {"type": "InvalidInput", "message": message}})
        return JSONResponse({"result": result_adapter(method).dump_python(result, mode="json")})

    return Starlette(routes=[Route("/rpc", rpc, methods=["POST"])])


class RemoteEngine:
    """The engine operations of another process, over its loopback ``/rpc``."""

    def __init__(self, port: int, token: str, timeout: float = 600.0) -> None:
        self.port = port
        self._client = httpx.AsyncClient(
            base_url=f"http://127.0.0.1:{port}",
            headers={"Authorization": f"Bearer {token}"},
            timeout=httpx.Timeout(timeout, connect=5.0),
            # Plain HTTP on loopback: TLS is never used, so skip building a verifying SSL
            # context (loading the CA bundle is ~0.08 s of a one-shot command's start).
            verify=False,
        )

    async def aclose(self) -> None:
        await self._client.aclose()

    async def _rpc(self, method: str, **params: Any) -> Any:
        payload = {"method": method, "params": to_jsonable_python(params)}
        try:
            response = await self._client.post("/rpc", json=payload)
        except (httpx.ConnectError, httpx.ConnectTimeout) as exc:
            raise OwnerGone(f"the owner on port {self.port} does not answer", sent=False) from exc
        except httpx.TransportError as exc:
            raise OwnerGone(f"the owner on port {self.port} went away: {exc}", sent=True) from exc
        if response.status_code == 401:
            raise OwnerGone(f"port {self.port} refused the directory's token", sent=False)
        try:
            body = response.json()
        except ValueError as exc:
            raise StoreError(f"the owner answered {response.status_code} without JSON") from exc
        if "error" in body:
            kind = getattr(errors, body["error"].get("type", ""), None)
            if not (isinstance(kind, type) and issubclass(kind, CranimemError)):
                kind = StoreError
            raise kind(body["error"].get("message", "the owner failed"))
        if method == "ping":
            return body["result"]
        return result_adapter(method).validate_python(body["result"])

    async def ping(self) -> int:
        """The owner's pid (checks that the port is the owner and the token is right)."""
        return int((await self._rpc("ping"))["pid"])

    # The operations of :class:`~cranimem_mcp.service.MemoryService`, each one request.

    async def remember(
        self,
        *,
        content: str,
        scope: str = "default",
        goal: str | None = None,
        source: str | None = None,
        tags: list[str] | None = None,
        pin: bool = False,
        said_at: str | datetime | None = None,
    ) -> RememberResult:
        return await self._rpc(
            "remember", content=content, scope=scope, goal=goal, source=source, tags=tags,
            pin=pin, said_at=said_at,
        )  # fmt: skip

    async def recall(
        self,
        *,
        query: str,
        scope: str = "default",
        k: int | None = None,
        max_chars: int | None = None,
        paths: list[str] | None = None,
        as_of: str | datetime | None = None,
        all_scopes: bool = False,
    ) -> RecallResult:
        return await self._rpc(
            "recall", query=query, scope=scope, k=k, max_chars=max_chars, paths=paths,
            as_of=as_of, all_scopes=all_scopes,
        )  # fmt: skip

    async def consolidate(
        self,
        *,
        scope: str | None = None,
        dry_run: bool = False,
        progress: Progress | None = None,
    ) -> ConsolidationReport:
        """The owner runs it; its steps do not cross the RPC, so ``progress`` hears one step,
        when the owner's report arrives."""
        report = await self._rpc("consolidate", scope=scope, dry_run=dry_run)
        if progress is not None:
            await progress(1, 1, "done by the process that owns the data directory")
        return report

    async def forget(
        self,
        *,
        ids: list[str] | None = None,
        entity: str | None = None,
        scope: str = "default",
        all_in_scope: bool = False,
        hard: bool = False,
        dry_run: bool = False,
    ) -> ForgetResult:
        return await self._rpc(
            "forget", ids=ids, entity=entity, scope=scope, all_in_scope=all_in_scope,
            hard=hard, dry_run=dry_run,
        )  # fmt: skip

    async def restore(self, *, ids: list[str], scope: str = "default") -> RestoreResult:
        return await self._rpc("restore", ids=ids, scope=scope)

    async def set_goal(self, *, goal: str, scope: str = "default") -> GoalResult:
        return await self._rpc("set_goal", goal=goal, scope=scope)

    async def stats(self) -> Stats:
        return await self._rpc("stats")

    async def list_memories(
        self, *, scope: str = "default", tier: Tier | None = None, limit: int = 20, offset: int = 0
    ) -> MemoryPage:
        return await self._rpc("list_memories", scope=scope, tier=tier, limit=limit, offset=offset)

    async def graph_turtle(self, *, scope: str) -> str:
        return await self._rpc("graph_turtle", scope=scope)

    async def check(self) -> list[str]:
        return await self._rpc("check")

    async def get_memories(self, *, ids: list[str], scope: str = "default") -> list[MemoryDetail]:
        return await self._rpc("get_memories", ids=ids, scope=scope)

    async def recent_memories(
        self, *, scope: str = "default", tier: Tier | None = None, limit: int = MAX_INSPECT
    ) -> list[MemoryDetail]:
        return await self._rpc("recent_memories", scope=scope, tier=tier, limit=limit)

    async def graph_overview(
        self, *, scope: str = "default", limit: int = GRAPH_NODES
    ) -> GraphView:
        return await self._rpc("graph_overview", scope=scope, limit=limit)

    async def entity_neighbourhood(
        self, *, name: str, scope: str = "default", limit: int = ENTITY_FACTS
    ) -> EntityView:
        return await self._rpc("entity_neighbourhood", name=name, scope=scope, limit=limit)
