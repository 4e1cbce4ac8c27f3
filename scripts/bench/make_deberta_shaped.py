#!/usr/bin/env python3
"""Build a DeBERTa-v3-shaped base (no multiple-choice head) with random weights, for timing
`scorekit judge train` against PyTorch (BENCHMARKS.md, "DeBERTa-v3 training step"). Shape:
DeBERTa-v3-xsmall's encoder (6 layers x 384, 6 heads, 1536 feed-forward, 256 relative position
buckets over 512 positions, shared attention keys, p2c + c2p, LayerNorm on the relative
embeddings, no absolute positions, no token types, dropout 0.1) with the tiny DeBERTa test judge's
Unigram tokenizer (tests/data/story/deberta_mc, 2,000 tokens) in place of DeBERTa-v3's 128k
SentencePiece vocabulary, which only scales the embedding table. The timing is that of the
shape; the scores mean nothing (random weights).

Usage: make_deberta_shaped.py OUT_DIR [LAYERS=6] [HIDDEN=384]   (dev-time only: torch, transformers)
"""
import os
import shutil
import sys

import torch
from transformers import AutoConfig, AutoModel

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
out = sys.argv[1]
layers = int(sys.argv[2]) if len(sys.argv) > 2 else 6
hidden = int(sys.argv[3]) if len(sys.argv) > 3 else 384
fixture = os.path.join(ROOT, "tests", "data", "story", "deberta_mc")
cfg = AutoConfig.for_model(
    "deberta-v2", vocab_size=2000, hidden_size=hidden, num_hidden_layers=layers,
    num_attention_heads=hidden // 64, intermediate_size=4 * hidden, hidden_act="gelu",
    hidden_dropout_prob=0.1, attention_probs_dropout_prob=0.1, layer_norm_eps=1e-7,
    max_position_embeddings=512, type_vocab_size=0, relative_attention=True,
    pos_att_type=["p2c", "c2p"], max_relative_positions=-1, position_buckets=256,
    norm_rel_ebd="layer_norm", share_att_key=True, position_biased_input=False,
    pooler_hidden_size=hidden, pooler_dropout=0.0, pooler_hidden_act="gelu", pad_token_id=0)
torch.manual_seed(0)
model = AutoModel.from_config(cfg)
os.makedirs(out, exist_ok=True)
model.save_pretrained(out)
for f in ["tokenizer.json", "tokenizer_config.json"]:
    shutil.copy(os.path.join(fixture, f), os.path.join(out, f))
print(f"{out}: {sum(p.numel() for p in model.parameters()) / 1e6:.1f} M parameters")
