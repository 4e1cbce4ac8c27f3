#!/usr/bin/env python3
"""Time per optimiser step of the judge-training recipe in PyTorch, for the side-by-side with
`scorekit judge train` (BENCHMARKS.md). Dev-time only.

Base: a BERT folder (default fixtures-cache/all-MiniLM-L6-v2) as BertForMultipleChoice (a new
head, as scorekit initialises it); the first STEPS x BATCH Possible Stories dev questions in file
order, pairs (document, question + " " + option), truncation to MAXLEN, padded per micro-batch;
AdamW lr 5e-5 wd 0.01, linear schedule, clip 1.0, dropout from config.json; 2 threads.
Prints seconds per step (after the first, which includes warm-up) and the losses. PRECISION
bf16-mixed runs the forward pass and loss under `torch.autocast("cpu", dtype=torch.bfloat16)`
(f32 master weights and AdamW, no loss scaling), the peer of `judge train --precision bf16-mixed`.

Run: /work/venv-dev/bin/python scripts/bench/train_step_time.py [BASE] [STEPS] [BATCH] [MAXLEN] [PRECISION]
"""
import json
import os
import sys
import time

import torch
from transformers import AutoModelForMultipleChoice, AutoTokenizer, get_linear_schedule_with_warmup

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
base = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "fixtures-cache", "all-MiniLM-L6-v2")
steps = int(sys.argv[2]) if len(sys.argv) > 2 else 3
batch = int(sys.argv[3]) if len(sys.argv) > 3 else 8
maxlen = int(sys.argv[4]) if len(sys.argv) > 4 else 256
bf16 = (sys.argv[5] if len(sys.argv) > 5 else "f32") == "bf16-mixed"
torch.set_num_threads(2)
torch.manual_seed(2022)
rows = [json.loads(l) for l in open(os.path.join(ROOT, "..", "shared", "data", "possible-stories", "dev.jsonl"))]
tok = AutoTokenizer.from_pretrained(base)
model = AutoModelForMultipleChoice.from_pretrained(base)
no_decay = lambda n: "bias" in n or "LayerNorm.weight" in n
params = list(model.named_parameters())
opt = torch.optim.AdamW([{"params": [p for n, p in params if not no_decay(n)], "weight_decay": 0.01},
                         {"params": [p for n, p in params if no_decay(n)], "weight_decay": 0.0}], lr=5e-5)
sched = get_linear_schedule_with_warmup(opt, 0, steps)
model.train()
times, losses = [], []
for s in range(steps):
    qs = rows[s * batch:(s + 1) * batch]
    firsts = [r["document"] for r in qs for _ in r["options"]]
    seconds = [r["question"] + " " + o for r in qs for o in r["options"]]
    enc = tok(firsts, seconds, truncation=True, max_length=maxlen, padding=True, return_tensors="pt")
    kw = {k: v.view(len(qs), 4, -1) for k, v in enc.items()}
    t0 = time.perf_counter()
    with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
        loss = model(**kw, labels=torch.tensor([r["gold_label"] for r in qs])).loss
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    opt.step(); sched.step(); opt.zero_grad()
    times.append(time.perf_counter() - t0)
    losses.append(loss.item())
print(json.dumps({"seconds_per_step": times, "mean_after_first": sum(times[1:]) / max(1, len(times) - 1),
                  "losses": losses, "precision": "bf16-mixed" if bf16 else "f32", "torch": torch.__version__, "threads": torch.get_num_threads()}))
