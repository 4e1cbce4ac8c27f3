#!/usr/bin/env bash
# CI hook (.ci/run): prove that `--features cuda` type-checks, on a machine with no GPU and no toolkit.
# Installs PyPI nvcc (CUDA 13.0.x) into build/cuda-venv, then `cargo check --release --features cuda`
# into build/target-cuda. Idempotent: a rerun skips pip and only re-checks what changed.
# --release so that build.sh reuses the kernels nvcc compiled here (same profile, same target dir).
set -euo pipefail
# shellcheck source=env.sh
source "$(dirname "$0")/env.sh"
cd "$SCOREKIT_ROOT"

t_all=$(_t0)
cuda_venv_install "${CUDA_COMPILE_PKGS[@]}"
cuda_env
echo "nvcc: $(nvcc --version | grep -o 'release [0-9.]*')  CUDA_HOME=$CUDA_HOME"

t=$(_t0)
nice -n "${SCOREKIT_NICE:-10}" cargo check --release --features cuda --all-targets
echo "cargo check --release --features cuda: $(_took "$t")"
echo "check-cuda-compiles: OK in $(_took "$t_all")"
