"""Quality-only quick look: run the HotpotQA harness with an embedding cache (each text is
embedded once for all systems), so design changes can be compared on N questions in minutes.
Latencies printed by this script are NOT comparable to a real run.

    .venv/bin/python scripts/eval_quick.py N [system ...] [-- key=value settings overrides]

The questions come from ../shared/data/hotpotqa_dev412.jsonl beside the checkout (or the file
QUICK_DATA names); the rows go to QUICK_ROWS (default: quick.jsonl in the temporary directory).
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from pathlib import Path

import anyio
import numpy as np

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("LANCE_LOG", "error")

from cranimem_mcp.backends.embeddings import OnnxEmbedder  # noqa: E402
from cranimem_mcp.config import Settings, load_settings  # noqa: E402
from cranimem_mcp.eval.hotpotqa import EvalConfig, run_eval  # noqa: E402
from cranimem_mcp.eval.report import markdown_table  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
DATA = Path(os.environ.get("QUICK_DATA") or ROOT.parent / "shared/data/hotpotqa_dev412.jsonl")


class CachedEmbedder:
    def __init__(self, inner: OnnxEmbedder) -> None:
        self.inner, self.cache = inner, {}

    @property
    def id(self) -> str:
        return self.inner.id

    @property
    def dim(self) -> int:
        return self.inner.dim

    async def embed(self, texts: list[str]) -> np.ndarray:
        missing = [t for t in dict.fromkeys(texts) if t not in self.cache]
        if missing:
            for t, v in zip(missing, await self.inner.embed(missing), strict=True):
                self.cache[t] = v
        return np.stack([self.cache[t] for t in texts])

    async def embed_windows(self, texts: list[str], limit: int) -> list[np.ndarray]:
        """A long text's windows, as the engine's embedder reads them (cached per limit)."""
        key = [(limit, t) for t in texts]
        missing = [t for t in dict.fromkeys(texts) if (limit, t) not in self.cache]
        if missing:
            for t, v in zip(missing, await self.inner.embed_windows(missing, limit), strict=True):
                self.cache[(limit, t)] = v
        return [self.cache[k] for k in key]


def items_first() -> None:
    """Variant under test: episodic items ahead of graph facts in the context block."""
    from cranimem_mcp.models import Fact
    from cranimem_mcp.recall import context

    original = context._lines

    def lines(items, facts):  # type: ignore[no-untyped-def]
        out = original(items, facts)
        out.sort(key=lambda ln: (isinstance(ln.ref, Fact), -ln.score))
        return out

    context._lines = lines


async def main() -> None:
    if os.environ.get("QUICK_ITEMS_FIRST"):
        items_first()
    argv = sys.argv[1:]
    overrides = argv[argv.index("--") + 1 :] if "--" in argv else []
    argv = argv[: argv.index("--")] if "--" in argv else argv
    n, systems = int(argv[0]), argv[1:] or ["cranimem", "vanilla"]
    base = load_settings(home=Path(tempfile.mkdtemp()))
    data = base.model_dump()
    for item in overrides:
        key, value = item.split("=", 1)
        section, name = key.split(".")
        data[section][name] = json.loads(value)
    base = Settings.model_validate(data)
    cfg = EvalConfig(
        data=DATA, limit=n, systems=systems,
        workdir=Path(tempfile.mkdtemp()),
    )  # fmt: skip
    if not DATA.exists():
        sys.exit(f"no HotpotQA data at {DATA} (set QUICK_DATA to the file)")
    rows = os.environ.get("QUICK_ROWS") or Path(tempfile.gettempdir()) / "quick.jsonl"
    out = Path(rows).open("w")

    def on_row(system: str, setting: str, row: dict) -> None:
        out.write(json.dumps({"system": system, "setting": setting, **row}) + "\n")

    results = await run_eval(cfg, base, CachedEmbedder(OnnxEmbedder()), on_row=on_row)
    print(markdown_table(results))


anyio.run(main)
