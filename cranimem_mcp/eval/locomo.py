"""``cranimem-mcp eval locomo``: evidence recall on LoCoMo conversations (Maharana et al., 2024).

The protocol of the data README (``../shared/data/README.md``): every turn of a conversation is
written in order as one memory, ``[<session date_time>] <speaker>: <text>`` (plus
`` [image: <caption>]``); each category 1-4 question is asked as the query (5, adversarial, has
no answer and is left out); evidence recall@k is the share of the question's evidence turns
whose text is contained in one of the top k memories returned, averaged over questions.

Each system gets a fresh memory per conversation. ``cranimem`` is the engine with its default
settings (default goal, heuristic tagger and extractor, the embedder it is handed): no
background work, so the only consolidation during the writes is the buffer bound's (overflow
goes through replay), then one ``consolidate`` after the last turn, as
``scripts/eval_locomo.py`` did for the baseline. ``cranimem-mcp`` is the same run through a
real MCP stdio client (:mod:`.through_mcp`); ``vanilla`` is cosine top-k over every turn and
``bm25`` BM25 top-k (:mod:`.memories`).

The data is CC BY-NC 4.0: it is read from outside the checkout, never copied into it.
"""

from __future__ import annotations

import json
import re
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cranimem_mcp.backends.embeddings import Embedder
from cranimem_mcp.config import Settings
from cranimem_mcp.errors import InvalidInput

from . import metrics
from .memories import SYSTEMS, ConversationMemory, open_memory

CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}
KS = (5, 10)


# --- the data ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Question:
    id: str  # "<sample_id>/<index in the sample's qa list>": stable across runs
    text: str
    category: int
    evidence: tuple[str, ...]  # normalised dia_ids that name a turn of the conversation


@dataclass(frozen=True)
class Conversation:
    sample_id: str
    turns: tuple[tuple[str, str], ...]  # (dia_id, memory text), in order
    questions: tuple[Question, ...]
    skipped: int = 0  # category 1-4 questions with no evidence id that names a turn

    @property
    def scope(self) -> str:
        return re.sub(r"[^A-Za-z0-9_.:-]", "-", self.sample_id)[:64]

    @property
    def texts(self) -> dict[str, str]:
        return dict(self.turns)


def turn_texts(conversation: dict[str, Any]) -> list[tuple[str, str]]:
    """(dia_id, memory text) of every turn, sessions in their numbered order."""
    out = []
    n = 1
    while f"session_{n}" in conversation:
        when = conversation.get(f"session_{n}_date_time", "")
        for turn in conversation[f"session_{n}"]:
            text = f"[{when}] {turn['speaker']}: {turn['text']}"
            if turn.get("blip_caption"):
                text += f" [image: {turn['blip_caption']}]"
            out.append((turn["dia_id"], text))
        n += 1
    return out


def evidence_ids(raw: Sequence[str]) -> list[str]:
    """Normalise the malformed ids of the dataset ("D:11:26", "D30:05", "D8:6; D9:17")."""
    out = []
    for item in raw:
        for part in re.split(r"[;,]\s*", item):
            m = re.fullmatch(r"D:?(\d+):0*(\d+)", part.strip())
            if m:
                out.append(f"D{int(m.group(1))}:{int(m.group(2))}")
    return out


def load_conversations(path: Path, limit: int | None = None) -> list[Conversation]:
    """The conversations of a LoCoMo file (a JSON list in the dataset's layout); ``limit``
    keeps the first N scored questions of each."""
    try:
        samples = json.loads(Path(path).read_text(encoding="utf-8"))
        out = []
        for sample in samples:
            turns = turn_texts(sample["conversation"])
            known = {dia_id for dia_id, _ in turns}
            questions, skipped = [], 0
            for index, qa in enumerate(sample["qa"]):
                if qa.get("category") not in CATEGORIES:
                    continue
                evidence = tuple(e for e in evidence_ids(qa.get("evidence") or []) if e in known)
                if not evidence:  # no turn to look for: no recall to speak of
                    skipped += 1
                    continue
                qid = f"{sample['sample_id']}/{index}"
                questions.append(Question(qid, qa["question"], qa["category"], evidence))
            if limit is not None:
                questions = questions[:limit]
            out.append(Conversation(sample["sample_id"], tuple(turns), tuple(questions), skipped))
    except OSError as exc:
        raise InvalidInput(f"cannot read {path}: {exc}") from exc
    except (ValueError, KeyError, TypeError) as exc:
        raise InvalidInput(f"{path} is not LoCoMo in the dataset's layout: {exc!r}") from exc
    return out


@dataclass
class RunConfig:
    data: Path
    systems: list[str] = field(default_factory=lambda: ["cranimem", "vanilla"])
    ks: tuple[int, ...] = KS
    max_chars: int = 4000
    limit: int | None = None
    workdir: Path | None = None
    config_file: Path | None = None  # handed to the spawned server (cranimem-mcp)

    def as_json(self) -> dict[str, Any]:
        return {
            "data": str(self.data), "systems": self.systems, "ks": list(self.ks),
            "max_chars": self.max_chars, "limit": self.limit,
        }  # fmt: skip


