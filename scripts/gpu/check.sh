#!/usr/bin/env bash
# The GPU check: run on the H200 machine (PyTorch + sentence-transformers there, no Rust, no network)
# from the repository root, with build/gpu carried (made here by scripts/gpu/build.sh):
#
#   scripts/gpu/check.sh                 # parity, throughput, judge shape; table last; logs in $OUT
#   scripts/gpu/check.sh --device cpu    # dry run with small shapes and the CPU build (any machine)
#
# Other flags go to gpu_check.py (--help). Exit code: 0 all ran and passed, 1 a parity FAIL or an ERROR,
# 3 the binary cannot start (missing libraries). See docs/gpu.md.
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT="${OUT:-build/gpu-check-out}"
mkdir -p "$OUT"
export OUT PYTHONUNBUFFERED=1

device=cuda
bin=""
for ((i = 1; i <= $#; i++)); do
  case "${!i}" in
    --device) j=$((i + 1)); device="${!j}" ;;
    --device=*) device="${!i#--device=}" ;;
    --bin) j=$((i + 1)); bin="${!j}" ;;
    --bin=*) bin="${!i#--bin=}" ;;
  esac
done
PY="${PYTHON:-python3}"

if [ -z "$bin" ]; then
  if [ "$device" = cpu ]; then
    # The CUDA binary cannot start without the NVIDIA driver; a dry run uses the CPU build.
    for c in build/gpu/scorekit-cpu target/release/scorekit target/debug/scorekit; do
      [ -x "$c" ] && { bin="$c"; break; }
    done
  else
    bin=build/gpu/scorekit
  fi
  set -- "$@" --bin "${bin:-build/gpu/scorekit}"
fi

{
  echo "== $(date -u '+%F %T') scorekit GPU check, device $device, binary $bin"
  uname -a
  command -v nvidia-smi >/dev/null && nvidia-smi
} >"$OUT/env.txt" 2>&1

if [ "$device" != cpu ]; then
  # CUDA 13 libraries of the machine's PyTorch install (cublas, cublasLt, curand, cudart, nvrtc), then
  # the driver's folders (libcuda.so.1 is usually in the loader cache already).
  libdirs="$("$PY" - <<'PY'
import glob, os, torch
roots = {os.path.dirname(os.path.dirname(torch.__file__))}
dirs = [os.path.join(os.path.dirname(torch.__file__), "lib")]
for r in roots:
    dirs += sorted(glob.glob(os.path.join(r, "nvidia", "*", "lib")))
print(":".join(d for d in dirs if os.path.isdir(d)))
PY
)"
  for d in /usr/local/nvidia/lib64 /usr/local/nvidia/lib /usr/lib/x86_64-linux-gnu; do
    [ -d "$d" ] && libdirs="$libdirs:$d"
  done
  export LD_LIBRARY_PATH="$libdirs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  echo "LD_LIBRARY_PATH=$LD_LIBRARY_PATH" >>"$OUT/env.txt"
  if [ ! -x "$bin" ]; then
    echo "error: no $bin: run scripts/gpu/build.sh here first and carry build/gpu" | tee -a "$OUT/env.txt"
    exit 3
  fi
  ldd "$bin" >>"$OUT/env.txt" 2>&1
  if ldd "$bin" | grep -q 'not found'; then
    echo "error: $bin cannot find these libraries (see $OUT/env.txt):" >&2
    ldd "$bin" | grep 'not found' >&2
    exit 3
  fi
fi

# One bounded run: the check sizes itself to a few minutes on an H200; this is the backstop.
timeout "${CHECK_TIMEOUT:-480}" "$PY" scripts/gpu/gpu_check.py "$@" 2>&1 | tee "$OUT/check-output.txt"
rc=${PIPESTATUS[0]}
[ "$rc" = 124 ] && echo "error: gpu_check.py ran past ${CHECK_TIMEOUT:-480} s; partial logs in $OUT" >&2
exit "$rc"
