//! `scorekit judge train` and `scorekit judge eval` end to end on the real Possible Stories data
//! with the tiny judges of tests/data/story.

use crate::common;

use common::{read_json, run, stderr, test_data, tiny_judge::build_judge, write};
use std::path::Path;

/// The first `n` lines of a Possible Stories split, as a file under `dir`.
fn lines(dir: &Path, split: &str, skip: usize, n: usize, name: &str) -> String {
    let text = std::fs::read_to_string(test_data(
        &format!("possible-stories:{split}"),
        &format!("dataset/{split}.jsonl"),
    ))
    .unwrap();
    let picked: Vec<&str> = text.lines().skip(skip).take(n).collect();
    write(dir, name, picked.join("\n") + "\n")
        .to_str()
        .unwrap()
        .to_string()
}

fn train_args<'a>(judge: &'a str, train: &'a str, out: &'a str, extra: &[&'a str]) -> Vec<&'a str> {
    let mut v = vec![
        "judge",
        "train",
        "--base",
        judge,
        "--train",
        train,
        "--out",
        out,
        "--device",
        "cpu",
        "--quiet",
        "--batch-questions",
        "4",
        "--grad-accum",
        "2",
        "--lr",
        "1e-3",
    ];
    v.extend_from_slice(extra);
    v
}

#[test]
fn trained_folder_scores_in_the_story_judge_as_in_training() {
    round_trip("bert_mc", "BertForMultipleChoice", false);
}

/// DeBERTa-v3's shape from a base without the head: `pooler.dense` and `classifier` are
/// initialised, trained, saved and read back by the scoring judge.
#[test]
fn trained_deberta_v3_folder_scores_in_the_story_judge_as_in_training() {
    round_trip("deberta_mc", "DebertaV2ForMultipleChoice", true);
}

/// Train tiny judge `name` (without its head tensors when `strip_head`) for 6 steps with dev
/// evaluations; the kept folder, scored by `judge eval`, gives the trainer's dev logits.
fn round_trip(name: &str, class: &str, strip_head: bool) {
    let tmp = tempfile::tempdir().unwrap();
    let judge = tmp.path().join("base");
    build_judge(name, &judge, true);
    if strip_head {
        let file = judge.join("model.safetensors");
        let mut tensors = candle_core::safetensors::load(&file, &candle_core::Device::Cpu).unwrap();
        let before = tensors.len();
        tensors.retain(|n, _| n.starts_with("deberta."));
        assert_eq!(before - tensors.len(), 4, "the head's four tensors");
        candle_core::safetensors::save(&tensors, &file).unwrap();
    }
    let train = lines(tmp.path(), "dev", 0, 24, "train.jsonl");
    let dev = lines(tmp.path(), "dev", 24, 12, "dev.jsonl");
    let out = tmp.path().join("out");
    let (j, o) = (judge.to_str().unwrap(), out.to_str().unwrap());
    let r = run(&train_args(
        j,
        &train,
        o,
        &[
            "--dev",
            &dev,
            "--epochs",
            "2",
            "--eval-every",
            "2",
            "--no-shuffle",
            "--dropout",
            "0",
        ],
    ));
    assert!(r.status.success(), "{}", stderr(&r));
    for f in [
        "config.json",
        "model.safetensors",
        "tokenizer.json",
        "training.json",
        "report.md",
        "curves.svg",
    ] {
        assert!(out.join(f).exists(), "{f}");
    }
    assert!(
        !out.join("checkpoint").exists(),
        "checkpoint removed after a finished run"
    );
    let config = read_json(&out.join("config.json"));
    assert_eq!(config["architectures"][0], class);
    let t = read_json(&out.join("training.json"));
    let new_head = t["base"]["new_head"].as_array().map_or(0, Vec::len);
    assert_eq!(new_head, if strip_head { 4 } else { 0 }, "{}", t["base"]);
    // 24 questions, 4 a micro-batch, 2 micro-batches a step: 3 steps an epoch, 2 epochs.
    assert_eq!(t["total_steps"], 6);
    assert_eq!(t["steps"].as_array().unwrap().len(), 6);
    assert_eq!(t["train_files"][0]["possible_stories"], 24);
    assert_eq!(t["train_files"][0]["sha256"].as_str().unwrap().len(), 64);
    // Evaluations at steps 2, 3 (epoch end), 4, 6 (step and epoch end once).
    let evals: Vec<u64> = t["evals"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["step"].as_u64().unwrap())
        .collect();
    assert_eq!(evals, vec![2, 3, 4, 6]);
    let kept_logits: Vec<Vec<f64>> =
        serde_json::from_value(t["kept"]["dev_logits"].clone()).unwrap();
    assert_eq!(kept_logits.len(), 12);
    // The kept folder through the story judge (scorekit's scoring engine): the trainer's logits.
    let eval_out = tmp.path().join("eval");
    let r = run(&[
        "judge",
        "eval",
        "--judge",
        o,
        "--dataset",
        &dev,
        "--out",
        eval_out.to_str().unwrap(),
        "--device",
        "cpu",
        "--quiet",
        "--bootstrap",
        "100",
    ]);
    assert!(r.status.success(), "{}", stderr(&r));
    let items = std::fs::read_to_string(eval_out.join("items.jsonl")).unwrap();
    let mut worst = 0f64;
    for (line, want) in items.lines().zip(&kept_logits) {
        let it: serde_json::Value = serde_json::from_str(line).unwrap();
        let got: Vec<f64> = serde_json::from_value(it["scores"].clone()).unwrap();
        for (g, w) in got.iter().zip(want) {
            worst = worst.max((g - w).abs());
            assert!((g - w).abs() < 1e-4 * w.abs().max(1.0), "{g} vs {w}");
        }
    }
    let m = read_json(&eval_out.join("metrics.json"));
    let kept_acc = t["kept"]["dev_accuracy"].as_f64().unwrap();
    assert!((m["metrics"]["accuracy"]["value"].as_f64().unwrap() - kept_acc).abs() < 1e-12);
    eprintln!("{name} round trip: worst |logit diff| {worst:.2e}, kept dev accuracy {kept_acc}");
}

#[test]
fn resume_ends_with_the_weights_of_an_uninterrupted_run() {
    resume_in_precision("f32", "bf16-mixed");
}

/// bf16-mixed keeps f32 masters and AdamW moments in its checkpoints: the same promise.
#[test]
fn bf16_mixed_resume_ends_with_the_weights_of_an_uninterrupted_run() {
    resume_in_precision("bf16-mixed", "f32");
}

/// A run in `precision` stopped after 4 steps and resumed ends as the uninterrupted one; resuming
/// it in `other` precision is refused; training.json records the precision.
fn resume_in_precision(precision: &str, other_precision: &str) {
    let tmp = tempfile::tempdir().unwrap();
    let judge = tmp.path().join("base");
    build_judge("roberta_mc", &judge, true);
    let train = lines(tmp.path(), "dev", 0, 20, "train.jsonl");
    let j = judge.to_str().unwrap();
    // Seeded shuffle and dropout on: the resumed run must restore the generator and position.
    let extra = [
        "--epochs",
        "2",
        "--dropout",
        "0.1",
        "--eval-every",
        "1000",
        "--precision",
        precision,
    ];
    let whole = tmp.path().join("whole");
    let r = run(&train_args(j, &train, whole.to_str().unwrap(), &extra));
    assert!(r.status.success(), "{}", stderr(&r));
    let parts = tmp.path().join("parts");
    let p = parts.to_str().unwrap();
    let mut first = extra.to_vec();
    first.extend(["--stop-after", "4"]);
    let r = run(&train_args(j, &train, p, &first));
    assert!(r.status.success(), "{}", stderr(&r));
    assert!(parts.join("checkpoint/state.json").exists());
    assert!(!parts.join("training.json").exists());
    // Starting over without --resume or --force is refused.
    let r = run(&train_args(j, &train, p, &extra));
    assert_eq!(r.status.code(), Some(2), "{}", stderr(&r));
    // Resuming with another recipe is refused.
    let mut other = extra.to_vec();
    other.extend(["--resume", "--seed", "7"]);
    let r = run(&train_args(j, &train, p, &other));
    assert_eq!(r.status.code(), Some(2), "{}", stderr(&r));
    assert!(stderr(&r).contains("another recipe"), "{}", stderr(&r));
    let mut other = extra[..6].to_vec();
    other.extend(["--resume", "--precision", other_precision]);
    let r = run(&train_args(j, &train, p, &other));
    assert_eq!(r.status.code(), Some(2), "{}", stderr(&r));
    assert!(stderr(&r).contains("another recipe"), "{}", stderr(&r));
    let mut again = extra.to_vec();
    again.push("--resume");
    let r = run(&train_args(j, &train, p, &again));
    assert!(r.status.success(), "{}", stderr(&r));
    assert_same_training(&whole, &parts, 6);
    let training = read_json(&whole.join("training.json"));
    assert_eq!(training["precision"], precision);
    assert_eq!(training["recipe"]["precision"], precision);
}

/// A real kill -9 (not `--stop-after`): the child is killed once a checkpoint of step 3 or later
/// exists, wherever it is then (mid-step, mid-checkpoint); `--resume` must still end with the
/// uninterrupted run's weights, byte for byte.
#[test]
fn resume_after_kill_9_ends_with_the_weights_of_an_uninterrupted_run() {
    let tmp = tempfile::tempdir().unwrap();
    let judge = tmp.path().join("base");
    build_judge("bert_mc", &judge, true);
    let train = lines(tmp.path(), "dev", 0, 20, "train.jsonl");
    let j = judge.to_str().unwrap();
    // 3 steps an epoch, 30 epochs: long enough that the kill lands mid-run; a checkpoint
    // every 2 steps.
    let extra = ["--epochs", "30", "--dropout", "0.1", "--eval-every", "2"];
    let whole = tmp.path().join("whole");
    let r = run(&train_args(j, &train, whole.to_str().unwrap(), &extra));
    assert!(r.status.success(), "{}", stderr(&r));
    let parts = tmp.path().join("parts");
    let p = parts.to_str().unwrap();
    let mut child = common::scorekit()
        .args(train_args(j, &train, p, &extra))
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let state = parts.join("checkpoint/state.json");
    loop {
        let step = std::fs::read_to_string(&state)
            .ok()
            .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok())
            .and_then(|v| v["pos"]["step"].as_u64());
        if step.is_some_and(|s| s >= 3) {
            break;
        }
        assert!(
            child.try_wait().unwrap().is_none(),
            "the run ended before it could be killed"
        );
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    child.kill().unwrap(); // SIGKILL
    let status = child.wait().unwrap();
    assert!(!status.success(), "killed, not finished");
    assert!(
        !parts.join("training.json").exists(),
        "killed before the end"
    );
    let mut again = extra.to_vec();
    again.push("--resume");
    let r = run(&train_args(j, &train, p, &again));
    assert!(r.status.success(), "{}", stderr(&r));
    assert_same_training(&whole, &parts, 90);
    for leftover in ["checkpoint", "checkpoint.old", "checkpoint.partial"] {
        assert!(!parts.join(leftover).exists(), "{leftover} left behind");
    }
}

#[test]
fn bad_training_lines_exit_2_naming_file_line_field_and_train_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let judge = tmp.path().join("base");
    build_judge("bert_mc", &judge, true);
    let good = lines(tmp.path(), "dev", 0, 3, "good.jsonl");
    let mut text = std::fs::read_to_string(&good).unwrap();
    text.push_str(
        r#"{"article": "A", "question": "Q", "options": ["a", "b", "c", "d"], "answer": "F"}"#,
    );
    text.push('\n');
    let bad = write(tmp.path(), "bad.jsonl", text);
    let out = tmp.path().join("out");
    let r = run(&train_args(
        judge.to_str().unwrap(),
        &good,
        out.to_str().unwrap(),
        &["--train", bad.to_str().unwrap()],
    ));
    assert_eq!(r.status.code(), Some(2), "{}", stderr(&r));
    let e = stderr(&r);
    assert!(
        e.contains("bad.jsonl") && e.contains('4') && e.contains("answer"),
        "{e}"
    );
    assert!(!out.join("model.safetensors").exists() && !out.join("training.json").exists());
}

