"""Dual-path recall (paper B.5): the episodic path and the graph path, merged into one
compact context block.

Episodic path: LanceDB hybrid search (vector + full-text, fused) over the scope's buffer
(``[recent]``) and long-term memories (``[memory]``), ranked by the :class:`.ranking.Ranker`
the engine hands in (the hybrid search's order, or conversation-aware). Graph path: the query's
entities, and those of the best memories, are linked to graph nodes (:func:`link`: any span
of up to five words that names an entity of the scope, and the speaker for a first-person
text); a walk of up to ``hops`` collects facts with their support and source memories.
Facts are scored by cosine to the query, discounted per hop and lifted by support.
A query naming a number or an identifier puts the few memories holding it first
(:mod:`.exact`). The trash is searched only when ``paths`` names it; otherwise, when the
scope has trash, a small search over it tells the result which trashed memories would have
answered better (``trashed``, ``notice``): nothing pruned or forgotten vanishes silently.

The context block (:mod:`.context`) never exceeds ``max_chars``; it holds the best-scoring
memories that fit, then the best-scoring facts that bear on the query in the room left, every
line labelled, each memory with the score that ranked it.
"""

from __future__ import annotations

import heapq
import math
import re
import time
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import partial
from typing import Any

import numpy as np
from rdflib import URIRef

from cranimem_mcp.backends.embeddings import Embedder, EmbeddingCache
from cranimem_mcp.buffer.episodic import EpisodicStore
from cranimem_mcp.buffer.working_set import LIVE
from cranimem_mcp.conversation.speakers import Focus
from cranimem_mcp.coordination import RecallCounts, meanwhile
from cranimem_mcp.extraction import linkage, syntax
from cranimem_mcp.graph.store import GraphStore
from cranimem_mcp.models import (
    Fact,
    RecallItem,
    RecallResult,
    fact_text,
)
from cranimem_mcp.recall import exact
from cranimem_mcp.recall.context import floor, render
from cranimem_mcp.recall.parts import best_of, parts
from cranimem_mcp.recall.ranking import Ranker
from cranimem_mcp.recall.when import asked_when
from cranimem_mcp.temporal import decay
from cranimem_mcp.validation import now

_WORD = re.compile(r"[\w'’&\-.]+")
_FIRST_PERSON = re.compile(r"\b(i|me|my|mine|myself|i'm|i've)\b", re.I)
SPEAKER = "User"  # the extractors' name for the one who speaks in the first person


async def episodic_path(
    episodic: EpisodicStore,
    ranker: Ranker,
    scope: str,
    query: str,
    qvec: np.ndarray,
    k: int,
    as_of: datetime | None = None,
    tiers: tuple[str, ...] = LIVE,
    focus: Focus | None = None,
    date_boost: float = 0.0,
) -> list[RecallItem]:
    """The best ``k`` memories for ``query`` (embedded as ``qvec``) as ``ranker`` ranks them
    (with ``focus``, the ranker's focus of the query: ``query`` is then the query without the
    names it gives), the memories holding the query's exact tokens first. A query that names
    a time ("in March", "5 days ago": :mod:`.when`) ranks three times ``k`` candidates and
    lends those of events in that time ``date_boost`` of their score."""
    window = asked_when(query, as_of or now()) if date_boost > 0 else None
    ranked = await ranker.rank(scope, query, qvec, wanted(k, window), as_of, tiers, focus)
    if window is not None:
        ranked = sorted(
            ((m, s * (1 + date_boost) if window.holds(m.happened_at) else s) for m, s in ranked),
            key=lambda pair: -pair[1],
        )
    words = exact.tokens(query)
    if words:  # a number or an identifier: the few memories holding it go first
        found = await episodic.text_search(scope, qvec, " ".join(words), tiers, 4 * (k + 1))
        if as_of is not None:
            found = [h for h in found if h.entry.happened_at <= as_of]
        live = await episodic.count(scope, tiers)
        ranked = exact.first(ranked, exact.matches(found, words, k, live))
    ranked = ranked[:k]
    return [
        RecallItem(
            id=memory.id,
            path=PATH_OF[memory.tier],
            content=memory.content,
            score=round(score, 4),
            created_at=memory.created_at,
            tier=memory.tier,
            observed_at=memory.observed_at,
        )
        for memory, score in ranked
    ]


def wanted(k: int, window: object | None) -> int:
    """How many candidates the episodic path ranks to return ``k``: three times as many when
    the query names a time (``window``), whose events' scores are then lifted."""
    return k if window is None else 3 * k


