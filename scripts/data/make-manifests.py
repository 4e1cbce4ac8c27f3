#!/usr/bin/env python3
"""Write data/manifests/*.toml from upstream git trees and a local copy of the files (dev-time only).

Inputs:
  --trees DIR   one `git ls-tree -r -l <commit>` listing per dataset, DIR/<name>.tree, taken in a
                clone of the upstream repository at the pinned commit (sizes and git blob ids).
  --local DIR   the project's copy of the data (../shared/data): every file found there under the
                mapping below must have the upstream blob id (byte-identical) and gets its sha256.
Files not in the local copy are pinned by size (when the tree has it) and git blob id only;
`scorekit data pull` records their sha256 on the first verified download.

  python3 scripts/data/make-manifests.py --trees /tmp/trees --local ../shared/data --out data/manifests
"""

import argparse
import hashlib
import os
import sys

# Per dataset: upstream repo, pinned commit, which upstream files are listed, where the local copy
# keeps them, parts, licence notes (from ../shared/data/<name>/PROVENANCE.md).
DATASETS = {
    "possible-stories": {
        "repo": "nii-cl/possible-stories",
        "commit": "3f8c525ffa441fe6bc45d03757c5e4df21c1c57b",
        "description": "Possible Stories (Ashida & Sugawara, COLING 2022): multiple-choice questions "
        "over ROCStories passages with several possible endings.",
        "licence": "Upstream README: the collected story endings, questions and options (excluding "
        "passages) are released under CC BY 4.0. The passages are ROCStories text (the "
        "document/story fields, original_ending, and options[0] of every question); no licence is "
        "stated for them upstream: account for ROCStories' own terms before redistributing.",
        "select": lambda p: p.startswith("dataset/") or p == "README.md",
        "local": lambda p: "possible-stories/" + p.removeprefix("dataset/"),
        "default": "test",
        "parts": [
            ("dev", "dev split: 458 questions over 133 passages", "dataset/dev.jsonl",
             ["dataset/dev.jsonl"]),
            ("test", "test split: 671 questions over 196 passages", "dataset/test.jsonl",
             ["dataset/test.jsonl"]),
            ("endings", "1,350 stories with 8,900 crowd-written endings", "dataset/endings.jsonl",
             ["dataset/endings.jsonl"]),
            ("train", "train split: 3,404 questions (to train a judge)", "dataset/train.jsonl",
             ["dataset/train.jsonl"]),
        ],
    },
    "grasp": {
        "repo": "i-machine-think/grasp",
        "commit": "676d13a1b5d4d86bc3d834529193bd7cce7d764f",
        "description": "GRASP (i-machine-think): test configs and prompt templates of the Level 1 "
        "and Level 2 video tests. The videos are not in the repository (Google Drive).",
        "licence": "MIT, \"Copyright (c) 2024 i-machine-think\" (LICENSE at the repository root).",
        "select": lambda p: p.startswith("configs/tests/") or p.startswith("data/prompts/")
        or p == "LICENSE",
        "local": lambda p: "grasp/" + p,
        "default": "configs",
        "parts": [
            ("configs", "the 6 test configs (test_name, prompt_file, data_csv, mode)",
             "configs/tests", ["configs/tests/"]),
            ("prompts", "Level 1 and Level 2 prompt templates", "data/prompts", ["data/prompts/"]),
        ],
    },
    "muse": {
        "repo": "dgraux/Hive-ICLR-2025",
        "commit": "858763b29d5f06eb47826d42621e46368f7a63be",
        "description": "MuSE, the multi-modal benchmark of Hive (Vyas et al., ICLR 2025): 100 "
        "queries with gold task sets, Hive's PDDL domains and its capability knowledge graph.",
        "licence": "None stated: the repository has no LICENSE file and neither README names a "
        "licence, so the default is all rights reserved. Some queries quote third-party material "
        "(a CNN article, Wikipedia-style passages, song lyrics, a poem); the images and audio have "
        "no stated provenance. Use for internal evaluation only; do not redistribute.",
        "select": lambda p: p.startswith("MuSE_Benchmark/") or p.startswith("PDDL-domain-files/")
        or p in ("C-KG_excerpt/src/nodes_26_09.js", "C-KG_excerpt/src/edges_26_09.js",
                 "C-KG_excerpt/src/visual_data.js", "NLP_Taxonomy/taxonomy.json"),
        "local": lambda p: "muse/" + p,
        "default": "queries",
        "parts": [
            ("queries", "the 100 MuSE queries with their gold tasks", "MuSE_Benchmark/queries.json",
             ["MuSE_Benchmark/queries.json", "MuSE_Benchmark/README.md"]),
            ("domains", "the 10 PDDL domains (28 actions) Hive plans with", "PDDL-domain-files",
             ["PDDL-domain-files/"]),
            ("catalogue", "the capability knowledge graph excerpt (models, nodes, edges) as "
             "upstream JavaScript", "C-KG_excerpt/src", ["C-KG_excerpt/src/"]),
            ("media", "the images and audio the queries refer to", "MuSE_Benchmark/data",
             ["MuSE_Benchmark/data/"]),
            ("taxonomy", "Hive's NLP model-action taxonomy (419 nodes)",
             "NLP_Taxonomy/taxonomy.json", ["NLP_Taxonomy/taxonomy.json"]),
        ],
    },
    "mint": {
        "repo": "xingyaoww/mint-bench",
        "commit": "3f7f12c10bf763be1e6dbdeb42feb57624121f61",
        "description": "MINT (Wang et al., ICLR 2024): the 586 task instances and the archived "
        "multi-turn trajectories of every evaluated agent (data/outputs, 2,490 results.jsonl).",
        "licence": "Repository LICENSE: Apache-2.0; no separate data licence is stated. The "
        "instances come from GSM8K, HotpotQA, MATH, MMLU, TheoremQA, HumanEval, MBPP and ALFWorld, "
        "which have their own licences (not checked). The Hugging Face re-upload "
        "ryanhoangt/xingyaoww-mint-bench is tagged apache-2.0.",
        "select": lambda p: p.startswith("data/outputs/") or p == "LICENSE"
        or (p.startswith("data/processed/") and p.endswith("test_prompts.json"))
        or p == "data/processed/alfworld/prompts/alfworld_3prompts.json",
        "local": lambda p: "mint/results/" + p if p.startswith("data/outputs/") else "mint/" + p,
        "default": "headline",
        "parts": "mint",
    },
}

