"""The lexical baseline: Okapi BM25 over the texts written, nothing else.

Plain on purpose, so that it measures what word overlap alone finds: lower-cased word tokens
(``\\w+``), no stop words, no stemming, Lucene's defaults (``k1`` 1.2, ``b`` 0.75) and its
non-negative idf, ``ln(1 + (N - n + 0.5) / (n + 0.5))``. A text that shares no word with the
query scores 0 and is never returned; ties keep the order of writing.
"""

from __future__ import annotations

import math
import re
from collections import Counter, defaultdict

_WORD = re.compile(r"\w+")


def tokenize(text: str) -> list[str]:
    return _WORD.findall(text.lower())


class BM25:
    """An index that grows one text at a time and ranks them for a query."""

    def __init__(self, k1: float = 1.2, b: float = 0.75) -> None:
        self.k1, self.b = k1, b
        self._postings: defaultdict[str, list[tuple[int, int]]] = defaultdict(list)
        self._lengths: list[int] = []

    def __len__(self) -> int:
        return len(self._lengths)

    def add(self, text: str) -> int:
        """Index ``text``; its position (0-based, in the order written)."""
        index = len(self._lengths)
        words = tokenize(text)
        for word, tf in Counter(words).items():
            self._postings[word].append((index, tf))
        self._lengths.append(len(words))
        return index

    def scores(self, query: str) -> dict[int, float]:
        """The BM25 score of every text sharing a word with ``query`` (a repeated query word
        counts each time, as in the formula's sum over the query's terms)."""
        n = len(self._lengths)
        if n == 0:
            return {}
        avgdl = sum(self._lengths) / n or 1.0
        out: defaultdict[int, float] = defaultdict(float)
        for word in tokenize(query):
            postings = self._postings.get(word)
            if not postings:
                continue
            idf = math.log(1 + (n - len(postings) + 0.5) / (len(postings) + 0.5))
            for index, tf in postings:
                norm = self.k1 * (1 - self.b + self.b * self._lengths[index] / avgdl)
                out[index] += idf * tf * (self.k1 + 1) / (tf + norm)
        return dict(out)

    def top(self, query: str, k: int) -> list[tuple[int, float]]:
        """The ``k`` best (position, score), best first; earlier texts first on a tie."""
        ranked = sorted(self.scores(query).items(), key=lambda item: (-item[1], item[0]))
        return ranked[:k]
