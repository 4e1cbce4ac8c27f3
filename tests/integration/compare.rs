//! `scorekit compare` end to end on real runs: GRASP results built from the real GRASP prompts,
//! the real MINT trajectories of two agents, MuSE plans for the real queries, and story runs on
//! the real Possible Stories dev split with the tiny test judge. McNemar p-values are checked
//! against scipy (`scripts/reference/compare_reference.py` wrote `tests/data/compare/`).

use crate::common;

use common::tiny_judge::story_args;
use common::{read_json, repo, run, stderr, test_data, write};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};

fn reference() -> Value {
    read_json(&repo().join("tests/data/compare/reference.json"))
}

fn ok(args: &[&str]) {
    let o = run(args);
    assert!(o.status.success(), "{args:?}\nstderr: {}", stderr(&o));
}

fn s(p: &Path) -> String {
    p.display().to_string()
}

/// Run compare; returns its metrics.json.
fn compare(runs: &[&Path], extra: &[&str], out: &Path) -> Value {
    let mut args: Vec<String> = vec!["compare".into(), "--runs".into()];
    args.extend(runs.iter().map(|p| s(p)));
    args.extend(["--out".into(), s(out), "--bootstrap".into(), "300".into()]);
    args.extend(extra.iter().map(|x| x.to_string()));
    let a: Vec<&str> = args.iter().map(String::as_str).collect();
    ok(&a);
    assert!(out.join("report.md").is_file() && out.join("tables.tex").is_file());
    read_json(&out.join("metrics.json"))
}

/// table.csv as one map per row.
fn csv_rows(path: &Path) -> Vec<std::collections::BTreeMap<String, String>> {
    let mut r = csv::Reader::from_path(path).unwrap();
    let headers = r.headers().unwrap().clone();
    r.records()
        .map(|rec| {
            let rec = rec.unwrap();
            headers
                .iter()
                .zip(rec.iter())
                .map(|(h, v)| (h.to_string(), v.to_string()))
                .collect()
        })
        .collect()
}

fn num(s: &str) -> f64 {
    s.parse().unwrap()
}

fn find<'a>(m: &'a Value, metric: &str, a: &str, b: &str) -> &'a Value {
    m["comparisons"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["metric"] == metric && c["a"] == a && c["b"] == b)
        .unwrap_or_else(|| panic!("no {metric} {a} vs {b} in {}", m["comparisons"]))
}

fn close(x: &Value, y: &Value) -> bool {
    let (x, y) = (x.as_f64().unwrap(), y.as_f64().unwrap());
    (x - y).abs() <= 1e-12 * y.abs().max(1e-300) || x == y
}

/// The fields scipy's reference has, equal (p-values to 1e-12 relative).
fn assert_matches(c: &Value, r: &Value) {
    for k in ["n_paired", "a_only", "b_only"] {
        assert_eq!(c[k], r[k], "{k}: {c}");
    }
    for k in ["a_value", "b_value", "p_value"] {
        assert!(close(&c[k], &r[k]), "{k}: {} vs scipy {}", c[k], r[k]);
    }
    assert!(c["test"].as_str().unwrap().starts_with("exact McNemar"));
    let d = &c["diff"];
    let diff = c["a_value"].as_f64().unwrap() - c["b_value"].as_f64().unwrap();
    assert!((d["value"].as_f64().unwrap() - diff).abs() < 1e-12);
    assert!(d["ci_low"].as_f64().unwrap() <= diff && diff <= d["ci_high"].as_f64().unwrap());
}

#[test]
fn binomial_tails_equal_scipy() {
    for r in reference()["binomial"].as_array().unwrap() {
        let (k, m) = (r[0].as_u64().unwrap(), r[1].as_u64().unwrap());
        let p = scorekit::suites::compare::binomial_two_sided(k, m);
        let want = r[2].as_f64().unwrap();
        // Summed in log space: equal to scipy up to floating-point rounding.
        assert!(
            (p - want).abs() <= 1e-10 * want,
            "{k} vs {m}: {p} vs {want}"
        );
    }
}