#[test]
fn eval_reports_accuracy_and_consistency_on_the_test_split() {
    let tmp = tempfile::tempdir().unwrap();
    let judge = tmp.path().join("judge");
    build_judge("bert_mc", &judge, true);
    let out = tmp.path().join("out");
    let test = test_data("possible-stories:test", "dataset/test.jsonl");
    let r = run(&[
        "judge",
        "eval",
        "--judge",
        judge.to_str().unwrap(),
        "--dataset",
        test.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
        "--device",
        "cpu",
        "--quiet",
        "--bootstrap",
        "200",
    ]);
    assert!(r.status.success(), "{}", stderr(&r));
    let m = read_json(&out.join("metrics.json"));
    assert_eq!(m["suite"], "judge-eval");
    assert_eq!(m["metrics"]["questions"], 671);
    let items = std::fs::read_to_string(out.join("items.jsonl")).unwrap();
    let rows: Vec<serde_json::Value> = items
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(rows.len(), 671);
    let right = rows.iter().filter(|r| r["correct"] == true).count();
    let acc = &m["metrics"]["accuracy"];
    assert!((acc["value"].as_f64().unwrap() - right as f64 / 671.0).abs() < 1e-12);
    assert!(acc["ci_low"].as_f64().unwrap() <= acc["value"].as_f64().unwrap());
    // Consistency recomputed from the picks: passages with every question right.
    let mut passages: std::collections::BTreeMap<String, bool> = Default::default();
    for r in &rows {
        *passages
            .entry(r["passage_id"].as_str().unwrap().to_string())
            .or_insert(true) &= r["correct"] == true;
    }
    let cons = passages.values().filter(|&&c| c).count() as f64 / passages.len() as f64;
    assert_eq!(
        m["metrics"]["passages"].as_u64().unwrap() as usize,
        passages.len()
    );
    assert!((m["metrics"]["consistency"]["value"].as_f64().unwrap() - cons).abs() < 1e-12);
    assert!(cons <= acc["value"].as_f64().unwrap());
    assert!(std::fs::read_to_string(out.join("report.md"))
        .unwrap()
        .contains("consistency"));
}

