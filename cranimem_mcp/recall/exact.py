"""Exact tokens: the words of a query that an embedder cannot tell apart, and the memories
that contain them (issue 18).

"Person 123 lives" and "Person 17 lives in Lyon" embed a few hundredths apart, so in a store
of thousands of such facts the vector half of the hybrid search ranks the one about person 123
anywhere in its top tens. The full-text half finds it first (BM25: "123" is in one memory),
but the fusion weighs the vector half at 0.7 against the text half's 0.3, each normalised over
its own list, so the text half's winner lands mid-list: median rank 3 at 1k memories, 8 at
10k (docs/RESULTS.md, "Exact words count").

An exact token is a query word with a digit in it ("123", "v2", "2023", "B-17"), an
underscore (``user_id``) or a capital after a small letter (``getUser``): identifiers, not
meanings. When the scope holds only a few live memories containing every exact token of the
query (at most ``k``: the token singles them out), those that also mean about what the
query means (cosine within :data:`MARGIN` of the best candidate's score) go first, in their
own order, ahead of every other candidate.

Invariant: the rule only reorders; a promoted memory's score is lifted by the least amount
that puts it above every other candidate (a recall across scopes merges them by score), and a
query without exact tokens is ranked as before, with no extra search.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from cranimem_mcp.buffer.records import Hit
from cranimem_mcp.buffer.working_set import Entry

_WORD = re.compile(r"\w+")
_EXACT = re.compile(r"\d|_|[a-z][A-Z]")
# How far below the best candidate's score a memory holding the exact tokens may mean and
# still go first. In the synthetic "Person N lives in X" store the fact the query names
# sits at most 0.16 below the best cosine (1k and 10k facts, MiniLM); "I have 3 cats" sits
# 0.30 below "My favourite movies are Alien and Heat" for "my top 3 movies": the number
# there is a quantity, not a name, and meaning should win.
MARGIN = 0.2
SHARE = 0.05
LIFT = 0.01  # how far above the best other candidate a promoted memory is shown


def tokens(query: str) -> list[str]:
    """The query's exact tokens, in order, each once."""
    return list(dict.fromkeys(w for w in _WORD.findall(query) if _EXACT.search(w)))


def contains(content: str, words: Sequence[str]) -> bool:
    """Whether ``content`` holds every one of ``words`` as a whole word (any case)."""
    return all(re.search(rf"(?<!\w){re.escape(w)}(?!\w)", content, re.IGNORECASE) for w in words)


def matches(hits: Sequence[Hit], words: Sequence[str], k: int, live: int) -> list[Hit]:
    """The hits (a full-text search for ``words``) that contain every word, when there are
    at most ``k`` of them and at most :data:`SHARE` of the scope's ``live`` memories: more,
    and the tokens single nothing out."""
    found = [h for h in hits if contains(h.entry.content, words)]
    return found if len(found) <= min(k, SHARE * live) else []


def first(ranked: Sequence[tuple[Entry, float]], exact: Sequence[Hit]) -> list[tuple[Entry, float]]:
    """``ranked`` (candidates with their scores, best first) with the ``exact`` matches that
    mean about what the best candidate means moved to the front, scores lifted."""
    if not exact:
        return list(ranked)
    score = {e.id: s for e, s in ranked}
    best = max(score.values(), default=max(h.similarity for h in exact))
    chosen = {}
    for h in exact:
        own = score.get(h.entry.id, h.similarity)
        if own >= best - MARGIN:
            chosen[h.entry.id] = (h.entry, own)
    if not chosen:
        return list(ranked)
    others = [(e, s) for e, s in ranked if e.id not in chosen]
    top_other = max((s for _e, s in others), default=None)
    promoted = sorted(chosen.values(), key=lambda es: -es[1])
    if top_other is not None:
        lift = max(0.0, top_other + LIFT - min(s for _e, s in promoted))
        promoted = [(e, s + lift) for e, s in promoted]
    return promoted + others
