"""The package as a user installs it: a wheel built from this checkout, installed with pipx
into a fresh location, answers over stdio with the installed ``cranimem-mcp`` command, started
as the entry ``cranimem-mcp setup`` writes into a client's file says.

What the wheel must carry besides the code (the default gate's weights, the inspector's
assets, the Ollama prompts) is package data; the test checks the wheel's file list and that
the installed package finds its prompts inside itself, never in this checkout."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters

pytestmark = pytest.mark.anyio

CHECKOUT = Path(__file__).resolve().parent.parent
# What a wheel is built from: the rest of the checkout (tests, docs, .venv) stays out.
SOURCES = ("pyproject.toml", "README.md", "LICENSE", "cranimem_mcp")
# The files besides modules that the installed package reads.
PACKAGE_DATA = {
    "cranimem_mcp/gate/data/default_gate.json",
    "cranimem_mcp/ui/static/ui.css",
    "cranimem_mcp/ui/static/ui.js",
    "cranimem_mcp/ui/static/graph.js",
    "cranimem_mcp/backends/prompts/tag.md",
    "cranimem_mcp/backends/prompts/judge.md",
    "cranimem_mcp/backends/prompts/extract.md",
    "cranimem_mcp/eval/hotpotqa_answer.txt",
}


def _fresh_env(**extra: str) -> dict[str, str]:
    """Ours, without what would let the installed command see this checkout (PYTHONPATH)
    or our settings (CRANIMEM_*), and without HF_HUB_OFFLINE (conftest sets it; the README's
    client snippets do not)."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("CRANIMEM_", "PIPX_")) and k not in ("PYTHONPATH", "HF_HUB_OFFLINE")
    }
    env.update(extra)
    return env


def _build_wheel(tmp_path: Path) -> Path:
    """``pip wheel`` of a copy of the sources (an in-tree build would leave build/ and
    *.egg-info in the checkout)."""
    src = tmp_path / "src"
    src.mkdir()
    for name in SOURCES:
        if (CHECKOUT / name).is_dir():
            ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
            shutil.copytree(CHECKOUT / name, src / name, ignore=ignore)
        else:
            shutil.copy2(CHECKOUT / name, src / name)
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(tmp_path / "dist"),
         str(src)],
        env=_fresh_env(), check=True, capture_output=True, timeout=600, cwd=tmp_path,
    )  # fmt: skip
    (wheel,) = (tmp_path / "dist").glob("cranimem_mcp-*.whl")
    return wheel


@pytest.mark.slow
async def test_the_wheel_installed_with_pipx_remembers_and_recalls_over_stdio(
    tmp_path: Path,
) -> None:
    """Measured on the shared 2-core machine: the wheel builds in 3 s; ``pipx install`` of
    it, the dependencies from the package index, 24-28 s (a plain ``python -m venv`` + ``pip
    install`` of the wheel took 50 s); the whole test 42-66 s, the first ``serve`` ~15 s of it.
    (``uv tool install`` of the checkout, by hand: 5.5 s with an empty uv cache.)"""
    pytest.importorskip("pipx", reason="pipx (the dev extra) installs the wheel")
    wheel = _build_wheel(tmp_path)
    with zipfile.ZipFile(wheel) as zf:
        names = set(zf.namelist())
    assert PACKAGE_DATA <= names, sorted(PACKAGE_DATA - names)
    assert not any(".data/" in n for n in names), "data-files land outside the package"

    bin_dir = tmp_path / "pipx-bin"
    pipx_env = _fresh_env(
        PIPX_HOME=str(tmp_path / "pipx-home"),
        PIPX_BIN_DIR=str(bin_dir),
        PIPX_MAN_DIR=str(tmp_path / "pipx-man"),
    )
    done = subprocess.run(
        [sys.executable, "-m", "pipx", "install", str(wheel)],
        env=pipx_env, capture_output=True, text=True, timeout=1200, cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    command = bin_dir / "cranimem-mcp"
    assert command.exists(), list(bin_dir.iterdir())

    # The installed package is the one that runs, and its prompts are its own.
    python = command.resolve().parent / "python"
    probe = subprocess.run(
        [str(python), "-c",
         "import cranimem_mcp; from cranimem_mcp.backends.ollama import prompts_dir;"
         " print(cranimem_mcp.__file__); print(prompts_dir())"],
        env=_fresh_env(), capture_output=True, text=True, timeout=300, cwd=tmp_path,
    )  # fmt: skip
    assert probe.returncode == 0, probe.stderr
    package, prompts = (Path(line) for line in probe.stdout.splitlines())
    venv = tmp_path / "pipx-home"
    assert package.is_relative_to(venv) and prompts.is_relative_to(venv), probe.stdout
    assert not package.is_relative_to(CHECKOUT)

    # The client's entry, as `setup` writes it, is what starts the server.
    client_file = tmp_path / "client" / "mcp.json"
    setup = subprocess.run(
        [str(command), "setup", "cursor", "--file", str(client_file),
         "--data-dir", str(tmp_path / "data")],
        env=_fresh_env(), capture_output=True, text=True, timeout=300, cwd=tmp_path,
    )  # fmt: skip
    assert setup.returncode == 0, setup.stderr
    entry = json.loads(client_file.read_text())["mcpServers"]["cranimem"]
    assert entry["command"] == str(command) and entry["args"] == ["serve"]
    params = StdioServerParameters(
        command=entry["command"],
        args=entry["args"],
        env=_fresh_env(**entry["env"]),
        cwd=str(tmp_path),
    )
    async with Client(params, cache=None) as client:
        stored = await client.call_tool(
            "remember", {"content": "I am allergic to shellfish, so no seafood please."}
        )
        assert stored.structured_content["status"] == "stored", stored
        recalled = await client.call_tool("recall", {"query": "What must I avoid eating?"})
        assert recalled.structured_content["items"][0]["id"] == stored.structured_content["id"]
        assert "shellfish" in recalled.structured_content["context"]
    assert (tmp_path / "data").is_dir()
