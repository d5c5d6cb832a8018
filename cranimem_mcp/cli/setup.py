"""``cranimem-mcp setup <client>``: put this server into an MCP client's JSON configuration.

The invariant: the client's file changes only by the one server entry, or not at all. Every
other key and every other server keeps its value; a file that cannot be read as a JSON object
(bad JSON, comments, another shape where the servers live) is left untouched and named in the
error; before a write the old file is copied beside itself (``<name>.bak-<time>``) and the new
one replaces it in one step (a temporary file, then ``os.replace``), so a crash leaves the old
file or the new one, never half of either. An entry of the same name that differs is replaced
only with ``--force``; an identical one is reported as up to date and nothing is written.

Where each client reads its servers (their documentation, 2026):

- Claude Desktop: ``claude_desktop_config.json`` in the app's folder (macOS
  ``~/Library/Application Support/Claude``, Windows ``%APPDATA%\\Claude``, Linux
  ``$XDG_CONFIG_HOME/Claude``), under ``mcpServers``.
- Claude Code: ``~/.claude.json`` (user scope) or a project's ``.mcp.json`` (project scope,
  shared with the repository), under ``mcpServers``, entries with ``"type": "stdio"``.
- Cursor: ``~/.cursor/mcp.json`` or a project's ``.cursor/mcp.json``, under ``mcpServers``.
- VS Code: the user profile's ``mcp.json`` (beside its ``settings.json``) or a project's
  ``.vscode/mcp.json``, under ``servers``, entries with ``"type": "stdio"``. VS Code allows
  comments there; this command refuses such a file rather than drop them.
"""

from __future__ import annotations

import argparse
import difflib
import json
import os
import re
import shutil
import sys
import tempfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from cranimem_mcp.errors import ConfigError

DEFAULT_NAME = "cranimem"
# The scope names the server accepts (config.ScopeSettings.default).
SCOPE = re.compile(r"^[A-Za-z0-9_.:-]{1,64}$")


@dataclass(frozen=True)
class Client:
    label: str
    servers_key: str  # the top-level key that maps server names to entries
    typed: bool  # entries carry "type": "stdio"


CLIENT = {
    "claude-desktop": Client("Claude Desktop", "mcpServers", typed=False),
    "claude-code": Client("Claude Code", "mcpServers", typed=True),
    "cursor": Client("Cursor", "mcpServers", typed=False),
    "vscode": Client("VS Code", "servers", typed=True),
}
PROJECT_FILE = {
    "claude-code": ".mcp.json",
    "cursor": ".cursor/mcp.json",
    "vscode": ".vscode/mcp.json",
}


@dataclass(frozen=True)
class Plan:
    """What setup would do to one file: ``status`` is "create" (no file yet), "add" (a new
    entry), "replace" (a different entry of that name, with --force), "same" (up to date) or
    "conflict" (a different entry, no --force); ``before`` and ``after`` are the file's text."""

    path: Path
    name: str
    status: str
    before: str
    after: str
    existing: Any = None

    def diff(self) -> str:
        lines = difflib.unified_diff(
            self.before.splitlines(keepends=True),
            self.after.splitlines(keepends=True),
            fromfile=str(self.path) if self.before else "/dev/null",
            tofile=str(self.path),
        )
        return "".join(lines)


def app_config_dir(system: str, home: Path, environ: Mapping[str, str]) -> Path:
    """Where a desktop app (Electron's ``appData``) keeps its configuration."""
    if system == "darwin":
        return home / "Library" / "Application Support"
    if system == "win32":
        appdata = environ.get("APPDATA")
        return Path(appdata) if appdata else home / "AppData" / "Roaming"
    xdg = environ.get("XDG_CONFIG_HOME")
    return Path(xdg) if xdg else home / ".config"


def config_path(
    client: str,
    project: Path | None = None,
    *,
    system: str = sys.platform,
    home: Path | None = None,
    environ: Mapping[str, str] = os.environ,
) -> Path:
    """The file ``client`` reads its MCP servers from: the project's when ``project`` is
    given, else the user's."""
    home = home if home is not None else Path.home()
    if project is not None:
        if client == "claude-desktop":
            raise ConfigError("Claude Desktop has no per-project configuration: drop --project")
        if not project.is_dir():
            raise ConfigError(f"--project {project}: not a directory")
        return project / PROJECT_FILE[client]
    if client == "claude-desktop":
        return app_config_dir(system, home, environ) / "Claude" / "claude_desktop_config.json"
    if client == "claude-code":
        return home / ".claude.json"
    if client == "cursor":
        return home / ".cursor" / "mcp.json"
    return app_config_dir(system, home, environ) / "Code" / "User" / "mcp.json"


def server_command(argv0: str = sys.argv[0]) -> list[str]:
    """How a client starts this installation: the ``cranimem-mcp`` executable that is running
    (its absolute path, symlinks kept, so a pipx or uv upgrade keeps working), or, run some
    other way (``python -m cranimem_mcp.cli``), this interpreter with ``-m``."""
    script = Path(argv0)
    if script.stem == "cranimem-mcp" and script.is_file():
        return [os.path.abspath(script)]
    return [sys.executable, "-m", "cranimem_mcp.cli"]


