"""What a stdio bridge costs: two `cranimem-mcp serve` processes on one data directory, the
first the owner, the second a bridge to it; N recalls and N remembers through the bridge,
timed one by one from this MCP client, and the bridge's resident memory (VmRSS, VmHWM) after
them; then the same calls to the owner directly (what the bridge adds is the difference).
The owner uses the local embedder and the heuristic tagger and extractor.

    .venv/bin/python scripts/measure_bridge.py [N]
"""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import anyio
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from cranimem_mcp.sharing.ownership import read_owner_info


def say(*parts: object) -> None:
    print(*parts, flush=True)  # noqa: T201


def params(home: Path) -> StdioServerParameters:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CRANIMEM_")}
    env.update(
        CRANIMEM_HOME=str(home), HF_HUB_OFFLINE="1", LANCE_LOG="error",
        CRANIMEM_MODELS__EMBEDDER="local", CRANIMEM_MODELS__TAGGER="heuristic",
        CRANIMEM_MODELS__EXTRACTOR="heuristic", CRANIMEM_GATING__TAU_NOISE="-1.0",
    )  # fmt: skip
    args = ["-m", "cranimem_mcp.cli", "serve", "--data-dir", str(home)]
    return StdioServerParameters(command=sys.executable, args=args, env=env)


def children() -> set[int]:
    """This process's child pids."""
    found = set()
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == os.getpid():
                found.add(int(entry.name))
    return found


def cpu_ms(pid: int) -> float:
    """The process's CPU time so far (user + system)."""
    fields = (Path("/proc") / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) * 1000 / os.sysconf("SC_CLK_TCK")


def memory_mib(pid: int) -> dict[str, float]:
    status = (Path("/proc") / str(pid) / "status").read_text().splitlines()
    kb = {k: int(v.split()[0]) for k, v in (line.split(":", 1) for line in status) if k in (
        "VmRSS", "VmHWM", "RssAnon", "RssFile")}  # fmt: skip
    return {k: v / 1024 for k, v in kb.items()}


async def timed(client: Client, name: str, args: dict) -> float:
    started = time.perf_counter()
    result = await client.call_tool(name, args)
    elapsed = time.perf_counter() - started
    assert not result.is_error, result
    return elapsed


def summary(label: str, times: list[float]) -> None:
    ms = sorted(t * 1000 for t in times)
    say(
        f"{label}: median {statistics.median(ms):.1f} ms, mean {statistics.mean(ms):.1f} ms, "
        f"p90 {ms[int(len(ms) * 0.9)]:.1f} ms, min {ms[0]:.1f} ms"
    )


async def calls(client: Client, n: int, word: str) -> tuple[list[float], list[float]]:
    """N recalls, then N remembers (new texts each run), each timed."""
    recalls = [
        await timed(client, "recall", {"query": f"Where does person {i} live?", "scope": "s"})
        for i in range(n)
    ]
    remembers = [
        await timed(client, "remember", {"content": f"Person {i} {word} {i}.", "scope": "s"})
        for i in range(n)
    ]
    return recalls, remembers


async def main(n: int) -> None:
    home = Path(tempfile.mkdtemp(prefix="cranimem-bridge-")) / "data"
    async with Client(params(home), cache=None) as owner:
        await timed(owner, "remember", {"content": "Ana lives in Porto.", "scope": "s"})
        info = read_owner_info(home)
        assert info is not None
        before = children()
        async with Client(params(home), cache=None) as bridge:
            (pid,) = children() - before
            # The first call waits for the bridge to find the owner.
            await timed(bridge, "recall", {"query": "Where does Ana live?", "scope": "s"})
            assert read_owner_info(home) == info
            say(f"bridge pid {pid} after its first call: {memory_mib(pid)}")
            cpu = (cpu_ms(pid), cpu_ms(info.pid))
            recalls, remembers = await calls(bridge, n, "lives in town")
            summary(f"{n} recalls through the bridge", recalls)
            summary(f"{n} remembers through the bridge", remembers)
            say(
                f"CPU per call through the bridge: bridge {(cpu_ms(pid) - cpu[0]) / (2 * n):.1f}"
                f" ms, owner {(cpu_ms(info.pid) - cpu[1]) / (2 * n):.1f} ms"
            )
            say(f"bridge after them: {memory_mib(pid)}")
        # The same calls to the owner itself: what the bridge adds is the difference.
        cpu_owner = cpu_ms(info.pid)
        recalls, remembers = await calls(owner, n, "moved to city")
        summary(f"{n} recalls from the owner", recalls)
        summary(f"{n} remembers to the owner", remembers)
        say(f"CPU per call from the owner: {(cpu_ms(info.pid) - cpu_owner) / (2 * n):.1f} ms")


if __name__ == "__main__":
    anyio.run(main, int(sys.argv[1]) if len(sys.argv) > 1 else 50)
