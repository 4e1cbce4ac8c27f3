#!/usr/bin/env bash
# Check that `scorekit mint` writes byte-identical results to a saved reference run, and that
# three shards merged equal the single run.
#
#   mint_identity.sh save  REF_DIR OUTPUTS [mint flags...]   # with the reference binary
#   mint_identity.sh check REF_DIR OUTPUTS [mint flags...]   # with the binary under test
#
# SCOREKIT names the binary (default target/release/scorekit under $CARGO_TARGET_DIR or the
# repository). Compared: items.jsonl, sr.csv, tables.md, tables.tex, sr_curves.svg,
# recheck.csv (with --recheck) and metrics.json, byte for byte; report.md without its last line
# (which says how long the run took). `check` also runs the 3 shards + merge and compares them
# with the single run the same way. Exit 0 when everything is identical, 1 otherwise.
set -euo pipefail
mode=${1:?save|check}
ref=${2:?REF_DIR}
outputs=${3:?OUTPUTS}
shift 3
cd "$(dirname "$0")/../.."
bin=${SCOREKIT:-${CARGO_TARGET_DIR:-target}/release/scorekit}
files=(items.jsonl sr.csv tables.md tables.tex sr_curves.svg metrics.json)
for f in "$@"; do
  [ "$f" = --recheck ] && files+=(recheck.csv)
done

same() { # A B: the result files of two output folders are identical
  local a=$1 b=$2 bad=0
  for f in "${files[@]}"; do
    if ! cmp -s "$a/$f" "$b/$f"; then
      echo "DIFFERENT: $f ($a vs $b)"
      bad=1
    fi
  done
  if ! cmp -s <(sed '$d' "$a/report.md") <(sed '$d' "$b/report.md"); then
    echo "DIFFERENT: report.md ($a vs $b)"
    bad=1
  fi
  return $bad
}

case $mode in
  save)
    rm -rf "$ref"
    "$bin" mint --outputs "$outputs" --out "$ref" --quiet "$@" >/dev/null
    echo "saved $ref"
    ;;
  check)
    tmp=$(mktemp -d)
    trap 'rm -rf "$tmp"' EXIT
    "$bin" mint --outputs "$outputs" --out "$tmp/single" --quiet "$@" >/dev/null
    status=0
    same "$ref" "$tmp/single" || status=1
    for i in 0 1 2; do
      "$bin" mint --outputs "$outputs" --out "$tmp/s$i" --quiet --shard "$i/3" "$@" >/dev/null
    done
    "$bin" merge --parts "$tmp/s0" "$tmp/s1" "$tmp/s2" --out "$tmp/merged" >/dev/null
    # A merge names its settings differently (merged_shards): compare the tables and items,
    # and metrics.json without the settings.
    files_merge=("${files[@]/metrics.json/}")
    for f in "${files_merge[@]}"; do
      [ -n "$f" ] || continue
      cmp -s "$tmp/single/$f" "$tmp/merged/$f" || { echo "DIFFERENT after merge: $f"; status=1; }
    done
    py=$(command -v python3)
    "$py" - "$tmp/single/metrics.json" "$tmp/merged/metrics.json" <<'EOF' || status=1
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
for d in (a, b):
    d.pop("settings", None)
if a != b:
    sys.exit("DIFFERENT after merge: metrics.json (besides settings)")
EOF
    if [ $status = 0 ]; then
      echo "identical: ${files[*]} report.md; 3 shards + merge equal the single run"
    fi
    exit $status
    ;;
  *) echo "usage: $0 save|check REF_DIR OUTPUTS [mint flags...]" >&2; exit 2 ;;
esac
