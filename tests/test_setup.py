"""``cranimem-mcp setup <client>`` on sample client files, through the command line's main():
the server's entry lands where each client reads it, everything else in the file keeps its
value, the old file is kept as a backup, a dry run and a malformed file write nothing, and a
second run changes nothing."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from cranimem_mcp.cli.main import main
from cranimem_mcp.cli.setup import config_path, server_command

OTHER = {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-memory"], "env": {}}
# Run through main() under pytest, the running program is no cranimem-mcp script: the entry
# starts this interpreter with -m (tests of server_command cover the installed script).
COMMAND = {"command": sys.executable, "args": ["-m", "cranimem_mcp.cli", "serve"]}


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    return home


def _samples(home: Path, project: Path) -> list[tuple[list[str], Path, str, dict[str, Any]]]:
    """(setup's arguments, the file, its servers key, the file's other content): each client's
    user file and project file, already holding another server and keys of their own."""
    desktop = home / ".config" / "Claude" / "claude_desktop_config.json"
    vscode_user = home / ".config" / "Code" / "User" / "mcp.json"
    p = ["--project", str(project)]
    return [
        (["claude-desktop"], desktop, "mcpServers", {"globalShortcut": "Ctrl+Space"}),
        (["claude-code"], home / ".claude.json", "mcpServers",
         {"numStartups": 12, "projects": {"/src/app": {"mcpServers": {}, "allowedTools": []}}}),
        (["claude-code", *p], project / ".mcp.json", "mcpServers", {}),
        (["cursor"], home / ".cursor" / "mcp.json", "mcpServers", {}),
        (["cursor", *p], project / ".cursor" / "mcp.json", "mcpServers", {}),
        (["vscode"], vscode_user, "servers", {"inputs": [{"id": "key", "type": "promptString"}]}),
        (["vscode", *p], project / ".vscode" / "mcp.json", "servers", {"inputs": []}),
    ]  # fmt: skip


def _expected(args: list[str], **env: str) -> dict[str, Any]:
    typed = {"type": "stdio"} if args[0] in ("claude-code", "vscode") else {}
    return {**typed, **COMMAND, **({"env": env} if env else {})}


def _write(path: Path, data: dict[str, Any], indent: int = 2) -> bytes:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=indent) + "\n")
    return path.read_bytes()


def _backups(path: Path) -> list[Path]:
    return sorted(path.parent.glob(f"{path.name}.bak-*"))


@pytest.mark.parametrize("case", range(7))
def test_setup_adds_the_server_beside_the_others_and_keeps_a_backup(
    home: Path, tmp_path: Path, case: int, capsys: pytest.CaptureFixture[str]
) -> None:
    project = tmp_path / "project"
    project.mkdir()
    args, path, key, extra = _samples(home, project)[case]
    original = {**extra, key: {"memory": OTHER}}
    before = _write(path, original)

    assert main(["setup", *args]) == 0
    out = capsys.readouterr().out
    assert f"added server 'cranimem' in {path}" in out

    after = json.loads(path.read_text())
    assert after[key] == {"memory": OTHER, "cranimem": _expected(args)}
    assert {k: v for k, v in after.items() if k != key} == extra
    (backup,) = _backups(path)
    assert backup.read_bytes() == before

    # A second run finds it up to date and writes nothing, not even a backup.
    written = path.read_bytes()
    assert main(["setup", *args]) == 0
    assert "already up to date; nothing written" in capsys.readouterr().out
    assert path.read_bytes() == written and _backups(path) == [backup]


@pytest.mark.parametrize(
    ("args", "where", "key"),
    [
        (["cursor"], ".cursor/mcp.json", "mcpServers"),
        (["vscode", "--project", "{project}"], "project/.vscode/mcp.json", "servers"),
        (["claude-desktop"], ".config/Claude/claude_desktop_config.json", "mcpServers"),
    ],
)
def test_setup_creates_the_file_and_its_folders_when_there_is_none(
    home: Path, tmp_path: Path, args: list[str], where: str, key: str
) -> None:
    project = tmp_path / "project"
    project.mkdir()
    args = [a.replace("{project}", str(project)) for a in args]
    path = (tmp_path if where.startswith("project/") else home) / where
    assert not path.parent.exists()
    assert main(["setup", *args]) == 0
    assert json.loads(path.read_text()) == {key: {"cranimem": _expected(args)}}
    assert _backups(path) == []
    assert [p.name for p in path.parent.iterdir()] == [path.name]  # no temporary file left


def test_a_dry_run_shows_the_change_and_writes_nothing(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = home / ".cursor" / "mcp.json"
    before = _write(path, {"mcpServers": {"memory": OTHER}})
    assert main(["setup", "cursor", "--dry-run", "--scope", "work"]) == 0
    out = capsys.readouterr().out
    assert "would add server 'cranimem'" in out and "nothing written" in out
    assert f"+++ {path}" in out
    assert '+    "cranimem": {' in out and '+        "CRANIMEM_SCOPES__DEFAULT": "work",' in out
    assert path.read_bytes() == before and _backups(path) == []

    # No file yet: a dry run does not create it, nor its folder.
    assert main(["setup", "vscode", "--dry-run"]) == 0
    assert "would create server 'cranimem'" in capsys.readouterr().out
    assert not (home / ".config").exists()


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ('{"mcpServers": {"memory": {"command": "npx",}}}', "is not valid JSON"),
        ('["cranimem"]\n', "the top level is a JSON list, not an object"),
        ('{"mcpServers": ["memory"]}', "'mcpServers' is a JSON list, not an object"),
        ('{"mcpServers": "none"}', "'mcpServers' is a JSON str, not an object"),
        ('{\n  // my servers\n  "mcpServers": {}\n}', "has comments"),
        ('{"mcpServers": {} /* none yet */}', "has comments"),
    ],
)
def test_a_malformed_file_is_named_in_the_error_and_left_untouched(
    home: Path, text: str, why: str, capsys: pytest.CaptureFixture[str]
) -> None:
    path = home / ".cursor" / "mcp.json"
    path.parent.mkdir()
    path.write_text(text)
    assert main(["setup", "cursor", "--force"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: {path}") and why in err and "left untouched" in err
    assert path.read_text() == text
    assert [p.name for p in path.parent.iterdir()] == ["mcp.json"]  # no backup, no temp file


def test_a_different_entry_of_that_name_is_replaced_only_with_force(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = home / ".claude.json"
    mine = {"command": "/old/cranimem-mcp", "args": ["serve"]}
    before = _write(path, {"mcpServers": {"cranimem": mine, "memory": OTHER}}, indent=4)
    assert main(["setup", "claude-code"]) == 1
    err = capsys.readouterr().err
    assert "already has a different server 'cranimem'; left untouched" in err and "--force" in err
    assert path.read_bytes() == before and _backups(path) == []

    assert main(["setup", "claude-code", "--force", "--data-dir", str(home / "mem")]) == 0
    assert "replaced server 'cranimem'" in capsys.readouterr().out
    text = path.read_text()
    entry = _expected(["claude-code"], CRANIMEM_HOME=str(home / "mem"))
    assert json.loads(text)["mcpServers"] == {"cranimem": entry, "memory": OTHER}
    assert '\n    "mcpServers": {' in text  # the file's own indentation
    (backup,) = _backups(path)
    assert backup.read_bytes() == before

    # Under another name both stay.
    assert main(["setup", "claude-code", "--name", "cranimem-work", "--scope", "work"]) == 0
    servers = json.loads(path.read_text())["mcpServers"]
    assert list(servers) == ["cranimem", "memory", "cranimem-work"]
    assert servers["cranimem-work"]["env"] == {
        "CRANIMEM_SCOPES__DEFAULT": "work",
        "CRANIMEM_SCOPES__FROM_ROOTS": "false",
    }


def test_comment_marks_inside_strings_are_not_comments(home: Path) -> None:
    path = home / ".cursor" / "mcp.json"
    remote = {"url": "https://example.com/mcp", "headers": {"X": 'a /* b */ \\" // c'}}
    _write(path, {"mcpServers": {"remote": remote}})
    assert main(["setup", "cursor"]) == 0
    assert json.loads(path.read_text())["mcpServers"]["remote"] == remote


def test_a_client_variable_in_the_data_dir_is_left_for_the_client(tmp_path: Path) -> None:
    project = tmp_path / "p"
    project.mkdir()
    argv = ["setup", "vscode", "--project", str(project), "--data-dir", "${workspaceFolder}/.mem"]
    assert main(argv) == 0
    entry = json.loads((project / ".vscode" / "mcp.json").read_text())["servers"]["cranimem"]
    assert entry["env"] == {"CRANIMEM_HOME": "${workspaceFolder}/.mem"}


@pytest.mark.parametrize(
    ("argv", "why"),
    [
        (["claude-desktop", "--project", "."], "Claude Desktop has no per-project configuration"),
        (["cursor", "--project", "/no/such/dir"], "not a directory"),
        (["cursor", "--scope", "my scope"], "--scope 'my scope'"),
    ],
)
def test_impossible_requests_exit_2_and_write_nothing(
    home: Path, argv: list[str], why: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["setup", *argv]) == 2
    assert why in capsys.readouterr().err
    assert list(home.iterdir()) == []


def test_each_clients_user_file_is_where_its_documentation_says(tmp_path: Path) -> None:
    home, appdata = tmp_path / "h", tmp_path / "Roaming"
    env = {"APPDATA": str(appdata)}

    def at(client: str, system: str, environ: dict[str, str] = env) -> Path:
        return config_path(client, system=system, home=home, environ=environ)

    desktop = "claude_desktop_config.json"
    mac = home / "Library" / "Application Support"
    assert at("claude-desktop", "darwin") == mac / "Claude" / desktop
    assert at("claude-desktop", "win32") == appdata / "Claude" / desktop
    assert at("claude-desktop", "linux", {}) == home / ".config" / "Claude" / desktop
    xdg = {"XDG_CONFIG_HOME": str(tmp_path / "xdg")}
    assert at("claude-desktop", "linux", xdg) == tmp_path / "xdg" / "Claude" / desktop
    assert at("vscode", "darwin") == mac / "Code" / "User" / "mcp.json"
    assert at("vscode", "win32") == appdata / "Code" / "User" / "mcp.json"
    assert at("vscode", "linux", {}) == home / ".config" / "Code" / "User" / "mcp.json"
    for system in ("darwin", "win32", "linux"):
        assert at("claude-code", system) == home / ".claude.json"
        assert at("cursor", system) == home / ".cursor" / "mcp.json"


def test_the_entry_runs_the_installed_script_by_its_own_path(tmp_path: Path) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    script = bin_dir / "cranimem-mcp"
    script.write_text("#!/bin/sh\n")
    assert server_command(str(script)) == [str(script)]
    link = tmp_path / "cranimem-mcp"  # pipx's bin entry: a symlink, kept as it is
    link.symlink_to(script)
    assert server_command(str(link)) == [str(link)]
    # Anything else (python -m, pytest): this interpreter, with -m.
    assert server_command("/usr/bin/pytest") == [sys.executable, "-m", "cranimem_mcp.cli"]
