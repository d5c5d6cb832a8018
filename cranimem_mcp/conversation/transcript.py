"""What a conversation is, in the text of its memories: the package's one speaker rule.

A *turn* is a memory written ``[<when>] <Speaker>: <text>``, where ``<when>`` names a date
(the stamp a logging client writes, "[9:12 am on 3 June, 2025] Noor: ..."), and
``<Speaker>`` is one to three capitalised words. Only a turn has a speaker. A word before a
colon without a dated stamp is a *label*: a note's ("Note:", "TODO:", "Decision:",
"Meeting notes:"), a title's ("Catan: ..."), anything's. A label is never a speaker, never
an entity of the graph (the extractor reads the text after it, said by the user), and a
store of labelled notes has no conversation: the conversation rules (:mod:`.speakers`,
:mod:`.rerank`, :mod:`.threads`) do not apply to it.

What those rules ask of a memory's text, and what the working set keeps an index of (speaker
-> the scope's live turns), so that a recall does not read every memory of the scope to learn
who its speakers are. A turn often means something only after the turn before it (the answer
to a question): :mod:`.threads` embeds it with that turn, by the rules here.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from datetime import datetime, timedelta

from cranimem_mcp.temporal import observed_at

_NAME = r"[A-Z][\w'’.-]{0,30}(?: [A-Z][\w'’.-]{0,30}){0,2}"
# A turn: a bracketed stamp, then a speaker's name before a colon.
_TURN = re.compile(rf"^\s*\[([^\]\n]{{1,80}})\]\s*({_NAME}):\s")
# A label: one or two words before a colon at the start, the first capitalised ("Note:",
# "TODO:", "Meeting notes:"), after a stamp or not; "I" is a sentence's subject, not a label.
_LABEL = re.compile(
    r"^\s*(?:\[[^\]\n]{1,80}\]\s*)?(?!I\b)([A-Z][\w'’.-]{0,30}(?: [A-Za-z][\w'’.-]{0,30})?):\s+"
)


# A note's label before a dash ("Note - Tom's daughter Mia is 7", "Decision – we use pnpm"),
# or an upper-case one before a space ("TODO Ana owns the migration", "FYI the build ..."):
# only words notes are labelled with (a name before a dash is a sentence's subject: "Tom -
# the new hire - starts Monday").
_LABEL_WORDS = (
    "note|notes|note to self|todo|to-do|to do|fixme|reminder|decision|update|important|fyi|"
    "nb|ps|psa|idea|lesson|lesson learned|context|caveat|warning|tip|status|blocker|fact|"
    "event|summary|background|convention|preference|rule|bug|fix|heads up|follow-up|"
    "follow up|action item|question|answer"
)
_DASH_LABEL = re.compile(
    rf"^\s*(?:\[[^\]\n]{{1,80}}\]\s*)?(?:{_LABEL_WORDS})\s+[-–—]+\s+", re.IGNORECASE
)
_CAPS_LABEL = re.compile(
    r"^\s*(?:\[[^\]\n]{1,80}\]\s*)?(?:TODO|FIXME|FYI|NB|PS|PSA|NOTE|IMPORTANT|UPDATE|WARNING"
    r"|REMINDER|DECISION)[,.]?\s+(?=\S)"
)


def speaker(content: str) -> str | None:
    """The speaker of a turn (a dated stamp, then a name before a colon), or None for any
    other text: a labelled note, a title, a sentence. Not cached: it is asked once per memory
    entering or leaving a mirror (an anchored match, and a date read only for a stamped
    text), and a cache keyed by texts would keep hard-forgotten ones in memory."""
    m = _TURN.match(content)
    if m is None or observed_at(m.group(1)) is None:
        return None
    return m.group(2)


def utterance(content: str) -> tuple[str | None, str]:
    """Who says ``content`` (a turn's speaker, or None: the user) and what is said: the text
    without its stamp and its speaker, or without its label ("Decision: we use pnpm" -> "we
    use pnpm"; "Note - ...", "TODO ...")."""
    m = _TURN.match(content)
    if m is not None and observed_at(m.group(1)) is not None:
        return m.group(2), content[m.end() :].lstrip()
    m = _LABEL.match(content) or _DASH_LABEL.match(content) or _CAPS_LABEL.match(content)
    return None, content[m.end() :] if m else content


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
    """The date of the stamp a turn opens with ("[9:12 am on 3 June, 2025] Noor: ..."), or
    None when it has none (or not one that names a date)."""
    m = _STAMP.match(content)
    return observed_at(m.group(1)) if m else None


def body(content: str) -> str:
    """A turn without its stamp: the speaker and what they said."""
    return _STAMP.sub("", content, count=1)


def follows(previous: str, content: str, gap: timedelta = SESSION_GAP) -> bool:
    """Whether ``content`` goes on the conversation of ``previous`` (a memory's text): both
    are turns (:func:`speaker`) whose stamps' dates are within ``gap``: one session. Not the
    dates a text mentions: a recall's neighbours (:mod:`.rerank`) go by those, within the
    same ``gap``."""
    if speaker(previous) is None or speaker(content) is None:
        return False
    before, after = stamp(previous), stamp(content)
    return before is not None and after is not None and abs(after - before) <= gap


def in_context(previous: str, content: str) -> str:
    """What a turn means in its conversation: the turn it follows (whole), then it (without
    its stamp). "Researching adoption agencies" answers "What are your plans for the summer?"."""
    return f"{previous}\n{body(content)}"
