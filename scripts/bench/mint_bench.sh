#!/usr/bin/env bash
# scorekit mint vs the plain Python pass (scripts/bench/mint_python_baseline.py) on one
# archive, side by side: ROUNDS rounds of A B (after one warm-up of each, so the page cache is
# warm), wall time and peak RSS of each run from /usr/bin/time -v; prints every run and the
# medians (wall and CPU), and the ratios of the medians.
#
#   mint_bench.sh ARCHIVE [extra scorekit mint flags, e.g. --recheck]
#
# Env: ROUNDS (5), SCOREKIT (default $CARGO_TARGET_DIR/release/scorekit or target/release),
# BEFORE (optional: an older scorekit binary, run in each round too, labelled "before"),
# PYTHON (python3), OUT (scratch folder for --out, default /tmp/mint-bench-out).
# Make archives with scripts/bench/make_mint_archive.py (outside the repository). Method and
# results: BENCHMARKS.md, section "MINT at disk speed".
set -euo pipefail
archive=${1:?ARCHIVE}
shift
cd "$(dirname "$0")/../.."
bin=${SCOREKIT:-${CARGO_TARGET_DIR:-target}/release/scorekit}
py=${PYTHON:-python3}
rounds=${ROUNDS:-5}
out=${OUT:-/tmp/mint-bench-out}
log=$(mktemp)
trap 'rm -f "$log"' EXIT

measure() { # label command...: prints "label wall_s rss_mb cpu_s" (cpu: user + sys)
  local label=$1
  shift
  /usr/bin/time -v -o "$log" "$@" >/dev/null 2>&1 || { echo "$label failed" >&2; cat "$log" >&2; exit 1; }
  awk -v l="$label" '
    /Elapsed \(wall clock\)/ { n = split($NF, p, ":"); w = (n == 3) ? p[1] * 3600 + p[2] * 60 + p[3] : p[1] * 60 + p[2] }
    /Maximum resident set size/ { r = $NF / 1024 }
    /User time \(seconds\)|System time \(seconds\)/ { c += $NF }
    END { printf "%s %.2f %.1f %.2f\n", l, w, r, c }' "$log"
}

sk=("$bin" mint --outputs "$archive" --out "$out" --force --quiet "$@")
pyc=("$py" scripts/bench/mint_python_baseline.py "$archive")
echo "archive: $archive ($(du -sh --apparent-size "$archive" | cut -f1)), $(nproc) cores, $(uptime | sed 's/.*load/load/')"
echo "scorekit: ${sk[*]}"
echo "python:   ${pyc[*]}"
measure warmup-scorekit "${sk[@]}" >/dev/null
measure warmup-python "${pyc[@]}" >/dev/null
before=${BEFORE:-}
results=$(for r in $(seq "$rounds"); do
  measure scorekit "${sk[@]}"
  measure python "${pyc[@]}"
  if [ -n "$before" ]; then
    measure before "$before" "${sk[@]:1}"
  fi
done)
echo "$results"
echo "after: $(uptime | sed 's/.*load/load/')"
echo "$results" | awk '
  { w[$1] = w[$1] " " $2; m[$1] = (m[$1] > $3) ? m[$1] : $3; c[$1] = c[$1] " " $4 }
  function median(s,   a, n, i, j, t) {
    n = split(s, a, " ")
    for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
    return (n % 2) ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
  }
  END {
    ms = median(w["scorekit"]); mp = median(w["python"])
    printf "median wall: scorekit %.2f s, python %.2f s, python/scorekit %.1fx\n", ms, mp, mp / ms
    cs = median(c["scorekit"]); cp = median(c["python"])
    printf "median CPU (user+sys): scorekit %.2f s, python %.2f s, python/scorekit %.1fx\n", cs, cp, cp / cs
    printf "max peak RSS: scorekit %.1f MB, python %.1f MB\n", m["scorekit"], m["python"]
    if ("before" in w) {
      mb = median(w["before"]); cb = median(c["before"])
      printf "before: median wall %.2f s, CPU %.2f s, max peak RSS %.1f MB; before/scorekit wall %.1fx\n", mb, cb, m["before"], mb / ms
    }
  }'
