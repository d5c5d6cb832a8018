"""The command line's entry point: parse (:mod:`.cli_parser`), set up logging on stderr, and
dispatch each command to the engine, the memory service, the server (:mod:`.cli_serve`) or the
benchmark harness, rendering results as JSON or text (:mod:`.cli_text`). Everything heavy is
imported inside the command that needs it: ``--help`` and the one-shot commands bridged to a
running owner never load the engine's stores."""

from __future__ import annotations

import argparse
import atexit
import gc
import json
import logging
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

import anyio
from pydantic import BaseModel

from cranimem_mcp.backends import heap
from cranimem_mcp.cli.parser import build_parser
from cranimem_mcp.cli.text import (
    check_text,
    forget_text,
    goal_text,
    page_text,
    remember_text,
    report_text,
    restore_text,
    stats_text,
)
from cranimem_mcp.config import Settings, load_settings
from cranimem_mcp.errors import CranimemError, InvalidInput

logger = logging.getLogger("cranimem_mcp")

# The one-shot commands that open the engine (or bridge to its owner), then exit.
OPENS_ENGINE = frozenset(
    {"remember", "recall", "consolidate", "forget", "list", "restore", "goal", "check", "stats",
     "import", "export"}
)  # fmt: skip
_paused_thresholds: tuple[int, int, int] | None = None


def _pause_collector() -> None:
    """For a process that runs one command and exits: no cyclic garbage collection while
    the engine opens, none at exit. The open imports LanceDB, rdflib, onnxruntime and spaCy
    (objects by the hundred thousand, nearly none of them garbage), and the collections walk
    them again and again: 0.2-0.4 s of a one-shot command's CPU, and the interpreter's own at
    exit another 0.3-0.45 s (docs/RESULTS.md, "One-shot commands, again").
    :func:`_resume_collector` turns it back on once the engine is open, so a long command (a
    consolidation, an import) still collects its own garbage."""
    global _paused_thresholds
    _paused_thresholds = gc.get_threshold()
    gc.set_threshold(0)  # threshold 0: no automatic collection (spaCy's loader re-enables gc)
    atexit.register(gc.freeze)  # runs before the interpreter's collections at exit


def _resume_collector() -> None:
    """The engine is open: what the imports made moves to the collector's permanent
    generation (``gc.freeze``), so the collections from here on walk only newer objects."""
    global _paused_thresholds
    if _paused_thresholds is not None:
        gc.freeze()
        gc.set_threshold(*_paused_thresholds)
        _paused_thresholds = None


