"""Per-question metrics and their aggregation. Pure functions, unit-tested on hand-built cases.

Text matching is done on a normal form (SQuAD's: lower case, no punctuation, no articles,
single spaces) so that the context block's escaping and line flattening, and a gold answer's
punctuation, neither hide nor invent a match. "Occurs in" means as a whole-token sequence:
the answer "1" is not found inside "1999".
"""

from __future__ import annotations

import math
import re
import string
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

_ARTICLES = re.compile(r"\b(a|an|the)\b")
_PUNCT = set(string.punctuation) | {"‘", "’", "“", "”", "–", "—", "…"}
_ESCAPES = {"&lt;": "<", "&gt;": ">"}


def normalize(text: str) -> str:
    """SQuAD answer normalization."""
    for escaped, plain in _ESCAPES.items():
        text = text.replace(escaped, plain)
    text = "".join(ch for ch in text.lower() if ch not in _PUNCT)
    text = _ARTICLES.sub(" ", text)
    return " ".join(text.split())


def contains(haystack: str, needle: str) -> bool:
    """Whether ``needle`` occurs in ``haystack`` as a whole-token sequence, both normalized."""
    n = normalize(needle)
    return bool(n) and f" {n} " in f" {normalize(haystack)} "


def supporting_fact_recall(context: str, sentences: Sequence[str]) -> float | None:
    """Share of the gold supporting sentences present whole in the recalled context."""
    if not sentences:
        return None
    return sum(contains(context, s) for s in sentences) / len(sentences)


def answer_recall(context: str, answer: str) -> float | None:
    """1.0 if the normalized gold answer occurs in the context; None for yes/no questions,
    whose answer words occur by chance and are never spelled out in the evidence."""
    if normalize(answer) in ("yes", "no", ""):
        return None
    return 1.0 if contains(context, answer) else 0.0


def share(origins: Sequence[str], wanted: str) -> float | None:
    """Share of recalled items whose origin is ``wanted``; None when nothing was recalled
    (an empty recall has no precision to speak of)."""
    if not origins:
        return None
    return sum(o == wanted for o in origins) / len(origins)


def context_precision(origins: Sequence[str]) -> float | None:
    """Share of recalled items that come from the two gold paragraphs."""
    return share(origins, "gold")


def distractor_intrusion(origins: Sequence[str]) -> float | None:
    """Share of recalled items that are injected noise."""
    return share(origins, "noise")


def token_prf(prediction: str, gold: str) -> tuple[float, float, float]:
    """SQuAD token-overlap precision, recall and F1 of a predicted answer. For yes/no/noanswer
    both must match exactly, as in the official HotpotQA evaluation."""
    p, g = normalize(prediction), normalize(gold)
    special = ("yes", "no", "noanswer")
    if (p in special or g in special) and p != g:
        return 0.0, 0.0, 0.0
    pt, gt = p.split(), g.split()
    common = sum((Counter(pt) & Counter(gt)).values())
    if common == 0:
        return 0.0, 0.0, 0.0
    precision, recall = common / len(pt), common / len(gt)
    return precision, recall, 2 * precision * recall / (precision + recall)


def percentile(values: Sequence[float], q: float) -> float | None:
    """Linear-interpolated percentile (numpy's default method), ``q`` in [0, 100]."""
    if not values:
        return None
    ordered = sorted(values)
    pos = (len(ordered) - 1) * q / 100
    lo, hi = math.floor(pos), math.ceil(pos)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (pos - lo)


def mean(values: Iterable[float | None]) -> float | None:
    kept = [v for v in values if v is not None]
    return sum(kept) / len(kept) if kept else None


QUALITY = (
    "supporting_fact_recall",
    "answer_recall",
    "context_precision",
    "distractor_intrusion",
    "items_stored",
    "precision",
    "recall",
    "f1",
    "gold_lost_gate",
    "gold_lost_replay",
    "gold_lost_retrieval",
)


def aggregate(
    rows: Sequence[Mapping[str, float | None]], timings: Mapping[str, Sequence[float]]
) -> dict[str, float | None]:
    """Means of the per-question metrics (questions where a metric is None are left out of
    its mean), plus p50/p95 of every timing series (in ms)."""
    out: dict[str, float | None] = {}
    for name in QUALITY:
        if any(name in r for r in rows):
            out[name] = mean(r.get(name) for r in rows)
    for name, series in timings.items():
        out[f"{name}_p50"] = percentile(series, 50)
        out[f"{name}_p95"] = percentile(series, 95)
    out["questions"] = float(len(rows))
    return out


def noise_drop(clean: Mapping[str, float | None], noisy: Mapping[str, float | None]) -> dict:
    """clean - noisy for every metric both settings have."""
    return {
        k: (clean[k] - noisy[k])  # type: ignore[operator]
        for k in clean
        if k != "questions" and clean.get(k) is not None and noisy.get(k) is not None
    }


def evidence_ranks(found: Sequence[str], wanted: Sequence[str]) -> list[int | None]:
    """For each wanted text, the 1-based rank of the first memory in ``found`` (best first)
    that contains it verbatim, or None (LoCoMo's evidence recall: a memory holds the turn)."""
    return [next((i for i, f in enumerate(found, 1) if w in f), None) for w in wanted]


def session_ranks(found: Sequence[str], sessions: Sequence[Sequence[str]]) -> list[int | None]:
    """For each session (the texts of its turns), the 1-based rank of the first memory in
    ``found`` that holds any of its turns, or None (LongMemEval's session-level recall: a
    session is found when one of its turns is)."""
    out: list[int | None] = []
    for turns in sessions:
        ranks = [r for r in evidence_ranks(found, turns) if r is not None]
        out.append(min(ranks, default=None))
    return out


def head_key(ks: Sequence[int]) -> str:
    """The key of R@min(ks) counted in the recall of max(ks): a recall of 10 should begin
    with what a recall of 5 returns."""
    return f"recall@{min(ks)}_of_{max(ks)}"


def recall_at_k(ranks: Sequence[int | None], k: int) -> float | None:
    """Share of the evidence found within the top ``k``; None when there is no evidence."""
    if not ranks:
        return None
    return sum(r is not None and r <= k for r in ranks) / len(ranks)


def differing(
    rows: Sequence[Mapping[str, object]], a: str, b: str, keys: Sequence[str] = ("ranks",)
) -> int:
    """Questions whose evidence ranks (the rows' ``keys``) differ between systems ``a`` and
    ``b``; the rows are both systems' per-question rows, each naming its ``system`` and
    ``question_id``."""
    ranks = {(r["system"], r["question_id"]): [r[key] for key in keys] for r in rows}
    return sum(ranks[(a, qid)] != ranks.get((b, qid)) for s, qid in list(ranks) if s == a)


def run_summary(
    rows: Sequence[Mapping[str, Any]],
    timings: Mapping[str, Sequence[float]],
    writes: Mapping[str, int],
    seconds: float,
) -> dict[str, Any]:
    """What every conversation benchmark's summary ends with: each timing's p50 and p95,
    the writes by status, the share of evidence turns the gate rejected, the run's seconds."""
    out: dict[str, Any] = {}
    for name, series in timings.items():
        out[f"{name}_p50"] = percentile(series, 50)
        out[f"{name}_p95"] = percentile(series, 95)
    out["writes"] = {"calls": sum(writes.values()), **{s: writes[s] for s in sorted(writes)}}
    statuses = [s for r in rows for s in r["evidence_written"]]
    out["evidence_rejected"] = share(statuses, "rejected")
    out["seconds"] = round(seconds, 1)
    return out
