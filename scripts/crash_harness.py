"""Crash-safety harness: SIGKILL a writer at random points, restart, and check nothing is lost.

A worker process opens a MemoryEngine on a data directory and writes a stream of memories
(remember), consolidating every few writes and through buffer overflow; its extractor is
slowed down (a gated heuristic extractor) so consolidation spans a wide window. It prints
one line per acknowledged write. The harness kills it with SIGKILL, alternately in the
middle of the remember stream and in the middle of a consolidation, then reopens the data
directory and checks:

* every acknowledged remember is present (buffer, long-term or trash);
* both stores open cleanly and agree (``MemoryEngine.check()`` reports no problem);
* a consolidation after the crash completes and leaves the stores agreeing, and re-linking
  a memory did not count its facts twice (every fact's support equals its distinct sources).

Usage (the full form, figures in docs/RELIABILITY.md):

    .venv/bin/python scripts/crash_harness.py --kills 25

The test suite runs a reduced form (tests/test_reliability_crash.py). The worker uses a
hashed bag-of-words embedder: what is under test is storage, and it restarts in seconds.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import re
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import anyio
import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("LANCE_LOG", "error")

from cranimem_mcp.config import Settings, load_settings  # noqa: E402
from cranimem_mcp.engine import MemoryEngine  # noqa: E402
from cranimem_mcp.extraction.extractor import HeuristicExtractor  # noqa: E402
from cranimem_mcp.models import MAX_FACT_SOURCES, Extraction  # noqa: E402

PEOPLE = ["Alice", "Bob", "Chen", "Dara", "Emeka", "Farid"]
ORGS = ["Acme Robotics", "Globex", "Initech", "Umbrella Labs"]
CITIES = ["Berlin", "Lisbon", "Kyoto", "Nairobi", "Quito"]


class HashEmbedder:
    """Deterministic unit vectors from hashed words: no model to load."""

    id = "hash-test:64"
    dim = 64

    async def embed(self, texts: list[str]) -> np.ndarray:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for i, text in enumerate(texts):
            for word in re.findall(r"\w+", text.lower()):
                h = int.from_bytes(hashlib.sha256(word.encode()).digest()[:4], "little")
                out[i, h % self.dim] += 1.0
            out[i, 0] += 0.1
            out[i] /= np.linalg.norm(out[i])
        return out


class SlowExtractor:
    """The heuristic extractor behind a delay, like a model that thinks."""

    name = "slow-heuristic"

    def __init__(self, delay: float) -> None:
        self.delay = delay

    async def extract(self, texts: list[str]) -> list[Extraction]:
        await anyio.sleep(self.delay)
        return await HeuristicExtractor().extract(texts)


def settings_for(home: Path, capacity: int = 8) -> Settings:
    base = load_settings(home=home)
    data = base.model_dump()
    data["gating"]["tau_noise"] = -1.0  # everything is stored: the test is about storage
    data["episodic"]["capacity"] = capacity  # overflow replay runs inside remember, too
    data["consolidation"]["tau_consolidation"] = 0.25
    data["consolidation"]["every_n_writes"] = 0
    return Settings.model_validate(data)


def sentence(rng: random.Random, n: int) -> str:
    p, o, c = rng.choice(PEOPLE), rng.choice(ORGS), rng.choice(CITIES)
    return rng.choice(
        [
            f"{p} works at {o} in {c}; noted as item {n}.",
            f"I live in {c} now, entry {n}.",
            f"{o} is based in {c}, says report {n}.",
            f"I am meeting {p} from {o} in {c} on day {n}.",
        ]
    )


# --- the worker ---------------------------------------------------------------------------


async def worker(home: Path, seed: int, delay: float, capacity: int) -> None:
    rng = random.Random(seed)
    settings = settings_for(home, capacity)
    async with MemoryEngine(
        settings, embedder=HashEmbedder(), extractor=SlowExtractor(delay), background=False
    ) as engine:
        n = 0
        while True:
            n += 1
            text = sentence(rng, seed * 100_000 + n)
            r = await engine.remember(text, scope=rng.choice(["default", "work"]))
            print(f"ack {r.id}", flush=True)
            if n % 5 == 0:
                print("consolidating", flush=True)
                await engine.consolidate()
                print("consolidated", flush=True)


# --- the harness --------------------------------------------------------------------------


async def verify(home: Path, acked: set[str], capacity: int) -> list[str]:
    """Reopen the data directory and return what is wrong (empty: all is well)."""
    problems: list[str] = []
    async with MemoryEngine(
        settings_for(home, capacity), embedder=HashEmbedder(), background=False
    ) as engine:
        for scope in ("default", "work"):  # held from the open on, before any write
            if (n := await engine.episodic.count(scope, ("buffer",))) > capacity:
                problems.append(f"{scope}'s buffer holds {n} items at capacity {capacity}")
        rows = {r.id: r for r in await engine.episodic.scope_rows(None, None)}
        problems += [f"acknowledged write {i} is lost" for i in sorted(acked - set(rows))]
        problems += await engine.check()
        await engine.consolidate()
        problems += [f"after consolidation: {p}" for p in await engine.check()]
        longterm = {i for i, r in rows.items() if r.tier in ("buffer", "longterm")}
        for scope in ("default", "work"):
            result = await engine.recall("works at lives in based in", scope=scope, k=5)
            for fact in result.facts:
                # A fact lists its MAX_FACT_SOURCES most recent sources; its support counts all.
                if len(set(fact.sources)) != min(fact.support, MAX_FACT_SOURCES):
                    problems.append(f"fact {fact} counts a source twice")
                if not set(fact.sources) <= longterm | set(rows):
                    problems.append(f"fact {fact} has a source that is gone")
    return problems


def run(kills: int, seed: int, home: Path, delay: float, capacity: int, verbose: bool) -> dict:
    rng = random.Random(seed)
    acked: set[str] = set()
    stats = {"kills": 0, "during_consolidation": 0, "during_remember": 0, "acked": 0}
    problems: list[str] = []
    started = time.monotonic()
    for k in range(kills):
        mode = "consolidation" if k % 2 else "remember"
        proc = subprocess.Popen(
            [
                sys.executable,
                __file__,
                "--worker",
                str(home),
                "--seed",
                str(seed * 1000 + k),
                "--delay",
                str(delay),
                "--capacity",
                str(capacity),
            ],  # fmt: skip
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env={**os.environ, "HF_HUB_OFFLINE": "1", "LANCE_LOG": "error"},
        )
        assert proc.stdout is not None
        target = rng.randint(1, 12)
        seen = 0
        while True:
            line = proc.stdout.readline().decode()
            if not line:
                err = proc.stderr.read().decode() if proc.stderr else ""
                problems.append(f"kill {k}: the worker died on its own: {err[-2000:]}")
                break
            if line.startswith("ack "):
                acked.add(line.split()[1])
                seen += 1
                if mode == "remember" and seen >= target:
                    # Somewhere inside the next remember (or the one after).
                    time.sleep(rng.uniform(0.0, 0.08))
                    break
            elif line.startswith("consolidating") and mode == "consolidation" and seen >= 3:
                time.sleep(rng.uniform(0.0, delay + 0.15))
                break
        proc.kill()  # SIGKILL
        proc.wait()
        for stream in (proc.stdout, proc.stderr):
            if stream:
                stream.close()
        stats["kills"] += 1
        stats[f"during_{mode}"] += 1
        found = anyio.run(verify, home, set(acked), capacity)
        problems += [f"kill {k} ({mode}): {p}" for p in found]
        if verbose:
            print(f"kill {k + 1}/{kills} during {mode}: {len(acked)} acknowledged, "
                  f"{len(found)} problems", file=sys.stderr)  # fmt: skip
    stats["acked"] = len(acked)
    stats["problems"] = problems
    stats["seconds"] = round(time.monotonic() - started, 1)
    return stats


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--kills", type=int, default=25)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--delay", type=float, default=0.3, help="extractor delay, seconds")
    parser.add_argument("--capacity", type=int, default=8, help="buffer capacity (3: full often)")
    parser.add_argument("--data-dir", type=Path, help="default: a temporary directory")
    parser.add_argument("--worker", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("-v", "--verbose", action="store_true")
    args = parser.parse_args()
    if args.worker:
        signal.signal(signal.SIGPIPE, signal.SIG_DFL)
        anyio.run(worker, args.worker, args.seed, args.delay, args.capacity)
        return 0
    with tempfile.TemporaryDirectory(prefix="cranimem-crash-") as tmp:
        home = args.data_dir or Path(tmp) / "data"
        stats = run(args.kills, args.seed, home, args.delay, args.capacity, args.verbose)
    print(json.dumps(stats, indent=1))
    return 1 if stats["problems"] else 0


if __name__ == "__main__":
    sys.exit(main())
