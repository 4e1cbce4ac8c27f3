//! `--shard I/N` + `scorekit merge`: for every suite, 3 shards merged give exactly the metrics
//! (intervals included), items and report of a single run; merge refuses parts that do not make
//! one run.

use crate::common;

use common::tiny_judge::story_args;
use common::{read_json, repo, run, stderr, test_data, write};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};

fn ok(args: &[&str]) {
    let o = run(args);
    assert_eq!(o.status.code(), Some(0), "{args:?}: {}", stderr(&o));
}

/// Run `args` unsharded into `dir/all` and as shards 0..3 into `dir/s<i>`, merge into
/// `dir/merged`, and check the merged folder against the single run.
fn single_vs_merged(dir: &Path, args: &[&str], files: &[&str]) {
    let all = dir.join("all");
    let mut a = args.to_vec();
    let all_s = all.to_str().unwrap().to_string();
    a.extend(["--out", &all_s, "--quiet"]);
    ok(&a);
    let mut parts = Vec::new();
    for i in 0..3 {
        let out = dir.join(format!("s{i}")).to_str().unwrap().to_string();
        let shard = format!("{i}/3");
        let mut a = args.to_vec();
        a.extend(["--out", &out, "--shard", &shard, "--quiet"]);
        ok(&a);
        let m = read_json(&Path::new(&out).join("metrics.json"));
        assert_eq!(m["settings"]["shard"], shard.as_str());
        parts.push(out);
    }
    let merged = dir.join("merged");
    let mut m = vec!["merge", "--parts"];
    // Any order of parts.
    m.extend([parts[2].as_str(), parts[0].as_str(), parts[1].as_str()]);
    let merged_s = merged.to_str().unwrap().to_string();
    m.extend(["--out", &merged_s]);
    ok(&m);

    let single = read_json(&all.join("metrics.json"));
    let mut got = read_json(&merged.join("metrics.json"));
    assert_eq!(
        got["settings"]
            .as_object_mut()
            .unwrap()
            .remove("merged_shards"),
        Some(Value::from(3))
    );
    assert!(single["settings"].get("shard").is_none());
    assert_eq!(
        got, single,
        "merged metrics.json differs from the single run"
    );
    // Bit-identical numbers, not only equal after parsing.
    let text = |p: &Path| std::fs::read_to_string(p).unwrap();
    assert_eq!(
        text(&merged.join("metrics.json")).replace(",\n    \"merged_shards\": 3", ""),
        text(&all.join("metrics.json"))
    );
    for f in files {
        if *f == "items.jsonl:verdicts" {
            // Raw model scores depend in their last bits on batch composition (padding); the
            // verdicts and everything the metrics use must agree.
            let strip = |p: &Path| -> Vec<Value> {
                text(&p.join("items.jsonl"))
                    .lines()
                    .map(|l| {
                        let mut v: Value = serde_json::from_str(l).unwrap();
                        let o = v.as_object_mut().unwrap();
                        o.remove("judge_scores");
                        o.remove("judge_gold_scores");
                        o.remove("scores");
                        v
                    })
                    .collect()
            };
            assert_eq!(strip(&merged), strip(&all));
            continue;
        }
        assert_eq!(text(&merged.join(f)), text(&all.join(f)), "{f}");
    }
    // Every item in exactly one shard.
    let lines = |p: &Path| text(&p.join("items.jsonl")).lines().count();
    let total: usize = parts.iter().map(|p| lines(Path::new(p))).sum();
    assert_eq!(total, lines(&all));
    assert!(!merged.join("run.json").exists());
}

#[test]
fn muse_three_shards_merge_to_the_single_run() {
    let dir = tempfile::tempdir().unwrap();
    let q = test_data("muse:queries", "MuSE_Benchmark/queries.json");
    let plans = repo().join("tests/data/muse/hugginggpt.jsonl");
    single_vs_merged(
        dir.path(),
        &[
            "muse",
            "--queries",
            q.to_str().unwrap(),
            "--plans",
            plans.to_str().unwrap(),
            "--bootstrap",
            "300",
            "--seed",
            "5",
        ],
        &[
            "items.jsonl",
            "report.md",
            "tables.tex",
            "table.csv",
            "scores.svg",
        ],
    );
}

