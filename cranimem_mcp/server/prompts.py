"""The server's prompts: what a user picks by hand (a client shows them as slash commands),
each a user message that asks the model to call a tool.
"""

from __future__ import annotations

from typing import Annotated

from mcp.server.mcpserver import MCPServer
from pydantic import Field

from cranimem_mcp.models import MAX_CONTENT, MAX_ENTITY


def add_prompts(mcp: MCPServer) -> None:
    @mcp.prompt(name="remember_this", title="Remember this")
    def remember_this(
        fact: Annotated[
            str, Field(min_length=1, max_length=MAX_CONTENT, description="What to remember")
        ],
    ) -> str:
        """Ask the assistant to remember something, pinned."""
        return (
            f"Remember this: {fact}\n\n"
            "Store it with the `remember` tool, in my words, with pin=true."
        )

    @mcp.prompt(name="what_do_you_know", title="What do you know about...")
    def what_do_you_know(
        topic: Annotated[
            str,
            Field(min_length=1, max_length=MAX_ENTITY, description="A person, place or subject"),
        ],
    ) -> str:
        """Ask the assistant what it remembers about a topic."""
        return (
            f"What do you know about {topic}?\n\n"
            "Look it up with the `recall` tool first and answer from what it returns; if "
            "nothing is remembered, say so."
        )
