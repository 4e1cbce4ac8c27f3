#!/usr/bin/env python3
"""PyTorch reference logits for scorekit's judge (crates/runtime/src/judge.rs). Dev-time only.

For each tiny judge (BERT / RoBERTa / DeBERTa-v3, multiple-choice and binary sequence-classification)
this script
  1. trains a tiny tokenizer on Possible Stories dev text (WordPiece / byte-level BPE / Unigram);
  2. builds the Hugging Face model from a tiny config and fills every float tensor with the
     deterministic generator below (the Rust tests regenerate the same weights from the tensor list,
     so no weights are committed);
  3. tokenizes (document, question + " " + option) pairs as the dataset authors do
     (`tokenizer(first, second, truncation=True)`), runs the model in float32, eager attention;
  4. writes tests/data/story/<name>/: config.json, tensors.json (names and shapes), reference.json
     (pairs, token ids, type ids, logits), and for the multiple-choice fixtures the tokenizer files,
     which the binary fixtures of the same architecture share.
It also saves the full models under fixtures-cache/judge/<name>/ for manual runs.

Weights: tensor `name` with n elements gets, for j = 1..n, z = splitmix64_mix(fnv1a64(name) + j * G)
(64-bit wrapping), u = (z >> 40) / 2**24, v = 2u - 1; value = 0.1 v, or 1 + 0.1 v for LayerNorm
weights. Rust: tests/story.rs `tiny_weight`.

Run: /work/venv-dev/bin/python scripts/reference/judge_reference.py [NAME...]   (from the repository root)
"""
import json
import os
import shutil
import string
import sys

import numpy as np
import torch
from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, processors, trainers
from transformers import (AutoConfig, AutoModelForMultipleChoice, AutoModelForSequenceClassification,
                          PreTrainedTokenizerFast)

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DATA = os.path.join(ROOT, "..", "shared", "data", "possible-stories", "dev.jsonl")
OUT = os.path.join(ROOT, "tests", "data", "story")
CACHE = os.path.join(ROOT, "fixtures-cache", "judge")
GOLDEN = np.uint64(0x9E3779B97F4A7C15)
MAX_POS = 128


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


def corpus():
    with open(DATA) as f:
        rows = [json.loads(line) for line in f]
    texts = []
    for r in rows:
        texts.append(r["document"])
        texts.append(r["question"])
        texts.extend(r["options"])
    return rows, texts


def bert_tokenizer(texts):
    tok = Tokenizer(models.WordPiece(unk_token="[UNK]"))
    tok.normalizer = normalizers.BertNormalizer(lowercase=True)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    specials = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    alphabet = list(string.ascii_lowercase + string.digits + string.punctuation)
    tok.train_from_iterator(texts, trainers.WordPieceTrainer(vocab_size=2000, special_tokens=specials,
                                                             initial_alphabet=alphabet))
    cls, sep = tok.token_to_id("[CLS]"), tok.token_to_id("[SEP]")
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B:1 [SEP]:1",
        special_tokens=[("[CLS]", cls), ("[SEP]", sep)])
    tok.decoder = decoders.WordPiece()
    return tok, dict(cls_token="[CLS]", sep_token="[SEP]", pad_token="[PAD]", unk_token="[UNK]",
                     mask_token="[MASK]")


