#!/usr/bin/env python3
"""How much of a tiny judge's gradient is bf16 rounding noise: PyTorch's gradients of the first
micro-batch (2 Possible Stories dev questions) in f32 and under `torch.autocast("cpu",
dtype=torch.bfloat16)`, for bert_mc, roberta_mc and deberta_mc (the judges of the training parity
and bf16 yardstick tests, weights from judge_reference.py's generator). Prints, per tensor,
‖g_bf16 − g_f32‖ / ‖g_f32‖, then the smallest and largest. docs/judge.md "bf16-mixed training"
quotes the range. Dev-time only.

Run: /work/venv-dev/bin/python scripts/reference/bf16_grad_spread.py   (from the repository root)
"""
import importlib.util
import json
import os

import torch

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
spec = importlib.util.spec_from_file_location("tr", os.path.join(ROOT, "scripts", "reference", "train_reference.py"))
tr = importlib.util.module_from_spec(spec)
spec.loader.exec_module(tr)
from transformers import AutoConfig, AutoModelForMultipleChoice, AutoTokenizer  # noqa: E402


def grads(name, rows, bf16):
    fixture = os.path.join(ROOT, "tests", "data", "story", name)
    cfg = AutoConfig.from_pretrained(fixture)
    cfg._attn_implementation = "eager"
    model = AutoModelForMultipleChoice.from_config(cfg)
    with torch.no_grad():
        for pname, p in model.state_dict().items():
            if p.dtype.is_floating_point:
                p.copy_(torch.from_numpy(tr.jr.tiny_weight(pname, p.numel()).reshape(tuple(p.shape))))
    tok = AutoTokenizer.from_pretrained(fixture)
    ids, types = [], []
    for r in rows:
        enc = tok([r["document"]] * 4, [r["question"] + " " + o for o in r["options"]], truncation=True,
                  return_token_type_ids=True)
        ids += enc["input_ids"]
        types += enc["token_type_ids"]
    n, L = len(ids), max(len(x) for x in ids)
    t_ids = torch.full((n, L), cfg.pad_token_id)
    t_types = torch.zeros((n, L), dtype=torch.long)
    mask = torch.zeros((n, L), dtype=torch.long)
    for i, (a, b) in enumerate(zip(ids, types)):
        t_ids[i, :len(a)] = torch.tensor(a)
        t_types[i, :len(b)] = torch.tensor(b)
        mask[i, :len(a)] = 1
    kw = dict(input_ids=t_ids.view(len(rows), 4, L), attention_mask=mask.view(len(rows), 4, L))
    if cfg.type_vocab_size > 1:
        kw["token_type_ids"] = t_types.view(len(rows), 4, L)
    model.train()
    with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
        logits = model(**kw).logits
        loss = torch.nn.functional.cross_entropy(logits, torch.tensor([r["gold_label"] for r in rows]))
    loss.backward()
    return {k: p.grad.clone() for k, p in model.named_parameters() if p.grad is not None}


def main():
    rows = [json.loads(l) for l in open(tr.DATA)][:2]
    for name in ["bert_mc", "roberta_mc", "deberta_mc"]:
        f, b = grads(name, rows, False), grads(name, rows, True)
        # Key biases and the classifier bias have zero gradient in exact arithmetic: left out,
        # as in the tests.
        rel = {k: ((b[k] - f[k]).norm() / f[k].norm()).item() for k in f
               if not (k.endswith("key.bias") or k.endswith("key_proj.bias") or k == "classifier.bias")}
        for k, v in sorted(rel.items()):
            print(f"{name} {k}: {v:.3f}")
        print(f"{name}: {len(rel)} tensors, relative difference {min(rel.values()):.3f} to {max(rel.values()):.3f}")


if __name__ == "__main__":
    main()
