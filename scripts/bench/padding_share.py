#!/usr/bin/env python3
"""Share of padding in the judge-training batches of BENCHMARKS.md ("Fused BERT layers"): the
Possible Stories dev questions in file order, BATCH questions (4 pairs each) a micro-batch, pairs
(document, question + " " + option) truncated to MAXLEN and padded to the longest of the batch.
Prints sum(len) / (pairs · max len) (the tokens the packed layer computes) and
sum(len²) / (pairs · max len²) (its attention products). Dev-time only.

Run: /work/venv-dev/bin/python scripts/bench/padding_share.py [BASE] [BATCH=8] [MAXLEN=256]
"""
import json
import os
import sys

from transformers import AutoTokenizer

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
base = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "fixtures-cache", "all-MiniLM-L6-v2")
batch = int(sys.argv[2]) if len(sys.argv) > 2 else 8
maxlen = int(sys.argv[3]) if len(sys.argv) > 3 else 256
rows = [json.loads(l) for l in open(os.path.join(ROOT, "..", "shared", "data", "possible-stories", "dev.jsonl"))]
tok = AutoTokenizer.from_pretrained(base)
tokens = padded = att = att_padded = batches = 0
for s in range(0, len(rows), batch):
    qs = rows[s:s + batch]
    enc = tok([r["document"] for r in qs for _ in r["options"]],
              [r["question"] + " " + o for r in qs for o in r["options"]], truncation=True, max_length=maxlen)
    lens = [len(x) for x in enc["input_ids"]]
    m = max(lens)
    tokens += sum(lens); padded += len(lens) * m
    att += sum(n * n for n in lens); att_padded += len(lens) * m * m
    batches += 1
print(json.dumps({"batches": batches, "tokens_over_padded": round(tokens / padded, 4),
                  "attention_over_padded": round(att / att_padded, 4)}))
