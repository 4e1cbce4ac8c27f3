//! Tiny judges of `tests/data/story/<name>/`, shared by the story and merge tests: committed config,
//! tokenizer and tensor list; weights from the generator `scripts/reference/judge_reference.py` used.

use super::repo;
use scorekit::runtime::weights::write_safetensors;
use serde_json::Value;
use std::path::{Path, PathBuf};

/// The generator of `judge_reference.py`: splitmix64 over fnv1a64(name) + j·golden, 24-bit uniforms.
pub fn tiny_weight(name: &str, n: usize) -> Vec<f32> {
    let seed = name.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
    });
    let norm = name.to_ascii_lowercase().ends_with("norm.weight");
    (1..=n as u64)
        .map(|j| {
            let mut z = seed.wrapping_add(0x9E37_79B9_7F4A_7C15u64.wrapping_mul(j));
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            z ^= z >> 31;
            let v = 2.0 * ((z >> 40) as f64 / f64::from(1u32 << 24)) - 1.0;
            (if norm { 1.0 + 0.1 * v } else { 0.1 * v }) as f32
        })
        .collect()
}

/// A tiny judge's committed folder.
pub fn data(name: &str) -> PathBuf {
    repo().join("tests/data/story").join(name)
}

/// Build tiny judge `name` into `dir`: committed config and tokenizer, generated weights.
pub fn build_judge(name: &str, dir: &Path, with_tokenizer_json: bool) {
    std::fs::create_dir_all(dir).unwrap();
    let src = data(name);
    std::fs::copy(src.join("config.json"), dir.join("config.json")).unwrap();
    // Binary judges share the tokenizer of the multiple-choice judge of their architecture.
    let tok = data(&format!("{}_mc", name.split('_').next().unwrap()));
    let mut files = vec!["tokenizer_config.json", "vocab.json", "merges.txt"];
    if with_tokenizer_json {
        files.push("tokenizer.json");
    }
    for f in files {
        if tok.join(f).exists() {
            std::fs::copy(tok.join(f), dir.join(f)).unwrap();
        }
    }
    let tensors = tiny_tensors(&src.join("tensors.json"));
    write_safetensors(&dir.join("model.safetensors"), &tensors).unwrap();
}

/// The tensors a `tensors.json` lists (name and shape), each filled by [`tiny_weight`].
pub fn tiny_tensors(tensors_json: &Path) -> Vec<(String, Vec<usize>, Vec<f32>)> {
    let list: Vec<Value> =
        serde_json::from_str(&std::fs::read_to_string(tensors_json).unwrap()).unwrap();
    list.iter()
        .map(|t| {
            let name = t["name"].as_str().unwrap().to_string();
            let shape: Vec<usize> = t["shape"]
                .as_array()
                .unwrap()
                .iter()
                .map(|d| d.as_u64().unwrap() as usize)
                .collect();
            let data = tiny_weight(&name, shape.iter().product());
            (name, shape, data)
        })
        .collect()
}

/// A `scorekit story` run on the real dev split, without `--out`: a tiny BERT judge and tiny
/// embedder built under `dir`, and generations for the first `questions` dev questions, one per
/// model in `models` (model m gives option (question + m) mod 4), plus a generation of an
/// unknown question. `--bootstrap 200`.
pub fn story_args(dir: &Path, questions: usize, models: &[&str]) -> Vec<String> {
    use crate::common::fixture::{tiny_vocab, write_bert_fixture, BertFixture};
    let judge = dir.join("judge");
    build_judge("bert_mc", &judge, true);
    let embedder = dir.join("embedder");
    write_bert_fixture(&embedder, &BertFixture::tiny(tiny_vocab(), 7)).unwrap();
    let dataset = super::test_data("possible-stories:dev", "dataset/dev.jsonl");
    let dev = std::fs::read_to_string(&dataset).unwrap();
    let mut gens = String::new();
    for (k, l) in dev.lines().take(questions).enumerate() {
        let q: Value = serde_json::from_str(l).unwrap();
        for (m, model) in models.iter().enumerate() {
            let ending = q["options"][(k + m) % 4].as_str().unwrap_or("The end.");
            let row = serde_json::json!({
                "question_id": q["question_id"], "ending": ending, "model": model
            });
            gens.push_str(&format!("{row}\n"));
        }
    }
    gens.push_str("{\"question_id\": \"no-such-question\", \"ending\": \"x\", \"model\": \"a\"}\n");
    let gens = super::write(dir, "gen.jsonl", gens);
    [
        "story",
        "--dataset",
        dataset.to_str().unwrap(),
        "--generations",
        gens.to_str().unwrap(),
        "--judge",
        judge.to_str().unwrap(),
        "--embedder",
        embedder.to_str().unwrap(),
        "--bootstrap",
        "200",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect()
}
