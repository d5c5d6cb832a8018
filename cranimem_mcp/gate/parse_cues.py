"""The dependency-parse cues of a write (the default gate's features from its parse).

Who the first sentence's subject is, its tense and mood, and what facts the extractor reads
from it: "I've finished reviewing the PR" (the assistant, perfect, an action verb) against
"I've been vegetarian since 2015" (stative), "Python 3.12 was released in 2023" (a named
thing, past, no fact about anyone) against "User moved to Lisbon in 2021". Out of fold on
the tuning data they raised the drop rate by 0.01-0.03 at the same keep rate
(docs/gate-measurement.md). The parse is the extractor's: a kept write is parsed once.
:func:`parse_cues` gives them as 0 or 1, in the order of :data:`PARSE_CUES`.
"""

from __future__ import annotations

import numpy as np

from cranimem_mcp.extraction import linkage, syntax
from cranimem_mcp.extraction.extractor import utterance

_FIRST_SUBJECT = frozenset(("i", "we", "me", "us"))
_MINE = frozenset(("my", "our"))
_ACTION = frozenset(
    "add create update search find draft put schedule book send fix write run check review "
    "refactor rename remove delete change apply push commit open read look make try compile "
    "generate summarise summarize translate rewrite edit replace configure install finish go "
    "start pull fetch load compare test restructure notice note see list attach upload format "
    "convert prepare reply respond answer".split()
)
_STATIVE = frozenset(
    "live work prefer like love hate have use speak own study need want enjoy mind know teach "
    "manage play follow eat drink take avoid keep".split()
)
_NOW_WORDS = frozenset(("now", "today", "tonight", "currently", "tomorrow", "yesterday", "moment"))
_DEICTIC = frozenset(("this", "that", "these", "those"))
_HAVE = frozenset(("have", "has", "'ve", "had"))
_BE = frozenset(("am", "is", "are", "'m", "'re", "was", "were"))

PARSE_CUES = (
    "subject_first_person",
    "subject_you",
    "subject_user",
    "subject_mine",
    "subject_proper",
    "subject_other_pronoun",
    "subject_generic",
    "imperative",
    "fragment",
    "past",
    "perfect",
    "progressive",
    "future",
    "obligation",
    "passive",
    "question_form",
    "wh_start",
    "negated",
    "first_person_action",
    "first_person_state",
    "deictic_object",
    "time_now",
    "generic_present",
    "sentences",
    "fact_any",
    "fact_user",
    "fact_person",
)


def parse_cues(text: str) -> np.ndarray:
    """The dependency-parse cues of a write (see :data:`PARSE_CUES`), 0 or 1 each."""
    f = dict.fromkeys(PARSE_CUES, 0.0)
    _, body = utterance(text)
    sents = list(syntax.parse(body).sents)
    if not sents:
        return np.zeros(len(PARSE_CUES), dtype=np.float32)
    f["sentences"] = min(1.0, len(sents) / 4)
    sent = sents[0]
    root = sent.root
    kids = list(root.children)
    subjects = [k for k in kids if k.dep_ in ("nsubj", "nsubjpass", "expl", "csubj")]
    aux = [k for k in kids if k.dep_ in ("aux", "auxpass")]
    if subjects:
        head = subjects[0]
        if head.lower_ in _FIRST_SUBJECT:
            f["subject_first_person"] = 1
        elif head.lower_ == "you":
            f["subject_you"] = 1
        elif any(w.lower_ == "user" for w in head.subtree):
            f["subject_user"] = 1
        elif any(c.dep_ == "poss" and c.lower_ in _MINE for c in head.children):
            f["subject_mine"] = 1
        elif head.pos_ == "PROPN":
            f["subject_proper"] = 1
        elif head.pos_ == "PRON":
            f["subject_other_pronoun"] = 1
        else:
            f["subject_generic"] = 1
        f["passive"] = float(head.dep_ == "nsubjpass")
    elif root.pos_ in ("VERB", "AUX"):
        f["imperative"] = float(root.tag_ == "VB")
    else:
        f["fragment"] = 1
    tags = {root.tag_} | {a.tag_ for a in aux}
    words = {a.lower_ for a in aux}
    f["past"] = float("VBD" in tags and not words & _HAVE)
    f["perfect"] = float(bool(words & _HAVE) and root.tag_ == "VBN")
    f["progressive"] = float(root.tag_ == "VBG" and bool(words & _BE))
    xcomp = any(c.dep_ == "xcomp" for c in kids)
    f["future"] = float(bool(words & {"will", "'ll", "shall"}) or (root.lemma_ == "go" and xcomp))
    f["obligation"] = float(
        bool(words & {"must", "should", "need"}) or (root.lemma_ in ("need", "have") and xcomp)
    )
    f["question_form"] = float(
        sent.text.strip().endswith("?") or bool(aux and subjects and aux[0].i < subjects[0].i)
    )
    f["wh_start"] = float(sent[0].tag_ in ("WDT", "WP", "WRB"))
    f["negated"] = float(any(k.dep_ == "neg" for k in kids))
    lemma = root.lemma_.lower()
    f["first_person_action"] = float(bool(f["subject_first_person"]) and lemma in _ACTION)
    f["first_person_state"] = float(bool(f["subject_first_person"]) and lemma in _STATIVE)
    for tok in sent:
        if tok.dep_ in ("dobj", "pobj", "obj") and any(
            c.dep_ == "det" and c.lower_ in _DEICTIC for c in tok.children
        ):
            f["deictic_object"] = 1
        if tok.lower_ in _NOW_WORDS and tok.dep_ in ("advmod", "npadvmod", "pobj"):
            f["time_now"] = 1
    f["generic_present"] = float(
        root.tag_ in ("VBZ", "VBP")
        and bool(f["subject_generic"] or f["subject_proper"])
        and not f["perfect"]
    )
    facts = linkage.quick(text)
    if facts.relations:
        people = {e.name for e in facts.entities if e.type == "Person"}
        f["fact_any"] = 1
        f["fact_user"] = float(any("User" in (r.subject, r.object) for r in facts.relations))
        f["fact_person"] = float(any(r.subject in people for r in facts.relations))
    return np.asarray([f[name] for name in PARSE_CUES], dtype=np.float32)
