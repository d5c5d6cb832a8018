"""Scoring an extractor against the labelled extraction set (``tests/data/extraction_*.json``).

Each item is a text with its gold triples (vocabulary in docs/extraction-measurement.md). A
predicted triple is correct when it matches a gold triple of the same text:

- **names** match after canonicalisation (case, leading determiners and possessive markers,
  a plural ``s``), or when one is the other's head with modifiers ("film" and "science
  fiction film", "Hoshino Resorts" and "Resorts"): the same thing named more or less fully;
- **predicates** match after a small alias table (``based_in`` = ``located_in``, a verb's
  lemma = its canonical form: ``like`` = ``likes``), and in either direction of an inverse
  relation: ``(X, directed_by, Y)`` = ``(Y, directed, X)``, ``(X, manages, Y)`` =
  ``(Y, has_manager, X)``, ``married_to`` both ways.

Precision = correct predictions / predictions, recall = gold triples found / gold triples,
over all items and per kind. ``related_to`` predictions count like any other.
"""

from __future__ import annotations

import json
import re
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

_DETERMINERS = ("the ", "a ", "an ", "my ", "our ", "his ", "her ", "their ", "its ")
_ALIASES = {
    "based_in": "located_in",
    "headquartered_in": "located_in",
    "is_allergic_to": "allergic_to",
    "like": "likes",
    "love": "likes",
    "loves": "likes",
    "enjoys": "likes",
    "dislike": "dislikes",
    "hates": "dislikes",
    "use": "uses",
    "speak": "speaks",
    "prefer": "prefers",
    "own": "owns",
    "live_in": "lives_in",
    "work_at": "works_at",
    "work_for": "works_at",
    "study_at": "studies_at",
    "play": "plays",
    "manage": "manages",
    "write": "wrote",
    "direct": "directed",
    "create": "created",
    "found": "founded",
    "has_mom": "has_mother",
    "has_mum": "has_mother",
    "has_dad": "has_father",
    "has_boss": "has_manager",
    "is_an": "is_a",
    "is_the": "is_a",  # the one holder of a role is one of its class
}
_SYMMETRIC = {"married_to", "has_spouse"}
# (s, p, o) = (o, inverse, s)
_INVERSE = {"manages": "has_manager", "directed": "directed_by", "wrote": "written_by",
            "founded": "founded_by", "created": "created_by"}  # fmt: skip


def _name(text: str) -> str:
    name = " ".join(text.replace("’", "'").lower().split()).strip(" .,;:!?\"'()[]{}")
    changed = True
    while changed:
        changed = False
        for det in _DETERMINERS:
            if name.startswith(det):
                name, changed = name[len(det) :], True
    name = re.sub(r"'s?$", "", name)
    return re.sub(r"(?<=[a-z]{3})s$", "", name)


def names_match(a: str, b: str) -> bool:
    x, y = _name(a), _name(b)
    if not x or not y:
        return False
    if x == y:
        return True
    short, long = sorted((x.split(), y.split()), key=len)
    return long[-len(short) :] == short or long[: len(short)] == short and len(short) > 1


def _predicate(p: str) -> str:
    p = "_".join(p.lower().replace("-", "_").split())
    neg = p.startswith("not_")
    base = p[4:] if neg else p
    base = _ALIASES.get(base, base)
    return ("not_" if neg else "") + base


def _forms(triple: tuple[str, str, str]) -> list[tuple[str, str, str]]:
    s, p, o = triple
    p = _predicate(p)
    neg = "not_" if p.startswith("not_") else ""
    base = p[len(neg) :]
    forms = [(s, p, o)]
    if base in _SYMMETRIC:
        forms.append((o, p, s))
    for active, passive in _INVERSE.items():
        if base == active:
            forms.append((o, neg + passive, s))
        elif base == passive:
            forms.append((o, neg + active, s))
    if base.endswith("_by") and base[:-3] not in _INVERSE.values():
        forms.append((o, neg + _ALIASES.get(base[:-3], base[:-3]), s))
    return forms


def triples_match(pred: tuple[str, str, str], gold: tuple[str, str, str]) -> bool:
    gs, gp, go = gold
    gp = _predicate(gp)
    return any(
        p == gp and names_match(s, gs) and names_match(o, go) for s, p, o in _forms(pred)
    ) or any(p == _predicate(pred[1]) and names_match(pred[0], s) and names_match(pred[2], o)
             for s, p, o in _forms(gold))  # fmt: skip


@dataclass
class Score:
    predicted: int = 0
    correct: int = 0
    gold: int = 0
    found: int = 0
    misses: list[tuple[str, tuple[str, str, str]]] = field(default_factory=list)
    wrong: list[tuple[str, tuple[str, str, str]]] = field(default_factory=list)

    @property
    def precision(self) -> float:
        return self.correct / self.predicted if self.predicted else 1.0

    @property
    def recall(self) -> float:
        return self.found / self.gold if self.gold else 1.0


def load(path: Path) -> list[dict[str, Any]]:
    return json.loads(path.read_text(encoding="utf-8"))["items"]


def score(
    items: list[dict[str, Any]], predictions: list[list[tuple[str, str, str]]]
) -> dict[str, Score]:
    """Scores over all items ("all") and per kind."""
    scores: dict[str, Score] = defaultdict(Score)
    for item, predicted in zip(items, predictions, strict=True):
        gold = [tuple(t) for t in item["triples"]]
        predicted = list(dict.fromkeys(predicted))
        for key in ("all", item.get("kind", "other")):
            sc = scores[key]
            sc.predicted += len(predicted)
            sc.gold += len(gold)
            for p in predicted:
                if any(triples_match(p, g) for g in gold):
                    sc.correct += 1
                elif key == "all":
                    sc.wrong.append((item["text"], p))
            for g in gold:
                if any(triples_match(p, g) for p in predicted):
                    sc.found += 1
                elif key == "all":
                    sc.misses.append((item["text"], g))  # type: ignore[arg-type]
    return dict(scores)
