#!/usr/bin/env python3
"""The PyTorch side of the real judge-training run (BENCHMARKS.md, issue 17). Dev-time only.

Fine-tunes BASE (default fixtures-cache/all-MiniLM-L6-v2) as BertForMultipleChoice (a new head,
transformers' init, seed 2022) on TRAIN (Possible Stories JSONL) with the recipe of
`scorekit judge train`: AdamW (wd 0.01, none on biases and LayerNorm weights), linear warm-up
(ceil(ratio * total) steps) then decay, clip 1.0, dropout from config.json, a seeded shuffle per
epoch, pairs (document, question + " " + option) truncated longest-first to MAXLEN and padded per
micro-batch; torch threads 2. Reports the accuracy on TEST before and after training (95%
percentile bootstrap, 1000 resamples), the training-split accuracy after every epoch, and the
training seconds of every epoch (forward, backward and optimiser only; evaluation not counted).

Run: /work/venv-dev/bin/python scripts/bench/judge_real_run.py --epochs 3 --lr 5e-5 [--no-shuffle] \
        [--questions N] [--test FILE|none] [--no-before] [--no-train-eval] [--precision f32|bf16-mixed]
        [--out FILE.json]
"""
import argparse
import json
import math
import os
import random
import time

import torch
from transformers import AutoTokenizer, BertForMultipleChoice, get_linear_schedule_with_warmup

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DATA = os.path.join(ROOT, "..", "shared", "data", "possible-stories")

ap = argparse.ArgumentParser()
ap.add_argument("--base", default=os.path.join(ROOT, "fixtures-cache", "all-MiniLM-L6-v2"))
ap.add_argument("--train", default=os.path.join(DATA, "dev.jsonl"))
ap.add_argument("--test", default=os.path.join(DATA, "test.jsonl"))
ap.add_argument("--questions", type=int, default=0, help="train on the first N questions only")
ap.add_argument("--epochs", type=int, default=3)
ap.add_argument("--lr", type=float, default=5e-5)
ap.add_argument("--batch", type=int, default=8)
ap.add_argument("--warmup-ratio", type=float, default=0.1)
ap.add_argument("--weight-decay", type=float, default=0.01)
ap.add_argument("--max-length", type=int, default=256)
ap.add_argument("--seed", type=int, default=2022)
ap.add_argument("--no-before", action="store_true", help="skip the test accuracy before training")
ap.add_argument("--no-shuffle", action="store_true", help="questions in file order (as scorekit's --no-shuffle)")
ap.add_argument("--no-train-eval", action="store_true", help="skip the training-split accuracy per epoch")
ap.add_argument("--precision", choices=["f32", "bf16-mixed"], default="f32",
                help="bf16-mixed: forward and loss under torch.autocast('cpu', bfloat16), f32 masters")
ap.add_argument("--out", default=None)
a = ap.parse_args()

torch.set_num_threads(2)
torch.manual_seed(a.seed)
random.seed(a.seed)
tok = AutoTokenizer.from_pretrained(a.base)
model = BertForMultipleChoice.from_pretrained(a.base)


def load(path, n=0):
    rows = [json.loads(l) for l in open(path)]
    return rows[:n] if n else rows


def encode(qs):
    firsts = [r["document"] for r in qs for _ in r["options"]]
    seconds = [r["question"] + " " + o for r in qs for o in r["options"]]
    enc = tok(firsts, seconds, truncation=True, max_length=a.max_length, padding=True, return_tensors="pt")
    return {k: v.view(len(qs), len(qs[0]["options"]), -1) for k, v in enc.items()}


def accuracy(rows):
    model.eval()
    right = []
    with torch.no_grad():
        for i in range(0, len(rows), 16):
            qs = rows[i:i + 16]
            logits = model(**encode(qs)).logits
            right += [int(p == r["gold_label"]) for p, r in zip(logits.argmax(-1).tolist(), qs)]
    model.train()
    return right


def interval(right, resamples=1000):
    rng = random.Random(0)
    n = len(right)
    means = sorted(sum(right[rng.randrange(n)] for _ in range(n)) / n for _ in range(resamples))
    return {"accuracy": sum(right) / n, "low": means[int(0.025 * resamples)],
            "high": means[int(0.975 * resamples) - 1], "n": n}


train = load(a.train, a.questions)
test = load(a.test) if a.test != "none" else []
no_decay = lambda n: "bias" in n or "LayerNorm.weight" in n
params = list(model.named_parameters())
opt = torch.optim.AdamW([{"params": [p for n, p in params if not no_decay(n)], "weight_decay": a.weight_decay},
                         {"params": [p for n, p in params if no_decay(n)], "weight_decay": 0.0}], lr=a.lr)
per_epoch = math.ceil(len(train) / a.batch)
total = per_epoch * a.epochs
sched = get_linear_schedule_with_warmup(opt, math.ceil(total * a.warmup_ratio), total)
result = {"recipe": vars(a), "torch": torch.__version__, "threads": torch.get_num_threads(),
          "train_questions": len(train), "steps": total, "epochs": []}
if test and not a.no_before:
    result["test_before"] = interval(accuracy(test))
model.train()
for epoch in range(a.epochs):
    order = list(range(len(train)))
    if not a.no_shuffle:
        random.Random(a.seed * 1000 + epoch).shuffle(order)
    t0, losses = time.perf_counter(), []
    for s in range(per_epoch):
        qs = [train[i] for i in order[s * a.batch:(s + 1) * a.batch]]
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=a.precision == "bf16-mixed"):
            loss = model(**encode(qs), labels=torch.tensor([r["gold_label"] for r in qs])).loss
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step(); sched.step(); opt.zero_grad()
        losses.append(loss.item())
    seconds = time.perf_counter() - t0
    acc = None if a.no_train_eval else sum(accuracy(train)) / len(train)
    result["epochs"].append({"epoch": epoch, "seconds": seconds, "mean_loss": sum(losses) / len(losses),
                             "train_accuracy": acc, "load": os.getloadavg()})
    print(json.dumps(result["epochs"][-1]), flush=True)
if test:
    result["test_after"] = interval(accuracy(test))
print(json.dumps({k: result[k] for k in result if k.startswith("test")}))
if a.out:
    json.dump(result, open(a.out, "w"), indent=1)
