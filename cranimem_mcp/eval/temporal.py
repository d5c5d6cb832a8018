"""The temporal benchmark: synthetic user histories in which facts change (moves, job
changes, changed preferences), and questions about now and about the past.

The set is built deterministically from a seed (:func:`build_histories`). Each history is
written to a fresh scope in time order, with the event time stated in the text ("In 2016 I
moved to Lisbon."), among a few unrelated personal facts. Questions ask for the current value
("Where do I live now?") and for the value at a past date ("Where did I live in 2017?", with
``as_of`` for systems that support it). A question is answered correctly when, of the
history's values for that relation, the first one the recalled context mentions is the
expected one: the same reading for every system, and what a model reading the context top
down would see first.
"""

from __future__ import annotations

import random
import re
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from cranimem_mcp.backends.embeddings import Embedder
from cranimem_mcp.config import Settings
from cranimem_mcp.engine import MemoryEngine

from .systems import VanillaRAG, eval_settings

CITIES = ["Lisbon", "Oslo", "Berlin", "Madrid", "Vienna", "Dublin", "Prague", "Warsaw",
          "Helsinki", "Zurich", "Athens", "Budapest", "Copenhagen", "Brussels"]  # fmt: skip
COMPANIES = ["Globex", "Initech", "Umbrella Labs", "Hooli", "Vandelay Industries", "Stark Labs",
             "Wayne Enterprises", "Cyberdyne Systems", "Soylent Group", "Tyrell Corp"]  # fmt: skip
DRINKS = ["green tea", "black coffee", "espresso", "rooibos", "matcha", "hot chocolate",
          "mint tea", "cold brew"]  # fmt: skip
FILLER = [
    "I have a cat called Miso.",
    "My sister is a nurse.",
    "I play the piano on weekends.",
    "I am allergic to peanuts.",
    "I run five kilometres most mornings.",
    "My favourite author is Ursula K. Le Guin.",
]
RELATIONS = {
    "home": ("In {year} I moved to {value}.", "Where do I live now?",
             "Where did I live in {year}?"),
    "job": ("Since {year} I work at {value}.", "Where do I work now?",
            "Where did I work in {year}?"),
    "drink": ("Since {year} I prefer {value}.", "What do I prefer to drink now?",
              "What did I prefer to drink in {year}?"),
}  # fmt: skip
POOLS = {"home": CITIES, "job": COMPANIES, "drink": DRINKS}
# The paraphrased variant: other verbs and word orders for the same changes, one drawn per
# event (the extractor must find the fact without knowing these phrasings).
PARAPHRASES = {
    "home": [
        "I relocated to {value} in {year}.",
        "In {year} we settled in {value}.",
        "Since {year}, I have been living in {value}.",
        "I've lived in {value} since {year}.",
        "We packed up and moved to {value} in {year}.",
        "{year} was the year I moved to {value}.",
    ],
    "job": [
        "I joined {value} in {year}.",
        "In {year} I started working for {value}.",
        "I've been employed by {value} since {year}.",
        "I got a job at {value} in {year}.",
        "{value} hired me in {year}.",
        "Since {year}, my employer has been {value}.",
    ],
    "drink": [
        "I've preferred {value} since {year}.",
        "Starting in {year}, I preferred {value}.",
        "Since {year} my preferred drink is {value}.",
        "In {year} I started preferring {value}.",
        "These days (since {year}) I prefer {value}.",
    ],
}


@dataclass
class Question:
    relation: str
    query: str
    as_of: datetime | None
    expected: str
    candidates: list[str]


@dataclass
class History:
    scope: str
    writes: list[str]
    questions: list[Question] = field(default_factory=list)


