#!/usr/bin/env python3
"""PyTorch reference for scorekit's judge training (crates/train/src/). Dev-time only.

For the tiny multiple-choice judges bert_mc, roberta_mc and deberta_mc (a DeBERTa-v3-shaped judge:
relative attention with position buckets, shared attention keys, p2c + c2p, LayerNorm on the
relative embeddings, no token types; tests/data/story/<name>/: config.json,
tokenizer, weights from the generator of judge_reference.py) this script fine-tunes the
`transformers` model (`AutoModelForMultipleChoice`, eager attention, dropout 0 as the fixture
configs have it) with the recipe below, exactly as the `transformers` Trainer would step it:
`torch.optim.AdamW` (β 0.9/0.999, ε 1e-8, weight decay on every parameter but biases and
LayerNorm weights), `get_linear_schedule_with_warmup` (warm-up steps = ceil(ratio · total)),
`clip_grad_norm_` over all parameters, gradient accumulation with each micro-batch loss divided
by the number of micro-batches of its step. Questions: the first QUESTIONS of Possible Stories
dev, in file order (scorekit's --no-shuffle), micro-batches of BATCH questions, groups of ACCUM
micro-batches per optimiser step (the last group of an epoch holds the rest), each micro-batch
padded to its longest pair. Pairs: (document, question + " " + option), tokenised with
`tokenizer(first, second, truncation=True)`.

Writes, in float32 and float64 (<name>_f64/), tests/data/train/<name>/reference.json (recipe, token ids per question, per-step loss,
learning rate and gradient norm, the trained model's logits on the questions) and final.safetensors
(every trained tensor in full, except the word embeddings, of which only the rows of the tokens
the questions use are kept: `<name>.rows`, ids in reference.json).

Run: /work/venv-dev/bin/python scripts/reference/train_reference.py [NAME...]   (from the repository
root; names, e.g. deberta_mc, rebuild only those references and leave the committed others as they are)

With --bf16 first, it writes <name>_bf16/ instead: the same recipe in float32 with every forward
pass and loss under `torch.autocast("cpu", dtype=torch.bfloat16)` (f32 master weights, AdamW and
clipping in f32, no loss scaling), the yardstick of `judge train --precision bf16-mixed`; the
final logits are computed in f32 without autocast, as scorekit's evaluation runs.
"""
import importlib.util
import json
import math
import os
import sys

import torch
from safetensors.torch import save_file
from transformers import AutoConfig, AutoModelForMultipleChoice, AutoTokenizer, get_linear_schedule_with_warmup

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DATA = os.path.join(ROOT, "..", "shared", "data", "possible-stories", "dev.jsonl")
spec = importlib.util.spec_from_file_location("jr", os.path.join(ROOT, "scripts", "reference", "judge_reference.py"))
jr = importlib.util.module_from_spec(spec)
spec.loader.exec_module(jr)

QUESTIONS, BATCH, ACCUM, EPOCHS = 10, 2, 2, 2
RECIPE = dict(lr=5e-3, weight_decay=0.01, warmup_ratio=0.2, max_grad_norm=0.008,
              batch_questions=BATCH, grad_accum=ACCUM, epochs=EPOCHS, questions=QUESTIONS)


def main():
    torch.manual_seed(0)
    torch.use_deterministic_algorithms(True)
    rows = [json.loads(l) for l in open(DATA)][:QUESTIONS]
    args = sys.argv[1:]
    bf16 = args[:1] == ["--bf16"]
    args = args[1:] if bf16 else args
    for name in args or ["bert_mc", "roberta_mc", "deberta_mc"]:
        for dtype in [torch.float32] if bf16 else [torch.float32, torch.float64]:
            run(name, rows, dtype, bf16)


