"""Claude.ai's data export: ``conversations.json``, a list of conversations, each with
``uuid``, ``name``, ``created_at`` (ISO 8601) and ``chat_messages``: ``{uuid, sender
("human" or "assistant"), text, content: [{type, text}], created_at}``.

The export lists the messages of a conversation in order. A message's text is its ``text``
blocks (``content``), else its ``text`` field; tool calls and their results are left out.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from cranimem_mcp.importers.chat import field, in_order, turns
from cranimem_mcp.importers.records import Reading, Record, iso, malformed

FORMAT = "Claude"
_ROLES = {"human": "user", "assistant": "assistant"}


def read(path: Path) -> Reading:
    out: list[Record] = []
    skipped: Counter[str] = Counter()
    for started, i, conv in in_order(path, "created_at", iso):
        where = f"conversation {i + 1} ({str(conv.get('name') or '')[:40]!r})"
        cid = field(conv, "uuid", str, path, where)
        for j, message in enumerate(field(conv, "chat_messages", list, path, where)):
            mwhere = f"{where}, message {j + 1}"
            if not isinstance(message, dict):
                raise malformed(path, mwhere, "not a JSON object")
            sender = field(message, "sender", str, path, mwhere)
            role = _ROLES.get(sender)
            if role is None:
                skipped[f"{sender} message"] += 1
                continue
            text = _text(message, path, mwhere)
            if not text:
                skipped["empty message"] += 1
                continue
            when = iso(message.get("created_at"), path, f"{mwhere}, created_at") or started
            mid = str(message.get("uuid") or j + 1)
            out += turns(FORMAT, role, text, when, cid, mid)
    return Reading(out, dict(skipped))


def _text(message: dict, path: Path, where: str) -> str:
    blocks = message.get("content")
    if blocks:
        if not isinstance(blocks, list):
            raise malformed(path, where, "'content' must be a list of blocks")
        texts = [
            b["text"] for b in blocks
            if isinstance(b, dict) and b.get("type") == "text" and isinstance(b.get("text"), str)
        ]  # fmt: skip
        if texts:
            return "\n\n".join(texts).strip()
    text = message.get("text", "")
    if not isinstance(text, str):
        raise malformed(path, where, f"'text' must be a string, got {text!r:.60}")
    return text.strip()
