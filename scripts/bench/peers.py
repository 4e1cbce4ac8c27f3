#!/usr/bin/env python3
"""Peers for `scorekit bench --compare`: sentence-transformers (PyTorch) and ONNX Runtime on the
sentences, batches and lengths of a scorekit grid, written as cells of the same schema.

    scorekit bench --model FOLDER --batch-tokens 2048,8192 --max-length 128,256 --out grid/
    python scripts/bench/peers.py --grid grid/bench.json --model FOLDER --out peers.json
    scorekit bench --model FOLDER --batch-tokens 2048,8192 --max-length 128,256 --out grid/ \\
        --compare peers.json

Dev-time only (scorekit never runs Python). Needs torch, sentence-transformers, onnxruntime and
onnx. What it measures, per (corpus, batch tokens, max length) of the grid and per engine:

- the same sentences: the grid folder's corpus.jsonl / synthetic-N.jsonl, checked against the
  sha256 bench.json records;
- the same batches: scorekit's plan (sort by token length, longest first, stable; pack while
  rows x longest row fits the batch-token budget), on lengths from the same tokenizer.json;
- per batch: tokenisation (summed into tokenize_s) apart from the model (the latency), the model
  being the SentenceTransformer modules (`model(features)`) or ONNX Runtime's session for the
  transformer plus the same pooling / Dense / Normalize modules in PyTorch;
- each cell loads its model afresh (load_s, first_batch_s = load + the first 32 sentences),
  runs --warmup batches, then --repeats timed passes; peak RSS is VmHWM, reset before each cell
  through /proc/self/clear_refs where Linux allows (as scorekit does).

sentence-transformers runs f32, and bf16 where the device has it (a CUDA GPU with bf16, or a CPU
with AVX512-BF16 / AMX-BF16; --dtypes overrides). ONNX Runtime runs the f32 export
(torch.onnx, opset 17, dynamic batch and length, ORT_ENABLE_ALL, intra-op threads = --threads).
The model must be the grid's: the sha256 of its weight file must equal bench.json's.
"""

import argparse
import hashlib
import json
import os
import platform
import statistics
import sys
import tempfile
import time


