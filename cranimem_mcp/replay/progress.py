"""A consolidation run's progress as a client sees it: steps counted against a total fixed
at the start (the MCP layer turns them into ``notifications/progress``)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

Progress = Callable[[float, float | None, str | None], Awaitable[None]]
"""Told after each step of a run: (steps done, steps in all, what the step did). The MCP
layer passes one that sends ``notifications/progress``; the engine knows nothing of MCP."""


class Steps:
    """A run's progress: counts the steps done against a total fixed at the start and tells
    ``progress`` after each one, so what a client sees only grows and ends at the total."""

    def __init__(self, progress: Progress | None, total: int) -> None:
        self.progress, self.total, self.done = progress, total, 0

    async def step(self, message: str, count: int = 1) -> None:
        """``count`` steps are done (more than one when a phase has nothing to do)."""
        self.done = min(self.total, self.done + count)
        if self.progress is not None:
            await self.progress(self.done, self.total, message)
