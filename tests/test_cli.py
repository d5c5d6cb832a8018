"""What a newcomer meets on the command line: the help names every command, one-shot commands
print results on stdout and nothing about a missing Ollama on stderr (unless Ollama was asked
for), a rejected write says so and why, ``stats`` reads as aligned lines, and ``ui`` prints
its address only once the inspector answers."""

from __future__ import annotations

import gc
import re
import socket
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import httpx
import pytest
from conftest import CLI, answering, free_port, server_env

from cranimem_mcp.cli.main import main
from cranimem_mcp.cli.parser import build_parser
from cranimem_mcp.cli.text import stats_text
from cranimem_mcp.models import ConsolidationReport, ScopeStats, Stats

DEFAULT_OLLAMA = ("127.0.0.1", 11434)


def _commands() -> set[str]:
    (sub,) = [a for a in build_parser()._actions if a.dest == "command"]
    return set(sub.choices)


def test_help_summary_names_every_command(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["--help"])
    summary = re.search(r"``cranimem-mcp (.*?)``", capsys.readouterr().out, re.S)
    assert summary is not None
    named = {c.strip() for c in summary.group(1).split("|")}
    assert named == _commands()


def _run(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*CLI, *args], env=env, capture_output=True, text=True, timeout=300)


def _nothing_listens(address: tuple[str, int]) -> bool:
    with socket.socket() as s:
        s.settimeout(0.5)
        return s.connect_ex(address) != 0


@pytest.mark.slow
def test_rejected_write_says_so_and_stderr_says_nothing_of_ollama(tmp_path: Path) -> None:
    if not _nothing_listens(DEFAULT_OLLAMA):
        pytest.skip("something answers on Ollama's default port: not a machine without Ollama")
    env = server_env(tmp_path / "home")
    env.pop("OLLAMA_HOST", None)  # everything on "auto", Ollama's default address
    done = _run("remember", "lol ok, thanks!", env=env)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("rejected, not stored: "), done.stdout
    assert "rule: pleasantry" in done.stdout  # the gate's reason follows
    assert " -:" not in done.stdout and "None" not in done.stdout
    assert done.stderr == ""

    # Asked for (a host of the user's choosing, nothing there): one warning line, on stderr.
    closed = free_port()
    stats = _run("stats", env={**env, "OLLAMA_HOST": f"127.0.0.1:{closed}"})
    assert stats.returncode == 0, stats.stderr
    warnings = [ln for ln in stats.stderr.splitlines() if "WARNING" in ln]
    assert len(warnings) == 1 and "Ollama" in warnings[0], stats.stderr
    assert "Ollama probe failed" not in stats.stdout
    assert "rejected writes:  1" in stats.stdout and "{" not in stats.stdout


@pytest.mark.slow
def test_a_one_shot_process_collects_garbage_again_once_the_engine_is_open(tmp_path: Path) -> None:
    # The process's own command line (main() with no argv): no collection during the open,
    # then the collector as it was, over what the open made frozen.
    code = (
        "import gc, sys\n"
        "from cranimem_mcp.cli import main as cli\n"
        "before = gc.get_threshold()\n"
        "sys.argv = ['cranimem-mcp', 'stats', '--json']\n"
        "assert cli.main() == 0\n"
        "print(gc.get_threshold() == before, gc.get_freeze_count() > 0, file=sys.stderr)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], env=server_env(tmp_path / "home"),
                          capture_output=True, text=True, timeout=300)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stderr.split()[-2:] == ["True", "True"], done.stderr


def test_main_called_with_argv_leaves_the_callers_collector_alone(tmp_path: Path) -> None:
    before, frozen = gc.get_threshold(), gc.get_freeze_count()
    assert main(["stats", "--json", "--data-dir", str(tmp_path / "home")]) == 0
    assert (gc.get_threshold(), gc.get_freeze_count()) == (before, frozen)


def test_stats_text_is_aligned_key_value_lines() -> None:
    stats = Stats(
        data_dir="/data",
        models={
            "embedder": "local:all-MiniLM-L6-v2",
            "tagger": "heuristic",
            "embedder_reason": "local:all-MiniLM-L6-v2 (auto: the store was filled by it)",
            "tagger_reason": "heuristic (configured)",
            "default_gate_reason": "classifier over local:all-MiniLM-L6-v2",
        },
        scopes=[
            ScopeStats(
                scope="work", goal="Remember the project", buffer_size=3, buffer_capacity=200,
                longterm=12, trash=1, facts=30, rejected_writes=4,
                last_consolidation=ConsolidationReport(
                    replayed=5, promoted=4, pruned=1, finished_at=datetime(2026, 12, 1, tzinfo=UTC)
                ),
            )
        ],
        fallbacks={"tagger": 2},
    )  # fmt: skip
    text = stats_text(stats)
    top, scope = text.split("\n\n")
    assert top.splitlines() == [
        "data directory:  /data",
        "embedder:        local:all-MiniLM-L6-v2 (auto: the store was filled by it)",
        "tagger:          heuristic (configured)",
        "default gate:    classifier over local:all-MiniLM-L6-v2",
        "fallbacks:       tagger 2",
    ]
    lines = scope.splitlines()
    assert lines[0] == "scope work"
    assert "  buffer:              3/200" in lines
    assert "  rejected writes:     4" in lines
    last = "replayed 5: promoted 4, pruned 1 (on_demand at 2026-12-01 00:00:00)"
    assert f"  last consolidation:  {last}" in lines
    # every value of a block starts in one column
    for block in (top.splitlines(), lines[1:]):
        starts = {len(ln) - len(ln.split(":", 1)[1].lstrip()) for ln in block}
        assert len(starts) == 1, block
    assert "{" not in text


@pytest.mark.slow
def test_ui_prints_its_address_once_the_inspector_answers(tmp_path: Path) -> None:
    token = "t" * 24
    port = free_port()
    env = server_env(
        tmp_path / "home", CRANIMEM_TOKEN=token, CRANIMEM_MODELS__EMBEDDER="local",
        CRANIMEM_MODELS__TAGGER="heuristic", CRANIMEM_MODELS__EXTRACTOR="heuristic",
    )  # fmt: skip
    with answering([*CLI, "ui", "--port", str(port)], env=env) as served:
        printed = served.first_line()  # waits until the address is printed
        url = f"http://127.0.0.1:{port}/ui?token={token}"
        assert printed == f"cranimem inspector: {url}", served.output()[1].decode()
        # At once, no retry, as a browser would open it (token -> cookie -> the overview):
        # the printed address answers, and with the engine open (not a 503).
        with httpx.Client(follow_redirects=True, timeout=30) as browser:
            page = browser.get(url)
        assert page.status_code == 200, page.text
        assert "<table>" in page.text

        # a second inspector on the same port says why it cannot start, and prints no address
        other = _run("ui", "--port", str(port), env={**env, "CRANIMEM_HOME": str(tmp_path / "b")})
        assert other.returncode == 2 and other.stdout == ""
        assert f"cannot listen on 127.0.0.1:{port}" in other.stderr
