"""transformers (eager, f32) on the prompts `scorekit judge eval --no-calibration` asks: the
zero-shot prompt in the chat template, one forward pass per batch of 4 (left padding), only the
last position's logits. Dev-time; BENCHMARKS.md §10.

Run: build/ref-venv/bin/python scripts/bench/decoder_judge_torch.py MODEL_DIR DEV.jsonl THREADS
"""
import json, sys, time, torch
from transformers import AutoModelForCausalLM, AutoTokenizer
sys.path.insert(0, "scripts/reference")
from decoder_reference import zero_shot
model_dir, dev, threads = sys.argv[1], sys.argv[2], int(sys.argv[3])
torch.set_num_threads(threads)
tok = AutoTokenizer.from_pretrained(model_dir)
tok.padding_side = "left"; tok.pad_token = "<|endoftext|>"
m = AutoModelForCausalLM.from_pretrained(model_dir, attn_implementation="eager", dtype=torch.float32).eval()
qs = [json.loads(l) for l in open(dev)]
texts = [tok.apply_chat_template([{"role": "user", "content": zero_shot(q)}], add_generation_prompt=True, tokenize=False) for q in qs]
t0 = time.time(); n = 0
with torch.no_grad():
    for i in range(0, len(texts), 4):
        enc = tok(texts[i:i + 4], add_special_tokens=False, padding=True, return_tensors="pt")
        mask = enc["attention_mask"]; pos = (mask.cumsum(-1) - 1).masked_fill(mask == 0, 1)
        m(input_ids=enc["input_ids"], attention_mask=mask, position_ids=pos, logits_to_keep=1)
        n += int(mask.sum())
dt = time.time() - t0
print(f"transformers: {len(texts)} prompts, {n} tokens, {dt:.2f} s, {n/dt:.0f} tokens/s, {len(texts)/dt:.2f} questions/s")