MINT_HEADLINE = [
    "data/outputs/gpt-3.5-turbo-0613/F=None/max1_p1+tool+cd/",
    "data/outputs/gpt-3.5-turbo-0613/F=None/max2_p2+tool+cd/",
    "data/outputs/gpt-3.5-turbo-0613/F=None/max3_p2+tool+cd/",
    "data/outputs/gpt-3.5-turbo-0613/F=None/max4_p2+tool+cd/",
    "data/outputs/gpt-3.5-turbo-0613/F=None/max5_p2+tool+cd/",
    "data/outputs/gpt-3.5-turbo-0613/F=gpt-4-0613/PHF=no_GT-textual/max5_p2+tool+cd/",
    "data/outputs/Meta-Llama-3-8B-Instruct/F=None/max5_p2+tool+cd/",
]


def mint_parts(paths):
    agents = sorted({p.split("/")[2] for p in paths if p.startswith("data/outputs/")})
    parts = [
        ("tasks", "the task instances: data/processed/*/test_prompts.json (JSON Lines) and the "
         "ALFWorld few-shot prompts", "data/processed", ["data/processed/"]),
        ("headline", "the trajectories behind the paper's headline tables that scorekit's README "
         "reproduces: gpt-3.5-turbo-0613 without feedback (k = 1..5) and with GPT-4 textual "
         "feedback, Meta-Llama-3-8B-Instruct (k = 5)", "data/outputs", MINT_HEADLINE),
    ]
    for a in agents:
        n = sum(1 for p in paths if p.startswith(f"data/outputs/{a}/"))
        parts.append((a, f"every archived trajectory of {a} ({n} results.jsonl)", "data/outputs",
                      [f"data/outputs/{a}/"]))
    return parts


def git_blob(data):
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def q(s):
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


def read_tree(path):
    rows = []
    for line in open(path, encoding="utf-8"):
        meta, name = line.rstrip("\n").split("\t", 1)
        mode, kind, blob, size = meta.split()
        if kind != "blob":
            continue
        rows.append((name, blob, None if size in ("-", "BAD") else int(size)))
    return rows


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--trees", required=True)
    ap.add_argument("--local", required=True)
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    for name, d in DATASETS.items():
        rows = [r for r in read_tree(os.path.join(args.trees, name + ".tree")) if d["select"](r[0])]
        rows.sort()
        paths = [r[0] for r in rows]
        parts = mint_parts(paths) if d["parts"] == "mint" else d["parts"]
        local_n = 0
        lines = []
        for path, blob, size in rows:
            lp = os.path.join(args.local, d["local"](path))
            fields = [f"path = {q(path)}"]
            sha = None
            if os.path.isfile(lp):
                data = open(lp, "rb").read()
                if git_blob(data) != blob:
                    sys.exit(f"{lp}: blob {git_blob(data)} differs from upstream {blob} ({path})")
                if size is not None and size != len(data):
                    sys.exit(f"{lp}: size differs from upstream")
                size = len(data)
                sha = hashlib.sha256(data).hexdigest()
                local_n += 1
            if size is not None:
                fields.append(f"size = {size}")
            if sha:
                fields.append(f"sha256 = {q(sha)}")
            fields.append(f"git_blob = {q(blob)}")
            lines.append("  { " + ", ".join(fields) + " },")
        out = [
            f"# {name}: generated by scripts/data/make-manifests.py from `git ls-tree -r -l` of "
            f"{d['repo']}@{d['commit'][:7]}",
            f"# and the project's copy of the files ({local_n} of {len(rows)} files there: those "
            "carry a sha256;",
            "# the others are pinned by size and git blob id, and `scorekit data pull` records "
            "their sha256).",
            f"name = {q(name)}",
            f"repo = {q(d['repo'])}",
            f"commit = {q(d['commit'])}",
            f"description = {q(d['description'])}",
            f"licence = {q(d['licence'])}",
            f"default = {q(d['default'])}",
            "",
            "# Every file: upstream path, size in bytes, sha256 where known, git blob id.",
            "files = [",
            *lines,
            "]",
            "",
            "# Parts (NAME:PART): `path` is what a scoring command gets, `include` lists files and",
            "# folder prefixes (ending in /). NAME alone means the default part; NAME:all every file.",
        ]
        for pname, desc, ppath, include in parts:
            out += [
                "[[parts]]",
                f"name = {q(pname)}",
                f"description = {q(desc)}",
                f"path = {q(ppath)}",
                "include = [" + ", ".join(q(i) for i in include) + "]",
                "",
            ]
        with open(os.path.join(args.out, name + ".toml"), "w", encoding="utf-8") as f:
            f.write("\n".join(out) + "\n")
        print(f"{name}: {len(rows)} files, {local_n} with sha256 from {args.local}")


if __name__ == "__main__":
    main()
