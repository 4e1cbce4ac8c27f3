//! `scorekit grasp` end to end, on results files built from the real GRASP prompts and configs
//! of `grasp:all` (the test data cache; upstream publishes no model responses).

use crate::common;
use common::*;
use serde_json::Value;
use std::path::Path;

/// What a response means, labelled by hand (not by the scorer under test).
#[derive(Clone, Copy, PartialEq, Debug)]
enum A {
    Yes,
    No,
    Invalid,
}

/// Realistic yes/no answers of video-language models, with the answer the spec gives them.
const BINARY_ANSWERS: &[(&str, A)] = &[
    ("Yes", A::Yes),
    ("No.", A::No),
    ("yes, the ball is moving.", A::Yes),
    ("**No**", A::No),
    ("(Yes) The statement is true.", A::Yes),
    ("I cannot tell from the video.", A::Invalid),
    ("", A::Invalid),
    ("“Yes”", A::Invalid),
    ("NA", A::Invalid),
    ("No, the ball is on the left, not the right.", A::No),
    ("\"Yes\"\r\nThe object is on the table.", A::Yes),
    ("Yes-", A::Yes),
    ("Certainly, yes.", A::Invalid),
    ("NO", A::No),
];

/// An upstream GRASP file (`grasp:all` in the test data cache), or a project-made one under
/// `derived/` (committed in tests/data/grasp/: the inventory and rename map worked out for this
/// project from the upstream configs and commit diffs, not upstream files).
fn prompts(rel: &str) -> Value {
    match rel.strip_prefix("derived/") {
        Some(name) => read_json(&repo().join("tests/data/grasp").join(name)),
        None => read_json(&test_data("grasp:all", rel)),
    }
}

/// Fill Python `str.format` `{}` slots in order.
fn fill(template: &str, values: &[&str]) -> String {
    let mut out = template.to_string();
    for v in values {
        out = out.replacen("{}", v, 1);
    }
    out
}

/// Write rows as upstream's `csv.writer` does: minimal quoting, `\r\n` row ends.
fn write_csv(path: &Path, rows: &[[String; 5]]) {
    let mut w = csv::WriterBuilder::new()
        .terminator(csv::Terminator::CRLF)
        .from_path(path)
        .unwrap();
    w.write_record(["scene", "prompt", "video_file", "gt", "response"])
        .unwrap();
    for r in rows {
        w.write_record(r).unwrap();
    }
    w.flush().unwrap();
}

fn copy_config(dir: &Path, name: &str) {
    std::fs::copy(
        test_data("grasp:all", &format!("configs/tests/{name}")),
        dir.join("test_config.yaml"),
    )
    .unwrap();
}

fn ok(args: &[&str]) -> std::process::Output {
    let o = run(args);
    assert!(o.status.success(), "{args:?}\nstderr: {}", stderr(&o));
    o
}

/// Per (test) expected counts: [pos yes, pos no, pos ?, neg yes, neg no, neg ?].
type Expected = std::collections::BTreeMap<String, [usize; 6]>;

fn tally(exp: &mut Expected, test: &str, gold_yes: bool, a: A) {
    let c = exp.entry(test.to_string()).or_default();
    let base = if gold_yes { 0 } else { 3 };
    c[base + a as usize] += 1;
}

fn check_binary_groups(metrics: &Value, exp: &Expected) {
    let groups = metrics["groups"].as_object().unwrap();
    assert_eq!(
        groups.keys().cloned().collect::<Vec<_>>(),
        exp.keys().cloned().collect::<Vec<_>>()
    );
    let (mut correct, mut total) = (0, 0);
    for (name, c) in exp {
        let g = &groups[name];
        let got = [
            &g["pos"]["yes"],
            &g["pos"]["no"],
            &g["pos"]["invalid"],
            &g["neg"]["yes"],
            &g["neg"]["no"],
            &g["neg"]["invalid"],
        ]
        .map(|v| v.as_u64().unwrap() as usize);
        assert_eq!(&got, c, "{name}");
        let (pos, neg) = (c[0] + c[1] + c[2], c[3] + c[4] + c[5]);
        let f = |a: usize, b: usize| if b == 0 { 0.0 } else { a as f64 / b as f64 };
        assert_eq!(
            g["acc_pos"]["value"].as_f64().unwrap(),
            f(c[0], pos),
            "{name}"
        );
        assert_eq!(
            g["acc_neg"]["value"].as_f64().unwrap(),
            f(c[4], neg),
            "{name}"
        );
        assert_eq!(
            g["accuracy"]["value"].as_f64().unwrap(),
            f(c[0] + c[4], pos + neg),
            "{name}"
        );
        assert_eq!(g["accuracy"]["n"].as_u64().unwrap() as usize, pos + neg);
        assert_eq!(g["invalid"].as_u64().unwrap() as usize, c[2] + c[5]);
        assert_eq!(g["chance"].as_f64().unwrap(), 0.5);
        correct += c[0] + c[4];
        total += pos + neg;
    }
    let acc = &metrics["metrics"]["accuracy"];
    assert_eq!(
        acc["value"].as_f64().unwrap(),
        correct as f64 / total as f64
    );
    assert_eq!(acc["n"].as_u64().unwrap() as usize, total);
    assert!(acc["ci_low"].as_f64().unwrap() <= acc["value"].as_f64().unwrap());
    assert!(acc["ci_high"].as_f64().unwrap() >= acc["value"].as_f64().unwrap());
}

