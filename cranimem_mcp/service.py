"""The memory service: the operations every face (MCP tools, CLI, inspector) calls, written
once as a :class:`typing.Protocol`.

Two classes implement it: :class:`~cranimem_mcp.engine.MemoryEngine` in the process that
owns the data directory, and :class:`~cranimem_mcp.sharing.remote.RemoteEngine` in a process that
bridges to the owner over MCP. :class:`~cranimem_mcp.sharing.handle.EngineHandle`, which the
faces hold, forwards each operation to whichever of the two is current. The owner's endpoint
(one MCP tool per operation, :mod:`cranimem_mcp.server.owner`), the bridge's client and the
handle are all made from :class:`MemoryService` (:data:`OPERATIONS`, :func:`forwarding`,
:func:`result_adapter`), so a new operation is written here and in the engine (and as a
public tool if the model should have it), and nowhere else; ``tests/test_service.py``
compares the signatures.

Arguments are keyword-only: they cross to the owner as a JSON object, by name. The engine
checks them (bad input is an :class:`~cranimem_mcp.errors.InvalidInput`), whichever face
called and wherever it runs.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable
from datetime import datetime
from functools import cache
from typing import Any, Protocol, TypeVar, get_type_hints, runtime_checkable

from pydantic import TypeAdapter

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

# A consolidation's steps, as MCP progress: (done, total, message).
Progress = Callable[[float, float | None, str | None], Awaitable[None]]


@runtime_checkable
class MemoryService(Protocol):
    """The memory operations, wherever the engine runs."""

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
        """Gate a write and store it in the scope's buffer (or merge an exact repeat).
        ``said_at`` (ISO 8601): when the user said or wrote it, if not now (an import); it
        dates the event unless the text names a date of its own."""
        ...

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
        """Dual-path recall: memories and graph facts, and one context block."""
        ...

    async def consolidate(
        self,
        *,
        scope: str | None = None,
        dry_run: bool = False,
        progress: Progress | None = None,
    ) -> ConsolidationReport:
        """Replay the buffer of ``scope`` (or of every scope): promote or trash."""
        ...

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
        """Move memories to the trash (or erase them, ``hard``) with their facts."""
        ...

    async def restore(self, *, ids: list[str], scope: str = "default") -> RestoreResult:
        """Bring trashed memories back."""
        ...

    async def set_goal(self, *, goal: str, scope: str = "default") -> GoalResult:
        """Replace the scope's goal, which the gate judges writes against."""
        ...

    async def stats(self) -> Stats:
        """Counts per scope, the models in use, fallbacks."""
        ...

    async def list_memories(
        self,
        *,
        scope: str = "default",
        tier: Tier | None = None,
        limit: int = 20,
        offset: int = 0,
    ) -> MemoryPage:
        """A page of the scope's memories, newest in their tier first."""
        ...

    async def graph_turtle(self, *, scope: str) -> str:
        """The scope's knowledge graph as Turtle (bounded)."""
        ...

    async def check(self) -> list[str]:
        """Where the two stores disagree (an empty list: they agree)."""
        ...

    # --- inspection (the web inspector's queries) --------------------------------------------

    async def get_memories(self, *, ids: list[str], scope: str = "default") -> list[MemoryDetail]:
        """The memories of the scope with these ids, in that order (unknown ids are left
        out)."""
        ...

    async def recent_memories(
        self, *, scope: str = "default", tier: Tier | None = None, limit: int = MAX_INSPECT
    ) -> list[MemoryDetail]:
        """The scope's newest memories (of one tier, or all), newest first."""
        ...

    async def graph_overview(
        self, *, scope: str = "default", limit: int = GRAPH_NODES
    ) -> GraphView:
        """The best-supported entities of the scope's long-term memory, and their facts."""
        ...

    async def entity_neighbourhood(
        self, *, name: str, scope: str = "default", limit: int = ENTITY_FACTS
    ) -> EntityView:
        """One entity's facts, the entities at their other ends, their source memories."""
        ...


# The operations, in the order above: what the owner serves bridges and the handle forwards.
OPERATIONS: tuple[str, ...] = tuple(
    name for name, fn in vars(MemoryService).items() if inspect.iscoroutinefunction(fn)
)

# Operations safe to repeat after a failure that may have reached the owner.
READ_ONLY = frozenset(
    {"recall", "stats", "list_memories", "graph_turtle", "check", "get_memories",
     "recent_memories", "graph_overview", "entity_neighbourhood"}
)  # fmt: skip

# Parameters that cannot cross to another process (a callback).
LOCAL_ONLY = frozenset({"progress"})


def signature(name: str) -> inspect.Signature:
    """The operation's signature, ``self`` included."""
    return inspect.signature(getattr(MemoryService, name))


@cache
def returns(name: str) -> Any:
    """The operation's return type, as its annotation says."""
    return get_type_hints(getattr(MemoryService, name))["return"]


@cache
def result_adapter(name: str) -> TypeAdapter[Any]:
    """Validates (and dumps) the operation's result, as its return annotation says."""
    return TypeAdapter(returns(name))


C = TypeVar("C", bound=type)


def forwarding(cls: C) -> C:
    """Give ``cls`` every operation of :class:`MemoryService`, each a call to
    ``cls.call(name, /, **params)`` (positional-only: an operation has a ``name`` parameter)
    with the Protocol's signature (checked at the call: a wrong argument is a ``TypeError``
    here, not in another process), annotations and docstring. A class that forwards
    operations (the handle the faces hold, the bridge's client) writes none of them out; a
    type checker is told with ``cast(MemoryService, ...)``."""
    for name in OPERATIONS:
        setattr(cls, name, _forward(cls.__name__, name))
    return cls


def _forward(owner: str, name: str) -> Callable[..., Awaitable[Any]]:
    protocol = getattr(MemoryService, name)
    sig = inspect.signature(protocol)

    async def operation(self: Any, **params: Any) -> Any:
        sig.bind(self, **params)
        return await self.call(name, **params)

    operation.__name__ = name
    operation.__qualname__ = f"{owner}.{name}"
    operation.__doc__ = protocol.__doc__
    operation.__annotations__ = dict(protocol.__annotations__)
    operation.__signature__ = sig  # type: ignore[attr-defined]
    return operation
