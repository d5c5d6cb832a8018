"""``cranimem-mcp bench``: remember/recall latency, consolidation throughput and peak memory
at growing store sizes (1k, 10k, 100k memories by default).

The store is filled directly through the episodic store in batches (filling 100k memories
one ``remember`` at a time would take an hour of embedding), with realistic synthetic text:
facts, preferences, plans and notes about people, places, projects and tools. A tenth of the
memories live in the measured scope, the rest in 99 other scopes. Then, at each size, ``ops``
new memories are written through ``remember`` (the full gate, tagging and write path), the
scope is consolidated, and ``ops`` queries are recalled (both paths).

Two embedders: the real MiniLM, and a constant-cost one (no model) that isolates the
engine's own overhead. Its vectors carry no meaning but share one direction, so every text
sits at cosine ~0.64 from the goal and from every other text: each write passes the gate
and is stored, which is the write path worth timing (a rejected write does less).
"""

from __future__ import annotations

import hashlib
import random
import resource
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from cranimem_mcp.backends.embeddings import Embedder, local_embedder
from cranimem_mcp.config import Settings
from cranimem_mcp.engine import MemoryEngine
from cranimem_mcp.models import Memory
from cranimem_mcp.validation import content_hash, new_id

from . import metrics

SCOPE = "bench"
OTHER_SCOPES = 99
SCOPE_SHARE = 0.1

_PEOPLE = [
    "Alex",
    "Priya",
    "Marco",
    "Yuki",
    "Fatima",
    "Lena",
    "Tomás",
    "Grace",
    "Omar",
    "Ines",
    "Kenji",
    "Sofia",
    "David",
    "Amara",
    "Lukas",
    "Mei",
    "Rafael",
    "Zoe",
    "Hannah",
    "Ivan",
]
_PLACES = [
    "Lisbon",
    "Osaka",
    "Berlin",
    "Toronto",
    "Nairobi",
    "Lyon",
    "Austin",
    "Kraków",
    "Melbourne",
    "Bogotá",
    "Seoul",
    "Edinburgh",
    "Porto",
    "Denver",
    "Helsinki",
    "Cairo",
]
_PROJECTS = [
    "Ferrous",
    "Atlas",
    "Bluebird",
    "Cinder",
    "Delta sync",
    "Ember",
    "Foxglove",
    "Granite",
    "Harbor",
    "Iris",
    "Juniper",
    "Kestrel",
    "Lumen",
    "Mosaic",
]
_TOOLS = [
    "PostgreSQL",
    "Rust",
    "Python",
    "Kubernetes",
    "Redis",
    "React",
    "Terraform",
    "Go",
    "SQLite",
    "LanceDB",
    "FastAPI",
    "Grafana",
    "Kafka",
    "TypeScript",
    "Django",
]
_FOODS = ["sushi", "tapas", "ramen", "falafel", "pho", "dumplings", "paella", "curry"]
_MONTHS = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
]
_TEMPLATES = [
    "I moved to {place} in {month} {year} and I work on {project} there.",
    "My colleague {person} is the lead on {project}; she prefers {tool} for the backend.",
    "Please remember that I can't eat {food} because of an allergy.",
    "I'm planning a trip to {place} with {person} in {month}, budget about {n}00 euros.",
    "{project} uses {tool} and {tool2}; the deploy runs every {day} at {hour}:00.",
    "{person} from the {place} office asked me to review the {project} roadmap by {month} {d}.",
    "I prefer {tool} over {tool2} for small services, mostly for the tooling.",
    "Our team meeting about {project} moved to {day} at {hour}:30 with {person}.",
    "The {project} database migration to {tool} failed twice; {person} is looking into it.",
    "I usually have {food} on Fridays with {person} near the {place} station.",
    "Reminder: {person}'s birthday is on {month} {d}, she likes books about {place}.",
    "The {project} API rate limit is {n}00 requests per minute per token.",
    "I started learning {tool} in {year} for the {project} project.",
    "{person} recommended a {food} place in {place}; I want to try it in {month}.",
]
_QUERIES = [
    "Where do I live and what do I work on?",
    "What does {person} prefer for the backend?",
    "What can't I eat?",
    "When is the trip to {place}?",
    "Which tools does {project} use?",
    "What did {person} ask me to review?",
    "When is {person}'s birthday?",
    "What is the {project} API rate limit?",
    "What happened with the {project} database migration?",
]
_DAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday"]


def synthetic_text(rng: random.Random, i: int) -> str:
    """A memory a user could have written; ``i`` makes it unique."""
    text = rng.choice(_TEMPLATES).format(
        person=rng.choice(_PEOPLE), place=rng.choice(_PLACES), project=rng.choice(_PROJECTS),
        tool=rng.choice(_TOOLS), tool2=rng.choice(_TOOLS), food=rng.choice(_FOODS),
        month=rng.choice(_MONTHS), year=rng.randrange(2015, 2027), d=rng.randrange(1, 29),
        n=rng.randrange(2, 40), day=rng.choice(_DAYS), hour=rng.randrange(8, 18),
    )  # fmt: skip
    return f"{text} (note {i})"


