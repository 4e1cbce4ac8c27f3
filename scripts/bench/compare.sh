#!/usr/bin/env bash
# scorekit vs sentence-transformers (PyTorch) vs ONNX Runtime on the same model folder and the
# same sentences (Possible Stories endings + passages), interleaved rounds, 2 threads, median.
# Usage: scripts/bench/compare.sh [labse|minilm|judge|FOLDER ...] (default: labse minilm)
#   judge: scorekit vs PyTorch on a RoBERTa-large-shaped multiple-choice judge and the first
#   JUDGE_LIMIT (32) dev questions x 4 options (scripts/bench/judge_compare.py).
# Env: ROUNDS (3), THREADS (2), LIMIT (0 = whole corpus), ENGINES, JUDGE_ENGINES, PYTHON (/work/venv-dev/bin/python
# or python3: needs torch, sentence-transformers, onnxruntime, onnx).
# Method and results: BENCHMARKS.md.
set -euo pipefail
cd "$(dirname "$0")/../.."
PY=${PYTHON:-/work/venv-dev/bin/python}
[ -x "$PY" ] || PY=python3
ROUNDS=${ROUNDS:-3}
THREADS=${THREADS:-2}
LIMIT=${LIMIT:-0}
ENGINES=${ENGINES:-scorekit,st,ort,scorekit-int8}
CORPUS=${CORPUS:-../shared/data/possible-stories/endings.jsonl}

scripts/setup-test-fixtures.sh >/dev/null
cargo build --release --quiet
if [ ! -f fixtures-cache/labse-shaped/.complete ]; then
  # The LaBSE-shaped folder (12 x 768, real 501,153-token vocab, random weights) the runtime tests make.
  cargo test --release --quiet --test integration runtime::labse_shaped_model_embeds_end_to_end >/dev/null
fi
models=("$@")
[ ${#models[@]} -gt 0 ] || models=(labse minilm)
for m in "${models[@]}"; do
  case $m in
    judge)
      "$PY" scripts/bench/make_judge_shaped.py fixtures-cache/roberta-large-shaped
      echo "== judge (fixtures-cache/roberta-large-shaped), uptime: $(uptime)"
      "$PY" scripts/bench/judge_compare.py --judge fixtures-cache/roberta-large-shaped \
        --threads "$THREADS" --rounds "$ROUNDS" --limit "${JUDGE_LIMIT:-32}" \
        --engines "${JUDGE_ENGINES:-scorekit,torch,scorekit-avx512}" --json-out target/bench-judge.json
      continue ;;
    labse) dir=fixtures-cache/labse-shaped ;;
    minilm) dir=fixtures-cache/all-MiniLM-L6-v2 ;;
    *) dir=$m ;;
  esac
  echo "== $m ($dir), uptime: $(uptime)"
  "$PY" scripts/bench/compare.py --model "$dir" --corpus "$CORPUS" --threads "$THREADS" \
    --rounds "$ROUNDS" --limit "$LIMIT" --engines "$ENGINES" \
    --json-out "target/bench-$(basename "$dir").json"
done
