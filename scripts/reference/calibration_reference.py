#!/usr/bin/env python3
"""PyTorch reference counts of the judge's dataset calibration (scorekit story, docs/story.md). Dev-time only.

An independent transcription of the protocol `ifsm-frame-v1`, run with transformers on the tiny
multiple-choice test judges (tests/data/story/<name>/: config, tokenizer and the deterministic
weights of judge_reference.py's tiny_weight) over the Possible Stories dev split:
  - a positive per question: its original options; counted when the judge picks the gold slot g;
  - three negatives per question, one per distractor slot d != g ascending: slot g gets
    options[d], slot d the filler, the first ending of the question's story in endings.jsonl
    (file order) whose stripped text equals none of the question's stripped options; counted
    when the judge does not pick g.
The judge scores (document, question + " " + option) with longest-first truncation, as the
dataset's authors' run.py; the pick is torch.argmax (ties: the lowest slot).

Writes tests/data/story/calibration_reference.json:
  {"judges": {name: {positives, positives_counted, negatives, negatives_counted, q0, q1}}, ...}

Run: /work/venv-dev/bin/python scripts/reference/calibration_reference.py   (from the repository root)
"""
import json
import os
import sys

import torch
from transformers import AutoConfig, AutoModelForMultipleChoice, PreTrainedTokenizerFast

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from judge_reference import tiny_weight  # noqa: E402  (the fixtures' weights)

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DATA = os.path.join(ROOT, "..", "shared", "data", "possible-stories")
FIXTURES = os.path.join(ROOT, "tests", "data", "story")
OUT = os.path.join(FIXTURES, "calibration_reference.json")
JUDGES = ["bert_mc", "roberta_mc"]
MAX_POS = 128


def read_jsonl(path):
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def frames(questions, endings):
    """(question, kind, options) for every frame of the protocol, in order."""
    stories = {}
    for s in endings:
        stories.setdefault(s["roc_passage_id"], [e["ending"] for e in s["endings"]])
    out = []
    for q in questions:
        g = q["gold_label"]
        opts = q["options"]
        out.append((q, "positive", list(opts)))
        stripped = {o.strip() for o in opts}
        passage = q["question_id"].split("_")[0]
        filler = next((e for e in stories.get(passage, []) if e.strip() not in stripped), None)
        if filler is None:
            continue
        for d in range(4):
            if d == g:
                continue
            o = list(opts)
            o[g] = opts[d]
            o[d] = filler
            out.append((q, "negative", o))
    return out


def load(name):
    d = os.path.join(FIXTURES, name)
    cfg = AutoConfig.from_pretrained(d)
    cfg._attn_implementation = "eager"
    model = AutoModelForMultipleChoice.from_config(cfg).eval()
    with torch.no_grad():
        for pname, p in model.state_dict().items():
            if p.dtype.is_floating_point:
                p.copy_(torch.from_numpy(tiny_weight(pname, p.numel()).reshape(tuple(p.shape))))
    with open(os.path.join(d, "tokenizer_config.json")) as f:
        special = {k: v for k, v in json.load(f).items() if k.endswith("_token") and isinstance(v, str)}
    tok = PreTrainedTokenizerFast(tokenizer_file=os.path.join(d, "tokenizer.json"),
                                  model_max_length=MAX_POS, **special)
    return model, tok, cfg


def picks(model, tok, cfg, fs, batch=64):
    out = []
    want_types = cfg.type_vocab_size > 1
    for i in range(0, len(fs), batch):
        chunk = fs[i:i + batch]
        firsts = [q["document"] for q, _, o in chunk for _ in o]
        seconds = [q["question"] + " " + x for q, _, o in chunk for x in o]
        enc = tok(firsts, seconds, truncation=True, padding=True, return_tensors="pt",
                  return_token_type_ids=want_types)
        n, L = enc["input_ids"].shape
        kw = {k: v.view(n // 4, 4, L) for k, v in enc.items() if k != "token_type_ids" or want_types}
        with torch.no_grad():
            logits = model(**kw).logits
        out.extend(torch.argmax(logits, dim=1).tolist())
    return out


def main():
    questions = read_jsonl(os.path.join(DATA, "dev.jsonl"))
    endings = read_jsonl(os.path.join(DATA, "endings.jsonl"))
    fs = frames(questions, endings)
    result = {"split": "dev", "questions": len(questions), "frames": len(fs),
              "torch": torch.__version__, "transformers": __import__("transformers").__version__,
              "judges": {}}
    for name in JUDGES:
        model, tok, cfg = load(name)
        got = picks(model, tok, cfg, fs)
        c = {"positives": 0, "positives_counted": 0, "negatives": 0, "negatives_counted": 0}
        for (q, kind, _), pick in zip(fs, got):
            hit = pick == q["gold_label"]
            if kind == "positive":
                c["positives"] += 1
                c["positives_counted"] += hit
            else:
                c["negatives"] += 1
                c["negatives_counted"] += not hit
        c["q1"] = c["positives_counted"] / c["positives"]
        c["q0"] = c["negatives_counted"] / c["negatives"]
        result["judges"][name] = c
        print(name, c)
    with open(OUT, "w") as f:
        json.dump(result, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    sys.exit(main())