#[test]
fn grasp_mcnemar_equals_scipy() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    let mut runs = Vec::new();
    for name in ["a", "b"] {
        let csv = repo().join(format!("tests/data/compare/grasp_{name}.csv"));
        let out = d.join(name);
        ok(&[
            "grasp",
            "--responses",
            &s(&csv),
            "--test",
            "level1-binary",
            "--out",
            &s(&out),
            "--bootstrap",
            "0",
        ]);
        runs.push(out);
    }
    let m = compare(&[&runs[0], &runs[1]], &["--labels", "A,B"], &d.join("cmp"));
    assert_eq!(m["compared_suite"], "grasp");
    let c = find(&m, "accuracy", "A", "B");
    assert_matches(c, &reference()["grasp"]);
    // One comparison: Holm changes nothing.
    assert_eq!(c["p_holm"], c["p_value"]);
    assert_eq!(
        (c["unpaired_a"].as_u64(), c["unpaired_b"].as_u64()),
        (Some(0), Some(0))
    );
    let board = m["leaderboard"].as_array().unwrap();
    assert_eq!(board.len(), 2);
    assert_eq!(board[0]["system"], "A");
    assert_eq!(board[0]["metrics"]["accuracy"]["n"], 224);

    // The run's main table as CSV and LaTeX, and the chart with chance marked per test.
    let run = read_json(&runs[0].join("metrics.json"));
    let rows = csv_rows(&runs[0].join("table.csv"));
    assert_eq!(rows.len(), 6, "five tests and the total");
    for r in &rows[..5] {
        let g = &run["groups"][&r["test"]];
        assert_eq!(
            num(&r["accuracy"]),
            g["accuracy"]["value"].as_f64().unwrap()
        );
        assert_eq!(num(&r["chance"]), 0.5);
        assert_eq!(
            num(&r["acc (pos.)"]),
            g["acc_pos"]["value"].as_f64().unwrap()
        );
        assert_eq!(r["n"], g["n"].to_string());
    }
    assert_eq!(rows[5]["test"], "all");
    assert_eq!(
        num(&rows[5]["accuracy"]),
        run["metrics"]["accuracy"]["value"].as_f64().unwrap()
    );
    assert_eq!(
        num(&rows[5]["accuracy"]),
        reference()["grasp"]["a_value"].as_f64().unwrap()
    );
    let tex = std::fs::read_to_string(runs[0].join("tables.tex")).unwrap();
    assert!(tex.contains("\\begin{tabular}{lrrrrrr}") && tex.contains("RelationalPosition &"));
    let svg = std::fs::read_to_string(runs[0].join("accuracy.svg")).unwrap();
    assert_eq!(svg.matches("class=\"reference\"").count(), 5);
}

/// Copy the configurations `rel` (paths under MINT's outputs/) into a new outputs folder.
fn mint_outputs(root: &Path, name: &str, rels: &[&str]) -> PathBuf {
    let dir = root.join(name);
    let src = test_data("mint:headline", "data/outputs");
    for rel in rels {
        copy_dir(&src.join(rel), &dir.join(rel));
    }
    dir
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let dest = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_dir(&e.path(), &dest);
        } else {
            std::fs::copy(e.path(), dest).unwrap();
        }
    }
}

#[test]
fn mint_agents_and_configurations_are_systems_with_scipy_p_values_and_holm() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    let gpt = mint_outputs(
        d,
        "gpt",
        &[
            "gpt-3.5-turbo-0613/F=None/max1_p1+tool+cd",
            "gpt-3.5-turbo-0613/F=None/max5_p2+tool+cd",
        ],
    );
    let llama = mint_outputs(
        d,
        "llama",
        &["Meta-Llama-3-8B-Instruct/F=None/max5_p2+tool+cd"],
    );
    for (o, out) in [(&gpt, "run-gpt"), (&llama, "run-llama")] {
        ok(&[
            "mint",
            "--outputs",
            &s(o),
            "--out",
            &s(&d.join(out)),
            "--bootstrap",
            "0",
        ]);
    }
    let m = compare(
        &[&d.join("run-gpt"), &d.join("run-llama")],
        &["--labels", "gpt,llama"],
        &d.join("cmp"),
    );
    let k1 = "gpt/gpt-3.5-turbo-0613/F=None/max1_p1+tool+cd";
    let k5 = "gpt/gpt-3.5-turbo-0613/F=None/max5_p2+tool+cd";
    let r = reference();
    assert_matches(
        find(&m, "success_rate", k5, "llama"),
        &r["mint_gpt35_vs_llama3_k5"],
    );
    assert_matches(find(&m, "success_rate", k1, k5), &r["mint_gpt35_k1_vs_k5"]);
    // Three systems, one metric: three comparisons, Holm over the three.
    let cs = m["comparisons"].as_array().unwrap();
    assert_eq!(cs.len(), 3);
    let mut p: Vec<f64> = cs.iter().map(|c| c["p_value"].as_f64().unwrap()).collect();
    p.sort_by(f64::total_cmp);
    let holm = [
        3.0 * p[0],
        (2.0 * p[1]).max(3.0 * p[0]),
        p[2].max(2.0 * p[1]),
    ];
    for c in cs {
        let raw = c["p_value"].as_f64().unwrap();
        let rank = p.iter().position(|&x| x == raw).unwrap();
        assert!((c["p_holm"].as_f64().unwrap() - holm[rank].min(1.0)).abs() < 1e-15);
    }
    let svg = std::fs::read_to_string(d.join("cmp/leaderboard.svg")).unwrap();
    // One SR dot per system plus the legend's.
    assert_eq!(svg.matches("<circle").count(), 3 + 1);
    assert!(svg.contains(">llama<"));
    let report = std::fs::read_to_string(d.join("cmp/report.md")).unwrap();
    assert!(report.contains("| llama "), "{report}");
    assert!(report.contains("McNemar"));
}

