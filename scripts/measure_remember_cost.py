"""The whole `remember`'s cost over the default gate's test part, kept and rejected writes apart.

    .venv/bin/python scripts/measure_remember_cost.py [CHECKOUT]

Writes the 228 texts of tests/data/gate_default_test.json in order into a fresh data directory
(no goal: the default gate decides) with the onnx embedder, and prints p50 wall and process
CPU time per write: all writes, the kept ones, the rejected ones. CHECKOUT (default: this
one) is the source tree whose ``cranimem_mcp`` is measured, so two commits can be compared
from one venv: check the other out in a worktree and pass its path.
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent
ROOT = Path(sys.argv[1]).resolve() if len(sys.argv) > 1 else HERE
sys.path.insert(0, str(ROOT))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

import anyio  # noqa: E402

import cranimem_mcp  # noqa: E402
from cranimem_mcp.backends.embeddings import local_embedder  # noqa: E402
from cranimem_mcp.config import load_settings  # noqa: E402
from cranimem_mcp.engine import MemoryEngine  # noqa: E402

ITEMS = json.loads((HERE / "tests" / "data" / "gate_default_test.json").read_text())["items"]


async def main() -> None:
    source = Path(list(cranimem_mcp.__path__)[0]).resolve()
    assert source.is_relative_to(ROOT), f"imported {source}, not {ROOT}"
    embedder = local_embedder()
    await embedder.embed(["warm up"])
    with tempfile.TemporaryDirectory() as home:
        settings = load_settings(home=Path(home))
        async with MemoryEngine(settings, embedder=embedder, background=False) as engine:
            await engine.remember("My sister Ana lives in Lisbon.", "warm-up")
            times: dict[str, tuple[list[float], list[float]]] = {
                "kept": ([], []),
                "rejected": ([], []),
            }
            for item in ITEMS:
                t0, c0 = time.perf_counter(), time.process_time()
                result = await engine.remember(item["text"])
                wall, cpu = times["rejected" if result.status == "rejected" else "kept"]
                wall.append((time.perf_counter() - t0) * 1000)
                cpu.append((time.process_time() - c0) * 1000)
    wall = times["kept"][0] + times["rejected"][0]
    cpu = times["kept"][1] + times["rejected"][1]
    parts = [f"all p50 {statistics.median(wall):.1f} ms wall, {statistics.median(cpu):.1f} CPU"]
    for name, (w, c) in times.items():
        parts.append(f"{name} ({len(w)}) p50 {statistics.median(w):.1f} wall, "
                     f"{statistics.median(c):.1f} CPU")  # fmt: skip
    print(f"{ROOT}: " + " | ".join(parts))


if __name__ == "__main__":
    anyio.run(main)