def synthetic_query(rng: random.Random) -> str:
    return rng.choice(_QUERIES).format(
        person=rng.choice(_PEOPLE), place=rng.choice(_PLACES), project=rng.choice(_PROJECTS)
    )


class ConstantEmbedder:
    """No model: per text a hash-seeded random direction plus a shared one (0.6 r + 0.8 u,
    unit length), at a constant tiny cost."""

    def __init__(self, dim: int = 384) -> None:
        self._dim = dim

    @property
    def id(self) -> str:
        return f"bench-constant-shared:{self._dim}"

    @property
    def dim(self) -> int:
        return self._dim

    def vector(self, text: str) -> np.ndarray:
        seed = int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "little")
        r = np.random.default_rng(seed).standard_normal(self._dim).astype(np.float32)
        shared = np.full(self._dim, 1.0 / np.sqrt(self._dim), dtype=np.float32)
        v = 0.6 * r / np.linalg.norm(r) + 0.8 * shared
        return v / np.linalg.norm(v)

    async def embed(self, texts: list[str]) -> np.ndarray:
        return np.stack([self.vector(t) for t in texts]) if texts else np.zeros((0, self._dim))


async def _fill_vectors(embedder: Embedder, texts: list[str], pool: np.ndarray | None) -> Any:
    """Vectors for bulk-filled rows: the constant embedder's own; for MiniLM, a pool of real
    MiniLM vectors with a little jitter (embedding 100k texts would take most of an hour)."""
    if pool is None:
        return await embedder.embed(texts)
    rng = np.random.default_rng(len(texts))
    base = pool[rng.integers(0, len(pool), len(texts))]
    v = base + rng.standard_normal(base.shape).astype(np.float32) * 0.02
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def _row(text: str, vector: np.ndarray, scope: str, tier: str, turn: int) -> Memory:
    stamp = datetime.now(UTC)
    return Memory(
        id=new_id(), scope=scope, tier=tier, content=text, content_hash=content_hash(text),
        vector=vector.tolist(), created_at=stamp, observed_at=stamp, turn=turn, entities=[],
        importance=0.5, surprise=0.5, emotion=0.1, base_utility=0.37, relevance=0.3,
        source="bench", tags=[], access_count=0, frequency=1, tagged_by="heuristic",
        gate_reason="bench fill", tier_changed_at=stamp, pinned=None,
    )  # fmt: skip


def _peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _disk_mb(path: Path) -> float:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file()) / 1e6


async def bench_embedder(
    kind: str, embedder: Embedder, base: Settings, home: Path, sizes: list[int], ops: int,
    seed: int, say: Any,
) -> list[dict[str, Any]]:  # fmt: skip
    data = base.model_dump()
    data["home"] = home
    data["consolidation"]["interval_seconds"] = 0.0
    data["consolidation"]["every_n_writes"] = 0  # the bench consolidates on its own clock
    settings = Settings.model_validate(data)
    rng = random.Random(seed)
    pool = None
    if not isinstance(embedder, ConstantEmbedder):
        pool = await embedder.embed([synthetic_text(rng, -i) for i in range(1, 257)])
    out = []
    async with MemoryEngine(settings, embedder=embedder, background=False) as engine:
        await engine.set_goal(
            "Remember what matters about my work, plans, people and places.", SCOPE
        )
        stored, counter = 0, 0
        for size in sizes:
            started = time.perf_counter()
            while stored < size:
                n = min(5000, size - stored)
                texts = [synthetic_text(rng, counter + j) for j in range(n)]
                vectors = await _fill_vectors(embedder, texts, pool)
                rows = []
                for j, (t, v) in enumerate(zip(texts, vectors, strict=True)):
                    i = counter + j
                    main = (i % 10) < SCOPE_SHARE * 10
                    scope = SCOPE if main else f"user-{i % OTHER_SCOPES}"
                    tier = "trash" if i % 20 == 0 else "longterm"
                    rows.append(_row(t, v, scope, tier, i))
                await engine.episodic.add(rows)
                counter += n
                stored += n
            await engine.episodic.maintain()  # compaction and index update, as consolidation does
            fill_s = time.perf_counter() - started

            # Wall time, and the process's CPU time beside it: on a shared machine the wall
            # time of the same code varies by a third between runs, its CPU time much less.
            remember_ms, remember_cpu_ms = [], []
            statuses = {"stored": 0, "merged": 0, "rejected": 0}
            for _ in range(ops):
                text = synthetic_text(rng, counter)
                counter += 1
                t0, c0 = time.perf_counter(), time.process_time()
                r = await engine.remember(text, SCOPE)
                remember_ms.append((time.perf_counter() - t0) * 1000)
                remember_cpu_ms.append((time.process_time() - c0) * 1000)
                statuses[r.status] += 1
            t0, c0 = time.perf_counter(), time.process_time()
            report = await engine.consolidate(SCOPE)
            consolidate_s = time.perf_counter() - t0
            consolidate_cpu_s = time.process_time() - c0
            recall_ms, items = [], 0
            for _ in range(ops):
                t0 = time.perf_counter()
                res = await engine.recall(synthetic_query(rng), SCOPE)
                recall_ms.append((time.perf_counter() - t0) * 1000)
                items += len(res.items)
            row = {
                "embedder": kind,
                "memories": await engine.episodic.count(),
                "scope_memories": await engine.episodic.count(SCOPE),
                "fill_and_index_s": round(fill_s, 1),
                "remember_ms_p50": metrics.percentile(remember_ms, 50),
                "remember_ms_p95": metrics.percentile(remember_ms, 95),
                "remember_cpu_ms_p50": metrics.percentile(remember_cpu_ms, 50),
                "writes": statuses,
                "recall_ms_p50": metrics.percentile(recall_ms, 50),
                "recall_ms_p95": metrics.percentile(recall_ms, 95),
                "recall_items_mean": items / max(1, ops),
                "consolidation_items": report.replayed,
                "consolidation_s": round(consolidate_s, 3),
                "consolidation_cpu_s": round(consolidate_cpu_s, 3),
                "consolidation_items_per_s": (
                    report.replayed / consolidate_s if consolidate_s else None
                ),
                "peak_rss_mb": round(_peak_rss_mb(), 1),
                "disk_mb": round(_disk_mb(home), 1),
            }  # fmt: skip
            stored = row["memories"]
            say(row)
            out.append(row)
    return out