/// One scorekit-format plan per real MuSE query; `drop_last` every `every`-th query's last task
/// (its plan then misses a task), keeping plan steps in the gold order.
fn muse_plans(every: usize, offset: usize) -> String {
    let qs = read_json(&test_data("muse:queries", "MuSE_Benchmark/queries.json"));
    let mut out = String::new();
    for (i, q) in qs.as_array().unwrap().iter().enumerate() {
        let mut tasks: Vec<String> = q["tasks"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t.as_str().unwrap().to_string())
            .collect();
        if (i + offset).is_multiple_of(every) {
            tasks.pop();
            if tasks.is_empty() {
                tasks.push("image-classification".into());
            }
        }
        let steps: Vec<Value> = tasks
            .iter()
            .enumerate()
            .map(|(k, t)| {
                let dep: Vec<&str> = if k == 0 { vec![] } else { vec![&tasks[k - 1]] };
                json!({"id": t, "task": t, "dep": dep})
            })
            .collect();
        out.push_str(&format!("{}\n", json!({"idx": q["idx"], "tasks": steps})));
    }
    out
}

fn muse_run(d: &Path, name: &str, plans: &str, queries: &Path) -> PathBuf {
    let p = write(d, &format!("{name}.jsonl"), plans);
    let out = d.join(name);
    ok(&[
        "muse",
        "--queries",
        &s(queries),
        "--plans",
        &s(&p),
        "--out",
        &s(&out),
        "--bootstrap",
        "0",
    ]);
    out
}

#[test]
fn swapping_a_and_b_flips_the_difference_and_keeps_the_p_value() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    let q = test_data("muse:queries", "MuSE_Benchmark/queries.json");
    let a = muse_run(d, "pa", &muse_plans(5, 0), &q);
    let b = muse_run(d, "pb", &muse_plans(3, 1), &q);
    let ab = compare(&[&a, &b], &[], &d.join("ab"));
    let ba = compare(&[&b, &a], &[], &d.join("ba"));
    for metric in ["TS", "FoT", "O"] {
        let x = find(&ab, metric, "pa", "pb");
        let y = find(&ba, metric, "pb", "pa");
        assert_eq!(x["n_paired"], 100);
        assert_eq!(x["p_value"], y["p_value"], "{metric}");
        assert_eq!(x["p_holm"], y["p_holm"], "{metric}");
        assert_eq!((&x["a_only"], &x["b_only"]), (&y["b_only"], &y["a_only"]));
        assert_eq!(
            (&x["a_value"], &x["b_value"]),
            (&y["b_value"], &y["a_value"])
        );
        let (dx, dy) = (&x["diff"], &y["diff"]);
        let f = |v: &Value, k: &str| v[k].as_f64().unwrap();
        assert_eq!(f(dx, "value"), -f(dy, "value"));
        assert!(
            (f(dx, "ci_low") + f(dy, "ci_high")).abs() < 1e-12,
            "{dx} {dy}"
        );
        assert!(
            (f(dx, "ci_high") + f(dy, "ci_low")).abs() < 1e-12,
            "{dx} {dy}"
        );
    }
    // A plan that misses a task fails TS on that query: A misses 20, B 34 (every 3rd, shifted).
    let ts = find(&ab, "TS", "pa", "pb");
    assert!(ts["a_value"].as_f64().unwrap() > ts["b_value"].as_f64().unwrap());
    // MuSE's own table and chart: headline row equals metrics.json; per number of tasks.
    let run = read_json(&a.join("metrics.json"));
    let rows = csv_rows(&a.join("table.csv"));
    assert_eq!(rows[0]["group"], "all");
    for k in ["TS", "FoT", "O"] {
        assert_eq!(
            num(&rows[0][k]),
            run["metrics"][k]["value"].as_f64().unwrap()
        );
    }
    assert!(rows.iter().any(|r| r["group"] == "tasks:3"));
    let svg = std::fs::read_to_string(a.join("scores.svg")).unwrap();
    assert!(svg.contains("3-task queries") && svg.contains("all queries"));

    // Same seed, same interval: the run is deterministic.
    let again = compare(&[&a, &b], &[], &d.join("ab2"));
    assert_eq!(again["comparisons"], ab["comparisons"]);
}

