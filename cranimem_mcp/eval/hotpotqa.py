"""``cranimem-mcp eval hotpotqa``: the paper's clean-vs-noisy benchmark (Section 4).

For every system and setting: one fresh memory (one data directory), one scope per question
with the question as its goal, the question's write stream (:mod:`.stream`), consolidation as
the engine schedules it plus one before the exam, then ``recall(question)`` with the same k and
character budget for every system. What was recalled is scored (:mod:`.metrics`); where a gold
paragraph got lost is recorded too (the gate, the replay cut, or the retrieval).
"""

from __future__ import annotations

import json
import logging
import tempfile
import time
from collections.abc import Awaitable, Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from cranimem_mcp.backends.embeddings import Embedder
from cranimem_mcp.config import Settings

from . import metrics
from .data import Question, load_questions
from .stream import write_stream
from .systems import build_system

logger = logging.getLogger(__name__)

SETTINGS = ("clean", "noisy")
Answerer = Callable[[str, str], Awaitable[str]]


@dataclass
class EvalConfig:
    data: Path
    limit: int | None = None
    seed: int = 0
    inject_every: int = 2
    noise: int = 3
    k: int = 8
    max_chars: int = 4000
    systems: list[str] = field(default_factory=lambda: ["cranimem", "vanilla"])
    settings: list[str] = field(default_factory=lambda: list(SETTINGS))
    answer_model: str | None = None
    workdir: Path | None = None

    def as_json(self) -> dict[str, Any]:
        out = asdict(self)
        out["data"] = str(self.data)
        out["workdir"] = str(self.workdir) if self.workdir else None
        return out


async def run_question(
    system: Any,
    questions: list[Question],
    index: int,
    cfg: EvalConfig,
    noisy: bool,
    timings: dict[str, list[float]],
    answerer: Answerer | None = None,
) -> dict[str, Any]:
    """Run one question through one system; returns its metrics row."""
    q = questions[index]
    scope = f"hotpotqa-{index}"
    await system.begin(scope, q.question)
    writes = write_stream(
        questions, index, seed=cfg.seed, noisy=noisy, inject_every=cfg.inject_every,
        noise=cfg.noise,
    )  # fmt: skip
    origin: dict[str, str] = {}
    gold_ids: list[str] = []
    rejected_gold = 0
    for w in writes:
        started = time.perf_counter()
        out = await system.remember(scope, w.text)
        timings["remember_ms"].append((time.perf_counter() - started) * 1000 - out.consolidate_ms)
        if out.consolidate_ms:
            timings["consolidate_ms"].append(out.consolidate_ms)
        if out.id is None:
            rejected_gold += w.origin == "gold"
            continue
        origin.setdefault(out.id, w.origin)
        if w.origin == "gold":
            gold_ids.append(out.id)
    exam = await system.exam(scope, q.question, cfg.k, cfg.max_chars, gold_ids)
    timings["recall_ms"].append(exam.recall_ms)
    if exam.consolidate_ms:
        timings["consolidate_ms"].append(exam.consolidate_ms)
    result = exam.result
    origins = [origin.get(it.id, "unknown") for it in result.items]
    recalled = {it.id for it in result.items}
    n_gold = rejected_gold + len(gold_ids)
    trashed = sum(exam.tiers.get(i) == "trash" for i in gold_ids)
    missed = sum(exam.tiers.get(i) != "trash" and i not in recalled for i in gold_ids)
    row: dict[str, Any] = {
        "index": index,
        "id": q.id,
        "supporting_fact_recall": metrics.supporting_fact_recall(
            result.context, q.supporting_sentences()
        ),
        "answer_recall": metrics.answer_recall(result.context, q.answer),
        "context_precision": metrics.context_precision(origins),
        "distractor_intrusion": metrics.distractor_intrusion(origins),
        "items_stored": float(exam.stored),
        "gold_lost_gate": rejected_gold / n_gold if n_gold else None,
        "gold_lost_replay": trashed / n_gold if n_gold else None,
        "gold_lost_retrieval": missed / n_gold if n_gold else None,
        "recalled": origins,
        "facts": len(result.facts),
    }
    if answerer is not None:
        started = time.perf_counter()
        prediction = await answerer(q.question, result.context)
        timings["answer_ms"].append((time.perf_counter() - started) * 1000)
        row["prediction"] = prediction
        row["precision"], row["recall"], row["f1"] = metrics.token_prf(prediction, q.answer)
    return row


async def run_eval(
    cfg: EvalConfig,
    base: Settings,
    embedder: Embedder,
    *,
    answerer: Answerer | None = None,
    on_question: Callable[[str, str], None] | None = None,
    on_row: Callable[[str, str, dict[str, Any]], None] | None = None,
) -> dict[str, Any]:
    """Run every system in every setting; returns the results document."""
    questions = load_questions(cfg.data)
    count = len(questions) if cfg.limit is None else min(cfg.limit, len(questions))
    results: dict[str, Any] = {
        "config": {**cfg.as_json(), "questions": count, "embedder": embedder.id},
        "systems": {},
    }
    with tempfile.TemporaryDirectory(prefix="cranimem-eval-") as tmp:
        root = cfg.workdir or Path(tmp)
        for name in cfg.systems:
            per_setting: dict[str, Any] = {}
            for setting in cfg.settings:
                home = root / f"{name}-{setting}"
                timings: dict[str, list[float]] = {
                    "remember_ms": [], "recall_ms": [], "consolidate_ms": [],
                }  # fmt: skip
                if answerer is not None:
                    timings["answer_ms"] = []
                rows = []
                async with build_system(name, base, home, embedder) as system:
                    for index in range(count):
                        row = await run_question(
                            system, questions, index, cfg, setting == "noisy", timings, answerer
                        )
                        rows.append(row)
                        if on_row is not None:
                            on_row(name, setting, row)
                        if on_question is not None:
                            on_question(name, setting)
                per_setting[setting] = metrics.aggregate(rows, timings)
                logger.info("%s/%s: %s", name, setting, per_setting[setting])
            if "clean" in per_setting and "noisy" in per_setting:
                per_setting["noise_drop"] = metrics.noise_drop(
                    per_setting["clean"], per_setting["noisy"]
                )
            results["systems"][name] = per_setting
    return results


def write_results(results: dict[str, Any], path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
