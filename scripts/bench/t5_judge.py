#!/usr/bin/env python3
"""The letter judge's speed against PyTorch `generate` (dev-time only).

  make DIR [SHAPE]        write a Flan-T5-shaped judge with random weights (SHAPE: base, large, xl;
                          default large) and the tiny test tokenizer (tests/data/t5/flan), laid out
                          as the Hub's folders (untied lm_head, gated-gelu)
  stream DIR SHAPE DTYPE  the same layout written tensor by tensor without building the model
                          (SHAPE: small ... xxl; DTYPE: F32 or BF16), for shapes whose model would
                          not fit in memory twice: T5's initialisation scales, random normal values
  torch DIR DATASET N B   time transformers' generate(max_length=20) on the zero-shot prompts of
                          the first N questions of DATASET, B prompts per padded batch (B=1 is
                          run_llm.py's one at a time); prints load seconds, generate seconds and
                          peak RSS as JSON

Run by scripts/bench/t5_judge.sh. Threads: torch.set_num_threads($THREADS, default 2).
"""
import json
import os
import resource
import shutil
import sys
import time


SHAPES = {
    "base": dict(d_model=768, d_kv=64, d_ff=2048, num_layers=12, num_heads=12),
    "large": dict(d_model=1024, d_kv=64, d_ff=2816, num_layers=24, num_heads=16),
    "xl": dict(d_model=2048, d_kv=64, d_ff=5120, num_layers=24, num_heads=32),
    "xxl": dict(d_model=4096, d_kv=64, d_ff=10240, num_layers=24, num_heads=64),
}
SHAPES["small"] = dict(d_model=512, d_kv=64, d_ff=1024, num_layers=8, num_heads=6)
INSTRUCTION = "Read the given passage and answer the multiple choice question about it.\n"


def prompt(q):
    opts = " ".join(f"({i}) {j}" for i, j in zip("ABCD", q["options"]))
    return INSTRUCTION + "\n" + f"Passage: {q['document']}\nQuestion: {q['question']}\nOptions: {opts}\nAnswer:"


def make(d, shape="large"):
    import torch
    from safetensors.torch import save_file
    from transformers import T5Config, T5ForConditionalGeneration

    torch.manual_seed(0)
    cfg = T5Config(vocab_size=32128, feed_forward_proj="gated-gelu", tie_word_embeddings=False,
                   decoder_start_token_id=0, dropout_rate=0.0, **SHAPES[shape])
    model = T5ForConditionalGeneration(cfg)
    os.makedirs(d, exist_ok=True)
    sd = {k: v.contiguous() for k, v in model.state_dict().items()
          if k not in ("encoder.embed_tokens.weight", "decoder.embed_tokens.weight", "lm_head.weight")}
    sd["lm_head.weight"] = torch.randn(cfg.vocab_size, cfg.d_model)
    save_file(sd, os.path.join(d, "model.safetensors"), metadata={"format": "pt"})
    conf = cfg.to_dict()
    conf["tie_word_embeddings"] = False
    conf["architectures"] = ["T5ForConditionalGeneration"]
    for k in ("scale_decoder_outputs", "dtype", "transformers_version", "is_gated_act", "dense_act_fn"):
        conf.pop(k, None)
    json.dump(conf, open(os.path.join(d, "config.json"), "w"), indent=2)
    for f in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copy(os.path.join("tests/data/t5/flan", f), d)
    n = sum(v.numel() for v in sd.values())
    print(json.dumps({"dir": d, "shape": shape, "parameters": n, "weight_bytes": 4 * n}))


