#!/usr/bin/env python3
"""Dev-time: build data/story/test-demo-generations.jsonl from the real Possible Stories test split.

Two "models" per question, so the demo shows one result group per model:
  human-gold       the crowd-written gold option (IFSM then equals the judge's own accuracy)
  original-ending  the ROCStories original ending of the passage, the same for every question
                   (ignores the instruction: IFSM should drop, Dissimilarity is 0 within a story)
"""
import json, pathlib, sys

shared = pathlib.Path(__file__).resolve().parents[2] / "shared/data/possible-stories"
endings = {}
for line in open(shared / "endings.jsonl", encoding="utf-8"):
    r = json.loads(line)
    endings[r["roc_passage_id"]] = r["original_ending"]
out = pathlib.Path(__file__).resolve().parents[1] / "data/story/test-demo-generations.jsonl"
n = 0
with open(out, "w", encoding="utf-8") as f:
    for line in open(shared / "test.jsonl", encoding="utf-8"):
        q = json.loads(line)
        f.write(json.dumps({"question_id": q["question_id"], "model": "human-gold",
                            "ending": q["options"][q["gold_label"]]}, ensure_ascii=False) + "\n")
        f.write(json.dumps({"question_id": q["question_id"], "model": "original-ending",
                            "ending": endings[q["roc_passage_id"]]}, ensure_ascii=False) + "\n")
        n += 1
print(f"{out}: {2 * n} generations for {n} questions", file=sys.stderr)