def bench_table(rows: list[dict[str, Any]]) -> str:
    head = (
        "| embedder | memories | remember p50 ms | p95 | CPU p50 ms | recall p50 ms | p95 | "
        "consolidation items/s | CPU s | peak RSS MB | disk MB |"
    )
    lines = [head, "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        rate = r["consolidation_items_per_s"]
        lines.append(
            f"| {r['embedder']} | {r['memories']:,} | {r['remember_ms_p50']:.1f} | "
            f"{r['remember_ms_p95']:.1f} | {r.get('remember_cpu_ms_p50', 0):.1f} | "
            f"{r['recall_ms_p50']:.1f} | {r['recall_ms_p95']:.1f} | {rate:.0f} | "
            f"{r.get('consolidation_cpu_s', 0):.2f} | {r['peak_rss_mb']:.0f} | {r['disk_mb']:.0f} |"
            if rate is not None else f"| {r['embedder']} | {r['memories']:,} | … |"
        )  # fmt: skip
    return "\n".join(lines)


def plot_bench(rows: list[dict[str, Any]], out_dir: Path) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out_dir.mkdir(parents=True, exist_ok=True)
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.8))
    for ax, key in zip(axes, ("remember_ms", "recall_ms"), strict=True):
        for kind in dict.fromkeys(r["embedder"] for r in rows):
            rs = [r for r in rows if r["embedder"] == kind]
            xs = [r["memories"] for r in rs]
            ax.plot(xs, [r[f"{key}_p50"] for r in rs], "o-", label=f"{kind} p50")
            ax.plot(xs, [r[f"{key}_p95"] for r in rs], "o--", label=f"{kind} p95")
        ax.set_xscale("log")
        ax.set_xlabel("memories in the store")
        ax.set_ylabel("ms per call")
        ax.set_title(key.replace("_ms", ""))
        ax.legend(fontsize=7)
    fig.tight_layout()
    path = out_dir / "bench_latency.png"
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


async def run_bench_command(args: Any, settings: Settings, say: Any) -> None:
    import json
    import logging
    import tempfile

    log = logging.getLogger(__name__)
    sizes = sorted(int(s) for s in args.sizes.split(","))
    kinds = list(dict.fromkeys(args.embedders or ["constant", "minilm"]))
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="cranimem-bench-") as tmp:
        root = args.workdir or Path(tmp)
        for kind in kinds:
            embedder: Embedder = (
                ConstantEmbedder() if kind == "constant"
                else local_embedder(settings.models.embedder_model, settings.models.threads)
            )  # fmt: skip
            rows += await bench_embedder(
                kind, embedder, settings, root / kind, sizes, args.ops, args.seed,
                lambda r: log.warning("bench %s", r),
            )  # fmt: skip
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps({"sizes": sizes, "ops": args.ops, "rows": rows}, indent=2))
    if not args.no_plots:
        say(f"plot: {plot_bench(rows, args.plots or args.output.parent)}")
    say(f"results: {args.output}")
    say(bench_table(rows))
