//! Helpers shared by the integration tests: run the binary, find the benchmark data.
#![allow(dead_code)]

pub mod fixture;
pub mod http;
pub mod tiny_judge;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The scorekit binary built for this test run. Dataset names (`possible-stories:endings`, which
/// the judge's calibration reads) resolve in the test data cache, and finished calibrations go
/// to a cache of the test build's, never the user's; a test may set either variable itself.
pub fn scorekit() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_scorekit"));
    if let Some(data) = std::env::var_os(scorekit::data::testdata::ENV) {
        c.env("SCOREKIT_DATA", repo().join(data));
    }
    c.env(
        "SCOREKIT_CALIBRATION_CACHE",
        Path::new(env!("CARGO_TARGET_TMPDIR")).join("calibration-cache"),
    );
    c
}

/// Run scorekit with arguments and return its output.
pub fn run(args: &[&str]) -> Output {
    scorekit().args(args).output().expect("scorekit runs")
}

/// stderr as text.
pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// stdout as text.
pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// The repository root.
pub fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Upstream file or folder `rel` of the dataset part `spec` (`muse:queries`) in the test data
/// cache that scripts/test-data.sh fills ($SCOREKIT_TEST_DATA, data/test-parts.txt). Panics with
/// the `scorekit data pull` that fetches the part when it is not all there.
pub fn test_data(spec: &str, rel: &str) -> PathBuf {
    scorekit::data::testdata::file(spec, rel)
}

/// The Possible Stories dev split's questions, one JSON value a line.
pub fn dev_questions() -> Vec<serde_json::Value> {
    std::fs::read_to_string(test_data("possible-stories:dev", "dataset/dev.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// Write a file under `dir` and return its path.
pub fn write(dir: &Path, name: &str, contents: impl AsRef<[u8]>) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, contents).expect("write fixture");
    p
}

/// Parse a JSON file.
pub fn read_json(p: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(p).expect("read json")).expect("valid json")
}

/// `scorekit story --skip-embedder` on the dev split with `judge` and `extra` flags.
pub fn judge_only(judge: &Path, gens: &Path, out: &Path, extra: &[&str]) -> std::process::Output {
    let dataset = test_data("possible-stories:dev", "dataset/dev.jsonl");
    let mut args = vec![
        "story",
        "--dataset",
        dataset.to_str().unwrap(),
        "--generations",
        gens.to_str().unwrap(),
        "--judge",
        judge.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
        "--skip-embedder",
        "--quiet",
    ];
    args.extend_from_slice(extra);
    run(&args)
}

/// A sharded copy of the flan letter-judge fixture (tests/data/t5/flan) in `dir`: its config and
/// tokenizer files, its tensors split in two safetensors shards, and the
/// model.safetensors.index.json naming them, as the Hub lays out large checkpoints. Returns the
/// file names written.
pub fn sharded_flan(dir: &Path) -> Vec<String> {
    let flan = repo().join("tests/data/t5/flan");
    std::fs::create_dir_all(dir).unwrap();
    let mut written = Vec::new();
    for f in ["config.json", "tokenizer.json", "tokenizer_config.json"] {
        std::fs::copy(flan.join(f), dir.join(f)).unwrap();
        written.push(f.to_string());
    }
    let tensors =
        candle_core::safetensors::load(flan.join("model.safetensors"), &candle_core::Device::Cpu)
            .unwrap();
    let mut names: Vec<&String> = tensors.keys().collect();
    names.sort();
    let (a, b) = names.split_at(names.len() / 2);
    let mut map = serde_json::Map::new();
    for (part, file) in [
        (a, "model-00001-of-00002.safetensors"),
        (b, "model-00002-of-00002.safetensors"),
    ] {
        let shard: std::collections::HashMap<String, candle_core::Tensor> = part
            .iter()
            .map(|n| (n.to_string(), tensors[*n].clone()))
            .collect();
        candle_core::safetensors::save(&shard, dir.join(file)).unwrap();
        written.push(file.to_string());
        for n in part {
            map.insert(n.to_string(), serde_json::json!(file));
        }
    }
    let index = serde_json::json!({"metadata": {}, "weight_map": map}).to_string();
    write(dir, "model.safetensors.index.json", index);
    written.push("model.safetensors.index.json".into());
    written
}
