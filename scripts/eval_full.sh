#!/bin/sh
# The full HotpotQA run behind docs/RESULTS.md: 412 dev questions, cranimem and vanilla,
# clean and noisy. Long (about an hour on 2 cores): run it in the background.
#   nohup scripts/eval_full.sh OUTDIR > OUTDIR/log 2>&1 &
set -eu
out=${1:-eval-out}
mkdir -p "$out"
exec .venv/bin/cranimem-mcp eval hotpotqa --data ../shared/data/hotpotqa_dev412.jsonl \
  --seed 0 --output "$out/results.json" --plots "$out"
