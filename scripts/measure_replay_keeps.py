"""What lasts after replay: labelled writes streamed into one scope of a fresh engine (the
default goal, every-N-writes consolidation as configured, then one more consolidation), and
where each ended: long-term memory or the buffer (live), the trash (replay pruned it), or
nowhere (rejected at the gate, or stored under another text: redacted, merged).

The gate's own measurement (measure_default_gate.py) counts a write kept when it is not
rejected; a durable write replay trashes at the next consolidation is as lost to recall.

    .venv/bin/python scripts/measure_replay_keeps.py [--tune 600] [--test] [--seed 1]

Sets: the other projects' dev writes (../shared/data/assistant_writes_dev.json, read, never
copied), a seeded sample of our tuning part (tests/data/gate_default_tune*.json) and, with
--test, our held-out part (read it once, at the end: never tune on it).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import sys
import tempfile
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from cranimem_mcp.backends.embeddings import OnnxEmbedder  # noqa: E402
from cranimem_mcp.config import Settings, load_settings  # noqa: E402
from cranimem_mcp.engine import MemoryEngine  # noqa: E402

DATA = ROOT / "tests" / "data"
SHARED = ROOT.parent / "shared" / "data"
LIVE = ("longterm", "buffer")


def sets(tune: int, test: bool, seed: int) -> dict[str, list[tuple[str, bool, str]]]:
    """Each set's writes: (text, durable?, kind)."""
    out: dict[str, list[tuple[str, bool, str]]] = {}
    dev = SHARED / "assistant_writes_dev.json"
    if dev.exists():
        d = json.loads(dev.read_text())
        kinds = {i["text"]: i.get("kind", "?") for i in d.get("meta", {}).get("keep", [])}
        out["other projects (dev)"] = [(t, True, kinds.get(t, "?")) for t in d["keep"]] + [
            (t, False, "noise") for t in d["drop"]
        ]
    ours = [
        (i["text"], i["keep"], i["category"])
        for p in sorted(DATA.glob("gate_default_tune*.json"))
        for i in json.loads(p.read_text())["items"]
    ]
    random.Random(0).shuffle(ours)
    out[f"ours, tuning part (a sample of {tune})"] = ours[:tune]
    if test:
        out["ours, test part"] = [
            (i["text"], i["keep"], i["category"])
            for i in json.loads((DATA / "gate_default_test.json").read_text())["items"]
        ]
    for writes in out.values():
        random.Random(seed).shuffle(writes)  # a stream in no labelled order
    return out


async def where_each_ends(writes: list[tuple[str, bool, str]], embedder: OnnxEmbedder) -> dict:
    with tempfile.TemporaryDirectory(prefix="replay-keeps-") as tmp:
        data = load_settings(home=Path(tmp) / "data").model_dump()
        data["consolidation"]["interval_seconds"] = 0.0  # by count only: no wall clock
        settings = Settings.model_validate(data)
        async with MemoryEngine(settings, embedder=embedder, background=False) as engine:
            ids = {}
            for text, _durable, _kind in writes:
                ids[text] = (await engine.remember(text)).id
            await engine.consolidate()
            tier = {m.id: m.tier for m in await engine.episodic.rows(where=None)}
    return {text: tier.get(id_, "nowhere") if id_ else "rejected" for text, id_ in ids.items()}


async def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--tune", type=int, default=600, help="writes sampled from the tuning part")
    p.add_argument("--test", action="store_true", help="add the held-out part (once, at the end)")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--show-noise", action="store_true", help="list the noise left live too")
    args = p.parse_args()
    embedder = OnnxEmbedder()
    print("| set | durable live | durable trashed | durable elsewhere | noise live | noise "
          "trashed | noise rejected |\n|---|---:|---:|---:|---:|---:|---:|")  # fmt: skip
    lost: dict[str, list[str]] = {}
    for name, writes in sets(args.tune, args.test, args.seed).items():
        ends = await where_each_ends(writes, embedder)
        count: Counter[tuple[bool, str]] = Counter()
        for text, durable, kind in writes:
            end = "live" if ends[text] in LIVE else ends[text]
            count[durable, "trash" if end == "trash" else end if end == "live" else "other"] += 1
            if durable and end != "live":
                lost.setdefault(name, []).append(f"{end} [{kind}] {text[:100]}")
            if args.show_noise and not durable and end == "live":
                lost.setdefault(name, []).append(f"noise live [{kind}] {text[:100]}")
        d, n = sum(1 for w in writes if w[1]), sum(1 for w in writes if not w[1])
        noise_rejected = sum(1 for t, durable, _ in writes if not durable and ends[t] == "rejected")
        print(f"| {name} | {count[True, 'live']}/{d} | {count[True, 'trash']} | "
              f"{count[True, 'other']} | {count[False, 'live']}/{n} | {count[False, 'trash']} | "
              f"{noise_rejected} |")  # fmt: skip
    for name, texts in lost.items():
        print(f"\n{name}: durable writes not live" + (", noise live" if args.show_noise else ""))
        for line in texts:
            print(f"- {line}")


if __name__ == "__main__":
    asyncio.run(main())
