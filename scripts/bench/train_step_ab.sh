#!/usr/bin/env bash
# scorekit's training step in f32 and in bf16-mixed, alternated round by round so both see the
# same load on a shared machine (issue 29's "bf16-mixed vs f32" figure, BENCHMARKS.md §6): the
# `scorekit judge train` command of scripts/bench/train_step_compare.sh without the PyTorch peer.
# Prints a line a run (mean and median seconds of steps 2.., the host's steal time during the run)
# and, where a round ran both precisions, the bf16-mixed / f32 ratio of each build's means.
#
#   scripts/bench/train_step_ab.sh [ROUNDS=5] [STEPS=5]    (release build of scorekit first)
#
# Two builds against each other (a change's before and after), alternated within each round:
#   BINS="/tmp/scorekit-before target/release/scorekit" PRECISIONS=bf16-mixed \
#     scripts/bench/train_step_ab.sh 4 6
set -euo pipefail
cd "$(dirname "$0")/../.."
ROUNDS="${1:-5}"
STEPS="${2:-5}"
BINS="${BINS:-${BIN:-${CARGO_TARGET_DIR:-target}/release/scorekit}}"
PRECISIONS="${PRECISIONS:-f32 bf16-mixed}"
BASE="${BASE:-fixtures-cache/all-MiniLM-L6-v2}"
OUTDIR="$(mktemp -d)"
trap 'rm -rf "$OUTDIR"' EXIT
# Steal and total jiffies of all CPUs (/proc/stat's first line).
jiffies() { awk '/^cpu /{print $9, $2+$3+$4+$5+$6+$7+$8+$9}' /proc/stat; }
for r in $(seq "$ROUNDS"); do
  b=0
  for bin in $BINS; do
    b=$((b + 1))
    for p in $PRECISIONS; do
      read -r s0 t0 < <(jiffies)
      "$bin" judge train --base "$BASE" --train ../shared/data/possible-stories/dev.jsonl \
        --out "$OUTDIR/$b/$p" --force --max-steps "$STEPS" --batch-questions 8 --grad-accum 1 \
        --lr 5e-5 --max-length 256 --device cpu --quiet --no-shuffle --precision "$p" 2>/dev/null
      read -r s1 t1 < <(jiffies)
      echo "$(( 100 * (s1 - s0) / ((t1 - t0) > 0 ? (t1 - t0) : 1) ))" > "$OUTDIR/$b/$p.steal"
    done
    # shellcheck disable=SC2086 # PRECISIONS is a list
    python3 - "$r" "$OUTDIR/$b" "$bin" $PRECISIONS <<'EOF'
import json, statistics, sys
r, out, binary, precisions = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
mean = {}
for p in precisions:
    s = json.load(open(f"{out}/{p}/training.json"))["step_seconds"][1:]
    mean[p] = sum(s) / len(s)
    steal = open(f"{out}/{p}.steal").read().strip()
    print(f"round {r} {binary} {p:10s} mean {mean[p]:.3f} median {statistics.median(s):.3f} "
          f"s/step {[round(x, 2) for x in s]} steal {steal}%")
if {"f32", "bf16-mixed"} <= mean.keys():
    print(f"round {r} {binary} bf16-mixed / f32: {mean['f32'] / mean['bf16-mixed']:.2f}x")
EOF
  done
done
