//! DeBERTa-v2/v3 folders with spm.model and no tokenizer.json (microsoft/deberta-v3-large, ...):
//! scorekit's tokenizer against transformers 4 (`DebertaV2TokenizerFast`, converted from the
//! slow SentencePiece tokenizer) on real Possible Stories pairs and odd text; the same judge with
//! spm.model or the converted tokenizer.json; a corrupt spm.model is exit 2 naming the file.
//!
//! Reference: `scripts/reference/spm_reference.py` (a tiny unigram spm.model trained on the
//! dataset with DeBERTa-v3's special pieces, reference ids in tests/data/spm/reference.json).

use crate::common;

use candle_core::{DType, Device};
use common::tiny_judge::build_judge;
use common::*;
use scorekit::runtime::judge::Judge;
use scorekit::runtime::models::architecture;
use scorekit::runtime::EngineOptions;
use serde_json::Value;
use std::path::{Path, PathBuf};
use tokenizers::Tokenizer;

fn spm_data() -> PathBuf {
    repo().join("tests/data/spm")
}

fn reference() -> Value {
    read_json(&spm_data().join("reference.json"))
}

fn pairs(r: &Value) -> Vec<(String, String)> {
    serde_json::from_value(r["pairs"].clone()).unwrap()
}

/// A folder with the fixture's spm.model and `tokenizer_config` (no tokenizer.json).
fn spm_folder(dir: &Path, tokenizer_config: &Value) {
    std::fs::create_dir_all(dir).unwrap();
    std::fs::copy(spm_data().join("spm.model"), dir.join("spm.model")).unwrap();
    std::fs::write(
        dir.join("tokenizer_config.json"),
        tokenizer_config.to_string(),
    )
    .unwrap();
}

/// The tokenizer scorekit builds for a DeBERTa-v2 folder without tokenizer.json.
fn deberta_tokenizer(dir: &Path) -> Tokenizer {
    architecture("deberta-v2")
        .unwrap()
        .legacy_tokenizer(dir)
        .expect("a folder with spm.model has a tokenizer")
        .unwrap()
}

/// Encode pairs with special tokens; offsets in characters, as transformers gives them.
fn encode(t: &Tokenizer, pairs: &[(String, String)]) -> Vec<tokenizers::Encoding> {
    let inputs: Vec<tokenizers::EncodeInput> = pairs
        .iter()
        .map(|(a, b)| (a.as_str(), b.as_str()).into())
        .collect();
    t.encode_batch_char_offsets(inputs, true).unwrap()
}

#[test]
fn spm_model_tokenizes_as_transformers_converts_it() {
    let r = reference();
    let pairs = pairs(&r);
    assert!(pairs.len() >= 350);
    for (name, s) in r["settings"].as_object().unwrap() {
        let tmp = tempfile::tempdir().unwrap();
        spm_folder(tmp.path(), &s["tokenizer_config"]);
        let t = deberta_tokenizer(tmp.path());
        assert_eq!(
            t.token_to_id("[MASK]"),
            s["mask_id"].as_u64().map(|i| i as u32)
        );
        let ids: Vec<Vec<u32>> = serde_json::from_value(s["ids"].clone()).unwrap();
        let n_first: Vec<usize> = serde_json::from_value(s["n_first"].clone()).unwrap();
        let offsets: Option<Vec<Vec<usize>>> = serde_json::from_value(s["offsets"].clone()).ok();
        let slow: std::collections::BTreeMap<usize, Vec<u32>> = s["slow_ids"]
            .as_object()
            .unwrap()
            .iter()
            .map(|(k, v)| {
                (
                    k.parse().unwrap(),
                    serde_json::from_value(v.clone()).unwrap(),
                )
            })
            .collect();
        for (i, e) in encode(&t, &pairs).iter().enumerate() {
            let what = format!("{name}, pair {i}: {:?}", pairs[i]);
            assert_eq!(e.get_ids(), ids[i], "{what}");
            let types: Vec<u32> = (0..ids[i].len())
                .map(|k| u32::from(k >= n_first[i]))
                .collect();
            assert_eq!(e.get_type_ids(), types, "{what}");
            if let Some(offsets) = &offsets {
                let got: Vec<usize> = e.get_offsets().iter().flat_map(|&(a, b)| [a, b]).collect();
                assert_eq!(got, offsets[i], "{what}: offsets");
            }
            // transformers' slow tokenizer (SentencePiece) agrees except where the reference
            // records that it does not (literal special tokens, punctuation splitting).
            if let Some(s) = slow.get(&i) {
                assert_ne!(e.get_ids(), s.as_slice(), "{what}");
            }
        }
        eprintln!(
            "{name}: {} pairs identical to DebertaV2TokenizerFast; the slow tokenizer differs on {}",
            pairs.len(),
            slow.len()
        );
    }
}