/// A Level 2 results.csv: P_/IP_ twins over 4 tests, 12 videos each, mixed answers.
fn grasp_level2(dir: &Path) -> PathBuf {
    let answers = ["yes", "no", "Yes, it is.", "maybe", "No."];
    let mut csv = String::from("scene,prompt,video_file,gt,response\n");
    let mut k = 0;
    for t in ["Gravity", "Continuity", "SolidityContinuity", "Inertia"] {
        for v in 0..12 {
            for (pre, gt) in [("P", "yes"), ("IP", "no")] {
                k += 7;
                csv.push_str(&format!(
                    "{pre}_{t},Is the video plausible?,\"data/videos/level2/{pre}_{t}/{v:03}.mp4,\",{gt},\"ok<SEP>{}\"\n",
                    answers[k % answers.len()]
                ));
            }
        }
    }
    write(dir, "results.csv", csv)
}

#[test]
fn grasp_three_shards_merge_to_the_single_run_with_pairs() {
    let dir = tempfile::tempdir().unwrap();
    let csv = grasp_level2(dir.path());
    single_vs_merged(
        dir.path(),
        &[
            "grasp",
            "--responses",
            csv.to_str().unwrap(),
            "--test",
            "level2",
            "--pairwise",
            "--bootstrap",
            "300",
        ],
        &[
            "items.jsonl",
            "report.md",
            "tables.tex",
            "table.csv",
            "accuracy.svg",
        ],
    );
}

#[test]
fn mint_three_shards_merge_to_the_single_run() {
    let dir = tempfile::tempdir().unwrap();
    let outputs = test_data("mint:headline", "data/outputs");
    single_vs_merged(
        dir.path(),
        &[
            "mint",
            "--outputs",
            outputs.to_str().unwrap(),
            "--recheck",
            "--bootstrap",
            "200",
        ],
        &[
            "items.jsonl",
            "sr.csv",
            "tables.md",
            "tables.tex",
            "sr_curves.svg",
            "recheck.csv",
        ],
    );
}

/// Three muse shards in `dir/s<i>` (bootstrap `b`).
fn muse_shards(dir: &Path, b: &str, plans: &Path) -> Vec<String> {
    let q = test_data("muse:queries", "MuSE_Benchmark/queries.json");
    (0..3)
        .map(|i| {
            let out = dir.join(format!("s{i}-{b}")).to_str().unwrap().to_string();
            ok(&[
                "muse",
                "--queries",
                q.to_str().unwrap(),
                "--plans",
                plans.to_str().unwrap(),
                "--bootstrap",
                b,
                "--shard",
                &format!("{i}/3"),
                "--out",
                &out,
                "--quiet",
            ]);
            out
        })
        .collect()
}

fn merge_err(parts: &[&str], out: &Path) -> String {
    let mut a = vec!["merge", "--parts"];
    a.extend_from_slice(parts);
    let o = out.to_str().unwrap().to_string();
    a.extend(["--out", &o]);
    let r = run(&a);
    assert_eq!(r.status.code(), Some(2), "{a:?}: {}", stderr(&r));
    assert!(!out.join("metrics.json").exists());
    stderr(&r)
}

