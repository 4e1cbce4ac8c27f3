//! The judge's calibration and the judge-corrected IFSM end to end, with the tiny test judges on
//! the real dev split: the dataset calibration's counts (against PyTorch), shards and merge,
//! the cache (a second run, a killed calibration, `--recalibrate`), human labels, the label
//! sample, `judge eval`, and a letter judge's frames.

use crate::common::tiny_judge::build_judge;
use crate::common::{read_json, run, scorekit, stderr, test_data, write};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};

struct Setup {
    _tmp: tempfile::TempDir,
    root: PathBuf,
    judge: PathBuf,
    dataset: PathBuf,
    gens: PathBuf,
    /// A calibration cache of this test's own.
    cache: PathBuf,
}

fn dev() -> Vec<Value> {
    crate::common::dev_questions()
}

/// The bert_mc tiny judge and two models' endings for every dev question: the gold option
/// ("gold") and a fixed wrong ending ("wrong").
fn setup(judge_name: &str) -> Setup {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().to_path_buf();
    let judge = root.join("judge");
    build_judge(judge_name, &judge, true);
    let mut gens = String::new();
    for q in dev() {
        let gold = &q["options"][q["gold_label"].as_u64().unwrap() as usize];
        gens += &format!(
            "{}\n",
            json!({"question_id": q["question_id"], "ending": gold, "model": "gold"})
        );
        gens += &format!(
            "{}\n",
            json!({"question_id": q["question_id"], "ending": "The end.", "model": "wrong"})
        );
    }
    let gens = write(&root, "gen.jsonl", gens);
    Setup {
        judge,
        dataset: test_data("possible-stories:dev", "dataset/dev.jsonl"),
        gens,
        cache: root.join("calibration-cache"),
        root,
        _tmp: tmp,
    }
}

/// `scorekit story` (judge only) into `root/out`; panics unless it succeeds. Returns stderr.
fn story(s: &Setup, out: &str, extra: &[&str]) -> String {
    let o = story_with(s, &s.gens, &s.judge, out, extra);
    assert!(o.status.success(), "{}", stderr(&o));
    stderr(&o)
}

/// `scorekit story` of `gens` with `judge` (no embedder) into `root/out`, whatever its exit.
fn story_with(
    s: &Setup,
    gens: &Path,
    judge: &Path,
    out: &str,
    extra: &[&str],
) -> std::process::Output {
    scorekit()
        .args(["story", "--dataset"])
        .arg(&s.dataset)
        .arg("--generations")
        .arg(gens)
        .arg("--judge")
        .arg(judge)
        .arg("--out")
        .arg(s.root.join(out))
        .args(["--skip-embedder", "--quiet", "--bootstrap", "200"])
        .args(extra)
        .env("SCOREKIT_CALIBRATION_CACHE", &s.cache)
        .output()
        .unwrap()
}