async def read_ahead(
    ranker: Ranker, scope: str, query: str, k: int, as_of: datetime | None,
    tiers: tuple[str, ...], focus: Focus | None, date_boost: float,
) -> None:  # fmt: skip
    """What :func:`episodic_path` of the same arguments will ask the ranker for that needs no
    vector, asked now (:meth:`Ranker.read_ahead`)."""
    window = asked_when(query, as_of or now()) if date_boost > 0 else None
    await ranker.read_ahead(scope, query, wanted(k, window), as_of, tiers, focus)


def merged(rankings: list[list[RecallItem]], k: int) -> list[RecallItem]:
    """The best ``k`` of several scopes' rankings, each kept in its own order: the next is
    the best-scoring of the scopes' next items."""
    heads = [(-ranking[0].score, n, 0) for n, ranking in enumerate(rankings) if ranking]
    heapq.heapify(heads)
    out: list[RecallItem] = []
    while heads and len(out) < k:
        _score, n, i = heapq.heappop(heads)
        out.append(rankings[n][i])
        if i + 1 < len(rankings[n]):
            heapq.heappush(heads, (-rankings[n][i + 1].score, n, i + 1))
    return out


def _current_first(facts: list[Fact]) -> None:
    """A fact that changed: the question is about its subject and relation, not about the
    old object's wording. So the current fact takes the best score of its history and the
    superseded ones count half."""
    best: dict[tuple[str, str], float] = {}
    for f in facts:
        key = (f.subject, f.predicate)
        best[key] = max(best.get(key, f.score), f.score)
    for f in facts:
        if f.superseded:
            f.score = round(f.score * 0.5, 4)
        elif any(g.superseded and (g.subject, g.predicate) == (f.subject, f.predicate)
                 for g in facts):  # fmt: skip
            f.score = best[(f.subject, f.predicate)]


def mentions(text: str, max_words: int = 5) -> list[str]:
    """The names by which ``text`` may mention an entity: every span of up to ``max_words``
    words, longest first and left to right within a length, each also without a final
    "'s"; then the speaker, if the text speaks in the first person (a first-person question
    is about them)."""
    words = [w.strip(".") for w in _WORD.findall(text)]
    names: list[str] = []
    for n in range(max_words, 0, -1):
        for i in range(len(words) - n + 1):
            span = " ".join(words[i : i + n])
            names += (span, span[:-2] if span.endswith("'s") else span)
    if _FIRST_PERSON.search(text):
        names.append(SPEAKER)
    return names


async def link(
    graph: GraphStore, scope: str, texts: Iterable[str], max_words: int = 5
) -> list[URIRef]:
    """The entity nodes of the scope the texts mention, in order of first mention, the
    first text's first. One store call for all: a recall links the query and its top
    memories."""
    names = dict.fromkeys(name for text in texts for name in mentions(text, max_words))
    return await graph.entities_named(scope, names)


async def graph_path(
    graph: GraphStore,
    embedder: Embedder,
    scope: str,
    query: str,
    qvec: np.ndarray,
    seed_texts: list[str],
    hops: int,
    max_facts: int,
    as_of: datetime | None = None,
    half_life_days: float = 0.0,
) -> list[Fact]:
    """Facts linked to the query. Support lifts a fact's score, decayed by the time since
    it was last asserted; a superseded fact (not asked about ``as_of``) counts half and is
    labelled "previously"."""
    if hops <= 0 or max_facts <= 0:
        return []
    seeds = await link(graph, scope, [query, *seed_texts])
    if not seeds:
        return []
    facts = await graph.facts(scope, seeds[:16], hops, limit=max_facts * 2, as_of=as_of)
    if not facts:
        return []
    vectors = await embedder.embed([fact_text(f) for f in facts])
    clock = as_of or datetime.now(UTC)
    for fact, vec in zip(facts, vectors, strict=True):
        cosine = float(vec @ qvec)
        age = clock - (fact.last_seen or clock)
        lift = 0.03 * math.log2(1 + fact.support) * decay(age, half_life_days)
        score = cosine * (0.9 ** (fact.hops - 1)) + lift
        fact.score = round(score, 4)
    if as_of is None:
        _current_first(facts)
    facts.sort(key=lambda f: -f.score)
    return facts[:max_facts]


