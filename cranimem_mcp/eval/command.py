"""What ``cranimem-mcp eval hotpotqa | temporal | locomo | longmemeval`` and ``cranimem-mcp
bench`` do once the CLI has parsed their arguments. ``say`` writes a line to stdout (the CLI
passes ``print``); the progress bar goes to stderr."""

from __future__ import annotations

import argparse
import json
import logging
import sys
from collections.abc import Callable
from typing import Any

from cranimem_mcp.backends.embeddings import local_embedder
from cranimem_mcp.config import Settings
from cranimem_mcp.errors import InvalidInput

from .arguments import HOTPOTQA_DATA, LOCOMO_DATA, LONGMEMEVAL_DATA
from .hotpotqa import EvalConfig, run_eval, write_results
from .report import (
    locomo_table,
    longmemeval_table,
    markdown_table,
    plot_locomo,
    plot_longmemeval,
    plot_results,
)

logger = logging.getLogger(__name__)


def _progress(total: int, unit: str = "q") -> Any:
    try:
        from tqdm import tqdm
    except ImportError:  # the eval extra is not installed: no bar, the run still works
        return None
    return tqdm(total=total, file=sys.stderr, unit=unit, dynamic_ncols=True)


async def eval_hotpotqa(args: argparse.Namespace, settings: Settings, say: Callable) -> None:
    args.data = args.data or HOTPOTQA_DATA
    systems = list(dict.fromkeys(args.systems or ["cranimem", "vanilla"]))
    if args.ablations:
        systems += [s for s in ("no-gate", "no-graph") if s not in systems]
    if "bm25" in systems:
        raise InvalidInput("bm25 is a baseline of eval locomo and eval longmemeval, not hotpotqa")
    cfg = EvalConfig(
        data=args.data,
        limit=args.limit,
        seed=args.seed,
        inject_every=args.inject_every,
        noise=args.noise,
        k=args.k or settings.retrieval.k,
        max_chars=args.max_chars or settings.retrieval.max_chars,
        systems=systems,
        settings=args.settings or ["clean", "noisy"],
        answer_model=args.answer_model,
        workdir=args.workdir,
    )
    answerer = None
    if args.answer_model:
        from .answer import OllamaAnswerer

        ollama = getattr(settings, "ollama", None)
        answerer = OllamaAnswerer(args.answer_model, host=getattr(ollama, "host", None))
    embedder = local_embedder(settings.models.embedder_model, settings.models.threads)
    from .data import load_questions

    n = len(load_questions(args.data, args.limit))
    bar = _progress(n * len(cfg.systems) * len(cfg.settings))
    rows_file = args.output.with_suffix(".questions.jsonl")
    rows_file.parent.mkdir(parents=True, exist_ok=True)
    with rows_file.open("w", encoding="utf-8") as rows_out:

        def on_row(system: str, setting: str, row: dict[str, Any]) -> None:
            rows_out.write(json.dumps({"system": system, "setting": setting, **row}) + "\n")
            rows_out.flush()
            if bar is not None:
                bar.set_description(f"{system}/{setting}")
                bar.update(1)

        try:
            results = await run_eval(cfg, settings, embedder, answerer=answerer, on_row=on_row)
        finally:
            if bar is not None:
                bar.close()
    write_results(results, args.output)
    if not args.no_plots:
        plot_dir = args.plots or args.output.parent
        for path in plot_results(results, plot_dir):
            say(f"plot: {path}")
    say(f"results: {args.output} (per question: {rows_file})")
    say(markdown_table(results))


async def eval_temporal(args: argparse.Namespace, settings: Settings, say: Callable) -> None:
    """Changing facts: current-fact and as-of accuracy, cranimem vs vanilla."""
    import tempfile
    from pathlib import Path

    from .temporal import run_temporal, temporal_table

    embedder = local_embedder(settings.models.embedder_model, settings.models.threads)
    k = args.k or settings.retrieval.k
    max_chars = args.max_chars or 2000
    with tempfile.TemporaryDirectory(prefix="cranimem-temporal-") as tmp:
        workdir = args.workdir or Path(tmp)
        results = await run_temporal(
            settings,
            embedder,
            workdir,
            args.histories,
            args.seed,
            k,
            max_chars,
            paraphrased=args.paraphrased,
        )
    args.output.write_text(json.dumps(results, indent=2), encoding="utf-8")
    say(f"results: {args.output}")
    say(temporal_table(results))


