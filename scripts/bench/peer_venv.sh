#!/usr/bin/env bash
# The Python peers of the decoder-judge benchmark (BENCHMARKS.md §10.x, dev-time only): a venv
# with llama-cpp-python compiled here from its PyPI sdist (llama.cpp's CPU backend, native ISA),
# its vendored llama.cpp kept beside it for convert_hf_to_gguf.py and gguf-py, and torch +
# transformers for the PyTorch peer.
#
# Usage: scripts/bench/peer_venv.sh [VENV_DIR]            (default build/peer-venv)
#   REUSE_TORCH_FROM=/path/to/venv  do not install torch/transformers again: a .pth file puts that
#                                   venv's site-packages (read-only) after this venv's own, so the
#                                   5 GB torch 2.5.1 wheel set is not downloaded twice. Without it
#                                   the venv is complete on its own (torch from PyPI).
#   JOBS=N                          parallel compile jobs (default 2: the machine's cores)
#
# CMAKE_ARGS set for the llama.cpp build (what llama.cpp itself does by default on a CPU build:
# GGML_NATIVE=ON compiles with -march=native, so this CPU's AVX-512 / AVX512-BF16 / VNNI / AMX
# paths are used where ggml has them; no GPU backend, no BLAS, no tests or examples):
#   -DGGML_NATIVE=ON -DGGML_CUDA=OFF -DGGML_METAL=OFF -DGGML_VULKAN=OFF -DGGML_BLAS=OFF
#   -DGGML_OPENMP=ON -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF
# Took 24:45 here with REUSE_TORCH_FROM (the llama.cpp compile, 193 steps, on 2 cores shared with
# other builds; load average ~8). From scratch add torch's PyPI wheels (with its CUDA dependencies,
# ~5 GB on disk).
set -euo pipefail
cd "$(dirname "$0")/../.."
VENV=${1:-build/peer-venv}
LLAMA_CPP_PYTHON=0.3.36
GGUF=0.19.0
NUMPY=2.4.6
TORCH=2.5.1
TRANSFORMERS=4.57.1
TOKENIZERS=0.22.2
SAFETENSORS=0.8.0
# sentencepiece: convert_hf_to_gguf.py imports it at module level
JOBS=${JOBS:-2}

python3 -m venv "$VENV"
"$VENV/bin/pip" install --quiet --upgrade pip
"$VENV/bin/pip" install --quiet "numpy==$NUMPY" "gguf==$GGUF" "safetensors==$SAFETENSORS" \
    "sentencepiece==0.2.3"

if [[ -n "${REUSE_TORCH_FROM:-}" ]]; then
    other=$(echo "$REUSE_TORCH_FROM"/lib/python3*/site-packages)
    own=$(echo "$VENV"/lib/python3*/site-packages)
    # zz-: .pth files are read in name order; the other venv's path goes last in sys.path
    echo "$(cd "$other" && pwd)" > "$own/zz-reuse-torch.pth"
    "$VENV/bin/python" -c "import torch, transformers; assert torch.__version__.startswith('$TORCH'), torch.__version__; assert transformers.__version__ == '$TRANSFORMERS', transformers.__version__"
else
    "$VENV/bin/pip" install --quiet "torch==$TORCH" "transformers==$TRANSFORMERS" \
        "tokenizers==$TOKENIZERS"
fi

# The sdist is kept: its vendored/llama.cpp has convert_hf_to_gguf.py and gguf-py matching the
# compiled library.
src="$VENV/src"
mkdir -p "$src"
"$VENV/bin/pip" download --quiet --no-deps --no-binary llama-cpp-python \
    "llama-cpp-python==$LLAMA_CPP_PYTHON" -d "$src"
tar -xzf "$src/llama_cpp_python-$LLAMA_CPP_PYTHON.tar.gz" -C "$src"
export CMAKE_ARGS="-DGGML_NATIVE=ON -DGGML_CUDA=OFF -DGGML_METAL=OFF -DGGML_VULKAN=OFF -DGGML_BLAS=OFF -DGGML_OPENMP=ON -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF"
export CMAKE_BUILD_PARALLEL_LEVEL=$JOBS
"$VENV/bin/pip" install --verbose --no-cache-dir "$src/llama_cpp_python-$LLAMA_CPP_PYTHON.tar.gz"
ln -sfn "llama_cpp_python-$LLAMA_CPP_PYTHON/vendor/llama.cpp" "$src/llama.cpp"
"$VENV/bin/python" -c "import llama_cpp; print('llama_cpp', llama_cpp.__version__); print(llama_cpp.llama_print_system_info().decode())"
echo "peer venv ready: $VENV (convert script: $src/llama.cpp/convert_hf_to_gguf.py)"
