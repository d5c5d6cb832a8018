"""What the engine's parts share, each with one owner: the writer locks, the background
tasks, the engine state on disk, and the recall counts written behind.

The engine creates these objects and hands them to its parts (the write path, the
:class:`~cranimem_mcp.replay.consolidator.Consolidator`, forget and restore, the consistency
check), so
no part reaches into another's private state. Invariants: writes to one scope are
serialised by that scope's lock; consolidations never overlap (one consolidation lock);
every background task runs in the engine's task group and is cancelled when it closes.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Awaitable, Callable
from datetime import datetime
from pathlib import Path
from typing import Any, TypeVar

import anyio
from pydantic import BaseModel, ValidationError

from cranimem_mcp.buffer.episodic import EpisodicStore
from cranimem_mcp.errors import StoreError
from cranimem_mcp.models import ConsolidationReport
from cranimem_mcp.validation import now

logger = logging.getLogger(__name__)


# The engine's small durable state: per-scope goals, turn counters, rejected-write counts and
# the last consolidation report. One JSON file, replaced atomically (write, fsync, rename).
class EngineState(BaseModel):
    goals: dict[str, str] = {}
    turns: dict[str, int] = {}
    rejected: dict[str, int] = {}
    reports: dict[str, ConsolidationReport] = {}
    embedder: dict[str, Any] | None = None
    # Long-term memories linked by the heuristic fallback, to re-extract with the LLM.
    reextract: dict[str, list[str]] = {}


def load_state(path: Path) -> EngineState:
    if not path.exists():
        return EngineState()
    try:
        return EngineState.model_validate_json(path.read_text(encoding="utf-8"))
    except ValidationError as exc:  # one line, not pydantic's dump
        why = exc.errors(include_url=False)[0]["msg"]
        raise StoreError(f"cannot read engine state {path}: {why}") from exc
    except (OSError, ValueError) as exc:
        raise StoreError(f"cannot read engine state {path}: {exc}") from exc


def save_state(path: Path, state: EngineState) -> None:
    tmp = path.with_suffix(".tmp")
    data = json.dumps(state.model_dump(mode="json"), ensure_ascii=False, indent=1)
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.write(data)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)


T = TypeVar("T")

# Recall counts are written in one batch this long after a recall. Why not 1 s: each batch
# is a commit per distinct count that rewrites the rows it counts; at one batch a second a
# server answering recalls alone read ever more small fragments (a recall 17 -> 21 ms over
# 900 recalls, RESULTS.md).
RECALL_FLUSH_SECONDS = 5.0
STATE_FLUSH_SECONDS = 0.5  # bookkeeping counters are saved this long after a change


async def meanwhile(main: Callable[[], Awaitable[T]], *others: Callable[[], Awaitable[None]]) -> T:
    """``main()``, with ``others`` run beside it (they must not raise: work done ahead for
    ``main``'s caller, whose failure is left for the caller's own call to meet); ``main``'s
    error as it is, not wrapped in an exception group."""
    result: list[T] = []
    failed: list[Exception] = []

    async def run_main() -> None:
        try:
            result.append(await main())
        except Exception as exc:  # re-raised below
            failed.append(exc)

    async with anyio.create_task_group() as tg:
        tg.start_soon(run_main)
        for other in others:
            tg.start_soon(other)
    if failed:
        raise failed[0]
    return result[0]


class ScopeLocks:
    """One writer lock per scope, the lock that keeps consolidations from overlapping, and
    per scope the linking lock: held by a consolidation from its claimed items' last check
    to their move, while it links them into the graph outside the scope lock. Forget and
    restore take it before the scope lock, so none of those items changes tier meanwhile;
    writes never take it."""

    def __init__(self) -> None:
        self._scopes: dict[str, anyio.Lock] = {}
        self._linking: dict[str, anyio.Lock] = {}
        self.consolidation = anyio.Lock()

    def scope(self, scope: str) -> anyio.Lock:
        return self._scopes.setdefault(scope, anyio.Lock())

    def linking(self, scope: str) -> anyio.Lock:
        return self._linking.setdefault(scope, anyio.Lock())


class Background:
    """The owner of background work: tasks run in the engine's task group (set while the
    engine is open). Consolidations and fact embedding are counted, so :meth:`wait_idle`
    can wait for them; flushes and the scheduler are not. ``enabled`` is False for a one-shot
    command, which runs no background consolidation."""

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled
        self._tg: Any = None
        self._busy = 0
        self._idle = anyio.Event()
        self._idle.set()

    def attach(self, tg: Any) -> None:
        self._tg = tg

    @property
    def open(self) -> bool:
        return self._tg is not None

    def cancel(self) -> None:
        self._tg.cancel_scope.cancel()

    def start_soon(self, fn: Callable[..., Awaitable[Any]], *args: Any) -> None:
        """Run ``fn(*args)`` in the task group, uncounted (flushes, the scheduler)."""
        self._tg.start_soon(fn, *args)

    def spawn(self, fn: Callable[..., Awaitable[Any]], *args: Any) -> None:
        """Run ``fn(*args)`` in the task group, counted for :meth:`wait_idle`; a failure is
        logged, never raised into the task group (it would close the engine)."""
        self._busy += 1
        self._idle = anyio.Event() if self._idle.is_set() else self._idle

        async def run() -> None:
            try:
                await fn(*args)
            except Exception:
                logger.exception("background task %s failed", getattr(fn, "__name__", fn))
            finally:
                self._busy -= 1
                if self._busy == 0:
                    self._idle.set()

        self._tg.start_soon(run)

    async def wait_idle(self) -> None:
        """Wait until the counted tasks started so far have finished."""
        await self._idle.wait()


class StateKeeper:
    """The engine state (goals, turn counters, reports, the re-extraction queue) and its
    file. Goals and consolidation reports are saved at once (:meth:`save`); counters within
    a moment (:meth:`save_soon`): they are bookkeeping, not memories, and a crash can at
    worst lose the last increments."""

    def __init__(self, path: Path, background: Background) -> None:
        self.path = path
        self.state = EngineState()
        self._background = background
        self._lock = anyio.Lock()
        self._dirty = False

    async def load(self) -> EngineState:
        self.state = await anyio.to_thread.run_sync(load_state, self.path)
        return self.state

    async def save(self) -> None:
        async with self._lock:
            await anyio.to_thread.run_sync(save_state, self.path, self.state)

    def save_soon(self) -> None:
        if self._dirty or not self._background.open:
            return
        self._dirty = True

        async def flush() -> None:
            await anyio.sleep(STATE_FLUSH_SECONDS)
            self._dirty = False
            await self.save()

        self._background.start_soon(flush)

    async def close(self) -> None:
        """Save what a pending :meth:`save_soon` would have saved."""
        if self._dirty:
            self._dirty = False
            await self.save()


class RecallCounts:
    """Recalls (the replay score's frequency bonus, the decay weight) counted in memory and
    written per scope (one update per distinct count) up to ``RECALL_FLUSH_SECONDS`` later,
    before any consolidation reads them (:meth:`flush`), and at close, so a recall never
    waits on a commit. A crash can lose those seconds' counts: they are soft signals, not memories.
    ``settle`` runs after each background flush (the engine's: maintain the table when
    due, as after a write): a server that only answers recalls still folds the rows its
    counts rewrote back into the indexes."""

    def __init__(
        self,
        episodic: EpisodicStore,
        locks: ScopeLocks,
        background: Background,
        settle: Callable[[], None] | None = None,
    ) -> None:
        self._episodic = episodic
        self._locks = locks
        self._background = background
        self._settle = settle
        self._pending: dict[str, dict[str, int]] = {}  # scope -> id -> recalls not written
        self._at: dict[str, datetime] = {}
        self._flush_due = False

    def note(self, scope: str, ids: list[str]) -> None:
        if not ids:
            return
        pending = self._pending.setdefault(scope, {})
        for memory_id in ids:
            pending[memory_id] = pending.get(memory_id, 0) + 1
        self._at[scope] = now()
        if self._background.enabled and self._background.open and not self._flush_due:
            self._flush_due = True

            async def later() -> None:
                await anyio.sleep(RECALL_FLUSH_SECONDS)
                self._flush_due = False
                await self.flush()
                if self._settle is not None:
                    self._settle()

            self._background.start_soon(later)

    async def flush(self, scopes: list[str] | None = None) -> None:
        for scope in list(self._pending) if scopes is None else scopes:
            if not self._pending.get(scope):
                continue
            # Under the scope lock: never between a locked read and its upsert. Shielded:
            # counts taken from the queue are written, not dropped by a cancellation.
            with anyio.CancelScope(shield=True):
                async with self._locks.scope(scope):
                    pending = self._pending.pop(scope, {})
                    try:
                        await self._episodic.touch(pending, self._at[scope])
                    except StoreError as exc:
                        logger.warning("recall counts of %s not written: %s", scope, exc)
