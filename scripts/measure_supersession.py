"""Facts change only when they change: accuracy on the labelled change / no-change pairs
(tests/data/supersession_tune.json and supersession_test.json), through the real engine with
its default settings (cranimem_mcp/eval/supersession.py says how a pair is judged).

    .venv/bin/python scripts/measure_supersession.py [--test] [--show]

--test adds the held-out part (read it once, at the end: never tune on it); --show prints
every pair judged wrong and what the engine said.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

import anyio

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("OMP_NUM_THREADS", "1")

from cranimem_mcp.backends.embeddings import OnnxEmbedder  # noqa: E402
from cranimem_mcp.config import load_settings  # noqa: E402
from cranimem_mcp.engine import MemoryEngine  # noqa: E402
from cranimem_mcp.eval import supersession  # noqa: E402
from cranimem_mcp.eval.systems import eval_settings  # noqa: E402

DATA = ROOT / "tests" / "data"


async def run(parts: list[str], show: bool) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        settings = eval_settings(load_settings(home=Path(tmp)), Path(tmp))
        async with MemoryEngine(settings, embedder=OnnxEmbedder(threads=1)) as engine:
            print("| part | pairs | right | accuracy | ends right | keeps right | after replay |")
            print("|---|---:|---:|---:|---:|---:|---:|")
            for part in parts:
                start = time.perf_counter()
                pairs = supersession.load(DATA / f"supersession_{part}.json")
                outcomes = await supersession.measure(engine, pairs, prefix=part)
                ends = [o for o in outcomes if o.pair.expect == "ends"]
                keeps = [o for o in outcomes if o.pair.expect == "keeps"]
                print(
                    f"| {part} | {len(outcomes)} | {sum(o.right for o in outcomes)} | "
                    f"{supersession.accuracy(outcomes):.3f} | "
                    f"{sum(o.right for o in ends)}/{len(ends)} | "
                    f"{sum(o.right for o in keeps)}/{len(keeps)} | "
                    f"{sum(bool(o.after_replay) for o in ends if o.right)}/{len(ends)} |"
                )
                if show:
                    for o in outcomes:
                        if not o.right:
                            print("  wrong:", o.describe())
                print(f"  ({time.perf_counter() - start:.1f} s)", file=sys.stderr)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--test", action="store_true", help="also the held-out part")
    ap.add_argument("--show", action="store_true", help="print every pair judged wrong")
    args = ap.parse_args()
    anyio.run(run, ["tune", "test"] if args.test else ["tune"], args.show)


if __name__ == "__main__":
    main()
