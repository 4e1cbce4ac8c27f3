//! report.html end to end: every scoring run writes it beside report.md, it embeds every item
//! as escaped JSON (a hostile ending cannot close its block), it is the same bytes for the same
//! folder (a rerun, `scorekit view`), and `scorekit view` and `scorekit compare` render several
//! runs under a leaderboard. The browser's side (nothing runs, no network, the numbers shown)
//! is tests/browser/test_report_html.py.

use crate::common;

use common::tiny_judge::story_args;
use common::{read_json, repo, run, stderr, test_data};
use serde_json::Value;
use std::path::Path;

const HOSTILE: &str = "</script><img src=x onerror=\"window.pwned=1\"> \u{2028}<!--";

/// The JSON of a page's data block `id`.
fn data_block(page: &str, id: &str) -> Value {
    let open = format!("<script type=\"application/json\" id=\"{id}-data\">");
    let start = page.find(&open).expect("data block") + open.len();
    let len = page[start..].find("</script>").expect("block closed");
    serde_json::from_str(&page[start..start + len]).expect("the block is JSON")
}

/// The lines of a page's table of items (columns, strings, rows; a cell is a string's index,
/// `[value]`, or null for a missing key), as report.js reads them.
fn lines_of(table: &Value) -> Vec<Value> {
    let cols = table["columns"].as_array().unwrap();
    let strings = table["strings"].as_array().unwrap();
    table["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|row| {
            let mut m = serde_json::Map::new();
            for (c, cell) in cols.iter().zip(row.as_array().unwrap()) {
                let v = match cell {
                    Value::Null => continue,
                    Value::Array(a) => a[0].clone(),
                    Value::Number(i) => strings[i.as_u64().unwrap() as usize].clone(),
                    other => panic!("not a cell: {other}"),
                };
                m.insert(c.as_str().unwrap().to_string(), v);
            }
            Value::Object(m)
        })
        .collect()
}

fn ok(args: &[&str]) {
    let o = run(args);
    assert!(o.status.success(), "{args:?}: {}", stderr(&o));
}

