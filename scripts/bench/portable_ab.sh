#!/usr/bin/env bash
# The portable build (zig, glibc 2.17 floor) against the build of the machine's own toolchain, on
# the CPU benchmarks: embedding (all-MiniLM-L6-v2, real weights, Possible Stories endings) and
# judge scoring (RoBERTa-large-shaped multiple-choice judge, dev questions x 4 options), each a
# `scorekit bench --json` run as a whole process, the two binaries alternated A B A B ... so drift
# of the shared machine hits both alike. Prints, per benchmark and binary, the median in-process
# rate (sentences or pairs per second), the whole process's CPU seconds (user + sys) and wall
# seconds (/usr/bin/time), and the median of the per-round ratios A/B of rate and CPU seconds
# (on a loaded machine CPU seconds are the steadier figure).
#
#   scripts/bench/portable_ab.sh PORTABLE NATIVE
#   e.g. scripts/bench/portable_ab.sh target/x86_64-unknown-linux-gnu/release/scorekit target/release/scorekit
#
# Env: ROUNDS (5), EMBED_LIMIT (600 sentences), JUDGE_LIMIT (4 questions), THREADS (2, RAYON_NUM_THREADS).
# Needs fixtures-cache/all-MiniLM-L6-v2 (scripts/setup-test-fixtures.sh) and
# fixtures-cache/roberta-large-shaped (scripts/bench/make_judge_shaped.py; torch, dev-time).
# Results: BENCHMARKS.md §12.
set -euo pipefail
cd "$(dirname "$0")/../.."
[ $# -eq 2 ] || { echo "usage: $0 PORTABLE NATIVE" >&2; exit 2; }
A=$1 B=$2
ROUNDS=${ROUNDS:-5}
export RAYON_NUM_THREADS=${THREADS:-2}
DATA=${SHARED_DATA:-../shared/data}/possible-stories
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

embed=(bench --model fixtures-cache/all-MiniLM-L6-v2 --input "$DATA/endings.jsonl"
  --limit "${EMBED_LIMIT:-600}" --device cpu --repeats 3 --offline --json)
judge=(bench --judge fixtures-cache/roberta-large-shaped --input "$DATA/dev.jsonl"
  --limit "${JUDGE_LIMIT:-4}" --device cpu --repeats 1 --offline --json)

echo "A: $A ($("$A" --version))"
echo "B: $B ($("$B" --version))"
echo "rounds: $ROUNDS, threads: $RAYON_NUM_THREADS, uptime: $(uptime)"
for name in embed judge; do
  declare -n args=$name
  for r in $(seq 1 "$ROUNDS"); do
    for who in A B; do
      bin=$A
      [ $who = A ] || bin=$B
      /usr/bin/time -f "%e %U %S" -o "$work/$name.$who.$r.time" "$bin" "${args[@]}" >"$work/$name.$who.$r.json"
    done
  done
done
python3 - "$work" "$ROUNDS" <<'PY'
import json, statistics, sys
work, rounds = sys.argv[1], int(sys.argv[2])
for name in ("embed", "judge"):
    rate, wall, cpu = ({"A": [], "B": []} for _ in range(3))
    ratio, cpu_ratio = [], []
    for r in range(1, rounds + 1):
        for who in "AB":
            d = json.load(open(f"{work}/{name}.{who}.{r}.json"))
            rate[who].append(d["sentences_per_s"] if "sentences_per_s" in d else d["pairs_per_s"])
            e, u, s = (float(x) for x in open(f"{work}/{name}.{who}.{r}.time").read().split()[-3:])
            wall[who].append(e)
            cpu[who].append(u + s)
        ratio.append(rate["A"][-1] / rate["B"][-1])
        cpu_ratio.append(cpu["A"][-1] / cpu["B"][-1])
    unit = "sentences/s" if name == "embed" else "pairs/s"
    for who in "AB":
        print(f"{name} {who}: {unit} median {statistics.median(rate[who]):.2f} "
              f"(min {min(rate[who]):.2f}, max {max(rate[who]):.2f}); "
              f"CPU s median {statistics.median(cpu[who]):.2f}; wall s median {statistics.median(wall[who]):.2f}")
    print(f"{name}: A/B per round, rate median {statistics.median(ratio):.3f} "
          f"(min {min(ratio):.3f}, max {max(ratio):.3f}); CPU s median {statistics.median(cpu_ratio):.3f} "
          f"(min {min(cpu_ratio):.3f}, max {max(cpu_ratio):.3f})")
PY
