//! `scorekit grasp --semantic` and `scorekit muse --embedder` with real all-MiniLM-L6-v2
//! weights (`fixtures-cache/`, from scripts/setup-test-fixtures.sh): hand-written cases that pin
//! the behaviour and the thresholds (docs/semantic.md), and the commands end to end, sharded
//! and merged.

use crate::common;

use common::*;
use scorekit::runtime::{self, Embedder, ResolveOptions};
use scorekit::suites::grasp::rules::Verdict;
use scorekit::suites::grasp::semantic as gs;
use scorekit::suites::grasp::{self, Row, TestKind};
use scorekit::suites::muse::semantic as ms;
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

fn minilm() -> PathBuf {
    let p = repo().join("fixtures-cache/all-MiniLM-L6-v2");
    assert!(
        p.is_dir(),
        "{} is missing: run scripts/setup-test-fixtures.sh",
        p.display()
    );
    p
}

fn load() -> Embedder {
    let opts = ResolveOptions {
        offline: true,
        quiet: true,
    };
    let model = runtime::resolve(
        minilm().to_str().unwrap(),
        scorekit::runtime::EMBEDDER_FILES,
        &opts,
    )
    .unwrap();
    Embedder::load(
        &model,
        &candle_core::Device::Cpu,
        candle_core::DType::F32,
        None,
        &Default::default(),
    )
    .unwrap()
}

fn embed(e: &Embedder) -> impl FnMut(&[String]) -> scorekit::Result<Vec<Vec<f32>>> + '_ {
    move |t: &[String]| e.embed(t, 8192, &indicatif::ProgressBar::hidden())
}

/// (scene, gold, answer): the GRASP cases, scored with the shipped thresholds.
fn grasp_items(e: &Embedder, cases: &[(&str, &str, &str)]) -> Vec<grasp::Item> {
    let rows: Vec<Row> = cases
        .iter()
        .enumerate()
        .map(|(k, (scene, gt, answer))| Row {
            row: k + 1,
            scene: scene.to_string(),
            gt: gt.to_string(),
            response: answer.to_string(),
            video_file: None,
        })
        .collect();
    let mut items = grasp::score(TestKind::Level1Open, &rows).unwrap();
    let answer_of = |row: usize| rows[row - 1].response.clone();
    gs::read_answers(
        &mut items,
        &answer_of,
        gs::DEFAULT_THRESHOLDS,
        &mut embed(e),
    )
    .unwrap();
    for i in &items {
        if let Some(s) = &i.semantic {
            eprintln!(
                "{:<20} {:<9} {:<45} best {:<9} {:.4}  runner-up {:<9} {:.4}  margin {:.4} -> {:?}",
                i.scene,
                i.gt,
                format!("{:?}", s.answer),
                s.best,
                s.similarity,
                s.runner_up,
                s.runner_up_similarity,
                s.similarity - s.runner_up_similarity,
                s.verdict
            );
        }
    }
    items
}