def server_entry(
    client: str,
    command: list[str],
    data_dir: str | None = None,
    scope: str | None = None,
) -> dict[str, Any]:
    """The server's entry: ``serve`` over stdio, with the data directory (``CRANIMEM_HOME``)
    and a fixed scope for every call that names none (``CRANIMEM_SCOPES__DEFAULT``, roots
    no longer consulted) when asked for."""
    entry: dict[str, Any] = {"type": "stdio"} if CLIENT[client].typed else {}
    entry["command"] = command[0]
    entry["args"] = [*command[1:], "serve"]
    env: dict[str, str] = {}
    if data_dir is not None:
        # A client variable (VS Code's ${workspaceFolder}) is the client's to expand.
        env["CRANIMEM_HOME"] = (
            data_dir if data_dir.startswith("${") else os.path.abspath(Path(data_dir).expanduser())
        )
    if scope is not None:
        if not SCOPE.match(scope):
            raise ConfigError(f"--scope {scope!r}: 1-64 characters of A-Z a-z 0-9 _ . : -")
        env["CRANIMEM_SCOPES__DEFAULT"] = scope
        env["CRANIMEM_SCOPES__FROM_ROOTS"] = "false"
    if env:
        entry["env"] = env
    return entry


def _has_comments(text: str) -> bool:
    """Whether ``text`` holds a ``//`` or ``/* */`` comment outside a string (JSONC)."""
    in_string = escaped = False
    for i, ch in enumerate(text):
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch == "/" and text[i + 1 : i + 2] in ("/", "*"):
            return True
    return False


def _indent(text: str) -> str | int:
    """The file's indentation (the first indented line's), so a rewrite changes few lines."""
    found = re.search(r"^([ \t]+)\S", text, re.M)
    if found is None:
        return 2
    space = found.group(1)
    return space if "\t" in space else len(space)


def read_config(path: Path, servers_key: str) -> tuple[str, dict[str, Any]]:
    """The file's text and its JSON object; ``("", {})`` when there is no file (or it is
    empty). Anything else raises ConfigError naming the file."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return "", {}
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read {path}: {exc}") from exc
    if not text.strip():
        return text, {}
    if _has_comments(text):
        raise ConfigError(
            f"{path} has comments, which a rewrite would drop; left untouched. Remove them,"
            " or add the entry by hand (`--dry-run` shows it)"
        )
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{path} is not valid JSON ({exc}); left untouched") from exc
    if not isinstance(data, dict):
        raise ConfigError(
            f"{path}: the top level is a JSON {type(data).__name__}, not an object; left untouched"
        )
    servers = data.get(servers_key)
    if servers is not None and not isinstance(servers, dict):
        raise ConfigError(
            f"{path}: {servers_key!r} is a JSON {type(servers).__name__}, not an object;"
            " left untouched"
        )
    return text, data


def plan(path: Path, client: str, name: str, entry: dict[str, Any], force: bool = False) -> Plan:
    """What writing ``entry`` as server ``name`` into ``path`` would change."""
    key = CLIENT[client].servers_key
    before, data = read_config(path, key)
    servers = data.get(key) or {}
    existing = servers.get(name)
    if existing == entry:
        return Plan(path, name, "same", before, before, existing)
    if existing is not None and not force:
        return Plan(path, name, "conflict", before, before, existing)
    status = "create" if not before.strip() else "add" if existing is None else "replace"
    after_data = {**data, key: {**servers, name: entry}}
    after = json.dumps(after_data, indent=_indent(before), ensure_ascii=False) + "\n"
    return Plan(path, name, status, before, after, existing)


def write(p: Plan, now: datetime | None = None) -> Path | None:
    """Write the plan's text: the old file first copied to ``<name>.bak-<time>`` (returned),
    then the new one put in its place atomically, with the old one's permissions."""
    path = p.path
    path.parent.mkdir(parents=True, exist_ok=True)
    backup = None
    if path.exists():
        stamp = (now or datetime.now()).strftime("%Y%m%d-%H%M%S")
        backup = path.with_name(f"{path.name}.bak-{stamp}")
        n = 1
        while backup.exists():
            n += 1
            backup = path.with_name(f"{path.name}.bak-{stamp}-{n}")
        shutil.copy2(path, backup)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(p.after)
            fh.flush()
            os.fsync(fh.fileno())
        if backup is not None:
            shutil.copymode(backup, tmp)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return backup


def setup(args: argparse.Namespace, show: Callable[[str], None]) -> int:
    """The command: plan, then show (``--dry-run``) or write. Exit 1 on a conflicting entry
    without ``--force``; a malformed file raises ConfigError (exit 2)."""
    client = CLIENT[args.client]
    path = (
        args.file.expanduser()
        if args.file is not None
        else config_path(args.client, args.project.expanduser() if args.project else None)
    )
    entry = server_entry(args.client, server_command(), args.data_dir, args.scope)
    p = plan(path, args.client, args.name, entry, force=args.force)
    if p.status == "same":
        show(f"{path}: server {args.name!r} is already up to date; nothing written")
        return 0
    if p.status == "conflict":
        print(
            f"{path} already has a different server {args.name!r}; left untouched.\n"
            f"  there now:  {json.dumps(p.existing)}\n"
            f"  setup's:    {json.dumps(entry)}\n"
            "Rerun with --force to replace it (the old file is kept as a backup), or with"
            " --name to add this one under another name.",
            file=sys.stderr,
        )
        return 1
    if args.dry_run:
        show(f"would {p.status} server {args.name!r} in {path} (--dry-run: nothing written):")
        show(p.diff().rstrip("\n"))
        return 0
    backup = write(p)
    done = {"create": "created", "add": "added", "replace": "replaced"}[p.status]
    show(f"{done} server {args.name!r} in {path}" + (f" (backup: {backup})" if backup else ""))
    show(f"Restart {client.label} (or reload its MCP servers) to connect.")
    return 0