def build_histories(n: int, seed: int = 0, paraphrased: bool = False) -> list[History]:
    """``n`` deterministic histories: each relation changes 2-3 times between 2008 and 2024.
    ``paraphrased``: the same histories, each event in one of :data:`PARAPHRASES`."""
    rng = random.Random(seed)
    wording = random.Random(seed + 1_000_003)
    histories = []
    for i in range(n):
        events: list[tuple[int, str, str]] = []  # (year, relation, text)
        history = History(scope=f"t{i:04d}", writes=[])
        for relation, (template, now_q, past_q) in RELATIONS.items():
            values = rng.sample(POOLS[relation], rng.choice([3, 3, 4]))
            years = sorted(rng.sample(range(2008, 2025), len(values)))
            for year, value in zip(years, values, strict=True):
                form = wording.choice(PARAPHRASES[relation]) if paraphrased else template
                events.append((year, relation, form.format(year=year, value=value)))
            history.questions.append(Question(relation, now_q, None, values[-1], values))
            # A year strictly inside one period, so the answer is unambiguous.
            k = rng.randrange(len(values) - 1)
            if years[k + 1] - years[k] >= 2:
                mid = rng.randrange(years[k] + 1, years[k + 1])
                history.questions.append(
                    Question(
                        relation,
                        past_q.format(year=mid),
                        datetime(mid, 7, 1, tzinfo=UTC),
                        values[k],
                        values,
                    )  # fmt: skip
                )
        events.sort(key=lambda e: e[0])
        fillers = rng.sample(FILLER, 3)
        for j, (_year, _rel, text) in enumerate(events):
            history.writes.append(text)
            if j % 3 == 1 and fillers:
                history.writes.append(fillers.pop())
        histories.append(history)
    return histories


def first_mentioned(context: str, candidates: list[str]) -> str | None:
    """The candidate whose first mention in the context comes first."""
    found = []
    for value in candidates:
        m = re.search(rf"(?<!\w){re.escape(value)}(?!\w)", context, re.I)
        if m:
            found.append((m.start(), value))
    return min(found)[1] if found else None


async def run_temporal(
    settings: Settings,
    embedder: Embedder,
    workdir: Path,
    n: int,
    seed: int = 0,
    k: int = 8,
    max_chars: int = 2000,
    paraphrased: bool = False,
) -> dict[str, Any]:
    histories = build_histories(n, seed, paraphrased)
    results: dict[str, Any] = {"config": {"histories": n, "seed": seed, "k": k,
                                          "max_chars": max_chars, "paraphrased": paraphrased},
                               "systems": {}}  # fmt: skip
    engine_settings = eval_settings(settings, workdir / "cranimem")
    async with MemoryEngine(engine_settings, embedder=embedder, background=False) as engine:
        scores = _Scores()
        for h in histories:
            for text in h.writes:
                await engine.remember(text, h.scope, goal="Remember facts about the user")
            await engine.consolidate(h.scope)
            for q in h.questions:
                started = time.perf_counter()
                r = await engine.recall(q.query, h.scope, k, max_chars, as_of=q.as_of)
                scores.add(q, first_mentioned(r.context, q.candidates), started)
        results["systems"]["cranimem"] = scores.summary()
    async with VanillaRAG(embedder) as vanilla:
        scores = _Scores()
        for h in histories:
            await vanilla.begin(h.scope, "")
            for text in h.writes:
                await vanilla.remember(h.scope, text)
            for q in h.questions:
                started = time.perf_counter()
                exam = await vanilla.exam(h.scope, q.query, k, max_chars, [])
                scores.add(q, first_mentioned(exam.result.context, q.candidates), started)
        results["systems"]["vanilla"] = scores.summary()
    return results


class _Scores:
    def __init__(self) -> None:
        self.rows: list[tuple[bool, bool, float]] = []  # (past?, correct?, ms)

    def add(self, q: Question, answer: str | None, started: float) -> None:
        ms = (time.perf_counter() - started) * 1000
        self.rows.append((q.as_of is not None, answer == q.expected, ms))

    def summary(self) -> dict[str, float]:
        now = [ok for past, ok, _ in self.rows if not past]
        then = [ok for past, ok, _ in self.rows if past]
        times = sorted(ms for *_r, ms in self.rows)
        return {
            "current_accuracy": round(sum(now) / max(1, len(now)), 4),
            "as_of_accuracy": round(sum(then) / max(1, len(then)), 4),
            "questions_current": len(now),
            "questions_as_of": len(then),
            "recall_ms_p50": round(times[len(times) // 2], 2) if times else 0.0,
        }


def temporal_table(results: dict[str, Any]) -> str:
    lines = ["| system | current-fact accuracy | as-of accuracy | questions (now / past) |",
             "|---|---|---|---|"]  # fmt: skip
    for name, s in results["systems"].items():
        lines.append(
            f"| {name} | {s['current_accuracy']:.3f} | {s['as_of_accuracy']:.3f} | "
            f"{s['questions_current']} / {s['questions_as_of']} |"
        )
    return "\n".join(lines)
