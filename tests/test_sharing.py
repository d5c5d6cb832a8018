"""One data directory, many processes: one owner, bridges through it, takeover when it dies.

Every server here is a real `cranimem-mcp serve` subprocess driven by a real MCP client over
stdio; the stores are checked afterwards by reopening them in this process."""

from __future__ import annotations

import fcntl
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import anyio
import pytest
from conftest import CLI, stdio_params
from conftest import server_env as base_env
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from cranimem_mcp.sharing.ownership import read_owner_info

pytestmark = [pytest.mark.anyio, pytest.mark.slow]


def server_env(home: Path, **extra: str) -> dict[str, str]:
    return base_env(
        home,
        CRANIMEM_MODELS__EMBEDDER="local", CRANIMEM_MODELS__TAGGER="heuristic",
        CRANIMEM_MODELS__EXTRACTOR="heuristic", CRANIMEM_GATING__TAU_NOISE="-1.0",
        CRANIMEM_CONSOLIDATION__EVERY_N_WRITES="7", **extra,
    )  # fmt: skip


def serve_params(home: Path, **extra: str) -> StdioServerParameters:
    return stdio_params(home, env=server_env(home, **extra))


async def integrity_problems(open_engine, home: Path) -> tuple[list[str], set[str]]:
    """Reopen the stores: the engine's own check when it has one, and the ids stored."""
    async with open_engine(home=home) as engine:
        rows = await engine.episodic.keys()
        ids = [r.id for r in rows]
        problems = (
            [f"{len(ids) - len(set(ids))} duplicate ids"] if len(ids) != len(set(ids)) else []
        )
        if hasattr(engine, "check"):
            problems += await engine.check()
        else:  # the minimal check: every long-term memory has its graph
            for r in rows:
                if r.tier == "longterm" and not await engine.graph.has_memory(r.scope, r.id):
                    problems.append(f"{r.id} has no graph")
        return problems, set(ids)


async def remember(client: Client, text: str) -> str:
    result = await client.call_tool("remember", {"content": text, "scope": "shared"})
    assert not result.is_error, result
    assert result.structured_content["status"] in ("stored", "merged"), result
    return result.structured_content["id"]


async def test_two_stdio_servers_on_one_directory_share_one_memory(tmp_path, open_engine):
    home = tmp_path / "data"
    acked: dict[str, list[str]] = {"a": [], "b": []}
    async with Client(serve_params(home), cache=None) as a:
        first = await remember(a, "Alice from the first client lives in Porto.")
        acked["a"].append(first)
        owner = read_owner_info(home)
        assert owner is not None  # the first server owns the directory and listens
        async with Client(serve_params(home), cache=None) as b:

            async def write(name: str, client: Client) -> None:
                for i in range(12):
                    text = f"Client {name} note {i}: the project Zeta{name}{i} uses Rust."
                    acked[name].append(await remember(client, text))

            async with anyio.create_task_group() as tg:
                tg.start_soon(write, "a", a)
                tg.start_soon(write, "b", b)
            # Each sees what the other stored.
            seen_by_b = await b.call_tool("recall", {"query": "Where does Alice live?",
                                                     "scope": "shared"})  # fmt: skip
            assert first in {it["id"] for it in seen_by_b.structured_content["items"]}
            seen_by_a = await a.call_tool("recall", {"query": "Which project is Zetab3?",
                                                     "scope": "shared"})  # fmt: skip
            assert acked["b"][3] in {it["id"] for it in seen_by_a.structured_content["items"]}
            # The second process never opened the stores: it bridged to the first.
            assert read_owner_info(home) == owner
    problems, stored = await integrity_problems(open_engine, home)
    assert problems == []
    assert set(acked["a"]) | set(acked["b"]) <= stored
    assert len(stored) == 25


