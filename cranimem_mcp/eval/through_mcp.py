"""The engine behind a real MCP stdio client: ``cranimem-mcp serve`` spawned by the SDK's own
``stdio_client`` + ``ClientSession``, as an assistant's host does, one server and one fresh
data directory per conversation. Every turn is a ``remember`` call, then one ``consolidate``,
then ``recall`` calls; what is scored is the ``items`` of the tool's structured result.

The server gets what the in-process run has: the heuristic tagger and extractor, the local
embedder, the configuration file the eval was given (``--config``), and no background
consolidation (every-N-writes and the idle timer off), so the only consolidation during the
writes is the buffer bound's. Same code, same decisions: the recall must come out the same.
"""

from __future__ import annotations

import os
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from cranimem_mcp.errors import BackendUnavailable


@dataclass
class Recalled:
    contents: list[str]  # the memories returned, best first
    took_ms: float  # the system's own account (the engine's took_ms)


TIMEOUT_SECONDS = 600.0  # a consolidation of a few hundred turns on a loaded machine


def server_parameters(home: Path, config_file: Path | None = None) -> StdioServerParameters:
    """``python -m cranimem_mcp.cli serve`` with this interpreter and this checkout's code."""
    env = dict(os.environ)
    env.update(
        CRANIMEM_HOME=str(home), HF_HUB_OFFLINE="1", LANCE_LOG="error",
        CRANIMEM_MODELS__EMBEDDER="local", CRANIMEM_MODELS__TAGGER="heuristic",
        CRANIMEM_MODELS__EXTRACTOR="heuristic",
        # Why off: the in-process run has no background work (see the module docstring).
        CRANIMEM_CONSOLIDATION__EVERY_N_WRITES="0", CRANIMEM_CONSOLIDATION__INTERVAL_SECONDS="0",
    )  # fmt: skip
    args = ["-m", "cranimem_mcp.cli", "serve", "--data-dir", str(home)]
    if config_file is not None:
        args += ["--config", str(Path(config_file).resolve())]
    return StdioServerParameters(command=sys.executable, args=args, env=env, cwd=str(home))


class McpMemory:
    """One conversation's memory, reached through MCP tool calls."""

    def __init__(self, session: ClientSession, scope: str, max_chars: int) -> None:
        self._session, self._scope, self._max_chars = session, scope, max_chars

    async def _call(self, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
        result = await self._session.call_tool(tool, arguments, TIMEOUT_SECONDS)
        structured = getattr(result, "structured_content", None)
        if getattr(result, "is_error", False) or structured is None:
            text = " ".join(getattr(c, "text", "") for c in getattr(result, "content", []))
            raise BackendUnavailable(f"the MCP server's {tool} failed: {text[:300]}")
        return structured

    async def remember(self, text: str) -> str:
        return (await self._call("remember", {"content": text, "scope": self._scope}))["status"]

    async def settle(self) -> None:
        await self._call("consolidate", {"scope": self._scope})

    async def recall(self, query: str, k: int) -> Recalled:
        out = await self._call(
            "recall", {"query": query, "scope": self._scope, "k": k, "max_chars": self._max_chars}
        )
        return Recalled([it["content"] for it in out["items"]][:k], float(out["took_ms"]))


@asynccontextmanager
async def open_mcp_memory(
    home: Path, scope: str, max_chars: int, config_file: Path | None = None
) -> AsyncIterator[McpMemory]:
    """A server on a fresh ``home``; its stderr (logs) goes to ``home``/../<scope>.server.log."""
    home.mkdir(parents=True, exist_ok=True)
    log = home.parent / f"{scope}.server.log"
    with log.open("w", encoding="utf-8") as errlog:
        params = server_parameters(home, config_file)
        async with stdio_client(params, errlog=errlog) as (read, write):
            async with ClientSession(read, write, read_timeout_seconds=TIMEOUT_SECONDS) as session:
                await session.initialize()
                yield McpMemory(session, scope, max_chars)