#[test]
fn grasp_answers_that_name_no_label_are_read_by_similarity() {
    let e = load();
    let cases = [
        ("Color", "red", "reddish"),
        ("Color", "red", "It is a reddish ball."),
        ("Color", "green", "The object is reddish."),
        ("Shape", "ball", "spherical"),
        ("Shape", "ball", "The object is spherical."),
        ("Shape", "cube", "spherical"),
        ("Shape", "cube", "cubic"),
        ("Direction", "backward", "It moves towards the camera."),
        ("Direction", "forward", "It rolls away from the camera."),
        ("Direction", "left", "leftwards"),
        // Nothing to read: below the minimum similarity.
        ("Color", "red", "I cannot tell."),
        ("Shape", "ball", "It is an object."),
        ("Direction", "forward", "It is not moving."),
        // Strictly valid, naming several labels, or empty: never re-read.
        ("Color", "blue", "The object is blue."),
        ("Shape", "ball", "a sphere or a cube"),
        ("Color", "red", ""),
    ];
    let items = grasp_items(&e, &cases);
    let got: Vec<(Verdict, Option<&str>)> = items
        .iter()
        .map(|i| {
            (
                gs::verdict_of(i),
                i.semantic.as_ref().and_then(|s| s.label.as_deref()),
            )
        })
        .collect();
    use Verdict::*;
    let want: Vec<(Verdict, Option<&str>)> = vec![
        (Correct, Some("red")),
        (Correct, Some("red")),
        (False, Some("red")),
        (Correct, Some("ball")),
        (Correct, Some("ball")),
        (False, Some("ball")),
        (Correct, Some("cube")),
        (Correct, Some("backward")),
        (Correct, Some("forward")),
        (Correct, Some("left")),
        (Invalid, None),
        (Invalid, None),
        (Invalid, None),
        (Correct, None),
        (Invalid, None),
        (Invalid, None),
    ];
    for (k, (g, w)) in got.iter().zip(&want).enumerate() {
        assert_eq!(g, w, "case {:?}", cases[k]);
    }
    for i in &items[10..13] {
        let s = i.semantic.as_ref().unwrap();
        assert!(
            s.similarity < gs::DEFAULT_THRESHOLDS.min_similarity,
            "{s:?}"
        );
    }
    // Strict verdicts are untouched; only eligible, non-empty answers got a reading.
    assert!(items.iter().take(13).all(|i| i.verdict == Invalid));
    assert!(items[13..].iter().all(|i| i.semantic.is_none()));
    assert_eq!(items[13].verdict, Correct);
    // The summary: strict accuracy 1/16, semantic 9/16, the 10 re-read labels listed as changed.
    let s = gs::summarize(&items, 0, 0);
    assert_eq!((s.all.correct, s.all.wrong, s.all.invalid), (9, 2, 5));
    assert_eq!(s.all.semantic_accuracy.value, 9.0 / 16.0);
    assert_eq!(s.changed_rows, (1..=10).collect::<Vec<_>>());
    assert_eq!(s.all.eligible, 13);
}

#[test]
fn grasp_a_margin_too_close_stays_invalid() {
    let e = load();
    // "purple" is close to blue and to black; "right-hand side" is as close to left as to
    // right (the embedder barely tells the two apart). Both are above the minimum similarity
    // and below the margin, so they stay invalid.
    let items = grasp_items(
        &e,
        &[
            ("Color", "red", "purple"),
            ("RelationalPosition", "right", "On the right-hand side."),
        ],
    );
    for i in &items {
        let s = i.semantic.as_ref().unwrap();
        assert!(
            s.similarity >= gs::DEFAULT_THRESHOLDS.min_similarity,
            "{s:?}"
        );
        assert!(
            s.similarity - s.runner_up_similarity < gs::DEFAULT_THRESHOLDS.margin,
            "{s:?}"
        );
        assert_eq!((s.label.as_deref(), s.verdict), (None, Verdict::Invalid));
    }
}

/// (name, expected task or None): the MuSE cases.
fn muse_matches(e: &Embedder, names: &[&str]) -> Vec<ms::NameMatch> {
    let names: Vec<String> = names.iter().map(|n| n.to_string()).collect();
    let (m, _) = ms::match_names(&names, ms::DEFAULT_THRESHOLDS, &mut embed(e)).unwrap();
    for x in &m {
        eprintln!(
            "{:<28} best {:<34} {:.4}  runner-up {:<34} {:.4} margin {:.4} -> {:?}",
            x.name,
            x.best,
            x.similarity,
            x.runner_up,
            x.runner_up_similarity,
            x.similarity - x.runner_up_similarity,
            x.task
        );
    }
    m
}

