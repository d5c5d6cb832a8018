"""How the default gate's noise rules (cranimem_mcp/gate/noise.py) judge labelled writes:
the share of durable writes kept and of noise dropped, per set and per kind, and the
evidence turns of the conversational dev sets they would reject. No engine: the rules read
the text alone (what the gate rejects is what they recognise; health facts and pins are
kept before them).

    .venv/bin/python scripts/measure_noise_rules.py [--test] [--show]

--test adds the held-out part of tests/data (read it once, at the end: never tune on it).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter, defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from cranimem_mcp.eval.locomo import load_conversations  # noqa: E402
from cranimem_mcp.gate.noise import noise  # noqa: E402

DATA = ROOT / "tests" / "data"
SHARED = ROOT.parent / "shared" / "data"


def labelled(test: bool) -> dict[str, list[tuple[str, bool, str]]]:
    sets: dict[str, list[tuple[str, bool, str]]] = defaultdict(list)
    for path in sorted(DATA.glob("gate_default_tune*.json")):
        for it in json.loads(path.read_text())["items"]:
            sets["ours, tuning part"].append((it["text"], it["keep"], it["category"]))
    if test:
        for it in json.loads((DATA / "gate_default_test.json").read_text())["items"]:
            sets["ours, test part"].append((it["text"], it["keep"], it["category"]))
    dev = SHARED / "assistant_writes_dev.json"
    if dev.exists():
        d = json.loads(dev.read_text())
        kinds = {i["text"]: i.get("kind", "?") for i in d.get("meta", {}).get("keep", [])}
        kinds |= {i["text"]: i.get("kind", "?") for i in d.get("meta", {}).get("drop", [])}
        for text in d["keep"]:
            sets["other projects (dev)"].append((text, True, kinds.get(text, "?")))
        for text in d["drop"]:
            sets["other projects (dev)"].append((text, False, kinds.get(text, "?")))
    return sets


def conversations() -> dict[str, tuple[list[str], list[str]]]:
    """Each set's turn texts, all of them and the evidence ones."""
    out = {}
    locomo = SHARED / "locomo_dev2.json"
    if locomo.exists():
        every, evidence = [], []
        for conv in load_conversations(locomo):
            texts = conv.texts
            every += list(texts.values())
            evidence += [texts[e] for q in conv.questions for e in q.evidence]
        out["LoCoMo-dev"] = (every, evidence)
    lme = SHARED / "longmemeval_s_dev40.json"
    if lme.exists():
        every, evidence, assistant = [], [], []
        for inst in json.loads(lme.read_text()):
            by_id = {}
            for s in inst["sessions"]:
                for t in s["turns"]:
                    text = f"[{s['date']}] {t['speaker']}: {t['text']}"
                    by_id[t["id"]] = (text, t["speaker"])
                    every.append(text)
            for q in inst["questions"]:
                for e in q["evidence"]:
                    if e in by_id:
                        evidence.append(by_id[e][0])
                        if by_id[e][1] == "assistant":
                            assistant.append(by_id[e][0])
        out["LongMemEval-dev"] = (every, evidence)
        out["LongMemEval-dev, assistant evidence"] = (assistant, assistant)
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--test", action="store_true")
    ap.add_argument("--show", action="store_true", help="print every wrong decision")
    args = ap.parse_args()
    print("| set | durable kept | noise dropped | writes |\n|---|---:|---:|---:|")
    wrong = []
    per_kind: dict[tuple[str, str], Counter] = defaultdict(Counter)
    for name, items in labelled(args.test).items():
        kept = dropped = n_keep = n_drop = 0
        for text, keep, kind in items:
            hit = noise(text)
            if keep:
                n_keep += 1
                kept += hit is None
                per_kind[name, kind]["n"] += 1
                per_kind[name, kind]["kept"] += hit is None
                if hit is not None:
                    wrong.append((name, "lost", kind, hit.rule, text))
            else:
                n_drop += 1
                dropped += hit is not None
                if hit is None:
                    wrong.append((name, "kept", kind, "-", text))
        print(
            f"| {name} | {kept / max(1, n_keep):.3f} ({kept}/{n_keep}) | "
            f"{dropped / max(1, n_drop):.3f} ({dropped}/{n_drop}) | {len(items)} |"
        )
    print("\n| set | kind | durable kept |\n|---|---|---:|")
    for (name, kind), c in sorted(per_kind.items()):
        if name != "ours, tuning part":  # its many kinds: see --show
            print(f"| {name} | {kind} | {c['kept'] / c['n']:.3f} ({c['kept']}/{c['n']}) |")
    print("\n| conversation set | turns rejected | evidence turns rejected |\n|---|---:|---:|")
    for name, (every, evidence) in conversations().items():
        rej = [t for t in every if noise(t[t.find("] ") + 2 :] if t.startswith("[") else t)]
        ev = [t for t in evidence if noise(t[t.find("] ") + 2 :] if t.startswith("[") else t)]
        print(
            f"| {name} | {len(rej) / max(1, len(every)):.3f} ({len(rej)}/{len(every)}) | "
            f"{len(ev) / max(1, len(evidence)):.3f} ({len(ev)}/{len(evidence)}) |"
        )
        wrong += [(name, "evidence lost", "-", noise(t[t.find("] ") + 2 :]).rule, t) for t in ev]
    if args.show:
        for w in wrong:
            print(" | ".join(w[:4]), "|", w[4][:150].replace("\n", " "))


if __name__ == "__main__":
    main()
