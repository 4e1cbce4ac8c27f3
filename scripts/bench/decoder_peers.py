#!/usr/bin/env python3
"""Prefill throughput of a decoder letter judge: scorekit against PyTorch (transformers) and
llama.cpp (llama-cpp-python), same prompts, same batches, same threads, interleaved rounds
(dev-time only; BENCHMARKS.md §10, "7–8B-shaped judges against PyTorch and llama.cpp").

The prompts: the first Q Possible Stories dev questions, run_llm.py's zero-shot prompt
(scripts/reference/decoder_reference.py's `zero_shot`) as the one user message of the model's chat
template, tokenized without special tokens: what `scorekit judge eval --no-calibration` asks.
The batches: scorekit's plan (crates/encoder/src/batching.rs: longest first, greedy under a budget
of padded tokens, `--batch-tokens`), with the budget BATCH × the longest prompt, so every peer runs
the same groups of prompts (about BATCH each).

Peers (each measurement is its own process, so only one model is in memory at a time):
  scorekit NAME=FLAGS   `BIN judge eval --no-calibration` on the Q questions and on the first
                        question alone; prefill = wall(Q) − wall(1) over tokens(Q) − tokens(1)
                        (load, page-in and start-up cancel; the 1-question run also pays the
                        first batch's one-time costs). FLAGS are added as they are, e.g.
                        "bf16=--dtype bf16", "int8=--quantize", "candle=--engine candle".
  torch f32|bf16|int8   transformers, sdpa attention (--torch-attn), no torch.compile: f32 weights,
                        bf16 weights, or f32 with torch.ao dynamic int8 quantisation of every
                        nn.Linear (qint8 weights, int8 activations per batch); left padding,
                        attention mask, position ids as `generate` computes them, only the last
                        position's logits (logits_to_keep=1). Timed after a one-prompt warm-up.
  llama NAME=GGUF[,norepack]
                        llama.cpp through the binding's C API: each batch as one llama_decode with
                        one sequence per prompt (no padding), n_batch = n_ubatch ≥ the batch's
                        tokens, n_threads = n_threads_batch = THREADS, logits of each prompt's last
                        token only, KV cache cleared between batches, weights read at load (no
                        mmap). Timed after the same warm-up. ",norepack": use_extra_bufts off, no
                        AMX / repacked weight buffers (llama-cpp-python 0.3.36's Q8_0 on the AMX
                        buffer type segfaults in llama_decode on this CPU; off, Q8_0 runs on
                        ggml's AVX-512 VNNI dot products).

On a slice of few layers llama.cpp does less work than the others: it keeps only the output rows
before the last layer's FFN (src/models/*.cpp `inp_out_ids`), so compare it per layer, from two depths
(scripts/bench/decoder_layer_diff.py), not from one 1-layer slice.

Correctness, lightly: each peer's pick (argmax of the four letter logits) on each question, and
its agreement with the first torch peer (else the first peer). Random weights give letter logits
close together, so bf16 and int8 peers may differ on a few questions.

Run (from the repository root; build/peer-venv from scripts/bench/peer_venv.sh):
  build/peer-venv/bin/python scripts/bench/decoder_peers.py --model DIR --dev DEV.jsonl \
      --questions 8 --batch 4 --threads 2 --repeats 2 --work target/bench-peers/work \
      --scorekit-bin target/release/scorekit --scorekit f32= --scorekit "bf16=--dtype bf16" \
      --torch f32 --torch bf16 --torch int8 --llama bf16=DIR.bf16.gguf --llama q8_0=DIR.q8_0.gguf \
      --json target/bench-peers/result.json
Prints a markdown table and writes the JSON (every run's numbers and picks).
"""
import argparse
import json
import os
import shlex
import statistics
import subprocess
import sys
import time

LETTERS = ["A", "B", "C", "D"]


# ---------------------------------------------------------------- prompts and batches


def plan_batches(lengths, budget):
    """crates/encoder/src/batching.rs's plan_batches: longest first (stable), greedy under
    rows × longest ≤ budget; a prompt longer than the budget gets a batch of its own."""
    budget = max(budget, 1)
    order = sorted(range(len(lengths)), key=lambda i: -lengths[i])
    batches, cur, padded = [], [], 0
    for i in order:
        n = max(lengths[i], 1)
        p = max(padded, n)
        if cur and (len(cur) + 1) * p > budget:
            batches.append(cur)
            cur, padded = [], 0
        padded = max(padded, n)
        cur.append(i)
    if cur:
        batches.append(cur)
    return batches


