#!/usr/bin/env python3
"""Build a RoBERTa-large-shaped multiple-choice judge (the default judge's shape: 24 layers x
1024, 16 heads, 4096 feed-forward, 514 positions) with random weights and a real byte-level BPE
(GPT-2's vocab.json + merges.txt, which RoBERTa's tokenizer uses, from the openai-whisper
20230124 sdist on PyPI, sha256-checked), laid out as RoBERTa's vocabulary (<s> <pad> </s> <unk>
first). Texts get the same number of tokens as with the real judge, so the timing is the real
one; the scores are not (random weights).

Usage: make_judge_shaped.py OUT_DIR   (dev-time only: needs torch and transformers)
"""

import hashlib
import io
import json
import os
import sys
import tarfile
import urllib.request

SDIST = (
    "https://files.pythonhosted.org/packages/00/c6/"
    "fb251c4f7de1c78753a2d54d6aaf1a859ddc3797ed4d6003f15866f4c4a4/openai-whisper-20230124.tar.gz"
)
SHA256 = "31adf9353bf0e3f891b6618896f22c65cf78cd6f845a4d5b7125aa5102187f79"


def gpt2_files(cache):
    path = os.path.join(cache, "openai-whisper-20230124.tar.gz")
    if not os.path.exists(path):
        os.makedirs(cache, exist_ok=True)
        data = urllib.request.urlopen(SDIST, timeout=120).read()
        with open(path + ".tmp", "wb") as f:
            f.write(data)
        os.replace(path + ".tmp", path)
    data = open(path, "rb").read()
    if hashlib.sha256(data).hexdigest() != SHA256:
        sys.exit(f"{path}: sha256 mismatch")
    tar = tarfile.open(fileobj=io.BytesIO(data))
    base = "openai-whisper-20230124/whisper/assets/gpt2/"
    vocab = json.load(tar.extractfile(base + "vocab.json"))
    merges = tar.extractfile(base + "merges.txt").read().decode("utf-8")
    return vocab, merges


def main():
    out = sys.argv[1]
    if os.path.exists(os.path.join(out, ".complete")):
        return
    import torch
    from transformers import RobertaConfig, RobertaForMultipleChoice

    gpt2, merges = gpt2_files(os.path.join(os.path.dirname(out), "wheels"))
    vocab = {"<s>": 0, "<pad>": 1, "</s>": 2, "<unk>": 3}
    for tok, _ in sorted(gpt2.items(), key=lambda kv: kv[1]):
        vocab.setdefault(tok, len(vocab))
    vocab["<mask>"] = len(vocab)
    os.makedirs(out, exist_ok=True)
    json.dump(vocab, open(os.path.join(out, "vocab.json"), "w"), ensure_ascii=False)
    open(os.path.join(out, "merges.txt"), "w", encoding="utf-8").write(merges)
    cfg = RobertaConfig(
        vocab_size=len(vocab), hidden_size=1024, num_hidden_layers=24, num_attention_heads=16,
        intermediate_size=4096, max_position_embeddings=514, type_vocab_size=1, pad_token_id=1,
        bos_token_id=0, eos_token_id=2, layer_norm_eps=1e-5, hidden_act="gelu",
        architectures=["RobertaForMultipleChoice"],
    )
    torch.manual_seed(0)
    model = RobertaForMultipleChoice(cfg).eval()
    model.save_pretrained(out, safe_serialization=True)
    open(os.path.join(out, ".complete"), "w").write("ok\n")
    print(f"{out}: RoBERTa-large-shaped judge, vocab {len(vocab)}")


if __name__ == "__main__":
    main()
