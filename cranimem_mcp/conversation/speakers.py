"""Speaker-centred recall: in a conversation's memories, a name the query gives is who, not
what (issue 18).

A memory written from a transcript reads ``[<when>] <Speaker>: <text>``. A question about one
of the scope's speakers ("Which sports does Dario play?") is answered by what that
speaker said, in the first person ("I joined a rowing club"): the turns that hold the name
are mostly the other speaker addressing them ("Hey Dario!"), which the name's words pull
up in both halves of the hybrid search. So when the query names a speaker of the scope, the
name is taken out of the words searched (:func:`focus`) and the named speaker's turns are
lifted instead (``retrieval.speaker_boost``, :mod:`.rerank`). On LoCoMo-dev, cosine alone
ranked 42.7% of the evidence in the top 5 with the name in the query and 52.1% without it.

Invariant: only a name that heads at least ``min_turns`` memories of the scope is a speaker.
A store of paragraphs written ``Title: text`` (HotpotQA's) has a "speaker" per paragraph,
heading one memory each, so its queries are searched as they are.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime

import numpy as np

from cranimem_mcp.buffer.episodic import EpisodicStore
from cranimem_mcp.buffer.working_set import LIVE, Entry
from cranimem_mcp.conversation.rerank import Rerank, rerank

_CONTENT_WORD = re.compile(r"[A-Za-z0-9]{3,}")


def _name(name: str) -> re.Pattern[str]:
    return re.compile(rf"(?<!\w){re.escape(name)}(?:['’]s)?(?!\w)", re.IGNORECASE)


# A capitalised word of the query that may be a speaker's short name ("Dar" for Dario); a
# sentence's first word is capitalised anyway ("And what did Andrew say?"), so not that one.
_SHORT = re.compile(r"(?<![.!?]\s)(?<!^)(?<!\w)([A-Z][a-z]{2,})(?:['’]s)?(?!\w)")


def named(query: str, known: Iterable[str]) -> dict[str, str]:
    """The ``known`` speakers the query names, each with the name it uses: the whole name as
    a word (case-insensitive), or a capitalised word of three letters or more that begins
    the name of one speaker only ("Dar" for Dario, not when Dario and Darius speak)."""
    known = list(known)
    found = {s: s for s in known if _name(s).search(query)}
    for word in _SHORT.findall(query.strip()):
        starting = [s for s in known if s.startswith(word) and s != word and s not in found]
        if len(starting) == 1 and not any(f.startswith(word) for f in found):
            found[starting[0]] = word
    return found


@dataclass(frozen=True)
class Focus:
    """A query about speakers of the scope: who it names, what it asks without them, and the
    memories they speak in."""

    names: frozenset[str]
    query: str  # the query with the names (and their "'s") taken out
    turns: frozenset[str]  # ids of the scope's memories the named speakers speak in


def focus(query: str, said: Mapping[str, Collection[str]]) -> Focus | None:
    """The speakers of the scope (``said``: each speaker and the ids of their turns, as
    :meth:`~cranimem_mcp.buffer.episodic.EpisodicStore.speakers` gives those heading enough
    of its memories) that the query names, the query without them, and their turns; None when
    it names none, when nothing but the names would be left to search for ("Noor?"), or
    when the scope is no conversation: fewer than two speakers take turns in it."""
    if len(said) < 2:
        return None
    names = named(query, said)
    if not names:
        return None
    rest = query
    for used in sorted(names.values(), key=len, reverse=True):  # "Mary Ann" before "Ann"
        rest = _name(used).sub(" ", rest)
    rest = " ".join(rest.split())
    if not _CONTENT_WORD.search(rest):
        return None
    turns = frozenset().union(*(said[name] for name in names))
    return Focus(frozenset(names), rest, turns)


async def their_turns(
    episodic: EpisodicStore, scope: str, query: str, qvec: np.ndarray, k: int,
    as_of: datetime | None, found: Focus, policy: Rerank,
) -> list[tuple[Entry, float]]:  # fmt: skip
    """The hybrid search among the named speakers' turns (``query`` without their names),
    re-scored by ``policy``: a turn beside one of theirs (the other's question, or the
    answer to it) is lent part of its score and may join."""
    pool = k * policy.pool
    limit = pool if as_of is None else 4 * pool
    hits = await episodic.hybrid(scope, qvec, query, LIVE, limit=limit, among=found.turns)
    entries = await episodic.live_rows(scope, LIVE) if policy.active else []
    if as_of is not None:  # what was known then
        hits = [h for h in hits if h.entry.happened_at <= as_of][:pool]
        entries = [e for e in entries if e.happened_at <= as_of]
    return rerank(hits, entries, found.names, policy)


def first(
    theirs: list[tuple[Entry, float]], others: list[tuple[Entry, float]]
) -> list[tuple[Entry, float]]:
    """The speakers' turns, then the other candidates not among them. A memory in both keeps
    the better of its two scores: a score lent to it as a neighbour never hides its own. The
    order is the score shown: the speakers' turns by their scores, and a turn ranked after
    them shows at most the weakest of theirs."""
    own = {entry.id: score for entry, score in others}
    seen = {entry.id for entry, _score in theirs}
    lifted = [(e, max(score, own.get(e.id, score))) for e, score in theirs]
    lifted.sort(key=lambda es: -es[1])
    cap = lifted[-1][1] if lifted else float("inf")
    return lifted + [(e, min(score, cap)) for e, score in others if e.id not in seen]