fn items(dir: &Path) -> Vec<Value> {
    std::fs::read_to_string(dir.join("items.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// Level 1 binary in cot mode: two turns, test type from the real config beside the CSV.
#[test]
fn level1_binary_cot_from_upstream_config() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let level1 = prompts("data/prompts/level1.json");
    let inventory = prompts("derived/inventory.json");
    let ordering = ["red ball", "blue cube", "green ball", "black cube"];
    let mut rows = Vec::new();
    let mut exp = Expected::new();
    let mut k = 0;
    for (scene, p) in level1.as_object().unwrap() {
        let template = p["binary"].as_str().unwrap();
        let dirs = inventory["level1"][scene]["scene_dirs"]
            .as_object()
            .unwrap();
        for (folder, label) in dirs {
            for video in 0..3 {
                let path = format!("data/videos/level1/{folder}/{video:03}.mp4,");
                // True and false statement, as Level1Binary builds them.
                let (truth, lie) = if scene.ends_with("ObjectOrdering") {
                    let n = template.matches("{}").count();
                    let objs = &ordering[..n];
                    let rev: Vec<&str> = objs.iter().rev().copied().collect();
                    (fill(template, objs), fill(template, &rev))
                } else {
                    let label = label.as_str().unwrap();
                    let other = dirs
                        .values()
                        .map(|v| v.as_str().unwrap())
                        .find(|v| *v != label)
                        .unwrap();
                    (fill(template, &[label]), fill(template, &[other]))
                };
                for (statement, gold) in [(truth, "yes"), (lie, "no")] {
                    let (answer, a) = BINARY_ANSWERS[k % BINARY_ANSWERS.len()];
                    k += 1;
                    rows.push([
                        scene.clone(),
                        format!("Describe the video step by step.<SEP>{statement}"),
                        path.clone(),
                        gold.to_string(),
                        format!("The video shows a ball, yes.<SEP>{answer}"),
                    ]);
                    tally(&mut exp, scene, gold == "yes", a);
                }
            }
        }
    }
    let csv = dir.join("results.csv");
    write_csv(&csv, &rows);
    copy_config(dir, "level1_binary_cot.yaml");
    let out = dir.join("out");
    let o = ok(&[
        "grasp",
        "--responses",
        csv.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
        "--bootstrap",
        "200",
    ]);
    let m = read_json(&out.join("metrics.json"));
    assert_eq!(m["suite"], "grasp");
    assert_eq!(m["settings"]["test"], "level1-binary");
    assert_eq!(m["settings"]["mode"], "cot");
    assert_eq!(m["settings"]["bootstrap"], 200);
    assert_eq!(m["settings"]["pairwise"], false);
    assert_eq!(
        m["inputs"].as_array().unwrap().len(),
        2,
        "csv and config hashed"
    );
    check_binary_groups(&m, &exp);
    assert_eq!(exp.len(), 8, "all eight Level 1 tests");

    let its = items(&out);
    assert_eq!(its.len(), rows.len());
    for (i, it) in its.iter().enumerate() {
        assert_eq!(it["row"], i + 1);
        assert_eq!(it["scene"], rows[i][0].as_str());
        assert_eq!(it["gt"], rows[i][3].as_str());
        let a = BINARY_ANSWERS[i % BINARY_ANSWERS.len()].1;
        let parsed = ["yes", "no", "invalid"][a as usize];
        assert_eq!(it["parsed"], parsed, "row {}", i + 1);
        let verdict = match (a, rows[i][3].as_str()) {
            (A::Invalid, _) => "invalid",
            (A::Yes, "yes") | (A::No, "no") => "correct",
            _ => "false",
        };
        assert_eq!(it["verdict"], verdict, "row {}", i + 1);
    }
    let table = stdout(&o);
    assert!(table.contains("| Acc (comb)"), "{table}");
    assert!(table.contains("| FourObjectOrdering (neg.)"), "{table}");
    let report = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(
        report.contains("mode cot") && report.contains("| Color (pos.)"),
        "{report}"
    );

    // Same seed, same numbers; --force is needed to overwrite.
    let o = run(&[
        "grasp",
        "--responses",
        csv.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("--force"), "{}", stderr(&o));
    let o = ok(&[
        "grasp",
        "--responses",
        csv.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
        "--bootstrap",
        "200",
        "--force",
        "--json",
    ]);
    let printed: Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(printed["metrics"], m["metrics"]);
    assert_eq!(printed["groups"], m["groups"]);
}

/// Open-ended Level 1: labels from the scene folders, prompts from level1.json.
#[test]
fn level1_open_combined_accuracy_is_total_correct_over_total_rows() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let level1 = prompts("data/prompts/level1.json");
    let inventory = prompts("derived/inventory.json");
    // Per scene: a correct answer per label, plus a few false / invalid ones.
    let answer = |scene: &str, label: &str, i: usize| -> (String, &'static str) {
        match (scene, i % 5) {
            ("Shape", 0) if label == "cube" => ("It looks like a box.".into(), "correct"),
            ("Shape", 0) => ("A round sphere.".into(), "correct"),
            ("Direction", 0) if label == "left" => {
                ("The ball rolls from right to the left.".into(), "correct")
            }
            ("Direction", 0) if label == "forward" => ("It rolls upwards!".into(), "correct"),
            (_, 0 | 1) => (format!("**{}**", label.to_uppercase()), "correct"),
            (_, 2) => ("I am not sure.".into(), "invalid"),
            ("Color", 3) => (
                if label == "red" { "Green." } else { "Red." }.into(),
                "false",
            ),
            (_, 3) => ("“left”".into(), "invalid"),
            _ => ("NaN".into(), "invalid"),
        }
    };
    let mut rows = Vec::new();
    let mut verdicts = Vec::new();
    let mut per_scene: std::collections::BTreeMap<String, (usize, usize)> = Default::default();
    for (scene, p) in level1.as_object().unwrap() {
        let Some(prompt) = p.get("open").and_then(Value::as_str) else {
            continue;
        };
        let dirs = inventory["level1"][scene]["scene_dirs"]
            .as_object()
            .unwrap();
        // Unequal label counts: the first label gets 7 videos, the others 3, so upstream's
        // printed Acc(comb) (Σ correct / rows of one label) is visibly wrong.
        for (li, (folder, label)) in dirs.iter().enumerate() {
            let label = label.as_str().unwrap();
            for video in 0..(if li == 0 { 7 } else { 3 }) {
                let (resp, verdict) = answer(scene, label, video);
                rows.push([
                    scene.clone(),
                    prompt.to_string(),
                    format!("data/videos/level1/{folder}/{video:03}.mp4"),
                    label.to_string(),
                    resp,
                ]);
                verdicts.push(verdict);
                let e = per_scene.entry(scene.clone()).or_default();
                e.0 += (verdict == "correct") as usize;
                e.1 += 1;
            }
        }
    }
    let csv = dir.join("results.csv");
    write_csv(&csv, &rows);
    copy_config(dir, "level1_open.yaml");
    let out = dir.join("out");
    let o = ok(&[
        "grasp",
        "--responses",
        csv.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]);
    let m = read_json(&out.join("metrics.json"));
    assert_eq!(m["settings"]["test"], "level1-open");
    assert_eq!(m["settings"]["scorer"], "open");
    let groups = m["groups"].as_object().unwrap();
    assert_eq!(
        groups.keys().collect::<Vec<_>>(),
        ["Color", "Direction", "RelationalPosition", "Shape"]
    );
    for (scene, (correct, n)) in &per_scene {
        let g = &groups[scene];
        assert_eq!(
            g["accuracy"]["value"].as_f64().unwrap(),
            *correct as f64 / *n as f64
        );
        assert_eq!(g["n"].as_u64().unwrap() as usize, *n);
    }
    assert_eq!(groups["Color"]["chance"], 0.25);
    assert_eq!(groups["Shape"]["chance"], 0.5);
    assert_eq!(groups["Color"]["labels"]["red"]["false"], 1);
    assert_eq!(groups["Color"]["labels"]["red"]["n"], 7);
    let total_correct: usize = per_scene.values().map(|v| v.0).sum();
    assert_eq!(
        m["metrics"]["accuracy"]["value"].as_f64().unwrap(),
        total_correct as f64 / rows.len() as f64
    );
    let its = items(&out);
    for (i, it) in its.iter().enumerate() {
        assert_eq!(it["verdict"], verdicts[i], "row {}: {:?}", i + 1, rows[i]);
        assert!(it["parsed"].is_array());
    }
    assert!(stdout(&o).contains("(comb)"));
}

/// Level 2 with --pairwise: P_/IP_ videos of every test in level2.json, paired by video index.
#[test]
fn level2_per_video_and_pairwise() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let level2 = prompts("data/prompts/level2.json");
    let mut rows = Vec::new();
    let mut exp = Expected::new();
    let (mut pairs, mut both) = (0, 0);
    let mut k = 0;
    for (test, prompt) in level2.as_object().unwrap() {
        for video in 0..4 {
            let mut right = 0;
            // IP first for odd videos: pairing must not depend on row order.
            let order = if video % 2 == 0 {
                ["P", "IP"]
            } else {
                ["IP", "P"]
            };
            for prefix in order {
                let scene = format!("{prefix}_{test}");
                let gold_yes = prefix == "P";
                let (resp, a) = BINARY_ANSWERS[k % BINARY_ANSWERS.len()];
                k += 1;
                rows.push([
                    scene.clone(),
                    prompt.as_str().unwrap().to_string(),
                    format!("data/videos/level2/{scene}/{video:03}.mp4"),
                    if gold_yes { "yes" } else { "no" }.to_string(),
                    resp.to_string(),
                ]);
                tally(&mut exp, test, gold_yes, a);
                right += ((a == A::Yes) == gold_yes && a != A::Invalid) as usize;
            }
            pairs += 1;
            both += (right == 2) as usize;
        }
    }
    let csv = dir.join("results.csv");
    write_csv(&csv, &rows);
    copy_config(dir, "level2.yaml");
    let out = dir.join("out");
    let o = ok(&[
        "grasp",
        "--responses",
        csv.to_str().unwrap(),
        "--pairwise",
        "--out",
        out.to_str().unwrap(),
    ]);
    let m = read_json(&out.join("metrics.json"));
    assert_eq!(exp.len(), 16);
    check_binary_groups(&m, &exp);
    assert_eq!(m["settings"]["pairwise"], true);
    assert_eq!(m["metrics"]["gt_mismatches"], 0);
    let p = &m["metrics"]["pairwise"];
    assert!(p["note"]
        .as_str()
        .unwrap()
        .contains("NOT the GRASP paper's metric"));
    assert_eq!(p["pairs"], pairs);
    assert_eq!(p["both_correct"], both);
    assert_eq!(
        p["paired_accuracy"]["value"].as_f64().unwrap(),
        both as f64 / pairs as f64
    );
    assert!(p["unpaired_rows"].as_array().unwrap().is_empty());
    assert_eq!(m["groups"]["Gravity"]["paired_accuracy"]["n"], 4);
    assert!(stdout(&o).contains("NOT the GRASP paper's metric"));
    assert_eq!(items(&out)[0]["pair_index"], "000");
}

/// Results written before upstream fixed the Level 2 gold (10ac5f2) have gt=no everywhere:
/// scored as given, every contradicting row reported.
#[test]
fn level2_old_gold_is_scored_as_given_and_reported() {
    let tmp = tempfile::tempdir().unwrap();
    let csv = write(
        tmp.path(),
        "results.csv",
        "scene,prompt,video_file,gt,response\r\n\
         P_Gravity,q,data/videos/level2/P_Gravity/000.mp4,no,No\r\n\
         IP_Gravity,q,data/videos/level2/IP_Gravity/000.mp4,no,No\r\n\
         P_Collision,q,data/videos/level2/P_Collision/000.mp4,no,Yes\r\n",
    );
    let out = tmp.path().join("out");
    let o = ok(&[
        "grasp",
        "--responses",
        csv.to_str().unwrap(),
        "--test",
        "level2",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(stderr(&o).contains("rows 1, 3"), "{}", stderr(&o));
    let m = read_json(&out.join("metrics.json"));
    assert_eq!(m["metrics"]["gt_mismatch_rows"], serde_json::json!([1, 3]));
    assert_eq!(
        m["metrics"]["accuracy"]["value"].as_f64().unwrap(),
        2.0 / 3.0
    );
    assert_eq!(m["settings"]["test_source"], "--test");
    let its = items(&out);
    assert_eq!(its[0]["gt_mismatch"], true);
    assert!(its[1].get("gt_mismatch").is_none());
}

/// Level 2 text variant from the real scene descriptions, as JSONL.
#[test]
fn level2_text_from_jsonl() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let desc = prompts("data/prompts/level2_scene_descriptions.json");
    let mut lines = String::new();
    let mut correct = 0;
    let n = desc.as_object().unwrap().len();
    for (i, (scene, prompt)) in desc.as_object().unwrap().iter().enumerate() {
        let gt = if scene.starts_with("P_") { "yes" } else { "no" };
        // A model that always says yes, once without any answer (null).
        let response = if i == 3 { Value::Null } else { "Yes.".into() };
        correct += (gt == "yes" && i != 3) as usize;
        lines.push_str(
            &serde_json::json!({"scene": scene, "prompt": prompt, "video_file": "",
                                "gt": gt, "response": response})
            .to_string(),
        );
        lines.push('\n');
    }
    let jsonl = write(dir, "results.jsonl", lines);
    copy_config(dir, "level2_text.yaml");
    let out = dir.join("out");
    ok(&[
        "grasp",
        "--responses",
        jsonl.to_str().unwrap(),
        "--pairwise",
        "--out",
        out.to_str().unwrap(),
    ]);
    let m = read_json(&out.join("metrics.json"));
    assert_eq!(m["settings"]["test"], "level2-text");
    let groups = m["groups"].as_object().unwrap();
    assert_eq!(groups.len(), 14);
    assert!(groups.contains_key("SupportGravity") && !groups.contains_key("Collision"));
    assert_eq!(
        m["metrics"]["accuracy"]["value"].as_f64().unwrap(),
        correct as f64 / n as f64
    );
    assert_eq!(m["metrics"]["invalid"], 1);
    assert_eq!(m["metrics"]["pairwise"]["pairs"], 14);
    assert_eq!(groups["Gravity"]["constant_answer"], 0.5);
}

fn fails(args: &[&str], code: i32, needle: &str) {
    let o = run(args);
    assert_eq!(o.status.code(), Some(code), "{args:?}: {}", stderr(&o));
    assert!(stderr(&o).contains(needle), "{args:?}: {}", stderr(&o));
}

/// `--test` wins over a `test_config.yaml` beside the responses that says otherwise (here an
/// unknown test, refused without the flag: tests/bad-input/cases.tsv, with the other bad GRASP
/// files that name file:line:field).
#[test]
fn the_test_flag_wins_over_the_config() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    let csv = write(
        d,
        "results.csv",
        "scene,prompt,video_file,gt,response\nColor,q,v,yes,Yes\n",
    );
    write(d, "test_config.yaml", "test_name: level3\nmode: standard\n");
    let out = d.join("out");
    let o = ok(&[
        "grasp",
        "--responses",
        csv.to_str().unwrap(),
        "--test",
        "level1-binary",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(stdout(&o).contains("| Color"));
}

/// The built-in scene tables are upstream's: for each test config, the scene names are the keys
/// of its prompt file (Level 1 open: the keys with an `open` prompt; Level 2: `P_`/`IP_` of each
/// key), the expected rows are the inventory's counts, and the renames are the rename map's.
#[test]
fn known_scene_names_and_expected_rows_come_from_the_upstream_configs() {
    use scorekit::suites::grasp::{names, TestKind};
    let inventory = prompts("derived/inventory.json");
    let rename_map = prompts("derived/rename_map.json");
    for cfg in std::fs::read_dir(test_data("grasp:all", "configs/tests")).unwrap() {
        let text = std::fs::read_to_string(cfg.unwrap().path()).unwrap();
        let field = |k: &str| -> String {
            let line = text.lines().find(|l| l.starts_with(k)).unwrap();
            line.split_once(':').unwrap().1.trim().to_string()
        };
        let kind = TestKind::from_name(&field("test_name")).unwrap();
        let file = prompts(field("prompt_file").trim_start_matches("./"));
        let keys: Vec<&String> = file.as_object().unwrap().keys().collect();
        let want: std::collections::BTreeMap<String, usize> = match kind {
            TestKind::Level1Binary => keys
                .iter()
                .map(|k| {
                    let n = inventory["level1"][k.as_str()]["binary_instances"]
                        .as_u64()
                        .unwrap();
                    (k.to_string(), n as usize)
                })
                .collect(),
            TestKind::Level1Open => keys
                .iter()
                .filter(|k| file[k.as_str()].get("open").is_some())
                .map(|k| {
                    let n = inventory["level1"][k.as_str()]["open_instances"]
                        .as_u64()
                        .unwrap();
                    (k.to_string(), n as usize)
                })
                .collect(),
            TestKind::Level2 => keys
                .iter()
                .flat_map(|k| {
                    let n = inventory["level2"][k.as_str()]["videos"].as_u64().unwrap() / 2;
                    [
                        (format!("P_{k}"), n as usize),
                        (format!("IP_{k}"), n as usize),
                    ]
                })
                .collect(),
            TestKind::Level2Text => keys.iter().map(|k| (k.to_string(), 1)).collect(),
        };
        assert_eq!(names::known_scenes(kind), want, "{}", kind.name());
    }
    let renames = |key: &str, prefixed: bool| -> std::collections::BTreeMap<String, String> {
        rename_map[key]
            .as_object()
            .unwrap()
            .iter()
            .flat_map(|(old, new)| {
                let new = new.as_str().unwrap();
                if prefixed {
                    vec![(old.clone(), new.to_string())]
                } else {
                    ["P", "IP"]
                        .iter()
                        .map(|p| (format!("{p}_{old}"), format!("{p}_{new}")))
                        .collect()
                }
            })
            .collect()
    };
    assert_eq!(
        names::renames(TestKind::Level2),
        renames("level2_prompt_keys_old_to_new", false)
    );
    assert_eq!(
        names::renames(TestKind::Level2Text),
        renames("level2_scene_description_keys_old_to_new", true)
    );
}

/// A misspelt scene stops the run naming file:line (it would split a group); with
/// `--allow-unknown-scenes` it is its own group. Old upstream names are mapped and reported, and
/// the report shows the rows each scene should have and has.
#[test]
fn scene_names_are_checked_mapped_and_counted() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let level2 = prompts("data/prompts/level2.json");
    let prompt = level2["Gravity"].as_str().unwrap().to_string();
    let row = |scene: &str, video: usize, answer: &str| -> [String; 5] {
        let gt = if scene.starts_with("P_") { "yes" } else { "no" };
        [
            scene.to_string(),
            prompt.clone(),
            format!("data/videos/level2/{scene}/{video:03}.mp4"),
            gt.to_string(),
            answer.to_string(),
        ]
    };
    let rows = vec![
        row("P_Gravity", 0, "Yes"),
        row("IP_Gravity", 0, "No"),
        row("P_Continuity2", 0, "Yes"),
        row("IP_Continuity", 0, "Yes"),
        row("P_Gravty", 1, "Yes"),
    ];
    let csv = dir.join("results.csv");
    write_csv(&csv, &rows);
    let out = dir.join("out");
    let base = [
        "grasp",
        "--responses",
        csv.to_str().unwrap(),
        "--test",
        "level2",
        "--out",
        out.to_str().unwrap(),
    ];
    // Header on line 1: the 5th data row is line 6.
    fails(
        &base,
        2,
        &format!(
            "{}:6: field \"scene\": \"P_Gravty\" is not a scene of level2; expected one of IP_Collision",
            csv.display()
        ),
    );
    assert!(!out.join("metrics.json").exists());

    let mut args = base.to_vec();
    args.push("--allow-unknown-scenes");
    let o = ok(&args);
    let err = stderr(&o);
    assert!(
        err.contains("P_Continuity2 -> P_Continuity (1 rows)") && err.contains("results.csv:6"),
        "{err}"
    );
    let m = read_json(&out.join("metrics.json"));
    let groups = m["groups"].as_object().unwrap();
    assert_eq!(
        groups.keys().collect::<Vec<_>>(),
        ["Continuity", "Gravity", "Gravty"]
    );
    assert_eq!(groups["Continuity"]["n"], 2);
    assert_eq!(m["settings"]["allow_unknown_scenes"], true);
    assert_eq!(
        m["metrics"]["renamed_scenes"]["P_Continuity2 -> P_Continuity"],
        1
    );
    assert_eq!(m["metrics"]["unknown_scenes"]["P_Gravty"], 1);
    let scenes = &m["metrics"]["scene_rows"];
    assert_eq!(scenes.as_object().unwrap().len(), 33);
    assert_eq!(
        scenes["P_Gravity"],
        serde_json::json!({"expected": 128, "rows": 1})
    );
    assert_eq!(
        scenes["P_Continuity"],
        serde_json::json!({"expected": 128, "rows": 1})
    );
    assert_eq!(
        scenes["P_Collision"],
        serde_json::json!({"expected": 128, "rows": 0})
    );
    assert_eq!(
        scenes["P_Gravty"],
        serde_json::json!({"expected": null, "rows": 1})
    );
    let its = items(&out);
    assert_eq!(its[2]["scene"], "P_Continuity");
    assert_eq!(its[2]["renamed_from"], "P_Continuity2");
    assert_eq!(its[4]["unknown_scene"], true);
    assert!(its[0].get("renamed_from").is_none() && its[0].get("unknown_scene").is_none());
    let report = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(report.contains("## Rows per scene"), "{report}");
    assert!(
        report.contains("| P_Gravty") && report.contains("unknown scene"),
        "{report}"
    );

    // Several --responses files: each is checked as a single file is, the typo named in its file.
    let clean = dir.join("clean.csv");
    write_csv(&clean, &rows[..4]);
    let multi_out = dir.join("multi");
    let multi = [
        "grasp",
        "--responses",
        clean.to_str().unwrap(),
        csv.to_str().unwrap(),
        "--labels",
        "A,B",
        "--test",
        "level2",
        "--out",
        multi_out.to_str().unwrap(),
    ];
    fails(
        &multi,
        2,
        &format!("{}:6: field \"scene\": \"P_Gravty\"", csv.display()),
    );
    assert!(!multi_out.join("metrics.json").exists());
    let mut args = multi.to_vec();
    args.push("--allow-unknown-scenes");
    ok(&args);
    let its = items(&multi_out);
    assert_eq!(its.len(), 9);
    assert_eq!(its[2]["renamed_from"], "P_Continuity2");
    assert_eq!(
        (&its[8]["model"], &its[8]["unknown_scene"]),
        (&serde_json::json!("B"), &serde_json::json!(true))
    );
}

/// The shipped sample responses (16 rows of level1-binary): the run says on stdout and in
/// report.md that it holds a sliver of the test, with the counts; a gold side without any row
/// shows n/a, not 0.0.
#[test]
fn a_run_of_a_few_rows_warns_with_the_counts_and_empty_sides_show_na() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let sample = repo().join("data/grasp/sample-responses.csv");
    let o = ok(&[
        "grasp",
        "--responses",
        sample.to_str().unwrap(),
        "--test",
        "level1-binary",
        "--out",
        out.to_str().unwrap(),
    ]);
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(
        stdout.contains("warning: the responses hold 16 of the 4352 rows this test expects"),
        "{stdout}"
    );
    let report = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(
        report.contains("**Warning**: the responses hold 16 of the 4352 rows"),
        "{report}"
    );
    assert!(
        !report.contains("default  "),
        "a broken line continuation: {report}"
    );

    // Two Color rows, both gold yes: Color (neg.) has no row.
    let csv = dir.path().join("two.csv");
    let prompt = "Is the ball red?";
    std::fs::write(
        &csv,
        format!(
            "scene,prompt,video_file,gt,response\nColor,{prompt},a.mp4,yes,Yes\nColor,{prompt},b.mp4,yes,No\n"
        ),
    )
    .unwrap();
    let o = ok(&[
        "grasp",
        "--responses",
        csv.to_str().unwrap(),
        "--test",
        "level1-binary",
        "--out",
        dir.path().join("two").to_str().unwrap(),
    ]);
    let stdout = String::from_utf8_lossy(&o.stdout);
    let neg = stdout.lines().find(|l| l.contains("Color (neg.)")).unwrap();
    // | Test | Yes | No | ? | Acc | ...: the Acc cell.
    assert_eq!(neg.split('|').nth(5).map(str::trim), Some("n/a"), "{neg}");
}
