#!/usr/bin/env bash
# Check that scorekit builds for aarch64 (Apple Silicon with Metal, ARM servers), where the x86-64
# kernels of crates/kernels/src/ are compiled out and candle's layers run. Needs the Rust std for
# aarch64-unknown-linux-gnu (rustup) and a C cross compiler for ring (Debian:
# gcc-aarch64-linux-gnu); it installs both when it can. `cargo clippy`, not a full build: the
# linker would need an aarch64 sysroot.
set -euo pipefail
cd "$(dirname "$0")/.."
rustup target list --installed | grep -qx aarch64-unknown-linux-gnu ||
  rustup target add aarch64-unknown-linux-gnu
command -v aarch64-linux-gnu-gcc >/dev/null ||
  apt-get install -y -q gcc-aarch64-linux-gnu
CC_aarch64_unknown_linux_gnu=aarch64-linux-gnu-gcc \
  cargo clippy --target aarch64-unknown-linux-gnu --all-targets \
  --target-dir "${SCOREKIT_ARM_TARGET:-target/aarch64-check}" -- -D warnings
echo "aarch64: builds (clippy clean)"
