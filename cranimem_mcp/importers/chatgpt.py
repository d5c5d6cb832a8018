"""ChatGPT's data export: ``conversations.json``, a list of conversations, each with ``title``,
``create_time`` (Unix seconds), ``current_node`` and ``mapping`` (node id -> ``{message,
parent, children}``; a message has ``author.role``, ``create_time`` and ``content``
``{content_type, parts}``).

A conversation is a tree: each edit or regenerated answer starts a branch. What the user saw
last is the branch that ends at ``current_node``, read by walking its parents to the root and
turning the path around; the other branches are left out. Of its messages the user's and the
assistant's text is read (``content_type`` "text", or the text parts of "multimodal_text");
system, tool and hidden messages and other content (code runs, browsing, reasoning) are
counted as skipped.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

from cranimem_mcp.importers.chat import field, in_order, turns
from cranimem_mcp.importers.records import Reading, Record, epoch, malformed

FORMAT = "ChatGPT"
_TEXT = {"text", "multimodal_text"}


def read(path: Path) -> Reading:
    out: list[Record] = []
    skipped: Counter[str] = Counter()
    for started, i, conv in in_order(path, "create_time", epoch):
        where = f"conversation {i + 1} ({str(conv.get('title') or '')[:40]!r})"
        cid = str(conv.get("id") or conv.get("conversation_id") or i + 1)
        for node_id, message in _branch(conv, path, where):
            mwhere = f"{where}, message {node_id}"
            author = field(message, "author", dict, path, mwhere)
            role = author.get("role")
            content = field(message, "content", dict, path, mwhere)
            meta = message.get("metadata") or {}
            if role not in ("user", "assistant"):
                skipped[f"{role or 'unknown'} message"] += 1
                continue
            if isinstance(meta, dict) and meta.get("is_visually_hidden_from_conversation"):
                skipped["hidden message"] += 1
                continue
            kind = content.get("content_type")
            if kind not in _TEXT:
                skipped[f"{kind} content"] += 1
                continue
            parts = content.get("parts", [])
            if not isinstance(parts, list):
                raise malformed(path, mwhere, "'content.parts' must be a list")
            text = "\n".join(p for p in parts if isinstance(p, str)).strip()
            if not text:
                skipped["empty message"] += 1
                continue
            when = epoch(message.get("create_time"), path, f"{mwhere}, create_time") or started
            mid = str(message.get("id") or node_id)
            out += turns(FORMAT, role, text, when, cid, mid)
    return Reading(out, dict(skipped))


def _branch(conv: dict[str, Any], path: Path, where: str) -> list[tuple[str, dict[str, Any]]]:
    """The messages from the root to ``current_node``, in order."""
    mapping = field(conv, "mapping", dict, path, where)
    node_id = field(conv, "current_node", str, path, where)
    path_ids: list[str] = []
    seen: set[str] = set()
    while node_id is not None:
        if node_id in seen:
            raise malformed(path, where, f"node {node_id} is its own ancestor")
        seen.add(node_id)
        node = mapping.get(node_id)
        if not isinstance(node, dict):
            raise malformed(path, where, f"'mapping' has no node {node_id!r:.60}")
        path_ids.append(node_id)
        parent = node.get("parent")
        if parent is not None and not isinstance(parent, str):
            raise malformed(path, f"{where}, node {node_id}", "'parent' must be a string")
        node_id = parent
    out = []
    for nid in reversed(path_ids):
        message = mapping[nid].get("message")
        if message is None:  # the root, or a node without a message
            continue
        if not isinstance(message, dict):
            raise malformed(path, f"{where}, node {nid}", "'message' must be an object")
        out.append((nid, message))
    return out