fn lines(p: &Path) -> Vec<Value> {
    std::fs::read_to_string(p)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn text(p: &Path) -> String {
    std::fs::read_to_string(p).unwrap()
}

/// The PyTorch run of the same construction (scripts/reference/calibration_reference.py).
fn reference(judge: &str) -> Value {
    let p = crate::common::repo().join("tests/data/story/calibration_reference.json");
    read_json(&p)["judges"][judge].clone()
}

#[test]
fn the_dataset_calibration_counts_as_pytorch_and_corrects_each_model() {
    let s = setup("bert_mc");
    story(&s, "out", &[]);
    let out = s.root.join("out");
    let m = read_json(&out.join("metrics.json"));
    let counts = &m["metrics"]["calibration"]["dataset"];
    assert_eq!(counts["questions"], 458);
    assert_eq!(
        counts["questions_without_filler"], 0,
        "every dev question has a filler"
    );
    assert_eq!(counts["counts"]["positives"], 458);
    assert_eq!(counts["counts"]["negatives"], 1374);
    let want = reference("bert_mc");
    assert_eq!(
        counts["counts"]["positives_counted"],
        want["positives_counted"]
    );
    assert_eq!(
        counts["counts"]["negatives_counted"],
        want["negatives_counted"]
    );

    // One line per frame: a positive and three negatives per question, in dataset order.
    let items = lines(&out.join("calibration.jsonl"));
    assert_eq!(items.len(), 458 * 4);
    assert_eq!(items[0]["kind"], "positive");
    assert_eq!(
        items[1..4]
            .iter()
            .map(|i| i["kind"].as_str().unwrap())
            .collect::<Vec<_>>(),
        ["negative"; 3]
    );
    let gold = &m["groups"]["gold"];
    // The positives are the judge's ceiling items: q1 is its accuracy.
    let corrected = &gold["ifsm_corrected"]["dataset"];
    assert_eq!(corrected["q1"], gold["judge_accuracy"]["value"]);
    assert_eq!(
        (corrected["m1"].as_u64(), corrected["m0"].as_u64()),
        (Some(458), Some(1374))
    );
    let q0 = corrected["q0"].as_f64().unwrap();
    let want_q0 = want["negatives_counted"].as_f64().unwrap() / 1374.0;
    assert_eq!(q0, want_q0);
    // The gold endings are the positives themselves: p = q1, so θ = 1 when the judge informs.
    // bert_mc is barely informative here: J = 0.053, its 95% interval above 0.
    assert_eq!(corrected["informative"], true, "{corrected}");
    assert!(corrected["J_ci"][0].as_f64().unwrap() > 0.0, "{corrected}");
    assert_eq!(corrected["value"], 1.0);
    let ci = corrected["ci"].as_array().unwrap();
    assert!(ci[0].as_f64().unwrap() < ci[1].as_f64().unwrap() && ci[1].as_f64().unwrap() <= 1.0);
    // Every group shares the calibration; the wrong ending's raw IFSM is lifted by 1 − q0.
    let wrong = &m["groups"]["wrong"]["ifsm_corrected"]["dataset"];
    assert_eq!(wrong["q0"], corrected["q0"]);
    let key = m["settings"]["calibration"]["dataset"]["key"]
        .as_str()
        .unwrap();
    assert_eq!(key.len(), 64);
    let report = text(&out.join("report.md"));
    assert!(report.contains("## Judge-corrected IFSM"), "{report}");
    assert!(report.contains("dataset calibration: q1 ="), "{report}");
}

#[test]
fn shards_merged_equal_a_single_run_and_the_cache_serves_the_next_run() {
    let s = setup("bert_mc");
    // With human labels too: the pooled counts, PPI per model and the calibrations' agreement
    // merge to the single run's.
    let labels = labels_file(&s, "labels.jsonl", "ann", 60, &|_| true);
    let with = ["--calibration-labels", labels.to_str().unwrap()];
    let first = story(&s, "single", &with);
    assert!(!first.contains("from the cache"), "{first}");
    for i in 0..2 {
        let shard = format!("{i}/2");
        let err = story(
            &s,
            &format!("part{i}"),
            &["--shard", &shard, with[0], with[1]],
        );
        // The single run calibrated every question: each shard takes its own from the cache.
        assert!(err.contains("from the cache"), "{err}");
    }
    let merged = s.root.join("merged");
    let o = run(&[
        "merge",
        "--parts",
        s.root.join("part0").to_str().unwrap(),
        s.root.join("part1").to_str().unwrap(),
        "--out",
        merged.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let single = s.root.join("single");
    assert_eq!(
        text(&merged.join("calibration.jsonl")),
        text(&single.join("calibration.jsonl"))
    );
    let (a, b) = (
        read_json(&single.join("metrics.json")),
        read_json(&merged.join("metrics.json")),
    );
    assert_eq!(a["metrics"], b["metrics"]);
    assert_eq!(a["groups"], b["groups"]);
    // The tiny judge leaves more of the labelled negatives unpicked than of the dataset's
    // (q0), by more than chance: the report says the dataset calibration does not describe it.
    let q0 = &a["metrics"]["calibration_agreement"]["q0"];
    assert!(q0["fisher_p"].as_f64().unwrap() < 0.05, "{q0}");
    let report = text(&single.join("report.md"));
    assert!(
        report.contains("does not describe this judge on these endings"),
        "{report}"
    );
    assert!(a["groups"]["gold"]["ifsm_ppi"]["value"].is_number());
}

#[test]
fn a_killed_calibration_resumes_from_the_cache_and_recalibrate_redoes_it() {
    let s = setup("bert_mc");
    story(&s, "first", &[]);
    let reference = text(&s.root.join("first/calibration.jsonl"));
    // A run killed while appending: the cache keeps whole questions up to a torn line.
    let cached = std::fs::read_dir(&s.cache)
        .unwrap()
        .map(|e| e.unwrap().path().join("items.jsonl"))
        .find(|p| p.exists())
        .expect("a cached calibration");
    let all = text(&cached);
    let cut = all.len() / 2 + 7;
    std::fs::write(&cached, &all[..cut]).unwrap();
    let err = story(&s, "resumed", &[]);
    let from_cache: usize = err
        .split("calibration: ")
        .nth(1)
        .and_then(|t| t.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no cache note: {err}"));
    assert!((200..458).contains(&from_cache), "{err}");
    assert_eq!(text(&s.root.join("resumed/calibration.jsonl")), reference);
    assert_eq!(
        read_json(&s.root.join("resumed/metrics.json"))["groups"],
        read_json(&s.root.join("first/metrics.json"))["groups"]
    );
    let err = story(&s, "again", &["--recalibrate"]);
    assert!(!err.contains("from the cache"), "{err}");
    assert_eq!(text(&s.root.join("again/calibration.jsonl")), reference);
    // The next run takes the whole calibration from the cache again; the items take the
    // positives' scores from it, so they are the fresh run's to the bit.
    let err = story(&s, "last", &[]);
    assert!(err.contains("calibration: 458 of 458"), "{err}");
    for dir in ["resumed", "again", "last"] {
        assert_eq!(
            text(&s.root.join(dir).join("items.jsonl")),
            text(&s.root.join("first/items.jsonl")),
            "{dir}"
        );
    }
}

/// A label file of `labeller` for the first `n` dev questions: model "gold"'s ending (the gold
/// option) labelled `gold(i)`, model "wrong"'s ending false, and a model-less distractor false
/// (the pooled calibration's other negatives).
fn labels_file(
    s: &Setup,
    name: &str,
    labeller: &str,
    n: usize,
    gold: &dyn Fn(usize) -> bool,
) -> PathBuf {
    let mut labels = String::new();
    for (i, q) in dev().iter().take(n).enumerate() {
        let g = q["gold_label"].as_u64().unwrap() as usize;
        let id = &q["question_id"];
        for v in [
            json!({"question_id": id, "ending": q["options"][g], "follows": gold(i),
                   "model": "gold", "labeller": labeller}),
            json!({"question_id": id, "ending": "The end.", "follows": false, "model": "wrong",
                   "labeller": labeller}),
            json!({"question_id": id, "ending": q["options"][(g + 1) % 4], "follows": false,
                   "labeller": labeller}),
        ] {
            labels += &format!("{v}\n");
        }
    }
    write(&s.root, name, labels)
}

/// PPI++ as ppi-python 0.2.3 computes it (`ppi_mean_ci`, λ tuned and clipped), transcribed
/// independently of `scorekit_suites::stats::ppi`, with plain sums: (value, lo, hi, λ).
fn ppi_transcribed(y: &[f64], yhat: &[f64], unl: &[f64]) -> (f64, f64, f64, f64) {
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
    let (n, big_n) = (y.len() as f64, unl.len() as f64);
    let theta1 = mean(unl) + mean(&y.iter().zip(yhat).map(|(a, b)| a - b).collect::<Vec<_>>());
    let (my, mh) = (mean(y), mean(yhat));
    let cov: f64 = y
        .iter()
        .zip(yhat)
        .map(|(a, b)| (a - my) * (b - mh))
        .sum::<f64>()
        / n;
    let all: Vec<f64> = yhat.iter().chain(unl).map(|v| v - theta1).collect();
    let ma = mean(&all);
    let var = all.iter().map(|v| (v - ma).powi(2)).sum::<f64>() / (all.len() as f64 - 1.0);
    // All predictions equal: ppi-python divides 0 by 0 (NaN); scorekit takes λ = 0, the labels
    // alone (docs/story.md).
    let lambda = if var == 0.0 {
        0.0
    } else {
        (2.0 * cov / (2.0 * (1.0 + n / big_n) * var)).clamp(0.0, 1.0)
    };
    let rect: Vec<f64> = y.iter().zip(yhat).map(|(a, b)| a - lambda * b).collect();
    let imp: Vec<f64> = unl.iter().map(|u| lambda * u).collect();
    let value = mean(&imp) + mean(&rect);
    let var0 = |v: &[f64]| {
        let m = mean(v);
        v.iter().map(|x| (x - m).powi(2)).sum::<f64>() / v.len() as f64
    };
    let se = (var0(&imp) / big_n + var0(&rect) / n).sqrt();
    let z = 1.959_963_984_540_054_3;
    (value, value - z * se, value + z * se, lambda)
}

#[test]
fn human_labels_give_ppi_per_model_a_pooled_correction_and_a_uniform_label_sample() {
    let s = setup("bert_mc");
    // ann labels model "gold"'s first 40 endings as the judge judges them but on 6 (read from a
    // run without labels): labels and verdicts vary together, so PPI's λ is not forced to 0.
    story(&s, "verdicts", &["--no-calibration"]);
    let picked: Vec<bool> = lines(&s.root.join("verdicts/items.jsonl"))
        .iter()
        .filter(|i| i["group"] == "gold")
        .map(|i| i["follow"] == true)
        .collect();
    let ann_says = |i: usize| picked[i] != (i % 7 == 3);
    let ann = labels_file(&s, "ann.jsonl", "ann", 40, &ann_says);
    let ann_yes = (0..40).filter(|&i| ann_says(i)).count();
    let err = story(
        &s,
        "labels",
        &[
            "--no-calibration",
            "--calibration-labels",
            ann.to_str().unwrap(),
            "--label-sample",
            "50",
            "--seed",
            "3",
        ],
    );
    // The sample's stderr says how many labels would settle the judge.
    assert!(
        err.contains("to_label.jsonl: 100 ending(s)") && err.contains("Labels needed"),
        "{err}"
    );
    let out = s.root.join("labels");
    let m = read_json(&out.join("metrics.json"));
    // The pooled calibration: ann_yes gold endings follow; the other gold ones, 40 "The end."
    // and 40 distractors do not.
    let human = &m["groups"]["gold"]["ifsm_corrected"]["human"];
    assert_eq!(
        (human["m1"].as_u64(), human["m0"].as_u64()),
        (Some(ann_yes as u64), Some((120 - ann_yes) as u64))
    );
    assert!(m["groups"]["gold"]["ifsm_corrected"]["dataset"].is_null());
    assert_eq!(m["metrics"]["calibration"]["human"]["labels"], 120);
    assert_eq!(m["metrics"]["calibration"]["human"]["label_lines"], 120);
    let cal = lines(&out.join("calibration.jsonl"));
    assert_eq!(cal.len(), 120);
    assert!(cal.iter().all(|i| i["kind"] == "label"));
    assert_eq!(m["inputs"].as_array().unwrap().len(), 3);

    // PPI++ per model from the items: Y the label, Ŷ the judge's verdict, the other judged
    // endings unlabelled; equal to an independent transcription of ppi-python.
    let items = lines(&out.join("items.jsonl"));
    // The verdicts and labels of this run, and ppi-python 0.2.3's values on them
    // (scripts/reference/ppi_reference.py reads tests/data/story/ppi_real_run_inputs.json, which
    // SCOREKIT_WRITE_PPI_INPUTS=FILE makes this test write).
    let fixture = read_json(&crate::common::repo().join("tests/data/story/ppi_reference.json"));
    let writing = std::env::var("SCOREKIT_WRITE_PPI_INPUTS").ok();
    let mut inputs = serde_json::Map::new();
    for model in ["gold", "wrong"] {
        let mine: Vec<&Value> = items.iter().filter(|i| i["group"] == model).collect();
        let (mut y, mut yhat, mut unl) = (vec![], vec![], vec![]);
        for i in &mine {
            let f = f64::from(u8::from(i["follow"] == true));
            match i["human_follows"].as_bool() {
                Some(h) => {
                    y.push(f64::from(u8::from(h)));
                    yhat.push(f);
                }
                None => unl.push(f),
            }
        }
        assert_eq!((y.len(), unl.len()), (40, mine.len() - 40), "{model}");
        let ppi = &m["groups"][model]["ifsm_ppi"];
        assert_eq!(ppi["n_labeled"], 40);
        assert_eq!(ppi["n_empty"], 0);
        inputs.insert(
            model.into(),
            json!({"y": y, "yhat": yhat, "yhat_unlabeled": unl}),
        );
        let reference = &fixture["real_runs"][model];
        if writing.is_none() {
            assert_eq!(
                reference["y"],
                json!(y),
                "{model}: the fixture's labels are this run's"
            );
            assert_eq!(
                reference["yhat"],
                json!(yhat),
                "{model}: the fixture's verdicts"
            );
            assert_eq!(reference["yhat_unlabeled"], json!(unl), "{model}");
            for (got, key) in [(&ppi["value"], "value"), (&ppi["lambda"], "lambda")] {
                let want = reference[key].as_f64().unwrap();
                assert!(
                    (got.as_f64().unwrap() - want).abs() < 1e-9,
                    "{model} {key}: {got}"
                );
            }
            for i in 0..2 {
                let want = reference["ci"][i].as_f64().unwrap();
                assert!(
                    (ppi["ci"][i].as_f64().unwrap() - want).abs() < 1e-9,
                    "{model}: {ppi}"
                );
            }
        }
        let (v, lo, hi, lambda) = ppi_transcribed(&y, &yhat, &unl);
        for (got, want) in [
            (&ppi["value"], v),
            (&ppi["ci"][0], lo),
            (&ppi["ci"][1], hi),
            (&ppi["lambda"], lambda),
        ] {
            assert!(
                (got.as_f64().unwrap() - want).abs() < 1e-9,
                "{model}: {ppi} vs {want}"
            );
        }
        assert_eq!(m["groups"][model]["ifsm_headline"]["method"], "ppi");
    }
    // The paired difference, gold − wrong, labelled on the same 40 questions: `compare` gives
    // ppi-python's PPI on the per-question differences.
    type ByQuestion = std::collections::BTreeMap<String, f64>;
    let per_question = |m: &str, label: bool| -> ByQuestion {
        items
            .iter()
            .filter(|i| i["group"] == m)
            .filter_map(|i| {
                let v = if label {
                    i["human_follows"].as_bool()
                } else {
                    Some(i["follow"] == true)
                };
                v.map(|v| {
                    (
                        i["question_id"].as_str().unwrap().to_string(),
                        f64::from(u8::from(v)),
                    )
                })
            })
            .collect()
    };
    let (hg, hw) = (per_question("gold", true), per_question("wrong", true));
    let (fg, fw) = (per_question("gold", false), per_question("wrong", false));
    let (mut y, mut yhat, mut unl) = (vec![], vec![], vec![]);
    for (q, a) in &fg {
        let d = a - fw[q];
        match (hg.get(q), hw.get(q)) {
            (Some(x), Some(z)) => {
                y.push(x - z);
                yhat.push(d);
            }
            _ => unl.push(d),
        }
    }
    inputs.insert(
        "paired".into(),
        json!({"y": y, "yhat": yhat, "yhat_unlabeled": unl}),
    );
    if let Some(path) = &writing {
        std::fs::write(path, serde_json::to_string(&inputs).unwrap()).unwrap();
        return;
    }
    let reference = &fixture["real_runs"]["paired"];
    assert_eq!(reference["y"], json!(y));
    assert_eq!(reference["yhat_unlabeled"], json!(unl));
    let cmp = s.root.join("compare");
    let o = run(&[
        "compare",
        "--runs",
        out.to_str().unwrap(),
        "--out",
        cmp.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let cm = read_json(&cmp.join("metrics.json"));
    let ifsm = cm["comparisons"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["metric"] == "ifsm")
        .unwrap()
        .clone();
    let ppi = &ifsm["corrected"]["ppi"];
    assert_eq!(ppi["method"], "paired");
    assert_eq!(ppi["n_labeled"], 40);
    for (got, want) in [
        (&ppi["value"], &reference["value"]),
        (&ppi["ci"][0], &reference["ci"][0]),
        (&ppi["ci"][1], &reference["ci"][1]),
        (&ppi["lambda"], &reference["lambda"]),
    ] {
        assert!(
            (got.as_f64().unwrap() - want.as_f64().unwrap()).abs() < 1e-9,
            "{ppi} vs {reference}"
        );
    }
    assert_eq!(ifsm["corrected"]["headline"]["method"], "ppi");
    // Both headlines are PPI: the systems are ranked by them, gold first.
    let ranking = &cm["headline_ranking"];
    assert_eq!(ranking["ranked"], true);
    assert_eq!(ranking["systems"][0]["system"], "gold");
    assert_eq!(ranking["systems"][1]["system"], "wrong");
    let md = text(&cmp.join("report.md"));
    assert!(
        md.contains("## Headline IFSM") && md.contains("Ranked by the estimate"),
        "{md}"
    );

    let report = text(&out.join("report.md"));
    assert!(
        report.contains("## IFSM: the headline per model"),
        "{report}"
    );
    assert!(report.contains("## Prediction-powered IFSM"), "{report}");

    // The sample: 50 questions drawn uniformly, both models' judged endings to each, with the
    // story and the question to read, and no verdict.
    let sample = lines(&out.join("to_label.jsonl"));
    assert_eq!(sample.len(), 100);
    let mut per_question: std::collections::BTreeMap<String, Vec<String>> = Default::default();
    for l in &sample {
        assert!(
            l["follows"].is_null() && l.get("follow").is_none() && l.get("judge_pick").is_none()
        );
        assert!(l["passage"].is_string() && l["question"].is_string());
        per_question
            .entry(l["question_id"].as_str().unwrap().to_string())
            .or_default()
            .push(l["model"].as_str().unwrap().to_string());
    }
    assert_eq!(per_question.len(), 50);
    assert!(per_question
        .values()
        .all(|m| m.len() == 2 && m.contains(&"gold".to_string())));
    // Shuffled: the models do not alternate in a fixed order.
    let firsts: Vec<&Value> = sample.iter().step_by(2).map(|l| &l["model"]).collect();
    assert!(firsts.iter().any(|m| *m == "gold") && firsts.iter().any(|m| *m == "wrong"));

    // Two labellers: bob answers as ann but on the first 4 gold endings: those tie and drop
    // out; Cohen's κ over the 120 endings both labelled.
    let bob_says = |i: usize| ann_says(i) != (i < 4);
    let bob = labels_file(&s, "bob.jsonl", "bob", 40, &bob_says);
    let bob_yes = (0..40).filter(|&i| bob_says(i)).count() as f64;
    story(
        &s,
        "two",
        &[
            "--no-calibration",
            "--calibration-labels",
            ann.to_str().unwrap(),
            bob.to_str().unwrap(),
        ],
    );
    let m = read_json(&s.root.join("two/metrics.json"));
    let h = &m["metrics"]["calibration"]["human"];
    assert_eq!(
        (h["label_lines"].as_u64(), h["ties"].as_u64()),
        (Some(240), Some(4))
    );
    assert_eq!(h["agreement"]["method"], "Cohen's kappa");
    assert_eq!(h["agreement"]["items"], 120);
    // They agree on 116 of 120; ann says yes to ann_yes, bob to bob_yes.
    let a = ann_yes as f64;
    let (po, pe) = (
        116.0 / 120.0,
        (a * bob_yes + (120.0 - a) * (120.0 - bob_yes)) / (120.0 * 120.0),
    );
    let kappa = h["agreement"]["kappa"].as_f64().unwrap();
    assert!((kappa - (po - pe) / (1.0 - pe)).abs() < 1e-12, "{kappa}");
    assert_eq!(m["groups"]["gold"]["ifsm_ppi"]["n_labeled"], 36);

    // The sample is a label file once labelled; unlabelled, it is refused naming the field.
    let unlabelled = out.join("to_label.jsonl");
    let o = story_with(
        &s,
        &s.gens,
        &s.judge,
        "refused",
        &["--calibration-labels", unlabelled.to_str().unwrap()],
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("to_label.jsonl:1: field \"follows\""),
        "{}",
        stderr(&o)
    );
    assert!(!s.root.join("refused/metrics.json").exists());
}

#[test]
fn judge_eval_reports_the_judges_resolution_from_the_same_calibration() {
    let s = setup("roberta_mc");
    story(&s, "story", &[]);
    let out = s.root.join("eval");
    let o = scorekit()
        .args(["judge", "eval", "--judge"])
        .arg(&s.judge)
        .arg("--dataset")
        .arg(&s.dataset)
        .arg("--out")
        .arg(&out)
        .args(["--quiet", "--bootstrap", "100"])
        .env("SCOREKIT_CALIBRATION_CACHE", &s.cache)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("calibration: 458 of 458"),
        "{}",
        stderr(&o)
    );
    let m = read_json(&out.join("metrics.json"));
    let d = &m["metrics"]["judge_resolution"]["dataset"];
    let story_m = read_json(&s.root.join("story/metrics.json"));
    let c = &story_m["groups"]["gold"]["ifsm_corrected"]["dataset"];
    for k in ["q0", "q1", "J", "J_ci", "informative", "m0", "m1"] {
        assert_eq!(d[k], c[k], "{k}");
    }
    assert_eq!(d["q1"], m["metrics"]["accuracy"]["value"]);
    let want = reference("roberta_mc");
    assert_eq!(
        d["q0"].as_f64().unwrap(),
        want["negatives_counted"].as_f64().unwrap() / 1374.0
    );
    let report = text(&out.join("report.md"));
    assert!(report.contains("J = q0 + q1 − 1"), "{report}");
    // roberta_mc cannot measure IFSM on dev (J = −0.006): no corrected value, and it is said.
    assert_eq!(d["informative"], false, "{d}");
    assert!(c["value"].is_null() && c["ci"].is_null(), "{c}");
    let story_report = text(&s.root.join("story/report.md"));
    assert!(story_report.contains("This judge cannot measure IFSM on this dataset"));
    assert_eq!(
        text(&out.join("calibration.jsonl")),
        text(&s.root.join("story/calibration.jsonl"))
    );
}

#[test]
fn no_calibration_and_skip_judge_write_no_correction() {
    let s = setup("bert_mc");
    story(&s, "none", &["--no-calibration"]);
    let m = read_json(&s.root.join("none/metrics.json"));
    assert!(m["groups"]["gold"]["ifsm_corrected"].is_null());
    assert!(m["metrics"]["calibration"].is_null());
    assert!(!s.root.join("none/calibration.jsonl").exists());
    let o = scorekit()
        .args(["story", "--dataset"])
        .arg(&s.dataset)
        .arg("--generations")
        .arg(&s.gens)
        .args([
            "--skip-judge",
            "--label-sample",
            "5",
            "--embedder",
            "none",
            "--out",
        ])
        .arg(s.root.join("x"))
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("--label-sample"), "{}", stderr(&o));
}

#[test]
fn a_letter_judge_is_calibrated_in_the_same_frames_and_rotations() {
    let tmp = tempfile::tempdir().unwrap();
    let judge = crate::letter::judge_folder("flan", tmp.path());
    let dataset = crate::letter::dev_head(tmp.path(), 6);
    let mut gens = String::new();
    for l in text(&dataset).lines() {
        let q: Value = serde_json::from_str(l).unwrap();
        gens += &format!(
            "{}\n",
            json!({"question_id": q["question_id"], "ending": "The end."})
        );
    }
    let gens = write(tmp.path(), "gen.jsonl", gens);
    let out = tmp.path().join("out");
    let o = scorekit()
        .args(["story", "--dataset"])
        .arg(&dataset)
        .arg("--generations")
        .arg(&gens)
        .arg("--judge")
        .arg(&judge)
        .arg("--out")
        .arg(&out)
        .args([
            "--skip-embedder",
            "--quiet",
            "--bootstrap",
            "50",
            "--device",
            "cpu",
        ])
        .args(["--option-orders", "cyclic"])
        .env("SCOREKIT_CALIBRATION_CACHE", tmp.path().join("cache"))
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let m = read_json(&out.join("metrics.json"));
    let d = &m["metrics"]["calibration"]["dataset"];
    assert_eq!(d["counts"]["positives"], 6);
    assert_eq!(d["counts"]["negatives"], 18);
    assert_eq!(d["counts_cyclic"]["negatives"], 18);
    let cal = lines(&out.join("calibration.jsonl"));
    let items = lines(&out.join("items.jsonl"));
    // A positive is the ceiling's prompt: the same pick as the item's on the human options,
    // in the reference order and as the majority of the rotations.
    for it in &items {
        let pos = cal
            .iter()
            .find(|c| c["question_id"] == it["question_id"] && c["kind"] == "positive")
            .unwrap();
        assert_eq!(pos["pick"], it["judge_gold_pick"], "{it}");
        assert_eq!(pos["cyclic_pick"], it["cyclic"]["judge_gold_pick"], "{it}");
    }
    assert!(cal.iter().all(|c| c.get("cyclic_counted").is_some()));
    let report = text(&out.join("report.md"));
    assert!(
        m["metrics"]["ifsm_cyclic_corrected"]["dataset"].is_object(),
        "{m}"
    );
    assert!(
        report.contains("Judge-corrected IFSM, cyclic option orders"),
        "{report}"
    );
}

/// Empty endings are known not to follow: a run with 10% empty endings reports, under Lee et
/// al.'s correction, the judged endings' estimate and interval scaled by the judged share, equal
/// to a run of the judged endings alone times n_j/n; 0% leaves it as it was, 100% gives 0.
#[test]
fn empty_endings_scale_the_corrected_ifsm_instead_of_biasing_it() {
    let s = setup("bert_mc");
    let qs = dev();
    let (mut with_empty, mut judged_only, mut all_empty) =
        (String::new(), String::new(), String::new());
    for (k, q) in qs.iter().enumerate() {
        let ending = q["options"][(k + 1) % 4].clone();
        let line = json!({"question_id": q["question_id"], "ending": ending, "model": "m"});
        all_empty += &format!(
            "{}\n",
            json!({"question_id": q["question_id"], "ending": "", "model": "m"})
        );
        if k % 10 == 0 {
            with_empty += &format!(
                "{}\n",
                json!({"question_id": q["question_id"], "ending": "  ", "model": "m"})
            );
        } else {
            with_empty += &format!("{line}\n");
            judged_only += &format!("{line}\n");
        }
    }
    let mut runs = Vec::new();
    for (name, gens) in [
        ("with", with_empty),
        ("judged", judged_only),
        ("none", all_empty),
    ] {
        let file = write(&s.root, &format!("{name}.jsonl"), gens);
        let out = s.root.join(name);
        let o = story_with(&s, &file, &s.judge, name, &[]);
        assert!(o.status.success(), "{}", stderr(&o));
        runs.push(
            read_json(&out.join("metrics.json"))["groups"]["m"]["ifsm_corrected"]["dataset"]
                .clone(),
        );
    }
    let (with, judged, none) = (&runs[0], &runs[1], &runs[2]);
    let n_empty = qs.len().div_ceil(10);
    let n_judged = qs.len() - n_empty;
    assert_eq!(
        (with["n_judged"].as_u64(), with["n_empty"].as_u64()),
        (Some(n_judged as u64), Some(n_empty as u64))
    );
    assert_eq!(judged["n_empty"], 0);
    let share = n_judged as f64 / qs.len() as f64;
    let scaled = |v: &Value| v.as_f64().unwrap() * share;
    assert_eq!(
        with["value"].as_f64(),
        Some(scaled(&judged["value"])),
        "{with} {judged}"
    );
    assert_eq!(
        with["unclipped"].as_f64(),
        Some(scaled(&judged["unclipped"]))
    );
    for i in 0..2 {
        assert_eq!(
            with["ci"][i].as_f64(),
            Some(scaled(&judged["ci"][i])),
            "{with}"
        );
    }
    // The judge's calibration is the same in all three runs.
    assert_eq!(with["J"], judged["J"]);
    // Every ending empty: exactly 0, no uncertainty.
    assert_eq!(
        (none["value"].as_f64(), none["n_judged"].as_u64()),
        (Some(0.0), Some(0))
    );
    assert_eq!(none["ci"], json!([0.0, 0.0]));
}

/// A refused `--out` costs nothing: a folder holding a finished run is refused before any model
/// loads (here the judge does not even exist) and the message names the folder, not the model.
#[test]
fn a_finished_out_folder_is_refused_before_the_models_load() {
    let s = setup("bert_mc");
    story(&s, "done", &["--no-calibration"]);
    let o = story_with(&s, &s.gens, Path::new("/no/such/judge"), "done", &[]);
    assert_eq!(o.status.code(), Some(2));
    let err = stderr(&o);
    assert!(err.contains("already holds results"), "{err}");
    assert!(!err.contains("/no/such/judge"), "{err}");
}

/// A sentence encoder given as the judge (the real all-MiniLM-L6-v2, a `BertModel`) is named as
/// such, before any scoring, not reported as a weight file missing a tensor.
#[test]
fn a_sentence_encoder_as_the_judge_says_it_has_no_judge_head() {
    let s = setup("bert_mc");
    let minilm = crate::common::repo().join("fixtures-cache/all-MiniLM-L6-v2");
    let o = story_with(&s, &s.gens, &minilm, "encoder", &["--no-calibration"]);
    assert_eq!(o.status.code(), Some(2));
    let err = stderr(&o);
    assert!(
        err.contains("BertModel")
            && err.contains("no multiple-choice or sequence-classification head"),
        "{err}"
    );
    assert!(!err.contains("missing tensor"), "{err}");
}