fn refused(args: &[&str]) -> String {
    let o = run(args);
    assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
    stderr(&o)
}

/// `scorekit compare --runs RUNS EXTRA --out D/x`, which must exit 2; its stderr.
fn refused_compare(runs: &[&str], extra: &[&str], d: &Path) -> String {
    let out = s(&d.join("x"));
    let mut args = vec!["compare", "--runs"];
    args.extend_from_slice(runs);
    args.extend_from_slice(extra);
    args.extend(["--out", &out]);
    refused(&args)
}

#[test]
fn runs_of_other_suites_or_other_benchmark_inputs_are_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    let q = test_data("muse:queries", "MuSE_Benchmark/queries.json");
    let a = muse_run(d, "pa", &muse_plans(5, 0), &q);
    // The same queries with one query reworded: another benchmark file.
    let text = std::fs::read_to_string(&q).unwrap();
    let mut all: Vec<Value> = serde_json::from_str(&text).unwrap();
    all[99]["input"] = json!("Please describe this picture ./data/images/image_1.jpg");
    let q2 = write(d, "queries99.json", serde_json::to_string(&all).unwrap());
    let b = muse_run(d, "pb", &muse_plans(5, 0), &q2);
    let e = refused_compare(&[&s(&a), &s(&b)], &[], d);
    assert!(
        e.contains("different benchmark inputs")
            && e.contains("queries")
            && e.contains("queries99.json"),
        "{e}"
    );
    assert!(!d.join("x").exists(), "nothing written on refusal");

    let g = d.join("g");
    let csv = repo().join("tests/data/compare/grasp_a.csv");
    ok(&[
        "grasp",
        "--responses",
        &s(&csv),
        "--test",
        "level1-binary",
        "--out",
        &s(&g),
    ]);
    let e = refused_compare(&[&s(&a), &s(&g)], &[], d);
    assert!(e.contains("different suites (muse vs grasp)"), "{e}");

    let e = refused_compare(&[&s(&a), &s(&a)], &["--labels", "x"], d);
    assert!(
        e.contains("--labels names 1 run(s) but --runs gives 2"),
        "{e}"
    );
    let e = refused_compare(&[&s(&a), &s(&a)], &[], d);
    assert!(e.contains("two systems are called \"pa\""), "{e}");
    let e = refused_compare(&[&s(&a), &s(&d.join("nope"))], &[], d);
    assert!(e.contains("nope"), "{e}");
}

