#!/usr/bin/env python3
"""The plain Python pass over a MINT archive that `scorekit mint` is measured against.

Single-threaded, standard library only, as a script someone would write to tabulate stored
flags: walk the folder, read every results.jsonl line by line, `json.loads` each line, and count
trajectories and stored successes (`state.success`) per (configuration, task type) with a
Counter. It does no more than that: no duplicate handling, no completeness check, no intervals,
no files written. Prints the totals and the micro success rate of each configuration, so that a
run can be checked against scorekit's sr.csv.

Usage: mint_python_baseline.py OUTPUTS_DIR
"""

import collections
import json
import os
import sys


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    root = sys.argv[1]
    n = collections.Counter()
    ok = collections.Counter()
    files = 0
    for dirpath, dirs, names in os.walk(root):
        dirs.sort()
        if "results.jsonl" not in names:
            continue
        files += 1
        parts = os.path.relpath(dirpath, root).split(os.sep)
        config, task_type = "/".join(parts[:-2]), parts[-2]
        with open(os.path.join(dirpath, "results.jsonl"), encoding="utf-8") as f:
            for line in f:
                if not line.strip():
                    continue
                rec = json.loads(line)
                key = (config, task_type)
                n[key] += 1
                ok[key] += bool(rec["state"]["success"])
    configs = collections.defaultdict(lambda: [0, 0])
    for (config, _), v in n.items():
        configs[config][0] += v
        configs[config][1] += ok[(config, _)]
    print(f"{files} files, {sum(n.values())} trajectories, {sum(ok.values())} stored successes")
    for config in sorted(configs):
        total, good = configs[config]
        print(f"{config}\t{total}\t{good / total:.4f}")


if __name__ == "__main__":
    main()