def _opener(
    name: str, cfg: RunConfig, base: Settings, embedder: Embedder, root: Path
) -> Callable[[Conversation], AbstractAsyncContextManager[ConversationMemory]]:
    if name not in SYSTEMS:
        raise InvalidInput(f"eval locomo runs {', '.join(SYSTEMS)}, not {name!r}")

    def opener(conv: Conversation) -> AbstractAsyncContextManager[ConversationMemory]:
        home = root / name / conv.scope
        return open_memory(name, home, conv.scope, base, embedder, cfg.max_chars, cfg.config_file)

    return opener


# --- the run -------------------------------------------------------------------------------


async def run_conversation(
    memory: ConversationMemory,
    conv: Conversation,
    ks: Sequence[int],
    timings: dict[str, list[float]],
    writes: Counter[str],
    step: Callable[[], None] = lambda: None,
) -> list[dict[str, Any]]:
    """Write every turn, settle, ask every question at every k; the per-question rows."""
    status: dict[str, str] = {}
    for dia_id, text in conv.turns:
        started = time.perf_counter()
        status[dia_id] = await memory.remember(text)
        timings["remember_ms"].append((time.perf_counter() - started) * 1000)
        writes[status[dia_id]] += 1
        step()
    await memory.settle()
    texts = conv.texts
    rows = []
    for q in conv.questions:
        wanted = [texts[e] for e in q.evidence]
        row: dict[str, Any] = {
            "question_id": q.id, "conversation": conv.sample_id, "category": q.category,
            "evidence": list(q.evidence), "evidence_written": [status[e] for e in q.evidence],
            "ranks": {},
        }  # fmt: skip
        for k in ks:
            started = time.perf_counter()
            recalled = await memory.recall(q.text, k)
            timings["recall_wall_ms"].append((time.perf_counter() - started) * 1000)
            timings["recall_took_ms"].append(recalled.took_ms)
            ranks = metrics.evidence_ranks(recalled.contents, wanted)
            row["ranks"][str(k)] = ranks
            row[f"recall@{k}"] = metrics.recall_at_k(ranks, k)
        if len(ks) > 1:  # what the first lines of the longest recall hold
            row[metrics.head_key(ks)] = metrics.recall_at_k(row["ranks"][str(max(ks))], min(ks))
        rows.append(row)
        step()
    return rows


def summarise(
    rows: Sequence[dict[str, Any]],
    ks: Sequence[int],
    timings: dict[str, list[float]],
    writes: Counter[str],
    seconds: float,
) -> dict[str, Any]:
    """R@k per category and overall (means over questions), latency percentiles, writes."""
    out: dict[str, Any] = {"questions": len(rows), "categories": {}, "overall": {}}
    for cat, name in CATEGORIES.items():
        mine = [r for r in rows if r["category"] == cat]
        block: dict[str, Any] = {"name": name, "questions": len(mine)}
        for k in ks:
            block[f"recall@{k}"] = metrics.mean(r[f"recall@{k}"] for r in mine)
        out["categories"][str(cat)] = block
    for k in ks:
        out["overall"][f"recall@{k}"] = metrics.mean(r[f"recall@{k}"] for r in rows)
    if len(ks) > 1:
        out["overall"][metrics.head_key(ks)] = metrics.mean(r[metrics.head_key(ks)] for r in rows)
    return out | metrics.run_summary(rows, timings, writes, seconds)


async def run_locomo(
    cfg: RunConfig,
    base: Settings,
    embedder: Embedder,
    *,
    on_step: Callable[[str, str], None] | None = None,
) -> dict[str, Any]:
    """Every system over every conversation; the results document (per question rows in
    ``questions``)."""
    conversations = load_conversations(cfg.data, cfg.limit)
    results: dict[str, Any] = {
        "config": {
            **cfg.as_json(), "embedder": embedder.id,
            "conversations": [c.sample_id for c in conversations],
            "questions": sum(len(c.questions) for c in conversations),
            "questions_skipped": sum(c.skipped for c in conversations),
        },
        "systems": {},
        "questions": [],
    }  # fmt: skip
    with tempfile.TemporaryDirectory(prefix="cranimem-locomo-") as tmp:
        root = cfg.workdir or Path(tmp)
        for name in cfg.systems:
            open_conversation = _opener(name, cfg, base, embedder, root)
            timings: dict[str, list[float]] = {
                "recall_took_ms": [], "recall_wall_ms": [], "remember_ms": [],
            }  # fmt: skip
            writes: Counter[str] = Counter()
            rows: list[dict[str, Any]] = []
            started = time.perf_counter()
            for conv in conversations:

                def step(system: str = name, sample_id: str = conv.sample_id) -> None:
                    if on_step is not None:
                        on_step(system, sample_id)

                async with open_conversation(conv) as memory:
                    rows += await run_conversation(memory, conv, cfg.ks, timings, writes, step)
            seconds = time.perf_counter() - started
            results["systems"][name] = summarise(rows, cfg.ks, timings, writes, seconds)
            results["questions"] += [{"system": name, **r} for r in rows]
    if "cranimem" in cfg.systems and "cranimem-mcp" in cfg.systems:
        results["systems"]["cranimem-mcp"]["questions_differing_from_cranimem"] = metrics.differing(
            results["questions"], "cranimem-mcp", "cranimem"
        )
    return results


def steps(path: Path, systems: Sequence[str], limit: int | None = None) -> int:
    """How many progress steps a run takes: one per write and one per question."""
    conversations = load_conversations(path, limit)
    return len(systems) * sum(len(c.turns) + len(c.questions) for c in conversations)
