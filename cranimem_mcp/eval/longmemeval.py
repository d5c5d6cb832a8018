"""``cranimem-mcp eval longmemeval``: evidence recall on LongMemEval histories (Wu et al., ICLR
2025), the second conversational benchmark beside LoCoMo.

The protocol of the data README (``../shared/data/README.md``): an instance is one question
with its own chat history (about 500 user/assistant turns in ~48 dated sessions, most of them
unrelated filler). Each system gets a fresh memory per instance; every turn is written in order
as one memory, ``[<session date>] <speaker>: <text>``; the question is asked as the query, one
recall per k. Turn-level evidence recall@k is the share of the question's evidence turns (those
the dataset marks ``has_answer``) contained in one of the top k memories; session-level
recall@k is the share of its evidence sessions with a turn in the top k. Both are averaged over
questions, per question type and overall. A question without an evidence turn (an abstention
question) has no recall to speak of and is counted as skipped.

The systems are those of ``eval locomo`` (:mod:`.memories`). Two choices keep the measure on
the ranking: the context budget defaults to the largest a recall takes (``MAX_CHARS``), since
ten assistant turns (median ~2,200 characters) do not fit the 4,000 default, which would cut a
recall of 10 to its first two or three memories; and a turn longer than a memory may be
(``MAX_CONTENT``, one turn of the dev file) is cut to that length for every system.

The data (MIT) is read from outside the checkout, never copied into it.
"""

from __future__ import annotations

import json
import re
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cranimem_mcp.backends.embeddings import Embedder
from cranimem_mcp.config import Settings
from cranimem_mcp.errors import InvalidInput
from cranimem_mcp.models import MAX_CHARS, MAX_CONTENT

from . import metrics
from .memories import SYSTEMS, ConversationMemory, open_memory

CATEGORIES = (
    "multi-session",
    "temporal-reasoning",
    "knowledge-update",
    "single-session-user",
    "single-session-assistant",
    "single-session-preference",
)
KS = (5, 10)


# --- the data ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Turn:
    id: str  # "D<session>:<turn>"
    session: str  # the id of its session
    text: str  # the memory written: "[<session date>] <speaker>: <text>"


@dataclass(frozen=True)
class Question:
    id: str
    text: str
    category: str  # the question type
    evidence: tuple[str, ...]  # ids of the turns that hold the answer
    sessions: tuple[str, ...]  # ids of the evidence sessions
    asked: str = ""  # when it is asked, as the dataset writes it ("2023/03/27 (Mon) 23:35")


@dataclass(frozen=True)
class Instance:
    id: str
    turns: tuple[Turn, ...]  # in time order
    questions: tuple[Question, ...]
    skipped: int = 0  # questions with no evidence turn in the history

    @property
    def scope(self) -> str:
        return re.sub(r"[^A-Za-z0-9_.:-]", "-", self.id)[:64]

    def texts(self) -> dict[str, str]:
        return {t.id: t.text for t in self.turns}

    def session_texts(self) -> dict[str, list[str]]:
        out: dict[str, list[str]] = {}
        for t in self.turns:
            out.setdefault(t.session, []).append(t.text)
        return out


def memory_text(date: str, speaker: str, text: str) -> str:
    """The protocol's memory of a turn, as the engine will hold it (stripped, and no longer
    than a memory may be)."""
    return f"[{date}] {speaker}: {text}".strip()[:MAX_CONTENT]


def read_instance(raw: dict[str, Any]) -> Instance:
    turns = [
        Turn(t["id"], s["id"], memory_text(s["date"], t["speaker"], t["text"]))
        for s in raw["sessions"]
        for t in s["turns"]
    ]
    known = {t.id: t.session for t in turns}
    sessions = {t.session for t in turns}
    questions, skipped = [], 0
    for index, q in enumerate(raw["questions"]):
        evidence = tuple(dict.fromkeys(e for e in q.get("evidence") or [] if e in known))
        if not evidence:  # no turn to look for: no recall to speak of
            skipped += 1
            continue
        # The dataset's answer sessions; a session can hold the answer without a turn marked
        # has_answer, so it is taken as given, not derived from the evidence turns.
        named = q.get("evidence_sessions") or [known[e] for e in evidence]
        in_history = tuple(dict.fromkeys(s for s in named if s in sessions))
        qid = str(q.get("question_id") or f"{raw['id']}/{index}")
        asked = str(q.get("question_date") or "")
        questions.append(Question(qid, q["question"], q["category"], evidence, in_history, asked))
    return Instance(str(raw["id"]), tuple(turns), tuple(questions), skipped)


