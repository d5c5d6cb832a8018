"""Measure the fact extractors on the labelled extraction set: precision and recall per kind,
and the cost per memory.

    .venv/bin/python scripts/measure_extraction.py                    # parse extractor, both parts
    .venv/bin/python scripts/measure_extraction.py --old              # + the regex extractor
    .venv/bin/python scripts/measure_extraction.py --ollama HOST      # + the Ollama extractor
    .venv/bin/python scripts/measure_extraction.py --part tune --errors   # what it gets wrong

``--old`` runs the regular-expression extractor this one replaced, read from git (commit
``2491733``, the last one with it). ``--ollama`` runs the Ollama extractor against HOST (for
the test model: ``python tests/ollama_compat_server.py "$(scripts/fetch_test_model.sh)"
--port 11435``). Prints markdown for docs/extraction-measurement.md.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import anyio

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("OMP_NUM_THREADS", "1")

from cranimem_mcp.eval.extraction import load, score  # noqa: E402
from cranimem_mcp.extraction import linkage  # noqa: E402
from cranimem_mcp.extraction.extractor import extract_one  # noqa: E402

DATA = ROOT / "tests" / "data"
PARTS = {
    "tune": sorted(p.name for p in DATA.glob("extraction_tune*.json")),
    "test": ["extraction_test.json"],
}
OLD_COMMIT = "2491733"


def old_extractor():
    """The regex extractor as it was, loaded as a module of the package."""
    source = subprocess.run(
        ["git", "-C", str(ROOT), "show", f"{OLD_COMMIT}:cranimem_mcp/extraction.py"],
        check=True, capture_output=True, text=True,
    ).stdout  # fmt: skip
    spec = importlib.util.spec_from_loader("cranimem_mcp._old_extraction", loader=None)
    module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    module.__package__ = "cranimem_mcp"
    exec(compile(source, "old_extraction.py", "exec"), module.__dict__)
    return module.extract_one


def triples(extraction) -> list[tuple[str, str, str]]:
    checked = linkage.check(extraction)
    return [(r.subject, r.predicate, r.object) for r in checked.relations]


def run_sync(extract, items) -> tuple[list, list[float]]:
    """Predictions and the CPU time of each (thread time: what the extraction costs on one
    core, whatever else the machine runs)."""
    out, times = [], []
    for item in items:
        started = time.thread_time()
        x = extract(item["text"])
        times.append((time.thread_time() - started) * 1000)
        out.append(triples(x))
    return out, times


async def run_ollama(host: str, items) -> tuple[list, int]:
    """The Ollama extractor's predictions, and how many texts fell back to the heuristic one
    (a fallback's facts are not the model's: they count as nothing found)."""
    from cranimem_mcp.backends.ollama import OllamaExtractor
    from cranimem_mcp.backends.ollama import prompts_dir as find_prompts
    from cranimem_mcp.config import load_settings
    from cranimem_mcp.extraction.extractor import HeuristicExtractor
    from cranimem_mcp.providers import backend_for

    settings = load_settings()
    # A small model on a busy CPU takes a minute or more per call: measure the model, not
    # the deadline (the server's defaults would fall back after 30 s).
    settings.ollama.host = host
    settings.ollama.timeout_seconds = 900.0
    settings.ollama.cooldown_seconds = 0.0
    backend = backend_for(settings)
    extractor = OllamaExtractor(
        backend, settings.ollama.extractor_model, find_prompts(None),
        settings.ollama.extract_batch_size, fallback=HeuristicExtractor(),
    )  # fmt: skip
    try:
        results = await extractor.extract([i["text"] for i in items])
    finally:
        await backend.aclose()
    fallbacks = sum(x.extracted_by == "heuristic" for x in results)
    return [[] if x.extracted_by == "heuristic" else triples(x) for x in results], fallbacks


def table(rows: dict[str, dict], kinds: list[str]) -> str:
    names = list(rows)
    head = "| kind | gold | " + " | ".join(f"{n}: P | R" for n in names) + " |"
    sep = "|---|---:|" + "---:|---:|" * len(names)
    lines = [head, sep]
    for kind in kinds + ["all"]:
        first = rows[names[0]][kind]
        cells = " | ".join(
            f"{rows[n][kind].precision:.3f} | {rows[n][kind].recall:.3f}" for n in names
        )
        label = f"**{kind}**" if kind == "all" else kind
        lines.append(f"| {label} | {first.gold} | {cells} |")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--part", choices=["tune", "test", "both"], default="both")
    ap.add_argument("--file", help="one tuning file only (e.g. extraction_tune2.json)")
    ap.add_argument("--old", action="store_true")
    ap.add_argument("--ollama", default=None)
    ap.add_argument("--errors", action="store_true")
    ap.add_argument("--limit", type=int, help="the first N texts of each part only")
    args = ap.parse_args()
    parts = ["tune", "test"] if args.part == "both" else [args.part]
    if args.file:
        PARTS["tune"], parts = [args.file], ["tune"]
    extract_one("warm up")  # the pipeline's load is not a memory's cost
    for part in parts:
        items = [i for name in PARTS[part] for i in load(DATA / name)][: args.limit]
        kinds = sorted({i["kind"] for i in items})
        rows, costs = {}, {}
        predictions, times = run_sync(extract_one, items)
        rows["parse"], costs["parse"] = score(items, predictions), times
        if args.old:
            old = old_extractor()
            predictions_old, times_old = run_sync(old, items)
            rows["regex (old)"], costs["regex (old)"] = score(items, predictions_old), times_old
        if args.ollama:
            started = time.perf_counter()
            predictions_llm, fallbacks = anyio.run(run_ollama, args.ollama, items)
            rows["ollama"] = score(items, predictions_llm)
            costs["ollama"] = [(time.perf_counter() - started) * 1000 / len(items)]
            print(f"ollama: {fallbacks} of {len(items)} texts fell back (counted as no facts)")
        print(f"\n### {part} part ({len(items)} texts)\n")
        print(table(rows, kinds))
        print()
        for name, ts in costs.items():
            if name == "ollama":
                print(f"- ollama: {ts[0] / 1000:.1f} s wall per memory (batched calls)")
                continue
            print(
                f"- {name}: p50 {statistics.median(ts):.2f} ms CPU per memory"
                + (f", p95 {sorted(ts)[int(0.95 * len(ts))]:.2f} ms" if len(ts) > 1 else "")
            )
        if args.errors:
            sc = rows["parse"]["all"]
            print("\nmissed:")
            for text, t in sc.misses:
                print(f"  {t}    <- {text}")
            print("\nwrong:")
            for text, t in sc.wrong:
                print(f"  {t}    <- {text}")


if __name__ == "__main__":
    main()