def stream(d, shape, dtype):
    """Write model.safetensors one tensor at a time (numpy only; the file never sits in memory)."""
    import numpy as np

    sh = SHAPES[shape]
    dm, kv, ff, layers, heads = sh["d_model"], sh["d_kv"], sh["d_ff"], sh["num_layers"], sh["num_heads"]
    inner, vocab = heads * kv, 32128
    tensors = [("shared.weight", (vocab, dm), 1.0), ("lm_head.weight", (vocab, dm), 1.0)]

    def attn(p, bias):
        out = [(f"{p}.q.weight", (inner, dm), (dm * kv) ** -0.5), (f"{p}.k.weight", (inner, dm), dm ** -0.5),
               (f"{p}.v.weight", (inner, dm), dm ** -0.5), (f"{p}.o.weight", (dm, inner), inner ** -0.5)]
        if bias:
            out.append((f"{p}.relative_attention_bias.weight", (32, heads), dm ** -0.5))
        return out

    for stack in ("encoder", "decoder"):
        for i in range(layers):
            b = f"{stack}.block.{i}.layer"
            tensors += attn(f"{b}.0.SelfAttention", i == 0) + [(f"{b}.0.layer_norm.weight", (dm,), None)]
            f = 1
            if stack == "decoder":
                tensors += attn(f"{b}.1.EncDecAttention", False) + [(f"{b}.1.layer_norm.weight", (dm,), None)]
                f = 2
            tensors += [(f"{b}.{f}.DenseReluDense.wi_0.weight", (ff, dm), dm ** -0.5),
                        (f"{b}.{f}.DenseReluDense.wi_1.weight", (ff, dm), dm ** -0.5),
                        (f"{b}.{f}.DenseReluDense.wo.weight", (dm, ff), ff ** -0.5),
                        (f"{b}.{f}.layer_norm.weight", (dm,), None)]
        tensors.append((f"{stack}.final_layer_norm.weight", (dm,), None))
    width = 4 if dtype == "F32" else 2
    header, at = {"__metadata__": {"format": "pt"}}, 0
    for name, shp, _ in tensors:
        n = int(np.prod(shp)) * width
        header[name] = {"dtype": dtype, "shape": list(shp), "data_offsets": [at, at + n]}
        at += n
    h = json.dumps(header).encode()
    h += b" " * (-len(h) % 8)
    os.makedirs(d, exist_ok=True)
    rng = np.random.default_rng(0)
    with open(os.path.join(d, "model.safetensors"), "wb") as out:
        out.write(len(h).to_bytes(8, "little") + h)
        for name, shp, scale in tensors:
            rows = shp[0]
            step = max(1, (1 << 26) // int(np.prod(shp[1:])))
            for r0 in range(0, rows, step):
                part = (rows if len(shp) == 1 else min(step, rows - r0),) + tuple(shp[1:])
                v = np.ones(part, np.float32) if scale is None else rng.standard_normal(part, np.float32) * np.float32(scale)
                if dtype == "BF16":
                    v = (v.view(np.uint32) >> 16).astype(np.uint16)
                out.write(v.tobytes())
                if len(shp) == 1:
                    break
    conf = dict(sh, vocab_size=vocab, feed_forward_proj="gated-gelu", tie_word_embeddings=False,
                decoder_start_token_id=0, pad_token_id=0, eos_token_id=1, model_type="t5",
                architectures=["T5ForConditionalGeneration"])
    json.dump(conf, open(os.path.join(d, "config.json"), "w"), indent=2)
    for f in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copy(os.path.join("tests/data/t5/flan", f), d)
    n = sum(int(np.prod(s)) for _, s, _ in tensors)
    print(json.dumps({"dir": d, "shape": shape, "dtype": dtype, "parameters": n, "weight_bytes": width * n}))


def bench(d, dataset, n, b):
    import torch
    from transformers import PreTrainedTokenizerFast, T5ForConditionalGeneration

    torch.set_num_threads(int(os.environ.get("THREADS", "2")))
    t0 = time.perf_counter()
    model = T5ForConditionalGeneration.from_pretrained(d).eval()
    tok = PreTrainedTokenizerFast(tokenizer_file=os.path.join(d, "tokenizer.json"), pad_token="<pad>", eos_token="</s>")
    load = time.perf_counter() - t0
    qs = [json.loads(l) for l in open(dataset)][:n]
    prompts = [prompt(q) for q in qs]
    tokens = 0
    t0 = time.perf_counter()
    with torch.no_grad():
        for i in range(0, len(prompts), b):
            enc = tok(prompts[i:i + b], return_tensors="pt", padding=True)
            tokens += int(enc.attention_mask.sum())
            model.generate(**enc, max_length=20, do_sample=False, num_beams=1)
    gen = time.perf_counter() - t0
    # The first prompt alone, after the run: (gen - one) / (n - 1) is how t5_judge.sh reads
    # scorekit's time a prompt (the 8-prompt run less the 1-prompt run), so both sides are read
    # alike (one prompt's decoding steps cost about what a batch's do).
    t0 = time.perf_counter()
    with torch.no_grad():
        enc = tok(prompts[:1], return_tensors="pt", padding=True)
        model.generate(**enc, max_length=20, do_sample=False, num_beams=1)
    one = time.perf_counter() - t0
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    print(json.dumps({"engine": f"pytorch {torch.__version__} batch {b}", "prompts": n, "prompt_tokens": tokens,
                      "load_s": round(load, 2), "generate_s": round(gen, 2),
                      "s_per_prompt": round(gen / n, 3),
                      "one_prompt_s": round(one, 3), "s_per_prompt_differenced": round((gen - one) / max(n - 1, 1), 3),
                      "peak_rss_bytes": rss}))


if __name__ == "__main__":
    if sys.argv[1] == "make":
        make(sys.argv[2], *(sys.argv[3:4] or ["large"]))
    elif sys.argv[1] == "stream":
        stream(sys.argv[2], sys.argv[3], sys.argv[4])
    elif sys.argv[1] == "torch":
        bench(sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5]))
    else:
        sys.exit(__doc__)
