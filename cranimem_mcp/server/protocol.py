"""The ``MCPServer`` cranimem runs (:class:`CranimemServer`): the SDK's, with the protocol's
corners as clients and the conformance suite expect them.

- ``tools/list`` sends lean schemas (:mod:`.schemas`).
- A tool argument the SDK rejected reads as one sentence (:mod:`.arguments`).
- An unknown tool, prompt or resource, or a prompt's missing or invalid argument, is the
  JSON-RPC error -32602 (invalid params) with a message that names it, never a crash (mcp
  2.3 answers an unknown prompt with code 0, -32603 on 2026-07-28, and logs a traceback; an
  unknown tool with a tool result marked as an error).
- ``logging/setLevel`` and the log records (:mod:`.logs`) and
  ``notifications/roots/list_changed`` (:mod:`.roots`) are heard in the public middleware
  chain: ``MCPServer`` has no public way to register their handlers (only its private
  low-level server has one).
"""

from __future__ import annotations

from typing import Any

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError, UnexpectedToolError
from mcp.shared.exceptions import MCPError
from mcp_types import INVALID_PARAMS, Tool
from pydantic import ValidationError

from cranimem_mcp.server.arguments import explain
from cranimem_mcp.server.logs import serve_logging
from cranimem_mcp.server.roots import hear_roots_changed
from cranimem_mcp.server.schemas import lean_input, outline_output


class CranimemServer(MCPServer):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.middleware.append(hear_roots_changed)
        self.middleware.append(serve_logging)

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
        _known("tool", name, [t.name for t in await super().list_tools()])
        try:
            return await super().call_tool(name, arguments, context)
        except ToolError as exc:
            if isinstance(exc, UnexpectedToolError) or not isinstance(
                exc.__cause__, ValidationError
            ):
                raise
            # Still caused by the ValidationError: the SDK then logs the field names only.
            raise ToolError(explain(name, exc.__cause__)) from exc.__cause__

    async def get_prompt(
        self, name: str, arguments: dict[str, Any] | None = None, context: Context | None = None
    ) -> Any:
        prompts = {p.name: p for p in await self.list_prompts()}
        _known("prompt", name, list(prompts))
        given = arguments or {}
        missing = [
            a.name for a in prompts[name].arguments or [] if a.required and a.name not in given
        ]
        if missing:
            raise MCPError(
                code=INVALID_PARAMS,
                message=f"Missing argument for prompt {name}: {', '.join(missing)}",
            )
        try:
            return await super().get_prompt(name, arguments, context)
        except ValueError as exc:
            invalid = _validation_error(exc)
            if invalid is None:
                raise
            raise MCPError(
                code=INVALID_PARAMS, message=explain(f"prompt {name}", invalid)
            ) from None


def _known(kind: str, name: str, names: list[str]) -> None:
    if name not in names:
        raise MCPError(
            code=INVALID_PARAMS,
            message=f"Unknown {kind}: {name!r} (the {kind}s: {', '.join(sorted(names))})",
        )


def _validation_error(exc: BaseException) -> ValidationError | None:
    """The ``ValidationError`` the SDK wrapped (twice) in a prompt's ``ValueError``, if any."""
    while exc is not None:
        if isinstance(exc, ValidationError):
            return exc
        exc = exc.__cause__  # type: ignore[assignment]
    return None
