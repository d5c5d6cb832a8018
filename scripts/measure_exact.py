"""Does a query naming an exact token find its one memory first, at any store size?

The side-by-side run of issue 18 asked "Person 123 lives" of a store of N facts like
"Person 17 lives in Lyon" (one matching fact each) and found the memory at median rank 1 at
100 memories, 3 at 1k and 5 at 10k. This script repeats it in process: N such facts written
straight into one scope's long-term memory (as consolidation leaves them; vectors from the
default MiniLM or the bench's constant-cost embedder), then ``--targets`` queries
"Person <i> lives" through ``engine.recall`` (k = 10, both paths), each target's rank among
the returned items (1 = first; "-" = not returned) and where the vector half and the hybrid
search put it. ``--trash 0.5`` puts every second fact in the trash (as the long-term bound
of 5,000 left the issue's 10k): how many trashed targets the recall's notice names.

    PYTHONPATH=. .venv/bin/python scripts/measure_exact.py --sizes 100,1000,10000
    PYTHONPATH=. .venv/bin/python scripts/measure_exact.py --embedder constant
    PYTHONPATH=. .venv/bin/python scripts/measure_exact.py --sizes 10000 --trash 0.5
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import statistics
import tempfile
import time
from pathlib import Path

from cranimem_mcp.backends.embeddings import local_embedder
from cranimem_mcp.config import Settings
from cranimem_mcp.engine import MemoryEngine
from cranimem_mcp.eval import bench

SCOPE = "exact"
CITIES = ["Lyon", "Lisbon", "Osaka", "Berlin", "Toronto", "Nairobi", "Austin", "Porto",
          "Seoul", "Cairo", "Denver", "Helsinki"]  # fmt: skip
TEMPLATES = ["Person {i} lives in {city}.", "Person {i} lives in {city} with a dog.",
             "Person {i} lives near {city} and works there."]  # fmt: skip


def tier(i: int, trash: float) -> str:
    """Every 1/trash-th fact in the trash, as the long-term bound would leave a share."""
    return "trash" if trash and i % round(1 / trash) == 0 else "longterm"


def fact(rng: random.Random, i: int) -> str:
    return rng.choice(TEMPLATES).format(i=i, city=rng.choice(CITIES))


async def measure(
    size: int, targets: int, kind: str, root: Path, k: int, trash: float = 0.0
) -> dict:
    embedder = (
        bench.ConstantEmbedder() if kind == "constant" else local_embedder("all-MiniLM-L6-v2", 1)
    )
    data = Settings().model_dump()
    data["home"] = root / f"{kind}-{size}"
    data["consolidation"]["interval_seconds"] = 0.0
    data["consolidation"]["every_n_writes"] = 0
    settings = Settings.model_validate(data)
    rng = random.Random(size)
    texts = [fact(rng, i) for i in range(size)]
    async with MemoryEngine(settings, embedder=embedder, background=False) as engine:
        ids = []
        for start in range(0, size, 2000):
            chunk = texts[start : start + 2000]
            vectors = await embedder.embed(chunk)
            rows = [
                bench._row(t, v, SCOPE, tier(start + j, trash), start + j)
                for j, (t, v) in enumerate(zip(chunk, vectors, strict=True))
            ]
            ids += [r.id for r in rows]
            await engine.episodic.add(rows)
        await engine.episodic.maintain()
        await engine.recall("warm up", SCOPE, k=k)
        picks = random.Random(7).sample(range(size), min(targets, size))
        ranks: list[int | None] = []
        vec_ranks: list[int | None] = []
        hybrid_ranks: list[int | None] = []
        took = []
        in_trash = announced = 0
        for i in picks:
            query = f"Person {i} lives"
            t0 = time.perf_counter()
            res = await engine.recall(query, SCOPE, k=k)
            took.append((time.perf_counter() - t0) * 1000)
            got = [it.id for it in res.items]
            ranks.append(got.index(ids[i]) + 1 if ids[i] in got else None)
            if tier(i, trash) == "trash":
                in_trash += 1
                announced += ids[i] in res.trashed
            qvec = (await embedder.embed([query]))[0]
            near = await engine.episodic.nearest(SCOPE, qvec, ("buffer", "longterm"), 200)
            near_ids = [h.entry.id for h in near]
            vec_ranks.append(near_ids.index(ids[i]) + 1 if ids[i] in near_ids else None)
            text = await engine.episodic.hybrid(SCOPE, qvec, query, ("buffer", "longterm"), k)
            text_ids = [h.entry.id for h in text]
            hybrid_ranks.append(text_ids.index(ids[i]) + 1 if ids[i] in text_ids else None)
    found = [r for r in ranks if r is not None]
    big = 10**6
    return {
        "embedder": kind,
        "memories": size,
        "targets": len(picks),
        "first": sum(1 for r in ranks if r == 1),
        "returned": len(found),
        "median_rank": statistics.median([r or big for r in ranks]),
        "mean_rank_found": round(statistics.mean(found), 2) if found else None,
        "median_vector_rank": statistics.median([r or big for r in vec_ranks]),
        "hybrid_first": sum(1 for r in hybrid_ranks if r == 1),
        "recall_ms_p50": round(statistics.median(took), 1),
        "targets_in_trash": in_trash,
        "announced_in_notice": announced,
        "ranks": ranks,
    }


async def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="100,1000,10000")
    ap.add_argument("--targets", type=int, default=50)
    ap.add_argument("--embedder", choices=["minilm", "constant"], default="minilm")
    ap.add_argument("-k", type=int, default=10)
    ap.add_argument("--trash", type=float, default=0.0, help="share of the facts trashed")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    rows = []
    with tempfile.TemporaryDirectory(prefix="cranimem-exact-") as tmp:
        for size in (int(s) for s in args.sizes.split(",")):
            row = await measure(size, args.targets, args.embedder, Path(tmp), args.k, args.trash)
            print({k: v for k, v in row.items() if k != "ranks"}, flush=True)
            rows.append(row)
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2))


if __name__ == "__main__":
    asyncio.run(main())
