"""The command line's grammar: every subcommand and its arguments, built by :func:`build_parser`
and nothing else (no settings read, no engine imported). Parsing ``--help`` or any command
imports only :mod:`argparse` and the benchmark harness's argument builders, so a one-shot
command starts as fast as it did when this lived in :mod:`.cli`."""

from __future__ import annotations

import argparse
from pathlib import Path

# What ``--help`` says first (argparse reflows it; it was cli.py's docstring).
DESCRIPTION = (
    "The command line: ``cranimem-mcp serve | ui | remember | recall | list | consolidate |"
    " forget | restore | goal | stats | check | export | import | doctor | reembed |"
    " rewrite-graph | demo | setup |"
    " eval | bench``. Logging goes to stderr; ``serve`` writes nothing to stdout but protocol"
    " messages."
)


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--data-dir", type=Path, help="data directory (default: CRANIMEM_HOME)")
    p.add_argument("--config", type=Path, help="TOML configuration file")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.add_argument("-v", "--verbose", action="count", default=0)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="cranimem-mcp", description=DESCRIPTION)
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
    p.add_argument("--path", action="append", dest="paths", choices=["episodic", "graph", "trash"])
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

    p = sub.add_parser(
        "import",
        help="read an export into an empty data directory, or another memory server's file or "
        "a chat app's export into a scope (--from)",
    )
    _common(p)
    p.add_argument(
        "src", type=Path,
        help="directory written by export; with --from: server-memory's memory.jsonl,"
        " mcp-memory-service's SQLite database, or the app's export (its zip or its"
        " conversations.json)",
    )  # fmt: skip
    p.add_argument(
        "--from", dest="fmt", default="cranimem",
        choices=["cranimem", "server-memory", "mcp-memory-service", "chatgpt", "claude"],
        help="the format of src (default: cranimem, our own export)",
    )  # fmt: skip
    p.add_argument("--scope", help="the scope to import into (default: default)")
    p.add_argument(
        "--dry-run", action="store_true", help="read the file and report counts; write nothing"
    )
    p.add_argument(
        "--gate", action="store_true",
        help="judge a memory server's memories by the gate too (default: they are pinned, the"
        " user chose to store them); a chat's turns are always gated",
    )  # fmt: skip

    p = sub.add_parser("doctor", help="check the Ollama host, models, embedder and store")
    _common(p)
    p.add_argument(
        "--try", type=int, default=0, dest="try_calls", metavar="N",
        help="also make N real tagging and extraction calls; report latency and JSON validity",
    )  # fmt: skip

    p = sub.add_parser(
        "reembed",
        help="re-embed the store with another embedder (the same one: give long memories "
        "the passage vectors of episodic.windows)",
    )
    _common(p)
    p.add_argument(
        "--to", choices=["auto", "ollama", "local"],
        help="the new embedder (default: [models] embedder of the configuration)",
    )  # fmt: skip

    p = sub.add_parser(
        "rewrite-graph",
        help="after a hard forget on a SPARQL server: copy its live graph into a fresh Oxigraph"
        " store (what its files keep of forgotten text stays behind), verified, for a restart",
    )
    _common(p)
    p.add_argument(
        "--to", type=Path, required=True, dest="target",
        help="directory of the new store (absent or empty); the server's own is never touched",
    )  # fmt: skip
    p.add_argument(
        "--absent", action="append", default=[], metavar="TEXT",
        help="a text no file of the new store may hold (e.g. a fragment of what was forgotten:"
        " the process list shows it, so not the secret itself); repeatable",
    )  # fmt: skip

    p = sub.add_parser("demo", help="a narrated tour of the pipeline on a temporary store")
    _common(p)

    p = sub.add_parser(
        "setup",
        help="add this server to an MCP client's configuration (Claude Desktop, Claude Code,"
        " Cursor, VS Code)",
    )
    p.add_argument("client", choices=["claude-desktop", "claude-code", "cursor", "vscode"])
    p.add_argument(
        "--project", type=Path, metavar="DIR",
        help="the project's file (.mcp.json, .cursor/mcp.json, .vscode/mcp.json) instead of"
        " the user's",
    )  # fmt: skip
    p.add_argument(
        "--file", type=Path, metavar="PATH",
        help="the client's configuration file, if not where the client keeps it by default",
    )  # fmt: skip
    p.add_argument("--name", default="cranimem", help="the server's name (default: cranimem)")
    p.add_argument(
        "--data-dir", metavar="DIR",
        help="the data directory the server uses (CRANIMEM_HOME in the entry's env)",
    )  # fmt: skip
    p.add_argument(
        "--scope", metavar="NAME",
        help="the scope of every call that names none (instead of one per workspace root)",
    )  # fmt: skip
    p.add_argument("--dry-run", action="store_true", help="show the change, write nothing")
    p.add_argument("--force", action="store_true", help="replace a different entry of that name")
    p.add_argument("-v", "--verbose", action="count", default=0)

    p = sub.add_parser(
        "eval",
        help="benchmarks: HotpotQA under noise, changing facts, LoCoMo and LongMemEval recall",
    )
    p.add_argument("--config", type=Path, help="TOML configuration file")
    p.add_argument("-v", "--verbose", action="count", default=0)
    from cranimem_mcp.eval.arguments import add_eval_arguments

    add_eval_arguments(p)

    p = sub.add_parser("bench", help="latency and memory at 1k/10k/100k memories")
    p.add_argument("--config", type=Path, help="TOML configuration file")
    p.add_argument("-v", "--verbose", action="count", default=0)
    from cranimem_mcp.eval.arguments import add_bench_arguments

    add_bench_arguments(p)
    return parser
