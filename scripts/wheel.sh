#!/usr/bin/env bash
# Build the `pip install scorekit` wheel (maturin, `bindings = "bin"`, pyproject.toml), install it
# into a fresh virtual environment, and run it there: `scorekit --version` (must be Cargo.toml's
# version) and a MuSE scoring run on the test data cache (muse:queries, offline), whose metrics
# must equal those of the same run by target/debug/scorekit.
#
#   scripts/wheel.sh                      # release profile: the wheel to publish (~6+ min on 2 cores)
#   WHEEL_PROFILE=dev scripts/wheel.sh    # CI: the test build's profile, so its compiled
#                                         # dependencies are reused and only scorekit links again
#
# maturin comes from PyPI (pinned below) into build/wheel-tools/. The wheel goes to
# build/wheels/<profile>/; its platform tag is the one maturin's manylinux check gives for the
# glibc symbols the binary uses (WHEEL_COMPAT=manylinux_2_28 etc. asks for a given one and fails
# if the binary needs more; an older glibc needs `--zig`, pip's ziglang, see README).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
SECONDS=0
MATURIN_VERSION=1.16.0
profile=${WHEEL_PROFILE:-release}
PY=${PYTHON:-python3}

tools=build/wheel-tools
if [ ! -x "$tools/bin/maturin" ] || ! "$tools/bin/maturin" --version | grep -qx "maturin $MATURIN_VERSION"; then
  "$PY" -m venv "$tools"
  "$tools/bin/pip" install --quiet --disable-pip-version-check "maturin==$MATURIN_VERSION"
fi

export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$root/target}
version=$(cargo metadata --format-version 1 --no-deps |
  "$PY" -c 'import json,sys; print(next(p["version"] for p in json.load(sys.stdin)["packages"] if p["name"] == "scorekit"))')

out=build/wheels/$profile
rm -rf "$out"
compat=()
[ -z "${WHEEL_COMPAT:-}" ] || compat=(--compatibility "$WHEEL_COMPAT")
t0=$SECONDS
"$tools/bin/maturin" build --quiet --profile "$profile" "${compat[@]}" --out "$out" >&2
build_s=$((SECONDS - t0))
wheel=$(ls "$out"/scorekit-*.whl)
[ "$(ls "$out"/*.whl | wc -l)" -eq 1 ] || { echo "wheel: more than one wheel in $out" >&2; exit 1; }
case $(basename "$wheel") in
  "scorekit-$version-py3-none-"*) ;;
  *) echo "wheel: $(basename "$wheel") does not carry version $version" >&2; exit 1 ;;
esac

venv=build/wheel-venv
rm -rf "$venv"
"$PY" -m venv "$venv"
t0=$EPOCHREALTIME
"$venv/bin/pip" install --quiet --disable-pip-version-check --no-index --no-deps "$wheel"
install_s=$(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }')

got=$("$venv/bin/scorekit" --version)
[ "$got" = "scorekit $version" ] || { echo "wheel: --version says '$got', not 'scorekit $version'" >&2; exit 1; }

# One small scoring run from the venv, against the debug build's: the same metrics.
export SCOREKIT_TEST_DATA=${SCOREKIT_TEST_DATA:-$root/target/test-data}
dbg=$CARGO_TARGET_DIR/debug/scorekit
[ -x "$dbg" ] || cargo build --quiet --bin scorekit
scripts/test-data.sh "$dbg"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for who in wheel debug; do
  bin=$dbg
  [ $who = debug ] || bin=$venv/bin/scorekit
  SCOREKIT_DATA=$SCOREKIT_TEST_DATA "$bin" muse --queries muse:queries \
    --plans tests/data/muse/hugginggpt.jsonl --offline --quiet --out "$tmp/$who" >/dev/null
done
"$PY" - "$tmp/wheel/metrics.json" "$tmp/debug/metrics.json" <<'PY'
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
assert a["metrics"] == b["metrics"], "the wheel's MuSE metrics differ from the debug build's"
assert a["datasets"][0]["name"] == "muse:queries", a.get("datasets")
print("wheel: muse on muse:queries:", json.dumps({k: a["metrics"][k] for k in list(a["metrics"])[:3]}))
PY

size=$(stat -c %s "$wheel")
echo "wheel: $(basename "$wheel") $((size / 1024)) KiB (profile $profile, built in ${build_s}s)"
echo "wheel: pip install into a fresh venv took ${install_s}s; scorekit --version: $got"
echo "wheel OK in ${SECONDS}s"