PATHS = ("episodic", "graph", "trash")
DEFAULT_PATHS = ("episodic", "graph")  # the trash only when asked
PATH_OF = {"buffer": "recent", "longterm": "memory", "trash": "trash"}
TRASH = ("trash",)


@dataclass(frozen=True)
class RecallPolicy:
    """The settings values recall works by (the engine reads them from Settings)."""

    k: int  # memories returned when the caller does not say
    max_chars: int  # of the context block when the caller does not say
    hops: int  # of the graph walk
    max_facts: int
    min_score: float  # below it, nothing is rendered
    half_life_days: float  # of a fact's weight once it has ended
    # Below this share of the best memory's score, a line is left out of the context block
    # (the items keep the whole ranking of k).
    context_ratio: float = 0.0
    # The share of its score a memory of the time a query names gains (:mod:`.when`; 0 = off).
    date_boost: float = 0.0
    # A query about two things ("A and B", "A or B") searches each part too (:mod:`.parts`).
    split_queries: bool = False


def trash_notice(trashed: list[str], k: int) -> str:
    count = f"{len(trashed)} or more" if len(trashed) >= k else str(len(trashed))
    noun, verb = ("memory", "matches") if count == "1" else ("memories", "match")
    return (
        f"{count} {noun} in the trash (pruned by the long-term bound, or forgotten) {verb} "
        f"this query better than what is returned here: {', '.join(trashed)}. Recall with "
        'paths ["episodic", "trash"] to read them; `restore` with their ids brings them back.'
    )


