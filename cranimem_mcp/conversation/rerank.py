"""Re-scoring the episodic path's candidates by what a conversation's memories share beyond
their words: who speaks in them, and which turns stand next to each other (issue 18).

A memory written from a transcript reads ``[<when>] <Speaker>: <text>`` (a turn,
:mod:`.transcript`); nothing here applies to any other memory. When the query names
a speaker of the scope ("What do Dario's kids like?"), the turns that speaker said are
about them even where they say "I" and "we" (full-text search matches the name in every turn
that addresses them as well). Turns written one after the other in the same session answer
each other ("How are the kids?" / "They loved the trip"): a strong hit lends part of its
score to its neighbours, so a reply that never repeats the question's words can still rank.

Invariant: re-scoring only reorders and extends the candidates, by the fused relevance plus
bounded lifts; the score shown is that sum on the cosine's scale
(:mod:`~cranimem_mcp.buffer.fusion`), so it follows the order and the context block's
``min_score`` keeps its meaning. With both weights at 0 the order is the hybrid search's own.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass
from datetime import timedelta

from cranimem_mcp.buffer.records import Hit
from cranimem_mcp.buffer.working_set import Entry
from cranimem_mcp.conversation.transcript import speaker


@dataclass(frozen=True)
class Rerank:
    """How the candidates are re-scored (settings ``retrieval.*``)."""

    pool: int = 1  # candidates fetched per memory returned
    speaker_boost: float = 0.0  # added to a turn whose speaker the query names
    neighbour_weight: float = 0.0  # share of a hit's score lent to the turns beside it
    session_hours: float = 1.0  # neighbours must have happened this close to each other

    @property
    def active(self) -> bool:
        return self.speaker_boost > 0 or self.neighbour_weight > 0


def rerank(
    hits: Sequence[Hit], entries: Sequence[Entry], named: Collection[str], policy: Rerank
) -> list[tuple[Entry, float]]:
    """The candidates with their scores, best first. ``hits`` are the hybrid search's, best
    first; ``entries`` the scope's live memories (the neighbours come from them); ``named``
    the scope's speakers the query names (:mod:`.speakers`).

    The order is the fused relevance plus the lifts (the fused relevance carries the
    full-text half: ordering the candidates by cosine alone lost a fifth of the evidence
    found, R@5 0.569 -> 0.444 with three candidates per memory); the score shown is that sum
    on the cosine's scale (:meth:`~cranimem_mcp.buffer.records.Hit.scaled`), so it follows
    the order."""
    if not policy.active:  # the hybrid search's own order, as the module docstring says
        return [(h.entry, h.score) for h in hits]
    key = {h.entry.id: h.fused for h in hits}
    by_id: dict[str, Entry] = {h.entry.id: h.entry for h in hits}
    extra = dict.fromkeys(key, 0.0)
    if policy.speaker_boost > 0 and named:
        for memory_id, entry in by_id.items():
            if speaker(entry.content) in named:
                extra[memory_id] += policy.speaker_boost
    if policy.neighbour_weight > 0:
        lifted = {m: key[m] + extra[m] for m in key}
        for memory_id, (entry, lent) in _neighbours(hits, entries, lifted, policy).items():
            if memory_id in by_id:
                extra[memory_id] += lent
            else:  # a turn beside a hit that the search did not find: it rides on the hit
                by_id[memory_id] = entry
                key[memory_id], extra[memory_id] = 0.0, lent
    ranked = sorted(by_id.values(), key=lambda e: -(key[e.id] + extra[e.id]))
    scale = hits[0].scaled if hits else float  # one search: one map for all its hits
    return [(e, scale(key[e.id] + extra[e.id])) for e in ranked]


def _neighbours(
    hits: Sequence[Hit],
    entries: Sequence[Entry],
    scores: dict[str, float],
    policy: Rerank,
) -> dict[str, tuple[Entry, float]]:
    """What each turn beside a hit (turn number +-1, both turns of a conversation, their
    events within the session's hours) is lent: the largest share of a neighbouring hit's
    score. Only turns lend and borrow
    (:func:`~cranimem_mcp.conversation.transcript.speaker`): notes written one after the
    other are no conversation, and paragraphs that share a title were not either (a gold
    HotpotQA paragraph lost its place to its neighbours' lent scores, docs/RESULTS.md)."""
    by_turn = {e.turn: e for e in entries if e.turn is not None}
    window = timedelta(hours=policy.session_hours)
    lent: dict[str, tuple[Entry, float]] = {}
    w = policy.neighbour_weight
    for h in hits:
        if h.entry.turn is None or speaker(h.entry.content) is None:
            continue
        for turn in (h.entry.turn - 1, h.entry.turn + 1):
            n = by_turn.get(turn)
            # Event times (happened_at): a turn's stamp dates it.
            if n is None or abs(n.happened_at - h.entry.happened_at) > window:
                continue
            if speaker(n.content) is None:
                continue
            share = w * scores[h.entry.id]
            if share > lent.get(n.id, (n, 0.0))[1]:
                lent[n.id] = (n, share)
    return lent
