#!/usr/bin/env python3
"""Inputs for scripts/check-same-outputs.sh that the repository does not ship as files.

  make_inputs.py OUT_DIR

writes, deterministically (no randomness, standard library only):
  grasp/level1-binary/results.csv + test_config.yaml   (cot mode, from the real prompts/inventory)
  grasp/level1-open/results.csv   + test_config.yaml
  grasp/level2/results.csv        + test_config.yaml   (P_/IP_ pairs, for --pairwise)
  mint-odd/                       a MINT outputs folder with a complete configuration (Llama-3,
                                  k = 5), an incomplete one (gpt-3.5, k = 2, gsm8k only), a
                                  results.jsonl that does not fit the layout and a stray file
  judge/                          the tiny BERT multiple-choice judge of tests/data/story/bert_mc
                                  (committed config and tokenizer, weights from the generator of
                                  tests/common/tiny_judge.rs and scripts/reference/judge_reference.py)
"""
import csv
import json
import shutil
import struct
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SHARED = REPO / "../shared/data"
# Set from the command line; a test that imports this file for judge() sets it itself.
OUT = Path(sys.argv[1]) if __name__ == "__main__" else None

BINARY = ["Yes", "No.", "yes, the ball is moving.", "**No**", "(Yes) The statement is true.",
          "I cannot tell from the video.", "", "\u201cYes\u201d", "NA",
          "No, the ball is on the left, not the right.", "\"Yes\"\r\nThe object is on the table.",
          "Yes-", "Certainly, yes.", "NO"]


def write_csv(path, rows):
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f, lineterminator="\r\n")
        w.writerow(["scene", "prompt", "video_file", "gt", "response"])
        w.writerows(rows)


def config(dir_, name):
    shutil.copy(SHARED / "grasp/configs/tests" / name, dir_ / "test_config.yaml")


def fill(template, values):
    for v in values:
        template = template.replace("{}", v, 1)
    return template


def grasp():
    level1 = json.loads((SHARED / "grasp/data/prompts/level1.json").read_text())
    level2 = json.loads((SHARED / "grasp/data/prompts/level2.json").read_text())
    inv = json.loads((SHARED / "grasp/derived/inventory.json").read_text())
    ordering = ["red ball", "blue cube", "green ball", "black cube"]
    rows, k = [], 0
    for scene, p in level1.items():
        dirs = inv["level1"][scene]["scene_dirs"]
        for folder, label in dirs.items():
            for video in range(3):
                path = f"data/videos/level1/{folder}/{video:03}.mp4,"
                t = p["binary"]
                if scene.endswith("ObjectOrdering"):
                    objs = ordering[: t.count("{}")]
                    truth, lie = fill(t, objs), fill(t, objs[::-1])
                else:
                    other = next(v for v in dirs.values() if v != label)
                    truth, lie = fill(t, [label]), fill(t, [other])
                for statement, gold in ((truth, "yes"), (lie, "no")):
                    answer = BINARY[k % len(BINARY)]
                    k += 1
                    rows.append([scene, f"Describe the video step by step.<SEP>{statement}", path,
                                 gold, f"The video shows a ball, yes.<SEP>{answer}"])
    d = OUT / "grasp/level1-binary"
    write_csv(d / "results.csv", rows)
    config(d, "level1_binary_cot.yaml")

    rows = []
    for scene, p in level1.items():
        prompt = p.get("open")
        if not prompt:
            continue
        labels = list(inv["level1"][scene]["scene_dirs"].items())
        for li, (folder, label) in enumerate(labels):
            other = labels[(li + 1) % len(labels)][1]
            answers = [f"**{label.upper()}**", f"It is {label}.", "I am not sure.",
                       f"{other.capitalize()}.", f"{label} or {other}", "NaN",
                       f"The answer is {label}, clearly."]
            for video in range(7 if li == 0 else 3):
                rows.append([scene, prompt, f"data/videos/level1/{folder}/{video:03}.mp4",
                             label, answers[(video + li) % len(answers)]])
    d = OUT / "grasp/level1-open"
    write_csv(d / "results.csv", rows)
    config(d, "level1_open.yaml")

    rows, k = [], 0
    for test, spec in inv["level2"].items():
        prompt = level2.get(spec["prompt_key"], "")
        if isinstance(prompt, dict):
            prompt = next(iter(prompt.values()))
        for scene, gold in spec["video_dirs"].items():
            for video in range(4):
                answer = BINARY[k % len(BINARY)]
                k += 1
                rows.append([scene, str(prompt), f"data/videos/level2/{scene}/{video:03}.mp4",
                             gold, answer])
    d = OUT / "grasp/level2"
    write_csv(d / "results.csv", rows)
    config(d, "level2.yaml")


def tiny_weight(name, n):
    """splitmix64 over fnv1a64(name) + j * golden, 24-bit uniforms (tests/common/tiny_judge.rs)."""
    m = (1 << 64) - 1
    seed = 0xCBF29CE484222325
    for b in name.encode():
        seed = ((seed ^ b) * 0x00000100000001B3) & m
    norm = name.lower().endswith("norm.weight")
    out = []
    for j in range(1, n + 1):
        z = (seed + 0x9E3779B97F4A7C15 * j) & m
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & m
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & m
        z ^= z >> 31
        v = 2.0 * ((z >> 40) / float(1 << 24)) - 1.0
        out.append(1.0 + 0.1 * v if norm else 0.1 * v)
    return out


def judge(name="bert_mc"):
    src = REPO / "tests/data/story" / name
    d = OUT / "judge"
    d.mkdir(parents=True, exist_ok=True)
    for f in ["config.json", "tokenizer_config.json", "vocab.json", "merges.txt",
              "tokenizer.json", "vocab.txt", "special_tokens_map.json"]:
        if (src / f).exists():
            shutil.copy(src / f, d / f)
    tensors = json.loads((src / "tensors.json").read_text())
    header, blobs, offset = {}, [], 0
    for t in tensors:
        n = 1
        for s in t["shape"]:
            n *= s
        data = struct.pack(f"<{n}f", *tiny_weight(t["name"], n))
        header[t["name"]] = {"dtype": "F32", "shape": t["shape"],
                             "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * (-len(h) % 8)
    with open(d / "model.safetensors", "wb") as f:
        f.write(struct.pack("<Q", len(h)))
        f.write(h)
        for b in blobs:
            f.write(b)


def mint():
    src = SHARED / "mint/results/data/outputs"
    d = OUT / "mint-odd"
    shutil.copytree(src / "Meta-Llama-3-8B-Instruct/F=None/max5_p2+tool+cd",
                    d / "Meta-Llama-3-8B-Instruct/F=None/max5_p2+tool+cd")
    gsm = "gpt-3.5-turbo-0613/F=None/max2_p2+tool+cd/reasoning/gsm8k"
    shutil.copytree(src / gsm, d / gsm)
    (d / "gpt-3.5-turbo-0613/stray").mkdir(parents=True)
    shutil.copy(src / gsm / "results.jsonl", d / "gpt-3.5-turbo-0613/stray/results.jsonl")
    (d / "NOTES.txt").write_text("not a results file\n")


if __name__ == "__main__":
    grasp()
    mint()
    judge()