def roberta_tokenizer(texts):
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    specials = ["<s>", "<pad>", "</s>", "<unk>", "<mask>"]
    tok.train_from_iterator(texts, trainers.BpeTrainer(vocab_size=2000, special_tokens=specials,
                                                       initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    tok.post_processor = processors.RobertaProcessing(("</s>", tok.token_to_id("</s>")),
                                                      ("<s>", tok.token_to_id("<s>")),
                                                      trim_offsets=True, add_prefix_space=False)
    return tok, dict(bos_token="<s>", eos_token="</s>", cls_token="<s>", sep_token="</s>", pad_token="<pad>",
                     unk_token="<unk>", mask_token="<mask>")


def deberta_tokenizer(texts):
    tok = Tokenizer(models.Unigram())
    tok.normalizer = normalizers.Sequence([normalizers.Replace("``", '"'), normalizers.Replace("''", '"')])
    tok.pre_tokenizer = pre_tokenizers.Metaspace()
    tok.decoder = decoders.Metaspace()
    specials = ["[PAD]", "[CLS]", "[SEP]", "[UNK]", "[MASK]"]
    tok.train_from_iterator(texts, trainers.UnigramTrainer(vocab_size=2000, special_tokens=specials,
                                                           unk_token="[UNK]"))
    cls, sep = tok.token_to_id("[CLS]"), tok.token_to_id("[SEP]")
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS]:0 $A:0 [SEP]:0", pair="[CLS]:0 $A:0 [SEP]:0 $B:1 [SEP]:1",
        special_tokens=[("[CLS]", cls), ("[SEP]", sep)])
    return tok, dict(cls_token="[CLS]", sep_token="[SEP]", pad_token="[PAD]", unk_token="[UNK]",
                     mask_token="[MASK]")


def config_for(arch, vocab, pad_id, head, labels):
    common = dict(vocab_size=vocab, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                  intermediate_size=64, hidden_act="gelu", hidden_dropout_prob=0.0,
                  attention_probs_dropout_prob=0.0, layer_norm_eps=1e-7 if arch == "deberta-v2" else 1e-12,
                  pad_token_id=pad_id)
    if arch == "bert":
        cfg = AutoConfig.for_model("bert", max_position_embeddings=MAX_POS, type_vocab_size=2, **common)
    elif arch == "electra":
        # electra_mc: embeddings narrower than the hidden size (the projection); electra_binary:
        # as wide (the shape ELECTRA-base/large have, which scorekit's native encoder runs).
        cfg = AutoConfig.for_model("electra", max_position_embeddings=MAX_POS, type_vocab_size=2,
                                   embedding_size=16 if head == "mc" else 32, **common)
    elif arch == "roberta":
        cfg = AutoConfig.for_model("roberta", max_position_embeddings=MAX_POS + pad_id + 1, type_vocab_size=1,
                                   bos_token_id=0, eos_token_id=2, **common)
    else:
        # DeBERTa-v3 shape: relative attention with buckets, no absolute positions, no token types.
        cfg = AutoConfig.for_model("deberta-v2", max_position_embeddings=MAX_POS, type_vocab_size=0,
                                   relative_attention=True, pos_att_type=["p2c", "c2p"],
                                   max_relative_positions=-1, position_buckets=16, norm_rel_ebd="layer_norm",
                                   share_att_key=True, position_biased_input=False, pooler_hidden_size=32,
                                   pooler_dropout=0.0, pooler_hidden_act="gelu", **common)
    if head == "binary":
        cfg.id2label = {i: l for i, l in enumerate(labels)}
        cfg.label2id = {l: i for i, l in enumerate(labels)}
    return cfg


TOKENIZERS = {}


