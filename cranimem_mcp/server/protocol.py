"""The ``MCPServer`` cranimem runs (:class:`CranimemServer`): the SDK's, with the protocol's
corners as clients expect them.

- ``tools/list`` sends lean schemas (:mod:`.schemas`).
- A tool argument the SDK rejected reads as one sentence (:mod:`.arguments`).
- ``notifications/roots/list_changed`` (:mod:`.roots`) is heard in the public middleware
  chain: ``MCPServer`` has no public way to register a notification handler (only its
  private low-level server has one).
"""

from __future__ import annotations

from typing import Any

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError, UnexpectedToolError
from mcp_types import Tool
from pydantic import ValidationError

from cranimem_mcp.server.arguments import explain
from cranimem_mcp.server.roots import hear_roots_changed
from cranimem_mcp.server.schemas import lean_input, outline_output


class CranimemServer(MCPServer):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.middleware.append(hear_roots_changed)

    async def list_tools(self) -> list[Tool]:
        return [
            tool.model_copy(
                update={
                    "input_schema": lean_input(tool.input_schema),
                    "output_schema": outline_output(tool.output_schema),
                }
            )
            for tool in await super().list_tools()
        ]

    async def call_tool(
        self, name: str, arguments: dict[str, Any], context: Context | None = None
    ) -> Any:
        try:
            return await super().call_tool(name, arguments, context)
        except ToolError as exc:
            if isinstance(exc, UnexpectedToolError) or not isinstance(
                exc.__cause__, ValidationError
            ):
                raise
            # Still caused by the ValidationError: the SDK then logs the field names only.
            raise ToolError(explain(name, exc.__cause__)) from exc.__cause__
