"""The session's MCP roots, which name a call's default scope (:mod:`.scopes`).

On the handshake revisions (2025-*) the server asks the client with ``roots/list`` once per
connection and keeps the answer until the client sends ``notifications/roots/list_changed``.
The ask is bounded (:data:`ASK_TIMEOUT`): a client that answers with an error, answers
garbage or does not answer in time gets the configured scope for its calls, a warning in the
log, and no second ask until it says its roots changed; a call is never failed or held up
longer than that by roots. On 2026-07-28 there is no server-to-client request: the SDK's
``ListRoots`` resolver asks within the call's own round trip (the client answers by retrying
the call), so there is nothing to wait for on this side.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Annotated, Any

import anyio
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.mcpserver import Context
from mcp.server.mcpserver.resolve import ListRoots, Resolve
from mcp.shared.exceptions import MCPError
from mcp.shared.message import ServerMessageMetadata
from mcp_types import ListRootsRequest, ListRootsResult, NotificationParams
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import ValidationError

from cranimem_mcp.server.connections import PerConnection
from cranimem_mcp.server.scopes import scope_for_root

logger = logging.getLogger(__name__)

ASK_TIMEOUT = 2.0  # seconds a call waits for the client's roots before using the default scope
LIST_CHANGED = "notifications/roots/list_changed"


@dataclass
class _SessionRoots:
    """One connection's answer: ``asked`` once it is known (``roots`` None: no usable answer)."""

    lock: anyio.Lock = field(default_factory=anyio.Lock)
    asked: bool = False
    roots: ListRootsResult | None = None
    generation: int = 0  # bumped by list_changed; an answer to an older question is dropped


_CONNECTIONS = PerConnection(_SessionRoots)


def _session_roots(session: Any) -> _SessionRoots:
    return _CONNECTIONS.of(session)


async def ask_roots(
    ctx: Context, timeout: float = ASK_TIMEOUT
) -> ListRoots | ListRootsResult | None:
    """The client's roots for this call's scope: the connection's cached answer (asked once,
    bounded by ``timeout``), or the SDK's ``ListRoots`` marker on 2026-07-28; None when the
    client did not answer usefully (the caller uses the configured scope)."""
    if ctx.protocol_version in MODERN_PROTOCOL_VERSIONS:
        return ListRoots()
    known = _session_roots(ctx.session)
    async with known.lock:  # concurrent first calls share one ask
        if not known.asked:
            generation = known.generation
            roots = await _ask(ctx, timeout)
            if generation == known.generation:
                known.asked, known.roots = True, roots
            return roots
        return known.roots


async def _ask(ctx: Context, timeout: float) -> ListRootsResult | None:
    try:
        return await ctx.session.send_request(
            ListRootsRequest(),
            ListRootsResult,
            request_read_timeout_seconds=timeout,
            metadata=ServerMessageMetadata(related_request_id=ctx.request_id),
        )
    except MCPError as exc:  # an error answer, a timeout, or no channel to ask on
        why = exc.message
    except ValidationError:
        why = "the answer is not a roots/list result"
    logger.warning("roots/list failed (%s): calls without a scope use the configured scope", why)
    return None


async def roots_changed(ctx: Any, _params: NotificationParams) -> None:
    """``notifications/roots/list_changed``: the next call asks again."""
    known = _session_roots(ctx.session)
    known.generation += 1
    known.asked, known.roots = False, None
    logger.info("the client's roots changed: asking again on the next call")


async def hear_roots_changed(
    ctx: ServerRequestContext[Any, Any], call_next: CallNext
) -> HandlerResult:
    """Server middleware that hears ``notifications/roots/list_changed`` (:func:`roots_changed`).

    ``MCPServer`` has no public way to register a notification handler (its low-level server
    is private), but its public ``middleware`` chain sees every inbound message. The SDK
    itself drops this notification on 2026-07-28 (no such method there), with malformed
    params, and before the handshake (when the connection has no ``client_params``, so no
    answer to forget): it is heard when a registered handler would have been called.
    """
    result = await call_next(ctx)
    if ctx.method != LIST_CHANGED or ctx.request_id is not None:
        return result
    if ctx.protocol_version in MODERN_PROTOCOL_VERSIONS or ctx.session.client_params is None:
        return result
    try:
        params = NotificationParams.model_validate(ctx.params or {}, by_name=False)
    except ValidationError:
        return result
    await roots_changed(ctx, params)
    return result


# --- a call's scope ----------------------------------------------------------------------------
# The server's lifespan context (its EngineHandle) carries the settings.


async def _roots_for_scope(
    ctx: Context, scope: str | None = None
) -> ListRoots | ListRootsResult | None:
    """Ask the client for its roots only when the call names no scope and it has some
    (once per session, bounded: see above)."""
    if scope is not None or not ctx.request_context.lifespan_context.settings.scopes.from_roots:
        return None
    caps = ctx.client_capabilities
    return await ask_roots(ctx) if caps is not None and caps.roots is not None else None


def session_scope(
    ctx: Context,
    roots: Annotated[ListRootsResult | None, Resolve(_roots_for_scope)],
    scope: str | None = None,
) -> str:
    """The call's scope: its own, else the session's first root's, else the configured."""
    if scope is not None:
        return scope
    if roots is not None and roots.roots:
        first = roots.roots[0]
        return scope_for_root(str(first.uri), first.name)
    return ctx.request_context.lifespan_context.settings.scopes.default


# A tool argument the SDK fills in: the call's scope.
SessionScope = Annotated[str, Resolve(session_scope)]
