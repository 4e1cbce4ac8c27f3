#!/usr/bin/env bash
# The letter judge (T5 / Flan-T5) against PyTorch `generate`, side by side on the same prompts,
# weights and cores: a Flan-T5-shaped judge with random weights (scripts/bench/t5_judge.py make),
# the zero-shot prompts of the first N Possible Stories test questions (the real prompt text; the
# tiny test tokenizer, so prompts have more tokens than with Flan's 32k vocabulary), greedy
# decoding to max_length 20. Random weights rarely emit </s>, so every answer runs all 19 steps,
# in both engines alike.
#
# Usage: scripts/bench/t5_judge.sh [SHAPE=large] [N=16]
# Env: BIN (target/release/scorekit), PYTHON (/work/venv-dev/bin/python), THREADS (2),
#      DIR (/tmp/flan-SHAPE-random), BATCH_TOKENS (scorekit's --batch-tokens, 8192).
set -euo pipefail
cd "$(dirname "$0")/../.."
SHAPE=${1:-large}
N=${2:-16}
PY=${PYTHON:-/work/venv-dev/bin/python}
BIN=${BIN:-target/release/scorekit}
DIR=${DIR:-/tmp/flan-$SHAPE-random}
THREADS=${THREADS:-2}
BATCH_TOKENS=${BATCH_TOKENS:-8192}
export THREADS RAYON_NUM_THREADS=$THREADS
TEST=$(find "${SCOREKIT_TEST_DATA:-target/test-data}/possible-stories" -name test.jsonl | head -1)
[ -n "$TEST" ] || { echo "no test split: run scripts/test-data.sh" >&2; exit 2; }
[ -f "$DIR/model.safetensors" ] || "$PY" scripts/bench/t5_judge.py make "$DIR" "$SHAPE"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
head -n "$N" "$TEST" > "$work/n.jsonl"
head -n 1 "$TEST" > "$work/one.jsonl"

scorekit_run() { # dataset label
  /usr/bin/time -f "%e %M" -o "$work/time" "$BIN" judge eval --judge "$DIR" --dataset "$1" \
    --out "$work/out" --force --quiet --device cpu --batch-tokens "$BATCH_TOKENS" > /dev/null
  read -r wall kib < "$work/time"
  echo "$wall $kib"
}
read -r one_wall one_kib < <(scorekit_run "$work/one.jsonl")
read -r n_wall n_kib < <(scorekit_run "$work/n.jsonl")
python3 - "$one_wall" "$n_wall" "$n_kib" "$N" <<'PY'
import json, sys
one, n_wall, kib, n = float(sys.argv[1]), float(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
# Loading and one prompt cost `one`; the other N-1 prompts cost the difference.
per = (n_wall - one) / (n - 1)
print(json.dumps({"engine": "scorekit candle f32", "prompts": n, "wall_s": n_wall, "one_prompt_wall_s": one,
                  "s_per_prompt": round(per, 3), "peak_rss_bytes": kib * 1024}))
PY
"$PY" scripts/bench/t5_judge.py torch "$DIR" "$TEST" "$N" 1
"$PY" scripts/bench/t5_judge.py torch "$DIR" "$TEST" "$N" 8
du -b "$DIR/model.safetensors" | awk '{print "{\"weights_bytes\": " $1 "}"}'