def prepare(a):
    """Render and tokenize the prompts once; write the question files and prompts.json."""
    from transformers import AutoTokenizer
    sys.path.insert(0, "scripts/reference")
    from decoder_reference import zero_shot

    os.makedirs(a.work, exist_ok=True)
    lines = []
    with open(a.dev) as f:
        for line in f:
            if line.strip():
                lines.append(line if line.endswith("\n") else line + "\n")
            if len(lines) == a.questions:
                break
    for name, part in [("q.jsonl", lines), ("q1.jsonl", lines[:1])]:
        with open(os.path.join(a.work, name), "w") as f:
            f.writelines(part)
    tok = AutoTokenizer.from_pretrained(a.model)
    ids = []
    for line in lines:
        q = json.loads(line)
        text = tok.apply_chat_template([{"role": "user", "content": zero_shot(q)}],
                                       add_generation_prompt=True, tokenize=False)
        ids.append(tok(text, add_special_tokens=False)["input_ids"])
    letter_ids = []
    for letter in LETTERS:
        t = tok.encode(letter, add_special_tokens=False)
        assert len(t) == 1, f"letter {letter} is {len(t)} tokens"
        letter_ids.append(t[0])
    lengths = [len(x) for x in ids]
    budget = a.batch_tokens or a.batch * max(lengths)
    batches = plan_batches(lengths, budget)
    prompts = dict(ids=ids, letter_ids=letter_ids, batches=batches, budget=budget,
                   pad_id=tok.pad_token_id if tok.pad_token_id is not None else 0)
    with open(os.path.join(a.work, "prompts.json"), "w") as f:
        json.dump(prompts, f)
    return prompts


# ---------------------------------------------------------------- workers (one process each)


def rss_mb():
    import resource
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def pick_of(logits4):
    return max(range(4), key=lambda i: logits4[i])


def timed_batches(run_batch, prompts):
    """A one-prompt warm-up (the first question alone), then every batch, timed."""
    run_batch([0])
    out = [None] * len(prompts["ids"])
    t0 = time.perf_counter()
    for b in prompts["batches"]:
        for i, row in zip(b, run_batch(b)):
            out[i] = row
    return time.perf_counter() - t0, out


def worker_torch(a):
    import torch
    from transformers import AutoModelForCausalLM
    torch.set_num_threads(a.threads)
    prompts = json.load(open(os.path.join(a.work, "prompts.json")))
    t0 = time.perf_counter()
    dtype = torch.bfloat16 if a.precision == "bf16" else torch.float32
    m = AutoModelForCausalLM.from_pretrained(a.model, dtype=dtype, attn_implementation=a.torch_attn).eval()
    if a.precision == "int8":
        # in place: the default deep copy would hold the f32 model twice
        m = torch.ao.quantization.quantize_dynamic(m, {torch.nn.Linear}, dtype=torch.qint8, inplace=True)
    load = time.perf_counter() - t0
    ids, letters = prompts["ids"], prompts["letter_ids"]

    def run_batch(b):
        n = max(len(ids[i]) for i in b)
        inp = torch.full((len(b), n), prompts["pad_id"], dtype=torch.long)
        mask = torch.zeros((len(b), n), dtype=torch.long)
        for r, i in enumerate(b):
            inp[r, n - len(ids[i]):] = torch.tensor(ids[i])
            mask[r, n - len(ids[i]):] = 1
        pos = (mask.cumsum(-1) - 1).masked_fill(mask == 0, 1)
        with torch.inference_mode():
            logits = m(input_ids=inp, attention_mask=mask, position_ids=pos, logits_to_keep=1).logits
        return logits[:, -1, letters].float().tolist()

    secs, rows = timed_batches(run_batch, prompts)
    return dict(load_s=load, prefill_s=secs, letter_logits=rows, rss_mb=rss_mb(),
                versions=dict(torch=torch.__version__))