#[test]
fn story_models_are_systems_ifsm_by_mcnemar_dissimilarity_by_sign_test() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    let mut args = story_args(d, 60, &["m1", "m2", "m3"]);
    // Empty endings: m1 for the 61st dev question (nothing else from m1 there: Not-Follow, an
    // item only m1 has), m2 again for the first (m2 answered it: its scored ending counts).
    let dev: Vec<Value> =
        std::fs::read_to_string(test_data("possible-stories:dev", "dataset/dev.jsonl"))
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
    let gens = d.join("gen.jsonl");
    let mut text = std::fs::read_to_string(&gens).unwrap();
    text.push_str(&format!(
        "{}\n{}\n",
        json!({"question_id": dev[60]["question_id"], "ending": "", "model": "m1"}),
        json!({"question_id": dev[0]["question_id"], "ending": "  ", "model": "m2"})
    ));
    std::fs::write(&gens, text).unwrap();
    let out = d.join("story");
    args.extend(["--out".into(), s(&out), "--quiet".into()]);
    let a: Vec<&str> = args.iter().map(String::as_str).collect();
    ok(&a);
    // One run with three models: three systems, named by model.
    let m = compare(&[&out], &[], &d.join("cmp"));
    let names: Vec<&str> = m["leaderboard"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["system"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["m1", "m2", "m3"]);
    // Two metrics compared (the judge's ceiling is in the leaderboard only) for 3 pairs.
    assert_eq!(m["comparisons"].as_array().unwrap().len(), 6);

    // Expected counts, straight from items.jsonl.
    let items: Vec<Value> = std::fs::read_to_string(out.join("items.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let follow = |model: &str| -> std::collections::BTreeMap<String, bool> {
        items
            .iter()
            .filter(|i| i["model"] == model && i["status"] == "scored")
            .map(|i| {
                (
                    i["question_id"].as_str().unwrap().to_string(),
                    i["follow"].as_bool().unwrap(),
                )
            })
            .collect()
    };
    let (f1, f2) = (follow("m1"), follow("m2"));
    assert_eq!(f1.len(), 60);
    let a_only = f1.iter().filter(|(k, &v)| v && !f2[*k]).count();
    let b_only = f1.iter().filter(|(k, &v)| !v && f2[*k]).count();
    let c = find(&m, "ifsm", "m1", "m2");
    assert_eq!(c["n_paired"], 60);
    assert_eq!((&c["unpaired_a"], &c["unpaired_b"]), (&json!(1), &json!(0)));
    assert_eq!(
        (c["a_only"].as_u64(), c["b_only"].as_u64()),
        (Some(a_only as u64), Some(b_only as u64))
    );
    let want = scorekit::suites::compare::binomial_two_sided(a_only as u64, b_only as u64);
    assert_eq!(c["p_value"].as_f64().unwrap(), want);
    // The leaderboard holds each system's value over all of its items: as the run's own for m3
    // (no empty ending); m1's IFSM has its empty ending as a 61st item, Not-Follow.
    let run_metrics = read_json(&out.join("metrics.json"));
    let board = &m["leaderboard"][2]["metrics"];
    assert_eq!(m["leaderboard"][2]["system"], "m3");
    let g3 = &run_metrics["groups"]["m3"];
    assert_eq!(board["ifsm"]["value"], g3["ifsm"]["value"]);
    assert_eq!(
        board["judge_accuracy"]["value"],
        g3["judge_accuracy"]["value"]
    );
    assert_eq!(
        board["dissimilarity_macro"]["n"],
        g3["dissimilarity_macro"]["n"]
    );
    assert!(
        (board["dissimilarity_macro"]["value"].as_f64().unwrap()
            - g3["dissimilarity_macro"]["value"].as_f64().unwrap())
        .abs()
            < 1e-12
    );
    let m1 = &m["leaderboard"][0]["metrics"]["ifsm"];
    let g1 = &run_metrics["groups"]["m1"]["ifsm"];
    assert_eq!(m1["n"], 61);
    let follows = g1["value"].as_f64().unwrap() * g1["n"].as_f64().unwrap();
    assert!((m1["value"].as_f64().unwrap() - follows / 61.0).abs() < 1e-12);
    // Rows: "a" (only the unknown question, nothing scored), m1, m2, m3.
    let rows = csv_rows(&out.join("table.csv"));
    assert_eq!(rows.len(), 4);
    assert_eq!(
        (rows[0]["model"].as_str(), rows[0]["IFSM"].as_str()),
        ("a", "")
    );
    let rows = &rows[1..];
    assert_eq!(rows[0]["model"], "m1");
    assert_eq!(
        num(&rows[0]["IFSM"]),
        run_metrics["groups"]["m1"]["ifsm"]["value"]
            .as_f64()
            .unwrap()
    );
    assert_eq!(
        num(&rows[0]["judge accuracy_ci_low"]),
        run_metrics["groups"]["m1"]["judge_accuracy"]["ci_low"]
            .as_f64()
            .unwrap()
    );
    let svg = std::fs::read_to_string(out.join("ifsm.svg")).unwrap();
    // Per model: IFSM and the judge's ceiling (two dots), chance marked; plus the legend.
    assert_eq!(svg.matches("<circle").count(), 3 * 2 + 2);
    assert_eq!(svg.matches("class=\"reference\"").count(), 3);
    let dis = find(&m, "dissimilarity_macro", "m1", "m3");
    assert!(dis["test"].as_str().unwrap().starts_with("exact sign test"));
    assert_eq!(dis["n_paired"], board["dissimilarity_macro"]["n"]);

    // Another dataset (the test split): refused, naming the dataset.
    let other = d.join("other");
    let test = test_data("possible-stories:test", "dataset/test.jsonl");
    let gens = d.join("gen.jsonl");
    ok(&[
        "story",
        "--dataset",
        &s(&test),
        "--generations",
        &s(&gens),
        "--skip-judge",
        "--embedder",
        &s(&d.join("embedder")),
        "--out",
        &s(&other),
        "--quiet",
    ]);
    let e = refused_compare(&[&s(&out), &s(&other)], &[], d);
    assert!(
        e.contains("dataset differs") && e.contains("test.jsonl"),
        "{e}"
    );
}

#[test]
fn grasp_several_response_files_make_table_2_pair_in_compare_and_merge() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    let (a, b) = (
        repo().join("tests/data/compare/grasp_a.csv"),
        repo().join("tests/data/compare/grasp_b.csv"),
    );
    let both = d.join("both");
    let base = [
        "grasp",
        "--responses",
        &s(&a),
        &s(&b),
        "--labels",
        "GPT,Llama",
        "--test",
        "level1-binary",
        "--bootstrap",
        "200",
    ];
    let mut args = base.to_vec();
    let both_s = s(&both);
    args.extend(["--out", &both_s]);
    ok(&args);
    // Each model's numbers are those of a single-file run of its file.
    let single = d.join("single-a");
    ok(&[
        "grasp",
        "--responses",
        &s(&a),
        "--test",
        "level1-binary",
        "--bootstrap",
        "200",
        "--out",
        &s(&single),
    ]);
    let one = read_json(&single.join("metrics.json"));
    let m = read_json(&both.join("metrics.json"));
    assert_eq!(m["metrics"]["models"], json!(["GPT", "Llama"]));
    assert_eq!(m["groups"]["GPT"]["accuracy"], one["metrics"]["accuracy"]);
    assert_eq!(m["groups"]["GPT"]["tests"], one["groups"]);
    // Table 2: one row per model, one column per test, chance last.
    let rows = csv_rows(&both.join("table.csv"));
    assert_eq!(rows.len(), 3);
    assert_eq!(
        rows.iter().map(|r| r["model"].as_str()).collect::<Vec<_>>(),
        ["GPT", "Llama", "chance"]
    );
    for test in [
        "Color",
        "Direction",
        "Movement",
        "RelationalPosition",
        "Shape",
    ] {
        assert_eq!(
            num(&rows[0][test]),
            one["groups"][test]["accuracy"]["value"].as_f64().unwrap(),
            "{test}"
        );
        assert_eq!(num(&rows[2][test]), 0.5);
    }
    let r = reference();
    assert_eq!(
        num(&rows[1]["all"]),
        r["grasp"]["b_value"].as_f64().unwrap()
    );
    let svg = std::fs::read_to_string(both.join("accuracy.svg")).unwrap();
    assert!(svg.contains(">GPT<") && svg.contains(">Llama<"));
    let items = std::fs::read_to_string(both.join("items.jsonl")).unwrap();
    assert_eq!(items.lines().count(), 448, "every row of both files");

    // The one run holds two systems: compare pairs them as two single-file runs would.
    let c = compare(&[&both], &[], &d.join("cmp"));
    assert_matches(find(&c, "accuracy", "GPT", "Llama"), &r["grasp"]);

    // Sharded and merged: the same results.
    let mut parts = Vec::new();
    for i in 0..2 {
        let out = s(&d.join(format!("part{i}")));
        let shard = format!("{i}/2");
        let mut a = base.to_vec();
        a.extend(["--shard", &shard, "--out", &out]);
        ok(&a);
        parts.push(out);
    }
    let merged = d.join("merged");
    ok(&[
        "merge",
        "--parts",
        &parts[1],
        &parts[0],
        "--out",
        &s(&merged),
    ]);
    for f in [
        "items.jsonl",
        "table.csv",
        "tables.tex",
        "accuracy.svg",
        "report.md",
    ] {
        assert_eq!(
            std::fs::read(merged.join(f)).unwrap(),
            std::fs::read(both.join(f)).unwrap(),
            "{f}"
        );
    }
    assert_eq!(
        read_json(&merged.join("metrics.json"))["groups"],
        m["groups"]
    );

    let e = refused_compare(&[&parts[0], &s(&both)], &[], d);
    assert!(
        e.contains("one shard (\"0/2\")") && e.contains("scorekit merge"),
        "{e}"
    );

    let e = refused(&[
        "grasp",
        "--responses",
        &s(&a),
        &s(&b),
        "--labels",
        "only-one",
        "--test",
        "level1-binary",
        "--out",
        &s(&d.join("x")),
    ]);
    assert!(
        e.contains("--labels names 1 model(s) but --responses gives 2"),
        "{e}"
    );
    let e = refused(&[
        "grasp",
        "--responses",
        &s(&a),
        &s(&b),
        "--test",
        "level1-binary",
        "--out",
        &s(&d.join("x")),
    ]);
    assert!(
        e.contains("two --responses files are called \"compare\""),
        "{e}"
    );
}

