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
#      DIR (/tmp/flan-SHAPE-random), BATCH_TOKENS (scorekit's --batch-tokens, 8192),
#      ENGINES (scorekit rows to run, space-separated labels; default all), TORCH ("1 8": PyTorch
#      batch sizes to run, "" for none).
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

scorekit_run() { # dataset [flags...]
  local data=$1; shift
  /usr/bin/time -f "%e %M" -o "$work/time" "$BIN" judge eval --judge "$DIR" --dataset "$data" \
    --out "$work/out" --force --quiet --device cpu --batch-tokens "$BATCH_TOKENS" "$@" > /dev/null
  read -r wall kib < "$work/time"
  echo "$wall $kib"
}
# One row per engine: candle's layers, then the encoder on scorekit's kernels in f32 (AMX tiles
# where the CPU has them, as split-bf16; AVX-512 FMA with --amx off), int8 and bf16 products.
# ENGINES picks rows by label (default all).
for row in "candle-f32:--engine candle" "native-f32:--engine native" \
           "native-f32-avx512:--engine native --amx off" "native-int8:--engine native --quantize" \
           "native-bf16:--engine native --dtype bf16"; do
  label=${row%%:*}; flags=${row#*:}
  case " ${ENGINES:-$label} " in *" $label "*) ;; *) continue ;; esac
  # The weights in the page cache first, and the one-prompt run twice around the N-prompt run
  # (the faster kept): loading's spread would otherwise land on the per-prompt figure.
  cat "$DIR"/*.safetensors > /dev/null
  # shellcheck disable=SC2086
  read -r one_wall one_kib < <(scorekit_run "$work/one.jsonl" $flags)
  # shellcheck disable=SC2086
  read -r n_wall n_kib < <(scorekit_run "$work/n.jsonl" $flags)
  # shellcheck disable=SC2086
  read -r again _ < <(scorekit_run "$work/one.jsonl" $flags)
  one_wall=$(python3 -c "print(min($one_wall, $again))")
  engine=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1])).get("engine", "?"))' "$work/out/metrics.json")
  python3 - "$label" "$engine" "$one_wall" "$n_wall" "$one_kib" "$n_kib" "$N" <<'PY'
import json, sys
label, engine = sys.argv[1], sys.argv[2]
one, n_wall, one_kib, kib, n = float(sys.argv[3]), float(sys.argv[4]), int(sys.argv[5]), int(sys.argv[6]), int(sys.argv[7])
# Loading and one prompt cost `one`; the other N-1 prompts cost the difference.
per = (n_wall - one) / (n - 1)
print(json.dumps({"engine": f"scorekit {label}", "scorekit_engine": engine, "prompts": n, "wall_s": n_wall,
                  "one_prompt_wall_s": one, "s_per_prompt": round(per, 3),
                  "peak_rss_bytes_one_prompt": one_kib * 1024, "peak_rss_bytes": kib * 1024}))
PY
done
for b in ${TORCH-1 8}; do
  "$PY" scripts/bench/t5_judge.py torch "$DIR" "$TEST" "$N" "$b"
done
du -b "$DIR/model.safetensors" | awk '{print "{\"weights_bytes\": " $1 "}"}'
