"""State kept per MCP connection (the roots it named, the log level it asked for).

mcp 2.3 hands handlers (and middleware) a per-request ``ServerSession``; the per-connection
``Connection`` with its ``state`` dict is only on the session's private ``_connection`` (the
SDK's TODO L54), which may change in any release. What the session does expose is
``client_params``: the ``initialize`` params the connection recorded, one object for the
connection's life, read through the session by every request on it. So the state is kept
against that object's identity (the model is not hashable) and dropped when the object is:
when the connection is. Without ``client_params`` (no handshake on this connection: a
stateless or 2026-07-28 request) each request gets fresh state, kept nowhere.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from typing import Any, Generic, TypeVar

T = TypeVar("T")


class PerConnection(Generic[T]):
    """Each connection's ``T`` (made by ``new``), for as long as the connection lives."""

    def __init__(self, new: Callable[[], T]) -> None:
        self._new = new
        self._known: dict[int, T] = {}

    def of(self, session: Any) -> T:
        params = getattr(session, "client_params", None)
        if params is None:
            return self._new()
        key = id(params)
        known = self._known.get(key)
        if known is None:
            known = self._known[key] = self._new()
            # Runs as the object is freed, before its id can be reused.
            weakref.finalize(params, self._known.pop, key, None)
        return known
