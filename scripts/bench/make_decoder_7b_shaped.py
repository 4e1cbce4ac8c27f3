#!/usr/bin/env python3
"""A slice of a Qwen2.5-7B-shaped or Llama-3.1-8B-shaped decoder judge for timing only (dev-time;
BENCHMARKS.md §10, "7–8B-shaped judges against PyTorch and llama.cpp").

Every width is the real model's (hidden, intermediate, heads, KV heads, head dim, vocabulary,
untied head, rope theta, Llama 3.1's llama3 rope scaling, norm epsilon, Qwen2's q/k/v biases), only
the number of layers is LAYERS (the full 28 / 32 layers do not fit f32 in this machine's 24 GB, and a
2-core prefill of them takes too long): numbers measured on it are for an "N-layer slice of the shape".
Weights are random (torch.manual_seed(SEED), transformers' own init: normal(0, 0.02), norms 1), made
and saved in bf16, so the f32 peers widen exactly the same values. The tokenizer and chat template
are the tiny fixture's of the family (tests/data/decoder/qwen2, tests/data/decoder/llama: a BPE
trained on Possible Stories prompts with the family's conventions and the real template), so
`scorekit judge eval` renders and tokenizes its prompts as for a real judge; prompts are 200–320
tokens with it (a real Qwen/Llama tokenizer gives a similar count for these prompts).

Writes OUT_DIR/{config.json, model*.safetensors, tokenizer.json, tokenizer_config.json}, and with
--f32 a second folder OUT_DIR-f32 with f32 weights (6+ GB per 2 layers: only where the disk has room;
every peer here loads the bf16 folder at either precision).

Run: build/peer-venv/bin/python scripts/bench/make_decoder_7b_shaped.py {qwen2.5-7b|llama-3.1-8b} LAYERS OUT_DIR [--f32] [--seed N]
"""
import argparse
import shutil

import torch
from transformers import LlamaConfig, LlamaForCausalLM, Qwen2Config, Qwen2ForCausalLM

# The real configs (Qwen/Qwen2.5-7B-Instruct and meta-llama/Llama-3.1-8B-Instruct config.json),
# less num_hidden_layers and the special token ids (those are the fixture tokenizer's).
SHAPES = {
    "qwen2.5-7b": dict(
        fixture="tests/data/decoder/qwen2",
        config=Qwen2Config,
        model=Qwen2ForCausalLM,
        args=dict(vocab_size=152064, hidden_size=3584, intermediate_size=18944, num_hidden_layers=28,
                  num_attention_heads=28, num_key_value_heads=4, max_position_embeddings=32768,
                  rope_theta=1000000.0, rms_norm_eps=1e-6, tie_word_embeddings=False,
                  use_sliding_window=False, sliding_window=131072, max_window_layers=28,
                  hidden_act="silu", attention_dropout=0.0, initializer_range=0.02),
    ),
    "llama-3.1-8b": dict(
        fixture="tests/data/decoder/llama",
        config=LlamaConfig,
        model=LlamaForCausalLM,
        args=dict(vocab_size=128256, hidden_size=4096, intermediate_size=14336, num_hidden_layers=32,
                  num_attention_heads=32, num_key_value_heads=8, head_dim=128,
                  max_position_embeddings=131072, rope_theta=500000.0, rms_norm_eps=1e-5,
                  rope_scaling=dict(rope_type="llama3", factor=8.0, low_freq_factor=1.0,
                                    high_freq_factor=4.0, original_max_position_embeddings=8192),
                  tie_word_embeddings=False, attention_bias=False, mlp_bias=False,
                  hidden_act="silu", initializer_range=0.02),
    ),
}


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("shape", choices=sorted(SHAPES))
    p.add_argument("layers", type=int)
    p.add_argument("out")
    p.add_argument("--f32", action="store_true", help="also write OUT-f32 with f32 weights")
    p.add_argument("--seed", type=int, default=0)
    a = p.parse_args()
    shape = SHAPES[a.shape]
    args = dict(shape["args"], num_hidden_layers=a.layers)
    if "max_window_layers" in args:
        args["max_window_layers"] = a.layers
    cfg = shape["config"](**args)
    torch.manual_seed(a.seed)
    # bf16 from the start: the model never exists in f32 (half the memory while it is made).
    torch.set_default_dtype(torch.bfloat16)
    m = shape["model"](cfg).eval()
    torch.set_default_dtype(torch.float32)
    n = sum(t.numel() for t in m.parameters())
    m.save_pretrained(a.out, safe_serialization=True, max_shard_size="20GB")
    for f in ["tokenizer.json", "tokenizer_config.json"]:
        shutil.copy(f"{shape['fixture']}/{f}", a.out)
    print(f"{a.shape}: {a.layers} layers, {n / 1e9:.3f} B parameters, bf16 -> {a.out}")
    if a.f32:
        m = m.float()
        m.config.torch_dtype = torch.float32
        m.save_pretrained(a.out + "-f32", safe_serialization=True, max_shard_size="20GB")
        for f in ["tokenizer.json", "tokenizer_config.json"]:
            shutil.copy(f"{shape['fixture']}/{f}", a.out + "-f32")
        print(f"f32 copy -> {a.out}-f32")


if __name__ == "__main__":
    main()
