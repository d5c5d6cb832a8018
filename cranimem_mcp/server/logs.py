"""MCP logging: the server's log records go to the clients that ask for them.

On the handshake revisions (2025-*) a client asks with ``logging/setLevel``, once for its
connection; on 2026-07-28 each request names its level in ``_meta``
(``io.modelcontextprotocol/logLevel``). While a request of such a client runs, the records
of the ``cranimem_mcp`` loggers at or above its level are collected (a context variable, so
only this request's, worker threads included) and sent as ``notifications/message`` on the
request's own stream before its answer. A client that never asks gets none.

``MCPServer`` has no public way to register the ``logging/setLevel`` handler nor to
advertise the capability (both live on its private low-level server), so this is server
middleware, the public chain every request goes through: it answers ``logging/setLevel``
itself and adds ``logging`` to the capabilities of the ``initialize`` and
``server/discover`` answers. Records go out with the session's ``send_notification``; its
``send_log_message`` would do the same but warns on every call (logging is deprecated on
2026-07-28, where it is still served).
"""

from __future__ import annotations

import logging
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.shared.exceptions import MCPError
from mcp_types import (
    INVALID_PARAMS,
    LOG_LEVEL_META_KEY,
    LoggingLevel,
    LoggingMessageNotification,
    LoggingMessageNotificationParams,
    SetLevelRequestParams,
)
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import ValidationError

from cranimem_mcp.server.connections import PerConnection

logger = logging.getLogger(__name__)

PACKAGE = "cranimem_mcp"  # the loggers whose records clients may ask for
SET_LEVEL = "logging/setLevel"
# Each MCP level (RFC 5424) as the least Python level it takes in.
THRESHOLDS: dict[str, int] = {
    "debug": logging.DEBUG,
    "info": logging.INFO,
    "notice": logging.INFO + 5,
    "warning": logging.WARNING,
    "error": logging.ERROR,
    "critical": logging.CRITICAL,
    "alert": logging.CRITICAL + 1,
    "emergency": logging.CRITICAL + 2,
}


def mcp_level(levelno: int) -> LoggingLevel:
    """A Python record's level as an MCP level."""
    if levelno >= logging.CRITICAL:
        return "critical"
    if levelno >= logging.ERROR:
        return "error"
    if levelno >= logging.WARNING:
        return "warning"
    return "info" if levelno >= logging.INFO else "debug"


@dataclass
class _Asked:
    level: str | None = None  # what the connection asked for with logging/setLevel


_LEVELS = PerConnection(_Asked)


@dataclass
class _Batch:
    """One request's records (level, logger, message), collected while it runs (``open``
    until they are sent)."""

    threshold: int
    records: list[tuple[int, str, str]] = field(default_factory=list)
    open: bool = True


_BATCH: ContextVar[_Batch | None] = ContextVar("cranimem_log_batch", default=None)


class _Collect(logging.Handler):
    """Keeps a record for the request it was logged in, when that request's client asked."""

    def emit(self, record: logging.LogRecord) -> None:
        batch = _BATCH.get()
        if batch is None or not batch.open or record.levelno < batch.threshold:
            return
        try:
            batch.records.append((record.levelno, record.name, record.getMessage()))
        except Exception:  # a record whose arguments do not fit its message
            self.handleError(record)


_COLLECT = _Collect()


def _listen(threshold: int) -> None:
    """The package's loggers pass records from ``threshold`` up to :class:`_Collect`. A
    client's level only ever lowers theirs, so other clients keep what they asked for; the
    terminal keeps its own level on its handler (``cli.main``)."""
    package = logging.getLogger(PACKAGE)
    if _COLLECT not in package.handlers:
        package.addHandler(_COLLECT)
    if package.getEffectiveLevel() > threshold:
        package.setLevel(threshold)


def _asked_level(ctx: ServerRequestContext[Any, Any]) -> str | None:
    if ctx.protocol_version in MODERN_PROTOCOL_VERSIONS:
        level = (ctx.meta or {}).get(LOG_LEVEL_META_KEY)
        return level if level in THRESHOLDS else None
    return _LEVELS.of(ctx.session).level


async def serve_logging(ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
    """Server middleware: ``logging/setLevel``, the capability, and each request's records."""
    if ctx.request_id is None:  # a notification
        return await call_next(ctx)
    modern = ctx.protocol_version in MODERN_PROTOCOL_VERSIONS
    if ctx.method == SET_LEVEL and not modern and ctx.session.client_params is not None:
        return _set_level(ctx)
    if ctx.method in ("initialize", "server/discover"):
        return _advertised(await call_next(ctx))
    level = _asked_level(ctx)
    if level is None:
        return await call_next(ctx)
    batch = _Batch(THRESHOLDS[level])
    _listen(batch.threshold)
    token = _BATCH.set(batch)
    try:
        result = await call_next(ctx)
    except Exception:
        await _send(ctx, batch)
        raise
    finally:
        _BATCH.reset(token)
    await _send(ctx, batch)
    return result


def _set_level(ctx: ServerRequestContext[Any, Any]) -> dict[str, Any]:
    try:
        params = SetLevelRequestParams.model_validate(ctx.params or {}, by_name=False)
    except ValidationError:
        raise MCPError(
            code=INVALID_PARAMS, message=f"level must be one of: {', '.join(THRESHOLDS)}"
        ) from None
    _listen(THRESHOLDS[params.level])
    _LEVELS.of(ctx.session).level = params.level
    return {}


def _advertised(result: HandlerResult) -> HandlerResult:
    """The answer with ``logging`` among its capabilities."""
    if isinstance(result, dict) and isinstance(result.get("capabilities"), dict):
        return {**result, "capabilities": {**result["capabilities"], "logging": {}}}
    return result


async def _send(ctx: ServerRequestContext[Any, Any], batch: _Batch) -> None:
    """The batch's records, in order, on the request's stream (a failed send ends them: the
    client has gone)."""
    batch.open = False
    for levelno, name, message in batch.records:
        note = LoggingMessageNotification(
            params=LoggingMessageNotificationParams(
                level=mcp_level(levelno), logger=name, data=message
            )
        )
        try:
            await ctx.session.send_notification(note, related_request_id=ctx.request_id)
        except Exception as exc:  # the stream is closed: nobody to tell
            logger.debug("log notifications not sent: %r", exc)
            return
