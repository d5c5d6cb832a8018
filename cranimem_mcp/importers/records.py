"""What a reader makes of another tool's file: :class:`Record`, one memory to write, in the
shape the memory service's ``remember`` takes, and :func:`malformed`, the one error a reader
raises (naming the file and where in it).

A record is made to pass the service's checks as it is (content within ``MAX_CONTENT``, tags
within ``MAX_TAG`` and ``MAX_TAGS``, a source within ``MAX_SOURCE``): a reader reads the
whole file and shapes every record before the importer writes the first, so a file that is
malformed anywhere writes nothing, and a valid one never stops half-way on a record the
engine refuses.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from datetime import UTC, datetime

from cranimem_mcp.errors import InvalidInput
from cranimem_mcp.models import MAX_CONTENT, MAX_SOURCE, MAX_TAG, MAX_TAGS


@dataclass(frozen=True)
class Record:
    """One memory to write. ``source`` is ``<format>:<id>``, unique in that format's files
    (a node of the peer, a message of a chat): the importer skips a record whose source a
    memory of the scope already has, so a second import of the same file writes nothing."""

    content: str
    source: str
    kind: str  # "observation", "relation", "entity", "memory", "turn": what the report counts
    said_at: datetime | None = None  # when it was written or said, if the file says
    tags: tuple[str, ...] = ()
    role: str | None = None  # a chat turn's: "user" or "assistant"
    pin: bool = False  # the user chose to store it in the other tool


@dataclass(frozen=True)
class Reading:
    """What a reader made of a file: the records to write, in the order to write them, and
    what it left out on purpose, counted by why (a row the peer deleted, a system message)."""

    records: list[Record]
    skipped: dict[str, int] = field(default_factory=dict)


def malformed(path: object, where: str, what: str) -> InvalidInput:
    """The error of a file that is not what its format says: ``<file>: <where>: <what>``."""
    return InvalidInput(f"{path}: {where}: {what}")


def source_id(fmt: str, key: str) -> str:
    """``<fmt>:<key>``, or ``<fmt>:<hash of key>`` when that would be longer than a source
    may be."""
    sid = f"{fmt}:{key}"
    if len(sid) <= MAX_SOURCE:
        return sid
    return f"{fmt}:{hashlib.sha256(key.encode()).hexdigest()[:32]}"


def clean_tags(tags: list[str] | tuple[str, ...]) -> tuple[str, ...]:
    """Tags as the service takes them: stripped, non-empty, each cut to ``MAX_TAG``
    characters, no repeats, at most ``MAX_TAGS``."""
    out = dict.fromkeys(t.strip()[:MAX_TAG].strip() for t in tags if t and t.strip())
    return tuple(out)[:MAX_TAGS]


def pieces(text: str, room: int = MAX_CONTENT) -> list[str]:
    """``text`` in parts of at most ``room`` characters, cut between paragraphs where it can
    (else between lines, else anywhere): a chat turn longer than a memory may be is kept
    whole, in parts, rather than cut short."""
    text = text.strip()
    out: list[str] = []
    while len(text) > room:
        cut = max(text.rfind("\n\n", 0, room), text.rfind("\n", 0, room))
        if cut <= room // 2:
            cut = text.rfind(" ", 0, room)
        if cut <= room // 2:
            cut = room
        out.append(text[:cut].strip())
        text = text[cut:].strip()
    if text:
        out.append(text)
    return out


def epoch(value: object, path: object, where: str) -> datetime | None:
    """A Unix time in seconds (an int or a float) as a UTC datetime; ``None`` stays None."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise malformed(path, where, f"expected a Unix time in seconds, got {value!r:.60}")
    try:
        return datetime.fromtimestamp(float(value), UTC)
    except (OverflowError, OSError, ValueError) as exc:
        raise malformed(path, where, f"not a time: {value!r:.60}") from exc


def iso(value: object, path: object, where: str) -> datetime | None:
    """An ISO 8601 time ("2024-05-03T14:02:11.123Z") as a datetime (UTC when it names no
    zone); ``None`` stays None."""
    if value is None:
        return None
    if not isinstance(value, str):
        raise malformed(path, where, f"expected an ISO 8601 time, got {value!r:.60}")
    try:
        when = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
    except ValueError as exc:
        raise malformed(path, where, f"not an ISO 8601 time: {value!r:.60}") from exc
    return when if when.tzinfo else when.replace(tzinfo=UTC)