#[test]
fn muse_invented_task_names_match_by_similarity() {
    let e = load();
    let cases: [(&str, Option<&str>); 14] = [
        ("speech-to-text", Some("automatic-speech-recognition")),
        ("image-generation", Some("text-to-image")),
        ("ImageGeneration", Some("text-to-image")),
        ("transcribe_audio", Some("automatic-speech-recognition")),
        ("language-translation", Some("translation-xx-to-yy")),
        ("image-to-caption", Some("image-captioning")),
        ("speech-synthesis", Some("text-to-audio")),
        // Too close between two tasks: stays unknown.
        ("text-summarization", None),
        ("image-to-image", None),
        // Below the minimum similarity: stays unknown (sentiment-analysis on purpose, as in
        // the alias table: text-classification covers more).
        ("sentiment-analysis", None),
        ("weather-forecast", None),
        ("send-email", None),
        ("text-to-video", None),
        ("image-processing", None),
    ];
    let names: Vec<&str> = cases.iter().map(|c| c.0).collect();
    let m = muse_matches(&e, &names);
    for (x, (name, want)) in m.iter().zip(&cases) {
        assert_eq!(x.task.as_deref(), *want, "{name}: {x:?}");
    }
}

// ---- end to end -------------------------------------------------------------------------

const GRASP_CSV: &str = "scene,prompt,video_file,gt,response\r
Color,What color?,v/ColorRed/000.mp4,red,reddish\r
Color,What color?,v/ColorRed/001.mp4,red,The object is red.\r
Color,What color?,v/ColorBlue/000.mp4,blue,I cannot tell.\r
Color,What color?,v/ColorGreen/000.mp4,green,The object is reddish.\r
Shape,What shape?,v/ShapeBall/000.mp4,ball,spherical\r
Shape,What shape?,v/ShapeCube/000.mp4,cube,\"a ball, or a cube\"\r
Direction,Which direction?,v/DirectionBackward/000.mp4,backward,It moves towards the camera.\r
Direction,Which direction?,v/DirectionLeft/000.mp4,left,left\r
";

fn grasp_cli(dir: &Path, out: &str, extra: &[&str]) -> std::process::Output {
    let csv = write(dir, "results.csv", GRASP_CSV);
    let model = minilm();
    let mut args = vec![
        "grasp",
        "--responses",
        csv.to_str().unwrap(),
        "--test",
        "level1-open",
        "--embedder",
        model.to_str().unwrap(),
        "--offline",
        "--quiet",
        "--bootstrap",
        "200",
    ];
    let out = dir.join(out);
    args.extend(["--out", out.to_str().unwrap()]);
    args.extend(extra);
    run(&args)
}