def _setup_logging(verbose: int) -> None:
    # LanceDB's Rust core logs to stderr on its own; keep it to errors unless asked.
    os.environ.setdefault("LANCE_LOG", "error")
    level = logging.DEBUG if verbose > 1 else logging.INFO if verbose else logging.WARNING
    logging.basicConfig(
        level=level, stream=sys.stderr, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    # The terminal keeps its level when an MCP client asks for more of the package's records
    # (server/logs.py lowers the package logger's level for them).
    for handler in logging.getLogger().handlers:
        handler.setLevel(level)
    for noisy in ("httpx", "httpx2", "httpcore", "sentence_transformers", "transformers", "mcp"):
        logging.getLogger(noisy).setLevel(logging.WARNING)


def _settings(args: argparse.Namespace, **extra: Any) -> Settings:
    extra.setdefault("home", args.data_dir)
    return load_settings(args.config, **extra)


def _emit(args: argparse.Namespace, result: BaseModel, text: str) -> None:
    if args.json:
        print(result.model_dump_json(indent=2))
    else:
        print(text)


async def _one_shot(args: argparse.Namespace) -> int:
    settings = _settings(args)
    if args.command == "doctor":
        return await _doctor(args, settings)
    if args.command == "reembed":
        await _reembed(args, settings)
        return 0
    if args.command == "rewrite-graph":
        return await _rewrite_graph(args, settings)
    from cranimem_mcp.sharing.handle import shared_engine

    cmd = args.command
    if cmd == "import":
        return await _import(args, settings)
    if cmd == "export":
        return await _export(args, settings)
    # While a server owns the directory these go through it (the memory service, bridged).
    async with shared_engine(settings) as engine:
        _resume_collector()
        if cmd == "remember":
            r = await engine.remember(
                content=args.content, scope=args.scope, goal=args.goal, source=args.source,
                tags=args.tags, pin=args.pin,
            )  # fmt: skip
            _emit(args, r, remember_text(r))
        elif cmd == "recall":
            r = await engine.recall(
                query=args.query, scope=args.scope, k=args.k, max_chars=args.max_chars,
                paths=args.paths, as_of=args.as_of, all_scopes=args.all_scopes,
            )  # fmt: skip
            _emit(args, r, r.context + (f"\n{r.notice}" if r.notice else ""))
        elif cmd == "consolidate":
            r = await engine.consolidate(scope=args.scope, dry_run=args.dry_run)
            _emit(args, r, report_text(r))
        elif cmd == "forget":
            r = await engine.forget(
                ids=args.ids, entity=args.entity, scope=args.scope,
                all_in_scope=args.all_in_scope, hard=args.hard, dry_run=args.dry_run,
            )  # fmt: skip
            _emit(args, r, forget_text(r))
        elif cmd == "list":
            r = await engine.list_memories(
                scope=args.scope, tier=args.tier, limit=args.limit, offset=args.offset
            )
            _emit(args, r, page_text(r))
        elif cmd == "restore":
            r = await engine.restore(ids=args.ids, scope=args.scope)
            _emit(args, r, restore_text(r))
        elif cmd == "goal":
            r = await engine.set_goal(goal=args.goal, scope=args.scope)
            _emit(args, r, goal_text(r))
        elif cmd == "check":
            problems = await engine.check()
            if args.json:
                print(json.dumps({"problems": problems}, indent=2))
            else:
                print(check_text(problems))
            return 1 if problems else 0
        elif cmd == "stats":
            r = await engine.stats()
            _emit(args, r, stats_text(r))
    return 0


async def _doctor(args: argparse.Namespace, settings: Settings) -> int:
    from cranimem_mcp.cli.doctor import doctor

    checks = await doctor(settings, args.try_calls)
    if args.json:
        print(json.dumps([c.__dict__ for c in checks], indent=2))
    else:
        for c in checks:
            print(f"{c.status:4}  {c.what}")
            if c.fix and c.status != "ok":
                print(f"      fix: {c.fix}")
    return 1 if any(c.status == "FAIL" for c in checks) else 0


async def _export(args: argparse.Namespace, settings: Settings) -> int:
    """Reads the stores directly: it needs the directory to itself."""
    from cranimem_mcp.cli.portability import export
    from cranimem_mcp.sharing.handle import exclusive_directory, open_local

    async with exclusive_directory(settings), open_local(settings, background=False) as engine:
        _resume_collector()
        counts = await export(engine, args.out)
    print(f"exported {counts['memories']} memories and {counts['quads']} quads to {args.out}")
    return 0


async def _import(args: argparse.Namespace, settings: Settings) -> int:
    if args.fmt != "cranimem":
        from cranimem_mcp.cli import imports
        from cranimem_mcp.sharing.handle import shared_engine

        reading = imports.read(args)  # the whole file, before the engine opens or any write
        async with shared_engine(settings) as engine:
            _resume_collector()
            print(await imports.import_from(engine, reading, args))
        return 0
    if args.scope or args.dry_run or args.gate:
        raise InvalidInput(
            "--scope, --dry-run and --gate are for --from server-memory, mcp-memory-service,"
            " chatgpt or claude: an export is imported whole into an empty data directory"
        )
    from cranimem_mcp.cli.portability import import_into
    from cranimem_mcp.sharing.handle import exclusive_directory, open_local

    async with exclusive_directory(settings), open_local(settings, background=False) as engine:
        _resume_collector()
        counts = await import_into(engine, args.src)
    print(f"imported {counts['memories']} memories and {counts['quads']} quads "
          f"into {settings.home}")  # fmt: skip
    return 0


async def _reembed(args: argparse.Namespace, settings: Settings) -> None:
    from cranimem_mcp.cli.doctor import reembed
    from cranimem_mcp.providers import select_providers
    from cranimem_mcp.sharing.handle import exclusive_directory

    async with (
        exclusive_directory(settings),
        await select_providers(settings, embedder=args.to) as providers,
    ):
        old, new, n = await reembed(settings, providers.embedder)
    if old != new:
        print(f"re-embedded {n} memories: {old} -> {new}")
    else:  # the same embedder: only long memories' passage vectors were brought up to date
        print(f"already {new}; {n} long memories given the passage vectors of "
              f"episodic.windows = {settings.episodic.windows}")  # fmt: skip


async def _rewrite_graph(args: argparse.Namespace, settings: Settings) -> int:
    """Reads the SPARQL server, never the data directory: replicas may keep serving."""
    from cranimem_mcp.cli.doctor import rewrite_graph

    done = await rewrite_graph(settings, args.target, args.absent)
    if args.json:
        print(json.dumps({"target": str(done.target), "quads": done.quads,
                          "generation": done.generation}, indent=2))  # fmt: skip
    else:
        print(f"copied {done.quads} quads into {done.target} and verified them (the server's"
              f" count at generation {done.generation or '-'}). To use it, with no write since"
              " the copy (docs/SCALING.md, 'Hard forget across replicas'): stop the SPARQL"
              f" server, start it on {done.target}, run `cranimem-mcp check`, and only then"
              " remove the old store's directory: it still holds what was forgotten.")  # fmt: skip
    return 0


def _show(line: str) -> None:
    print(line, flush=True)


def main(argv: list[str] | None = None) -> int:
    """The command line. ``argv`` None: this process's own command line (the console script,
    ``python -m``), a process that exits after the command; callers that go on (tests) pass
    ``argv`` and keep their collector as it is."""
    args = build_parser().parse_args(argv)
    if argv is None and args.command in OPENS_ENGINE:
        _pause_collector()
    # What we store is private: LanceDB creates its files with the process umask (0644 and
    # 0755 under the usual 022), so every file and folder we or it create is owner-only.
    os.umask(0o077)
    # Before any thread starts: threads share two malloc arenas, so what LanceDB's
    # maintenance frees goes back at a trim instead of staying in half-used arenas.
    heap.limit_arenas()
    _setup_logging(args.verbose if args.command != "serve" else max(1, args.verbose))
    try:
        if args.command in ("serve", "ui"):
            from cranimem_mcp.cli.serve import serve

            anyio.run(serve, args, _show)
        elif args.command in ("eval", "bench"):
            from cranimem_mcp.eval import command

            settings = load_settings(args.config)
            if args.command == "bench":
                run = command.bench
            elif args.benchmark == "temporal":
                run = command.eval_temporal
            elif args.benchmark == "locomo":
                run = command.eval_locomo
            elif args.benchmark == "longmemeval":
                run = command.eval_longmemeval
            else:
                run = command.eval_hotpotqa
            anyio.run(run, args, settings, print)
        elif args.command == "setup":
            from cranimem_mcp.cli.setup import setup

            return setup(args, print)
        elif args.command == "demo":
            from cranimem_mcp.cli.demo import run_demo

            with tempfile.TemporaryDirectory(prefix="cranimem-demo-") as tmp:
                settings = _settings(args, home=args.data_dir or Path(tmp))
                anyio.run(run_demo, settings, print)
        else:
            return anyio.run(_one_shot, args)
    except CranimemError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
