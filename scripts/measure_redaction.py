"""Measure the secrets guard (cranimem_mcp.secrets.guard): canary hits and misses per label,
false positives on real prose (HotpotQA paragraphs, LoCoMo turns), and the time per call.

    .venv/bin/python scripts/measure_redaction.py [--data ../shared/data] [--show]

A hit is a canary whose every secret value is gone from the output and whose expected labels
are all in ``found``. A clean item or a paragraph of prose that comes back changed is a false
positive. The data is read from ../shared/data (relative to the repo root), never copied.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections import Counter
from pathlib import Path

from cranimem_mcp.secrets.guard import redact, warm_up

ROOT = Path(__file__).resolve().parent.parent
CANARIES = ROOT / "tests" / "data" / "secret_canaries.json"


def hotpot_paragraphs(path: Path) -> list[str]:
    paragraphs = []
    for line in path.read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        paragraphs += ["".join(sentences) for sentences in row["context"]["sentences"]]
    return paragraphs


def locomo_turns(path: Path) -> list[str]:
    turns = []
    for conversation in json.loads(path.read_text(encoding="utf-8")):
        for key, session in conversation["conversation"].items():
            if key.startswith("session_") and isinstance(session, list):
                turns += [turn["text"] for turn in session]
    return turns


def canaries(show: bool) -> None:
    data = json.loads(CANARIES.read_text(encoding="utf-8"))
    per_label: dict[str, list[int]] = {}
    misses = []
    for item in data["secrets"]:
        result = redact(item["text"])
        leaked = [s for s in item["secret"] if s in result.text]
        missing = [label for label in item["labels"] if label not in result.found]
        for label in item["labels"]:
            per_label.setdefault(label, [0, 0])[0 if not leaked and not missing else 1] += 1
        if leaked or missing:
            misses.append((item["text"][:90], item["labels"], result.found, bool(leaked)))
    hits = sum(h for h, _ in per_label.values())
    print(f"canaries: {len(data['secrets'])} texts, {hits} label hits, "
          f"{sum(m for _, m in per_label.values())} label misses")  # fmt: skip
    print("| label | hits | misses |\n|---|---|---|")
    for label, (h, m) in sorted(per_label.items(), key=lambda kv: kv[0].lower()):
        print(f"| {label} | {h} | {m} |")
    for text, want, got, leaked in misses:
        print(f"MISS {text!r}: want {want}, found {list(got)}, value leaked: {leaked}")
    changed = [c["text"] for c in data["clean"] if redact(c["text"]).text != c["text"]]
    print(f"clean look-alikes: {len(data['clean'])}, changed: {len(changed)}")
    for text in changed:
        print(f"FALSE POSITIVE {text[:90]!r} -> {redact(text).text[:120]!r}")
    if show:
        for item in data["secrets"]:
            print(repr(redact(item["text"]).text[:160]))


def false_positives(name: str, texts: list[str], show: bool) -> None:
    labels: Counter[str] = Counter()
    changed = 0
    for text in texts:
        result = redact(text)
        if result.found:
            changed += 1
            labels.update(result.found)
            if show:
                at = result.text.find("[redacted")
                print(f"  {name}: {result.text[max(0, at - 80) : at + 40]!r}")
    print(f"{name}: {len(texts)} texts, {changed} changed, labels {dict(labels)}")


def left_out_plugins(texts: dict[str, list[str]]) -> None:
    """The detect-secrets plugins the guard does not use, run as detect-secrets runs them
    (``analyze_line`` under its default settings; "eager" is what ``scan_line`` does)."""
    from detect_secrets.core.scan import scan_line
    from detect_secrets.plugins.high_entropy_strings import (
        Base64HighEntropyString,
        HexHighEntropyString,
    )
    from detect_secrets.plugins.ip_public import IPPublicDetector
    from detect_secrets.plugins.keyword import KeywordDetector
    from detect_secrets.settings import default_settings

    plugins = [Base64HighEntropyString(), HexHighEntropyString(), KeywordDetector(),
               IPPublicDetector()]  # fmt: skip
    with default_settings():
        for plugin in plugins:
            for eager in (False, True):
                if eager and not isinstance(plugin, Base64HighEntropyString | HexHighEntropyString):
                    continue
                counts, start, calls = [], time.perf_counter(), 0
                for name, items in texts.items():
                    flagged = 0
                    for text in items:
                        calls += 1
                        extra = {"enable_eager_search": True} if eager else {}
                        found = plugin.analyze_line(filename="memory.txt", line=text, **extra)
                        flagged += bool(found)
                    counts.append(f"{name} {flagged}/{len(items)}")
                per_call = (time.perf_counter() - start) / calls * 1e3
                mode = " (eager)" if eager else ""
                print(f"left out {type(plugin).__name__}{mode}: {', '.join(counts)} texts flagged, "
                      f"{per_call:.3f} ms per text")  # fmt: skip
        sample = texts["HotpotQA paragraphs"][:300]
        start = time.perf_counter()
        flagged = sum(bool(list(scan_line(text))) for text in sample)
        per_call = (time.perf_counter() - start) / len(sample) * 1e3
        print(f"detect-secrets scan_line (all plugins): {flagged}/{len(sample)} HotpotQA "
              f"paragraphs flagged, {per_call:.2f} ms per paragraph")  # fmt: skip


def timing(name: str, texts: list[str], size: int | None, rounds: int = 3) -> None:
    """p50/p95 per call, wall clock and this thread's CPU time (on shared cores the wall
    clock's tail is mostly the scheduler)."""
    pool = [t[:size] for t in texts if size is None or len(t) >= size][:500]
    wall, cpu = [], []
    for _ in range(rounds):
        for text in pool:
            w, c = time.perf_counter(), time.thread_time()
            redact(text)
            cpu.append(time.thread_time() - c)
            wall.append(time.perf_counter() - w)

    def pct(xs: list[float], q: float) -> float:
        return sorted(xs)[int(len(xs) * q)] * 1e3

    chars = statistics.median(len(t) for t in pool)
    print(
        f"{name} (median {chars:.0f} chars): {len(wall)} calls, "
        f"wall p50 {pct(wall, 0.5):.3f} p95 {pct(wall, 0.95):.3f} ms, "
        f"CPU p50 {pct(cpu, 0.5):.3f} p95 {pct(cpu, 0.95):.3f} ms"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data")
    parser.add_argument("--show", action="store_true", help="print every redaction")
    args = parser.parse_args()

    start = time.perf_counter()
    rules = warm_up()
    print(f"{rules} rules loaded in {time.perf_counter() - start:.2f} s")
    canaries(args.show)
    hotpot = hotpot_paragraphs(args.data / "hotpotqa_dev412.jsonl")
    locomo = locomo_turns(args.data / "locomo_dev2.json")
    false_positives("HotpotQA paragraphs", hotpot, args.show)
    false_positives("LoCoMo turns", locomo, args.show)
    data = json.loads(CANARIES.read_text(encoding="utf-8"))
    left_out_plugins({
        "canary secrets": [s["text"] for s in data["secrets"]],
        "clean look-alikes": [c["text"] for c in data["clean"]],
        "HotpotQA paragraphs": hotpot,
        "LoCoMo turns": locomo,
    })  # fmt: skip
    long_texts = [" ".join(hotpot[i : i + 6]) for i in range(0, len(hotpot), 6)]
    timing("prose, short", hotpot + locomo, 100)
    timing("prose, long", long_texts, 2000)
    timing("canary texts (hold a credential)", [s["text"] for s in data["secrets"]], None)


if __name__ == "__main__":
    main()
