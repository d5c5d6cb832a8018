"""The owner's loopback RPC and the bridge's client for it.

A data directory's owner serves ``POST /rpc`` on a loopback port to the other processes of
the same user (stdio bridges and one-shot CLI commands): a JSON body ``{"method", "params"}``
naming one engine operation, answered with ``{"result": ...}`` or ``{"error": {"type",
"message"}}``. Only the operations in :data:`OPERATIONS` exist, each with keyword parameters
the engine validates as it does for local callers; the bearer token of ``owner-token`` is
required and compared in constant time.

:class:`RemoteEngine` offers the same async methods as the engine for those operations, so the
MCP layer does not know whether its engine is local or bridged. A failure to reach the owner
is :class:`OwnerGone`, which says whether the request may have been applied (``sent``).
"""

from __future__ import annotations

import hmac
import json
import logging
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

import httpx
from pydantic import BaseModel

from . import errors
from .errors import CranimemError, InvalidInput, StoreError
from .models import (
    ConsolidationReport,
    ForgetResult,
    GoalResult,
    MemoryPage,
    RecallResult,
    RememberResult,
    RestoreResult,
    Stats,
)
from .ownership import OwnerGone

if TYPE_CHECKING:
    from starlette.applications import Starlette

logger = logging.getLogger(__name__)

# operation -> the result model (None: a plain JSON value)
OPERATIONS: dict[str, type[BaseModel] | None] = {
    "remember": RememberResult,
    "recall": RecallResult,
    "consolidate": ConsolidationReport,
    "forget": ForgetResult,
    "restore": RestoreResult,
    "set_goal": GoalResult,
    "stats": Stats,
    "list_memories": MemoryPage,
    "graph_turtle": None,
    "ping": None,
}


def rpc_app(get_engine: Callable[[], Awaitable[Any]], token: str, pid: int) -> Starlette:
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
            method, params = body["method"], body.get("params") or {}
            if method not in OPERATIONS or not isinstance(params, dict):
                raise InvalidInput(f"unknown operation {str(method)[:40]!r}")
            if method == "ping":
                return JSONResponse({"result": {"pid": pid}})
            engine = await get_engine()
            result = await getattr(engine, method)(**params)
        except CranimemError as exc:
            return JSONResponse({"error": {"type": type(exc).__name__, "message": str(exc)}})
        except (ValueError, KeyError, TypeError) as exc:
            message = f"bad request: {exc}"
            return JSONResponse({"error": {"type": "InvalidInput", "message": message}})
        if isinstance(result, BaseModel):
            return JSONResponse({"result": result.model_dump(mode="json")})
        return JSONResponse({"result": result})

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
        try:
            response = await self._client.post("/rpc", json={"method": method, "params": params})
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
        model = OPERATIONS[method]
        return model.model_validate(body["result"]) if model is not None else body["result"]

    async def ping(self) -> int:
        """The owner's pid (checks that the port is the owner and the token is right)."""
        return int((await self._rpc("ping"))["pid"])

    async def remember(
        self,
        content: str,
        scope: str = "default",
        goal: str | None = None,
        source: str | None = None,
        tags: list[str] | None = None,
        pin: bool = False,
    ) -> Any:
        return await self._rpc(
            "remember",
            content=content,
            scope=scope,
            goal=goal,
            source=source,
            tags=tags,
            pin=pin,
        )

    async def recall(
        self,
        query: str,
        scope: str = "default",
        k: int | None = None,
        max_chars: int | None = None,
        paths: list[str] | None = None,
        as_of: str | None = None,
        all_scopes: bool = False,
    ) -> Any:
        return await self._rpc(
            "recall",
            query=query,
            scope=scope,
            k=k,
            max_chars=max_chars,
            paths=paths,
            as_of=as_of,
            all_scopes=all_scopes,
        )

    async def consolidate(
        self,
        scope: str | None = None,
        dry_run: bool = False,
        progress: Callable[[float, float | None, str | None], Awaitable[None]] | None = None,
    ) -> Any:
        """The owner runs it; its steps do not cross the RPC, so ``progress`` hears one step,
        when the owner's report arrives."""
        report = await self._rpc("consolidate", scope=scope, dry_run=dry_run)
        if progress is not None:
            await progress(1, 1, "done by the process that owns the data directory")
        return report

    async def forget(
        self,
        ids: list[str] | None = None,
        entity: str | None = None,
        scope: str = "default",
        all_in_scope: bool = False,
        hard: bool = False,
        dry_run: bool = False,
    ) -> Any:
        return await self._rpc(
            "forget",
            ids=ids,
            entity=entity,
            scope=scope,
            all_in_scope=all_in_scope,
            hard=hard,
            dry_run=dry_run,
        )

    async def restore(self, ids: list[str], scope: str = "default") -> Any:
        return await self._rpc("restore", ids=ids, scope=scope)

    async def set_goal(self, goal: str, scope: str = "default") -> Any:
        return await self._rpc("set_goal", goal=goal, scope=scope)

    async def stats(self) -> Any:
        return await self._rpc("stats")

    async def list_memories(
        self, scope: str = "default", tier: str | None = None, limit: int = 20, offset: int = 0
    ) -> Any:
        return await self._rpc("list_memories", scope=scope, tier=tier, limit=limit, offset=offset)

    async def graph_turtle(self, scope: str) -> Any:
        return await self._rpc("graph_turtle", scope=scope)