def load_instances(
    path: Path, limit: int | None = None, per_type: int | None = None
) -> list[Instance]:
    """The instances of a LongMemEval file (the data README's JSON list), in the file's order;
    ``per_type`` keeps the first N of each question type (a stratified subset), then ``limit``
    the first N of what is kept."""
    try:
        raw = json.loads(Path(path).read_text(encoding="utf-8"))
        if not isinstance(raw, list):
            raise TypeError(f"a JSON list of instances, not {type(raw).__name__}")
        instances = [read_instance(item) for item in raw]
    except OSError as exc:
        raise InvalidInput(f"cannot read {path}: {exc}") from exc
    except (ValueError, KeyError, TypeError) as exc:
        message = f"{path} is not LongMemEval in the data README's layout: {exc!r}"
        raise InvalidInput(message) from exc
    if per_type is not None:
        taken: Counter[str] = Counter()
        kept = []
        for inst in instances:
            kind = inst.questions[0].category if inst.questions else ""
            taken[kind] += 1
            if taken[kind] <= per_type:
                kept.append(inst)
        instances = kept
    return instances[:limit]


# --- the run -------------------------------------------------------------------------------


@dataclass
class RunConfig:
    data: Path
    systems: list[str] = field(default_factory=lambda: ["cranimem", "vanilla", "bm25"])
    ks: tuple[int, ...] = KS
    max_chars: int = MAX_CHARS
    limit: int | None = None
    per_type: int | None = None
    workdir: Path | None = None
    config_file: Path | None = None  # handed to the spawned server (cranimem-mcp)

    def as_json(self) -> dict[str, Any]:
        return {
            "data": str(self.data), "systems": self.systems, "ks": list(self.ks),
            "max_chars": self.max_chars, "limit": self.limit, "per_type": self.per_type,
        }  # fmt: skip


async def run_instance(
    memory: ConversationMemory,
    inst: Instance,
    ks: Sequence[int],
    timings: dict[str, list[float]],
    writes: Counter[str],
    step: Callable[[], None] = lambda: None,
) -> list[dict[str, Any]]:
    """Write every turn, settle, ask every question at every k; the per-question rows."""
    status: dict[str, str] = {}
    for turn in inst.turns:
        started = time.perf_counter()
        status[turn.id] = await memory.remember(turn.text)
        timings["remember_ms"].append((time.perf_counter() - started) * 1000)
        writes[status[turn.id]] += 1
        step()
    await memory.settle()
    texts, by_session = inst.texts(), inst.session_texts()
    rows = []
    for q in inst.questions:
        wanted = [texts[e] for e in q.evidence]
        sessions = [by_session[s] for s in q.sessions]
        row: dict[str, Any] = {
            "question_id": q.id, "instance": inst.id, "category": q.category,
            "evidence": list(q.evidence), "evidence_sessions": list(q.sessions),
            "evidence_written": [status[e] for e in q.evidence],
            "ranks": {}, "session_ranks": {},
        }  # fmt: skip
        for k in ks:
            started = time.perf_counter()
            recalled = await memory.recall(q.text, k)
            timings["recall_wall_ms"].append((time.perf_counter() - started) * 1000)
            timings["recall_took_ms"].append(recalled.took_ms)
            ranks = metrics.evidence_ranks(recalled.contents, wanted)
            found = metrics.session_ranks(recalled.contents, sessions)
            row["ranks"][str(k)], row["session_ranks"][str(k)] = ranks, found
            row[f"recall@{k}"] = metrics.recall_at_k(ranks, k)
            row[f"session_recall@{k}"] = metrics.recall_at_k(found, k)
        if len(ks) > 1:  # what the first lines of the longest recall hold
            longest = str(max(ks))
            row[metrics.head_key(ks)] = metrics.recall_at_k(row["ranks"][longest], min(ks))
            row[f"session_{metrics.head_key(ks)}"] = metrics.recall_at_k(
                row["session_ranks"][longest], min(ks)
            )
        rows.append(row)
        step()
    return rows


