# shellcheck shell=bash
# Shared setup for building scorekit's `cuda` feature on a machine without GPU or CUDA toolkit.
# Sourced by check-cuda-compiles.sh and build.sh; not meant to be run on its own.
#
# Route (../shared/specs/models-and-runtime.md §7): NVIDIA's nvcc and CUDA libraries from PyPI, pinned
# to CUDA 13.0.x because the H200 machines run driver 580 (CUDA 13.0) and newer PTX would not load
# there. Everything lands under build/ (ignored): a venv, a link folder, and a target dir of its own
# so the CPU build in target/ is never touched.

SCOREKIT_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
# Override with SCOREKIT_CUDA_BUILD=/some/cache to keep the venv and target dir across fresh clones.
CUDA_BUILD="${SCOREKIT_CUDA_BUILD:-$SCOREKIT_ROOT/build}"
CUDA_VENV="$CUDA_BUILD/cuda-venv"

# Enough to compile candle-kernels (PTX + libmoe.a) and type-check: compiler, front-end, headers.
CUDA_COMPILE_PKGS=(
  "nvidia-cuda-nvcc==13.0.88"
  "nvidia-cuda-crt==13.0.88"
  "nvidia-nvvm==13.0.88"
  "nvidia-cuda-runtime==13.0.96"
  "nvidia-cuda-cccl==13.0.85"
)
# Needed only to link the binary (cudarc `dynamic-linking`): the libraries the binary links against.
# The driver's libcuda is not on PyPI: build.sh generates a stub for it.
CUDA_LINK_PKGS=(
  "nvidia-cublas==13.0.2.14"
  "nvidia-curand==10.4.0.35"
  "nvidia-cuda-nvrtc==13.0.88"
)

# Seconds since the epoch, and a "took N s" printer.
_t0() { date +%s; }
_took() { echo "$(( $(date +%s) - $1 )) s"; }

# cuda_venv_install PKG...: make the venv and install the pinned wheels, once. A stamp file lists the
# pins installed; a rerun whose pins are all there already does nothing (seconds, no network).
cuda_venv_install() {
  local stamp="$CUDA_VENV/.scorekit-pins" missing=() p
  for p in "$@"; do
    if [ ! -f "$stamp" ] || ! grep -qxF "$p" "$stamp"; then missing+=("$p"); fi
  done
  if [ ${#missing[@]} -eq 0 ]; then
    echo "cuda venv: up to date ($CUDA_VENV)"
    return 0
  fi
  local t; t=$(_t0)
  if [ ! -x "$CUDA_VENV/bin/python" ]; then
    python3 -m venv "$CUDA_VENV"
  fi
  # --no-deps: every package is named and pinned here; nothing else is wanted in this venv.
  "$CUDA_VENV/bin/python" -m pip install -q --disable-pip-version-check --no-deps --only-binary=:all: "${missing[@]}"
  printf '%s\n' "${missing[@]}" >>"$stamp"
  echo "cuda venv: installed ${#missing[@]} wheels in $(_took "$t")"
}

# cuda_env: export what cudarc, cudaforge and candle-kernels read. Call after cuda_venv_install.
cuda_env() {
  local sp
  sp="$(ls -d "$CUDA_VENV"/lib/python3*/site-packages | head -n1)"
  export CUDA_HOME="$sp/nvidia/cu13"
  if [ ! -x "$CUDA_HOME/bin/nvcc" ]; then
    echo "error: no nvcc at $CUDA_HOME/bin/nvcc (PyPI layout changed?)" >&2
    return 1
  fi
  export PATH="$CUDA_HOME/bin:$PATH"
  # cudaforge (candle-kernels' build script) builds for this compute capability: 90 = H100/H200 (sm_90a,
  # Hopper only). Another GPU needs its own build: SCOREKIT_CUDA_COMPUTE_CAP=80 (A100), 89 (L4, 4090), ...
  export CUDA_COMPUTE_CAP="${SCOREKIT_CUDA_COMPUTE_CAP:-90}"
  # cudarc picks its bindings from this instead of parsing `nvcc --version` (same answer, but explicit).
  export CUDARC_CUDA_VERSION=13000
  # candle-kernels compiles its .cu files single-threaded unless told otherwise (cudaforge parallel.rs).
  export CUDAFORGE_THREADS="${CUDAFORGE_THREADS:-$(nproc)}"
  # One target dir for check and build, separate from the CPU build's target/: both use the release
  # profile so the nvcc output of candle-kernels' build script is made once and shared.
  export CARGO_TARGET_DIR="$CUDA_BUILD/target-cuda"
}
