#!/usr/bin/env python3
"""transformers' own chat renders for scorekit's chat templates (crates/runtime/src/chat_template).
Dev-time only; torch is not needed.

For every model folder under tests/data/chat_templates/models/ (real chat templates of Llama,
Qwen, Mistral, Gemma, Phi and SmolLM models, see PROVENANCE.md there) and every folder under
tests/data/chat_templates/formats/ (small folders this script writes: the places and forms a
template and the special tokens can take, templates that raise or do not compile, Python
semantics), it
  1. copies the folder to a temporary directory with a minimal tokenizer.json (a WordLevel vocab:
     the renders need no vocabulary) and `tokenizer_class: PreTrainedTokenizerFast`, and loads it
     with `AutoTokenizer.from_pretrained` (so transformers itself decides which template and which
     special tokens apply);
  2. renders each conversation with `tokenizer.apply_chat_template(messages,
     add_generation_prompt=..., tokenize=False)`, with `datetime.now()` fixed to NOW (the
     `strftime_now` global reads it);
  3. writes tests/data/chat_templates/cases.json: per folder the special tokens map transformers
     built, and per conversation the messages, add_generation_prompt and the render, or the error
     (its type and message) when transformers fails.
The conversations use a real Possible Stories prompt: the first dev question in the letter judge's
zero-shot prompt (nii-cl/possible-stories run_llm.py, as crates/suites/src/letter.rs builds it),
plus system prompts, multi-shot turns and texts with unicode, quotes, newlines and odd trailing
whitespace.

Set up (once):  python3 -m venv build/ref-venv &&
                build/ref-venv/bin/pip install transformers==4.57.1 jinja2==3.1.6
Run (from the repository root, after scripts/test-data.sh):
                build/ref-venv/bin/python scripts/reference/chat_templates.py
"""
import datetime as _dt
import glob
import json
import os
import shutil
import sys
import tempfile

import jinja2
import transformers
import transformers.utils.chat_template_utils as ctu
from transformers import AutoTokenizer

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
OUT = os.path.join(ROOT, "tests", "data", "chat_templates")
TEST_DATA = os.environ.get("SCOREKIT_TEST_DATA", os.path.join(ROOT, "target", "test-data"))
DEV = glob.glob(os.path.join(TEST_DATA, "possible-stories", "*", "dataset", "dev.jsonl"))

# strftime_now's clock: 2024-09-05 10:00:00 (the Rust test renders at the same UTC instant).
NOW = _dt.datetime(2024, 9, 5, 10, 0, 0)
NOW_EPOCH = int((NOW - _dt.datetime(1970, 1, 1)).total_seconds())


class _FixedClock(_dt.datetime):
    @classmethod
    def now(cls, tz=None):
        return NOW


ctu.datetime = _FixedClock  # chat_template_utils calls datetime.now() in strftime_now

INSTRUCTION = "Read the given passage and answer the multiple choice question about it.\n"


def question_block(passage, question, options, answer):
    """run_llm.py's multiple_choice_to_prompt (letter.rs question_block)."""
    opts = " ".join(f"({l}) {o}" for l, o in zip("ABCD", options))
    out = f"Passage: {passage}\nQuestion: {question}\nOptions: {opts}\n"
    return out + (f"Answer: {answer}\n" if answer else "Answer:")


def zero_shot_prompt(q):
    """instruction + few_shot_prompt ("") + "\\n" + ex_prompt (letter.rs zero_shot_prompt)."""
    return INSTRUCTION + "\n" + question_block(q["document"], q["question"], q["options"], "")


def conversations():
    if not DEV:
        sys.exit(f"no possible-stories dev.jsonl under {TEST_DATA}: run scripts/test-data.sh first")
    with open(DEV[0], encoding="utf-8") as f:
        dev = [json.loads(line) for _, line in zip(range(3), f)]
    prompt, shot1, shot2 = (zero_shot_prompt(q) for q in dev)
    letters = ["ABCD"[q["gold_label"]] for q in dev]
    system = "You are a careful reader. Answer with the letter of one option."
    shots = [
        {"role": "user", "content": shot1},
        {"role": "assistant", "content": letters[1]},
        {"role": "user", "content": shot2},
        {"role": "assistant", "content": letters[2]},
        {"role": "user", "content": prompt},
    ]
    odd = [
        {"role": "system", "content": "  Système : réponds « A » ou \"B\"… {{ not a tag }}  \n"},
        {"role": "user", "content": "Passage: 日本語 🙂 it's \"quoted\" \\ back\\slash\ttab\n\n"
                                    "Question: trailing spaces   \u00a0\u3000\x1f\n"},
        {"role": "assistant", "content": " B \n"},
        {"role": "user", "content": "\n  last\r\n  "},
    ]
    user = {"role": "user", "content": prompt}
    return [
        ("single", [user], True),
        ("system", [{"role": "system", "content": system}, user], True),
        ("multishot", shots, True),
        ("multishot_system", [{"role": "system", "content": system}] + shots, True),
        ("unicode_quotes_whitespace", odd, True),
        ("no_generation_prompt", [user], False),
        ("user_twice", [user, {"role": "user", "content": "Answer with one letter."}], True),
    ]