/// A story run (tiny judge, 12 real dev questions, two models) with a hostile first ending.
fn story_run(dir: &Path, out: &Path) {
    let mut args = story_args(dir, 12, &["a", "b"]);
    let gens = dir.join("gen.jsonl");
    let text = std::fs::read_to_string(&gens).unwrap();
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    let mut first: Value = serde_json::from_str(&lines[0]).unwrap();
    first["ending"] = Value::String(HOSTILE.into());
    lines[0] = first.to_string();
    std::fs::write(&gens, lines.join("\n") + "\n").unwrap();
    args.extend(["--out".into(), out.display().to_string(), "--quiet".into()]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    ok(&args);
}

#[test]
fn a_story_run_writes_a_page_with_every_item_escaped_and_the_same_bytes_again() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("run");
    story_run(dir.path(), &out);
    let page = std::fs::read_to_string(out.join("report.html")).unwrap();
    // Nothing of the hostile ending as markup: two script elements (data, the page's own).
    assert!(!page.contains("<img"), "hostile markup in the page");
    assert!(!page.contains('\u{2028}'));
    assert_eq!(page.matches("<script").count(), 2);
    // No resource from elsewhere: no stylesheet or script link, no remote reference.
    assert!(!page.contains("<link") && !page.contains("href=\"http") && !page.contains("url("));
    let data = data_block(&page, "run0");
    let items = std::fs::read_to_string(out.join("items.jsonl")).unwrap();
    let lines: Vec<Value> = items
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(data["suite"], "story");
    assert_eq!(lines_of(&data["items"]), lines, "every item, as written");
    // The ending comes from the generations, by line, untouched.
    assert_eq!(data["texts"]["endings"]["1"], HOSTILE);
    let q = lines[0]["question_id"].as_str().unwrap();
    assert_eq!(
        data["texts"]["questions"][q]["options"]
            .as_array()
            .unwrap()
            .len(),
        4
    );
    // calibration.jsonl too.
    let cal = std::fs::read_to_string(out.join("calibration.jsonl")).unwrap();
    assert_eq!(lines_of(&data["calibration"]).len(), cal.lines().count());
    // The numbers of metrics.json are on the page.
    let m = read_json(&out.join("metrics.json"));
    let ifsm = m["groups"]["a"]["ifsm"]["value"].as_f64().unwrap();
    assert!(
        page.contains(&format!("data-value=\"{ifsm}\"")),
        "IFSM {ifsm} of metrics.json shown"
    );

    // The same folder gives the same page: `scorekit view`, and a rerun into a folder of the
    // same name.
    let viewed = dir.path().join("viewed.html");
    ok(&[
        "view",
        out.to_str().unwrap(),
        "--out",
        viewed.to_str().unwrap(),
    ]);
    assert!(
        std::fs::read(&viewed).unwrap() == page.as_bytes(),
        "view = report.html"
    );
    let again = dir.path().join("again/run");
    std::fs::create_dir_all(again.parent().unwrap()).unwrap();
    let mut args = story_args(&dir.path().join("again"), 12, &["a", "b"]);
    // The same generations file as the first run (its path is in metrics.json's inputs).
    let gi = args.iter().position(|a| a == "--generations").unwrap();
    args[gi + 1] = dir.path().join("gen.jsonl").display().to_string();
    let ji = args.iter().position(|a| a == "--judge").unwrap();
    args[ji + 1] = dir.path().join("judge").display().to_string();
    let ei = args.iter().position(|a| a == "--embedder").unwrap();
    args[ei + 1] = dir.path().join("embedder").display().to_string();
    args.extend([
        "--out".into(),
        again.display().to_string(),
        "--quiet".into(),
    ]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    ok(&args);
    assert!(
        std::fs::read(again.join("report.html")).unwrap() == page.as_bytes(),
        "the same run gives the same bytes"
    );
}

#[test]
fn view_puts_two_runs_under_the_leaderboard_and_compare_writes_its_page() {
    let dir = tempfile::tempdir().unwrap();
    let q = test_data("muse:queries", "MuSE_Benchmark/queries.json");
    let mut outs = Vec::new();
    for plans in ["hugginggpt.jsonl", "scorekit.jsonl"] {
        let out = dir.path().join(plans.trim_end_matches(".jsonl"));
        let plans = repo().join("tests/data/muse").join(plans);
        ok(&[
            "muse",
            "--queries",
            q.to_str().unwrap(),
            "--plans",
            plans.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
            "--bootstrap",
            "100",
        ]);
        assert!(out.join("report.html").is_file());
        outs.push(out);
    }
    let page = dir.path().join("view.html");
    ok(&[
        "view",
        outs[0].to_str().unwrap(),
        outs[1].to_str().unwrap(),
        "--out",
        page.to_str().unwrap(),
        "--bootstrap",
        "100",
    ]);
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(html.contains("id=\"leaderboard\""));
    assert_eq!(html.matches("<tr data-system=").count(), 2, "two systems");
    assert!(html.contains("id=\"paired-tests\""));
    for run in ["run0", "run1"] {
        assert_eq!(lines_of(&data_block(&html, run)["items"]).len(), 100);
    }
    // `scorekit compare` writes the same leaderboard into its folder's page.
    let cmp = dir.path().join("cmp");
    ok(&[
        "compare",
        "--runs",
        outs[0].to_str().unwrap(),
        outs[1].to_str().unwrap(),
        "--out",
        cmp.to_str().unwrap(),
        "--bootstrap",
        "100",
    ]);
    let cmp_page = std::fs::read_to_string(cmp.join("report.html")).unwrap();
    assert_eq!(cmp_page.matches("<tr data-system=").count(), 2);
    let viewed = dir.path().join("cmp.html");
    ok(&[
        "view",
        cmp.to_str().unwrap(),
        "--out",
        viewed.to_str().unwrap(),
    ]);
    assert_eq!(std::fs::read_to_string(&viewed).unwrap(), cmp_page);
}

#[test]
fn view_refuses_a_folder_that_holds_no_run_by_name() {
    let dir = tempfile::tempdir().unwrap();
    let empty = dir.path().join("empty");
    std::fs::create_dir_all(&empty).unwrap();
    for bad in [empty.clone(), dir.path().join("missing")] {
        let o = run(&["view", bad.to_str().unwrap(), "--out", "/dev/null"]);
        assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
        assert!(stderr(&o).contains(bad.to_str().unwrap()), "{}", stderr(&o));
    }
}

#[test]
fn two_mint_runs_of_the_real_trajectories_write_the_same_page() {
    // MINT's report.md says how long the run took; the page leaves that line out.
    let dir = tempfile::tempdir().unwrap();
    let outputs = test_data("mint:headline", "data/outputs");
    let mut pages = Vec::new();
    for i in 0..2 {
        let out = dir.path().join(i.to_string()).join("mint");
        ok(&[
            "mint",
            "--outputs",
            outputs.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
            "--quiet",
        ]);
        pages.push(std::fs::read(out.join("report.html")).unwrap());
    }
    assert!(pages[0] == pages[1], "the same run, the same bytes");
    let page = String::from_utf8(pages.swap_remove(0)).unwrap();
    assert!(!page.contains("read and tabulated in"));
    let items = lines_of(&data_block(&page, "run0")["items"]);
    assert_eq!(items.len(), 4102);
    assert!(page.contains("<polyline"), "the SR_k curves");
}

/// A `judge eval` run of a tiny decoder judge under cyclic option orders, on real dev questions
/// whose first passage is hostile: the page holds every item, the questions' texts (the passage
/// as text, never markup), the accuracy chart beside chance and the picks per letter, and
/// `scorekit view` gives the same bytes.
#[test]
fn a_judge_eval_run_shows_its_questions_picks_and_charts() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    let judge = crate::decoder::decoder_folder("qwen3", d, false);
    let head = crate::letter::dev_head(d, 8);
    let text = std::fs::read_to_string(&head).unwrap();
    let mut lines: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    lines[0]["document"] = Value::String(HOSTILE.into());
    let body: String = lines.iter().map(|l| format!("{l}\n")).collect();
    std::fs::write(&head, body).unwrap();
    let out = d.join("eval");
    let o = crate::letter::eval_letter(
        &judge,
        &head,
        &out,
        &["--option-orders", "cyclic", "--no-calibration"],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let page = std::fs::read_to_string(out.join("report.html")).unwrap();
    assert!(!page.contains("<img"), "hostile markup in the page");
    assert_eq!(page.matches("<script").count(), 2);
    let data = data_block(&page, "run0");
    assert_eq!(data["suite"], "judge-eval");
    let items = crate::letter::read_items(&out.join("items.jsonl"));
    assert_eq!(lines_of(&data["items"]), items, "every item, as written");
    // Every question's texts, from the question file as recorded; the hostile passage as text.
    for (item, q) in items.iter().zip(&lines) {
        let t = &data["texts"]["questions"][item["question_id"].as_str().unwrap()];
        assert_eq!(t["passage"], q["document"]);
        assert_eq!(t["options"], q["options"]);
        // A decoder judge under cyclic orders: letter logits, letter mass, every rotation.
        assert_eq!(item["letter_logits"].as_array().unwrap().len(), 4);
        assert!(item["letter_mass"].as_f64().is_some());
        assert_eq!(item["cyclic"]["picks"].as_array().unwrap().len(), 4);
    }
    assert_eq!(
        data["texts"]["questions"][items[0]["question_id"].as_str().unwrap()]["passage"],
        HOSTILE
    );
    // The charts: accuracy (and the majority over rotations) beside chance, picks per letter.
    let m = read_json(&out.join("metrics.json"));
    assert!(page.contains("Judge: accuracy and consistency"));
    assert!(page.contains("majority over rotations") && page.contains("chance (accuracy)"));
    assert!(page.contains("Judge: share of picks per letter"));
    let acc = m["metrics"]["accuracy"]["value"].as_f64().unwrap();
    assert!(
        page.contains(&format!("data-value=\"{acc}\"")),
        "accuracy {acc} of metrics.json shown"
    );
    let viewed = d.join("viewed.html");
    ok(&[
        "view",
        out.to_str().unwrap(),
        "--out",
        viewed.to_str().unwrap(),
    ]);
    assert!(
        std::fs::read(&viewed).unwrap() == page.as_bytes(),
        "view = report.html"
    );
}
