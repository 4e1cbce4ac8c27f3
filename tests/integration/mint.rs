//! `scorekit mint` end to end on the real trajectories (`mint:headline`) and on damaged inputs.

use crate::common;

use common::{read_json, run, stderr, stdout, test_data};
use serde_json::Value;
use std::path::{Path, PathBuf};

fn outputs() -> PathBuf {
    test_data("mint:headline", "data/outputs")
}

fn run_ok(args: &[&str]) -> (tempfile::TempDir, Value) {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let mut all = args.to_vec();
    all.extend([
        "--out",
        out.to_str().unwrap(),
        "--quiet",
        "--bootstrap",
        "200",
    ]);
    let o = run(&all);
    assert!(o.status.success(), "{}", stderr(&o));
    let m = read_json(&out.join("metrics.json"));
    (dir, m)
}

fn pct1(x: &Value) -> String {
    format!("{:.1}", x.as_f64().unwrap() * 100.0)
}

#[test]
fn reproduces_the_published_tables() {
    let root = outputs();
    let (dir, m) = run_ok(&["mint", "--outputs", root.to_str().unwrap()]);
    let t2 = m["metrics"]["table2"].as_array().unwrap();
    let gpt = t2
        .iter()
        .find(|r| r["agent"] == "gpt-3.5-turbo-0613")
        .unwrap();
    let sr: Vec<String> = (1..=5)
        .map(|k| pct1(&gpt["sr_micro"][format!("sr_{k}")]))
        .collect();
    assert_eq!(sr, ["2.7", "16.9", "24.1", "31.7", "36.2"]);
    // Two decimals as in the notebook.
    let sr2: Vec<String> = (1..=5)
        .map(|k| {
            format!(
                "{:.2}",
                gpt["sr_micro"][format!("sr_{k}")].as_f64().unwrap() * 100.0
            )
        })
        .collect();
    assert_eq!(sr2, ["2.73", "16.89", "24.06", "31.74", "36.18"]);
    let slope = gpt["delta_tools_pct_per_turn"].as_f64().unwrap();
    assert!((slope - 8.175).abs() < 1e-9, "{slope}");
    assert_eq!(format!("{:+.1}", slope), "+8.2");
    assert_eq!(format!("{:.2}", gpt["r2"].as_f64().unwrap()), "0.96");
    assert_eq!(format!("{:.3}", gpt["r2"].as_f64().unwrap()), "0.959");

    let t3 = &m["metrics"]["table3"][0];
    assert_eq!(t3["feedback_model"], "gpt-4-0613");
    assert_eq!(t3["feedback_setting"], "no_GT-textual");
    let two = |v: &Value| format!("{:.2}", v.as_f64().unwrap() * 100.0);
    let types = ["reasoning", "decision_making", "code_generation", "micro"];
    let row = |k: &str| types.map(|t| two(&t3[k][t]));
    assert_eq!(row("sr5_without"), ["36.71", "41.79", "29.41", "36.18"]);
    assert_eq!(row("sr5_with"), ["50.32", "66.42", "38.97", "51.37"]);
    assert_eq!(row("delta_feedback"), ["13.61", "24.63", "9.56", "15.19"]);

    // The human tables as printed in the paper.
    let md = std::fs::read_to_string(dir.path().join("out/tables.md")).unwrap();
    assert!(
        md.contains("| 2.7 | 16.9 | 24.1 | 31.7 | 36.2 | +8.2   | 0.96 |"),
        "{md}"
    );
    assert!(
        md.contains("| 50.3      | 66.4            | 39.0            | 51.4  |"),
        "{md}"
    );
    assert!(
        md.contains("| +13.6     | +24.6           | +9.6            | +15.2 |"),
        "{md}"
    );
    assert!(md.contains("| 0.50 / 4.18 | 0.00 / 3.87     | 0.07 / 4.26     | 0.29 / 4.13 |"));
    let tex = std::fs::read_to_string(dir.path().join("out/tables.tex")).unwrap();
    assert!(tex.contains("gpt-3.5-turbo-0613 & 2.7 & 16.9 & 24.1 & 31.7 & 36.2 & +8.2 & 0.96 \\\\"));

    // Per task SR5 and Llama-3's single SR5.
    let g = &m["groups"]["gpt-3.5-turbo-0613/F=None/max5_p2+tool+cd"]["success_rate"];
    for (task, want) in [
        ("alfworld", "41.79"),
        ("gsm8k", "43.75"),
        ("hotpotqa", "27.91"),
        ("humaneval", "37.78"),
        ("math", "26.00"),
        ("mbpp", "25.27"),
        ("mmlu", "56.58"),
        ("theoremqa", "28.57"),
    ] {
        assert_eq!(two(&g[format!("task:{task}")]["value"]), want, "{task}");
    }
    let micro = &g["micro"];
    assert_eq!(micro["n"], 586);
    assert!(micro["ci_low"].as_f64().unwrap() < micro["value"].as_f64().unwrap());
    let llama = t2
        .iter()
        .find(|r| r["agent"] == "Meta-Llama-3-8B-Instruct")
        .unwrap();
    assert_eq!(two(&llama["sr_micro"]["sr_5"]), "34.13");
    assert!(llama["delta_tools_pct_per_turn"].is_null());

    // sr.csv rows and the one-item-per-trajectory contract.
    let csv = std::fs::read_to_string(dir.path().join("out/sr.csv")).unwrap();
    assert_eq!(csv.lines().count(), 1 + 7 * 4);
    assert!(csv.contains("gpt-3.5-turbo-0613,gpt-4-0613,no_GT-textual,5,micro,586,"));
    let items = std::fs::read_to_string(dir.path().join("out/items.jsonl")).unwrap();
    assert_eq!(items.lines().count(), 7 * 586);
    let first: Value = serde_json::from_str(items.lines().next().unwrap()).unwrap();
    for k in [
        "row",
        "task_id",
        "success",
        "invalid_actions",
        "turns",
        "escaped_underscore",
        "python_tag",
    ] {
        assert!(first.get(k).is_some(), "{k}");
    }
    assert_eq!(m["inputs"].as_array().unwrap().len(), 56);
    let svg = std::fs::read_to_string(dir.path().join("out/sr_curves.svg")).unwrap();
    assert_eq!(svg.matches("<polyline").count(), 1);
}

