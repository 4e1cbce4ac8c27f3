//! Helpers shared by the integration tests: run the binary, find the benchmark data.
#![allow(dead_code)]

pub mod fixture;
pub mod http;
pub mod tiny_judge;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The scorekit binary built for this test run.
pub fn scorekit() -> Command {
    Command::new(env!("CARGO_BIN_EXE_scorekit"))
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
