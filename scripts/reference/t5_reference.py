#!/usr/bin/env python3
"""Tiny T5 letter judges and the `transformers` reference of their answers (dev-time only).

Writes tests/data/t5/:
  spiece.model        a SentencePiece unigram model (600 pieces) trained on Possible Stories text
                      and the letter judge's prompt template, with T5's special ids
                      (pad 0, </s> 1, <unk> 2)
  flan/               a Flan-T5 layout: gated-gelu, untied head (its own lm_head.weight,
                      tie_word_embeddings false), tokenizer.json + spiece.model
  t5/                 an original T5 layout: relu, tied head (d_model^-0.5), spiece.model only
                      (the SentencePiece fallback of the tokenizer)
  reference.json      per model, per prompt (every dev question with its human options, and again
                      with another story's ending in the gold slot): the prompt's sha256, the token
                      ids' sha256 (slow SentencePiece and fast tokenizer.json), the greedy answer ids
                      of `generate(max_length=20, do_sample=False, num_beams=1)`, its text decoded
                      with special tokens kept, the pick (run_llm.py's first character in ABCD), and
                      for the first prompts the first step's log-probabilities; the relative
                      position buckets of transformers for -600..600.

The prompt is rendered by `multiple_choice_to_prompt` as nii-cl/possible-stories' run_llm.py
(commit 3f8c525) writes it; the zero-shot prompt is instruction + "" + "\n" + that.

Run: /work/venv-dev/bin/python scripts/reference/t5_reference.py   (from the repository root;
needs torch, transformers, sentencepiece; Possible Stories dev from ../shared/data or
target/test-data).
"""
import hashlib
import json
import os
import shutil
import sys

import sentencepiece as spm
import torch
from safetensors.torch import save_file
from transformers import T5Config, T5ForConditionalGeneration, T5Tokenizer
from transformers.models.t5.modeling_t5 import T5Attention

OUT = "tests/data/t5"
N_LOGPROBS = 8  # prompts whose first-step log-probabilities are kept in full


def data_file(name):
    for base in ("../shared/data/possible-stories", "target/test-data/possible-stories"):
        p = os.path.join(base, name)
        if os.path.exists(p):
            return p
    sys.exit(f"no {name}: run scripts/test-data.sh")


# --- run_llm.py (nii-cl/possible-stories @ 3f8c525), the reference protocol -------------------
def multiple_choice_to_prompt(passage, question, options, answer=""):
    ret = f"Passage: {passage}\n"
    ret += f"Question: {question}\n"
    opt_str = " ".join([f"({i}) {j}" for i, j in zip("ABCD", options)])
    ret += f"Options: {opt_str}\n"
    if answer:
        ret += f"Answer: {answer}\n"
    else:
        ret += "Answer:"
    return ret


INSTRUCTION = "Read the given passage and answer the multiple choice question about it.\n"


def zero_shot(q, options):
    return INSTRUCTION + "" + "\n" + multiple_choice_to_prompt(q["document"], q["question"], options)


def pick_of(text):
    for c in text:
        if c in "ABCD":
            return "ABCD".index(c)
    return None


# --- transformers 4.25's slow T5Tokenizer.decode, special tokens kept (what the authors ran) ---
def slow_decode(sp, ids, specials):
    out, sub, prev_special = "", [], False
    for i in ids:
        tok = specials.get(i) or sp.id_to_piece(i)
        if i in specials:
            if not prev_special:
                out += " "
            out += sp.decode_pieces(sub) + tok
            prev_special, sub = True, []
        else:
            sub.append(tok)
            prev_special = False
    out += sp.decode_pieces(sub)
    return clean_up_tokenization(out.strip())


# PreTrainedTokenizerBase.clean_up_tokenization (decode's clean_up_tokenization_spaces=True, the
# default of transformers 4.25).
def clean_up_tokenization(s):
    return (s.replace(" .", ".").replace(" ?", "?").replace(" !", "!").replace(" ,", ",")
            .replace(" ' ", "'").replace(" n't", "n't").replace(" 'm", "'m").replace(" 's", "'s")
            .replace(" 've", "'ve").replace(" 're", "'re"))


def sha(s):
    return hashlib.sha256(s.encode()).hexdigest()


def ids_sha(ids):
    return sha(",".join(map(str, ids)))


