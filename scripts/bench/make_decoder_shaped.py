"""A Qwen2.5-0.5B-shaped decoder judge (random weights, seed 0) with the tiny qwen2 fixture's
tokenizer and chat template, for timing only (dev-time; BENCHMARKS.md §10).

Run: build/ref-venv/bin/python scripts/bench/make_decoder_shaped.py OUT_DIR
"""
import json, shutil, sys, torch
from transformers import Qwen2Config, Qwen2ForCausalLM
out = sys.argv[1]
src = "tests/data/decoder/qwen2"
cfg = Qwen2Config(vocab_size=151936, hidden_size=896, intermediate_size=4864, num_hidden_layers=24,
                  num_attention_heads=14, num_key_value_heads=2, max_position_embeddings=32768,
                  rope_theta=1000000.0, tie_word_embeddings=True, rms_norm_eps=1e-6)
torch.manual_seed(0)
m = Qwen2ForCausalLM(cfg).eval()
m.save_pretrained(out, safe_serialization=True)
for f in ["tokenizer.json", "tokenizer_config.json"]:
    shutil.copy(f"{src}/{f}", out)
