#!/usr/bin/env python3
"""Tiny decoder-only letter judges and transformers' letter logits on them (dev-time only).

Writes tests/data/decoder/<name>/ for each layout below:
  config.json            a tiny config of the family (2 layers, hidden 64) exercising what the
                         family has: GQA, tied or untied head, Llama 3's rope scaling, q/k/v
                         biases, q/k norms, sliding windows shorter than the prompts, Gemma 2's
                         soft-capping, sandwich and (1 + w) norms and embedding scale, Phi-3's fused
                         projections and partial rotary factor, Gemma 3's q/k norms and two ropes
                         (local base on sliding layers, linear-scaled global), Phi-3.5's longrope
  tokenizer.json         a BPE trained here on Possible Stories prompts with the family's
                         conventions (byte-level for Llama 3 / SmolLM / Qwen, SentencePiece-style
                         Metaspace for Mistral / Gemma / Phi) and its control tokens as specials
  tokenizer_config.json  the real chat template of a model of the family, copied from
                         tests/data/chat_templates/models/<model>/ (its provenance is there), with
                         tokenizer_class PreTrainedTokenizerFast
  chat_template.jinja    where the source keeps the template there
  tensors.json           the weights' names and shapes; the values come from the generator of
                         judge_reference.py (fnv1a64(name) → splitmix64, 0.1·[-1, 1), norms 1 + ...),
                         which the Rust tests run too (tests/integration/common/tiny_judge.rs)
  reference.json         per Possible Stories dev question (all 458; prompt = run_llm.py's
                         zero-shot prompt with the question's options, the one user message of the
                         chat template, `apply_chat_template(..., add_generation_prompt=True,
                         tokenize=False)`, tokenized without special tokens): the token count, the
                         ids' sha256, the four letter logits of transformers (f32, eager
                         attention) at the last token, the letter mass and the pick; the first
                         BATCHED prompts again as left-padded batches of 5 (attention mask and
                         position ids as `generate` computes them; `batched_index` names the dev
                         questions, all-short or all-long batches for longrope, whose one mixed
                         batch is `straddle`), and with a system prompt where the template takes
                         one.

Set up (once, beside chat_templates.py's venv):
    build/ref-venv/bin/pip install transformers==4.57.1 torch==2.5.1 tokenizers==0.22.2 numpy==2.4.6
Run: build/ref-venv/bin/python scripts/reference/decoder_reference.py [NAME...]
(from the repository root; needs torch 2.5.1, transformers 4.57.1, tokenizers; the dev split
from ../shared/data or target/test-data).
"""
import hashlib
import json
import os
import shutil
import sys

import numpy as np
import torch
from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers, processors, trainers
from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer

OUT = "tests/data/decoder"
TEMPLATES = "tests/data/chat_templates/models"
GOLDEN = np.uint64(0x9E3779B97F4A7C15)
BATCHED = 20
SYSTEM = "You are a careful reader. Answer with the letter of the correct option."
LETTERS = "ABCD"

torch.set_num_threads(2)