def main():
    dev = [json.loads(l) for l in open(data_file("dev.jsonl"))]
    os.makedirs(OUT, exist_ok=True)
    # 1. The tokenizer: SentencePiece on the stories and the prompt template.
    corpus = os.path.join(OUT, "corpus.tmp")
    with open(corpus, "w") as f:
        for name in ("dev.jsonl", "test.jsonl"):
            for l in open(data_file(name)):
                q = json.loads(l)
                f.write(zero_shot(q, q["options"]) + " A B C D\n")
    spm.SentencePieceTrainer.train(
        input=corpus, model_prefix=os.path.join(OUT, "spiece"), vocab_size=600,
        model_type="unigram", pad_id=0, eos_id=1, unk_id=2, bos_id=-1,
        character_coverage=1.0, minloglevel=2, num_threads=2,
    )
    os.remove(corpus)
    os.remove(os.path.join(OUT, "spiece.vocab"))
    sp = spm.SentencePieceProcessor(model_file=os.path.join(OUT, "spiece.model"))
    extra_ids = 4
    n_tokens = sp.get_piece_size() + extra_ids

    tok_dir = os.path.join(OUT, "tok.tmp")
    os.makedirs(tok_dir, exist_ok=True)
    shutil.copy(os.path.join(OUT, "spiece.model"), tok_dir)
    json.dump({"extra_ids": extra_ids, "model_max_length": 512}, open(os.path.join(tok_dir, "tokenizer_config.json"), "w"))
    fast = T5Tokenizer.from_pretrained(tok_dir)
    assert len(fast) == n_tokens, (len(fast), n_tokens)
    specials = {0: "<pad>", 1: "</s>", 2: "<unk>"}
    for i in range(extra_ids):
        specials[sp.get_piece_size() + extra_ids - 1 - i] = f"<extra_id_{i}>"

    # 2. The prompts: every dev question with its human options, then with the gold option
    #    replaced by the gold option of the next question (an ending of another story).
    prompts = []
    for i, q in enumerate(dev):
        prompts.append({"question_id": q["question_id"], "slot": "human", "text": zero_shot(q, q["options"])})
    for i, q in enumerate(dev):
        other = dev[(i + 1) % len(dev)]
        opts = list(q["options"])
        opts[q["gold_label"]] = other["options"][other["gold_label"]]
        prompts.append({"question_id": q["question_id"], "slot": "ending", "ending": opts[q["gold_label"]], "text": zero_shot(q, opts)})

    reference = {
        "tokens": len(fast),
        "buckets": {
            "relative": list(range(-600, 601)),
            "encoder": T5Attention._relative_position_bucket(torch.arange(-600, 601), True, 32, 128).tolist(),
            "decoder": T5Attention._relative_position_bucket(torch.arange(-600, 601), False, 32, 128).tolist(),
        },
        "models": {},
    }
    slow_ids = [sp.encode(p["text"]) + [1] for p in prompts]
    fast_ids = [fast(p["text"]).input_ids for p in prompts]
    differ = sum(a != b for a, b in zip(slow_ids, fast_ids))
    print(f"tokenizers: {differ} of {len(prompts)} prompts differ between SentencePiece and tokenizer.json")

    layouts = {
        "flan": dict(feed_forward_proj="gated-gelu", tie_word_embeddings=False, seed=2),
        "t5": dict(feed_forward_proj="relu", tie_word_embeddings=True, seed=1),
    }
    for name, lay in layouts.items():
        torch.manual_seed(lay["seed"])
        cfg = T5Config(
            vocab_size=n_tokens, d_model=32, d_kv=8, d_ff=48, num_layers=2, num_decoder_layers=2,
            num_heads=4, relative_attention_num_buckets=32, relative_attention_max_distance=128,
            feed_forward_proj=lay["feed_forward_proj"], tie_word_embeddings=lay["tie_word_embeddings"],
            pad_token_id=0, eos_token_id=1, decoder_start_token_id=0, dropout_rate=0.0,
        )
        model = T5ForConditionalGeneration(cfg).eval()
        # Random weights rarely name a letter; the pieces holding A-D get 2x larger embedding
        # (and head) rows, so that answers pick options and the pick is exercised. With
        # transformers' default initialisation f32 noise stays near 1e-6 and every greedy step
        # is decided by a margin far above it (min_margin below).
        letters = [i for i in range(sp.get_piece_size()) if any(c in "ABCD" for c in sp.id_to_piece(i))]
        head = torch.randn(cfg.vocab_size, cfg.d_model)
        with torch.no_grad():
            model.shared.weight[letters] *= 2.0
            head[letters] *= 2.0
        d = os.path.join(OUT, name)
        if os.path.exists(d):
            shutil.rmtree(d)
        os.makedirs(d)
        # Written by hand, as the Hub's folders are laid out: transformers 5 forces
        # tie_word_embeddings=True in T5Config and unties the head only when the checkpoint
        # carries its own lm_head.weight, so save_pretrained cannot write a Flan layout.
        sd = {k: v.contiguous() for k, v in model.state_dict().items()
              if k not in ("encoder.embed_tokens.weight", "decoder.embed_tokens.weight", "lm_head.weight")}
        if not lay["tie_word_embeddings"]:
            sd["lm_head.weight"] = head
        save_file(sd, os.path.join(d, "model.safetensors"), metadata={"format": "pt"})
        conf = cfg.to_dict()
        conf["tie_word_embeddings"] = lay["tie_word_embeddings"]
        conf["architectures"] = ["T5ForConditionalGeneration"]
        for k in ("scale_decoder_outputs", "dtype", "transformers_version", "is_gated_act", "dense_act_fn"):
            conf.pop(k, None)
        json.dump(conf, open(os.path.join(d, "config.json"), "w"), indent=2, sort_keys=True)
        if name == "flan":
            fast.save_pretrained(tok_dir)
            shutil.copy(os.path.join(tok_dir, "tokenizer.json"), d)
        json.dump({"extra_ids": extra_ids, "model_max_length": 512}, open(os.path.join(d, "tokenizer_config.json"), "w"))
        model = T5ForConditionalGeneration.from_pretrained(d).eval()
        # The reference model is the one loaded back from the folder, as a user's would be
        # (the SentencePiece model beside it; tests copy it in for the T5 layout).
        tied = model.lm_head.weight.data_ptr() == model.shared.weight.data_ptr()
        assert tied == lay["tie_word_embeddings"], f"{name}: head tied={tied}, config says {lay['tie_word_embeddings']}"
        assert model.config.scale_decoder_outputs == lay["tie_word_embeddings"]
        rows = []
        with torch.no_grad():
            for k, (p, ids) in enumerate(zip(prompts, slow_ids)):
                x = torch.tensor([ids])
                g = model.generate(x, max_length=20, do_sample=False, num_beams=1, min_length=0,
                                   decoder_start_token_id=0, eos_token_id=1, pad_token_id=0,
                                   output_scores=True, return_dict_in_generate=True)
                out = g.sequences[0].tolist()
                # The smallest gap between the two best logits over the greedy steps: how far
                # above float noise each decision is.
                margin = min(float(sc[0].topk(2).values[0] - sc[0].topk(2).values[1]) for sc in g.scores)
                text = slow_decode(sp, out, specials)
                row = {
                    "question_id": p["question_id"], "slot": p["slot"],
                    "prompt_sha256": sha(p["text"]), "ids_sha256": ids_sha(ids), "tokens": len(ids),
                    "answer_ids": out, "answer": text, "answer_fast": fast.decode(out), "pick": pick_of(text),
                    "min_margin": margin,
                }
                if k < N_LOGPROBS:
                    logits = model(input_ids=x, decoder_input_ids=torch.tensor([[0]])).logits[0, 0]
                    row["first_log_probs"] = torch.log_softmax(logits.double(), -1).tolist()
                rows.append(row)
        picks = [r["pick"] for r in rows]
        dist = {str(c): picks.count(c) for c in (0, 1, 2, 3, None)}
        print(f"{name}: picks {dist}; distinct answers {len(set(r['answer'] for r in rows))}; "
              f"smallest margin {min(r['min_margin'] for r in rows):.4f}")
        reference["models"][name] = rows
        if name == "t5":
            # The same weights as two PyTorch shards behind pytorch_model.bin.index.json.
            pth = os.path.join(OUT, "t5-pth")
            if os.path.exists(pth):
                shutil.rmtree(pth)
            os.makedirs(pth)
            for f in ("config.json", "tokenizer_config.json"):
                shutil.copy(os.path.join(d, f), pth)
            names = sorted(sd)
            halves = {"pytorch_model-00001-of-00002.bin": names[: len(names) // 2],
                      "pytorch_model-00002-of-00002.bin": names[len(names) // 2:]}
            weight_map = {}
            for f, part in halves.items():
                torch.save({k: sd[k] for k in part}, os.path.join(pth, f))
                weight_map.update({k: f for k in part})
            json.dump({"metadata": {}, "weight_map": weight_map}, open(os.path.join(pth, "pytorch_model.bin.index.json"), "w"), indent=1)
    shutil.rmtree(tok_dir)
    reference["prompts"] = [{"question_id": p["question_id"], "slot": p["slot"], "text": p["text"]} for p in prompts[:3]]
    reference["fast_ids_sha256"] = [ids_sha(i) for i in fast_ids]
    with open(os.path.join(OUT, "reference.json"), "w") as f:
        json.dump(reference, f)
    print("wrote", OUT)


if __name__ == "__main__":
    main()
