"""What the secrets guard takes from text that holds no credential: every turn of the
conversational dev sets (LongMemEval-dev, LoCoMo-dev) and our non-secret sets in tests/data,
run through ``redact`` (the call the write path makes, cranimem_mcp/intake.py) as the engine
receives them ("[<date>] <speaker>: <text>"). Prints per set how many texts were changed, the
labels, and each replaced value with its context; the canaries' recall is printed alongside,
so a fix that loses a real credential shows here too.

    .venv/bin/python scripts/measure_secret_false_positives.py [--data ../shared/data] [--quiet]

The data is read from ../shared/data (relative to the repo root), never copied.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from cranimem_mcp.eval.locomo import load_conversations  # noqa: E402
from cranimem_mcp.secrets.guard import redact  # noqa: E402

DATA = ROOT / "tests" / "data"
_PLACEHOLDER = re.compile(r"(\[redacted [A-Za-z0-9 ]{1,40}\])")


def longmemeval(path: Path) -> list[str]:
    return [
        f"[{s['date']}] {t['speaker']}: {t['text']}"
        for inst in json.loads(path.read_text(encoding="utf-8"))
        for s in inst["sessions"]
        for t in s["turns"]
    ]


def locomo(path: Path) -> list[str]:
    return [text for conv in load_conversations(path) for _, text in conv.turns]


def ours() -> dict[str, list[str]]:
    """Our sets of non-secret text: labelled writes, extraction sentences, the mini corpora
    and the canaries' clean look-alikes."""
    sets: dict[str, list[str]] = {}
    for path in sorted(DATA.glob("gate_default_*.json")) + sorted(DATA.glob("extraction_*.json")):
        group = "gate_default_*" if path.name.startswith("gate") else "extraction_*"
        sets.setdefault(group, []).extend(
            it["text"] for it in json.loads(path.read_text())["items"]
        )
    labelled = json.loads((DATA / "gate_labelled.json").read_text())["sets"]
    sets["gate_labelled"] = [
        t for s in labelled for key in ("relevant", "distractors") for t in s.get(key, [])
    ]
    sets["hotpotqa_mini"] = [
        "".join(sentences)
        for row in json.loads((DATA / "hotpotqa_mini.json").read_text())
        for _, sentences in row["context"]
    ]
    sets["locomo_mini"] = locomo(DATA / "locomo_mini.json")
    sets["secret_canaries (clean)"] = [
        c["text"] for c in json.loads((DATA / "secret_canaries.json").read_text())["clean"]
    ]
    return sets


def replaced(original: str, redacted: str) -> list[tuple[str, str, str]]:
    """(label, original value, context) of each placeholder: the text between placeholders
    is the original's, verbatim, so each value is what lies between two such pieces."""
    parts = _PLACEHOLDER.split(redacted)
    out, pos = [], len(parts[0])
    for i in range(1, len(parts), 2):
        label, after = parts[i][len("[redacted ") : -1], parts[i + 1]
        last = i + 2 >= len(parts)
        end = len(original) - len(after) if last else original.find(after, pos)
        if not after and not last:
            end = pos  # two placeholders side by side: the split is unknown, show it once
        context = original[max(0, pos - 60) : pos] + "⟦" + original[pos:end] + "⟧"
        out.append((label, original[pos:end], context + original[end : end + 40]))
        pos = end + len(after)
    return out


def measure(name: str, texts: list[str], quiet: bool) -> int:
    labels: Counter[str] = Counter()
    changed = 0
    for text in texts:
        result = redact(text)
        if not result.found:
            continue
        changed += 1
        labels.update(result.found)
        if not quiet:
            for label, value, context in replaced(text, result.text):
                print(f"  [{label}] {value!r}: {' '.join(context.split())!r}")
    print(f"{name}: {len(texts)} texts, {changed} redacted, labels {dict(labels)}")
    return changed


def canaries() -> None:
    data = json.loads((DATA / "secret_canaries.json").read_text(encoding="utf-8"))
    hits = misses = 0
    for item in data["secrets"]:
        result = redact(item["text"])
        leaked = any(s in result.text for s in item["secret"])
        for label in item["labels"]:
            ok = not leaked and label in result.found
            hits, misses = hits + ok, misses + (not ok)
    print(f"canaries: {len(data['secrets'])} texts, {hits} label hits, {misses} label misses")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data")
    parser.add_argument("--quiet", action="store_true", help="counts only, no spans")
    args = parser.parse_args()
    sets = {
        "LongMemEval-dev turns": longmemeval(args.data / "longmemeval_s_dev40.json"),
        "LoCoMo-dev turns": locomo(args.data / "locomo_dev2.json"),
    }
    sets |= {f"tests/data {name}": texts for name, texts in ours().items()}
    for name, texts in sets.items():
        measure(name, texts, args.quiet)
    canaries()


if __name__ == "__main__":
    main()
