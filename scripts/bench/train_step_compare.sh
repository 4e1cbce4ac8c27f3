#!/usr/bin/env bash
# Time per optimiser step of `scorekit judge train` and PyTorch, interleaved (A B A B ...) so that
# both see the same load on a shared machine. Same recipe and batches: the first STEPS x 8 Possible
# Stories dev questions in file order, all-MiniLM-L6-v2 with a new head, max length 256, AdamW lr
# 5e-5, clip 1.0, dropout 0.1, 2 threads. Prints one line per run: seconds per step (first step
# dropped: allocation warm-up), CPU seconds and peak RSS of the whole process (model loading and
# Python start-up included), load average. BENCHMARKS.md.
#
# PRECISION=bf16-mixed runs both in bf16 mixed precision (`--precision bf16-mixed`; PyTorch's
# CPU bf16 autocast).
#
#   scripts/bench/train_step_compare.sh [ROUNDS=2] [STEPS=4]    (release build of scorekit first)
set -euo pipefail
cd "$(dirname "$0")/../.."
ROUNDS="${1:-2}"
STEPS="${2:-4}"
PRECISION="${PRECISION:-f32}"
BIN="${BIN:-${CARGO_TARGET_DIR:-target}/release/scorekit}"
PY="${PY:-/work/venv-dev/bin/python}"
BASE="${BASE:-fixtures-cache/all-MiniLM-L6-v2}"
OUTDIR="$(mktemp -d)"
trap 'rm -rf "$OUTDIR"' EXIT
for r in $(seq "$ROUNDS"); do
  load="$(cut -d' ' -f1 /proc/loadavg)"
  /usr/bin/time -f "%U %S %M" -o "$OUTDIR/t" "$BIN" judge train --base "$BASE" \
    --train ../shared/data/possible-stories/dev.jsonl --out "$OUTDIR/sk" --force --max-steps "$STEPS" \
    --batch-questions 8 --grad-accum 1 --lr 5e-5 --max-length 256 --device cpu --quiet --no-shuffle --precision "$PRECISION" 2>/dev/null
  "$PY" - "$OUTDIR/sk/training.json" "$OUTDIR/t" "$load" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1])); u, s, rss = map(float, open(sys.argv[2]).read().split())
t = d["step_seconds"][1:]
print(f"scorekit {d['precision']:10s} s/step {sum(t) / len(t):6.2f}  steps {[round(x, 2) for x in t]}  cpu {u + s:6.1f} s  rss {rss / 2**20:.2f} GiB  "
      f"load {sys.argv[3]}  losses {[round(x['loss'], 5) for x in d['steps']]}")
EOF
  load="$(cut -d' ' -f1 /proc/loadavg)"
  /usr/bin/time -f "%U %S %M" -o "$OUTDIR/t" "$PY" scripts/bench/train_step_time.py "$BASE" "$STEPS" 8 256 "$PRECISION" \
    >"$OUTDIR/py.json" 2>/dev/null
  "$PY" - "$OUTDIR/py.json" "$OUTDIR/t" "$load" <<'EOF'
import json, sys
d = json.loads(open(sys.argv[1]).read().strip().splitlines()[-1]); u, s, rss = map(float, open(sys.argv[2]).read().split())
t = d["seconds_per_step"][1:]
print(f"PyTorch  {d['precision']:10s} s/step {sum(t) / len(t):6.2f}  steps {[round(x, 2) for x in t]}  cpu {u + s:6.1f} s  rss {rss / 2**20:.2f} GiB  "
      f"load {sys.argv[3]}  losses {[round(x, 5) for x in d['losses']]}")
EOF
done
