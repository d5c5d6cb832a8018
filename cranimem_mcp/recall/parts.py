"""A query that asks about two things at once ("What did I spend on the oil change and the
car wash?", "Which came first, the Lisbon trip or my pottery course?"): its two parts are
searched too, so the memory of each can reach the top k, not only the one the whole query's
vector leans to. A memory's score is its best under the whole query and the parts, and the
items stay in the order of that score (``retrieval.split_queries``, off by default: on the
dev sets it gains on LongMemEval only, and an "and" inside a noun phrase ("the statue and
fountain in the park") cost a HotpotQA question; docs/RESULTS.md).

Two names joined by "and" ("Ana and Ravi") are no two things: the query is about
both at once, and the conversation rules handle its speakers."""

from __future__ import annotations

import re
from collections.abc import Iterable

from cranimem_mcp.models import RecallItem

_JOIN = re.compile(r",?\s+(?:and|or|compared to|versus|vs\.?|than)\s+", re.IGNORECASE)


def parts(query: str) -> list[str]:
    """The two sides of the query's first "and", "or", "compared to", "versus" or "than", or
    none: when a side would be empty or one word before the join ("Me and ..."), or when the
    join holds two names together."""
    m = _JOIN.search(query)
    if m is None:
        return []
    left, right = query[: m.start()].strip(), query[m.end() :].strip()
    before, after = left.split(), right.split()
    if len(before) < 2 or not after:
        return []
    joined_by_and = m.group(0).strip(" ,").lower() == "and"
    if joined_by_and and before[-1][:1].isupper() and after[0][:1].isupper():
        return []
    return [left, right]


def best_of(rankings: Iterable[list[RecallItem]], k: int) -> list[RecallItem]:
    """The ``k`` best memories of several rankings of one scope, each at its best score."""
    best: dict[str, RecallItem] = {}
    for ranking in rankings:
        for item in ranking:
            if item.id not in best or item.score > best[item.id].score:
                best[item.id] = item
    return sorted(best.values(), key=lambda item: -item.score)[:k]
