#!/usr/bin/env python3
"""GGUF copies of a decoder judge folder for the llama.cpp peer of scripts/bench/decoder_peers.py
(dev-time only; BENCHMARKS.md §10).

  MODEL_DIR.OUTTYPE.gguf  llama.cpp's own converter (convert_hf_to_gguf.py of the llama.cpp vendored
                          in the llama-cpp-python sdist that scripts/bench/peer_venv.sh compiled,
                          with its gguf-py), --outtype bf16 (or f16)
  MODEL_DIR.q8_0.gguf     that file quantised by the binding's llama_model_quantize
                          (LLAMA_FTYPE_MOSTLY_Q8_0, 2 threads: every matrix, token embeddings and
                          output head included, as llama-quantize Q8_0 does)

One change to the converter, made here and not in its file: the fixture tokenizers of
tests/data/decoder are BPEs trained on Possible Stories prompts, whose pre-tokenizer hash the
converter does not know, so its check answers with the family's real pre-tokenizer name (qwen2 /
llama-bpe). The tokenizer stored in the GGUF is not used by the benchmark: the llama.cpp peer is
given the token ids that transformers' tokenizer made for the other peers.

Run: build/peer-venv/bin/python scripts/bench/decoder_gguf.py MODEL_DIR [bf16|f16] [--venv build/peer-venv]
"""
import argparse
import json
import os
import runpy
import sys
import time

PRE = {"qwen2": "qwen2", "llama": "llama-bpe"}


def convert(model_dir, outtype, llama_cpp_dir):
    out = f"{model_dir.rstrip('/')}.{outtype}.gguf"
    model_type = json.load(open(os.path.join(model_dir, "config.json")))["model_type"]
    sys.path.insert(0, llama_cpp_dir)
    sys.path.insert(1, os.path.join(llama_cpp_dir, "gguf-py"))
    import conversion.base as base
    base.TextModel.get_vocab_base_pre = lambda self, tokenizer: PRE[model_type]
    sys.argv = ["convert_hf_to_gguf.py", model_dir, "--outfile", out, "--outtype", outtype]
    t0 = time.time()
    runpy.run_path(os.path.join(llama_cpp_dir, "convert_hf_to_gguf.py"), run_name="__main__")
    print(f"{out}: {os.path.getsize(out) / 1e9:.2f} GB in {time.time() - t0:.0f} s", flush=True)
    return out


def quantize(src, dst):
    import llama_cpp as L
    p = L.llama_model_quantize_default_params()
    p.ftype = L.LLAMA_FTYPE_MOSTLY_Q8_0
    p.nthread = 2
    t0 = time.time()
    rc = L.llama_model_quantize(src.encode(), dst.encode(), p)
    if rc != 0:
        sys.exit(f"llama_model_quantize {src} -> {dst} returned {rc}")
    print(f"{dst}: {os.path.getsize(dst) / 1e9:.2f} GB in {time.time() - t0:.0f} s", flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("model_dir")
    ap.add_argument("outtype", nargs="?", default="bf16", choices=["bf16", "f16"])
    ap.add_argument("--venv", default="build/peer-venv")
    a = ap.parse_args()
    llama_cpp_dir = os.path.abspath(os.path.join(a.venv, "src", "llama.cpp"))
    src = convert(a.model_dir, a.outtype, llama_cpp_dir)
    quantize(src, f"{a.model_dir.rstrip('/')}.q8_0.gguf")


if __name__ == "__main__":
    main()
