"""Merge results.json files of runs that each covered some systems (same config otherwise)
and print the markdown table; optionally write the merged file and the plots.

    .venv/bin/python scripts/eval_merge.py OUT.json A.json B.json [--plots DIR]
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from cranimem_mcp.eval.report import markdown_table, plot_results

args = sys.argv[1:]
plots = None
if "--plots" in args:
    plots = Path(args[args.index("--plots") + 1])
    args = args[: args.index("--plots")]
out, inputs = Path(args[0]), [json.loads(Path(p).read_text()) for p in args[1:]]
merged = {"config": {**inputs[0]["config"], "systems": []}, "systems": {}}
for doc in inputs:
    merged["systems"].update(doc["systems"])
    merged["config"]["systems"] += doc["config"]["systems"]
out.write_text(json.dumps(merged, indent=2) + "\n")
if plots:
    for p in plot_results(merged, plots):
        print(f"plot: {p}")
print(markdown_table(merged))