def _means(rows: Sequence[dict[str, Any]], keys: Sequence[str]) -> dict[str, float | None]:
    return {key: metrics.mean(r.get(key) for r in rows) for key in keys}


def summarise(
    rows: Sequence[dict[str, Any]],
    ks: Sequence[int],
    timings: dict[str, list[float]],
    writes: Counter[str],
    seconds: float,
) -> dict[str, Any]:
    """Turn and session R@k per question type and overall (means over questions), latency
    percentiles, what the writes did."""
    keys = [f"{level}recall@{k}" for level in ("", "session_") for k in ks]
    heads = [metrics.head_key(ks), f"session_{metrics.head_key(ks)}"] if len(ks) > 1 else []
    seen = list(CATEGORIES) + sorted({r["category"] for r in rows} - set(CATEGORIES))
    out: dict[str, Any] = {"questions": len(rows), "categories": {}}
    for cat in seen:
        mine = [r for r in rows if r["category"] == cat]
        out["categories"][cat] = {"questions": len(mine), **_means(mine, keys)}
    out["overall"] = _means(rows, keys + heads)
    return out | metrics.run_summary(rows, timings, writes, seconds)


async def run_longmemeval(
    cfg: RunConfig,
    base: Settings,
    embedder: Embedder,
    *,
    on_step: Callable[[str, str], None] | None = None,
) -> dict[str, Any]:
    """Every system over every instance; the results document (per question rows in
    ``questions``)."""
    unknown = [s for s in cfg.systems if s not in SYSTEMS]
    if unknown:
        raise InvalidInput(f"eval longmemeval runs {', '.join(SYSTEMS)}, not {unknown[0]!r}")
    instances = load_instances(cfg.data, cfg.limit, cfg.per_type)
    results: dict[str, Any] = {
        "config": {
            **cfg.as_json(), "embedder": embedder.id,
            "instances": [i.id for i in instances],
            "turns": sum(len(i.turns) for i in instances),
            "questions": sum(len(i.questions) for i in instances),
            "questions_skipped": sum(i.skipped for i in instances),
        },
        "systems": {},
        "questions": [],
    }  # fmt: skip
    with tempfile.TemporaryDirectory(prefix="cranimem-longmemeval-") as tmp:
        root = cfg.workdir or Path(tmp)
        for name in cfg.systems:
            timings: dict[str, list[float]] = {
                "recall_took_ms": [], "recall_wall_ms": [], "remember_ms": [],
            }  # fmt: skip
            writes: Counter[str] = Counter()
            rows: list[dict[str, Any]] = []
            started = time.perf_counter()
            for inst in instances:

                def step(system: str = name, instance: str = inst.id) -> None:
                    if on_step is not None:
                        on_step(system, instance)

                home = root / name / inst.scope
                async with open_memory(
                    name, home, inst.scope, base, embedder, cfg.max_chars, cfg.config_file
                ) as memory:
                    rows += await run_instance(memory, inst, cfg.ks, timings, writes, step)
            seconds = time.perf_counter() - started
            results["systems"][name] = summarise(rows, cfg.ks, timings, writes, seconds)
            results["questions"] += [{"system": name, **r} for r in rows]
    if "cranimem" in cfg.systems and "cranimem-mcp" in cfg.systems:
        results["systems"]["cranimem-mcp"]["questions_differing_from_cranimem"] = metrics.differing(
            results["questions"], "cranimem-mcp", "cranimem", ("ranks", "session_ranks")
        )
    return results


def steps(cfg: RunConfig) -> int:
    """How many progress steps a run takes: one per write and one per question."""
    instances = load_instances(cfg.data, cfg.limit, cfg.per_type)
    return len(cfg.systems) * sum(len(i.turns) + len(i.questions) for i in instances)