async def eval_locomo(args: argparse.Namespace, settings: Settings, say: Callable) -> None:
    """Evidence recall@k on LoCoMo conversations, per category, cranimem vs vanilla (and
    cranimem through MCP stdio with ``--through-mcp``)."""
    from .locomo import RunConfig, run_locomo, steps

    systems = _conversation_systems(args, "locomo", ["cranimem", "vanilla"])
    cfg = RunConfig(
        data=args.data or LOCOMO_DATA,
        systems=systems,
        ks=_recall_at(args),
        max_chars=args.max_chars or settings.retrieval.max_chars,
        limit=args.limit,
        workdir=args.workdir,
        config_file=args.config,
    )
    embedder = local_embedder(settings.models.embedder_model, settings.models.threads)
    bar = _progress(steps(cfg.data, systems, cfg.limit), unit="call")

    def on_step(system: str, conversation: str) -> None:
        if bar is not None:
            bar.set_description(f"{system}/{conversation}", refresh=False)
            bar.update(1)

    try:
        results = await run_locomo(cfg, settings, embedder, on_step=on_step)
    finally:
        if bar is not None:
            bar.close()
    _write(results, args, plot_locomo)
    say(locomo_table(results))


async def eval_longmemeval(args: argparse.Namespace, settings: Settings, say: Callable) -> None:
    """Turn- and session-level evidence recall@k on LongMemEval instances, per question type:
    cranimem, vanilla and bm25 (and cranimem through MCP stdio with ``--through-mcp``)."""
    from .longmemeval import RunConfig, run_longmemeval, steps

    systems = _conversation_systems(args, "longmemeval", ["cranimem", "vanilla", "bm25"])
    cfg = RunConfig(
        data=args.data or LONGMEMEVAL_DATA,
        systems=systems,
        ks=_recall_at(args),
        limit=args.limit,
        per_type=args.per_type,
        workdir=args.workdir,
        config_file=args.config,
    )
    if args.max_chars:
        cfg.max_chars = args.max_chars
    embedder = local_embedder(settings.models.embedder_model, settings.models.threads)
    bar = _progress(steps(cfg), unit="call")

    def on_step(system: str, instance: str) -> None:
        if bar is not None:
            bar.set_description(f"{system}/{instance}", refresh=False)
            bar.update(1)

    try:
        results = await run_longmemeval(cfg, settings, embedder, on_step=on_step)
    finally:
        if bar is not None:
            bar.close()
    _write(results, args, plot_longmemeval)
    say(longmemeval_table(results))


def _conversation_systems(
    args: argparse.Namespace, benchmark: str, default: list[str]
) -> list[str]:
    systems = list(dict.fromkeys(args.systems or default))
    unknown = [s for s in systems if s not in ("cranimem", "vanilla", "bm25")]
    if unknown:
        raise InvalidInput(
            f"eval {benchmark} runs cranimem, vanilla and bm25, not {', '.join(unknown)}"
        )
    if args.through_mcp:
        systems.append("cranimem-mcp")
    return systems


def _recall_at(args: argparse.Namespace) -> tuple[int, ...]:
    try:
        ks = tuple(sorted({int(k) for k in args.recall_at.split(",") if k.strip()}))
    except ValueError as exc:
        raise InvalidInput(f"--recall-at takes comma-separated integers: {exc}") from exc
    if any(k < 1 for k in ks):
        raise InvalidInput(f"--recall-at takes positive integers, not {args.recall_at!r}")
    return ks or (5, 10)


def _write(results: dict[str, Any], args: argparse.Namespace, plot: Callable) -> None:
    """The results document, and its plot unless ``--no-plots``."""
    write_results(results, args.output)
    written = None
    if not args.no_plots:
        try:
            written = plot(results, args.plot or args.output.with_suffix(".png"))
        except ImportError:  # the eval extra is not installed: no plot, the numbers stand
            logger.warning("no plot: matplotlib is not installed (the eval extra)")
    logger.info("results: %s%s", args.output, f", plot: {written}" if written else "")


async def bench(args: argparse.Namespace, settings: Settings, say: Callable) -> None:
    from .bench import run_bench_command

    await run_bench_command(args, settings, say)
