#!/usr/bin/env python3
"""Reference token ids for scorekit's spm.model reader (crates/models/src/spm.rs). Dev-time only.

DeBERTa-v2/v3 checkpoints on the Hub (microsoft/deberta-v3-large, ...) ship spm.model and
tokenizer_config.json but no tokenizer.json. scorekit builds the fast tokenizer from spm.model
as transformers' `DebertaV2Converter` does. This script

  1. trains a tiny SentencePiece unigram model (vocabulary 1000) on Possible Stories dev + test text
     with DeBERTa-v3's layout: [PAD]=0, [CLS]=1, [SEP]=2 (control pieces), [UNK]=3, NFKC
     normalisation (`nmt_nfkc`, which gives spm.model a precompiled charsmap); [MASK] is not a piece
     and the tokenizer appends it, as for microsoft/deberta-v3-*;
  2. writes tests/data/spm/spm.model and, per tokenizer setting (`v3`: the Hub's
     {"do_lower_case": false}; `lower_punct`: do_lower_case and split_by_punct, deberta-v2 style),
     tokenizer_config.json;
  3. tokenizes (document, question + " " + option) pairs, as the story judge builds them, from the
     real dev split (the first 75 questions, 300 pairs) plus pairs with odd text (accents, CJK,
     emoji, runs of spaces, ``quotes'', tabs, newlines, NFKC-changed characters, literal special
     tokens), with (a) transformers 4's slow `DebertaV2Tokenizer` (sentencepiece itself) and (b) the
     fast tokenizer transformers 4 converts from it (`DebertaV2TokenizerFast`, `DebertaV2Converter`);
  4. writes tests/data/spm/reference.json (pairs; per setting: fast ids and type ids, the slow ids
     where they differ, offsets for `v3`) and tests/data/spm/v3/tokenizer.json +
     tokenizer_config.json, the converted tokenizer as transformers saves it.

transformers 5 has no slow DebertaV2Tokenizer (and builds DeBERTa's tokenizer from spm.model with
its own normaliser, not the converter's), so this runs in a transformers 4 venv:

    python3 -m venv /tmp/venv-tf4
    /tmp/venv-tf4/bin/pip install transformers==4.57.1 sentencepiece protobuf
    /tmp/venv-tf4/bin/python scripts/reference/spm_reference.py    (from the repository root)
"""
import json
import os
import random
import shutil
import sys
import tempfile

import sentencepiece as spm
import transformers
from transformers import DebertaV2Tokenizer, DebertaV2TokenizerFast

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DATA = os.path.join(ROOT, "..", "shared", "data", "possible-stories")
OUT = os.path.join(ROOT, "tests", "data", "spm")
SETTINGS = {
    "v3": {"do_lower_case": False, "vocab_type": "spm"},
    "lower_punct": {"do_lower_case": True, "split_by_punct": True, "vocab_type": "spm"},
}
REAL_QUESTIONS = 75

# Odd text: inserted into real documents and used as options.
ODD = [
    "Zoë's café in São Paulo — a naïve résumé",
    "東京で猫が寝た。北京欢迎你",
    "😀👍🏽 👨‍👩‍👧 ❤️ 🇫🇷",
    "Tom   went    home     late",
    "``quoted'' text and “smart” ‘quotes’",
    "a\tb\t\tc",
    "line one\nline two\r\nline three\n\n",
    "   leading and trailing   ",
    "no\u00a0break\u2009thin\u200bzero",
    "ＡＢＣ１２３ ｶﾀｶﾅ ﬁne ﬂow Ⅻ ① x² ½",
    "e\u0301 a\u0308 combining",
    "[MASK] and [CLS] and [SEP] and [UNK] and [PAD]",
    "Привет, мир! مرحبا שלום नमस्ते",
    "...!!!???---((()))",
    "x" * 3 + "~" * 5 + "¿¡",
    "Ω≈ç√∫ µ",
]


def pairs():
    rows = [json.loads(l) for l in open(os.path.join(DATA, "dev.jsonl"), encoding="utf-8")]
    out = []
    for r in rows[:REAL_QUESTIONS]:
        for o in r["options"]:
            out.append((r["document"], r["question"] + " " + o))
    rng = random.Random(17)
    for k, odd in enumerate(ODD):
        for j in range(3):
            r = rows[REAL_QUESTIONS + 3 * k + j]
            words = r["document"].split(" ")
            at = rng.randrange(len(words) + 1)
            doc = " ".join(words[:at] + [odd] + words[at:])
            opt = r["options"][j] if j != 1 else odd
            out.append((doc, r["question"] + " " + opt))
    # Edge cases: empty texts, only spaces, an odd text alone.
    out += [("", "Why? "), (" ", " "), ("\t\n", "x"), (ODD[2], ODD[0])]
    return out


