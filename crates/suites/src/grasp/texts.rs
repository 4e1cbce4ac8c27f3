//! The texts report.html shows beside GRASP's items: each row's prompt and response, read again
//! from the results files metrics.json records (each only where it is still at its recorded
//! path with its recorded sha256), keyed by the item's model (`--labels`; none for one file) and
//! row. Up to [`TEXT_BUDGET`] bytes: a page does not hold a million responses.

use crate::settings::GraspSettings;
use scorekit_io::{read_jsonl, CsvStream};
use scorekit_report::{sha256_file, MetricsDoc};
use serde_json::{json, Map, Value};
use std::path::Path;

/// At most this many bytes of prompts and responses go into a page.
pub const TEXT_BUDGET: usize = 16 << 20;

/// `{"rows": {model: {row: [prompt, response]}}}` (model `""` for a run of one file), or `None`
/// where no results file is found as recorded.
pub fn page_texts(doc: &MetricsDoc) -> Option<Value> {
    let labels = doc
        .suite_settings::<GraspSettings>()
        .ok()
        .and_then(|s| s.models);
    let files: Vec<&scorekit_report::InputFile> = doc
        .inputs
        .iter()
        .filter(|f| !(f.path.ends_with(".yaml") || f.path.ends_with(".yml")))
        .collect();
    let mut budget = TEXT_BUDGET;
    let mut by_model = Map::new();
    for (i, f) in files.iter().enumerate() {
        let path = Path::new(&f.path);
        if sha256_file(path).ok()? != f.sha256 {
            return None;
        }
        let model = match &labels {
            Some(l) => l.get(i)?.clone(),
            None => String::new(),
        };
        let mut rows = Map::new();
        // False once the budget is spent: the rest of the file is not read.
        let mut take = |row: usize, prompt: String, response: String| {
            let cost = prompt.len() + response.len() + 16;
            if cost > budget {
                return false;
            }
            budget -= cost;
            rows.insert(row.to_string(), json!([prompt, response]));
            true
        };
        if is_jsonl(path) {
            for r in read_jsonl(path).ok()? {
                let text = |k: &str| r.opt_str(k).ok().flatten().unwrap_or("").to_string();
                if !take(r.row, text("prompt"), text("response")) {
                    break;
                }
            }
        } else {
            let mut csv = CsvStream::open(path, &[]).ok()?;
            let (prompt, response) = (csv.column("prompt"), csv.column("response"));
            while let Some(rec) = csv.next_record().ok()? {
                let cell = |c: Option<usize>| {
                    c.and_then(|c| rec.fields.get(c))
                        .cloned()
                        .unwrap_or_default()
                };
                if !take(rec.row, cell(prompt), cell(response)) {
                    break;
                }
            }
        }
        by_model.insert(model, Value::Object(rows));
    }
    Some(json!({ "rows": by_model }))
}

/// A JSON Lines results file (by extension; GRASP's reader also sniffs a leading `{`).
fn is_jsonl(path: &Path) -> bool {
    matches!(
        path.extension().and_then(|e| e.to_str()),
        Some("jsonl" | "ndjson")
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use scorekit_report::InputFile;

    #[test]
    fn prompts_and_responses_by_model_and_row_from_unchanged_files_only() {
        let dir = tempfile::tempdir().unwrap();
        let csv = dir.path().join("a.csv");
        std::fs::write(
            &csv,
            "scene,prompt,video_file,gt,response\nMovement,\"Is it, moving?\",v.mp4,yes,\"</script>\nYes\"\n",
        )
        .unwrap();
        let yaml = dir.path().join("test_config.yaml");
        std::fs::write(&yaml, "test: x\n").unwrap();
        let mut doc = MetricsDoc::new("grasp");
        doc.inputs = vec![
            InputFile::hash(&csv).unwrap(),
            InputFile::hash(&yaml).unwrap(),
        ];
        let t = page_texts(&doc).unwrap();
        assert_eq!(
            t["rows"][""]["1"],
            json!(["Is it, moving?", "</script>\nYes"])
        );
        std::fs::write(&csv, "scene,prompt,video_file,gt,response\n").unwrap();
        assert!(page_texts(&doc).is_none(), "an edited file gives no text");
    }
}
