#!/usr/bin/env python3
"""Side-by-side CPU embedding benchmark: scorekit vs sentence-transformers (PyTorch) vs ONNX
Runtime, on the same model folder and the same sentences, with the same thread count.

Rounds are interleaved (scorekit, sentence-transformers, ONNX Runtime, scorekit int8, then the
next round) and each engine's figure is the median over rounds, so a noisy shared machine slows
all engines alike; the ratios are the honest figure. Each engine is warmed up before timing.

- scorekit-candle: the same with SCOREKIT_ENCODER=candle (candle's BertModel, the baseline).
- scorekit-avx512: the same with SCOREKIT_AMX=off (the AVX-512 f32 kernel instead of the
  split-bf16 AMX products scorekit uses where the CPU has AMX-BF16).
- scorekit: `scorekit bench --json --repeats 1` per round (its own warm-up; load time excluded,
  reported separately).
- sentence-transformers: `SentenceTransformer(folder).encode(sentences, batch_size=32)`
  (sorts by length, tokenises, pools, normalises: the whole pipeline, like scorekit).
- ONNX Runtime: the folder's transformer exported once with torch.onnx (opset 17, dynamic batch
  and length), ORT_ENABLE_ALL, intra_op_num_threads = threads; length-sorted batches of 32
  tokenised by the same fast tokenizer; pooling, Dense and Normalize in NumPy (the same modules).

Accuracy: cosine of scorekit (f32 and int8) to sentence-transformers per sentence, and on
Possible Stories endings the Dissimilarity (mean over stories of mean pairwise 1 - cos among its
endings) from each engine's vectors.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time


def read_corpus(path):
    """Same order as `scorekit bench`: every ending, then every passage (or text / lines)."""
    out, passages, groups = [], [], []
    if path.endswith(".jsonl"):
        for line in open(path, encoding="utf-8"):
            if not line.strip():
                continue
            r = json.loads(line)
            if "text" in r:
                out.append(r["text"])
            else:
                start = len(out)
                out.extend(e["ending"] for e in r["endings"])
                groups.append((start, len(out)))
                passages.append(r["story"])
        out.extend(passages)
    else:
        out = [l.rstrip("\n") for l in open(path, encoding="utf-8") if l.strip()]
    return out, groups


def dissimilarity(emb, groups, np):
    vals = []
    for a, b in groups:
        if b - a < 2:
            continue
        e = emb[a:b]
        e = e / np.linalg.norm(e, axis=1, keepdims=True)
        s = e @ e.T
        n = b - a
        vals.append(float((n * n - s.sum()) / (n * (n - 1))))
    return sum(vals) / len(vals) if vals else float("nan")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", required=True, help="sentence-transformers folder")
    ap.add_argument("--corpus", default="../shared/data/possible-stories/endings.jsonl")
    ap.add_argument("--scorekit", default="target/release/scorekit")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--limit", type=int, default=0)
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--batch-tokens", type=int, default=8192)
    ap.add_argument("--engines", default="scorekit,st,ort,scorekit-int8")
    ap.add_argument("--json-out", default="")
    args = ap.parse_args()

    for v in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "RAYON_NUM_THREADS"):
        os.environ[v] = str(args.threads)
    import numpy as np
    import torch

    torch.set_num_threads(args.threads)
    engines = args.engines.split(",")
    sentences, groups = read_corpus(args.corpus)
    if args.limit:
        sentences = sentences[: args.limit]
        groups = [(a, b) for a, b in groups if b <= args.limit]
    tmp = tempfile.mkdtemp(prefix="scorekit-bench-")
    corpus_txt = os.path.join(tmp, "corpus.txt")
    with open(corpus_txt, "w", encoding="utf-8") as f:
        for s in sentences:
            f.write(s.replace("\n", " ") + "\n")

    times = {e: [] for e in engines}
    vectors = {}
    info = {}

    SCOREKIT = ("scorekit", "scorekit-int8", "scorekit-candle", "scorekit-avx512")

    def run_scorekit(e, save):
        quant = e == "scorekit-int8"
        env = dict(os.environ)
        if e == "scorekit-candle":
            env["SCOREKIT_ENCODER"] = "candle"
        if e == "scorekit-avx512":
            env["SCOREKIT_AMX"] = "off"
        cmd = [args.scorekit, "bench", "--model", args.model, "--input", corpus_txt,
               "--repeats", "1", "--json", "--offline", "--batch-tokens", str(args.batch_tokens)]
        if quant:
            cmd.append("--quantize")
        if save:
            cmd += ["--save", save]
        out = subprocess.run(cmd, check=True, capture_output=True, text=True, env=env).stdout
        return json.loads(out.strip().splitlines()[-1])

    st_model = None
    if "st" in engines or "ort" in engines:
        from sentence_transformers import SentenceTransformer

        st_model = SentenceTransformer(args.model, device="cpu")
        st_model.encode(sentences[:64], batch_size=args.batch_size)

    ort_sess = None
    if "ort" in engines:
        import onnxruntime as ort

        onnx_path = os.path.join(tmp, "model.onnx")
        hf = st_model[0].auto_model.eval()
        dummy = st_model.tokenizer(["hello world"] * 2, return_tensors="pt", padding=True)
        feeds = ["input_ids", "attention_mask", "token_type_ids"]
        feeds = [k for k in feeds if k in dummy]
        t0 = time.time()
        class Wrap(torch.nn.Module):
            def __init__(self, m):
                super().__init__()
                self.m = m

            def forward(self, *xs):
                return self.m(**dict(zip(feeds, xs))).last_hidden_state

        with torch.no_grad():
            torch.onnx.export(
                Wrap(hf), tuple(dummy[k] for k in feeds), onnx_path, input_names=feeds,
                output_names=["last_hidden_state"], opset_version=17, dynamo=False,
                dynamic_axes={k: {0: "b", 1: "s"} for k in feeds + ["last_hidden_state"]},
            )
        so = ort.SessionOptions()
        so.intra_op_num_threads = args.threads
        so.inter_op_num_threads = 1
        so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        ort_sess = ort.InferenceSession(onnx_path, so, providers=["CPUExecutionProvider"])
        info["ort_export_s"] = time.time() - t0

    def ort_encode(texts):
        tok = st_model.tokenizer
        max_len = st_model.max_seq_length
        order = sorted(range(len(texts)), key=lambda i: -len(texts[i]))
        out = [None] * len(texts)
        for b0 in range(0, len(order), args.batch_size):
            idx = order[b0:b0 + args.batch_size]
            enc = tok([texts[i] for i in idx], padding=True, truncation=True,
                      max_length=max_len, return_tensors="np")
            feed = {k: enc[k].astype(np.int64) for k in ("input_ids", "attention_mask", "token_type_ids")
                    if k in enc and k in [i.name for i in ort_sess.get_inputs()]}
            h = ort_sess.run(None, feed)[0]
            feats = {"token_embeddings": torch.from_numpy(h),
                     "attention_mask": torch.from_numpy(enc["attention_mask"])}
            with torch.no_grad():
                for m in list(st_model)[1:]:
                    feats = m(feats)
            e = feats["sentence_embedding"].numpy()
            for j, i in enumerate(idx):
                out[i] = e[j]
        return np.stack(out)

    if ort_sess is not None:
        ort_encode(sentences[:64])

    for r in range(args.rounds):
        last = r == args.rounds - 1
        for e in engines:
            if e in SCOREKIT:
                save = os.path.join(tmp, f"{e}.npy") if last else None
                res = run_scorekit(e, save)
                times[e].append(res["median_s"])
                info[e] = res
                if save:
                    vectors[e] = np.load(save)
            elif e == "st":
                t0 = time.perf_counter()
                v = st_model.encode(sentences, batch_size=args.batch_size)
                times[e].append(time.perf_counter() - t0)
                if last:
                    vectors[e] = v
            elif e == "ort":
                t0 = time.perf_counter()
                v = ort_encode(sentences)
                times[e].append(time.perf_counter() - t0)
                if last:
                    vectors[e] = v
            print(f"round {r + 1} {e:14s} {times[e][-1]:8.2f} s", file=sys.stderr, flush=True)

    med = {e: statistics.median(t) for e, t in times.items()}
    n = len(sentences)
    print(f"\nmodel {args.model}; {n} sentences; threads {args.threads}; "
          f"{args.rounds} interleaved rounds, median")
    print(f"{'engine':16s} {'median s':>9s} {'sent/s':>8s} {'scorekit speed-up':>18s}")
    for e in engines:
        line = f"{e:16s} {med[e]:9.2f} {n / med[e]:8.1f}"
        if "scorekit" in med and e != "scorekit":
            line += f" {med[e] / med['scorekit']:17.2f}x"
        print(line)
    ratios = {}
    for base in ("st", "ort"):
        if base in med:
            for e in SCOREKIT:
                if e in med:
                    ratios[f"{e}/{base}"] = med[base] / med[e]
    for k, v in ratios.items():
        print(f"ratio {k:24s} {v:5.2f}x  (>1: scorekit faster)")

    acc = {}
    ref = vectors.get("st")

    def cos_rows(a, b):
        a = a / np.linalg.norm(a, axis=1, keepdims=True)
        b = b / np.linalg.norm(b, axis=1, keepdims=True)
        return (a * b).sum(1)

    for e in SCOREKIT + ("ort",):
        if e in vectors and ref is not None:
            c = cos_rows(vectors[e].astype(np.float64), ref.astype(np.float64))
            acc[f"cos {e} vs st"] = {"min": float(c.min()), "mean": float(c.mean())}
    if "scorekit" in vectors and "scorekit-int8" in vectors:
        c = cos_rows(vectors["scorekit-int8"].astype(np.float64), vectors["scorekit"].astype(np.float64))
        acc["cos scorekit-int8 vs scorekit"] = {"min": float(c.min()), "mean": float(c.mean())}
    if groups:
        for e, v in vectors.items():
            acc[f"dissimilarity {e}"] = dissimilarity(v.astype(np.float64), groups, np)
    for k, v in acc.items():
        print(f"{k:36s} {v}")
    for e in SCOREKIT:
        if e in info:
            i = info[e]
            print(f"{e}: load {i['load_s']:.2f} s, load→first batch {i['first_batch_s']:.2f} s, "
                  f"peak RSS {i['peak_rss_bytes'] / 2**20:.0f} MiB = {i['peak_rss_over_weights']:.2f}× weights, "
                  f"{i['gflops']:.0f} GFLOP/s = {100 * i['peak_fraction']:.0f}% of {i['peak_gflops']:.0f} ({i['peak_isa']}), "
                  f"padding {100 * (1 - i['real_tokens'] / i['padded_tokens']):.1f}%")
    if args.json_out:
        with open(args.json_out, "w") as f:
            json.dump({"times": times, "median": med, "ratios": ratios, "accuracy": acc,
                       "info": info, "sentences": n, "threads": args.threads}, f, indent=1)


if __name__ == "__main__":
    main()
