"""Merge results.json files of runs that each covered some systems or some settings (same
config otherwise: one process per system, or per system and setting, uses both cores), fill
in each system's noise_drop, and print the markdown table; optionally write the plots.

    .venv/bin/python scripts/eval_merge.py OUT.json A.json B.json [--plots DIR]
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from cranimem_mcp.eval.metrics import noise_drop
from cranimem_mcp.eval.report import markdown_table, plot_results

args = sys.argv[1:]
plots = None
if "--plots" in args:
    plots = Path(args[args.index("--plots") + 1])
    args = args[: args.index("--plots")]
out, inputs = Path(args[0]), [json.loads(Path(p).read_text()) for p in args[1:]]
merged = {"config": {**inputs[0]["config"], "systems": [], "settings": []}, "systems": {}}
for doc in inputs:
    for name, blocks in doc["systems"].items():
        merged["systems"].setdefault(name, {}).update(blocks)
    for key in ("systems", "settings"):
        merged["config"][key] += [x for x in doc["config"][key] if x not in merged["config"][key]]
for blocks in merged["systems"].values():
    if "clean" in blocks and "noisy" in blocks:
        blocks["noise_drop"] = noise_drop(blocks["clean"], blocks["noisy"])
out.write_text(json.dumps(merged, indent=2) + "\n")
if plots:
    for p in plot_results(merged, plots):
        print(f"plot: {p}")
print(markdown_table(merged))
