"""A transcript turn: a memory written ``[<when>] <Speaker>: <text>``, who speaks in it, and
the turn it follows.

What :mod:`.speakers` and :mod:`.rerank` ask of a memory's text, and what the working set
keeps an index of (speaker -> the scope's live turns), so that a recall does not read every
memory of the scope to learn who its speakers are. A turn often means something only after
the turn before it (the answer to a question): :mod:`.threads` embeds it with that turn, by
the rules here.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from datetime import datetime, timedelta

from cranimem_mcp.temporal import observed_at

# A transcript line's speaker: one to three capitalised words before a colon, at the start
# or after a bracketed stamp ("[1:56 pm on 8 May, 2023] Caroline: ...").
_SPEAKER = re.compile(
    r"^\s*(?:\[[^\]\n]{1,80}\]\s*)?([A-Z][\w'’.-]{0,30}(?: [A-Z][\w'’.-]{0,30}){0,2}):\s"
)


def speaker(content: str) -> str | None:
    """The speaker a transcript turn names, or None for any other text. Not cached: it is
    asked once per memory entering or leaving a mirror (an anchored match, about a
    microsecond), and a cache keyed by texts would keep hard-forgotten ones in memory."""
    m = _SPEAKER.match(content)
    return m.group(1) if m else None


def turns_by_speaker(memories: Iterable[tuple[str, str]]) -> dict[str, set[str]]:
    """Each speaker's turns among ``memories`` ((id, content) pairs): speaker -> ids."""
    out: dict[str, set[str]] = {}
    for memory_id, content in memories:
        name = speaker(content)
        if name is not None:
            out.setdefault(name, set()).add(memory_id)
    return out


# --- the turn a turn follows -----------------------------------------------------------------

# A bracketed stamp opening a turn ("[1:56 pm on 8 May, 2023] "): what dates the session.
_STAMP = re.compile(r"^\s*\[([^\]\n]{1,80})\]\s*")
# Two turns this close are of one session, unless a setting says otherwise
# (``retrieval.session_hours``): LoCoMo's sessions are days apart, its turns share the
# session's stamp, which names the day only.
SESSION_GAP = timedelta(hours=1)


def stamp(content: str) -> datetime | None:
    """The date of the stamp a turn opens with ("[1:56 pm on 8 May, 2023] Caroline: ..."), or
    None when it has none (or not one that names a date)."""
    m = _STAMP.match(content)
    return observed_at(m.group(1)) if m else None


def body(content: str) -> str:
    """A turn without its stamp: the speaker and what they said."""
    return _STAMP.sub("", content, count=1)


def follows(
    previous: str, written: datetime, content: str, now: datetime,
    gap: timedelta = SESSION_GAP,
) -> bool:  # fmt: skip
    """Whether ``content`` (written ``now``) goes on the conversation of ``previous`` (a
    memory's text, written at ``written``): both are transcript turns of one session. Both
    stamped: their stamps' dates within ``gap``; both unstamped: their write times within
    ``gap``; one of each: not one session. Not the dates a text mentions: a recall's
    neighbours (:mod:`.rerank`) go by those, within the same ``gap``."""
    if speaker(previous) is None or speaker(content) is None:
        return False
    before, after = stamp(previous), stamp(content)
    if before is not None and after is not None:
        return abs(after - before) <= gap
    if before is None and after is None:
        return abs(now - written) <= gap
    return False


def in_context(previous: str, content: str) -> str:
    """What a turn means in its conversation: the turn it follows (whole), then it (without
    its stamp). "Researching adoption agencies" answers "What are your plans for the summer?"."""
    return f"{previous}\n{body(content)}"
