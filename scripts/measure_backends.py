"""Time remember / consolidate / recall with the graph local vs in an Oxigraph server.

.venv/bin/python scripts/measure_backends.py [--n 40]   (needs the 'sparql' extra)
"""

from __future__ import annotations

import argparse
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import anyio

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("LANCE_LOG", "error")

from cranimem_mcp.config import Settings, load_settings  # noqa: E402
from cranimem_mcp.embeddings import OnnxEmbedder  # noqa: E402
from cranimem_mcp.engine import MemoryEngine  # noqa: E402

CITIES = ["Paris", "Berlin", "Lisbon", "Oslo", "Rome", "Vienna", "Prague", "Madrid"]


def start_oxigraph(location: str) -> tuple[subprocess.Popen, str]:
    exe = shutil.which("oxigraph") or str(Path(sys.executable).parent / "oxigraph")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen([exe, "serve", "--location", location, "--bind", f"127.0.0.1:{port}"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
    base = f"http://127.0.0.1:{port}"
    for _ in range(300):
        try:
            urllib.request.urlopen(f"{base}/query?query=ASK%7B%7D", timeout=2).close()
            return proc, base
        except OSError:
            time.sleep(0.2)
    raise RuntimeError("oxigraph did not start")


async def run(settings: Settings, embedder: OnnxEmbedder, n: int) -> dict[str, float]:
    out: dict[str, list[float]] = {"remember": [], "recall": []}
    async with MemoryEngine(settings, embedder=embedder, background=False) as engine:
        for i in range(n):
            text = f"Person{i} works at Company{i % 7}, which is based in {CITIES[i % 8]}."
            t = time.perf_counter()
            await engine.remember(text)
            out["remember"].append(time.perf_counter() - t)
        t = time.perf_counter()
        await engine.consolidate()
        consolidate = time.perf_counter() - t
        for i in range(10):
            t = time.perf_counter()
            await engine.recall(f"Where is the company of Person{i} based?")
            out["recall"].append(time.perf_counter() - t)
    return {
        "remember_ms": 1000 * statistics.median(out["remember"]),
        "consolidate_s": consolidate,
        "recall_ms": 1000 * statistics.median(out["recall"]),
    }


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=40)
    args = parser.parse_args()
    embedder = OnnxEmbedder(threads=1)
    await embedder.embed(["warm up"])
    with tempfile.TemporaryDirectory() as tmp:
        proc, base = start_oxigraph(str(Path(tmp) / "ox"))
        try:
            for name, graph in [
                ("local", {"store": "local"}),
                ("sparql", {"store": "sparql", "query_endpoint": f"{base}/query",
                            "update_endpoint": f"{base}/update"}),
            ]:  # fmt: skip
                data = load_settings(home=Path(tmp) / name).model_dump()
                data["graph"].update(graph)
                data["gating"]["tau_noise"] = -1.0
                settings = Settings.model_validate(data)
                r = await run(settings, embedder, args.n)
                print(f"{name:6} n={args.n}: remember median {r['remember_ms']:.0f} ms, "
                      f"consolidate {r['consolidate_s']:.1f} s, "
                      f"recall median {r['recall_ms']:.0f} ms")  # fmt: skip
        finally:
            proc.terminate()
            proc.wait()
    print(f"load average: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    anyio.run(main)