fn recheck_row<'a>(m: &'a Value, task: &str) -> &'a Value {
    &m["metrics"]["recheck"][task]
}

#[test]
fn recheck_agrees_on_gsm8k_hotpotqa_mmlu_and_explains_math_theoremqa() {
    let root = outputs();
    let (head_dir, head) = run_ok(&["mint", "--outputs", root.to_str().unwrap(), "--recheck"]);
    // The report and metrics.json say which tolerance was used and how many verdicts differ,
    // in all and per task.
    assert_eq!(head["metrics"]["recheck_tolerance"]["name"], "head");
    assert_eq!(head["metrics"]["recheck_differ"], 21 + 4);
    let report = std::fs::read_to_string(head_dir.path().join("out/report.md")).unwrap();
    assert!(
        report.contains("re-checked with tolerance `head`: |ref - ans| <= 0.05 * |ref|")
            && report.contains("25 re-checked verdict(s) differ from the stored flags; per task:"),
        "{report}"
    );
    let row = |task: &str| -> String {
        report
            .lines()
            .find(|l| l.starts_with(&format!("| {task} ")))
            .unwrap_or_else(|| panic!("no {task} row in {report}"))
            .to_string()
    };
    let cells = |task: &str| -> Vec<String> {
        row(task)
            .split('|')
            .map(|c| c.trim().to_string())
            .filter(|c| !c.is_empty())
            .collect()
    };
    assert_eq!(cells("math")[2], "21");
    assert_eq!(cells("theoremqa")[2], "4");
    assert_eq!(cells("gsm8k")[2], "0");
    for (task, n) in [("gsm8k", 7 * 48), ("hotpotqa", 7 * 43), ("mmlu", 7 * 76)] {
        assert_eq!(recheck_row(&head, task)["rechecked"], n, "{task}");
        assert_eq!(recheck_row(&head, task)["differ"], 0, "{task}");
    }
    // MATH: the HEAD tolerance accepts negative references the stored flags could not.
    let math = recheck_row(&head, "math");
    assert_eq!(math["differ"], 21);
    assert_eq!(math["stored_false_rechecked_true"], 21);
    // TheoremQA: the option-letter fix re-scores four `x) ...` answers; one answer is
    // Python-evaluated to nothing we model and keeps its flag.
    let tqa = recheck_row(&head, "theoremqa");
    assert_eq!(tqa["differ"], 4);
    assert_eq!(tqa["stored_false_rechecked_true"], 4);
    let ids: Vec<&str> = tqa["differing"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["task_id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["50", "52", "52", "52"]);
    // The checker that produced the stored flags reproduces every MATH verdict.
    let (_d, pre) = run_ok(&[
        "mint",
        "--outputs",
        root.to_str().unwrap(),
        "--recheck",
        "--tolerance",
        "pre",
    ]);
    for task in ["gsm8k", "hotpotqa", "math", "mmlu"] {
        assert_eq!(recheck_row(&pre, task)["differ"], 0, "{task}");
    }
    assert_eq!(pre["metrics"]["recheck_tolerance"]["name"], "pre");
    assert_eq!(
        pre["metrics"]["recheck_differ"],
        recheck_row(&pre, "theoremqa")["differ"]
    );
    // With --recheck the tables use the re-checked verdicts: pre differs only on TheoremQA.
    assert_eq!(
        pre["settings"]["verdict"],
        "rechecked where computed, else stored"
    );
}

/// Copy the first `n` lines of a real results.jsonl into a layout under `root`.
fn copy_head(root: &Path, rel: &str, n: usize) {
    copy_as(root, rel, rel, n)
}

/// Copy the first `n` lines of the real file `src_rel` to `root/rel`.
fn copy_as(root: &Path, src_rel: &str, rel: &str, n: usize) {
    let src = outputs().join(src_rel);
    let text = std::fs::read_to_string(&src).unwrap();
    let head: Vec<&str> = text.lines().take(n).collect();
    let dst = root.join(rel);
    std::fs::create_dir_all(dst.parent().unwrap()).unwrap();
    std::fs::write(dst, head.join("\n") + "\n").unwrap();
}

#[test]
fn exec_code_reproduces_stored_code_verdicts_on_real_instances() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("outputs");
    let base = "gpt-3.5-turbo-0613/F=None/max5_p2+tool+cd/code_generation";
    copy_head(&root, &format!("{base}/humaneval/results.jsonl"), 6);
    copy_head(&root, &format!("{base}/mbpp/results.jsonl"), 6);
    let (_d, m) = run_ok(&["mint", "--outputs", root.to_str().unwrap(), "--exec-code"]);
    for task in ["humaneval", "mbpp"] {
        assert_eq!(recheck_row(&m, task)["rechecked"], 6, "{task}");
        assert_eq!(recheck_row(&m, task)["differ"], 0, "{task}");
    }
    assert!(m["settings"]["python"]
        .as_str()
        .unwrap()
        .starts_with("Python 3"));
    // The fixture is incomplete: reported, and no table row is made from it.
    let inc = m["metrics"]["configs_incomplete"].as_array().unwrap();
    assert_eq!(inc.len(), 1);
    let missing = inc[0]["missing"].to_string();
    assert!(missing.contains("code_generation: 12 of 136"), "{missing}");
    assert!(missing.contains("no alfworld file"), "{missing}");
    assert!(m["metrics"]["table2"].as_array().unwrap().is_empty());
}

#[test]
fn deeply_nested_theoremqa_answers_are_wrong_answers_not_a_crash() {
    // The mint_checkers fuzzer found a stack overflow in the TheoremQA evaluator on deeply nested
    // answers; re-checks run on rayon threads with small stacks, so check it end to end.
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("outputs");
    let rel = "gpt-3.5-turbo-0613/F=None/max5_p2+tool+cd/reasoning/theoremqa/results.jsonl";
    copy_head(&root, rel, 3);
    let path = root.join(rel);
    let text = std::fs::read_to_string(&path).unwrap();
    let nested = [
        format!("{}1", "-".repeat(200_000)),
        format!("{}1{}", "(".repeat(50_000), ")".repeat(50_000)),
        format!("{}2", "2**-".repeat(50_000)),
    ];
    let mut changed = 0;
    let lines: Vec<String> = text
        .lines()
        .zip(&nested)
        .map(|(l, answer)| {
            let mut v: Value = serde_json::from_str(l).unwrap();
            for m in v["state"]["history"].as_array_mut().unwrap() {
                if m["role"] == "assistant" && m["content"].as_str().unwrap().contains("<solution>")
                {
                    m["content"] = format!("<solution> {answer} </solution>").into();
                    changed += 1;
                }
            }
            v.to_string()
        })
        .collect();
    assert!(changed >= 1, "the fixture has proposals to replace");
    std::fs::write(&path, lines.join("\n") + "\n").unwrap();
    let (_d, m) = run_ok(&["mint", "--outputs", root.to_str().unwrap(), "--recheck"]);
    assert_eq!(recheck_row(&m, "theoremqa")["rechecked"], 3);
}

#[test]
fn malformed_record_exits_2_with_file_line_field() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("outputs");
    let rel = "m/F=None/max5_p2+tool+cd/reasoning/gsm8k/results.jsonl";
    copy_as(
        &root,
        "gpt-3.5-turbo-0613/F=None/max5_p2+tool+cd/reasoning/gsm8k/results.jsonl",
        rel,
        3,
    );
    let path = root.join(rel);
    let text = std::fs::read_to_string(&path).unwrap();
    let mut lines: Vec<String> = text.lines().map(String::from).collect();
    lines[1] = lines[1].replacen("\"success\": ", "\"success\": \"no\", \"x\": ", 1);
    std::fs::write(&path, lines.join("\n") + "\n").unwrap();
    let out = dir.path().join("out");
    let o = run(&[
        "mint",
        "--outputs",
        root.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let e = stderr(&o);
    assert!(
        e.contains(&format!(
            "{}:2: field \"state.success\": expected a boolean",
            path.display()
        )),
        "{e}"
    );

    std::fs::write(&path, "{\"state\": \n").unwrap();
    let o = run(&[
        "mint",
        "--outputs",
        root.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains(":1: invalid JSON"), "{}", stderr(&o));
}

#[test]
fn misfit_paths_stray_files_and_duplicates_are_reported() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("outputs");
    let rel = "m/F=None/max5_p2+tool+cd/reasoning/gsm8k/results.jsonl";
    copy_as(
        &root,
        "gpt-3.5-turbo-0613/F=None/max5_p2+tool+cd/reasoning/gsm8k/results.jsonl",
        rel,
        2,
    );
    // The same instance twice: the second is a duplicate.
    let path = root.join(rel);
    let text = std::fs::read_to_string(&path).unwrap();
    let first = text.lines().next().unwrap().to_string();
    std::fs::write(&path, format!("{text}{first}\n")).unwrap();
    copy_as(
        &root,
        "gpt-3.5-turbo-0613/F=None/max5_p2+tool+cd/reasoning/gsm8k/results.jsonl",
        "m/F=None/max5_p2+tool+cd/reasoning/gsm9k/results.jsonl",
        1,
    );
    std::fs::write(root.join("m/notes.txt"), "x").unwrap();
    let out = dir.path().join("out");
    let o = run(&[
        "mint",
        "--outputs",
        root.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
        "--json",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let e = stderr(&o);
    assert!(
        e.contains("gsm9k/results.jsonl: skipped") && e.contains("not a reasoning task"),
        "{e}"
    );
    assert!(e.contains("1 other file(s)"), "{e}");
    assert!(e.contains("is incomplete"), "{e}");
    let m: Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(m["metrics"]["duplicates"], 1);
    assert_eq!(m["metrics"]["trajectories"], 3);
    assert_eq!(m["metrics"]["skipped_files"].as_array().unwrap().len(), 1);
    let items = std::fs::read_to_string(out.join("items.jsonl")).unwrap();
    let dup: Vec<bool> = items
        .lines()
        .map(|l| {
            serde_json::from_str::<Value>(l).unwrap()["duplicate"]
                .as_bool()
                .unwrap()
        })
        .collect();
    assert_eq!(dup, [false, false, true]);
    let report = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(report.contains("reasoning: 2 of 316 instances"), "{report}");
}

#[test]
fn missing_outputs_folder_is_a_usage_error() {
    let dir = tempfile::tempdir().unwrap();
    let o = run(&[
        "mint",
        "--outputs",
        dir.path().join("nope").to_str().unwrap(),
        "--out",
        dir.path().join("out").to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2));
    let empty = dir.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    let o = run(&[
        "mint",
        "--outputs",
        empty.to_str().unwrap(),
        "--out",
        dir.path().join("o2").to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("no results.jsonl"), "{}", stderr(&o));
}

/// sha256 of an output file with the outputs folder's path replaced by `<OUTPUTS>` (items and
/// metrics name their input files), so that the value does not depend on where the
/// repository is checked out; report.md without its last line (the run's duration).
fn normalised_sha256(path: &Path, root: &Path) -> String {
    use sha2::{Digest, Sha256};
    let mut text = std::fs::read_to_string(path).unwrap();
    if path.file_name().unwrap() == "report.md" {
        let body = text.trim_end_matches('\n');
        text = body[..body.rfind('\n').unwrap()].to_string();
    }
    if path.file_name().unwrap() == "metrics.json" {
        // `binary` (which build ran, issue 47) came after the golden run: its block is cut out,
        // every other byte is compared.
        if let Some(start) = text.find("\n  \"binary\": {") {
            let len = text[start + 1..]
                .find("\n  },")
                .expect("end of the binary block")
                + 5;
            text.replace_range(start..start + 1 + len, "");
        }
    }
    let text = text.replace(root.to_str().unwrap(), "<OUTPUTS>");
    Sha256::digest(text.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// The streaming reader (one pass, fields read in place, items never all held) writes exactly
/// what the reader before it wrote: these are the hashes of the files that scorekit at commit
/// 8b3cb27 (whole files in memory, every item held) wrote for the shared trajectories
/// (computed with scripts/bench/mint_identity.sh's reference run and the normalisation above).
#[test]
fn outputs_are_byte_identical_to_the_reader_before_streaming() {
    let root = outputs();
    let files = [
        "items.jsonl",
        "sr.csv",
        "tables.md",
        "tables.tex",
        "sr_curves.svg",
        "metrics.json",
        "report.md",
    ];
    for (flags, want) in [
        (&[][..], GOLDEN_STORED),
        (&["--recheck"][..], GOLDEN_RECHECK),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("out");
        let mut args = vec![
            "mint",
            "--outputs",
            root.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
            "--quiet",
        ];
        args.extend(flags);
        let o = run(&args);
        assert!(o.status.success(), "{}", stderr(&o));
        let mut got: Vec<(&str, String)> = files
            .iter()
            .map(|f| (*f, normalised_sha256(&out.join(f), &root)))
            .collect();
        if !flags.is_empty() {
            got.push((
                "recheck.csv",
                normalised_sha256(&out.join("recheck.csv"), &root),
            ));
        }
        let got: Vec<(&str, &str)> = got.iter().map(|(f, h)| (*f, h.as_str())).collect();
        assert_eq!(got, want, "{flags:?}");
    }
}

const GOLDEN_STORED: &[(&str, &str)] = &[
    (
        "items.jsonl",
        "9b00654155c9cd3fded139dcbac51b35a12ea7b893dd3b11d63830fdd1f834db",
    ),
    (
        "sr.csv",
        "41a21bb5b679778c6e57eb35896e7c13069cd1c44d017f1de5ab7e69ec4a32dd",
    ),
    (
        "tables.md",
        "1ccd868d4cbb592b251f703d59133a65192eadabc90fb623cc6548847db6ba98",
    ),
    (
        "tables.tex",
        "d8b1e842ef541ab03123ffd467a4c65e06b701bb0270d519762d7d25df98625e",
    ),
    (
        "sr_curves.svg",
        "84f8fa7716f67b333ff3d6bb2961b687ff7407f1c21afe2d031207867e9159a2",
    ),
    (
        "metrics.json",
        "c44d974e93d6b816cb06f9c49f07946d2311085b4f4ae7af56b0af17336b5bdb",
    ),
    (
        "report.md",
        "1ccd868d4cbb592b251f703d59133a65192eadabc90fb623cc6548847db6ba98",
    ),
];
/// With `--recheck`, metrics.json and report.md changed once since 8b3cb27, by addition only
/// (issue 18: the tolerance used and the differing count): the metrics.json without
/// `metrics.recheck_tolerance` and `metrics.recheck_differ` hashes to the old
/// 3a7815987fff81053454f3fdcd0ad321e57b5e086ed6de05c1bcaf0360a6614f.
const GOLDEN_RECHECK: &[(&str, &str)] = &[
    (
        "items.jsonl",
        "ed57759d1afbef03a1653e1a51446e25bf9c49c1dd601814440e896355810019",
    ),
    (
        "sr.csv",
        "bfd87b3bd0c1586f233aa634bc847052e1efbcf3752a26fb9a4f5d2dd86d822e",
    ),
    (
        "tables.md",
        "4c5324eecf58eb2007f5104a845e12eb2c9021b014d61cf257d2f1db727f0abf",
    ),
    (
        "tables.tex",
        "cd8202747f05efc77d4ab240a791865f750b1a2caacf4c337174b67a9d2d25e2",
    ),
    (
        "sr_curves.svg",
        "13a81567c1b273b0b0a764b28a641b323c2bbd600682d9ae45f26e7087c8e4de",
    ),
    (
        "metrics.json",
        "c864a6a69c4034be1ab2ea1e1d34b09635a52b6e90c19d693694c992b4fab3e8",
    ),
    (
        "report.md",
        "4fd79e6e6bfe70ec17d9d68e9038a35521f377bf5cc35dcebba8f409b6980bcd",
    ),
    (
        "recheck.csv",
        "d5792bb7b704a283a01e97d3a9d1d36ada805e96413fcc719017618655f9f60d",
    ),
];

#[test]
fn duplicates_across_files_of_one_configuration_and_task_keep_the_first_file() {
    // Two folders above the agent folder give the same configuration and task: the second
    // file's instances repeat the first's and are duplicates, as in a single list.
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("outputs");
    let src = "gpt-3.5-turbo-0613/F=None/max5_p2+tool+cd/reasoning/gsm8k/results.jsonl";
    copy_as(&root, src, &format!("a/{src}"), 3);
    copy_as(&root, src, &format!("b/{src}"), 5);
    for flags in [&[][..], &["--recheck"][..]] {
        let out = dir.path().join(format!("out{}", flags.len()));
        let mut args = vec![
            "mint",
            "--outputs",
            root.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
            "--json",
            "--quiet",
        ];
        args.extend(flags);
        let o = run(&args);
        assert!(o.status.success(), "{}", stderr(&o));
        let m: Value = serde_json::from_str(&stdout(&o)).unwrap();
        assert_eq!(m["metrics"]["trajectories"], 8);
        assert_eq!(m["metrics"]["duplicates"], 3);
        let items = std::fs::read_to_string(out.join("items.jsonl")).unwrap();
        let dup: Vec<(String, bool)> = items
            .lines()
            .map(|l| {
                let v: Value = serde_json::from_str(l).unwrap();
                (
                    v["file"].as_str().unwrap()[root.to_str().unwrap().len() + 1..][..1]
                        .to_string(),
                    v["duplicate"].as_bool().unwrap(),
                )
            })
            .collect();
        let want: Vec<(String, bool)> = [("a", false); 3]
            .into_iter()
            .chain([("b", true); 3])
            .chain([("b", false); 2])
            .map(|(f, d)| (f.to_string(), d))
            .collect();
        assert_eq!(dup, want, "{flags:?}");
    }
}

#[test]
fn bad_input_leaves_no_output_folder_and_no_staged_file() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("outputs");
    let good = "gpt-3.5-turbo-0613/F=None/max5_p2+tool+cd/reasoning/gsm8k/results.jsonl";
    let bad = "gpt-3.5-turbo-0613/F=None/max5_p2+tool+cd/reasoning/math/results.jsonl";
    copy_as(&root, good, good, 20);
    copy_as(&root, bad, bad, 4);
    let path = root.join(bad);
    let text = std::fs::read_to_string(&path).unwrap();
    let broken = text.replacen("\"success\": ", "\"success\": 1, \"x\": ", 1);
    // A bad line 1, and invalid UTF-8 further on: the bad byte is reported, as a whole-file
    // check reports it.
    let mut bytes = broken.into_bytes();
    bytes.extend(b"{\"a\": \"\xff\"}\n");
    std::fs::write(&path, &bytes).unwrap();
    for flags in [&[][..], &["--recheck"][..]] {
        let out = dir.path().join("out");
        let mut args = vec![
            "mint",
            "--outputs",
            root.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
        ];
        args.extend(flags);
        let o = run(&args);
        assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
        assert!(
            stderr(&o).contains("math/results.jsonl:5: not valid UTF-8"),
            "{}",
            stderr(&o)
        );
        assert!(!out.exists(), "{flags:?}");
        let left: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(left, ["outputs"], "{flags:?}");
    }
    // Without the bad byte, the bad field is named.
    std::fs::write(&path, &bytes[..bytes.len() - 11]).unwrap();
    let o = run(&[
        "mint",
        "--outputs",
        root.to_str().unwrap(),
        "--out",
        dir.path().join("out").to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("math/results.jsonl:1: field \"state.success\": expected a boolean"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn timings_name_every_phase() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("outputs");
    let src = "gpt-3.5-turbo-0613/F=None/max5_p2+tool+cd/reasoning/gsm8k/results.jsonl";
    copy_as(&root, src, src, 10);
    let out = dir.path().join("out");
    let o = run(&[
        "mint",
        "--outputs",
        root.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
        "--timings",
        "--quiet",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let e = stderr(&o);
    for phase in [
        "walk",
        "parse",
        "recheck",
        "aggregate",
        "write items",
        "bootstrap",
        "write",
        "total (wall)",
        "peak RSS",
    ] {
        assert!(e.contains(phase), "{phase}: {e}");
    }
    assert!(e.contains("10 trajectories"), "{e}");
}