def fnv1a64(s):
    h = 0xCBF29CE484222325
    for b in s.encode():
        h = ((h ^ b) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return h


def tiny_weight(name, n):
    with np.errstate(over="ignore"):
        z = np.uint64(fnv1a64(name)) + GOLDEN * np.arange(1, n + 1, dtype=np.uint64)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        z = z ^ (z >> np.uint64(31))
    u = (z >> np.uint64(40)).astype(np.float64) / float(1 << 24)
    v = 2.0 * u - 1.0
    if name.lower().endswith("norm.weight"):
        return (1.0 + 0.1 * v).astype(np.float32)
    return (0.1 * v).astype(np.float32)


def data_file(name):
    for base in ("../shared/data/possible-stories", "target/test-data/possible-stories/dataset"):
        p = os.path.join(base, name)
        if os.path.exists(p):
            return p
    sys.exit(f"no {name}: run scripts/test-data.sh")


# run_llm.py (nii-cl/possible-stories @ 3f8c525): the zero-shot prompt.
def multiple_choice_to_prompt(passage, question, options, answer=""):
    ret = f"Passage: {passage}\n"
    ret += f"Question: {question}\n"
    opt_str = " ".join([f"({i}) {j}" for i, j in zip("ABCD", options)])
    ret += f"Options: {opt_str}\n"
    ret += f"Answer: {answer}\n" if answer else "Answer:"
    return ret


INSTRUCTION = "Read the given passage and answer the multiple choice question about it.\n"


def zero_shot(q):
    return INSTRUCTION + "" + "\n" + multiple_choice_to_prompt(q["document"], q["question"], q["options"])


BASE = dict(hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
            max_position_embeddings=4096, rms_norm_eps=1e-6)

LAYOUTS = {
    "llama": dict(template="llama-3.1-8b-instruct", style="bytelevel",
                  specials=["<|begin_of_text|>", "<|end_of_text|>", "<|eot_id|>", "<|start_header_id|>",
                            "<|end_header_id|>", "<|eom_id|>", "<|python_tag|>"],
                  bos="<|begin_of_text|>", system=True,
                  config=dict(model_type="llama", architectures=["LlamaForCausalLM"], num_key_value_heads=2,
                              rope_theta=500000.0, tie_word_embeddings=False,
                              rope_scaling=dict(rope_type="llama3", factor=8.0, low_freq_factor=1.0,
                                                high_freq_factor=4.0, original_max_position_embeddings=256))),
    "smollm": dict(template="smollm2-135m-instruct", style="bytelevel",
                   specials=["<|endoftext|>", "<|im_start|>", "<|im_end|>"], bos=None, system=True,
                   config=dict(model_type="llama", architectures=["LlamaForCausalLM"], num_key_value_heads=4,
                               rope_theta=100000.0, tie_word_embeddings=True, rms_norm_eps=1e-5)),
    "qwen2": dict(template="qwen2.5-7b-instruct", style="bytelevel",
                  specials=["<|endoftext|>", "<|im_start|>", "<|im_end|>"], bos=None, system=True,
                  config=dict(model_type="qwen2", architectures=["Qwen2ForCausalLM"], num_key_value_heads=2,
                              rope_theta=1000000.0, tie_word_embeddings=False, use_sliding_window=False)),
    "qwen3": dict(template="qwen3-0.6b", style="bytelevel",
                  specials=["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<think>", "</think>"], bos=None,
                  system=True,
                  config=dict(model_type="qwen3", architectures=["Qwen3ForCausalLM"], num_key_value_heads=2,
                              head_dim=32, rope_theta=1000000.0, tie_word_embeddings=True)),
    "mistral": dict(template="mistral-7b-instruct-v0.3", style="metaspace",
                    specials=["<unk>", "<s>", "</s>", "[INST]", "[/INST]", "[TOOL_CALLS]", "[AVAILABLE_TOOLS]",
                              "[/AVAILABLE_TOOLS]", "[TOOL_RESULTS]", "[/TOOL_RESULTS]"], bos="<s>", system=True,
                    config=dict(model_type="mistral", architectures=["MistralForCausalLM"], num_key_value_heads=2,
                                rope_theta=1000000.0, tie_word_embeddings=False, sliding_window=200)),
    "gemma2": dict(template="gemma-2-2b-it", style="metaspace",
                   specials=["<pad>", "<eos>", "<bos>", "<unk>", "<start_of_turn>", "<end_of_turn>"], bos="<bos>",
                   system=False,
                   config=dict(model_type="gemma2", architectures=["Gemma2ForCausalLM"], num_key_value_heads=2,
                               head_dim=16, query_pre_attn_scalar=16, sliding_window=200,
                               attn_logit_softcapping=50.0, final_logit_softcapping=30.0,
                               hidden_activation="gelu_pytorch_tanh", tie_word_embeddings=True)),
    "phi3": dict(template="phi-3.5-mini-instruct", style="metaspace",
                 specials=["<unk>", "<s>", "</s>", "<|endoftext|>", "<|system|>", "<|user|>", "<|assistant|>",
                           "<|end|>"], bos="<s>", system=True,
                 config=dict(model_type="phi3", architectures=["Phi3ForCausalLM"], num_key_value_heads=2,
                             partial_rotary_factor=0.75, sliding_window=160, rms_norm_eps=1e-5,
                             tie_word_embeddings=False, pad_token_id=None, bos_token_id=None, eos_token_id=None)),
    # Gemma 3 (text): (1 + w) q/k norms, sandwich norms, a sliding window on layer 0 of each 2
    # (sliding_window_pattern), the local rope base there and the global rope_theta with linear
    # scaling on layer 1, final soft-capping set, attention capping not. No system prompt: the
    # template reads a system message's content as a list of parts (`content[0]['text']`), and a
    # plain string makes transformers raise, as scorekit does.
    "gemma3": dict(template="gemma-3-1b-it", style="metaspace",
                   specials=["<pad>", "<eos>", "<bos>", "<unk>", "<start_of_turn>", "<end_of_turn>"], bos="<bos>",
                   system=False,
                   config=dict(model_type="gemma3_text", architectures=["Gemma3ForCausalLM"], num_key_value_heads=2,
                               head_dim=16, query_pre_attn_scalar=16, sliding_window=100, sliding_window_pattern=2,
                               rope_theta=1000000.0, rope_local_base_freq=10000.0,
                               rope_scaling=dict(rope_type="linear", factor=8.0),
                               attn_logit_softcapping=None, final_logit_softcapping=30.0,
                               hidden_activation="gelu_pytorch_tanh", tie_word_embeddings=True)),
    # Phi-3.5's longrope: short factors up to original_max_position_embeddings (178, the dev
    # prompts' median length here), long factors past it, cos/sin times the attention factor.
    "phi35": dict(template="phi-3.5-mini-instruct", style="metaspace",
                  specials=["<unk>", "<s>", "</s>", "<|endoftext|>", "<|system|>", "<|user|>", "<|assistant|>",
                            "<|end|>"], bos="<s>", system=True, longrope=178,
                  config=dict(model_type="phi3", architectures=["Phi3ForCausalLM"], num_key_value_heads=2,
                              partial_rotary_factor=0.75, sliding_window=None, rms_norm_eps=1e-5,
                              original_max_position_embeddings=178,
                              rope_scaling=dict(type="longrope", short_factor=[1.0, 1.05, 1.1, 1.2, 1.4, 1.7],
                                                long_factor=[1.0, 1.5, 2.5, 4.0, 7.0, 12.0]),
                              tie_word_embeddings=False, pad_token_id=None, bos_token_id=None, eos_token_id=None)),
}


def train_tokenizer(style, specials, bos, texts):
    if style == "bytelevel":
        tok = Tokenizer(models.BPE())
        tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
        tok.decoder = decoders.ByteLevel()
        alphabet = pre_tokenizers.ByteLevel.alphabet()
    else:
        tok = Tokenizer(models.BPE(byte_fallback=False, unk_token=None))
        tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement="\u2581", prepend_scheme="first", split=True)
        tok.decoder = decoders.Metaspace(replacement="\u2581", prepend_scheme="first", split=True)
        alphabet = []
    trainer = trainers.BpeTrainer(vocab_size=1500, initial_alphabet=alphabet, show_progress=False,
                                  special_tokens=[])
    tok.train_from_iterator(texts, trainer)
    tok.add_special_tokens([AddedToken(s, special=True, normalized=False) for s in specials])
    if bos:
        tok.post_processor = processors.TemplateProcessing(
            single=f"{bos} $A", pair=f"{bos} $A {bos} $B", special_tokens=[(bos, tok.token_to_id(bos))])
    return tok


