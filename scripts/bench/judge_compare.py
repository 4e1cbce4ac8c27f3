#!/usr/bin/env python3
"""Judge benchmark: scorekit vs PyTorch (transformers RobertaForMultipleChoice / BertFor...) on
the same judge folder and the same (passage, question + option) pairs of Possible Stories
questions, the same thread count, interleaved rounds, median per engine.

- scorekit: `scorekit bench --judge FOLDER --json --repeats 1` per round (load excluded: its
  own timing of the scoring pass; a 4-pair first batch warms it up).
  The default engine uses split-bf16 AMX products where the CPU has AMX-BF16.
- scorekit-avx512: the same with SCOREKIT_AMX=off (the AVX-512 f32 kernel).
- scorekit-int8: the same with `--quantize` (int8 VNNI products).
- PyTorch: the model loaded once, warmed up, then per round every pair: pairs sorted by
  length, batches of --batch-size sequences padded to the batch's longest, torch.inference_mode,
  one logit per sequence (a multiple-choice head scores each choice on its own).

Accuracy: the scores of the last scorekit round (--save) against PyTorch's logits: max abs
difference and agreement of the per-question argmax.
"""

import argparse
import json
import os
import statistics
import subprocess
import tempfile
import time


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--judge", required=True, help="judge folder")
    ap.add_argument("--dataset", default="../shared/data/possible-stories/dev.jsonl")
    ap.add_argument("--scorekit", default="target/release/scorekit")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--limit", type=int, default=32, help="questions (4 pairs each)")
    ap.add_argument("--batch-size", type=int, default=16)
    ap.add_argument("--batch-tokens", type=int, default=8192)
    ap.add_argument("--engines", default="scorekit,torch,scorekit-avx512")
    ap.add_argument("--json-out", default="")
    args = ap.parse_args()
    for v in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "RAYON_NUM_THREADS"):
        os.environ[v] = str(args.threads)
    import numpy as np
    import torch
    from transformers import AutoModelForMultipleChoice, AutoTokenizer

    torch.set_num_threads(args.threads)
    engines = args.engines.split(",")
    questions = [json.loads(l) for l in open(args.dataset, encoding="utf-8") if l.strip()]
    questions = questions[: args.limit]
    # As crates/suites/src/story.rs Question::pair: (document, question + " " + option).
    pairs = [(q["document"], q["question"] + " " + o)
             for q in questions for o in q["options"]]
    tmp = tempfile.mkdtemp(prefix="scorekit-judge-bench-")
    scores_npy = os.path.join(tmp, "scores.npy")

    tok = AutoTokenizer.from_pretrained(args.judge)
    model = AutoModelForMultipleChoice.from_pretrained(args.judge).eval()
    enc = [tok(a, b, truncation=True, max_length=min(512, tok.model_max_length))["input_ids"]
           for a, b in pairs]
    order = sorted(range(len(enc)), key=lambda i: len(enc[i]))
    batches = [order[i:i + args.batch_size] for i in range(0, len(order), args.batch_size)]
    pad = tok.pad_token_id

    def run_torch():
        out = np.zeros(len(enc), dtype=np.float32)
        with torch.inference_mode():
            for b in batches:
                L = max(len(enc[i]) for i in b)
                ids = torch.full((len(b), 1, L), pad, dtype=torch.long)
                mask = torch.zeros((len(b), 1, L), dtype=torch.long)
                for r, i in enumerate(b):
                    ids[r, 0, : len(enc[i])] = torch.tensor(enc[i])
                    mask[r, 0, : len(enc[i])] = 1
                out[b] = model(input_ids=ids, attention_mask=mask).logits[:, 0].numpy()
        return out

    # scorekit engines: the default (split-bf16 AMX products where the CPU has AMX, else
    # AVX-512 f32), scorekit-avx512 (SCOREKIT_AMX=off: the AVX-512 f32 kernel), scorekit-int8.
    SCOREKIT = ("scorekit", "scorekit-avx512", "scorekit-int8")

    def run_scorekit(e, save):
        quant = e == "scorekit-int8"
        env = dict(os.environ)
        if e == "scorekit-avx512":
            env["SCOREKIT_AMX"] = "off"
        q_file = os.path.join(tmp, "questions.jsonl")
        if not os.path.exists(q_file):
            with open(q_file, "w", encoding="utf-8") as f:
                for q in questions:
                    f.write(json.dumps(q) + "\n")
        cmd = [args.scorekit, "bench", "--judge", args.judge, "--input", q_file, "--repeats", "1",
               "--json", "--offline", "--batch-tokens", str(args.batch_tokens)]
        if quant:
            cmd.append("--quantize")
        if save:
            cmd += ["--save", f"{scores_npy}.{e}.npy"]
        r = subprocess.run(cmd, check=True, capture_output=True, text=True, env=env)
        return json.loads(r.stdout.strip().splitlines()[-1])

    if "torch" in engines:
        with torch.inference_mode():
            model(input_ids=torch.tensor([[enc[0]]]))  # warm-up
    times = {e: [] for e in engines}
    info = {}
    torch_scores = None
    for r in range(args.rounds):
        for e in engines:
            if e in SCOREKIT:
                j = run_scorekit(e, save=(r == args.rounds - 1))
                times[e].append(j["median_s"])
                info[e] = j
            else:
                t = time.perf_counter()
                torch_scores = run_torch()
                times[e].append(time.perf_counter() - t)
        print(f"round {r}: " + ", ".join(f"{e} {times[e][-1]:.2f} s" for e in engines), flush=True)
    med = {e: statistics.median(v) for e, v in times.items()}
    tokens = sum(len(x) for x in enc)
    result = {
        "judge": args.judge, "questions": len(questions), "pairs": len(pairs),
        "torch_tokens": tokens, "threads": args.threads, "rounds": args.rounds,
        "times_s": times, "median_s": med,
        "torch_version": torch.__version__,
    }
    pick = lambda s: s.reshape(-1, 4).argmax(axis=1)
    for e in SCOREKIT:
        if e not in info:
            continue
        result[e] = info[e]
        if "torch" in med:
            sk = np.load(f"{scores_npy}.{e}.npy")[:, 0]
            result[f"ratio_{e}_over_torch"] = med["torch"] / med[e]
            result[f"{e}_max_abs_diff"] = float(np.abs(sk - torch_scores).max())
            result[f"{e}_argmax_agreement"] = float((pick(sk) == pick(torch_scores)).mean())
    if "torch" in med:
        # Random weights give near-equal logits per question: report their spread too.
        result["torch_logit_spread_per_question_median"] = float(
            np.median(torch_scores.reshape(-1, 4).max(1) - torch_scores.reshape(-1, 4).min(1)))
    print(json.dumps(result, indent=1))
    if args.json_out:
        json.dump(result, open(args.json_out, "w"), indent=1)


if __name__ == "__main__":
    main()
