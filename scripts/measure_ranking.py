"""Ranking variants on both conversational dev sets, on the same filled stores (issue 41).

Fills, once, one store per LoCoMo-dev conversation and per LongMemEval-dev instance with the
default engine (``eval_settings``: every turn written in order, one consolidation after the
last: the protocol of ``cranimem-mcp eval locomo`` / ``eval longmemeval``), then asks every
question of each with each variant's settings on a copy of the filled stores (a recall writes
access counts). A variant is ``name=JSON`` of settings overrides by section, e.g.
``'bm=retrieval.fusion:"rrf"'`` is written ``'rrf={"retrieval": {"fusion": "rrf"}}'``.

Reports per variant and benchmark: evidence R@5 / R@10 (LoCoMo), turn R@5 / R@10 and session
R@5 (LongMemEval), the share of recalls shorter than k while the store held k, and the p50
recall time (``took_ms``). Filling takes ~15 min here (the gate parses every turn);
re-running with the same ``--filled`` reads the same stores, so variants compare on
identical data.

    PYTHONPATH=. .venv/bin/python scripts/measure_ranking.py --filled /tmp/ranking \\
        [--per-type 2] [--variant 'name={...}' ...] [--no-default] [--only locomo] [--json out.json]
        [--log rows.jsonl]

``--log`` appends each question's row as it is answered, so a run stopped part way still
compares variants on the questions both answered (``"mean_windows"`` re-embeds every store: on
all 40 LongMemEval instances that takes hours here).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import statistics
import tempfile
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from cranimem_mcp import validation
from cranimem_mcp.backends.embeddings import OnnxEmbedder
from cranimem_mcp.backends.passages import passages
from cranimem_mcp.buffer.working_set import LIVE
from cranimem_mcp.cli.doctor import reembed
from cranimem_mcp.config import Settings
from cranimem_mcp.engine import MemoryEngine
from cranimem_mcp.eval import metrics
from cranimem_mcp.eval.locomo import load_conversations
from cranimem_mcp.eval.longmemeval import load_instances
from cranimem_mcp.eval.systems import eval_settings
from cranimem_mcp.models import MAX_CHARS
from cranimem_mcp.recall import dual_path
from cranimem_mcp.temporal import observed_at

SHARED = Path(__file__).resolve().parents[1].parent / "shared" / "data"
KS = (5, 10)


def merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    for key, value in over.items():
        if isinstance(value, dict) and isinstance(base.get(key), dict):
            merge(base[key], value)
        else:
            base[key] = value
    return base


def settings(home: Path, overrides: dict[str, Any] | None = None) -> Settings:
    data = eval_settings(Settings(), home).model_dump()
    return Settings.model_validate(merge(data, overrides or {}))


def benchmarks(per_type: int) -> dict[str, list[dict[str, Any]]]:
    """Each benchmark's stores: scope, turns (text), questions (text, evidence texts,
    evidence sessions' texts)."""
    out: dict[str, list[dict[str, Any]]] = {"locomo": [], "longmemeval": []}
    for conv in load_conversations(SHARED / "locomo_dev2.json"):
        texts = conv.texts
        out["locomo"].append({
            "scope": conv.scope, "turns": [t for _i, t in conv.turns],
            "questions": [
                {"text": q.text, "kind": str(q.category),
                 "wanted": [texts[e] for e in q.evidence], "sessions": [], "asked": ""}
                for q in conv.questions
            ],
        })  # fmt: skip
    for inst in load_instances(SHARED / "longmemeval_s_dev40.json", per_type=per_type):
        texts, by_session = inst.texts(), inst.session_texts()
        out["longmemeval"].append({
            "scope": inst.scope, "turns": [t.text for t in inst.turns],
            "questions": [
                {"text": q.text, "kind": q.category,
                 "wanted": [texts[e] for e in q.evidence],
                 "sessions": [by_session[s] for s in q.sessions], "asked": q.asked}
                for q in inst.questions
            ],
        })  # fmt: skip
    return out


