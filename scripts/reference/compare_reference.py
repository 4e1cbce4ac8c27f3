#!/usr/bin/env python3
"""Independent reference values for `scorekit compare` (tests/compare.rs).

Dev-time only (scipy). Writes, under tests/data/compare/:

- grasp_a.csv, grasp_b.csv: two GRASP Level 1 binary results files built from the real GRASP
  prompts and scene folders (../shared/data/grasp), answers drawn with a fixed seed;
- reference.json: McNemar p-values (scipy.stats.binomtest on the discordant pairs) for
  - the two GRASP files, scored here with the spec's binary rule (first word of the last
    `<SEP>` turn, lowercased, ASCII punctuation removed, must be `yes` or `no`),
  - MINT gpt-3.5-turbo-0613 vs Meta-Llama-3-8B-Instruct (k = 5, no feedback) and
    gpt-3.5-turbo-0613 k = 1 vs k = 5, from the stored `state.success` of the real
    trajectories, paired by (task, task_id),
  - a few binomial tails, large n included.

Run from the repository root:  /work/venv-dev/bin/python scripts/reference/compare_reference.py
"""

import csv
import json
import random
import string
from pathlib import Path

from scipy.stats import binomtest

ROOT = Path(__file__).resolve().parents[2]
SHARED = ROOT.parent / "shared" / "data"
OUT = ROOT / "tests" / "data" / "compare"

ANSWERS_RIGHT = ["Yes", "yes, it is.", "**Yes**", "(Yes) True."]
ANSWERS_WRONG_WAY = ["No", "No.", "no, it is not.", "NO"]
INVALID = ["I cannot tell.", "", "NA", "Certainly, yes."]


def answer(rng, gold_yes, p_right, p_invalid):
    r = rng.random()
    if r < p_invalid:
        return rng.choice(INVALID)
    right = r < p_invalid + p_right
    says_yes = gold_yes if right else not gold_yes
    pool = ANSWERS_RIGHT if says_yes else ANSWERS_WRONG_WAY
    return rng.choice(pool)


def grasp_rows(seed, p_right, p_invalid):
    prompts = json.loads((SHARED / "grasp/data/prompts/level1.json").read_text())
    inventory = json.loads((SHARED / "grasp/derived/inventory.json").read_text())
    rng = random.Random(seed)
    rows = []
    for scene in ["Movement", "RelationalPosition", "Direction", "Shape", "Color"]:
        template = prompts[scene]["binary"]
        dirs = inventory["level1"][scene]["scene_dirs"]
        labels = list(dirs.values())
        for folder, label in dirs.items():
            other = next(v for v in labels if v != label)
            for video in range(8):
                path = f"data/videos/level1/{folder}/{video:03}.mp4,"
                for statement, gold in [(template.format(label), "yes"), (template.format(other), "no")]:
                    resp = answer(rng, gold == "yes", p_right, p_invalid)
                    rows.append([scene, statement, path, gold, resp])
    return rows


def write_csv(path, rows):
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["scene", "prompt", "video_file", "gt", "response"])
        w.writerows(rows)


def binary_correct(gt, response):
    last = response.split("<SEP>")[-1]
    words = last.split()
    first = words[0].lower() if words else ""
    first = "".join(c for c in first if c not in string.punctuation)
    return first in ("yes", "no") and first == gt


def mcnemar(a, b):
    """a, b: dict id -> bool. Exact McNemar p via scipy on the discordant pairs."""
    paired = sorted(set(a) & set(b))
    a_only = sum(1 for k in paired if a[k] and not b[k])
    b_only = sum(1 for k in paired if b[k] and not a[k])
    n = a_only + b_only
    p = binomtest(a_only, n, 0.5).pvalue if n else 1.0
    return {
        "n_paired": len(paired),
        "a_only": a_only,
        "b_only": b_only,
        "a_value": sum(a[k] for k in paired) / len(paired),
        "b_value": sum(b[k] for k in paired) / len(paired),
        "p_value": float(p),
    }


def mint_success(config_dir):
    out = {}
    for f in sorted(config_dir.glob("*/*/results.jsonl")):
        task = f.parent.name
        for line in f.read_text().splitlines():
            if not line.strip():
                continue
            rec = json.loads(line)
            tid = rec["task"]["task_id"]
            tid = tid if isinstance(tid, str) else json.dumps(tid)
            out.setdefault(f"{task}/{tid}", bool(rec["state"]["success"]))
    return out


def main():
    OUT.mkdir(parents=True, exist_ok=True)
    ref = {}
    systems = {}
    for name, seed, p_right, p_invalid in [("a", 1, 0.75, 0.05), ("b", 2, 0.6, 0.1)]:
        rows = grasp_rows(seed, p_right, p_invalid)
        write_csv(OUT / f"grasp_{name}.csv", rows)
        seen = {}
        items = {}
        for scene, _prompt, video, gt, resp in rows:
            base = f"{scene}|{video}|{gt}"
            seen[base] = seen.get(base, 0) + 1
            items[f"{base}|#{seen[base]}"] = binary_correct(gt, resp)
        systems[name] = items
    ref["grasp"] = mcnemar(systems["a"], systems["b"])

    outputs = SHARED / "mint/results/data/outputs"
    gpt5 = mint_success(outputs / "gpt-3.5-turbo-0613/F=None/max5_p2+tool+cd")
    llama5 = mint_success(outputs / "Meta-Llama-3-8B-Instruct/F=None/max5_p2+tool+cd")
    gpt1 = mint_success(outputs / "gpt-3.5-turbo-0613/F=None/max1_p1+tool+cd")
    ref["mint_gpt35_vs_llama3_k5"] = mcnemar(gpt5, llama5)
    ref["mint_gpt35_k1_vs_k5"] = mcnemar(gpt1, gpt5)

    ref["binomial"] = [
        [k, m, float(binomtest(k, k + m, 0.5).pvalue)]
        for k, m in [(0, 1), (3, 0), (2, 8), (110, 98), (40, 10), (7, 24), (500, 560), (1000, 1200)]
    ]
    ref["generated_by"] = "scripts/reference/compare_reference.py (scipy.stats.binomtest)"
    (OUT / "reference.json").write_text(json.dumps(ref, indent=2) + "\n")
    print(json.dumps(ref, indent=2))


if __name__ == "__main__":
    main()
