# shellcheck shell=bash
# The pinned build tools from PyPI, in one venv (build/wheel-tools, or $SCOREKIT_BUILD_TOOLS):
# maturin (the wheel), ziglang (zig as the C compiler and linker, with glibc 2.17's symbol
# versions) and cargo-zigbuild (`cargo zigbuild`: cargo with zig as the linker, for the CUDA
# build). Sourced by scripts/wheel.sh and scripts/gpu/build.sh; not meant to be run on its own.
#
#   build_tools_install   make or update the venv (a rerun with every pin in place does nothing)
#   build_tools_env       put the venv's bin/ first on PATH, so `zig` (ziglang's python-zig
#                         shim), `maturin` and `cargo-zigbuild` are found

MATURIN_VERSION=1.16.0
ZIGLANG_VERSION=0.17.0
CARGO_ZIGBUILD_VERSION=0.24.0
BUILD_TOOLS=${SCOREKIT_BUILD_TOOLS:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/build/wheel-tools}

build_tools_install() {
  local pins=("maturin==$MATURIN_VERSION" "ziglang==$ZIGLANG_VERSION" "cargo-zigbuild==$CARGO_ZIGBUILD_VERSION")
  local stamp="$BUILD_TOOLS/.scorekit-pins"
  if [ -x "$BUILD_TOOLS/bin/maturin" ] && [ -f "$stamp" ] && [ "$(cat "$stamp")" = "${pins[*]}" ]; then
    return 0
  fi
  "${PYTHON:-python3}" -m venv "$BUILD_TOOLS"
  "$BUILD_TOOLS/bin/pip" install --quiet --disable-pip-version-check "${pins[@]}"
  echo "${pins[*]}" >"$stamp"
}

build_tools_env() {
  export PATH="$BUILD_TOOLS/bin:$PATH"
  # cargo-zigbuild and maturin --zig look for `zig` on PATH, else `python3 -m ziglang`; the venv's
  # python3 is first on PATH now, so both find ziglang's zig.
}
