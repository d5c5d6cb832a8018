"""An acknowledged remember survives kill -9, and the stores reopen cleanly."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap

import pytest

pytestmark = pytest.mark.anyio

WRITER = textwrap.dedent(
    """
    import sys, anyio
    from pathlib import Path
    from cranimem_mcp.config import load_settings
    from cranimem_mcp.engine import MemoryEngine

    async def main():
        settings = load_settings(home=Path(sys.argv[1]))
        settings = settings.model_copy(update={"episodic": settings.episodic.model_copy(
            update={"capacity": 5})})
        async with MemoryEngine(settings, background=False) as engine:
            i = 0
            while True:
                r = await engine.remember(f"I visited the town of Kvill{i} on day {i} of May.",
                                          goal="Remember the user's travels")
                print(r.id, flush=True)  # the acknowledgement
                i += 1
                if i % 7 == 0:
                    await engine.consolidate()

    anyio.run(main)
    """
)


@pytest.mark.slow
async def test_acknowledged_writes_survive_kill_9(open_engine, tmp_path):
    home = tmp_path / "data"
    acked: list[str] = []
    for round_ in range(3):
        env = {**os.environ, "HF_HUB_OFFLINE": "1", "LANCE_LOG": "error"}
        proc = subprocess.Popen(
            [sys.executable, "-c", WRITER, str(home)],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=env,
        )
        assert proc.stdout is not None
        target = len(acked) + 9 + 5 * round_
        while len(acked) < target:
            line = proc.stdout.readline()
            assert line, "the writer died"
            acked.append(line.decode().strip())
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        proc.stdout.close()
    async with open_engine(home=home) as engine:
        rows = {r.id: r for r in await engine.episodic.scope_rows("default", None)}
        missing = [i for i in acked if i not in rows]
        assert missing == []
        assert await engine.episodic.count("default", ("buffer",)) <= 6
        # Every long-term memory has its graph provenance.
        for mid, row in rows.items():
            if row.tier == "longterm":
                assert await engine.graph.has_memory("default", mid), mid
