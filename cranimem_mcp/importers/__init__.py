"""Import from the peers and the chat apps: a reader per format makes a file into
:class:`Record` s (read whole, so a malformed file writes nothing), and
:func:`import_reading` writes them through the memory service's ``remember``, the normal
write path (the secrets guard, the duplicate check, the gate), each with its original time.

``READERS`` names the formats: ``server-memory`` (the reference MCP memory server's
``memory.jsonl``), ``mcp-memory-service`` (its SQLite database), ``chatgpt`` and ``claude``
(the apps' ``conversations.json``). Our own export is read by :mod:`cranimem_mcp.cli.portability`.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from cranimem_mcp.importers import chatgpt, claude, mcp_memory_service, server_memory
from cranimem_mcp.importers.importing import ImportReport, Progress, import_reading
from cranimem_mcp.importers.records import Reading, Record

READERS: dict[str, Callable[[Path], Reading]] = {
    "server-memory": server_memory.read,
    "mcp-memory-service": mcp_memory_service.read,
    "chatgpt": chatgpt.read,
    "claude": claude.read,
}

__all__ = ["READERS", "ImportReport", "Progress", "Reading", "Record", "import_reading"]