/// `judge eval --dtype bf16` on scorekit's bf16 encoder (AMX tiles, else AVX512-BF16) against
/// f32, on the 671 test questions: at most a tenth of the picks differ, and every pick that
/// differs is a near-tie of the f32 scores (the bf16 pick's f32 score within 2⁻⁸ of the largest
/// |score| of the best: bf16's rounding of one value). The tiny judge's four scores lie within
/// ~0.65% of each other, so a wrong path (random picks) fails both. Counted and printed; the
/// engine is named in metrics.json. Where neither instruction set exists the bf16 run is
/// candle's (bf16 throughout, a coarser reading): nothing to hold it to, so it is not checked.
#[test]
fn bf16_judge_picks_differ_from_f32_only_on_near_ties() {
    let tmp = tempfile::tempdir().unwrap();
    let judge = tmp.path().join("judge");
    build_judge("bert_mc", &judge, true);
    let test = test_data("possible-stories:test", "dataset/test.jsonl");
    let eval = |dtype: &str| -> (serde_json::Value, Vec<serde_json::Value>) {
        let out = tmp.path().join(dtype);
        let r = run(&[
            "judge",
            "eval",
            "--judge",
            judge.to_str().unwrap(),
            "--dataset",
            test.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
            "--device",
            "cpu",
            "--dtype",
            dtype,
            "--quiet",
            "--bootstrap",
            "10",
        ]);
        assert!(r.status.success(), "{dtype}: {}", stderr(&r));
        let items = std::fs::read_to_string(out.join("items.jsonl")).unwrap();
        let rows = items
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        (read_json(&out.join("metrics.json")), rows)
    };
    let (_, f32s) = eval("f32");
    let (m, bf16s) = eval("bf16");
    let engine = m["settings"]["engine"].as_str().unwrap();
    if scorekit::runtime::kernels::amx_available() {
        assert!(engine.contains("bf16 AMX"), "{m}");
    }
    if !engine.starts_with("scorekit encoder, bf16") {
        return;
    }
    let (mut differ, mut worst) = (0, 0f64);
    for (a, b) in f32s.iter().zip(&bf16s) {
        if a["pick"] == b["pick"] {
            continue;
        }
        differ += 1;
        let s: Vec<f64> = a["scores"]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_f64().unwrap())
            .collect();
        let hi = s.iter().cloned().fold(f64::MIN, f64::max);
        let scale = s.iter().map(|x| x.abs()).fold(0.0, f64::max).max(1e-30);
        let gap = (hi - s[b["pick"].as_u64().unwrap() as usize]) / scale;
        worst = worst.max(gap);
        assert!(
            gap <= 2f64.powi(-8),
            "question {}: not a near-tie ({gap}): {s:?}",
            a["question_id"]
        );
    }
    assert!(
        differ * 10 <= f32s.len(),
        "{differ} of {} picks differ",
        f32s.len()
    );
    eprintln!("bf16 vs f32: {differ} of {} picks differ; the largest f32 gap of a changed pick is {worst:.2e} of the largest |score|", f32s.len());
}