async def fill(root: Path, stores: dict[str, list[dict[str, Any]]], embedder: Any) -> None:
    for bench, items in stores.items():
        for item in items:
            home = root / bench / item["scope"]
            if (home / "filled").exists():
                continue
            shutil.rmtree(home, ignore_errors=True)
            async with MemoryEngine(settings(home), embedder=embedder, background=False) as e:
                for text in item["turns"]:
                    await e.remember(text, item["scope"])
                await e.consolidate(item["scope"])
            (home / "filled").write_text("")
            print(f"filled {bench} {item['scope']}: {len(item['turns'])} turns", flush=True)


async def redate(engine: MemoryEngine, scope: str) -> None:
    """Each memory's event time as the engine reads it from its text now (a store filled
    before the reader learnt a date format holds another): what a fresh fill would hold."""
    rows = await engine.episodic.rows(where=f"scope = '{scope}'")
    moved: dict[Any, list[str]] = {}
    for row in rows:
        when = observed_at(row.content)
        if when is not None and when != row.observed_at:
            moved.setdefault(when, []).append(row.id)
    for when, ids in moved.items():
        await engine.episodic.update(ids, {"observed_at": when})


class Windowed:
    """The embedder reading long texts in ``windows`` windows, under an id of its own (so
    ``reembed`` re-embeds a filled store with it)."""

    def __init__(self, windows: int) -> None:
        self._inner = OnnxEmbedder(windows=windows)
        self.id = f"{self._inner.id}+windows{windows}"
        self.dim = self._inner.dim

    async def embed(self, texts: list[str]) -> Any:
        return await self._inner.embed(texts)


# Each long memory's further vectors as the embedder reads them now (its passages, since
# they replaced 256-word-piece windows), kept between runs: <--filled>/passages (main sets it).
WINDOWS = Path("passages")


async def add_windows(engine: MemoryEngine, bench: str, scope: str) -> None:
    """Each memory of the copy with the further vectors a write with the engine's
    ``episodic.windows`` stores now (the stores were filled before passages: their own are
    replaced): computed once per memory (up to 64, kept in ``WINDOWS``), written through the
    store's upsert."""
    limit = engine.settings.episodic.windows
    rows = await engine.episodic.rows(where=f"scope = '{scope}'", vectors=True)
    cache = WINDOWS / bench / f"{scope}.npz"
    have: dict[str, Any] = {}
    if cache.exists():
        with np.load(cache) as z:
            have = {k: z[k] for k in z.files}
    todo = [m for m in rows if m.id not in have and (len(m.content) > 600 or passages(m.content))]
    if todo:
        reader = OnnxEmbedder()
        for start in range(0, len(todo), 64):
            part = todo[start : start + 64]
            found = reader.embed_windows_sync([m.content for m in part], 64)
            have |= {m.id: v for m, v in zip(part, found, strict=True)}
        cache.parent.mkdir(parents=True, exist_ok=True)
        np.savez(cache, **have)
    changed = []
    for m in rows:
        more = have.get(m.id)
        more = more[1:limit] if more is not None and limit > 1 and len(more) > 1 else None
        if more is not None or m.windows is not None:
            changed.append(replace(m, windows=more))
    for start in range(0, len(changed), 1000):
        await engine.episodic.upsert(changed[start : start + 1000])
    if changed:  # the upserts' fragments slow every search (recall p50 14 -> 30 ms): pack them
        await engine.episodic.maintain(force=True)


LOG: Path | None = None  # --log: every question's row, appended as it is answered


