#!/usr/bin/env bash
# The 7–8B-shaped decoder-judge benchmark of BENCHMARKS.md §10, one shape at a time (dev-time only):
# make the N-layer slice (bf16 safetensors), its GGUF copies (bf16, Q8_0), run
# scripts/bench/decoder_peers.py on it (scorekit, PyTorch, llama.cpp interleaved), then delete the
# model files unless KEEP=1 (a 1-layer Qwen2.5-7B slice is 2.7 + 2.7 + 1.4 GB on disk).
#
# Usage: scripts/bench/decoder_peers.sh SCOREKIT_BIN [LAYERS [QUESTIONS [REPEATS]]] [-- SCOREKIT_CONFIG...]
#   SCOREKIT_CONFIG: NAME=FLAGS, as decoder_peers.py's --scorekit (default: f32= "bf16=--dtype bf16"
#                    "int8=--quantize"); a configuration the binary refuses is reported and skipped.
#   SHAPES="qwen2.5-7b llama-3.1-8b" (default both), OUT=target/bench-peers, VENV=build/peer-venv,
#   THREADS=2, BATCH=4, TORCH="f32 bf16 int8", LLAMA="bf16 q8_0", KEEP=1 keeps the model files.
# Needs the venv of scripts/bench/peer_venv.sh and the dev split (SCOREKIT_TEST_DATA or ../shared/data).
# llama.cpp skips the last layer's FFN on rows it does not output, so a 1-layer slice flatters it:
# run two depths (e.g. LAYERS 2 and 4) and compare per layer with scripts/bench/decoder_layer_diff.py.
set -euo pipefail
cd "$(dirname "$0")/../.."
BIN=$1; shift
LAYERS=${1:-1}; QUESTIONS=${2:-8}; REPEATS=${3:-2}
[[ $# -gt 0 ]] && shift; [[ $# -gt 0 ]] && shift; [[ $# -gt 0 ]] && shift
[[ "${1:-}" == "--" ]] && shift
CONFIGS=("$@")
[[ ${#CONFIGS[@]} -eq 0 ]] && CONFIGS=("f32=" "bf16=--dtype bf16" "int8=--quantize")
SHAPES=${SHAPES:-"qwen2.5-7b llama-3.1-8b"}
OUT=${OUT:-target/bench-peers}
VENV=${VENV:-build/peer-venv}
THREADS=${THREADS:-2}
BATCH=${BATCH:-4}
TORCH=${TORCH:-"f32 bf16 int8"}
LLAMA=${LLAMA:-"bf16 q8_0"}
DATA=${SCOREKIT_TEST_DATA:-../shared/data}
DEV=$(ls "$DATA"/possible-stories/*/dataset/dev.jsonl | head -1)
PY=$VENV/bin/python
mkdir -p "$OUT"
for shape in $SHAPES; do
    model=$OUT/$shape-L$LAYERS
    [[ -f $model/config.json ]] || $PY scripts/bench/make_decoder_7b_shaped.py "$shape" "$LAYERS" "$model"
    [[ -f $model.q8_0.gguf ]] || $PY scripts/bench/decoder_gguf.py "$model" bf16 --venv "$VENV"
    args=(--model "$model" --dev "$DEV" --questions "$QUESTIONS" --batch "$BATCH" --threads "$THREADS"
          --repeats "$REPEATS" --work "$OUT/work-$shape" --scorekit-bin "$BIN"
          --json "$OUT/$shape-L$LAYERS-q$QUESTIONS.json")
    for c in "${CONFIGS[@]}"; do args+=(--scorekit "$c"); done
    for t in $TORCH; do args+=(--torch "$t"); done
    # Q8_0 without the AMX buffer type: it segfaults in llama_decode here (decoder_peers.py's doc)
    for l in $LLAMA; do
        opt=""; if [[ $l == q8_0 ]]; then opt=",norepack"; fi
        args+=(--llama "$l=$model.$l.gguf$opt")
    done
    echo "== $shape, $LAYERS-layer slice: $PY scripts/bench/decoder_peers.py ${args[*]}"
    $PY scripts/bench/decoder_peers.py "${args[@]}" | tee "$OUT/$shape-L$LAYERS-q$QUESTIONS.md"
    [[ "${KEEP:-0}" == 1 ]] || rm -rf "$model" "$model".*.gguf
done