#[test]
fn merge_names_missing_and_duplicate_shards_and_refuses_other_runs() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let plans = repo().join("tests/data/muse/hugginggpt.jsonl");
    let p = muse_shards(d, "50", &plans);
    let out = d.join("merged");

    let e = merge_err(&[&p[0], &p[2]], &out);
    assert!(e.contains("missing shard(s) 1/3"), "{e}");
    let e = merge_err(&[&p[0], &p[1], &p[1], &p[2]], &out);
    assert!(e.contains("duplicate shard 1/3"), "{e}");

    // Other settings (bootstrap resamples).
    let q = muse_shards(d, "60", &plans);
    let e = merge_err(&[&p[0], &q[1], &p[2]], &out);
    assert!(
        e.contains("different settings") && e.contains("bootstrap: 50 vs 60"),
        "{e}"
    );

    // Other inputs (a plans file with one line less).
    let text = std::fs::read_to_string(&plans).unwrap();
    let fewer: Vec<&str> = text.lines().skip(1).collect();
    let other = write(d, "fewer.jsonl", fewer.join("\n") + "\n");
    std::fs::create_dir_all(d.join("x")).unwrap();
    let r = muse_shards(&d.join("x"), "50", &other);
    let e = merge_err(&[&p[0], &p[1], &r[2]], &out);
    assert!(e.contains("different inputs"), "{e}");

    // Other suite.
    let csv = grasp_level2(d);
    let g = d.join("g").to_str().unwrap().to_string();
    ok(&[
        "grasp",
        "--responses",
        csv.to_str().unwrap(),
        "--test",
        "level2",
        "--shard",
        "1/3",
        "--out",
        &g,
        "--quiet",
    ]);
    let e = merge_err(&[&p[0], &g, &p[2]], &out);
    assert!(e.contains("different suites"), "{e}");

    // Another split.
    let q = test_data("muse:queries", "MuSE_Benchmark/queries.json");
    let half = d.join("half").to_str().unwrap().to_string();
    ok(&[
        "muse",
        "--queries",
        q.to_str().unwrap(),
        "--plans",
        plans.to_str().unwrap(),
        "--bootstrap",
        "50",
        "--shard",
        "0/2",
        "--out",
        &half,
        "--quiet",
    ]);
    let e = merge_err(&[&half, &p[1], &p[2]], &out);
    assert!(e.contains("split the input the same way"), "{e}");

    // A folder that is not a finished run.
    std::fs::create_dir_all(d.join("empty")).unwrap();
    let e = merge_err(&[&p[0], d.join("empty").to_str().unwrap(), &p[2]], &out);
    assert!(e.contains("no metrics.json"), "{e}");
    std::fs::write(d.join("empty/run.json"), "{}").unwrap();
    let e = merge_err(&[&p[0], d.join("empty").to_str().unwrap(), &p[2]], &out);
    assert!(e.contains("unfinished run"), "{e}");

    // Settings are read back typed: a key with a typo, or one missing, in every part (so the
    // parts agree) is refused naming the file and the key, not merged into other numbers.
    for (edit, expected) in [
        (
            ("name_mapping", Some("name_maping")),
            "unknown field `name_maping`",
        ),
        (("flow", None), "missing field `flow`"),
        (("bootstrap", None), "missing field `bootstrap`"),
    ] {
        let edited: Vec<String> = p
            .iter()
            .enumerate()
            .map(|(i, part)| {
                let to = d.join(format!("edited-{i}"));
                std::fs::create_dir_all(&to).unwrap();
                for f in std::fs::read_dir(part).unwrap() {
                    let f = f.unwrap().path();
                    std::fs::copy(&f, to.join(f.file_name().unwrap())).unwrap();
                }
                let m = to.join("metrics.json");
                let mut doc: serde_json::Value =
                    serde_json::from_str(&std::fs::read_to_string(&m).unwrap()).unwrap();
                let settings = doc["settings"].as_object_mut().unwrap();
                let v = settings.remove(edit.0).unwrap();
                if let Some(renamed) = edit.1 {
                    settings.insert(renamed.into(), v);
                }
                std::fs::write(&m, serde_json::to_string_pretty(&doc).unwrap()).unwrap();
                to.to_str().unwrap().to_string()
            })
            .collect();
        let e = merge_err(&[&edited[0], &edited[1], &edited[2]], &out);
        assert!(
            e.contains("edited-0/metrics.json") && e.contains("settings") && e.contains(expected),
            "{e}"
        );
    }

    // Finally the good merge; a second one refuses to overwrite it without --force.
    ok(&[
        "merge",
        "--parts",
        &p[0],
        &p[1],
        &p[2],
        "--out",
        out.to_str().unwrap(),
    ]);
    let r = run(&[
        "merge",
        "--parts",
        &p[0],
        &p[1],
        &p[2],
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(r.status.code(), Some(2));
    assert!(stderr(&r).contains("--force"), "{}", stderr(&r));
}

#[test]
fn bad_shard_flags_are_usage_errors() {
    let dir = tempfile::tempdir().unwrap();
    let q = test_data("muse:queries", "MuSE_Benchmark/queries.json");
    let plans = repo().join("tests/data/muse/hugginggpt.jsonl");
    for bad in ["3/3", "1", "x/2", "0/0"] {
        let r = run(&[
            "muse",
            "--queries",
            q.to_str().unwrap(),
            "--plans",
            plans.to_str().unwrap(),
            "--shard",
            bad,
            "--out",
            dir.path().join("o").to_str().unwrap(),
        ]);
        assert_eq!(r.status.code(), Some(2), "{bad}");
        assert!(stderr(&r).contains("expected I/N"), "{}", stderr(&r));
    }
}

#[test]
fn embed_shards_split_the_sentences_by_id() {
    use crate::common::fixture::{self, BertFixture};
    let dir = tempfile::tempdir().unwrap();
    let model = dir.path().join("tiny");
    fixture::write_bert_fixture(&model, &BertFixture::tiny(fixture::tiny_vocab(), 7)).unwrap();
    let mut input = String::new();
    for i in 0..40 {
        input.push_str(&format!(
            "{{\"id\": \"s{i}\", \"text\": \"the cat sat {i}\"}}\n"
        ));
    }
    let input = write(dir.path(), "in.jsonl", input);
    let mut seen = Vec::new();
    for i in 0..3 {
        let out = dir.path().join(format!("e{i}.jsonl"));
        ok(&[
            "embed",
            "--input",
            input.to_str().unwrap(),
            "--output",
            out.to_str().unwrap(),
            "--model",
            model.to_str().unwrap(),
            "--shard",
            &format!("{i}/3"),
            "--quiet",
        ]);
        let meta = read_json(&PathBuf::from(format!("{}.meta.json", out.display())));
        assert_eq!(meta["shard"], format!("{i}/3").as_str());
        for l in std::fs::read_to_string(&out).unwrap().lines() {
            let v: Value = serde_json::from_str(l).unwrap();
            seen.push(v["id"].as_str().unwrap().to_string());
        }
    }
    seen.sort();
    let mut want: Vec<String> = (0..40).map(|i| format!("s{i}")).collect();
    want.sort();
    assert_eq!(seen, want);
}

// ---- story: tiny judge and embedder, as tests/story.rs builds them ----

#[test]
fn story_three_shards_merge_to_the_single_run() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // One ending from each of two models for the first 30 dev questions (options as endings),
    // plus an unknown question.
    let args = story_args(d, 30, &["a", "b"]);
    // An empty ending (Not-Follow) and a model with one ending, absent from most shards: its
    // coverage and first missing ids must come out of the merge as from the single run.
    let dev =
        std::fs::read_to_string(test_data("possible-stories:dev", "dataset/dev.jsonl")).unwrap();
    let q = |k: usize| -> Value { serde_json::from_str(dev.lines().nth(k).unwrap()).unwrap() };
    let mut extra = String::new();
    extra.push_str(&format!(
        "{}\n",
        json!({"question_id": q(31)["question_id"], "ending": "  ", "model": "a"})
    ));
    extra.push_str(&format!(
        "{}\n",
        json!({"question_id": q(200)["question_id"], "ending": "The end.", "model": "c"})
    ));
    let gen = d.join("gen.jsonl");
    let mut text = std::fs::read_to_string(&gen).unwrap();
    text.push_str(&extra);
    std::fs::write(&gen, text).unwrap();
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    single_vs_merged(
        d,
        &args,
        &[
            "items.jsonl:verdicts",
            "report.md",
            "tables.tex",
            "table.csv",
            "ifsm.svg",
        ],
    );
    let single = read_json(&d.join("all/metrics.json"));
    let g = &single["groups"];
    assert_eq!(g["a"]["answered"], 31);
    assert_eq!(g["a"]["empty_ending"], 1);
    assert_eq!(g["a"]["ifsm"]["n"], 31);
    assert_eq!(g["c"]["answered"], 1);
    assert_eq!(g["c"]["missing"], 457);
    assert_eq!(g["c"]["missing_ids"].as_array().unwrap().len(), 10);
    assert_eq!(single["metrics"]["questions_in_scope"], 458);
    // Each shard's coverage is that of its own questions.
    let scopes: u64 = (0..3)
        .map(|i| {
            let m = read_json(&d.join(format!("s{i}/metrics.json")));
            let n = m["metrics"]["questions_in_scope"].as_u64().unwrap();
            assert!(n < 458);
            n
        })
        .sum();
    assert_eq!(scopes, 458);
}

/// `judge eval` with its dataset calibration, in 3 shards (by passage), merged: the single run's
/// metrics (accuracy, consistency per passage, picks, the judge's resolution), verdicts, report
/// and calibration.jsonl.
#[test]
fn judge_eval_three_shards_merge_to_the_single_run() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let judge = d.join("judge");
    common::tiny_judge::build_judge("bert_mc", &judge, true);
    let dev = test_data("possible-stories:dev", "dataset/dev.jsonl");
    let (judge, dev) = (judge.display().to_string(), dev.display().to_string());
    let args = [
        "judge",
        "eval",
        "--judge",
        &judge,
        "--dataset",
        &dev,
        "--device",
        "cpu",
        "--bootstrap",
        "200",
    ];
    single_vs_merged(
        d,
        &args,
        &["items.jsonl:verdicts", "report.md", "calibration.jsonl"],
    );
    let single = read_json(&d.join("all/metrics.json"));
    assert_eq!(single["suite"], "judge-eval");
    assert_eq!(single["metrics"]["questions"], 458);
    let resolution = &single["metrics"]["judge_resolution"]["dataset"];
    assert_eq!(resolution["m1"], 458, "{resolution}");
}
