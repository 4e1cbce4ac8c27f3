#!/usr/bin/env python3
"""Dev-time: write a Level 2 GRASP results.csv with N rows (default 1,000,000) for timing.

  python3 scripts/bench/grasp_rows.py /tmp/g1m.csv
  target/release/scorekit grasp --responses /tmp/g1m.csv --test level2 --out /tmp/g1m-out --force --quiet
"""
import csv, random, sys

path = sys.argv[1]
n = int(sys.argv[2]) if len(sys.argv) > 2 else 1_000_000
random.seed(1)
tests = ["Gravity", "Continuity", "Inertia", "Solidity", "Collision", "Support",
         "Unchangeableness", "ObjectPermanence"]
responses = ["Yes.", "No", "**Yes**, the ball falls.", "no, it does not", "I think so", "Yes<SEP>No.", ""]
with open(path, "w", newline="") as f:
    w = csv.writer(f)
    w.writerow(["scene", "prompt", "video_file", "gt", "response"])
    for i in range(n):
        t, plausible, idx = tests[i % 8], (i // 8) % 2 == 0, i // 16
        w.writerow([("P_" if plausible else "IP_") + t, "Does the video follow physics?",
                    f"videos/{t}/{idx}.mp4", "yes" if plausible else "no", random.choice(responses)])
