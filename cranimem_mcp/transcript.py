"""A transcript turn: a memory written ``[<when>] <Speaker>: <text>``, and who speaks in it.

What :mod:`.speakers` and :mod:`.rerank` ask of a memory's text, and what the working set
keeps an index of (speaker -> the scope's live turns), so that a recall does not read every
memory of the scope to learn who its speakers are.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

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