def run(name, rows, dtype, bf16=False):
    fixture = os.path.join(ROOT, "tests", "data", "story", name)
    cfg = AutoConfig.from_pretrained(fixture)
    cfg._attn_implementation = "eager"
    model = AutoModelForMultipleChoice.from_config(cfg).to(dtype)
    with torch.no_grad():
        for pname, p in model.state_dict().items():
            if p.dtype.is_floating_point:
                p.copy_(torch.from_numpy(jr.tiny_weight(pname, p.numel()).reshape(tuple(p.shape))).to(dtype))
    tok = AutoTokenizer.from_pretrained(fixture)
    want_types = cfg.type_vocab_size > 1
    questions = []
    for r in rows:
        enc = tok([r["document"]] * 4, [r["question"] + " " + o for o in r["options"]], truncation=True,
                  return_token_type_ids=True)
        types = enc["token_type_ids"] if want_types else [[0] * len(x) for x in enc["input_ids"]]
        questions.append((enc["input_ids"], types, r["gold_label"]))

    def batch(qs):
        ids = [x for q in qs for x in q[0]]
        types = [x for q in qs for x in q[1]]
        L = max(len(x) for x in ids)
        t_ids = torch.full((len(ids), L), cfg.pad_token_id, dtype=torch.long)
        t_types = torch.zeros((len(ids), L), dtype=torch.long)
        mask = torch.zeros((len(ids), L), dtype=torch.long)
        for i, (a, b) in enumerate(zip(ids, types)):
            t_ids[i, :len(a)] = torch.tensor(a)
            t_types[i, :len(b)] = torch.tensor(b)
            mask[i, :len(a)] = 1
        n = len(qs)
        kw = dict(input_ids=t_ids.view(n, 4, L), attention_mask=mask.view(n, 4, L))
        if want_types:
            kw["token_type_ids"] = t_types.view(n, 4, L)
        return kw, torch.tensor([q[2] for q in qs])

    no_decay = lambda n: "bias" in n or "LayerNorm.weight" in n
    params = list(model.named_parameters())
    opt = torch.optim.AdamW([
        {"params": [p for n, p in params if not no_decay(n)], "weight_decay": RECIPE["weight_decay"]},
        {"params": [p for n, p in params if no_decay(n)], "weight_decay": 0.0},
    ], lr=RECIPE["lr"], betas=(0.9, 0.999), eps=1e-8)
    micro = [questions[i:i + BATCH] for i in range(0, QUESTIONS, BATCH)]
    groups = [micro[i:i + ACCUM] for i in range(0, len(micro), ACCUM)]
    total = EPOCHS * len(groups)
    warmup = math.ceil(total * RECIPE["warmup_ratio"])
    sched = get_linear_schedule_with_warmup(opt, warmup, total)
    model.train()
    steps = []
    for epoch in range(EPOCHS):
        for g in groups:
            losses = []
            for qs in g:
                kw, labels = batch(qs)
                with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
                    logits = model(**kw).logits
                    loss = torch.nn.functional.cross_entropy(logits, labels)
                (loss / len(g)).backward()
                losses.append(loss.item())
            norm = torch.nn.utils.clip_grad_norm_(model.parameters(), RECIPE["max_grad_norm"]).item()
            lr = opt.param_groups[0]["lr"]
            opt.step()
            sched.step()
            opt.zero_grad()
            steps.append({"loss": sum(losses) / len(losses), "lr": lr, "grad_norm": norm})
    model.eval()
    with torch.no_grad():
        kw, _ = batch(questions)
        final_logits = model(**kw).logits.tolist()
    used = sorted({t for q in questions for x in q[0] for t in x})
    tensors = {}
    for n, p in model.named_parameters():
        t = p.detach().clone()
        if n.endswith("word_embeddings.weight"):
            tensors[n + ".rows"] = t[used].contiguous()
        else:
            tensors[n] = t.contiguous()
    suffix = "_bf16" if bf16 else "_f64" if dtype == torch.float64 else ""
    out = os.path.join(ROOT, "tests", "data", "train", name + suffix)
    os.makedirs(out, exist_ok=True)
    save_file(tensors, os.path.join(out, "final.safetensors"))
    with open(os.path.join(out, "reference.json"), "w") as f:
        json.dump({"recipe": RECIPE, "warmup_steps": warmup, "total_steps": total,
                   "ids": [q[0] for q in questions], "type_ids": [q[1] for q in questions],
                   "labels": [q[2] for q in questions], "steps": steps, "final_logits": final_logits,
                   "word_embedding_rows": used, "dtype": str(dtype),
                   "autocast": "torch.autocast('cpu', dtype=torch.bfloat16)" if bf16 else None,
                   "torch": torch.__version__,
                   "transformers": __import__("transformers").__version__}, f)
    print(name, dtype, "bf16 autocast" if bf16 else "", [round(s["loss"], 6) for s in steps], [round(s["grad_norm"], 4) for s in steps])


if __name__ == "__main__":
    main()
