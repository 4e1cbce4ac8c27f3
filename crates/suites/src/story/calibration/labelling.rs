//! The labelling page of a label file (`to_label.html` beside a run's to_label.jsonl, and
//! `scorekit label FILE.jsonl`): its lines read and checked, then rendered by
//! `scorekit_report::label_page`. The page shows each ending with its story and question only,
//! so a line's `model` (and any `follows` already there) stays out of it; the sample is the
//! sha256 of the file's bytes, which the exported labels carry (`label_set::check_sample`).

use crate::story::Question;
use scorekit_core::error::{InputError, Result};
use scorekit_io::Record;
use scorekit_report::label_page::{self, LabelPage, PageItem};
use std::collections::{HashMap, HashSet};
use std::path::Path;

/// The endings to label, in the file's order: each line's `question_id` and non-empty `ending`,
/// with its `passage` and `question` from the line, or else from `questions` (the dataset) by
/// id. `model` must be a string and `follows` true, false or null where present (so a file
/// that is not a label file is refused, not half read). An ending that recurs for its question
/// (two models wrote it alike) is shown once: one text, one answer.
pub fn page_items(
    records: &[Record],
    questions: Option<&[Question]>,
) -> std::result::Result<Vec<PageItem>, InputError> {
    let by_id: HashMap<&str, &Question> = questions
        .unwrap_or_default()
        .iter()
        .map(|q| (q.id.as_str(), q))
        .collect();
    let mut seen: HashSet<(String, String)> = HashSet::new();
    let mut items = Vec::with_capacity(records.len());
    for r in records {
        let question_id = r.str("question_id")?;
        let ending = r.str("ending")?;
        if ending.trim().is_empty() {
            return Err(r.field_error(
                "ending",
                "empty: an empty ending does not follow, there is nothing to label",
            ));
        }
        r.opt_str("model")?;
        if let Some(v) = r.get("follows")? {
            if !v.is_boolean() {
                return Err(r.field_error(
                    "follows",
                    format!(
                        "expected true, false or null, found {}",
                        scorekit_io::type_name(v)
                    ),
                ));
            }
        }
        let from_dataset = |field: &str| -> std::result::Result<String, InputError> {
            if questions.is_none() {
                return Err(r.field_error(
                    field,
                    "missing: the line has no story to show; give --dataset to read the \
                     passage and question from the dataset",
                ));
            }
            let q = by_id.get(question_id).ok_or_else(|| {
                r.field_error(
                    "question_id",
                    format!("{question_id:?} is not a question of the dataset"),
                )
            })?;
            Ok(if field == "passage" {
                q.document.clone()
            } else {
                q.question.clone()
            })
        };
        let passage = match r.opt_str("passage")? {
            Some(p) => p.to_string(),
            None => from_dataset("passage")?,
        };
        let question = match r.opt_str("question")? {
            Some(q) => q.to_string(),
            None => from_dataset("question")?,
        };
        if !seen.insert((question_id.to_string(), ending.trim().to_string())) {
            continue;
        }
        items.push(PageItem {
            question_id: question_id.to_string(),
            passage,
            question,
            ending: ending.to_string(),
        });
    }
    Ok(items)
}

/// The labelling page of the label file `input`, and the endings on it.
pub fn page(input: &Path, questions: Option<&[Question]>) -> Result<(String, usize)> {
    let records = scorekit_io::read_jsonl(input)?;
    let items = page_items(&records, questions)?;
    let sample = scorekit_report::sha256_file(input)
        .map_err(|e| InputError::file(input, format!("cannot read: {e}")))?;
    let name = input.file_name().map_or_else(
        || input.display().to_string(),
        |n| n.to_string_lossy().into(),
    );
    let html = label_page::render(&LabelPage {
        file: &name,
        sample: &sample,
        items: &items,
    })?;
    Ok((html, items.len()))
}

/// [`page`] written to `out`; returns the endings on it.
pub fn write_page(input: &Path, questions: Option<&[Question]>, out: &Path) -> Result<usize> {
    let (html, endings) = page(input, questions)?;
    scorekit_report::atomic_write(out, html.as_bytes())?;
    Ok(endings)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn records(v: &[serde_json::Value]) -> Vec<Record> {
        v.iter()
            .enumerate()
            .map(|(i, v)| Record {
                file: "to_label.jsonl".into(),
                line: i + 1,
                row: i + 1,
                value: v.clone(),
            })
            .collect()
    }

    fn question() -> Question {
        Question {
            id: "p1_q0".into(),
            row: 1,
            passage_id: "p1".into(),
            question: "Which ending is the saddest?".into(),
            document: "Tina made spaghetti.".into(),
            options: vec!["a".into(), "b".into(), "c".into(), "d".into()],
            gold: 1,
        }
    }

    #[test]
    fn items_keep_the_files_order_and_show_a_recurring_ending_once() {
        let line = |e: &str, m: &str| {
            json!({"question_id": "p1_q0", "ending": e, "follows": null, "model": m,
                   "passage": "P", "question": "Q"})
        };
        let rs = records(&[line("b", "m1"), line("a", "m1"), line(" b ", "m2")]);
        let items = page_items(&rs, None).unwrap();
        let endings: Vec<&str> = items.iter().map(|i| i.ending.as_str()).collect();
        assert_eq!(endings, ["b", "a"]);
        assert_eq!(
            (items[0].passage.as_str(), items[0].question.as_str()),
            ("P", "Q")
        );
    }

    #[test]
    fn a_label_file_without_the_story_reads_it_from_the_dataset_or_names_the_field() {
        let rs = records(&[json!({"question_id": "p1_q0", "ending": "e", "follows": true})]);
        let e = page_items(&rs, None).unwrap_err().to_string();
        assert!(
            e.contains("to_label.jsonl:1") && e.contains("passage") && e.contains("--dataset"),
            "{e}"
        );
        let qs = [question()];
        let items = page_items(&rs, Some(&qs)).unwrap();
        assert_eq!(items[0].passage, "Tina made spaghetti.");
        assert_eq!(items[0].question, "Which ending is the saddest?");
        let unknown = records(&[json!({"question_id": "zz", "ending": "e"})]);
        let e = page_items(&unknown, Some(&qs)).unwrap_err().to_string();
        assert!(e.contains("question_id") && e.contains("\"zz\""), "{e}");
    }

    #[test]
    fn bad_lines_name_line_and_field() {
        let ok = json!({"question_id": "p1_q0", "ending": "e", "passage": "P", "question": "Q"});
        for (bad, field) in [
            (
                json!({"ending": "e", "passage": "P", "question": "Q"}),
                "question_id",
            ),
            (
                json!({"question_id": "p1_q0", "ending": " ", "passage": "P", "question": "Q"}),
                "ending",
            ),
            (
                json!({"question_id": "p1_q0", "ending": 3, "passage": "P", "question": "Q"}),
                "ending",
            ),
            (
                json!({"question_id": "p1_q0", "ending": "e", "passage": "P", "question": "Q", "follows": "yes"}),
                "follows",
            ),
            (
                json!({"question_id": "p1_q0", "ending": "e", "passage": "P", "question": "Q", "model": 7}),
                "model",
            ),
            (
                json!({"question_id": "p1_q0", "ending": "e", "passage": ["P"], "question": "Q"}),
                "passage",
            ),
        ] {
            let e = page_items(&records(&[ok.clone(), bad]), None)
                .unwrap_err()
                .to_string();
            assert!(
                e.contains("to_label.jsonl:2") && e.contains(field),
                "{field}: {e}"
            );
        }
    }
}