def sha(ids):
    return hashlib.sha256(",".join(map(str, ids)).encode()).hexdigest()


def letter_stats(row, letter_ids):
    logits = [float(row[i]) for i in letter_ids]
    probs = torch.softmax(row.double(), -1)
    mass = float(sum(probs[i] for i in letter_ids))
    return logits, mass, int(np.argmax(logits))


def build(name, lay, dev, texts):
    out = os.path.join(OUT, name)
    os.makedirs(out, exist_ok=True)
    tok = train_tokenizer(lay["style"], lay["specials"], lay["bos"], texts)
    tok.save(os.path.join(out, "tokenizer.json"))
    src = os.path.join(TEMPLATES, lay["template"])
    tc = json.load(open(os.path.join(src, "tokenizer_config.json")))
    tc["tokenizer_class"] = "PreTrainedTokenizerFast"
    json.dump(tc, open(os.path.join(out, "tokenizer_config.json"), "w"), indent=2, ensure_ascii=False)
    if os.path.exists(os.path.join(src, "chat_template.jinja")):
        shutil.copy(os.path.join(src, "chat_template.jinja"), out)
    cfg = dict(BASE)
    cfg.update(lay["config"])
    cfg["vocab_size"] = tok.get_vocab_size(with_added_tokens=True) + 8
    cfg["torch_dtype"] = "float32"
    json.dump(cfg, open(os.path.join(out, "config.json"), "w"), indent=2)

    hf_tok = AutoTokenizer.from_pretrained(out)
    config = AutoConfig.from_pretrained(out)
    model = AutoModelForCausalLM.from_config(config, attn_implementation="eager", torch_dtype=torch.float32)
    model.eval()
    tensors, state = [], {}
    for key, t in model.state_dict().items():
        if key == "lm_head.weight" and config.tie_word_embeddings:
            continue
        tensors.append({"name": key, "shape": list(t.shape)})
        state[key] = torch.from_numpy(tiny_weight(key, t.numel()).reshape(t.shape))
    missing, unexpected = model.load_state_dict(state, strict=False)
    assert not unexpected and set(missing) <= {"lm_head.weight"}, (missing, unexpected)
    if config.tie_word_embeddings:
        model.tie_weights()
        assert torch.equal(model.lm_head.weight, model.model.embed_tokens.weight)
    json.dump(tensors, open(os.path.join(out, "tensors.json"), "w"), indent=1)

    letter_ids = []
    for l in LETTERS:
        ids = hf_tok.encode(l, add_special_tokens=False)
        assert len(ids) == 1, (name, l, ids)
        letter_ids.append(ids[0])

    def render(prompt, system=None):
        msgs = ([{"role": "system", "content": system}] if system else []) + [{"role": "user", "content": prompt}]
        return hf_tok.apply_chat_template(msgs, add_generation_prompt=True, tokenize=False)

    def ids_of(text):
        return hf_tok(text, add_special_tokens=False)["input_ids"]

    questions = []
    with torch.no_grad():
        for q in dev:
            ids = ids_of(render(zero_shot(q)))
            row = model(torch.tensor([ids])).logits[0, -1]
            logits, mass, pick = letter_stats(row, letter_ids)
            questions.append({"question_id": q["question_id"], "tokens": len(ids), "ids_sha256": sha(ids),
                              "letter_logits": logits, "letter_mass": mass, "pick": pick})
        batched = []
        hf_tok.padding_side = "left"
        if hf_tok.pad_token is None:
            hf_tok.pad_token = lay["specials"][0]

        def left_padded(indices):
            texts_b = [render(zero_shot(dev[i])) for i in indices]
            enc = hf_tok(texts_b, add_special_tokens=False, padding=True, return_tensors="pt")
            mask = enc["attention_mask"]
            # What `generate` passes: positions counted over the real tokens, 1 on the padding.
            pos = (mask.long().cumsum(-1) - 1).masked_fill(mask == 0, 1)
            rows = model(input_ids=enc["input_ids"], attention_mask=mask, position_ids=pos).logits[:, -1]
            return [letter_stats(row, letter_ids)[0] for row in rows]

        # longrope: the batch's longest row chooses the factors (max(position_ids) + 1), so the
        # batches compared with prompts alone are all-short or all-long; one mixed batch apart.
        order = list(range(BATCHED))
        straddle = None
        if lay.get("longrope"):
            cut = lay["longrope"]
            short = [i for i, qq in enumerate(questions) if qq["tokens"] <= cut][:BATCHED // 2]
            long_ = [i for i, qq in enumerate(questions) if qq["tokens"] > cut][:BATCHED // 2]
            order = short + long_
            mixed = short[:3] + long_[:2]
            straddle = {"index": mixed, "letter_logits": left_padded(mixed)}
        for start in range(0, BATCHED, 5):
            batched.extend(left_padded(order[start:start + 5]))
        system = []
        if lay["system"]:
            for q in dev[:5]:
                ids = ids_of(render(zero_shot(q), SYSTEM))
                row = model(torch.tensor([ids])).logits[0, -1]
                logits, mass, pick = letter_stats(row, letter_ids)
                system.append({"tokens": len(ids), "ids_sha256": sha(ids), "letter_logits": logits, "pick": pick})
    ref = {"transformers": __import__("transformers").__version__, "torch": torch.__version__,
           "letter_ids": letter_ids, "system_prompt": SYSTEM if lay["system"] else None,
           "questions": questions, "batched": batched, "batched_index": order, "system": system}
    if straddle:
        ref["straddle"] = straddle
    json.dump(ref, open(os.path.join(out, "reference.json"), "w"))
    diffs = [max(abs(a - b) for a, b in zip(questions[i]["letter_logits"], bb)) for i, bb in zip(order, batched)]
    toks = [qq["tokens"] for qq in questions]
    masses = sorted(qq["letter_mass"] for qq in questions)
    print(f"{name}: vocab {cfg['vocab_size']}, tokens {min(toks)}..{max(toks)}, batched vs alone max diff "
          f"{max(diffs):.2e}, picks {[sum(qq['pick'] == k for qq in questions) for k in range(4)]}, "
          f"median letter mass {masses[len(masses) // 2]:.4f}")


def main():
    dev = [json.loads(l) for l in open(data_file("dev.jsonl"))]
    texts = [zero_shot(q) for q in dev] + ["A B C D (A) (B) (C) (D) A\nB\nC\nD"] * 2000
    names = sys.argv[1:] or list(LAYOUTS)
    for name in names:
        build(name, LAYOUTS[name], dev, texts)


if __name__ == "__main__":
    main()