def worker_llama(a):
    import ctypes
    import llama_cpp as L
    prompts = json.load(open(os.path.join(a.work, "prompts.json")))
    ids, letters = prompts["ids"], prompts["letter_ids"]
    most = max(sum(len(ids[i]) for i in b) for b in prompts["batches"])
    rows_max = max(len(b) for b in prompts["batches"])
    L.llama_backend_init()
    t0 = time.perf_counter()
    mp = L.llama_model_default_params()
    # default: weights read at load (no mmap), as the other peers do, not paged in by the first batch
    mp.load_mode = L.LLAMA_LOAD_MODE_MMAP if a.llama_mmap else L.LLAMA_LOAD_MODE_NONE
    mp.use_extra_bufts = not a.llama_no_repack
    model = L.llama_model_load_from_file(a.gguf.encode(), mp)
    assert model, f"llama.cpp could not load {a.gguf}"
    cp = L.llama_context_default_params()
    cp.n_ctx = (most + 255) // 256 * 256
    cp.n_batch = cp.n_ctx
    cp.n_ubatch = a.llama_ubatch or cp.n_ctx
    cp.n_seq_max = rows_max
    cp.n_threads = a.threads
    cp.n_threads_batch = a.threads
    if hasattr(cp, "kv_unified"):
        cp.kv_unified = True  # one cache for all sequences, sized by the batch's total tokens
    ctx = L.llama_init_from_model(model, cp)
    assert ctx, "llama.cpp could not make a context"
    load = time.perf_counter() - t0
    vocab = L.llama_model_get_vocab(model)
    n_vocab = L.llama_vocab_n_tokens(vocab)
    batch = L.llama_batch_init(cp.n_ctx, 0, rows_max)
    mem = L.llama_get_memory(ctx)

    def run_batch(b):
        k = 0
        lasts = []
        for s, i in enumerate(b):
            for p, t in enumerate(ids[i]):
                batch.token[k] = t
                batch.pos[k] = p
                batch.n_seq_id[k] = 1
                batch.seq_id[k][0] = s
                batch.logits[k] = p == len(ids[i]) - 1
                k += 1
            lasts.append(k - 1)
        batch.n_tokens = k
        rc = L.llama_decode(ctx, batch)
        assert rc == 0, f"llama_decode returned {rc}"
        out = []
        for j in lasts:
            row = L.llama_get_logits_ith(ctx, j)
            out.append([float(row[t]) for t in letters])
        L.llama_memory_clear(mem, True)
        return out

    secs, rows = timed_batches(run_batch, prompts)
    info = L.llama_print_system_info().decode()
    L.llama_batch_free(batch)
    L.llama_free(ctx)
    L.llama_model_free(model)
    return dict(load_s=load, prefill_s=secs, letter_logits=rows, rss_mb=rss_mb(), n_vocab=n_vocab,
                versions=dict(llama_cpp_python=L.__version__), system_info=info)


# ---------------------------------------------------------------- the driver


class PeerFailed(Exception):
    """A peer's process exited non-zero (e.g. a scorekit flag this build does not have)."""


