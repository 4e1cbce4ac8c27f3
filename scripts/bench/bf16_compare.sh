#!/usr/bin/env bash
# bf16 against f32 on this CPU, each pair interleaved so both see the same load (BENCHMARKS.md §3,
# §5, §6, issue 29): the training step (scorekit and PyTorch, scripts/bench/train_step_compare.sh),
# sentence embedding (all-MiniLM-L6-v2, LaBSE-shaped) and the RoBERTa-large-shaped judge with
# `scorekit bench`, and the bare products (`gemm_speed`). Prints one line a run.
#
#   scripts/bench/bf16_compare.sh [ROUNDS=3]
#
# Needs: a release build (BIN), fixtures-cache/labse-shaped (made by the integration tests) and
# fixtures-cache/roberta-large-shaped (scripts/bench/make_judge_shaped.py), the test data cache
# (SCOREKIT_DATA, default target/test-data), PY with torch + transformers for the training peer.
set -euo pipefail
cd "$(dirname "$0")/../.."
ROUNDS="${1:-3}"
BIN="${BIN:-${CARGO_TARGET_DIR:-target}/release/scorekit}"
export SCOREKIT_DATA="${SCOREKIT_DATA:-$PWD/target/test-data}"
grep -o -m1 -E 'model name.*' /proc/cpuinfo
echo "bf16 instructions: $(grep -o -E 'amx_bf16|avx512_bf16' /proc/cpuinfo | sort -u | tr '\n' ' ')"
echo "== training step $(date -u +%H:%M) load $(cut -d' ' -f1 /proc/loadavg)"
for r in $(seq "$ROUNDS"); do for p in f32 bf16-mixed; do
  echo "-- round $r $p"; PRECISION=$p BIN=$BIN scripts/bench/train_step_compare.sh 1 4
done; done
cell() { # label json-on-stdin
  python3 -c "
import json, sys
c = json.load(sys.stdin)
rate = c.get('sentences_per_s') or c.get('pairs_per_s')
print(sys.argv[1], c.get('encoder') or c.get('engine'), 'per s %.2f' % rate, 'median_s %.3f' % c['median_s'],
      'rss %.0f MiB' % (c['peak_rss_bytes'] / 2**20), 'util', c.get('real_token_utilisation'), c.get('peak_isa'))" "$1"
}
for m in all-MiniLM-L6-v2:10 labse-shaped:3; do
  echo "== ${m%%:*} $(date -u +%H:%M) load $(cut -d' ' -f1 /proc/loadavg)"
  for r in $(seq "$ROUNDS"); do for dt in f32 bf16; do
    "$BIN" bench --model "fixtures-cache/${m%%:*}" --dtype $dt --limit 400 --offline --repeats "${m##*:}" --json \
      2>/dev/null | cell "round $r $dt"
  done; done
done
echo "== judge $(date -u +%H:%M) load $(cut -d' ' -f1 /proc/loadavg)"
for r in $(seq "$ROUNDS"); do for dt in f32 bf16; do
  "$BIN" bench --judge fixtures-cache/roberta-large-shaped --limit 32 --repeats 1 --json --dtype $dt --offline \
    2>/dev/null | cell "round $r $dt"
done; done
echo "== products $(date -u +%H:%M) load $(cut -d' ' -f1 /proc/loadavg)"
for s in 2912x1152x384 2912x384x1536 1536x384x2912; do
  echo "-- $s"
  GEMM_SHAPE=$s cargo test --release -q -p scorekit-kernels --lib gemm_speed -- --ignored --nocapture 2>&1 | grep round
done
