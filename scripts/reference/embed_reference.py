#!/usr/bin/env python3
"""Reference sentence embeddings and token ids from sentence-transformers (dev-time only).

Usage: embed_reference.py MODEL_DIR SENTENCES.txt OUT.json [--tokens-only]

Loads MODEL_DIR with sentence_transformers.SentenceTransformer on the CPU in float32, encodes
every line of SENTENCES.txt (batch of 4, so padding is exercised) and writes
{"model", "versions", "max_seq_length", "sentences", "token_ids", "embeddings"} to OUT.json.
--tokens-only treats MODEL_DIR as a cased WordPiece vocab.txt (LaBSE's) and writes the token ids of
transformers' pure-Python BertTokenizer (do_lower_case=False, as LaBSE's tokenizer_config.json says),
truncation off: an independent implementation of the tokenisation the Rust side gets from tokenizer.json.
"""
import json
import sys


def main():
    model_dir, sentences_path, out_path = sys.argv[1:4]
    tokens_only = "--tokens-only" in sys.argv[4:]
    sentences = [l.rstrip("\n") for l in open(sentences_path, encoding="utf-8") if l.strip()]
    import transformers

    out = {"model": model_dir.rstrip("/").split("/")[-1], "sentences": sentences,
           "versions": {"transformers": transformers.__version__}}
    if tokens_only:
        try:  # transformers >= 5 keeps the pure-Python WordPiece as BertTokenizerLegacy
            from transformers.models.bert.tokenization_bert_legacy import BertTokenizerLegacy as Slow
        except ImportError:
            from transformers import BertTokenizer as Slow
        tok = Slow(vocab_file=model_dir, do_lower_case=False, tokenize_chinese_chars=True, strip_accents=None)
        out["tokenizer_class"] = type(tok).__name__
        out["token_ids"] = [tok(s)["input_ids"] for s in sentences]
    else:
        import torch
        import sentence_transformers

        torch.manual_seed(0)
        m = sentence_transformers.SentenceTransformer(model_dir, device="cpu")
        out["versions"]["sentence_transformers"] = sentence_transformers.__version__
        out["versions"]["torch"] = torch.__version__
        out["max_seq_length"] = m.max_seq_length
        tok = m.tokenizer
        out["token_ids"] = [tok(s, truncation=True, max_length=m.max_seq_length)["input_ids"] for s in sentences]
        emb = m.encode(sentences, batch_size=4, convert_to_numpy=True)
        out["embeddings"] = [[float("%.8g" % x) for x in row] for row in emb.tolist()]
    with open(out_path, "w", encoding="utf-8") as f:
        json.dump(out, f, ensure_ascii=False)
        f.write("\n")


if __name__ == "__main__":
    main()
