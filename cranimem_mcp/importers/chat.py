"""A chat app's message as memories: a transcript turn, ``[<when>] <Speaker>: <text>``.

The turn form is the package's one speaker rule (:mod:`cranimem_mcp.conversation.transcript`):
the user's turns are the user's ("User", whom the extractor reads as the user), the app's
are the app's ("ChatGPT", "Claude"), so nothing the assistant said becomes a fact about the
user; the stamp dates the turn, and a turn is embedded with the one it follows (an answer
with its question). Every turn goes through the gate, as the stream of a long history (the
paper's gated intake): the gate, not the importer, decides what of it lasts.

A turn longer than a memory may be is written in parts, each with the turn's stamp and
speaker. The file is read whole (``conversations.json`` is one JSON document), and every
record made, before the first write.
"""

from __future__ import annotations

import json
import zipfile
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

from cranimem_mcp.importers.records import Record, malformed, pieces, source_id
from cranimem_mcp.models import MAX_CONTENT

SPEAKERS = {"user": "User"}  # the app's own name stands for "assistant"


EXPORT = "conversations.json"


def conversations(path: Path) -> list[Any]:
    """The JSON list a ``conversations.json`` holds: the file itself, the one in a folder, or
    the one in the export's zip as the app sent it."""
    try:
        if path.is_dir():
            path = path / EXPORT
        if zipfile.is_zipfile(path):
            with zipfile.ZipFile(path) as archive:
                names = [n for n in archive.namelist() if n.rsplit("/", 1)[-1] == EXPORT]
                if not names:
                    raise malformed(path, "zip", f"holds no {EXPORT}")
                text = archive.read(min(names, key=len)).decode("utf-8")
        else:
            text = path.read_text(encoding="utf-8")
        data = json.loads(text)
    except (OSError, UnicodeDecodeError, zipfile.BadZipFile) as exc:
        raise malformed(path, "reading", str(exc)) from exc
    except ValueError as exc:
        raise malformed(path, "JSON", str(exc)) from exc
    if not isinstance(data, list):
        raise malformed(path, "top level", "expected a list of conversations")
    return data


def in_order(
    path: Path, stamp: str, parse: Callable[[object, object, str], datetime | None]
) -> list[tuple[datetime | None, int, dict[str, Any]]]:
    """The export's conversations as (when it began, by ``parse`` of its ``stamp`` field;
    its index; the object), in the order they began, those without a time first in the
    file's order: the history as a stream."""
    chats = []
    for i, conv in enumerate(conversations(path)):
        where = f"conversation {i + 1}"
        if not isinstance(conv, dict):
            raise malformed(path, where, "not a JSON object")
        chats.append((parse(conv.get(stamp), path, f"{where}, {stamp}"), i, conv))
    chats.sort(key=lambda c: (c[0] is not None, c[0].timestamp() if c[0] else 0.0, c[1]))
    return chats


def turns(
    app: str,
    role: str,
    text: str,
    when: datetime | None,
    conversation: str,
    message: str,
) -> list[Record]:
    """The records of one message: its turn, in parts when it is long."""
    speaker = SPEAKERS.get(role, app)
    stamp = f"[{when:%Y-%m-%d %H:%M}] " if when is not None else ""
    prefix = f"{stamp}{speaker}: "
    parts = pieces(text, MAX_CONTENT - len(prefix))
    fmt = app.lower()
    return [
        Record(
            content=prefix + part,
            source=source_id(fmt, f"{conversation}/{message}" + (f"#{i}" if i else "")),
            kind="turn",
            said_at=when,
            tags=(fmt,),
            role=role,
        )
        for i, part in enumerate(parts)
    ]


def field(item: dict[str, Any], name: str, kind: type, path: Path, where: str) -> Any:
    """``item[name]``, which must be there and of ``kind``."""
    if name not in item:
        raise malformed(path, where, f"no '{name}'")
    value = item[name]
    if not isinstance(value, kind) or isinstance(value, bool):
        raise malformed(path, where, f"'{name}' must be a {kind.__name__}, got {value!r:.60}")
    return value
