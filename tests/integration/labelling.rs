//! The labelling page on a real run (the dev split, a tiny judge): `--label-sample N` writes
//! to_label.html beside to_label.jsonl; `scorekit label` makes the same page from the file; the
//! page holds the stories, questions and endings and nothing that would bias the labeller (no
//! model, verdict or option); labels carrying the run's `sample` take their models from it and
//! give each model's PPI estimate, and labels of another sample are refused naming file, line
//! and field.
//!
//! With `SCOREKIT_LABEL_FIXTURE=DIR` the run is left in DIR with `fixture.json` (how to run
//! it again with labels), for the browser test `tests/browser/test_label_page.py`.

use crate::common::tiny_judge::build_judge;
use crate::common::{dev_questions, read_json, scorekit, stderr, test_data, write};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};

/// An ending no page may run: it must show as text.
pub const HOSTILE: &str = "</script><img src=x onerror=\"window.pwned=1\"> The end & <b>bold</b>.";

const MODELS: [&str; 3] = ["model-alpha-7b", "model-beta-13b", "model-gamma-hostile"];
const SAMPLE: &str = "12";
const SEED: &str = "3";

/// The story run's arguments but `--out` and the labels: the sample drawn with `seed`, or none.
fn story_args(root: &Path, sample: Option<&str>) -> Vec<String> {
    let dataset = test_data("possible-stories:dev", "dataset/dev.jsonl");
    let mut args: Vec<String> = [
        "story",
        "--dataset",
        dataset.to_str().unwrap(),
        "--generations",
        root.join("gen.jsonl").to_str().unwrap(),
        "--judge",
        root.join("judge").to_str().unwrap(),
        "--skip-embedder",
        "--no-calibration",
        "--quiet",
        "--bootstrap",
        "200",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    if let Some(seed) = sample {
        args.extend(["--label-sample", SAMPLE, "--seed", seed].map(String::from));
    }
    args
}

fn story(root: &Path, out: &str, sample: Option<&str>, extra: &[&str]) -> std::process::Output {
    scorekit()
        .args(story_args(root, sample))
        .args(["--out", root.join(out).to_str().unwrap()])
        .args(extra)
        .output()
        .unwrap()
}

/// The JSON block of a labelling page.
fn page_data(html: &str) -> Value {
    let open = "<script type=\"application/json\" id=\"sample-data\">";
    let start = html.find(open).unwrap() + open.len();
    let len = html[start..].find("</script>").unwrap();
    serde_json::from_str(&html[start..start + len]).unwrap()
}

fn lines(p: &Path) -> Vec<Value> {
    std::fs::read_to_string(p)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// Labels as the page exports them: the sample's endings without their models, `follows`
/// true for the gold option, with the labeller and the sample.
fn export(sample: &[Value], gold: &std::collections::HashMap<String, String>, sha: &str) -> String {
    let mut seen = std::collections::HashSet::new();
    let mut text = String::new();
    for l in sample {
        let (q, e) = (
            l["question_id"].as_str().unwrap(),
            l["ending"].as_str().unwrap(),
        );
        if seen.insert((q.to_string(), e.to_string())) {
            let v = json!({"question_id": q, "ending": e, "follows": gold[q] == e,
                           "labeller": "ann", "sample": sha});
            text += &format!("{v}\n");
        }
    }
    text
}

#[test]
fn a_runs_labelling_page_holds_no_bias_and_its_labels_give_ppi_for_this_sample_only() {
    let tmp = tempfile::tempdir().unwrap();
    let fixture = std::env::var_os("SCOREKIT_LABEL_FIXTURE").map(PathBuf::from);
    let root = fixture.clone().unwrap_or_else(|| tmp.path().to_path_buf());
    if root.exists() && fixture.is_some() {
        std::fs::remove_dir_all(&root).unwrap();
    }
    std::fs::create_dir_all(&root).unwrap();
    build_judge("bert_mc", &root.join("judge"), true);
    // Three models: the gold option, a fixed wrong ending, and a hostile one.
    let mut gens = String::new();
    let mut gold = std::collections::HashMap::new();
    for q in dev_questions() {
        let g = q["options"][q["gold_label"].as_u64().unwrap() as usize].clone();
        gold.insert(
            q["question_id"].as_str().unwrap().to_string(),
            g.as_str().unwrap().to_string(),
        );
        for (model, ending) in MODELS.iter().zip([g, json!("The end."), json!(HOSTILE)]) {
            let v = json!({"question_id": q["question_id"], "ending": ending, "model": model});
            gens += &format!("{v}\n");
        }
    }
    write(&root, "gen.jsonl", gens);

    let o = story(&root, "run", Some(SEED), &[]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("to_label.html: its labelling page"),
        "{}",
        stderr(&o)
    );
    let run = root.join("run");
    let jsonl = run.join("to_label.jsonl");
    let html = std::fs::read_to_string(run.join("to_label.html")).unwrap();
    let sample = lines(&jsonl);
    assert_eq!(sample.len(), 12 * 3);
    let sha = scorekit::report::sha256_file(&jsonl).unwrap();

    // The page: every ending of the file, in its order, with its story and question, keyed by
    // the file's sha256; no model name, no verdict, no option list anywhere in it.
    let data = page_data(&html);
    assert_eq!(data["sample"], sha.as_str());
    let items = data["items"].as_array().unwrap();
    assert_eq!(items.len(), sample.len());
    for (item, line) in items.iter().zip(&sample) {
        for k in ["question_id", "ending", "passage", "question"] {
            assert_eq!(item[k], line[k], "{k}");
        }
        assert_eq!(item.as_object().unwrap().len(), 4, "{item}");
    }
    for model in MODELS {
        assert!(!html.contains(model), "the page names {model:?}");
    }
    // (Texts may say "follow" or "options": the keys above are the check on the data.)
    let keys: Vec<&String> = data.as_object().unwrap().keys().collect();
    assert_eq!(keys, ["sample", "items"]);
    // The hostile ending is in the data block, escaped, and nowhere as markup.
    assert!(items.iter().any(|i| i["ending"] == HOSTILE));
    assert!(!html.contains("<img src=x"));

    // `scorekit label` makes the same page from the file; the default --out is FILE.html.
    let copy = write(&root, "copy.jsonl", std::fs::read(&jsonl).unwrap());
    let o = scorekit().arg("label").arg(&copy).output().unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let made = std::fs::read_to_string(root.join("copy.html")).unwrap();
    assert_eq!(made.replace("copy.jsonl", "to_label.jsonl"), html);

    // A label file without the stories (the --calibration-labels format) takes them from
    // --dataset by question id.
    let bare: String = sample
        .iter()
        .take(3)
        .map(|l| {
            format!(
                "{}\n",
                json!({"question_id": l["question_id"], "ending": l["ending"], "follows": true})
            )
        })
        .collect();
    let bare = write(&root, "bare.jsonl", bare);
    let dev = test_data("possible-stories:dev", "dataset/dev.jsonl");
    let o = scorekit()
        .arg("label")
        .arg(&bare)
        .arg("--dataset")
        .arg(&dev)
        .args(["--out", root.join("bare-page.html").to_str().unwrap()])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let bare_items = page_data(&std::fs::read_to_string(root.join("bare-page.html")).unwrap());
    assert_eq!(bare_items["items"].as_array().unwrap().len(), 3);
    for (item, line) in bare_items["items"].as_array().unwrap().iter().zip(&sample) {
        assert_eq!(
            (&item["passage"], &item["question"]),
            (&line["passage"], &line["question"])
        );
    }

    // Labels of this sample: accepted, each given its model by the sample, and every model's
    // PPI rests on its 12 labelled endings.
    let labels = write(&root, "labels-ann.jsonl", export(&sample, &gold, &sha));
    let labels_arg = labels.to_str().unwrap();
    let with = ["--calibration-labels", labels_arg];
    let o = story(&root, "labelled", Some(SEED), &with);
    assert!(o.status.success(), "{}", stderr(&o));
    let m = read_json(&root.join("labelled/metrics.json"));
    for model in MODELS {
        let ppi = &m["groups"][model]["ifsm_ppi"];
        assert_eq!(ppi["n_labeled"], 12, "{model}: {ppi}");
        assert!(ppi["value"].is_number(), "{model}: {ppi}");
    }
    // The gold model's labels all say follows, the others' none: PPI's labelled mean.
    let human: Vec<(String, bool)> = lines(&root.join("labelled/items.jsonl"))
        .iter()
        .filter_map(|i| {
            i["human_follows"]
                .as_bool()
                .map(|h| (i["group"].as_str().unwrap().to_string(), h))
        })
        .collect();
    assert_eq!(human.len(), 36);
    assert!(
        human.iter().all(|(g, h)| *h == (g == MODELS[0])),
        "{human:?}"
    );
    assert_eq!(m["metrics"]["calibration"]["human"]["label_lines"], 36);

    // Another seed draws another sample: refused, naming the file, the line and the field; as
    // is a run that draws no sample to check them against.
    let o = story(&root, "other-seed", Some("4"), &with);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let want = format!("{labels_arg}:1: field \"sample\": {sha} is not this run's sample");
    assert!(stderr(&o).contains(&want), "{}", stderr(&o));
    assert!(!root.join("other-seed/metrics.json").exists());
    let o = story(&root, "no-sample", None, &with);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("this run draws no sample"),
        "{}",
        stderr(&o)
    );

    if let Some(dir) = fixture {
        // What the browser test needs to run the story again with the labels it exports.
        let mut args = story_args(&dir, Some(SEED));
        args.extend([
            "--out".into(),
            dir.join("browser-run").display().to_string(),
        ]);
        let manifest = json!({
            "scorekit": env!("CARGO_BIN_EXE_scorekit"),
            "page": run.join("to_label.html"),
            "sample": sha,
            "story_args": args,
            "hostile": HOSTILE,
            "endings": items.len(),
        });
        write(
            &dir,
            "fixture.json",
            serde_json::to_string_pretty(&manifest).unwrap(),
        );
    }
}