/// Story runs of one judge on one dataset share its dataset calibration (one key): compare
/// writes IFSM's judge-corrected difference beside the raw test, equal to
/// `corrected_difference` of the paired items under the runs' counts; a run without a
/// calibration gets none, and report.md says why in one line.
#[test]
fn story_runs_sharing_a_calibration_get_the_judge_corrected_difference() {
    use scorekit::suites::ifsm_correction::{corrected_difference, CalibrationCounts};
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    let judge = d.join("judge");
    common::tiny_judge::build_judge("bert_mc", &judge, true);
    let dev =
        std::fs::read_to_string(test_data("possible-stories:dev", "dataset/dev.jsonl")).unwrap();
    let gens = |model: &str, ending: &dyn Fn(&Value) -> Value| -> PathBuf {
        let text: String = dev
            .lines()
            .map(|l| serde_json::from_str::<Value>(l).unwrap())
            .map(|q| {
                let row =
                    json!({"question_id": q["question_id"], "ending": ending(&q), "model": model});
                format!("{row}\n")
            })
            .collect();
        write(d, &format!("{model}.jsonl"), text)
    };
    let gold = gens("gold", &|q| {
        q["options"][q["gold_label"].as_u64().unwrap() as usize].clone()
    });
    let wrong = gens("wrong", &|_| json!("The end."));
    let runs = [
        ("g", &gold, &[][..]),
        ("w", &wrong, &[][..]),
        ("n", &wrong, &["--no-calibration"][..]),
    ];
    for (name, gens, extra) in runs {
        let o = common::judge_only(&judge, gens, &d.join(name), extra);
        assert!(o.status.success(), "{}", stderr(&o));
    }
    let m = compare(
        &[&d.join("g"), &d.join("w"), &d.join("n")],
        &["--labels", "G,W,N"],
        &d.join("cmp"),
    );

    let run_g = read_json(&d.join("g/metrics.json"));
    let run_w = read_json(&d.join("w/metrics.json"));
    let key = &run_g["settings"]["calibration"]["dataset"]["key"];
    assert_eq!(key, &run_w["settings"]["calibration"]["dataset"]["key"]);
    let entry = &run_g["groups"]["gold"]["ifsm_corrected"]["dataset"];
    let count = |q: &str, m: &str| {
        (entry[q].as_f64().unwrap() * entry[m].as_f64().unwrap()).round() as usize
    };
    let counts = CalibrationCounts {
        positives: entry["m1"].as_u64().unwrap() as usize,
        positives_counted: count("q1", "m1"),
        negatives: entry["m0"].as_u64().unwrap() as usize,
        negatives_counted: count("q0", "m0"),
    };

    let c = find(&m, "ifsm", "G", "W");
    let (a_only, b_only, n) = (
        c["a_only"].as_u64().unwrap() as usize,
        c["b_only"].as_u64().unwrap() as usize,
        c["n_paired"].as_u64().unwrap() as usize,
    );
    assert_eq!(n, 458);
    let mut diffs = vec![1.0; a_only];
    diffs.extend(vec![-1.0; b_only]);
    diffs.resize(n, 0.0);
    let want = corrected_difference(&diffs, &counts).unwrap();
    assert_eq!(c["corrected"]["dataset"], json!(want));
    assert!(c["corrected"].get("human").is_none());
    assert_eq!(c["corrected"]["dataset"]["J"], entry["J"]);
    // bert_mc's dev calibration (q1 126/458, q0 1069/1374, docs/story.md) is informative, barely.
    assert!(want.informative && want.ci.is_some());
    let raw = c["diff"]["value"].as_f64().unwrap();
    let j = entry["J"].as_f64().unwrap();
    assert_eq!(want.value, Some((raw / j).clamp(-1.0, 1.0)));
    // A pair with the uncalibrated run is not corrected.
    for (a, b) in [("G", "N"), ("W", "N")] {
        assert!(find(&m, "ifsm", a, b).get("corrected").is_none());
    }
    let report = std::fs::read_to_string(d.join("cmp/report.md")).unwrap();
    assert!(
        report.contains("## Judge-corrected IFSM differences"),
        "{report}"
    );
    for pair in ["G and N", "W and N"] {
        let line = format!(
            "No judge-corrected IFSM difference between runs {pair} under the dataset \
             calibration: N carries none."
        );
        assert!(report.contains(&line), "{report}");
    }
    assert!(std::fs::read_to_string(d.join("cmp/tables.tex"))
        .unwrap()
        .contains("judge-corrected"));
}

