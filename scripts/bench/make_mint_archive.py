#!/usr/bin/env python3
"""Make a MINT-style archive of realistic size from the shared trajectories.

The upstream archive (xingyaoww/mint-bench data/outputs at 3f7f12c: 2,490 results.jsonl,
1.65 GB, 181,935 trajectories, 55 agents) is public but not in ../shared/data; only 2 agents
are. This script copies the shared agent folders (every configuration, every task file, byte
for byte) under new agent names, `c<NNN>-<agent>`, until the archive holds at least
--bytes (default 1.6e9, about the upstream size; pass --scale 4 for four times that).

Each copy is a real file copy, not a link: page cache, read bandwidth and the number of
distinct files behave as in a real archive of that size. Keep the result OUT of the repository
(default /work/mint-archive/1x).

Usage:
  make_mint_archive.py [--src ../shared/data/mint/results/data/outputs] [--out DIR]
                       [--bytes 1.6e9] [--scale 1]
Prints the files, bytes and trajectories written.
"""

import argparse
import os
import shutil
import sys


def tree_files(src):
    """(relative path, size) of every results.jsonl under src, in name order."""
    out = []
    for root, dirs, files in os.walk(src):
        dirs.sort()
        for f in sorted(files):
            if f == "results.jsonl":
                p = os.path.join(root, f)
                out.append((os.path.relpath(p, src), os.path.getsize(p)))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--src", default="../shared/data/mint/results/data/outputs")
    ap.add_argument("--out", default="/work/mint-archive/1x")
    ap.add_argument("--bytes", type=float, default=1.6e9, help="target size at scale 1")
    ap.add_argument("--scale", type=int, default=1, help="multiply the target size")
    args = ap.parse_args()

    files = tree_files(args.src)
    if not files:
        sys.exit(f"{args.src}: no results.jsonl")
    per_copy = sum(s for _, s in files)
    target = args.bytes * args.scale
    copies = -(-int(target) // per_copy)  # ceiling
    if os.path.exists(args.out) and os.listdir(args.out):
        sys.exit(f"{args.out}: exists and is not empty; remove it first")
    os.makedirs(args.out, exist_ok=True)
    written = 0
    lines = 0
    for c in range(copies):
        for rel, size in files:
            agent, rest = rel.split(os.sep, 1)
            dst = os.path.join(args.out, f"c{c:03d}-{agent}", rest)
            os.makedirs(os.path.dirname(dst), exist_ok=True)
            shutil.copyfile(os.path.join(args.src, rel), dst)
            written += size
            if c == 0:
                with open(dst, "rb") as f:
                    lines += sum(1 for _ in f)
    print(
        f"{args.out}: {copies} copies x {len(files)} files = {copies * len(files)} files, "
        f"{written / 1e9:.3f} GB, {copies * lines} trajectories"
    )


if __name__ == "__main__":
    main()