async def ask(
    root: Path,
    stores: dict[str, list[dict[str, Any]]],
    embedder: Any,
    overrides: dict,
    name: str = "",
) -> dict[str, Any]:
    """Every question of every store, on a copy of the filled store, with ``overrides``
    (``"mean_windows": N`` re-embeds the copy with :class:`Windowed` first; every copy gets
    the windows' vectors its settings' ``episodic.windows`` stores, :func:`add_windows`)."""
    overrides = dict(overrides)
    windows = overrides.pop("mean_windows", None)
    asked = overrides.pop("asked", False)
    # read a question's times against when it is asked
    if windows is not None:
        embedder = Windowed(windows)
    out: dict[str, Any] = {}
    for bench, items in stores.items():
        rows: list[dict[str, float | None]] = []
        took: list[float] = []
        shapes: list[dict[str, Any]] = []
        short = 0
        for item in items:
            with tempfile.TemporaryDirectory(prefix="ranking-") as tmp:
                home = Path(tmp) / "home"
                shutil.copytree(root / bench / item["scope"], home)
                if windows is not None:
                    await reembed(settings(home), embedder)
                async with MemoryEngine(
                    settings(home, overrides), embedder=embedder, background=False
                ) as engine:
                    await redate(engine, item["scope"])
                    await add_windows(engine, bench, item["scope"])
                    live = await engine.episodic.live_rows(item["scope"], LIVE)
                    for q in item["questions"]:
                        # The memories holding an evidence turn: a fact they state is about
                        # the question (the facts' share of evidence, below).
                        evidence = {e.id for e in live if any(w in e.content for w in q["wanted"])}
                        row: dict[str, float | None] = {}
                        for k in KS:
                            when = observed_at(q["asked"]) if asked and q["asked"] else None
                            # A time the question names ("5 days ago") is read against when it
                            # is asked; not ``as_of``: LongMemEval-S dates some haystack (and
                            # evidence) sessions after the question, which as_of would drop.
                            dual_path.now = (lambda w=when: w) if when else validation.now
                            result = await engine.recall(q["text"], item["scope"], k, MAX_CHARS)
                            found = [it.content for it in result.items]
                            took.append(result.took_ms)
                            short += len(found) < k
                            ranks = metrics.evidence_ranks(found, q["wanted"])
                            row[f"R@{k}"] = metrics.recall_at_k(ranks, k)
                            if k == max(KS):  # for the context's cut: scores, evidence
                                shapes.append({
                                    "items": [it.score for it in result.items],
                                    "evidence": [any(w in c for w in q["wanted"]) for c in found],
                                    "facts": [f.score for f in result.facts],
                                    "fact_evidence": [
                                        bool(evidence & set(f.sources)) for f in result.facts
                                    ],
                                    "fact_on_items": [
                                        bool({it.id for it in result.items} & set(f.sources))
                                        for f in result.facts
                                    ],
                                    "fact_hops": [f.hops for f in result.facts],
                                    "context_chars": len(result.context),
                                })  # fmt: skip
                            if q["sessions"]:
                                s = metrics.session_ranks(found, q["sessions"])
                                row[f"S@{k}"] = metrics.recall_at_k(s, k)
                        rows.append(row)
                        if LOG is not None:  # one line per question, as it is answered
                            with LOG.open("a") as log:
                                print(
                                    json.dumps(
                                        {
                                            "variant": name,
                                            "bench": bench,
                                            "scope": item["scope"],
                                            **row,
                                        }
                                    ),
                                    file=log,
                                )
        keys = sorted({key for r in rows for key in r})
        out[bench] = {key: round(metrics.mean(r.get(key) for r in rows) or 0.0, 3) for key in keys}
        out[bench] |= {
            "questions": len(rows),
            "short": round(short / max(1, len(took)), 3),
            "p50_ms": round(statistics.median(took), 1) if took else None,
            "shapes": shapes,
            "rows": rows,  # per question, for comparing variants question by question
        }
    return out


async def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--filled", type=Path, required=True)
    p.add_argument("--per-type", type=int, default=2)
    p.add_argument("--variant", action="append", default=[])
    p.add_argument("--only", choices=("locomo", "longmemeval"))
    p.add_argument("--json", type=Path)
    p.add_argument("--log", type=Path, help="append each question's row (JSON lines)")
    p.add_argument("--no-default", action="store_true", help="only the --variant ones")
    args = p.parse_args()
    global LOG, WINDOWS
    LOG = args.log
    WINDOWS = args.filled / "passages"
    variants: dict[str, dict[str, Any]] = {} if args.no_default else {"default": {}}
    for spec in args.variant:
        name, _, raw = spec.partition("=")
        variants[name] = json.loads(raw)
    stores = benchmarks(args.per_type)
    if args.only:
        stores = {args.only: stores[args.only]}
    embedder = OnnxEmbedder()
    await fill(args.filled, stores, embedder)
    results = {}
    for name, overrides in variants.items():
        results[name] = await ask(args.filled, stores, embedder, overrides, name)
        brief = {
            b: {k: v for k, v in r.items() if k not in ("shapes", "rows")}
            for b, r in results[name].items()
        }
        print(name, json.dumps(brief), flush=True)
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    asyncio.run(main())
