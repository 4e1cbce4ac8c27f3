//! `scorekit muse` end to end on the real MuSE queries, with plans written for real queries.

use crate::common;

use common::{read_json, repo, run, stderr, stdout, test_data, write};
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

fn queries() -> PathBuf {
    test_data("muse:queries", "MuSE_Benchmark/queries.json")
}

fn fixture(name: &str) -> String {
    repo()
        .join("tests/data/muse")
        .join(name)
        .display()
        .to_string()
}

/// Run muse on a plans file (plus extra flags); returns (exit code, items by idx, metrics, stderr).
fn muse(dir: &Path, plans: &str, extra: &[&str]) -> (i32, BTreeMap<i64, Value>, Value, String) {
    let out = dir.join("out");
    let q = queries().display().to_string();
    let o = out.display().to_string();
    let mut args = vec![
        "muse",
        "--queries",
        &q,
        "--plans",
        plans,
        "--out",
        &o,
        "--force",
    ];
    args.extend_from_slice(extra);
    args.extend_from_slice(&["--bootstrap", "100"]);
    let r = run(&args);
    let code = r.status.code().unwrap();
    if code != 0 {
        return (code, BTreeMap::new(), Value::Null, stderr(&r));
    }
    let items = std::fs::read_to_string(out.join("items.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .map(|v| (v["idx"].as_i64().unwrap(), v))
        .collect();
    (
        code,
        items,
        read_json(&out.join("metrics.json")),
        stderr(&r),
    )
}

/// (TS, FoT, O) of one item.
fn verdict(items: &BTreeMap<i64, Value>, idx: i64) -> (bool, bool, bool) {
    let i = &items[&idx];
    (
        i["ts"].as_bool().unwrap(),
        i["fot"].as_bool().unwrap(),
        i["o"].as_bool().unwrap(),
    )
}

fn rate(m: &Value, k: &str) -> f64 {
    m["metrics"][k]["value"].as_f64().unwrap()
}

/// A scorekit-format plan for every query that follows the shipped reviewed flow exactly.
fn gold_plans() -> Vec<Value> {
    let qs: Value = read_json(&queries());
    let flow: Value = read_json(&repo().join("data/muse/flow.reviewed.json"));
    let edges: BTreeMap<i64, Vec<(String, String)>> = flow["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|it| {
            let e = it["inferred_edges"]
                .as_array()
                .unwrap()
                .iter()
                .map(|p| (p[0].as_str().unwrap().into(), p[1].as_str().unwrap().into()))
                .collect();
            (it["idx"].as_i64().unwrap(), e)
        })
        .collect();
    qs.as_array()
        .unwrap()
        .iter()
        .map(|q| {
            let idx = q["idx"].as_i64().unwrap();
            let e = edges.get(&idx).cloned().unwrap_or_default();
            let tasks: Vec<Value> = q["tasks"]
                .as_array()
                .unwrap()
                .iter()
                .map(|t| {
                    let t = t.as_str().unwrap();
                    let dep: Vec<&str> = e
                        .iter()
                        .filter(|(_, b)| b == t)
                        .map(|(a, _)| a.as_str())
                        .collect();
                    json!({"id": t, "task": t, "dep": dep})
                })
                .collect();
            json!({"idx": idx, "tasks": tasks})
        })
        .collect()
}

fn jsonl(plans: &[Value]) -> String {
    plans.iter().map(|p| p.to_string() + "\n").collect()
}

/// Replace the plan of one query.
fn with(mut plans: Vec<Value>, idx: i64, plan: Value) -> Vec<Value> {
    plans[idx as usize] = plan;
    plans
}

#[test]
fn a_planner_that_copies_the_gold_flow_scores_one_everywhere() {
    let dir = tempfile::tempdir().unwrap();
    let p = write(dir.path(), "gold.jsonl", jsonl(&gold_plans()));
    let (code, items, m, _) = muse(dir.path(), p.to_str().unwrap(), &[]);
    assert_eq!(code, 0);
    assert_eq!(items.len(), 100);
    for k in [
        "TS",
        "FoT",
        "O",
        "FoT_multi_task",
        "FoT_without_low_confidence_flow",
    ] {
        assert_eq!(rate(&m, k), 1.0, "{k}");
    }
    for g in [
        "tasks:1",
        "tasks:2",
        "tasks:3",
        "domain:audio",
        "flow_confidence:low",
    ] {
        assert_eq!(m["groups"][g]["FoT"]["value"], json!(1.0), "{g}");
    }
    assert_eq!(m["groups"]["tasks:2"]["n"], json!(60));
    assert_eq!(m["groups"]["flow_confidence:low"]["n"], json!(5));
    assert_eq!(m["metrics"]["n_missing_plans"], json!(0));
    // Only the two queries whose output_type contradicts their tasks are corrected.
    let corrected: Vec<i64> = items
        .values()
        .filter(|i| i["output_type_corrected"] == json!(true))
        .map(|i| i["idx"].as_i64().unwrap())
        .collect();
    assert_eq!(corrected, [13, 74]);
}

#[test]
fn each_mistake_moves_exactly_its_metrics() {
    let dir = tempfile::tempdir().unwrap();
    let gold = gold_plans();
    let check = |name: &str, plans: Vec<Value>, idx: i64, want: (bool, bool, bool)| {
        let p = write(dir.path(), name, jsonl(&plans));
        let (code, items, m, _) = muse(dir.path(), p.to_str().unwrap(), &[]);
        assert_eq!(code, 0, "{name}");
        assert_eq!(verdict(&items, idx), want, "{name}");
        let other = items.iter().filter(|(i, _)| **i != idx).all(|(_, v)| {
            v["ts"] == json!(true) && v["fot"] == json!(true) && v["o"] == json!(true)
        });
        assert!(other, "{name}: other queries moved");
        let r = |b: bool| if b { 1.0 } else { 0.99 };
        assert_eq!(
            (rate(&m, "TS"), rate(&m, "FoT"), rate(&m, "O")),
            (r(want.0), r(want.1), r(want.2)),
            "{name}"
        );
        items
    };
    // idx 96 "Extract text from this audio interview. Give me a summary after translating to chinese":
    // gold ASR -> translation -> abstract summary.
    let asr = "automatic-speech-recognition";
    let tr = "translation-xx-to-yy";
    let sum = "abstract-summarisation";
    // Drop the translation: a gold task is missing, so TS, FoT and O all fail.
    let dropped = json!({"idx": 96, "tasks": [
        {"id": 0, "task": asr, "dep": []}, {"id": 1, "task": sum, "dep": [0]}]});
    let items = check(
        "drop.jsonl",
        with(gold.clone(), 96, dropped),
        96,
        (false, false, false),
    );
    assert_eq!(items[&96]["missing_tasks"], json!([tr]));
    // Summarise before translating: right tasks, right final modality, wrong flow: FoT only.
    let reversed = json!({"idx": 96, "tasks": [
        {"id": 0, "task": asr, "dep": []}, {"id": 1, "task": sum, "dep": [0]}, {"id": 2, "task": tr, "dep": [1]}]});
    let items = check(
        "rev.jsonl",
        with(gold.clone(), 96, reversed),
        96,
        (true, false, true),
    );
    assert_eq!(
        items[&96]["violated_dependencies"],
        json!([{"from": tr, "to": sum, "kind": "reversed"}])
    );
    // Add NER on the transcript: over-selection loses TS and FoT but keeps O.
    let added = json!({"idx": 96, "tasks": [
        {"id": 0, "task": asr, "dep": []}, {"id": 1, "task": tr, "dep": [0]}, {"id": 2, "task": sum, "dep": [1]},
        {"id": 3, "task": "named-entity-recognition", "dep": [0]}]});
    let items = check(
        "add.jsonl",
        with(gold.clone(), 96, added),
        96,
        (false, false, true),
    );
    assert_eq!(
        items[&96]["extra_tasks"],
        json!(["named-entity-recognition"])
    );
    // idx 33 "Build a pictorial presentation of the flower after deciphering the audio": the two
    // steps side by side (no dependency) keep TS and O, lose FoT.
    let parallel = json!({"idx": 33, "tasks": [
        {"id": 0, "task": "text-to-image", "dep": []}, {"id": 1, "task": asr, "dep": []}]});
    let items = check(
        "par.jsonl",
        with(gold, 33, parallel),
        33,
        (true, false, true),
    );
    assert_eq!(
        items[&33]["violated_dependencies"][0]["kind"],
        json!("missing")
    );
}

#[test]
fn hugginggpt_plans() {
    let dir = tempfile::tempdir().unwrap();
    let (code, items, m, err) = muse(
        dir.path(),
        &fixture("hugginggpt.jsonl"),
        &["--plan-format", "hugginggpt"],
    );
    assert_eq!(code, 0, "{err}");
    // <GENERATED>-k references give the edges even where dep says -1 (33), a forward reference
    // (44), the demos' <GENERATED-0> spelling inside a response string with prose (74), coarse
    // names (summarization, question-answering) and a parallel NER branch (99).
    for idx in [33, 44, 74, 96, 99] {
        assert_eq!(verdict(&items, idx), (true, true, true), "idx {idx}");
    }
    assert_eq!(
        items[&96]["mapped"][2],
        json!({"raw": "summarization", "muse": "abstract-summarisation", "coarse": true})
    );
    assert_eq!(items[&74]["requested_output"], json!("audio"));
    // An unknown name is reported and counts against TS; here the gold text-classification is missing too.
    assert_eq!(
        items[&41]["unknown_names"],
        json!(["zero-shot-classification"])
    );
    assert_eq!(verdict(&items, 41), (false, false, false));
    // idx 52 adds object detection next to the classification: the over-selection pitfall.
    assert_eq!(verdict(&items, 52), (false, false, true));
    assert_eq!(m["metrics"]["n_over_selected"], json!(1));
    assert_eq!(m["metrics"]["n_O_without_TS"], json!(1));
    assert_eq!(m["metrics"]["n_missing_plans"], json!(93));
    assert!(items[&0]["missing_plan"].as_bool().unwrap());
    assert!(err.contains("93 quer(ies) have no plan"), "{err}");
    assert_eq!(m["metrics"]["plan_formats"], json!({"hugginggpt": 7}));

    // --aliases maps the unknown name; the plan is then right.
    let a = write(
        dir.path(),
        "aliases.json",
        r#"{"zero-shot-classification": "text-classification"}"#,
    );
    let (_, items, m, _) = muse(
        dir.path(),
        &fixture("hugginggpt.jsonl"),
        &["--aliases", a.to_str().unwrap()],
    );
    assert_eq!(verdict(&items, 41), (true, true, true));
    assert_eq!(m["metrics"]["n_with_unknown_names"], json!(0));
}

#[test]
fn controlllm_plans() {
    let dir = tempfile::tempdir().unwrap();
    let (code, items, m, err) = muse(dir.path(), &fixture("controlllm.jsonl"), &[]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(m["metrics"]["plan_formats"], json!({"controlllm": 4}));
    assert_eq!(verdict(&items, 33), (true, true, true));
    // image-perception stands for VQA here; the answer's declared type is text as asked.
    assert_eq!(verdict(&items, 35), (true, true, true));
    // No stage-1 domain for depth estimation: an unknown name and a missing task.
    assert_eq!(items[&40]["unknown_names"], json!(["image-processing"]));
    assert_eq!(items[&40]["missing_tasks"], json!(["depth-estimation"]));
    assert_eq!(verdict(&items, 40), (false, false, false));
    // Both tasks in one step: the right set, but the translation does not consume the transcript.
    assert_eq!(verdict(&items, 61), (true, false, true));
}

#[test]
fn scorekit_plans_and_the_reviewed_flow() {
    let dir = tempfile::tempdir().unwrap();
    let (code, items, _, err) = muse(
        dir.path(),
        &fixture("scorekit.jsonl"),
        &["--plan-format", "scorekit"],
    );
    assert_eq!(code, 0, "{err}");
    assert_eq!(verdict(&items, 0), (true, true, true));
    // idx 86: the review made the Finnish translation a parallel leaf.
    assert_eq!(verdict(&items, 86), (true, true, true));
    assert_eq!(verdict(&items, 96), (true, false, true));
    assert_eq!(verdict(&items, 97), (false, false, false));
    // Under the unreviewed annotation, idx 86 needs translation -> summary.
    let raw = repo().join("tests/data/muse/muse_inferred_task_flow.json");
    let (_, items, m, _) = muse(
        dir.path(),
        &fixture("scorekit.jsonl"),
        &["--flow", raw.to_str().unwrap()],
    );
    assert_eq!(verdict(&items, 86), (true, false, true));
    assert_eq!(m["inputs"].as_array().unwrap().len(), 3);
}

#[test]
fn output_verdicts_replace_the_rule_and_the_report_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let v = write(
        dir.path(),
        "verdicts.jsonl",
        "{\"idx\": 0, \"output_ok\": false}\n{\"idx\": 86, \"output_ok\": true}\n",
    );
    let (code, items, m, _) = muse(
        dir.path(),
        &fixture("scorekit.jsonl"),
        &["--output-verdicts", v.to_str().unwrap()],
    );
    assert_eq!(code, 0);
    assert_eq!(
        (items[&0]["o"].clone(), items[&0]["o_rule"].clone()),
        (json!(false), json!(true))
    );
    assert_eq!(items[&5]["o"], Value::Null);
    assert_eq!(m["metrics"]["O"]["n"], json!(2));
    assert_eq!(rate(&m, "O"), 0.5);
    assert_eq!(m["metrics"]["O_source"], json!({"none": 98, "verdict": 2}));
    let report = std::fs::read_to_string(dir.path().join("out/report.md")).unwrap();
    assert!(report.contains("O comes from the verdicts"), "{report}");
}

#[test]
fn malformed_plans_exit_two_with_file_line_and_field() {
    let dir = tempfile::tempdir().unwrap();
    let good =
        r#"{"idx": 33, "tasks": [{"id": 0, "task": "automatic-speech-recognition", "dep": []}]}"#;
    let cases = [
        ("missing idx", r#"{"tasks": []}"#, "field \"idx\": missing"),
        (
            "duplicate idx",
            good,
            "field \"idx\": a second plan for idx 33 (the first is on line 1)",
        ),
        (
            "idx not in queries",
            r#"{"idx": 100, "tasks": []}"#,
            "field \"idx\": no query with idx 100",
        ),
        (
            "malformed JSON",
            r#"{"idx": 33, "tasks": [}"#,
            "invalid JSON at column",
        ),
        (
            "not an object",
            r#"[{"idx": 33}]"#,
            "expected a JSON object",
        ),
    ];
    for (name, line, want) in cases {
        let p = write(dir.path(), "bad.jsonl", format!("{good}\n{line}\n"));
        let (code, _, _, err) = muse(dir.path(), p.to_str().unwrap(), &[]);
        assert_eq!(code, 2, "{name}: {err}");
        let loc = format!("{}:2: ", p.display());
        assert!(err.contains(&loc) && err.contains(want), "{name}: {err}");
    }
    // A bad alias target and a bad flow are input errors too.
    let a = write(dir.path(), "a.json", "{\n\"speak\": \"speech\"\n}");
    let (code, _, _, err) = muse(
        dir.path(),
        &fixture("scorekit.jsonl"),
        &["--aliases", a.to_str().unwrap()],
    );
    assert_eq!(code, 2);
    assert!(err.contains("a.json:2: field \"speak\""), "{err}");
    let f = write(dir.path(), "f.json", "{\"items\": []}");
    let (code, _, _, err) = muse(
        dir.path(),
        &fixture("scorekit.jsonl"),
        &["--flow", f.to_str().unwrap()],
    );
    assert_eq!(code, 2);
    assert!(
        err.contains("no flow item for multi-task query idx 25"),
        "{err}"
    );
}

/// A response that is no plan is the planner's failure: that query scores 0 with `plan_error`,
/// and every other query scores exactly as in the run without the bad line.
#[test]
fn unreadable_plans_score_zero_and_the_rest_is_scored_as_without_them() {
    let dir = tempfile::tempdir().unwrap();
    let base = std::fs::read_to_string(fixture("hugginggpt.jsonl")).unwrap();
    let (code, clean, m0, err) = muse(dir.path(), &fixture("hugginggpt.jsonl"), &[]);
    assert_eq!(code, 0, "{err}");
    // Seven kinds of planner failure, on queries the fixture has no plan for.
    let bad = [
        (
            0,
            json!({"idx": 0, "tasks": "I am sorry, I cannot plan this."}),
            "no parseable JSON list",
        ),
        (
            1,
            json!({"idx": 1, "response": "Sure! Here you go."}),
            "no parseable JSON list",
        ),
        (2, json!({"idx": 2, "tasks": []}), "the plan has no steps"),
        (
            3,
            json!({"idx": 3, "tasks": [{"id": 0, "task": "translation", "dep": [1]},
                    {"id": 1, "task": "summarization", "dep": [0]}]}),
            "cycle",
        ),
        (
            4,
            json!({"idx": 4, "tasks": [{"task": "text-to-image", "id": 0, "dep": [-1],
                    "args": {"text": "<GENERATED>-4"}}]}),
            "depends on unknown step id 4",
        ),
        (
            5,
            json!({"idx": 5, "answer": "no plan"}),
            "\"tasks\": missing",
        ),
        (
            6,
            json!({"idx": 6, "pddl": "(text_to_image t)\nno solution found"}),
            "line 2 of the plan",
        ),
    ];
    let mut text = base.clone();
    for (_, line, _) in &bad {
        text.push_str(&format!("{line}\n"));
    }
    let p = write(dir.path(), "with_bad.jsonl", text);
    let (code, items, m, err) = muse(dir.path(), p.to_str().unwrap(), &[]);
    assert_eq!(code, 0, "{err}");
    assert!(
        err.contains("7 plan(s) could not be read as a plan"),
        "{err}"
    );
    for (idx, _, why) in &bad {
        let it = &items[idx];
        assert_eq!(verdict(&items, *idx), (false, false, false), "idx {idx}");
        assert!(!it["missing_plan"].as_bool().unwrap());
        let e = it["plan_error"].as_str().unwrap();
        assert!(e.contains(why), "idx {idx}: {e}");
    }
    assert_eq!(m["metrics"]["n_plan_errors"], json!(7));
    assert_eq!(m0["metrics"]["n_plan_errors"], json!(0));
    assert_eq!(m["metrics"]["n_missing_plans"], json!(93 - 7));
    // Everything else is scored as in the clean run.
    for (idx, it) in &clean {
        if bad.iter().any(|b| b.0 == *idx) {
            continue;
        }
        assert_eq!(&items[idx], it, "idx {idx}");
    }
    let report = std::fs::read_to_string(dir.path().join("out/report.md")).unwrap();
    assert!(
        report.contains("Plans that could not be read (planner errors, scored 0): 7")
            && report.contains("(plan error: field \"tasks\": the plan has no steps)"),
        "{report}"
    );
}

/// The actions of MuSE's PDDL domains as the domain files declare them: (action, parameters).
fn domain_actions() -> Vec<(String, String, usize)> {
    let dir = test_data("muse:domains", "PDDL-domain-files");
    let mut out = Vec::new();
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    for f in files {
        let text = std::fs::read_to_string(&f).unwrap();
        let domain = f
            .file_name()
            .unwrap()
            .to_str()
            .unwrap()
            .trim_end_matches("-domain.pddl")
            .to_string();
        for part in text.split("(:action").skip(1) {
            let name: String = part
                .trim_start()
                .chars()
                .take_while(|c| !c.is_whitespace() && *c != ';')
                .collect();
            let params = part.split(":parameters").nth(1).unwrap();
            let params = &params[..params.find(')').unwrap()];
            out.push((domain.clone(), name, params.matches('?').count()));
        }
    }
    out
}

/// The built-in action table is the domain files' (28 actions), every action maps to a MuSE
/// task through the alias table or is listed as unmapped, and a Fast Downward plan over the real
/// domains is read into the steps and dependencies docs/muse.md describes.
#[test]
fn pddl_plans_over_the_real_domains() {
    use scorekit::suites::muse::{pddl, AliasTable};
    let mut want = domain_actions();
    let mut have: Vec<(String, String, usize)> = pddl::ACTIONS
        .iter()
        .map(|(d, a, n)| (d.to_string(), a.to_string(), *n))
        .collect();
    want.sort();
    have.sort();
    assert_eq!(have, want);
    assert_eq!(have.len(), 28);
    let aliases = AliasTable::shipped();
    for (_, a, _) in &want {
        let known = aliases.candidates(a).is_some();
        assert_eq!(known, !pddl::UNMAPPED.contains(&a.as_str()), "{a}");
    }

    // idx 33 (ASR then text-to-image) as Hive's planner writes it: order only, in the wrong
    // order (spec 5.3), so the sequential edge is reversed; and in the right order with the
    // transcript as a produced object.
    let dir = tempfile::tempdir().unwrap();
    let plans = [
        json!({"idx": 33, "pddl": "(TEXT_TO_IMAGE INPUT_TEXT)\n(AUDIO_TO_TEXT INPUT_AUDIO)\n; cost = 2 (unit cost)\n"}),
        json!({"idx": 96, "pddl": "(audio_to_text audio_2 transcript)\n(get_translation en fr transcript french)\n(get_abstractive_summarization french)\n; cost = 3 (unit cost)"}),
        json!({"idx": 97, "pddl": "(audio_to_text a transcript)\n(image_segmentation img)\n(text_to_image transcript)"}),
    ];
    let p = write(dir.path(), "hive.jsonl", jsonl(&plans));
    let (code, items, m, err) = muse(dir.path(), p.to_str().unwrap(), &[]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(m["metrics"]["plan_formats"], json!({"pddl": 3}));
    let i33 = &items[&33];
    assert_eq!(
        i33["predicted_edges"],
        json!([["text-to-image", "automatic-speech-recognition"]])
    );
    // The plan's last step (ASR) yields text, not the image asked for.
    assert_eq!(verdict(&items, 33), (true, false, false));
    assert_eq!(i33["violated_dependencies"][0]["kind"], "reversed");
    let i96 = &items[&96];
    assert_eq!(verdict(&items, 96), (true, true, true), "{i96}");
    // 97: the segmentation step is an unknown name (an extra task for TS) and text-to-image
    // takes the transcript of step 0, not the segmentation's output.
    let i97 = &items[&97];
    assert_eq!(i97["unknown_names"], json!(["image_segmentation"]));
    assert_eq!(
        i97["predicted_edges"],
        json!([["automatic-speech-recognition", "text-to-image"]])
    );
    // The gold summary is missing too, so O fails with TS.
    assert_eq!(i97["missing_tasks"], json!(["abstract-summarisation"]));
    assert_eq!(verdict(&items, 97), (false, false, false));
}

#[test]
fn embedder_that_is_not_there_fails_before_scoring() {
    // Name matching by embeddings itself is tested in tests/semantic.rs (real MiniLM weights).
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("no-such-model");
    let (code, _, _, err) = muse(
        dir.path(),
        &fixture("scorekit.jsonl"),
        &["--embedder", missing.to_str().unwrap(), "--offline"],
    );
    assert_eq!(code, 2, "{err}");
    assert!(!dir.path().join("out/metrics.json").exists());
}

#[test]
fn json_flag_prints_metrics_and_report_lists_failures() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("o");
    let q = queries().display().to_string();
    let (o, p) = (out.display().to_string(), fixture("scorekit.jsonl"));
    let r = run(&[
        "muse",
        "--queries",
        &q,
        "--plans",
        &p,
        "--out",
        &o,
        "--json",
        "--quiet",
        "--bootstrap",
        "0",
    ]);
    assert_eq!(r.status.code(), Some(0));
    let v: Value = serde_json::from_str(&stdout(&r)).unwrap();
    assert_eq!(v["suite"], json!("muse"));
    assert!(stderr(&r).is_empty(), "{}", stderr(&r));
    let report = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(report.contains("| 96 "), "{report}");
    assert!(
        report.contains("translation-xx-to-yy->abstract-summarisation (reversed)"),
        "{report}"
    );
}
