#!/usr/bin/env bash
# Load (mmap, pread + pack, tokenizer) and load -> first batch (the first 32 sentences of the
# corpus) of `scorekit bench`, N fresh processes, printed per run and as medians.
# Usage: scripts/bench/load_time.sh [MODEL_FOLDER] (default: the LaBSE-shaped folder); N=5.
set -euo pipefail
cd "$(dirname "$0")/../.."
MODEL=${1:-fixtures-cache/labse-shaped}
N=${N:-5}
cargo build --release --quiet
for i in $(seq "$N"); do
  target/release/scorekit bench --model "$MODEL" --limit 32 --repeats 1 --json --offline
done | python3 -c '
import json, statistics, sys
rows = [json.loads(l) for l in sys.stdin if l.startswith("{")]
for r in rows:
    print("load %.3f s, load to first batch %.3f s, peak RSS %.0f MiB"
          % (r["load_s"], r["first_batch_s"], r["peak_rss_bytes"] / 2**20))
print("median of %d: load %.3f s, load to first batch %.3f s"
      % (len(rows), statistics.median(r["load_s"] for r in rows),
         statistics.median(r["first_batch_s"] for r in rows)))
'
echo "uptime: $(uptime)"
