#!/usr/bin/env bash
# Build the `pip install scorekit` wheel (maturin, `bindings = "bin"`, pyproject.toml) for a glibc
# 2.17 floor (manylinux2014_x86_64: CentOS 7, Amazon Linux 2, RHEL 8, Ubuntu 20.04 and newer) with
# zig as the C compiler and linker; check the binary's symbol versions (scripts/check-glibc-floor.sh);
# pack the same binary as the release tarball (build/dist/scorekit-<version>-x86_64-linux.tar.gz and
# its .sha256); install the wheel into a fresh virtual environment and run it there: `scorekit
# --version` (Cargo.toml's version), `scorekit doctor --json`, and a MuSE scoring run on the test
# data cache (muse:queries, offline), whose metrics must equal those of the same run by
# target/debug/scorekit.
#
#   scripts/wheel.sh                      # release profile: the wheel and tarball to publish
#   WHEEL_PROFILE=dev scripts/wheel.sh    # CI: the test build's profile (dependencies at opt-level 3)
#
# maturin, ziglang and cargo-zigbuild come from PyPI, pinned, into build/wheel-tools/
# (scripts/build-tools.sh). The target is x86_64-unknown-linux-gnu linked against zig's glibc 2.17
# stubs (maturin --zig --compatibility manylinux2014), so its artifacts live in
# $CARGO_TARGET_DIR/x86_64-unknown-linux-gnu/<profile>/, apart from the native build's: the first
# build there compiles every dependency. WHEEL_COMPAT=manylinux_2_28 etc. asks for another tag (the
# floor check then does not run). The wheel goes to build/wheels/<profile>/.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
SECONDS=0
profile=${WHEEL_PROFILE:-release}
PY=${PYTHON:-python3}
# shellcheck source=build-tools.sh
source scripts/build-tools.sh
build_tools_install
build_tools_env
tools=$BUILD_TOOLS

export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$root/target}
version=$(cargo metadata --format-version 1 --no-deps |
  "$PY" -c 'import json,sys; print(next(p["version"] for p in json.load(sys.stdin)["packages"] if p["name"] == "scorekit"))')

out=build/wheels/$profile
rm -rf "$out"
compat=${WHEEL_COMPAT:-manylinux2014}
t0=$SECONDS
# SCOREKIT_GIT_COMMIT and SCOREKIT_GLIBC_FLOOR: the commit and glibc floor `scorekit doctor`
# names (read with option_env! at build time; a build without them says "unknown").
floor=
[ -n "${WHEEL_COMPAT:-}" ] || floor=2.17
SCOREKIT_GLIBC_FLOOR=$floor SCOREKIT_GIT_COMMIT=${SCOREKIT_GIT_COMMIT:-$(git rev-parse --short=12 HEAD 2>/dev/null || true)} \
  nice -n "${SCOREKIT_NICE:-10}" "$tools/bin/maturin" build --quiet --profile "$profile" --zig \
  --target x86_64-unknown-linux-gnu --compatibility "$compat" --out "$out" >&2
build_s=$((SECONDS - t0))
wheel=$(ls "$out"/scorekit-*.whl)
[ "$(ls "$out"/*.whl | wc -l)" -eq 1 ] || { echo "wheel: more than one wheel in $out" >&2; exit 1; }
case $(basename "$wheel") in
  "scorekit-$version-py3-none-"*) ;;
  *) echo "wheel: $(basename "$wheel") does not carry version $version" >&2; exit 1 ;;
esac
if [ -z "${WHEEL_COMPAT:-}" ]; then
  case $(basename "$wheel") in
    *manylinux2014_x86_64*|*manylinux_2_17_x86_64*) ;;
    *) echo "wheel: $(basename "$wheel") is not tagged manylinux2014_x86_64" >&2; exit 1 ;;
  esac
fi

# The binary inside the wheel: its glibc floor, then the same bytes in the release tarball.
dist=build/dist
rm -rf "$dist/unpacked"
mkdir -p "$dist/unpacked"
"$PY" -c '
import sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as z:
    names = [n for n in z.namelist() if n.endswith(".data/scripts/scorekit")]
    assert len(names) == 1, names
    open(sys.argv[2], "wb").write(z.read(names[0]))
' "$wheel" "$dist/unpacked/scorekit"
chmod 755 "$dist/unpacked/scorekit"
if [ -z "${WHEEL_COMPAT:-}" ]; then
  scripts/check-glibc-floor.sh "$dist/unpacked/scorekit"
fi
name=scorekit-$version-x86_64-linux
rm -rf "${dist:?}/$name" "$dist/$name.tar.gz" "$dist/$name.tar.gz.sha256"
mkdir -p "$dist/$name"
cp "$dist/unpacked/scorekit" README.md "$dist/$name/"
# The same bytes for the same binary: fixed order, owner and times.
tar --sort=name --owner=0 --group=0 --numeric-owner --mtime=@0 -C "$dist" -cf - "$name" |
  gzip -n >"$dist/$name.tar.gz"
(cd "$dist" && sha256sum "$name.tar.gz" >"$name.tar.gz.sha256")
rm -rf "${dist:?}/$name" "$dist/unpacked"

venv=build/wheel-venv
rm -rf "$venv"
"$PY" -m venv "$venv"
t0=$EPOCHREALTIME
"$venv/bin/pip" install --quiet --disable-pip-version-check --no-index --no-deps "$wheel"
install_s=$(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }')

got=$("$venv/bin/scorekit" --version)
case $got in
  "scorekit $version" | "scorekit $version ("*")") ;;
  *) echo "wheel: --version says '$got', not 'scorekit $version'" >&2; exit 1 ;;
esac
"$venv/bin/scorekit" doctor --json >"$out/doctor.json"
"$PY" -c '
import json, sys
d = json.load(open(sys.argv[1]))
assert d["version"] == sys.argv[2], d["version"]
print("wheel: doctor --json: glibc", d["system"]["glibc"], "| --device auto:", d["gpu"]["auto_device"])
' "$out/doctor.json" "$version"

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
echo "tarball: $dist/$name.tar.gz sha256 $(cut -d' ' -f1 "$dist/$name.tar.gz.sha256")"
echo "wheel: pip install into a fresh venv took ${install_s}s; scorekit --version: $got"
echo "wheel OK in ${SECONDS}s"