def train(path_prefix):
    corpus = os.path.join(os.path.dirname(path_prefix), "corpus.txt")
    with open(corpus, "w", encoding="utf-8") as f:
        for name in ["dev.jsonl", "test.jsonl"]:
            for l in open(os.path.join(DATA, name), encoding="utf-8"):
                r = json.loads(l)
                f.write(r["document"] + "\n" + r["question"] + "\n")
                for o in r["options"]:
                    f.write(o.strip() + "\n")
    spm.SentencePieceTrainer.train(
        input=corpus,
        model_prefix=path_prefix,
        model_type="unigram",
        vocab_size=1000,
        normalization_rule_name="nmt_nfkc",
        pad_id=0,
        pad_piece="[PAD]",
        bos_id=1,
        bos_piece="[CLS]",
        eos_id=2,
        eos_piece="[SEP]",
        unk_id=3,
        unk_piece="[UNK]",
        seed_sentencepiece_size=100000,
        num_threads=2,
        minloglevel=2,
    )


def main():
    assert transformers.__version__.startswith("4."), "run in a transformers 4 venv (see the docstring)"
    os.makedirs(OUT, exist_ok=True)
    tmp = tempfile.mkdtemp()
    train(os.path.join(tmp, "spm"))
    shutil.copy(os.path.join(tmp, "spm.model"), os.path.join(OUT, "spm.model"))
    ps = pairs()
    ref = {"transformers": transformers.__version__, "pairs": ps, "settings": {}}
    for name, cfg in SETTINGS.items():
        d = os.path.join(tmp, name)
        os.makedirs(d)
        shutil.copy(os.path.join(OUT, "spm.model"), os.path.join(d, "spm.model"))
        json.dump(cfg, open(os.path.join(d, "tokenizer_config.json"), "w"), indent=2)
        slow = DebertaV2Tokenizer.from_pretrained(d)
        fast = DebertaV2TokenizerFast.from_pretrained(d)
        firsts, seconds = [p[0] for p in ps], [p[1] for p in ps]
        f = fast(firsts, seconds, return_offsets_mapping=True)
        s = slow(firsts, seconds)
        differ = [i for i in range(len(ps)) if s["input_ids"][i] != f["input_ids"][i]]
        print(f"{name}: {len(ps)} pairs, slow and fast differ on {len(differ)}: {differ}")
        for i in differ[:8]:
            a, b = s["input_ids"][i], f["input_ids"][i]
            k = next(k for k in range(min(len(a), len(b)) + 1) if k == min(len(a), len(b)) or a[k] != b[k])
            print("   pair", i, "slow", slow.convert_ids_to_tokens(a[max(0, k - 3):k + 4]))
            print("   pair", i, "fast", fast.convert_ids_to_tokens(b[max(0, k - 3):k + 4]))
        n_first = []
        for ids, types in zip(f["input_ids"], f["token_type_ids"]):
            n = types.count(0)
            assert types == [0] * n + [1] * (len(ids) - n)
            n_first.append(n)
        ref["settings"][name] = {
            "tokenizer_config": cfg,
            # Fast tokenizer (DebertaV2Converter): ids; type ids are n_first zeros then ones.
            "ids": f["input_ids"],
            "n_first": n_first,
            # Slow tokenizer (sentencepiece): ids of the pairs where they differ from the fast one.
            "slow_ids": {str(i): s["input_ids"][i] for i in differ},
            "mask_id": fast.mask_token_id,
        }
        if name == "v3":
            # Character offsets of each token in its own text, flattened: start, end, start, ...
            ref["settings"][name]["offsets"] = [[x for o in offs for x in o] for offs in f["offset_mapping"]]
            saved = os.path.join(tmp, name + "-saved")
            fast.save_pretrained(saved)
            os.makedirs(os.path.join(OUT, name), exist_ok=True)
            shutil.copy(os.path.join(saved, "tokenizer.json"), os.path.join(OUT, name, "tokenizer.json"))
            json.dump(cfg, open(os.path.join(OUT, name, "tokenizer_config.json"), "w"), indent=2)
    with open(os.path.join(OUT, "reference.json"), "w", encoding="utf-8") as f:
        json.dump(ref, f, ensure_ascii=False, separators=(",", ":"))
    shutil.rmtree(tmp)
    print("wrote", OUT, file=sys.stderr)


if __name__ == "__main__":
    main()
