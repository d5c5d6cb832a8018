"""The command line: ``cranimem-mcp serve | ui | remember | recall | list | consolidate |
forget | restore | goal | stats | check | export | import | doctor | reembed | demo | eval |
bench``. Logging goes to stderr; ``serve`` writes nothing to stdout but protocol messages."""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

import anyio
from pydantic import BaseModel

from .config import Settings, load_settings
from .errors import ConfigError, CranimemError

logger = logging.getLogger("cranimem_mcp")


def _setup_logging(verbose: int) -> None:
    # LanceDB's Rust core logs to stderr on its own; keep it to errors unless asked.
    os.environ.setdefault("LANCE_LOG", "error")
    level = logging.DEBUG if verbose > 1 else logging.INFO if verbose else logging.WARNING
    logging.basicConfig(
        level=level, stream=sys.stderr, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    for noisy in ("httpx", "httpcore", "sentence_transformers", "transformers", "mcp"):
        logging.getLogger(noisy).setLevel(logging.WARNING)


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--data-dir", type=Path, help="data directory (default: CRANIMEM_HOME)")
    p.add_argument("--config", type=Path, help="TOML configuration file")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.add_argument("-v", "--verbose", action="count", default=0)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="cranimem-mcp", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("serve", help="run the MCP server (stdio by default)")
    _common(p)
    p.add_argument("--transport", choices=["stdio", "http"])
    p.add_argument("--host")
    p.add_argument("--port", type=int)
    p.add_argument("--allow-remote", action="store_true", default=None)

    p = sub.add_parser("ui", help="serve the web inspector (HTTP) and print its address")
    _common(p)
    p.add_argument("--host")
    p.add_argument("--port", type=int)
    p.add_argument("--allow-remote", action="store_true", default=None)
    p.add_argument("--open", action="store_true", help="also open it in the web browser")

    p = sub.add_parser("remember", help="store a memory (gated)")
    _common(p)
    p.add_argument("content")
    p.add_argument("--scope", default="default")
    p.add_argument("--goal")
    p.add_argument("--source")
    p.add_argument("--tag", action="append", dest="tags", default=[])
    p.add_argument(
        "--pin", action="store_true", help="the user asked to remember it: skip the noise gate"
    )

    p = sub.add_parser("recall", help="recall memories and facts for a query")
    _common(p)
    p.add_argument("query")
    p.add_argument("--scope", default="default")
    p.add_argument("-k", type=int)
    p.add_argument("--max-chars", type=int)
    p.add_argument("--path", action="append", dest="paths", choices=["episodic", "graph"])
    p.add_argument("--as-of", help="ISO 8601 time: recall what held then")
    p.add_argument("--all-scopes", action="store_true", help="search every scope")

    p = sub.add_parser("consolidate", help="replay the buffer now")
    _common(p)
    p.add_argument("--scope")
    p.add_argument("--dry-run", action="store_true")

    p = sub.add_parser("forget", help="forget memories (soft unless --hard)")
    _common(p)
    p.add_argument("ids", nargs="*")
    p.add_argument("--entity")
    p.add_argument("--scope", default="default")
    p.add_argument("--all-in-scope", action="store_true")
    p.add_argument("--hard", action="store_true")
    p.add_argument("--dry-run", action="store_true")

    p = sub.add_parser("list", help="list a scope's memories by tier (the trash too), paged")
    _common(p)
    p.add_argument("--tier", choices=("buffer", "longterm", "trash"), help="default: all")
    p.add_argument("--scope", default="default")
    p.add_argument("--limit", type=int, default=20, help="memories per page (1-100)")
    p.add_argument("--offset", type=int, default=0, help="memories to skip")

    p = sub.add_parser("restore", help="bring memories back from the trash")
    _common(p)
    p.add_argument("ids", nargs="+")
    p.add_argument("--scope", default="default")

    p = sub.add_parser("goal", help="set a scope's goal")
    _common(p)
    p.add_argument("goal")
    p.add_argument("--scope", default="default")

    p = sub.add_parser("stats", help="per-scope counts")
    _common(p)

    p = sub.add_parser("check", help="check that the stores agree (exit 1 on problems)")
    _common(p)

    p = sub.add_parser("export", help="write memories (JSON Lines) and the graph (TriG)")
    _common(p)
    p.add_argument("out", type=Path, help="directory to write memories.jsonl and graph.trig to")

    p = sub.add_parser("import", help="read an export into an empty data directory")
    _common(p)
    p.add_argument("src", type=Path, help="directory written by export")

    p = sub.add_parser("doctor", help="check the Ollama host, models, embedder and store")
    _common(p)
    p.add_argument(
        "--try", type=int, default=0, dest="try_calls", metavar="N",
        help="also make N real tagging and extraction calls; report latency and JSON validity",
    )  # fmt: skip

    p = sub.add_parser("reembed", help="re-embed the store with another embedder")
    _common(p)
    p.add_argument(
        "--to", choices=["auto", "ollama", "local"],
        help="the new embedder (default: [models] embedder of the configuration)",
    )  # fmt: skip

    p = sub.add_parser("demo", help="a narrated tour of the pipeline on a temporary store")
    _common(p)

    p = sub.add_parser("eval", help="benchmark quality under noise (HotpotQA, clean vs noisy)")
    p.add_argument("--config", type=Path, help="TOML configuration file")
    p.add_argument("-v", "--verbose", action="count", default=0)
    from .eval.arguments import add_eval_arguments

    add_eval_arguments(p)

    p = sub.add_parser("bench", help="latency and memory at 1k/10k/100k memories")
    p.add_argument("--config", type=Path, help="TOML configuration file")
    p.add_argument("-v", "--verbose", action="count", default=0)
    from .eval.arguments import add_bench_arguments

    add_bench_arguments(p)
    return parser


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
    from .sharing import shared_engine

    cmd = args.command
    if cmd == "import":
        return await _import(args, settings)
    if cmd == "export":
        return await _export(args, settings)
    # While a server owns the directory these go through it (the memory service, bridged).
    async with shared_engine(settings) as engine:
        if cmd == "remember":
            r = await engine.remember(
                content=args.content, scope=args.scope, goal=args.goal, source=args.source,
                tags=args.tags, pin=args.pin,
            )  # fmt: skip
            _emit(args, r, _remember_text(r))
        elif cmd == "recall":
            r = await engine.recall(
                query=args.query, scope=args.scope, k=args.k, max_chars=args.max_chars,
                paths=args.paths, as_of=args.as_of, all_scopes=args.all_scopes,
            )  # fmt: skip
            _emit(args, r, r.context)
        elif cmd == "consolidate":
            r = await engine.consolidate(scope=args.scope, dry_run=args.dry_run)
            _emit(args, r, _report_text(r))
        elif cmd == "forget":
            r = await engine.forget(
                ids=args.ids, entity=args.entity, scope=args.scope,
                all_in_scope=args.all_in_scope, hard=args.hard, dry_run=args.dry_run,
            )  # fmt: skip
            verb = "would forget" if r.dry_run else "forgot"
            _emit(args, r, f"{verb} {r.forgotten} ({'hard' if r.hard else 'soft'}); "
                  f"facts removed: {r.facts_removed}; ids: {' '.join(r.ids)}")  # fmt: skip
        elif cmd == "list":
            r = await engine.list_memories(
                scope=args.scope, tier=args.tier, limit=args.limit, offset=args.offset
            )
            _emit(args, r, _page_text(r))
        elif cmd == "restore":
            r = await engine.restore(ids=args.ids, scope=args.scope)
            _emit(args, r, f"restored {r.restored}: {' '.join(r.ids)}")
        elif cmd == "goal":
            r = await engine.set_goal(goal=args.goal, scope=args.scope)
            _emit(args, r, f"goal of {r.scope}: {r.goal}")
        elif cmd == "check":
            problems = await engine.check()
            if args.json:
                print(json.dumps({"problems": problems}, indent=2))
            else:
                print("\n".join(problems) if problems else "ok: the stores agree")
            return 1 if problems else 0
        elif cmd == "stats":
            r = await engine.stats()
            _emit(args, r, _stats_text(r))
    return 0


def _page_text(page: Any) -> str:
    """One line per memory: id, tier, when it entered the tier, the start of its text."""
    lines = []
    for m in page.items:
        text = " ".join(m.content.split())
        text = text if len(text) <= 70 and not m.truncated else text[:67] + "..."
        when = m.tier_changed_at or m.created_at
        lines.append(f"{m.id}  {m.tier:<8}  {when:%Y-%m-%d %H:%M}  {text}")
    where = f"{page.scope}, {page.tier or 'all tiers'}"
    if not page.items:
        return f"no memories at offset {page.offset} ({where}: {page.total} in all)"
    shown = f"{page.offset + 1}-{page.offset + len(page.items)} of {page.total} ({where})"
    more = f"; next page: --offset {page.next_offset}" if page.next_offset is not None else ""
    return "\n".join([*lines, shown + more])


async def _doctor(args: argparse.Namespace, settings: Settings) -> int:
    from .doctor import doctor

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
    from .portability import export
    from .sharing import exclusive_directory, open_local

    async with exclusive_directory(settings), open_local(settings, background=False) as engine:
        counts = await export(engine, args.out)
    print(f"exported {counts['memories']} memories and {counts['quads']} quads to {args.out}")
    return 0


async def _import(args: argparse.Namespace, settings: Settings) -> int:
    from .portability import import_into
    from .sharing import exclusive_directory, open_local

    async with exclusive_directory(settings), open_local(settings, background=False) as engine:
        counts = await import_into(engine, args.src)
    print(f"imported {counts['memories']} memories and {counts['quads']} quads "
          f"into {settings.home}")  # fmt: skip
    return 0


async def _reembed(args: argparse.Namespace, settings: Settings) -> None:
    from .doctor import reembed
    from .providers import select_providers
    from .sharing import exclusive_directory

    async with (
        exclusive_directory(settings),
        await select_providers(settings, embedder=args.to) as providers,
    ):
        old, new, n = await reembed(settings, providers.embedder)
    print(f"re-embedded {n} memories: {old} -> {new}" if n or old != new else f"already {new}")


def _remember_text(r: Any) -> str:
    if r.status == "rejected":
        return f"rejected, not stored: {r.reason}"
    redacted = f" [redacted: {', '.join(r.redacted)}]" if r.redacted else ""
    return f"{r.status} {r.id}{redacted}: {r.reason}"


def _aligned(pairs: list[tuple[str, str]], indent: str = "") -> list[str]:
    width = max((len(k) for k, _ in pairs), default=0)
    return [f"{indent}{k + ':':{width + 1}}  {v}" for k, v in pairs]


def _stats_text(r: Any) -> str:
    """``stats`` for a reader: aligned ``key: value`` lines, one block per scope."""
    pairs = [("data directory", r.data_dir)]
    # models holds each role ("embedder") and why it was chosen ("embedder_reason", which
    # names the choice too); a reason may come without its role ("default_gate_reason").
    roles = dict.fromkeys(k.removesuffix("_reason") for k in r.models)
    for role in roles:
        value = r.models.get(f"{role}_reason") or r.models.get(role, "")
        pairs.append((role.replace("_", " "), value))
    if r.fallbacks:
        pairs.append(("fallbacks", ", ".join(f"{k} {n}" for k, n in r.fallbacks.items())))
    lines = _aligned(pairs)
    for s in r.scopes:
        scope = [
            ("goal", s.goal),
            ("buffer", f"{s.buffer_size}/{s.buffer_capacity}"),
            ("long-term", str(s.longterm)),
            ("trash", str(s.trash)),
            ("facts", str(s.facts)),
            ("rejected writes", str(s.rejected_writes)),
        ]
        c = s.last_consolidation
        if c is not None:
            when = f" at {c.finished_at:%Y-%m-%d %H:%M:%S}" if c.finished_at else ""
            scope.append((
                "last consolidation",
                f"replayed {c.replayed}: promoted {c.promoted}, pruned {c.pruned}"
                f" ({c.trigger}{when})",
            ))  # fmt: skip
        lines += ["", f"scope {s.scope}", *_aligned(scope, "  ")]
    if not r.scopes:
        lines += ["", "no scopes yet"]
    return "\n".join(lines)


def _report_text(r: Any) -> str:
    lines = [
        f"replayed {r.replayed}: promoted {r.promoted}, pruned {r.pruned}, "
        f"facts added {r.triples_added}, reinforced {r.triples_reinforced} ({r.took_ms:.0f} ms)"
    ]
    lines += [f"  {d.decision:8} {d.id}  {d.reason}" for d in r.decisions]
    return "\n".join(lines)


async def _serve(args: argparse.Namespace) -> None:
    from .preload import EmbedderPreload

    base = _settings(args)
    # The local embedder loads in a thread of its own once the handshake is done and this
    # process owns the directory, beside the engine's open (initialize never waits for it).
    preload = EmbedderPreload(base)
    try:
        await _run_server(args, base, preload)
    finally:
        await anyio.to_thread.run_sync(preload.join)


async def _run_server(args: argparse.Namespace, base: Settings, preload: Any) -> None:
    from .server import build_server, service_of

    server_overrides = {
        k: v
        for k, v in {
            "transport": "http" if args.command == "ui" else args.transport,
            "host": args.host,
            "port": args.port,
            "allow_remote": args.allow_remote,
        }.items()
        if v is not None
    }
    settings = base.model_copy(update={"server": base.server.model_copy(update=server_overrides)})
    if server_overrides:
        settings = Settings.model_validate(settings.model_dump())
    # The HTTP daemon must own the directory: fail now, not at the first tool call. The
    # inspector need not: it bridges to the owner (Claude Desktop's serve, say) if there is one.
    daemon = args.command == "serve" and settings.server.transport == "http"
    if daemon:
        from .sharing import exclusive_directory

        async with exclusive_directory(settings):
            pass
    mcp = build_server(settings, preload=preload, require_owner=daemon)
    logger.info("data directory %s", settings.home)

    async def serve_http() -> None:
        from .http_transport import serve_http  # the stdio server never needs it

        # The inspector calls the tools' own memory service (local or bridged).
        await serve_http(settings, mcp, lambda: service_of(mcp))

    if args.command == "ui":
        from .http_auth import resolve_token

        token, _path = resolve_token(settings)
        host = settings.server.host
        host = f"[{host}]" if ":" in host else host
        url = f"http://{host}:{settings.server.port}/ui?token={token}"

        # Another program on the port would accept our probe below: say so, print nothing.
        _check_port_free(settings.server.host, settings.server.port)

        async def announce() -> None:
            # Only once the inspector answers: the address is then one to open.
            await _until_serving(settings.server.host, settings.server.port, token)
            # The address carries the token: it goes to this terminal only, never to the log.
            print(f"cranimem inspector: {url}", flush=True)
            if args.open:
                import webbrowser

                webbrowser.open(url)

        try:
            async with anyio.create_task_group() as tg:
                tg.start_soon(announce)
                await serve_http()
                tg.cancel_scope.cancel()  # the server stopped: stop waiting for it
        except BaseExceptionGroup as group:
            # announce() raises nothing of its own: what failed is the server; surface it as
            # it was (a SystemExit from uvicorn, a CranimemError), not wrapped in a group.
            raise group.exceptions[0] from None
    elif settings.server.transport == "http":
        await serve_http()
    else:
        await mcp.run_stdio_async()


def _check_port_free(host: str, port: int) -> None:
    import socket

    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn binds
        try:
            probe.bind((host, port))
        except OSError as exc:
            raise ConfigError(
                f"cannot listen on {host}:{port}: {exc.strerror} (choose another with --port)"
            ) from exc


async def _until_serving(host: str, port: int, token: str) -> None:
    """Return once the inspector at ``host:port`` answers with the engine open: uvicorn accepts
    connections first, and the UI answers 503 until the engine's stores are open."""
    import httpx

    if port == 0:  # an ephemeral port we cannot name: nothing to wait for
        return
    # A wildcard address is reached through the loopback of its family.
    target = {"0.0.0.0": "127.0.0.1", "": "127.0.0.1", "::": "::1"}.get(host, host)
    target = f"[{target}]" if ":" in target else target
    url = f"http://{target}:{port}/ui/api/stats"
    # Say why nothing is printed if it takes much longer than an engine's open (~5 s).
    patience = anyio.current_time() + 60
    bearer = {"Authorization": f"Bearer {token}"}
    async with httpx.AsyncClient(headers=bearer, trust_env=False) as http:  # no proxy: loopback
        while True:
            try:
                answer = await http.get(url, timeout=10)
                if answer.status_code != 503:
                    return
                why = answer.text[:200]
            except httpx.TransportError as exc:
                why = f"not listening yet ({exc!r})"
            if patience and anyio.current_time() > patience:
                logger.warning("the inspector does not answer yet: %s", why)
                patience = 0.0
            await anyio.sleep(0.1)


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    # What we store is private: LanceDB creates its files with the process umask (0644 and
    # 0755 under the usual 022), so every file and folder we or it create is owner-only.
    os.umask(0o077)
    _setup_logging(args.verbose if args.command != "serve" else max(1, args.verbose))
    try:
        if args.command in ("serve", "ui"):
            anyio.run(_serve, args)
        elif args.command in ("eval", "bench"):
            from .eval import command

            settings = load_settings(args.config)
            if args.command == "bench":
                run = command.bench
            elif args.benchmark == "temporal":
                run = command.eval_temporal
            elif args.benchmark == "locomo":
                run = command.eval_locomo
            else:
                run = command.eval_hotpotqa
            anyio.run(run, args, settings, print)
        elif args.command == "demo":
            from .demo import run_demo

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