async def test_killing_the_owner_loses_no_acknowledged_write(tmp_path, open_engine):
    home = tmp_path / "data"
    acked: list[str] = []
    maybe: list[str] = []
    async with Client(serve_params(home), cache=None) as b_starter:
        # A first process owns the directory (its client is this one) ...
        acked.append(await remember(b_starter, "The user's neighbour Lambda lives in Oslo."))
        owner = read_owner_info(home)
        assert owner is not None
        # ... a second one bridges to it, and keeps writing while the owner is killed.
        async with Client(serve_params(home), cache=None) as bridge:
            for i in range(30):
                if i == 8:
                    os.kill(owner.pid, signal.SIGKILL)
                result = await bridge.call_tool(
                    "remember", {"content": f"Bridge write {i}: Kappa{i} lives in Oslo.",
                                 "scope": "shared"},
                )  # fmt: skip
                if result.is_error:  # in flight when the owner died: not acknowledged
                    assert "may or may not have been applied" in result.content[0].text
                    maybe.append(f"Kappa{i}")
                    continue
                acked.append(result.structured_content["id"])
            # The bridge took over: it owns the directory now.
            now = read_owner_info(home)
            assert now is not None and now.pid != owner.pid
            assert len(maybe) <= 1
        with pytest.raises(Exception):  # noqa: B017 - the first client's server is gone
            with anyio.fail_after(30):
                await b_starter.call_tool("recall", {"query": "anything"})
    problems, stored = await integrity_problems(open_engine, home)
    assert problems == []
    assert set(acked) <= stored
    assert len(acked) >= 30


def hold_lock(home: Path) -> subprocess.Popen:
    """Another process holding the directory's lock without serving (a long one-shot)."""
    home.mkdir(parents=True, exist_ok=True)
    code = textwrap.dedent(
        """
        import fcntl, os, sys
        fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT, 0o600)
        fcntl.flock(fd, fcntl.LOCK_EX)
        print("locked", flush=True)
        sys.stdin.read()
        """
    )
    proc = subprocess.Popen([sys.executable, "-c", code, str(home / "owner.lock")],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE)  # fmt: skip
    assert proc.stdout.readline() == b"locked\n"
    return proc


def stop(holder: subprocess.Popen) -> None:
    holder.kill()
    holder.wait()
    holder.stdout.close()
    if not holder.stdin.closed:
        holder.stdin.close()


async def test_initialize_does_not_wait_for_the_stores(tmp_path):
    """The handshake and tools/list answer while the engine cannot open yet (the directory
    is held by another process); the first tool call waits, then runs once it is free."""
    home = tmp_path / "data"
    holder = hold_lock(home)
    try:
        started = time.monotonic()
        async with Client(serve_params(home), cache=None) as client:
            tools = await client.list_tools()
            assert "remember" in {t.name for t in tools.tools}
            assert holder.poll() is None  # answered while the stores were still out of reach
            handshake = time.monotonic() - started

            async def release() -> None:
                await anyio.sleep(1.0)
                holder.stdin.close()

            async with anyio.create_task_group() as tg:
                tg.start_soon(release)
                stored = await remember(client, "I write my notes in Markdown.")
            assert stored.startswith("m_")
    finally:
        stop(holder)
    assert handshake < 60


async def test_one_shot_commands_go_through_the_owner(tmp_path):
    home = tmp_path / "data"
    env = server_env(home)
    cli = CLI
    async with Client(serve_params(home), cache=None) as owner:
        await remember(owner, "The owner knows that Bob plays the cello.")
        done = await anyio.to_thread.run_sync(lambda: subprocess.run(
            [*cli, "remember", "Carol teaches chemistry in Lyon.", "--scope", "shared",
             "--json", "--data-dir", str(home)],
            env=env, capture_output=True, timeout=300))  # fmt: skip
        assert done.returncode == 0, done.stderr.decode()
        cli_id = json.loads(done.stdout)["id"]
        seen = await owner.call_tool("recall", {"query": "Who teaches chemistry?",
                                                "scope": "shared"})  # fmt: skip
        assert cli_id in {it["id"] for it in seen.structured_content["items"]}
        refused = await anyio.to_thread.run_sync(lambda: subprocess.run(
            [*cli, "export", str(tmp_path / "out"), "--data-dir", str(home)],
            env=env, capture_output=True, timeout=300))  # fmt: skip
        assert refused.returncode == 2
        assert b"in use by another cranimem-mcp process" in refused.stderr
        assert not (tmp_path / "out" / "memories.jsonl").exists()


def test_the_lock_is_exclusive_and_freed_when_the_holder_dies(tmp_path):
    from cranimem_mcp.sharing.ownership import DirectoryLock

    holder = hold_lock(tmp_path)
    try:
        assert not DirectoryLock(tmp_path).try_acquire()
    finally:
        stop(holder)
    lock = DirectoryLock(tmp_path)
    assert lock.try_acquire()
    fd = os.open(tmp_path / "owner.lock", os.O_RDWR)
    with pytest.raises(BlockingIOError):
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    os.close(fd)
    lock.release()