#[test]
fn a_base_whose_weights_do_not_fit_its_config_is_refused_before_training() {
    let tmp = tempfile::tempdir().unwrap();
    let judge = tmp.path().join("base");
    build_judge("bert_mc", &judge, true);
    let cfg_path = judge.join("config.json");
    let mut cfg = read_json(&cfg_path);
    cfg["num_hidden_layers"] = 1.into();
    std::fs::write(&cfg_path, cfg.to_string()).unwrap();
    let train = lines(tmp.path(), "dev", 0, 4, "train.jsonl");
    let out = tmp.path().join("out");
    let r = run(&train_args(
        judge.to_str().unwrap(),
        &train,
        out.to_str().unwrap(),
        &[],
    ));
    assert_eq!(r.status.code(), Some(2), "{}", stderr(&r));
    let e = stderr(&r);
    assert!(
        e.contains("model.safetensors") && e.contains("num_hidden_layers"),
        "{e}"
    );
    assert!(!out.join("training.json").exists() && !out.join("model.safetensors").exists());
}

/// The resumed run in `parts` ended with the uninterrupted run's weights (byte for byte) and
/// per-step losses, after `steps` optimiser steps.
fn assert_same_training(whole: &Path, parts: &Path, steps: usize) {
    let a = std::fs::read(whole.join("model.safetensors")).unwrap();
    let b = std::fs::read(parts.join("model.safetensors")).unwrap();
    assert!(
        a == b,
        "resumed weights differ from the uninterrupted run's"
    );
    let (ta, tb) = (
        read_json(&whole.join("training.json")),
        read_json(&parts.join("training.json")),
    );
    assert_eq!(ta["steps"], tb["steps"]);
    assert_eq!(ta["steps"].as_array().unwrap().len(), steps);
}