def sha256_file(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def corpus_sha256(sentences):
    h = hashlib.sha256()
    for s in sentences:
        h.update(s.encode("utf-8"))
        h.update(b"\n")
    return h.hexdigest()


def plan_batches(lengths, batch_tokens):
    """scorekit's plan_batches (crates/encoder/src/batching.rs), index for index."""
    budget = max(batch_tokens, 1)
    order = sorted(range(len(lengths)), key=lambda i: -lengths[i])  # stable, like Rust's
    batches, cur, padded = [], [], 0
    for i in order:
        n = max(lengths[i], 1)
        p = max(padded, n)
        if cur and (len(cur) + 1) * p > budget:
            batches.append((cur, padded))
            cur, padded = [], 0
        padded = max(padded, n)
        cur.append(i)
    if cur:
        batches.append((cur, padded))
    return batches


def peak_rss_reset():
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
    except OSError:
        pass


def peak_rss_bytes():
    try:
        for line in open("/proc/self/status"):
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def percentile(xs, p):
    """Nearest rank, as scorekit's bench::doc::percentile (crates/bench)."""
    v = sorted(xs)
    import math

    rank = math.ceil(p / 100.0 * len(v))
    return v[min(max(rank, 1), len(v)) - 1]


def cpu_has_bf16():
    try:
        flags = open("/proc/cpuinfo").read()
    except OSError:
        return False
    return " avx512_bf16" in flags or " amx_bf16" in flags


def cpu_name():
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or None


def flops(layers, h, inter, b, s):
    """scorekit's bert::forward_flops."""
    t = b * s
    return layers * t * (2.0 * (4.0 * h * h + 2.0 * h * inter) + 4.0 * s * h)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--grid", required=True, help="bench.json of a `scorekit bench --out` run")
    ap.add_argument("--model", required=True, help="the model folder the grid measured")
    ap.add_argument("--out", required=True, help="where to write the peers' cells (JSON)")
    ap.add_argument("--engines", default="st,ort", help="st, ort (comma-separated)")
    ap.add_argument("--dtypes", default=None,
                    help="sentence-transformers precisions (default: f32, and bf16 where the device has it)")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--threads", type=int, default=None, help="default: the grid's")
    ap.add_argument("--repeats", type=int, default=None, help="default: the grid's")
    ap.add_argument("--warmup", type=int, default=None, help="default: the grid's")
    args = ap.parse_args()

    grid = json.load(open(args.grid))
    grid_dir = os.path.dirname(os.path.abspath(args.grid))
    threads = args.threads or grid["threads"]
    repeats = args.repeats or grid["repeats"]
    warmup = grid["warmup"] if args.warmup is None else args.warmup

    import numpy as np
    import torch

    torch.set_num_threads(threads)
    from sentence_transformers import SentenceTransformer

    weights = next((os.path.join(args.model, f) for f in ("model.safetensors", "pytorch_model.bin")
                    if os.path.exists(os.path.join(args.model, f))), None)
    if weights is None:
        sys.exit(f"peers.py: {args.model} has no model.safetensors or pytorch_model.bin")
    model_sha = sha256_file(weights)
    if model_sha != grid["model_sha256"]:
        sys.exit(f"peers.py: {weights} has sha256 {model_sha}, the grid measured {grid['model_sha256']}")

    corpora = {}
    for c in grid["corpora"]:
        if not c.get("file"):
            sys.exit(f"peers.py: the grid wrote no sentence file for {c['label']}")
        texts = [json.loads(l)["text"] for l in open(os.path.join(grid_dir, c["file"]), encoding="utf-8")]
        if corpus_sha256(texts) != c["sha256"]:
            sys.exit(f"peers.py: {c['file']} is not the list bench.json records (sha256 differs)")
        corpora[c["label"]] = texts

    axes = []
    for cell in grid["cells"]:
        k = (cell["corpus"], cell["batch_tokens"], cell["max_length"])
        if k not in axes:
            axes.append(k)

    cfg = json.load(open(os.path.join(args.model, "config.json")))
    dims = (cfg["num_hidden_layers"], cfg["hidden_size"], cfg["intermediate_size"])

    engines = [e.strip() for e in args.engines.split(",") if e.strip()]
    if args.dtypes:
        st_dtypes = [d.strip() for d in args.dtypes.split(",")]
    else:
        st_dtypes = ["f32"]
        has_bf16 = (torch.cuda.is_available() and torch.cuda.is_bf16_supported()) if args.device.startswith("cuda") else cpu_has_bf16()
        if has_bf16:
            st_dtypes.append("bf16")
    torch_dtype = {"f32": torch.float32, "bf16": torch.bfloat16, "f16": torch.float16}

    tmp = tempfile.mkdtemp(prefix="peers-")
    onnx_path = None

    def export_onnx(st):
        nonlocal onnx_path
        if onnx_path:
            return onnx_path
        path = os.path.join(tmp, "model.onnx")
        hf = st[0].auto_model.eval()
        dummy = st.tokenizer(["hello world"] * 2, return_tensors="pt", padding=True)
        feeds = [k for k in ("input_ids", "attention_mask", "token_type_ids") if k in dummy]

        class Wrap(torch.nn.Module):
            def __init__(self, m):
                super().__init__()
                self.m = m

            def forward(self, *xs):
                return self.m(**dict(zip(feeds, xs))).last_hidden_state

        with torch.no_grad():
            torch.onnx.export(
                Wrap(hf), tuple(dummy[k] for k in feeds), path, input_names=feeds,
                output_names=["last_hidden_state"], opset_version=17, dynamo=False,
                dynamic_axes={k: {0: "b", 1: "s"} for k in feeds + ["last_hidden_state"]},
            )
        onnx_path = path
        return path

    def measure(engine, dtype, label, batch_tokens, max_length):
        texts = corpora[label]
        peak_rss_reset()
        t0 = time.perf_counter()
        st = SentenceTransformer(args.model, device=args.device)
        st.max_seq_length = max_length
        if dtype != "f32":
            st = st.to(torch_dtype[dtype])
        sess = None
        if engine == "ort":
            import onnxruntime as ort

            so = ort.SessionOptions()
            so.intra_op_num_threads = threads
            so.inter_op_num_threads = 1
            so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
            sess = ort.InferenceSession(export_onnx(st), so, providers=["CPUExecutionProvider"])
            names = [i.name for i in sess.get_inputs()]
        load_s = time.perf_counter() - t0

        def tokenize(batch):
            if engine == "st":
                return st.tokenize(batch)
            return st.tokenizer(batch, padding=True, truncation=True, max_length=max_length,
                                return_tensors="np")

        def forward(feats):
            with torch.inference_mode():
                if engine == "st":
                    f = {k: v.to(args.device) if hasattr(v, "to") else v for k, v in feats.items()}
                    out = st(f)["sentence_embedding"]
                    if args.device.startswith("cuda"):
                        torch.cuda.synchronize()
                    return out
                feed = {k: feats[k].astype(np.int64) for k in names}
                h = sess.run(None, feed)[0]
                f = {"token_embeddings": torch.from_numpy(h),
                     "attention_mask": torch.from_numpy(feats["attention_mask"])}
                for m in list(st)[1:]:
                    f = m(f)
                return f["sentence_embedding"]

        first = texts[:32]
        t1 = time.perf_counter()
        forward(tokenize(first))
        first_batch_s = load_s + time.perf_counter() - t1

        enc = st.tokenizer(texts, truncation=True, max_length=max_length)["input_ids"]
        lengths = [len(x) for x in enc]
        plan = plan_batches(lengths, batch_tokens)
        batches = [[texts[i] for i in idx] for idx, _ in plan]
        for b in (batches * 4)[:warmup]:
            forward(tokenize(b))
        tok_s, model_s, pass_s, lat = [], [], [], []
        for _ in range(repeats):
            tt = tm = 0.0
            for b in batches:
                t = time.perf_counter()
                feats = tokenize(b)
                t2 = time.perf_counter()
                forward(feats)
                t3 = time.perf_counter()
                tt += t2 - t
                tm += t3 - t2
                lat.append(t3 - t2)
            tok_s.append(tt)
            model_s.append(tm)
            pass_s.append(tt + tm)
        n, real = len(texts), sum(lengths)
        padded = sum(len(idx) * p for idx, p in plan)
        med, fast, slow = statistics.median(pass_s), min(pass_s), max(pass_s)
        msec = statistics.median(model_s)
        g_real = sum(flops(*dims, 1, s) for s in lengths) / 1e9
        g_pad = sum(flops(*dims, len(idx), p) for idx, p in plan) / 1e9
        ms = [x * 1e3 for x in lat]
        return {
            "engine": "sentence-transformers" if engine == "st" else "onnxruntime",
            "corpus": label, "batch_tokens": batch_tokens, "max_length": max_length,
            "dtype": dtype, "sentences": n, "real_tokens": real, "padded_tokens": padded,
            "batches": len(plan), "repeats_s": pass_s,
            "sentences_per_s": n / med, "sentences_per_s_min": n / slow, "sentences_per_s_max": n / fast,
            "real_tokens_per_s": real / med, "real_tokens_per_s_min": real / slow,
            "real_tokens_per_s_max": real / fast, "padded_tokens_per_s": padded / med,
            "latency_ms": {"p50": percentile(ms, 50), "p90": percentile(ms, 90),
                           "p99": percentile(ms, 99), "n": len(ms)},
            "tokenize_s": statistics.median(tok_s), "model_s": msec, "load_s": load_s,
            "first_batch_s": first_batch_s, "peak_rss_bytes": peak_rss_bytes(),
            "gflop_real": g_real, "gflop_padded": g_pad,
            "padded_equivalent_gflops": g_pad / msec,
        }

    runs = []
    if "st" in engines:
        runs += [("st", d) for d in st_dtypes]
    if "ort" in engines:
        runs.append(("ort", "f32"))
    cells = []
    for engine, dtype in runs:
        for label, bt, ml in axes:
            c = measure(engine, dtype, label, bt, ml)
            print(f"{c['engine']} {dtype} {label} bt {bt} len {ml}: {c['sentences_per_s']:.1f} sentences/s, "
                  f"p50 {c['latency_ms']['p50']:.1f} ms", file=sys.stderr)
            cells.append(c)

    import sentence_transformers

    versions = f"sentence-transformers {sentence_transformers.__version__}, torch {torch.__version__}"
    if "ort" in engines:
        import onnxruntime

        versions += f", onnxruntime {onnxruntime.__version__}"
    doc = {
        "tool": f"peers.py ({versions})",
        "model": args.model, "model_sha256": model_sha, "device": args.device,
        "threads": threads, "unit": "sentences", "repeats": repeats, "warmup": warmup,
        "corpora": [{"label": c["label"], "source": c["source"], "file": c.get("file"),
                     "sentences": len(corpora[c["label"]]), "sha256": corpus_sha256(corpora[c["label"]])}
                    for c in grid["corpora"]],
        "cells": cells,
    }
    if args.device == "cpu":
        doc["cpu"] = cpu_name()
    else:
        doc["gpu"] = torch.cuda.get_device_name(0) if args.device.startswith("cuda") else args.device
    with open(args.out, "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")
    print(f"peers.py: {len(cells)} cells in {args.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
