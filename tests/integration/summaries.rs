//! What a scoring command prints on stdout, and story's report.md up to its first section after
//! the metrics (the headline, the warnings, the table and "What these numbers are"), for story,
//! GRASP, MuSE and MINT on real data (issue 54): against the snapshots in tests/data/summaries/,
//! byte for byte once the temporary folders are replaced by `<tmp>`.
//!
//! After a change of the output is checked and meant, rewrite the snapshots with
//! `SCOREKIT_BLESS=1 cargo test -p scorekit --test integration -- summaries::`.

use crate::common::tiny_judge::build_judge;
use crate::common::{repo, scorekit, stderr, test_data, write};
use serde_json::json;
use std::path::Path;

/// The variable that rewrites the snapshots instead of comparing them.
const BLESS: &str = "SCOREKIT_BLESS";

/// `text` against tests/data/summaries/`name`, with `tmp` replaced by `<tmp>` and MINT's
/// reading time by `<t>`.
fn check(name: &str, text: &str, tmp: &Path) {
    let text: String = text
        .replace(&tmp.display().to_string(), "<tmp>")
        .lines()
        .map(|l| match l.find("tabulated in ") {
            Some(i) => format!("{}tabulated in <t> s.\n", &l[..i]),
            None => format!("{l}\n"),
        })
        .collect();
    let path = repo().join("tests/data/summaries").join(name);
    if std::env::var_os(BLESS).is_some() {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, &text).unwrap();
        return;
    }
    let want = std::fs::read_to_string(&path).unwrap_or_default();
    if want != text {
        let line = want
            .lines()
            .zip(text.lines())
            .position(|(a, b)| a != b)
            .map_or_else(|| "their lengths".into(), |i| format!("line {}", i + 1));
        panic!(
            "{} differs from the output at {line} (rerun with {BLESS}=1 if the change is \
             meant):\n{text}",
            path.display()
        );
    }
}

/// stdout of a successful run of `args`.
fn stdout_of(args: &[&str]) -> String {
    let o = scorekit().args(args).output().unwrap();
    assert!(o.status.success(), "{args:?}: {}", stderr(&o));
    String::from_utf8(o.stdout).unwrap()
}

#[test]
fn story_prints_the_headline_and_the_warnings_and_report_md_explains_itself() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    let judge = root.join("judge");
    build_judge("bert_mc", &judge, true);
    let dataset = test_data("possible-stories:dev", "dataset/dev.jsonl");
    let dev = crate::common::dev_questions();
    // "gold" answers with the gold option; "end" with a fixed ending and skips every tenth
    // question (below chance, not complete); "first" copies option 0, ruled out of the
    // snapshot (its picks between two copies of one text are decided by rounding, which may
    // differ between CPUs) and checked on its own below.
    let gens_of = |models: &[&str]| {
        let mut gens = String::new();
        for (k, q) in dev.iter().enumerate() {
            let g = q["gold_label"].as_u64().unwrap() as usize;
            for m in models {
                let ending = match *m {
                    "gold" => q["options"][g].clone(),
                    "end" if k % 10 == 0 => continue,
                    "end" => json!("The end."),
                    _ => q["options"][0].clone(),
                };
                gens += &format!(
                    "{}\n",
                    json!({"question_id": q["question_id"], "ending": ending, "model": m})
                );
            }
        }
        gens
    };
    let gens = gens_of(&["gold", "end"]);
    let gens = write(root, "gen.jsonl", gens);
    let out = root.join("story");
    let story = |gens: &Path, out: &Path, extra: &[&str]| {
        let mut args = vec![
            "story",
            "--dataset",
            dataset.to_str().unwrap(),
            "--generations",
            gens.to_str().unwrap(),
            "--judge",
            judge.to_str().unwrap(),
            "--skip-embedder",
            "--quiet",
            "--bootstrap",
            "200",
            "--out",
            out.to_str().unwrap(),
        ];
        args.extend(extra);
        stdout_of(&args)
    };
    let stdout = story(&gens, &out, &[]);
    assert!(stdout.contains("Headline IFSM"), "{stdout}");
    assert!(stdout.contains("warning: end:"), "{stdout}");
    check("story-stdout.txt", &stdout, root);
    // report.md from its start to the models (the list names the temporary judge folder).
    let report = std::fs::read_to_string(out.join("report.md")).unwrap();
    let head = report.split("\n## Models").next().unwrap();
    assert!(head.contains("### What these numbers are"), "{head}");
    check("story-report-head.md", head, root);

    // Copies of another option: the warning counts them from the items.
    let gens = write(root, "first.jsonl", gens_of(&["first"]));
    let out = root.join("first");
    let stdout = story(&gens, &out, &["--no-calibration"]);
    let items: Vec<serde_json::Value> = std::fs::read_to_string(out.join("items.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let copies = items
        .iter()
        .filter(|i| i["ending_is_option"] == 0 && i["follow"] == false)
        .count();
    let gold_not_0 = dev.iter().filter(|q| q["gold_label"] != 0).count();
    assert_eq!(
        items.iter().filter(|i| i["ending_is_option"] == 0).count(),
        gold_not_0
    );
    assert!(copies > gold_not_0 / 2, "{copies} of {gold_not_0}");
    assert!(
        stdout.contains(&format!(
            "{copies} of its 458 endings are the text of another option"
        )),
        "{stdout}"
    );
}

#[test]
fn grasp_muse_and_mint_print_what_their_reports_lead_with() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    let sample = repo().join("data/grasp/sample-responses.csv");
    let grasp = stdout_of(&[
        "grasp",
        "--responses",
        sample.to_str().unwrap(),
        "--test",
        "level1-binary",
        "--out",
        root.join("grasp").to_str().unwrap(),
    ]);
    check("grasp-stdout.txt", &grasp, root);
    let plans = repo().join("tests/data/muse/hugginggpt.jsonl");
    let muse = stdout_of(&[
        "muse",
        "--queries",
        "muse:queries",
        "--plans",
        plans.to_str().unwrap(),
        "--offline",
        "--out",
        root.join("muse").to_str().unwrap(),
    ]);
    check("muse-stdout.txt", &muse, root);
    let mint = stdout_of(&[
        "mint",
        "--outputs",
        "mint:headline",
        "--offline",
        "--out",
        root.join("mint").to_str().unwrap(),
    ]);
    check("mint-stdout.txt", &mint, root);
    // Each stdout begins with its report.md's first table.
    for (suite, out) in [("grasp", &grasp), ("muse", &muse), ("mint", &mint)] {
        let report = std::fs::read_to_string(root.join(suite).join("report.md")).unwrap();
        let first_table: Vec<&str> = report
            .lines()
            .skip_while(|l| !l.starts_with('|'))
            .take_while(|l| l.starts_with('|'))
            .collect();
        assert!(!first_table.is_empty(), "{suite}");
        assert!(out.contains(&first_table.join("\n")), "{suite}:\n{out}");
    }
}