/// Two judges (`judge eval` runs of two tiny judges on the dev split) compared: accuracy paired
/// by question, the discordant questions counted from the items, and the exact McNemar p-value
/// recomputed here from the binomial.
#[test]
fn two_judges_on_the_same_questions_compare_by_mcnemar() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    let dev = test_data("possible-stories:dev", "dataset/dev.jsonl");
    let mut runs = Vec::new();
    for name in ["bert_mc", "roberta_mc"] {
        let judge = d.join(name);
        common::tiny_judge::build_judge(name, &judge, true);
        let out = d.join(format!("eval-{name}"));
        ok(&[
            "judge",
            "eval",
            "--judge",
            &s(&judge),
            "--dataset",
            &s(&dev),
            "--out",
            &s(&out),
            "--device",
            "cpu",
            "--quiet",
            "--no-calibration",
            "--bootstrap",
            "100",
        ]);
        runs.push(out);
    }
    let m = compare(
        &[&runs[0], &runs[1]],
        &["--labels", "bert,roberta"],
        &d.join("cmp"),
    );
    let c = find(&m, "accuracy", "bert", "roberta");
    let right = |dir: &Path| -> std::collections::BTreeMap<String, bool> {
        std::fs::read_to_string(dir.join("items.jsonl"))
            .unwrap()
            .lines()
            .map(|l| {
                let v: Value = serde_json::from_str(l).unwrap();
                (
                    v["question_id"].as_str().unwrap().to_string(),
                    v["correct"] == true,
                )
            })
            .collect()
    };
    let (a, b) = (right(&runs[0]), right(&runs[1]));
    let a_only = a.iter().filter(|(q, &r)| r && !b[*q]).count();
    let b_only = b.iter().filter(|(q, &r)| r && !a[*q]).count();
    assert_eq!(c["n_paired"], 458);
    assert_eq!(
        (c["a_only"].as_u64(), c["b_only"].as_u64()),
        (Some(a_only as u64), Some(b_only as u64))
    );
    assert!(c["test"].as_str().unwrap().starts_with("exact McNemar"));
    // Two-sided exact binomial on the discordant pairs, p = 1/2.
    let n = a_only + b_only;
    let mut pmf = vec![0.5f64.powi(n as i32); n + 1];
    for i in 1..=n {
        pmf[i] = pmf[i - 1] * (n + 1 - i) as f64 / i as f64;
    }
    let tail: f64 = pmf[..=a_only.min(b_only)].iter().sum();
    let p = if a_only == b_only {
        1.0
    } else {
        (2.0 * tail).min(1.0)
    };
    let got = c["p_value"].as_f64().unwrap();
    assert!((got - p).abs() <= 1e-9 * p.max(1e-300), "{got} vs {p}");
}