def build(name, arch, head, rows, texts):
    # One tokenizer per architecture; the binary fixtures reuse the multiple-choice one's files.
    if arch not in TOKENIZERS:
        TOKENIZERS[arch] = {"bert": bert_tokenizer, "roberta": roberta_tokenizer,
                            "deberta-v2": deberta_tokenizer, "electra": bert_tokenizer}[arch](texts)
    tok, special = TOKENIZERS[arch]
    hf_tok = PreTrainedTokenizerFast(tokenizer_object=tok, model_max_length=MAX_POS, **special)
    labels = ["not_follow", "follow"]
    cfg = config_for(arch, tok.get_vocab_size(), hf_tok.pad_token_id, head, labels)
    cfg._attn_implementation = "eager"
    torch.manual_seed(0)
    cls = AutoModelForMultipleChoice if head == "mc" else AutoModelForSequenceClassification
    model = cls.from_config(cfg).eval()
    tensors = []
    with torch.no_grad():
        for pname, p in model.state_dict().items():
            if not p.dtype.is_floating_point:
                continue
            w = tiny_weight(pname, p.numel()).reshape(tuple(p.shape))
            p.copy_(torch.from_numpy(w))
            tensors.append({"name": pname, "shape": list(p.shape)})

    # Four questions: three as they are, the fourth with a long document to exercise truncation.
    questions = rows[:4]
    firsts, seconds = [], []
    for qi, r in enumerate(questions):
        doc = " ".join([r["document"]] * 6) if qi == 3 else r["document"]
        for o in r["options"]:
            firsts.append(doc)
            seconds.append(r["question"] + " " + o)
    want_types = arch != "roberta"
    enc = hf_tok(firsts, seconds, truncation=True, return_token_type_ids=want_types)
    ids = enc["input_ids"]
    types = enc["token_type_ids"] if want_types else [[0] * len(x) for x in ids]
    assert max(len(x) for x in ids) == MAX_POS, "the long pair must be truncated"
    batch = hf_tok.pad({"input_ids": ids, "attention_mask": enc["attention_mask"]}, return_tensors="pt")
    tt = torch.zeros_like(batch["input_ids"])
    for i, t in enumerate(types):
        tt[i, :len(t)] = torch.tensor(t)
    with torch.no_grad():
        if head == "mc":
            n, L = batch["input_ids"].shape
            kw = dict(input_ids=batch["input_ids"].view(n // 4, 4, L),
                      attention_mask=batch["attention_mask"].view(n // 4, 4, L))
            if cfg.type_vocab_size > 1:
                kw["token_type_ids"] = tt.view(n // 4, 4, L)
            logits = model(**kw).logits.reshape(n, 1)
        else:
            kw = dict(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"])
            if cfg.type_vocab_size > 1:
                kw["token_type_ids"] = tt
            logits = model(**kw).logits

    out = os.path.join(OUT, name)
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    cache = os.path.join(CACHE, name)
    shutil.rmtree(cache, ignore_errors=True)
    model.save_pretrained(cache)
    hf_tok.save_pretrained(cache)
    shutil.copy(os.path.join(cache, "config.json"), os.path.join(out, "config.json"))
    if head == "mc":
        for f in ["tokenizer.json", "tokenizer_config.json"]:
            shutil.copy(os.path.join(cache, f), os.path.join(out, f))
    if arch == "roberta" and head == "mc":
        # Old RoBERTa checkpoints (the default judge among them) ship vocab.json + merges.txt only.
        tok.model.save(out)
    if arch == "roberta":
        tok.model.save(cache)
    with open(os.path.join(out, "tensors.json"), "w") as f:
        json.dump(tensors, f, indent=0)
    with open(os.path.join(out, "reference.json"), "w") as f:
        json.dump({"pairs": [[a, b] for a, b in zip(firsts, seconds)], "ids": ids, "type_ids": types,
                   "logits": logits.tolist(), "torch": torch.__version__,
                   "transformers": __import__("transformers").__version__}, f)
    print(f"{name}: {len(tensors)} tensors, vocab {tok.get_vocab_size()}, logits[0] {logits[0].tolist()}")


FIXTURES = [("bert_mc", "bert", "mc"), ("roberta_mc", "roberta", "mc"),
            ("deberta_mc", "deberta-v2", "mc"), ("bert_binary", "bert", "binary"),
            ("roberta_binary", "roberta", "binary"), ("deberta_binary", "deberta-v2", "binary"),
            ("electra_mc", "electra", "mc"), ("electra_binary", "electra", "binary")]


def main():
    # Names on the command line build only those fixtures (e.g. a new architecture's), leaving
    # the committed others as they are.
    wanted = set(sys.argv[1:])
    rows, texts = corpus()
    for name, arch, head in FIXTURES:
        if not wanted or name in wanted:
            build(name, arch, head, rows, texts)


if __name__ == "__main__":
    sys.exit(main())