#[test]
fn spm_model_gives_the_tokenizer_json_transformers_saves() {
    let tmp = tempfile::tempdir().unwrap();
    let saved = spm_data().join("v3");
    spm_folder(tmp.path(), &read_json(&saved.join("tokenizer_config.json")));
    let ours = deberta_tokenizer(tmp.path());
    let theirs = Tokenizer::from_file(saved.join("tokenizer.json")).unwrap();
    let a: Value = serde_json::from_str(&ours.to_string(false).unwrap()).unwrap();
    let b: Value = serde_json::from_str(&theirs.to_string(false).unwrap()).unwrap();
    for part in [
        "normalizer",
        "pre_tokenizer",
        "post_processor",
        "decoder",
        "model",
        "added_tokens",
    ] {
        assert_eq!(a[part], b[part], "{part}");
    }
    let pairs = pairs(&reference());
    let (x, y) = (encode(&ours, &pairs), encode(&theirs, &pairs));
    for (i, (x, y)) in x.iter().zip(&y).enumerate() {
        assert_eq!(x.get_ids(), y.get_ids(), "pair {i}");
        assert_eq!(x.get_offsets(), y.get_offsets(), "pair {i}");
    }
}

#[test]
fn added_tokens_json_must_agree_with_the_ids_built() {
    let tmp = tempfile::tempdir().unwrap();
    spm_folder(tmp.path(), &serde_json::json!({"do_lower_case": false}));
    let arch = architecture("deberta-v2").unwrap();
    // As microsoft/deberta-v3-* ship it (128000 there, the size of their vocabulary).
    write(tmp.path(), "added_tokens.json", r#"{"[MASK]": 1000}"#);
    assert!(arch.legacy_tokenizer(tmp.path()).unwrap().is_ok());
    for (json, names) in [
        (r#"{"[MASK]": 1005}"#, "\"[MASK]\": id 1005"),
        (
            r#"{"[MASK]": 1000, "<extra>": 1001}"#,
            "\"<extra>\": id 1001",
        ),
    ] {
        write(tmp.path(), "added_tokens.json", json);
        let e = arch.legacy_tokenizer(tmp.path()).unwrap().unwrap_err();
        assert_eq!(e.exit_code(), 2);
        let e = e.to_string();
        assert!(e.contains("added_tokens.json") && e.contains(names), "{e}");
    }
}

/// The tiny DeBERTa-v3 judge of the story tests with the spm fixture's tokenizer: spm.model only,
/// or the tokenizer.json transformers converts from it.
fn spm_judge(dir: &Path, with_tokenizer_json: bool) {
    build_judge("deberta_mc", dir, false);
    let saved = spm_data().join("v3");
    spm_folder(dir, &read_json(&saved.join("tokenizer_config.json")));
    if with_tokenizer_json {
        std::fs::copy(saved.join("tokenizer.json"), dir.join("tokenizer.json")).unwrap();
        std::fs::remove_file(dir.join("spm.model")).unwrap();
    }
}

#[test]
fn a_judge_with_spm_model_scores_as_with_the_converted_tokenizer_json() {
    let tmp = tempfile::tempdir().unwrap();
    let (spm, json) = (tmp.path().join("spm"), tmp.path().join("json"));
    spm_judge(&spm, false);
    spm_judge(&json, true);
    let load = |d: &Path| {
        Judge::load(
            d,
            &Device::Cpu,
            DType::F32,
            None,
            None,
            &EngineOptions::default(),
        )
        .unwrap()
    };
    let (a, b) = (load(&spm), load(&json));
    let pairs: Vec<(String, String)> = pairs(&reference()).into_iter().step_by(10).collect();
    let (ea, eb) = (a.encode(&pairs).unwrap(), b.encode(&pairs).unwrap());
    assert_eq!(ea, eb);
    // The judge truncates (longest first) to the model's 128 positions.
    assert!(ea.iter().any(|e| e.ids.len() == 128));
    let bar = indicatif::ProgressBar::hidden();
    let (la, lb) = (
        a.logits(&pairs, 2000, &bar).unwrap(),
        b.logits(&pairs, 2000, &bar).unwrap(),
    );
    assert_eq!(la, lb);
}

/// Generations for the first `n` dev questions: each question's first option.
fn first_options(dir: &Path, n: usize) -> PathBuf {
    let text =
        std::fs::read_to_string(test_data("possible-stories:dev", "dataset/dev.jsonl")).unwrap();
    let rows: String = text
        .lines()
        .take(n)
        .map(|l| {
            let q: Value = serde_json::from_str(l).unwrap();
            format!(
                "{}\n",
                serde_json::json!({"question_id": q["question_id"], "ending": q["options"][0]})
            )
        })
        .collect();
    write(dir, "gens.jsonl", rows)
}

#[test]
fn story_with_an_spm_model_judge_gives_the_items_of_its_tokenizer_json() {
    let tmp = tempfile::tempdir().unwrap();
    let gens = first_options(tmp.path(), 12);
    let mut items = Vec::new();
    for (name, with_json) in [("spm", false), ("json", true)] {
        let judge = tmp.path().join(name);
        spm_judge(&judge, with_json);
        let out = tmp.path().join(format!("{name}-out"));
        let o = judge_only(&judge, &gens, &out, &["--bootstrap", "200"]);
        assert!(o.status.success(), "{name}: {}", stderr(&o));
        items.push(std::fs::read_to_string(out.join("items.jsonl")).unwrap());
    }
    assert_eq!(items[0].lines().count(), 12);
    assert_eq!(items[0], items[1]);
}

#[test]
fn a_corrupt_spm_model_is_exit_2_naming_the_file() {
    let tmp = tempfile::tempdir().unwrap();
    let gens = first_options(tmp.path(), 1);
    let bytes = std::fs::read(spm_data().join("spm.model")).unwrap();
    let damages: [(&str, Vec<u8>, &str); 3] = [
        ("truncated", bytes[..bytes.len() / 2].to_vec(), "truncated"),
        (
            "not protobuf",
            b"<html>404 Not Found</html>".to_vec(),
            "not a valid SentencePiece model",
        ),
        ("empty", Vec::new(), "no trainer_spec"),
    ];
    for (k, (what, damaged, why)) in damages.iter().enumerate() {
        let judge = tmp.path().join(format!("judge-{k}"));
        spm_judge(&judge, false);
        std::fs::write(judge.join("spm.model"), damaged).unwrap();
        let out = tmp.path().join(format!("out-{k}"));
        let o = judge_only(&judge, &gens, &out, &["--bootstrap", "200"]);
        let e = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{what}: {e}");
        assert!(e.contains("spm.model") && e.contains(why), "{what}: {e}");
        assert!(!e.contains("panicked"), "{what}: {e}");
        assert!(!out.join("items.jsonl").exists(), "{what}");
    }
}
