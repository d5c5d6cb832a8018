"""A long text as passages: runs of whole sentences of at most forty words.

A sentence-embedding model reads a few hundred word pieces and averages them into one
vector: a long memory's vector says what most of it is about, and a detail said in passing
("... By the way, I got the dog bed for Max three weeks ago.") is lost in it. Each passage of
a long memory gets a vector of its own, and the best one lifts the memory's score
(``episodic.windows``). A passage holds a few sentences (at most
forty words: about two), cut at sentence ends, so that none starts or stops mid-sentence; a
text of one passage has none, its own vector is the passage's.

A passage counts for a share: a memory's score is its own cosine lifted by 0.3 of its best
passage's lead over it (:func:`scored`). A best-of-many match rises with the number of
passages whatever the text says; the memory's own cosine keeps what the whole is about in
the score. Measured on the dev sets (docs/RESULTS.md, issue 41), turn R@5: on
LongMemEval-dev's chats, where the answer is one sentence of a long turn, passages of forty
words counted whole gained 0.725 -> 0.754 but lost LoCoMo-dev's 0.682 -> 0.665 (its turns of
two or three sentences each got as many chances); a share of 0.5: 0.762 and 0.679, 0.3:
0.775 and 0.684, and HotpotQA-120's answer recall 0.883 -> 0.867 (0.5) and 0.875 (0.3) clean,
0.850 and 0.867 noisy. Passages of a hundred words (dense passage retrieval's) counted
whole gained nothing on LongMemEval and changed nothing on LoCoMo.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np

from cranimem_mcp.conversation.transcript import body

WORDS = 40  # words a passage holds at most, unless one sentence is longer
SHARE = 0.3  # how much of a better passage's cosine a memory's score takes
# A sentence ends at ., ! or ? (and a closing quote or bracket) before white space, or at a
# line break (a list's items, a paragraph).
# A text's head: one or two words before a colon (who speaks, or a label).
_HEAD = re.compile(r"^[A-Za-z][\w'’.-]{0,30}(?: [A-Za-z][\w'’.-]{0,30})?:\s+")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|(?<=[.!?][\"')\]])\s+|\s*\n\s*")


def sentences(text: str) -> list[str]:
    """The sentences of ``text``, as written, without empty ones."""
    return [s.strip() for s in _SENTENCE_END.split(text) if s and s.strip()]


def said(text: str) -> str:
    """What a text says, without its head: a turn's stamp (:func:`transcript.body`) and the
    word or two before a colon that say who speaks or what it is ("Noor:", "user:",
    "Decision:"). The memory's own vector reads them; a passage is of what is said."""
    text = body(text)
    head = _HEAD.match(text)
    return text[head.end() :] if head else text


def passages(text: str, words: int = WORDS) -> list[str]:
    """What ``text`` says (:func:`said`) cut into runs of whole sentences of at most
    ``words`` words each (a longer sentence is a passage by itself), in order; [] when it
    is one passage."""
    out: list[str] = []
    current: list[str] = []
    count = 0
    for sentence in sentences(said(text)):
        n = len(sentence.split())
        if current and count + n > words:
            out.append(" ".join(current))
            current, count = [], 0
        current.append(sentence)
        count += n
    if current:
        out.append(" ".join(current))
    return out if len(out) > 1 else []


def scored(whole: Any, best: Any) -> Any:
    """A memory's cosine to a query from its own (``whole``) and its best passage's
    (``best``; its own when it has none): their mean when the passage is closer, else its
    own. Floats or arrays."""
    return whole + SHARE * np.maximum(best - whole, 0.0)