fn items_of(dir: &Path) -> Vec<Value> {
    std::fs::read_to_string(dir.join("items.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[test]
fn grasp_semantic_end_to_end_beside_strict_and_merged() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    let o = grasp_cli(d, "strict", &[]);
    assert!(o.status.success(), "{}", stderr(&o));
    let o = grasp_cli(d, "sem", &["--semantic"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stdout(&o).contains("Semantic accuracy"), "{}", stdout(&o));
    let strict = read_json(&d.join("strict/metrics.json"));
    let sem = read_json(&d.join("sem/metrics.json"));
    // The paper's strict accuracy is the same number with or without --semantic.
    assert_eq!(strict["metrics"]["accuracy"], sem["metrics"]["accuracy"]);
    assert_eq!(
        strict["groups"]["Color"]["accuracy"],
        sem["groups"]["Color"]["accuracy"]
    );
    assert_eq!(sem["metrics"]["accuracy"]["value"], 2.0 / 8.0);
    // reddish -> red (correct), reddish for green (false), spherical -> ball, towards the
    // camera -> backward; "I cannot tell." stays invalid; "a ball, or a cube" names both.
    let m = &sem["metrics"]["semantic"];
    assert_eq!(sem["metrics"]["semantic_accuracy"]["value"], 5.0 / 8.0);
    assert_eq!(m["changed_rows"], serde_json::json!([1, 4, 5, 7]));
    assert_eq!(
        (
            m["correct"].as_u64(),
            m["false"].as_u64(),
            m["invalid"].as_u64()
        ),
        (Some(5), Some(1), Some(2))
    );
    assert_eq!(m["eligible"], 5);
    assert!(m["note"]
        .as_str()
        .unwrap()
        .contains("NOT the GRASP paper's metric"));
    assert_eq!(sem["groups"]["Color"]["semantic_accuracy"]["value"], 0.5);
    assert_eq!(sem["settings"]["semantic"], true);
    assert_eq!(sem["settings"]["semantic_thresholds"]["margin"], 0.08);
    assert_eq!(sem["models"].as_array().unwrap().len(), 1);
    assert!(strict["models"].as_array().unwrap().is_empty());
    let items = items_of(&d.join("sem"));
    assert_eq!(items[0]["verdict"], "invalid");
    assert_eq!(items[0]["semantic"]["label"], "red");
    assert_eq!(items[0]["semantic"]["verdict"], "correct");
    assert_eq!(items[2]["semantic"]["verdict"], "invalid");
    assert!(items[1].get("semantic").is_none() && items[5].get("semantic").is_none());
    let report = std::fs::read_to_string(d.join("sem/report.md")).unwrap();
    assert!(report.contains("## Semantic accuracy"), "{report}");
    assert!(
        report.contains("| 1 ") && report.contains("reddish"),
        "{report}"
    );
    let desc = read_json(&d.join("sem/semantic_descriptions.json"));
    assert_eq!(desc["descriptions"][0]["scene"], "Color");
    assert_eq!(
        desc["descriptions"][0]["embedding"]
            .as_array()
            .unwrap()
            .len(),
        384
    );

    // Two shards, merged: the same metrics as the single run.
    for k in 0..2 {
        let shard = format!("{k}/2");
        let o = grasp_cli(d, &format!("part{k}"), &["--semantic", "--shard", &shard]);
        assert!(o.status.success(), "{}", stderr(&o));
    }
    let o = run(&[
        "merge",
        "--parts",
        d.join("part0").to_str().unwrap(),
        d.join("part1").to_str().unwrap(),
        "--out",
        d.join("merged").to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let merged = read_json(&d.join("merged/metrics.json"));
    assert_eq!(merged["metrics"], sem["metrics"]);
    assert_eq!(merged["groups"], sem["groups"]);
    assert_eq!(items_of(&d.join("merged")), items);
}

#[test]
fn grasp_semantic_is_for_open_ended_tests_only() {
    let tmp = tempfile::tempdir().unwrap();
    let csv = write(
        tmp.path(),
        "results.csv",
        "scene,gt,response\nP_Gravity,yes,Certainly\n",
    );
    let out = tmp.path().join("x");
    let o = run(&[
        "grasp",
        "--responses",
        csv.to_str().unwrap(),
        "--test",
        "level2",
        "--semantic",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("--semantic"), "{}", stderr(&o));
    assert!(!out.join("metrics.json").exists());
}

fn muse_cli(dir: &Path, plans: &str, out: &str, extra: &[&str]) -> std::process::Output {
    let p = write(dir, "plans.jsonl", plans);
    let model = minilm();
    let queries = test_data("muse:queries", "MuSE_Benchmark/queries.json");
    let out = dir.join(out);
    let mut args = vec![
        "muse",
        "--queries",
        queries.to_str().unwrap(),
        "--plans",
        p.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
        "--quiet",
        "--bootstrap",
        "100",
    ];
    args.extend(extra);
    let _ = model;
    run(&args)
}

const MUSE_PLANS: &str = concat!(
    r#"{"idx": 33, "tasks": [{"id": "a", "task": "speech-to-text", "dep": []}, {"id": "b", "task": "ImageGeneration", "dep": ["a"]}]}"#,
    "\n",
    r#"{"idx": 0, "tasks": [{"id": "a", "task": "weather-forecast", "dep": []}]}"#,
    "\n",
);

#[test]
fn muse_embedder_end_to_end_lists_mappings_and_merges() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    let model = minilm();
    let emb = ["--embedder", model.to_str().unwrap(), "--offline"];
    let o = muse_cli(d, MUSE_PLANS, "names", &[]);
    assert!(o.status.success(), "{}", stderr(&o));
    let o = muse_cli(d, MUSE_PLANS, "emb", &emb);
    assert!(o.status.success(), "{}", stderr(&o));
    let by_idx = |dir: &str| -> BTreeMap<i64, Value> {
        items_of(&d.join(dir))
            .into_iter()
            .map(|v| (v["idx"].as_i64().unwrap(), v))
            .collect()
    };
    let names = by_idx("names");
    let emb_items = by_idx("emb");
    // Without the embedder both names are unknown; with it idx 33 is a perfect plan.
    assert_eq!(names[&33]["ts"], false);
    assert_eq!(names[&33]["unknown_names"].as_array().unwrap().len(), 2);
    assert_eq!(emb_items[&33]["ts"], true);
    assert_eq!(emb_items[&33]["fot"], true);
    assert_eq!(emb_items[&33]["unknown_names"], serde_json::json!([]));
    let nm = emb_items[&33]["name_matches"].as_array().unwrap();
    assert_eq!(nm[0]["name"], "speech-to-text");
    assert_eq!(nm[0]["task"], "automatic-speech-recognition");
    assert_eq!(nm[1]["name"], "imagegeneration");
    assert_eq!(nm[1]["text"], "image generation");
    assert_eq!(nm[1]["task"], "text-to-image");
    // An unrelated name stays unknown and counts as extra, as without the embedder.
    assert_eq!(emb_items[&0]["ts"], false);
    assert_eq!(
        emb_items[&0]["unknown_names"],
        serde_json::json!(["weather-forecast"])
    );
    assert_eq!(emb_items[&0]["name_matches"][0]["task"], Value::Null);
    let m = read_json(&d.join("emb/metrics.json"));
    let em = &m["metrics"]["embedding_matches"];
    assert_eq!(em["matched"].as_array().unwrap().len(), 2);
    assert_eq!(em["matched"][0]["queries"], serde_json::json!([33]));
    assert_eq!(em["unmatched"][0]["name"], "weather-forecast");
    assert_eq!(m["settings"]["embedder_thresholds"]["min_similarity"], 0.72);
    let report = std::fs::read_to_string(d.join("emb/report.md")).unwrap();
    assert!(
        report.contains("Task names matched by embeddings"),
        "{report}"
    );
    assert!(
        report.contains("speech-to-text") && report.contains("below threshold"),
        "{report}"
    );
    let sugg = read_json(&d.join("emb/suggested_aliases.json"));
    assert_eq!(sugg["speech-to-text"], "automatic-speech-recognition");
    assert!(sugg.get("weather-forecast").is_none());

    // The suggestions work as --aliases and give the same verdicts without the embedder.
    let o = muse_cli(
        d,
        MUSE_PLANS,
        "aliased",
        &[
            "--aliases",
            d.join("emb/suggested_aliases.json").to_str().unwrap(),
        ],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(by_idx("aliased")[&33]["ts"], true);

    // Sharded and merged: the same metrics.
    for k in 0..2 {
        let shard = format!("{k}/2");
        let mut extra = emb.to_vec();
        extra.extend(["--shard", &shard]);
        let o = muse_cli(d, MUSE_PLANS, &format!("part{k}"), &extra);
        assert!(o.status.success(), "{}", stderr(&o));
    }
    let o = run(&[
        "merge",
        "--parts",
        d.join("part0").to_str().unwrap(),
        d.join("part1").to_str().unwrap(),
        "--out",
        d.join("merged").to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let merged = read_json(&d.join("merged/metrics.json"));
    assert_eq!(merged["metrics"], m["metrics"]);
    assert_eq!(merged["groups"], m["groups"]);
    assert_eq!(
        std::fs::read(d.join("merged/suggested_aliases.json")).unwrap(),
        std::fs::read(d.join("emb/suggested_aliases.json")).unwrap()
    );
}