# Small folders for the places and forms of a template, its errors, and Python semantics.
PY_SEMANTICS = (
    "{%- set ns = namespace(n=0) -%}"
    "{%- for m in messages -%}"
    "{%- if m.role == 'system' %}{% continue %}{% endif -%}"
    "{%- set ns.n = ns.n + 1 -%}"
    "[{{ loop.index0 }}|{{ m.role.title() }}|{{ m['content'].strip() }}|{{ m.content.lstrip() }}|"
    "{{ m.content | trim }}|{{ m.content.startswith('Pa') }}|{{ m.content.split('\\n')[0] }}|"
    "{{ m.get('missing', 'dflt') }}|{{ m.get('x') }}]\n"
    "{%- if ns.n == 2 %}{% break %}{% endif -%}"
    "{%- endfor %}\n"
    "{{ messages[0] }}|{{ messages | length }}|{{ true }}|{{ none }}|{{ 1.0 }}|{{ 2.5e-7 }}|{{ [1, 'a', none] }}\n"
    "{{ messages | tojson }}\n"
    "{{ {'b': [1, 2.0, {}], 'a': 'é<&>'} | tojson(indent=2) }}\n"
    "{{ {'b': 1, 'a': [2]} | tojson(separators=(',', ':'), sort_keys=true) }}\n"
    "{{ messages[1] | items | list | length }}|{{ tools }}|{{ documents }}|{{ tools is none }}\n"
    "{{ bos_token }}|{{ eos_token }}|{{ additional_special_tokens }}|{{ unk_token is defined }}\n"
    "{{ strftime_now('%d %b %Y') }}|{{ strftime_now('%Y-%m-%d %A %B') }}\n"
    "{{ nope | length }}|{{ nope | items | list }}|{{ nope | trim }}|{{ nope | first }}|{{ nope | last }}|"
    "{{ nope | list }}|{{ nope ~ 'x' }}|{% for x in nope %}x{% endfor %}|{{ nope is defined }}|"
    "{{ 'a b  c'.split() }}|{{ 'hello world'.title() }}|{{ 'x-y'.replace('-', '+') }}|{{ 'abc'.endswith('c') }}|"
    "{{ 7 // 2 }}|{{ 1 / 2 }}|{{ messages | selectattr('role', 'equalto', 'user') | list | length }}|"
    "{{ messages | map(attribute='role') | join(',') }}|{{ messages[-1].content | trim }}\n"
    "{%- if add_generation_prompt %}\n<gen>\n{% endif %}\n"
)

FORMATS = {
    # tokenizer_config.json's chat_template as a string
    "config_string": {"tokenizer_config.json": {
        "added_tokens_decoder": {}, "bos_token": "<s>", "eos_token": "</s>",
        "chat_template": "{{ bos_token }}{% for m in messages %}<{{ m.role }}>{{ m.content }}{{ eos_token }}"
                         "{% endfor %}{% if add_generation_prompt %}<assistant>{% endif %}"}},
    # the list form: the "default" template is used
    "config_list_default": {"tokenizer_config.json": {
        "added_tokens_decoder": {}, "eos_token": "</s>",
        "chat_template": [
            {"name": "tool_use", "template": "TOOLS {{ messages | length }}"},
            {"name": "default", "template": "DEFAULT{% for m in messages %} {{ m.role }}={{ m.content }}{% endfor %}"},
            {"name": "rag", "template": "RAG"}]}},
    # the list form without "default": transformers refuses to choose
    "config_list_no_default": {"tokenizer_config.json": {
        "added_tokens_decoder": {},
        "chat_template": [{"name": "tool_use", "template": "T"}, {"name": "rag", "template": "R"}]}},
    # chat_template.jinja wins over tokenizer_config.json's chat_template
    "jinja_over_config": {
        "tokenizer_config.json": {"added_tokens_decoder": {}, "eos_token": "</s>", "chat_template": "FROM CONFIG"},
        "chat_template.jinja": "FROM JINJA{% for m in messages %} {{ m.content }}{% endfor %}\n"},
    # special tokens as AddedToken objects, and a legacy config (no added_tokens_decoder) whose
    # special_tokens_map.json fills the tokens it lacks
    "legacy_special_tokens_map": {
        "tokenizer_config.json": {
            "eos_token": {"__type": "AddedToken", "content": "<|end|>", "lstrip": False, "normalized": False,
                          "rstrip": False, "single_word": False},
            "chat_template": "{{ bos_token }}|{{ eos_token }}|{{ pad_token }}|{{ unk_token }}"
                             "{% for m in messages %}|{{ m.content }}{% endfor %}"},
        "special_tokens_map.json": {"bos_token": {"content": "<|start|>", "lstrip": False, "normalized": False,
                                                  "rstrip": False, "single_word": False},
                                    "eos_token": "<|ignored|>", "pad_token": "<|pad|>"}},
    # a template that raises, as Gemma's does for a system message
    "raises": {"tokenizer_config.json": {
        "added_tokens_decoder": {},
        "chat_template": "{% if messages[0]['role'] == 'system' %}{{ raise_exception('System role not supported') }}"
                         "{% endif %}{% for m in messages %}{{ m.content }}{% endfor %}"}},
    # a template that does not compile
    "malformed": {"chat_template.jinja": "line one\n{% for m in messages %}{{ m.content }}\n{% if x %}\n"},
    # transformers' {% generation %} block renders its body
    "generation_block": {"chat_template.jinja":
        "{%- for m in messages %}\n"
        "  {%- if m.role == 'assistant' %}\n"
        "    {%- generation %}\n"
        "A: {{ m.content }}\n"
        "    {%- endgeneration %}\n"
        "  {%- else %}\nU: {{ m.content }}\n  {% endif %}\n"
        "{%- endfor %}"},
    # jinja2's whitespace rules (trim_blocks, lstrip_blocks, no trailing newline kept) and Python
    # semantics: str() of values, str methods, |trim, |tojson, loop controls, namespace, strftime_now
    "python_semantics": {
        "tokenizer_config.json": {"added_tokens_decoder": {}, "bos_token": "<s>", "eos_token": "</s>",
                                  "additional_special_tokens": ["<x>", "<y>"]},
        "chat_template.jinja": PY_SEMANTICS},
    # no chat template at all
    "no_template": {"tokenizer_config.json": {"added_tokens_decoder": {}, "bos_token": "<s>"}},
}


