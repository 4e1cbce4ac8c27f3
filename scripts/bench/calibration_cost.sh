#!/usr/bin/env bash
# What the judge's dataset calibration costs a story run (issue 45), for a scoring judge and a
# letter judge: `scorekit story` on the first N dev questions with one model's endings, in three
# modes, interleaved round by round:
#   off     --no-calibration (raw IFSM only, as before the calibration existed)
#   fresh   the calibration computed in the run (an empty cache each time)
#   cached  the calibration taken from the cache (a second model, a shard, a resumed run)
# With a calibration the items take the human options' scores (the ceiling's) from it, so a
# cached run asks the judge only for the endings.
# Scoring judge: a RoBERTa-large-shaped judge (scripts/bench/make_judge_shaped.py, random weights,
# real token counts). Letter judge: a Flan-T5-SHAPE-shaped one (scripts/bench/t5_judge.py make,
# random weights: every answer decodes all 19 steps).
#
# Usage: scripts/bench/calibration_cost.sh [scoring|letter ...]   (default: both)
# Env: BIN (target/release/scorekit), PYTHON (/work/venv-dev/bin/python: torch, transformers),
#      ROUNDS (3), N (24 scoring / 6 letter questions), T5_SHAPE (base), THREADS (2).
set -euo pipefail
cd "$(dirname "$0")/../.."
PY=${PYTHON:-/work/venv-dev/bin/python}
BIN=${BIN:-target/release/scorekit}
ROUNDS=${ROUNDS:-3}
THREADS=${THREADS:-2}
T5_SHAPE=${T5_SHAPE:-base}
export RAYON_NUM_THREADS=$THREADS
export SCOREKIT_DATA=${SCOREKIT_TEST_DATA:-$PWD/target/test-data}
DEV=$(find "$SCOREKIT_DATA/possible-stories" -name dev.jsonl | head -1)
[ -n "$DEV" ] || { echo "no dev split: run scripts/test-data.sh" >&2; exit 2; }
[ -x "$BIN" ] || cargo build --release --quiet
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# story on the first $3 dev questions with judge $2, one model's endings (the third option,
# lengthened so that no ending equals an option).
bench() { # kind judge n
  local kind=$1 judge=$2 n=$3
  head -n "$n" "$DEV" > "$work/dev.jsonl"
  python3 - "$work/dev.jsonl" > "$work/gen.jsonl" <<'PY'
import json, sys
for line in open(sys.argv[1]):
    q = json.loads(line)
    # A new ending (no option's text), as a model writes one: its pair is new to the judge.
    ending = q["options"][2].rstrip(". ") + ", and that was the end of it."
    print(json.dumps({"question_id": q["question_id"], "ending": ending}))
PY
  run() { # mode -> "wall_s cpu_s" (cpu: user + sys, steadier than wall on a shared machine)
    local mode=$1 flags=()
    case $mode in
      off) flags=(--no-calibration) ;;
      fresh) rm -rf "$work/cache" ;;
      cached) ;;
    esac
    SCOREKIT_CALIBRATION_CACHE=$work/cache /usr/bin/time -f "%e %U %S" -o "$work/time" \
      "$BIN" story --dataset "$work/dev.jsonl" --generations "$work/gen.jsonl" --judge "$judge" \
      --skip-embedder --device cpu --offline --quiet --out "$work/out-$mode" --force "${flags[@]}" \
      > /dev/null 2> "$work/stderr-$mode"
    awk '{ printf "%s %.2f\n", $1, $2 + $3 }' "$work/time"
  }
  echo "== $kind judge $judge, $n dev questions, $ROUNDS rounds, uptime: $(uptime)"
  for r in $(seq "$ROUNDS"); do
    read -r off_w off_c < <(run off)
    read -r fresh_w fresh_c < <(run fresh)
    read -r cached_w cached_c < <(run cached)
    echo "round $r (wall / cpu s): off $off_w / $off_c  fresh $fresh_w / $fresh_c  cached $cached_w / $cached_c" \
      " fresh/off cpu $(python3 -c "print(round($fresh_c / $off_c, 2))")  cached/off cpu $(python3 -c "print(round($cached_c / $off_c, 2))")"
  done
  python3 - "$work/out-fresh/metrics.json" <<'PY'
import json, sys
m = json.load(open(sys.argv[1]))["metrics"]["calibration"]["dataset"]
print("calibration:", m["questions"], "questions,", m["counts"]["positives"], "positives,",
      m["counts"]["negatives"], "negatives")
PY
}

kinds=("$@")
[ ${#kinds[@]} -gt 0 ] || kinds=(scoring letter)
for kind in "${kinds[@]}"; do
  case $kind in
    scoring)
      "$PY" scripts/bench/make_judge_shaped.py fixtures-cache/roberta-large-shaped >/dev/null
      bench scoring fixtures-cache/roberta-large-shaped "${N:-24}" ;;
    letter)
      dir=/tmp/flan-$T5_SHAPE-random
      [ -f "$dir/model.safetensors" ] || "$PY" scripts/bench/t5_judge.py make "$dir" "$T5_SHAPE"
      bench letter "$dir" "${N:-6}" ;;
    *) echo "unknown: $kind (scoring or letter)" >&2; exit 2 ;;
  esac
done
