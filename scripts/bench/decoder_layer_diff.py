#!/usr/bin/env python3
"""Per-layer prefill rates from two runs of scripts/bench/decoder_peers.py on slices of one shape
with different layer counts (same questions, same batches): per peer, one layer's seconds =
(median prefill of the deeper slice − that of the shallower) / (layer difference). Dev-time only;
BENCHMARKS.md §10.

Why: a slice's prefill also holds the embedding lookup, the head on the last tokens and, for
llama.cpp only, a cheaper last layer (it keeps just the output rows before the last layer's FFN,
src/models/*.cpp `inp_out_ids`, so its 1-layer slice runs the FFN on 4 tokens a batch; PyTorch and
scorekit run it on all). The difference of two depths cancels all three; the full model's prefill is
then about LAYERS × one layer (+ the small fixed part, and llama.cpp's saving of ~0.8–0.9 of one
layer, both < 4% at 28–32 layers).

Run: python3 scripts/bench/decoder_layer_diff.py SHALLOW.json LAYERS DEEP.json LAYERS [FULL_LAYERS]
"""
import json
import statistics
import sys


def medians(path):
    r = json.load(open(path))
    out = {}
    for peer, runs in r["runs"].items():
        if runs:
            out[peer] = (statistics.median(x["prefill_s"] for x in runs),
                         [x["prefill_s"] for x in runs], runs[0]["tokens_timed"],
                         runs[0]["questions_timed"])
    return r, out


def main():
    a_path, la, b_path, lb = sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4])
    full = int(sys.argv[5]) if len(sys.argv) > 5 else None
    ra, a = medians(a_path)
    rb, b = medians(b_path)
    if ra["lengths"] != rb["lengths"] or ra["batches"] != rb["batches"]:
        sys.exit("the two runs did not time the same prompts in the same batches")
    print(f"one layer = ({lb}-layer − {la}-layer) / {lb - la}; {ra['questions']} questions, "
          f"{ra['tokens']} prompt tokens")
    head = "| peer | one layer, s | prompt tokens/s per layer | × torch f32 |"
    if full:
        head += f" full {full} layers, prompt tokens/s (est.) |"
    print(head)
    print("|---" * (head.count("|") - 1) + "|")
    ref = None
    rows = []
    for peer in b:
        if peer not in a:
            continue
        (ma, _, ta, _), (mb, _, tb, _) = a[peer], b[peer]
        per = (mb - ma) / (lb - la)
        tps = tb / per if per > 0 else float("nan")
        rows.append((peer, per, tps))
        if peer == "torch f32":
            ref = tps
    for peer, per, tps in rows:
        vs = f"{tps / ref:.2f}" if ref and per > 0 else "–"
        line = f"| {peer} | {per:.2f} | {tps:.0f} | {vs} |"
        if full:
            line += f" {tps / full:.1f} |"
        print(line)


if __name__ == "__main__":
    main()