def write_formats():
    base = os.path.join(OUT, "formats")
    shutil.rmtree(base, ignore_errors=True)
    for name, files in FORMATS.items():
        d = os.path.join(base, name)
        os.makedirs(d)
        for fname, content in files.items():
            with open(os.path.join(d, fname), "w", encoding="utf-8", newline="") as f:
                if isinstance(content, str):
                    f.write(content)
                else:
                    json.dump(content, f, indent=2, ensure_ascii=False)
                    f.write("\n")


def load(folder):
    """AutoTokenizer on a copy of `folder` with a minimal tokenizer.json."""
    tmp = tempfile.mkdtemp()
    for f in os.listdir(folder):
        shutil.copy(os.path.join(folder, f), tmp)
    cfg_path = os.path.join(tmp, "tokenizer_config.json")
    cfg = json.load(open(cfg_path, encoding="utf-8")) if os.path.exists(cfg_path) else {}
    cfg["tokenizer_class"] = "PreTrainedTokenizerFast"
    json.dump(cfg, open(cfg_path, "w", encoding="utf-8"), ensure_ascii=False)
    tokenizer = {
        "version": "1.0", "truncation": None, "padding": None, "added_tokens": [],
        "normalizer": None, "pre_tokenizer": {"type": "Whitespace"}, "post_processor": None,
        "decoder": None, "model": {"type": "WordLevel", "vocab": {"[UNK]": 0}, "unk_token": "[UNK]"},
    }
    json.dump(tokenizer, open(os.path.join(tmp, "tokenizer.json"), "w"))
    try:
        return AutoTokenizer.from_pretrained(tmp)
    finally:
        shutil.rmtree(tmp)


def render(tok, messages, add_generation_prompt):
    try:
        text = tok.apply_chat_template(messages, add_generation_prompt=add_generation_prompt, tokenize=False)
        return {"expected": text}
    except Exception as e:  # the error transformers gives is the expectation
        return {"error": {"type": type(e).__name__, "message": str(e)}}


def main():
    write_formats()
    convs = conversations()
    out = {
        "transformers": transformers.__version__,
        "jinja2": jinja2.__version__,
        "now": NOW.isoformat(),
        "now_epoch_seconds": NOW_EPOCH,
        "folders": [],
    }
    folders = sorted(glob.glob(os.path.join(OUT, "models", "*"))) + sorted(glob.glob(os.path.join(OUT, "formats", "*")))
    for folder in folders:
        rel = os.path.relpath(folder, OUT)
        entry = {"folder": rel}
        try:
            tok = load(folder)
        except Exception as e:
            entry["load_error"] = {"type": type(e).__name__, "message": str(e)}
            out["folders"].append(entry)
            continue
        entry["has_template"] = tok.chat_template is not None
        entry["special_tokens_map"] = tok.special_tokens_map
        entry["cases"] = []
        for name, messages, agp in convs:
            case = {"name": name, "messages": messages, "add_generation_prompt": agp}
            case.update(render(tok, messages, agp))
            entry["cases"].append(case)
        out["folders"].append(entry)
        errors = sum("error" in c for c in entry["cases"])
        print(f"{rel}: {len(entry['cases']) - errors} rendered, {errors} errors")
    with open(os.path.join(OUT, "cases.json"), "w", encoding="utf-8") as f:
        json.dump(out, f, indent=1, ensure_ascii=False)
        f.write("\n")


if __name__ == "__main__":
    main()