def timed_process(cmd, env=None):
    """Wall seconds and peak RSS (MB, /usr/bin/time) of one process; its stdout."""
    rss_file = os.path.join(ARGS.work, "rss.txt")
    t0 = time.perf_counter()
    p = subprocess.run(["/usr/bin/time", "-f", "%M", "-o", rss_file] + cmd, env=env,
                       capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if p.returncode != 0:
        raise PeerFailed(f"{shlex.join(cmd)} failed ({p.returncode}): {p.stderr.strip()[-1500:]}")
    rss = int(open(rss_file).read().split()[-1]) / 1024
    return wall, rss, p.stdout, p.stderr


def env_threads():
    env = dict(os.environ)
    for k in ["RAYON_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"]:
        env[k] = str(ARGS.threads)
    return env


def run_scorekit(flags, n_questions):
    qfile = "q.jsonl" if n_questions > 1 else "q1.jsonl"
    out = os.path.join(ARGS.work, "scorekit-out")
    cmd = [ARGS.scorekit_bin, "judge", "eval", "--judge", ARGS.model, "--dataset",
           os.path.join(ARGS.work, qfile), "--out", out, "--device", "cpu", "--quiet",
           "--no-calibration", "--force", "--bootstrap", "0", "--batch-tokens",
           str(PROMPTS["budget"])] + shlex.split(flags)
    wall, rss, _, _ = timed_process(cmd, env_threads())
    items = [json.loads(l) for l in open(os.path.join(out, "items.jsonl"))]
    logits = [None] * n_questions
    for it in items:
        logits[it["line"] - 1] = it.get("letter_logits")
    return dict(wall_s=wall, rss_mb=rss, letter_logits=logits, command=shlex.join(cmd))


def run_worker(kind, extra):
    cmd = [sys.executable, __file__, "--worker", kind, "--model", ARGS.model, "--work", ARGS.work,
           "--threads", str(ARGS.threads), "--torch-attn", ARGS.torch_attn,
           "--llama-ubatch", str(ARGS.llama_ubatch)] + (["--llama-mmap"] if ARGS.llama_mmap else []) \
        + (["--llama-no-repack"] if ARGS.llama_no_repack else []) + extra
    wall, rss, out, err = timed_process(cmd, env_threads())
    r = json.loads(out.strip().splitlines()[-1])
    # llama.cpp says on stderr which buffer types (CPU, CPU_REPACK, AMX) hold the weights
    buffers = [l.strip() for l in err.splitlines() if "model buffer size" in l]
    r.update(wall_s=wall, rss_mb=rss, command=shlex.join(cmd), buffers=buffers)
    return r


def warm_cache(paths):
    """Read the model's files once, so no peer's run pays a cold page cache and another a warm one
    (the scorekit peer's differential of two runs would otherwise take the disk read as load)."""
    for path in paths:
        files = [os.path.join(path, f) for f in os.listdir(path)] if os.path.isdir(path) else [path]
        for f in files:
            with open(f, "rb") as fh:
                while fh.read(1 << 24):
                    pass


def measure(peer):
    kind, name, spec = peer
    warm_cache([spec.partition(",")[0] if kind == "llama" else ARGS.model])
    tokens = sum(len(x) for x in PROMPTS["ids"])
    q = len(PROMPTS["ids"])
    if kind == "scorekit":
        one = run_scorekit(spec, 1)
        full = run_scorekit(spec, q)
        t1 = len(PROMPTS["ids"][0])
        secs = full["wall_s"] - one["wall_s"]
        return dict(full, wall1_s=one["wall_s"], load_s=one["wall_s"], prefill_s=secs,
                    tokens_timed=tokens - t1, questions_timed=q - 1)
    if kind == "torch":
        r = run_worker("torch", ["--precision", spec])
    else:
        gguf, _, opt = spec.partition(",")
        r = run_worker("llama", ["--gguf", gguf] + (["--llama-no-repack"] if opt == "norepack" else []))
    return dict(r, tokens_timed=tokens, questions_timed=q)


def summarize(results, peers):
    tokens = sum(len(x) for x in PROMPTS["ids"])
    rows = []
    ref_name = next((f"{k} {n}" for k, n, _ in peers if k == "torch"), f"{peers[0][0]} {peers[0][1]}")
    picks = {}
    for kind, name, _ in peers:
        key = f"{kind} {name}"
        runs = results[key]
        secs = [r["prefill_s"] for r in runs]
        med = statistics.median(secs)
        tps = runs[0]["tokens_timed"] / med
        qps = runs[0]["questions_timed"] / med
        picks[key] = [None if l is None else pick_of(l) for l in runs[-1]["letter_logits"]]
        rows.append(dict(peer=key, tokens=runs[0]["tokens_timed"], median_s=med, min_s=min(secs),
                         max_s=max(secs), tokens_per_s=tps, questions_per_s=qps,
                         wall_s=statistics.median(r["wall_s"] for r in runs),
                         load_s=statistics.median(r["load_s"] for r in runs),
                         rss_mb=max(r["rss_mb"] for r in runs)))
    ref_tps = next((r["tokens_per_s"] for r in rows if r["peer"] == "torch f32"), None)
    for r in rows:
        r["vs_torch_f32"] = r["tokens_per_s"] / ref_tps if ref_tps else None
        agree = [a == b for a, b in zip(picks[r["peer"]], picks[ref_name]) if a is not None and b is not None]
        r["agree_with"] = ref_name
        r["agreement"] = f"{sum(agree)}/{len(agree)}"
    print(f"\n{len(PROMPTS['ids'])} questions, {tokens} prompt tokens, batches of "
          f"{[len(b) for b in PROMPTS['batches']]} (budget {PROMPTS['budget']} padded tokens), "
          f"{ARGS.threads} threads, {ARGS.repeats} rounds interleaved\n")
    print("| peer | tokens timed | prefill s, median (range) | prompt tokens/s | questions/s | × torch f32 "
          f"| wall incl. load, s | load s | peak RSS | picks = {ref_name} |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        vs = f"{r['vs_torch_f32']:.2f}" if r["vs_torch_f32"] else "–"
        print(f"| {r['peer']} | {r['tokens']} | {r['median_s']:.2f} ({r['min_s']:.2f}–{r['max_s']:.2f}) "
              f"| {r['tokens_per_s']:.1f} | {r['questions_per_s']:.3f} | {vs} | {r['wall_s']:.1f} "
              f"| {r['load_s']:.1f} | {r['rss_mb'] / 1024:.2f} GB | {r['agreement']} |")
    return rows, picks


def main():
    global ARGS, PROMPTS
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", required=True, help="HF folder (safetensors, tokenizer, template)")
    p.add_argument("--work", required=True, help="scratch folder (question files, outputs)")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--torch-attn", default="sdpa", help="transformers attn_implementation")
    p.add_argument("--dev", help="Possible Stories dev.jsonl")
    p.add_argument("--questions", type=int, default=8)
    p.add_argument("--batch", type=int, default=4, help="prompts per batch (budget = BATCH × longest)")
    p.add_argument("--batch-tokens", type=int, default=0, help="the padded-token budget instead")
    p.add_argument("--repeats", type=int, default=2)
    p.add_argument("--scorekit-bin", default="target/release/scorekit")
    p.add_argument("--scorekit", action="append", default=[], metavar="NAME=FLAGS")
    p.add_argument("--torch", action="append", default=[], choices=["f32", "bf16", "int8"])
    p.add_argument("--llama", action="append", default=[], metavar="NAME=GGUF")
    p.add_argument("--llama-ubatch", type=int, default=0, help="llama.cpp n_ubatch (0: = n_batch)")
    p.add_argument("--llama-mmap", action="store_true", help="llama.cpp use_mmap (default: read at load)")
    p.add_argument("--llama-no-repack", action="store_true",
                   help="llama.cpp use_extra_bufts off (no AMX / repacked weight buffers)")
    p.add_argument("--json", help="write every run's numbers here")
    # a worker process (internal)
    p.add_argument("--worker", choices=["torch", "llama"])
    p.add_argument("--precision", choices=["f32", "bf16", "int8"])
    p.add_argument("--gguf")
    ARGS = a = p.parse_args()
    if a.worker:
        r = worker_torch(a) if a.worker == "torch" else worker_llama(a)
        print(json.dumps(r))
        return
    PROMPTS = prepare(a)
    peers = [("scorekit", s.split("=", 1)[0], s.split("=", 1)[1]) for s in a.scorekit]
    peers += [("torch", t, t) for t in a.torch]
    peers += [("llama", s.split("=", 1)[0], s.split("=", 1)[1]) for s in a.llama]
    results = {f"{k} {n}": [] for k, n, _ in peers}
    failed = {}
    started = time.time()
    for rnd in range(a.repeats):
        for peer in peers:
            key = f"{peer[0]} {peer[1]}"
            if key in failed:
                continue
            try:
                r = measure(peer)
            except PeerFailed as e:
                # recorded and left out of later rounds; the others go on
                failed[key] = str(e)
                print(f"round {rnd + 1} {key}: FAILED: {e}", flush=True)
                continue
            results[key].append(r)
            print(f"round {rnd + 1} {key}: prefill {r['prefill_s']:.2f} s, wall {r['wall_s']:.1f} s, "
                  f"load {r['load_s']:.1f} s, {r['rss_mb'] / 1024:.2f} GB", flush=True)
    peers = [p for p in peers if f"{p[0]} {p[1]}" not in failed]
    rows, picks = summarize(results, peers)
    for key, why in failed.items():
        print(f"\n{key} did not run: {why}")
    print(f"\nwhole run: {time.time() - started:.0f} s")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(dict(model=a.model, questions=len(PROMPTS["ids"]),
                           tokens=sum(len(x) for x in PROMPTS["ids"]),
                           lengths=[len(x) for x in PROMPTS["ids"]], batches=PROMPTS["batches"],
                           budget=PROMPTS["budget"], threads=a.threads, repeats=a.repeats,
                           table=rows, picks=picks, runs=results, failed=failed, argv=sys.argv), f, indent=1)


if __name__ == "__main__":
    main()
