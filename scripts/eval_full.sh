#!/bin/sh
# The full HotpotQA run behind docs/RESULTS.md: 412 dev questions, cranimem and vanilla,
# clean and noisy. Long (about an hour on 2 cores): run it in the background.
#   nohup scripts/eval_full.sh OUTDIR [--system cranimem] > OUTDIR.log 2>&1 &
# Two processes (--system cranimem, --system vanilla) use both cores; merge them with
# scripts/eval_merge.py.
set -eu
out=${1:-eval-out}
shift || true
mkdir -p "$out"
exec .venv/bin/cranimem-mcp eval hotpotqa --data ../shared/data/hotpotqa_dev412.jsonl \
  --seed 0 --output "$out/results.json" --plots "$out" "$@"