class DualPathRecall:
    """Runs both paths per scope, marks outdated memories, renders one context block and
    notes what was recalled (the replay score's frequency bonus, the decay weight)."""

    def __init__(
        self,
        *,
        policy: RecallPolicy,
        ranker: Ranker,
        embedder: Embedder,
        cached: EmbeddingCache,
        episodic: EpisodicStore,
        graph: GraphStore,
        recalls: RecallCounts,
    ) -> None:
        self.policy = policy
        self.ranker = ranker  # how the episodic path ranks (:mod:`.ranking`)
        self.embedder = embedder
        self.cached = cached
        self.episodic = episodic
        self.graph = graph
        self.recalls = recalls

    async def run(
        self,
        query: str,
        scope: str,
        k: int,
        max_chars: int,
        paths: list[str],
        when: datetime | None,
        all_scopes: bool,
    ) -> RecallResult:
        """Dual-path recall of ``query`` (the engine's ``recall``, its arguments checked at
        its door and its defaults filled in). ``when``: recall what was known to hold then,
        facts valid at that time and memories of events up to it. ``all_scopes`` searches
        every scope (``scope`` is then ignored) and keeps the best ``k`` memories overall;
        each item names its scope."""
        started = time.perf_counter()
        r = self.policy

        scopes = [scope]
        if all_scopes:
            scopes = sorted({s for s, _t in await self.episodic.census()}) or [scope]
        rankings: list[list[RecallItem]] = []  # each scope's, in its own order
        facts: list[Any] = []
        trashed: list[str] = []
        tiers = (LIVE if "episodic" in paths else ()) + (TRASH if "trash" in paths else ())
        focus = {s: await self.ranker.focus(s, query, tiers) for s in scopes}
        # A query about two things: each part is searched too (:mod:`.parts`).
        split = parts(query) if r.split_queries and tiers else []
        part_focus = {(s, p): await self.ranker.focus(s, p, tiers) for s in scopes for p in split}
        part_words = {key: f.query if f else key[1] for key, f in part_focus.items()}
        # The query and what each scope's episodic search looks for, embedded in one call
        # (two texts in one call cost ~8.5 ms here, in two calls ~12 ms; the same vectors),
        # while the searches' full-text halves run (-4 ms a recall at 1k memories).
        texts = list(
            dict.fromkeys([query, *(f.query for f in focus.values() if f), *part_words.values()])
        )
        searches = [(s, query if f is None else f.query, f) for s, f in focus.items()]
        searches += [(s, part_words[s, p], f) for (s, p), f in part_focus.items()]
        reads = [
            partial(read_ahead, self.ranker, s, words, k, when, tiers, f, r.date_boost)
            for s, words, f in (searches if tiers else [])
        ]
        embedded = await meanwhile(partial(self.embedder.embed, texts), *reads)
        vectors = dict(zip(texts, embedded, strict=True))
        qvec = vectors[query]
        # One check that the graph's kept reads are current serves all of the recall's graph
        # operations (over SPARQL one query, not one per operation).
        async with self.graph.reading():
            for s in scopes:
                found = []
                if tiers:  # the trash only when asked: then in one search with the live tiers
                    named = focus.get(s)
                    words = query if named is None else named.query
                    found = await episodic_path(
                        self.episodic, self.ranker, s, words, vectors[words], k, when, tiers,
                        named, r.date_boost,
                    )  # fmt: skip
                    runs = [found]
                    for p in split if found else []:
                        w = part_words[s, p]
                        runs.append(await episodic_path(
                            self.episodic, self.ranker, s, w, vectors[w], k, when, tiers,
                            part_focus[s, p], r.date_boost,
                        ))  # fmt: skip
                    found = best_of(runs, k) if len(runs) > 1 else found
                if tiers == LIVE:
                    trashed += await self._trashed(s, query, qvec, found, k, when)
                if found:
                    await self._mark_outdated(s, found, when or now())
                for it in found:
                    it.scope = s
                rankings.append(found)
                if "graph" in paths:
                    seeds = [it.content for it in found[:3]]
                    facts += await graph_path(
                        self.graph, self.cached, s, query, qvec, seeds, r.hops, r.max_facts,
                        as_of=when, half_life_days=r.half_life_days,
                    )  # fmt: skip
        items = merged(rankings, k)
        if len(scopes) > 1:  # one budget across scopes: the best overall
            facts = sorted(facts, key=lambda f: -f.score)[: r.max_facts]
        # The context block holds what bears on the query; ``items`` the whole ranking of k
        # (no score floor cuts it short), ``facts`` those the block holds.
        context, read, facts = render(
            items, facts, max_chars, floor(items, r.min_score, r.context_ratio)
        )
        for s in scopes:
            self.recalls.note(s, [it.id for it in read if it.scope == s])
        return RecallResult(
            context=context,
            items=items,
            facts=facts,
            took_ms=round((time.perf_counter() - started) * 1000, 2),
            trashed=trashed,
            notice=trash_notice(trashed, k) if trashed else None,
        )

    async def _trashed(
        self, scope: str, query: str, qvec: np.ndarray, found: list[RecallItem], k: int,
        when: datetime | None,
    ) -> list[str]:  # fmt: skip
        """Ids of the scope's trashed memories that match the query better than what the
        live tiers gave (``found``): that score above the weakest returned and mean about
        what the best one means (within ``exact.MARGIN`` of it, and above ``min_score``,
        below which nothing is shown), or that hold the query's exact tokens when no
        returned memory does. So nothing the long-term bound pruned, nor anything
        forgotten, stands unseen behind a worse answer."""
        if not await self.episodic.count(scope, TRASH):
            return []  # the common case: one count (from the working set), no search
        # By meaning: the trash's nearest by cosine (a matrix product on the working set).
        # By exact tokens: a full-text search, only when the query has some.
        scores = [it.score for it in found] or [self.policy.min_score]
        least = max(self.policy.min_score, min(scores), max(scores) - exact.MARGIN)
        better = []
        words = exact.tokens(query)
        if words and not any(exact.contains(it.content, words) for it in found):
            text = await self.episodic.text_search(scope, qvec, " ".join(words), TRASH, k)
            better += [h for h in text if exact.contains(h.entry.content, words)]  # first
        better += [h for h in await self.episodic.nearest(scope, qvec, TRASH, k, windows=True)
                   if h.similarity > least]  # fmt: skip
        ids = [h.entry.id for h in better if when is None or h.entry.happened_at <= when]
        return list(dict.fromkeys(ids))[:k]

    async def _mark_outdated(self, scope: str, items: list[Any], when: datetime) -> None:
        """A memory whose every fact has since changed ("In 2014 I moved to Oslo", once the
        user moved on) is kept but counts half and is labelled "previously", like its facts:
        it ranks where half its score puts it (the context block reads it after the current
        memories and the facts)."""
        memories = {}
        if any(it.tier != "longterm" for it in items):
            await syntax.ready()  # buffer items are parsed below
        for it in items:
            observed = it.observed_at or it.created_at
            if it.tier == "longterm":
                memories[it.id] = (observed, None)
            else:
                relations = linkage.quick(it.content).relations
                memories[it.id] = (observed, relations)
        stale = await self.graph.outdated(scope, memories, when)
        if not stale:
            return
        for it in items:
            if it.id in stale:
                it.superseded = True
                it.score = round(it.score * 0.5, 4)
        items.sort(key=lambda it: -it.score)  # stable: the ranking kept among equals
