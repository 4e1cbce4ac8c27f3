//! The IFSM frames a calibration asks the judge: four options and a gold slot, as IFSM itself
//! asks (the generated ending in the gold slot), with an ending whose truth is known.
//!
//! Dataset calibration (protocol [`super::PROTOCOL`]), fixed so anyone can reproduce it:
//! - a **positive** per question: its original options; it counts when the judge picks the gold
//!   slot g;
//! - three **negatives** per question, one per distractor slot d ≠ g in ascending order: the
//!   original options with slot g given `options[d]` (an ending that answers another question)
//!   and slot d given the **filler**: the first crowd ending of the question's story in
//!   `endings.jsonl` (file order, text as written) whose stripped text equals none of the
//!   question's stripped options. It counts when the judge does not pick g.
//!
//! Human labels: each labelled ending in the gold slot of its question, as IFSM scores it.

use super::labels::Label;
use crate::pystr::py_strip;
use crate::story::Question;
use scorekit_core::error::InputError;
use scorekit_io::Record;
use std::collections::{HashMap, HashSet};

/// Why a frame is asked, and so what its answer counts as.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FrameKind {
    /// The question's original options: counts when the judge picks the gold slot.
    Positive,
    /// Distractor `slot` moved into the gold slot, the filler in its own slot: counts when the
    /// judge does not pick the gold slot.
    Negative {
        /// The distractor slot d (≠ gold).
        slot: usize,
    },
    /// A labelled ending in the gold slot: counts when the judge's verdict equals the label.
    Label {
        /// Position of the label in the label file (index into the parsed labels).
        index: usize,
        /// The human label: the ending follows the instruction.
        follows: bool,
    },
}

/// One question asked of the judge in the IFSM frame.
#[derive(Debug, Clone)]
pub struct Frame<'a> {
    /// Index of the question in the dataset.
    pub question: usize,
    /// Why it is asked.
    pub kind: FrameKind,
    /// The four options as the judge sees them.
    pub options: Vec<&'a str>,
}

/// Per question, the filler of its negatives (`None`: its story has no crowd ending outside its
/// options, or is not in `endings.jsonl`, so it has no negatives).
pub fn fillers(
    questions: &[Question],
    endings: &[Record],
) -> Result<Vec<Option<String>>, InputError> {
    let mut by_story: HashMap<&str, Vec<&str>> = HashMap::new();
    for r in endings {
        let story = r.str("roc_passage_id")?;
        let list = r.array("endings")?;
        let mut texts = Vec::with_capacity(list.len());
        for (i, e) in list.iter().enumerate() {
            let text = e.get("ending").and_then(|t| t.as_str()).ok_or_else(|| {
                r.field_error(
                    "endings",
                    format!("ending {i}: expected an object with a string \"ending\""),
                )
            })?;
            texts.push(text);
        }
        // A story listed twice keeps its first line: "the first ending in file order".
        by_story.entry(story).or_insert(texts);
    }
    Ok(questions
        .iter()
        .map(|q| {
            let options: HashSet<&str> = q.options.iter().map(|o| py_strip(o)).collect();
            by_story
                .get(q.passage_id.as_str())?
                .iter()
                .find(|e| !options.contains(py_strip(e)))
                .map(|e| e.to_string())
        })
        .collect())
}

/// The dataset calibration's frames of the questions `scope` (dataset indices, in order): the
/// positive, then the negatives by ascending distractor slot (none without a filler).
pub fn dataset_frames<'a>(
    questions: &'a [Question],
    scope: &[usize],
    fillers: &'a [Option<String>],
) -> Vec<Frame<'a>> {
    let mut frames = Vec::with_capacity(scope.len() * 4);
    for &qi in scope {
        let q = &questions[qi];
        let original: Vec<&str> = q.options.iter().map(String::as_str).collect();
        frames.push(Frame {
            question: qi,
            kind: FrameKind::Positive,
            options: original.clone(),
        });
        let Some(filler) = fillers[qi].as_deref() else {
            continue;
        };
        for slot in (0..original.len()).filter(|&d| d != q.gold) {
            let mut options = original.clone();
            options[q.gold] = original[slot];
            options[slot] = filler;
            frames.push(Frame {
                question: qi,
                kind: FrameKind::Negative { slot },
                options,
            });
        }
    }
    frames
}

/// The human-label frames of `labels` whose question passes `keep` (a shard's scope): each
/// labelled ending in its question's gold slot.
pub fn label_frames<'a>(
    questions: &'a [Question],
    labels: &'a [Label],
    keep: impl Fn(&Question) -> bool,
) -> Vec<Frame<'a>> {
    labels
        .iter()
        .enumerate()
        .filter(|(_, l)| keep(&questions[l.question]))
        .map(|(index, l)| {
            let q = &questions[l.question];
            let mut options: Vec<&str> = q.options.iter().map(String::as_str).collect();
            options[q.gold] = &l.ending;
            Frame {
                question: l.question,
                kind: FrameKind::Label {
                    index,
                    follows: l.follows,
                },
                options,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn question(id: &str, options: [&str; 4], gold: usize) -> Question {
        Question {
            id: format!("{id}_a_0"),
            row: 1,
            passage_id: id.to_string(),
            question: "Q?".into(),
            document: "D.".into(),
            options: options.iter().map(|s| s.to_string()).collect(),
            gold,
        }
    }

    fn record(line: usize, v: serde_json::Value) -> Record {
        Record {
            file: "endings.jsonl".into(),
            line,
            row: line,
            value: v,
        }
    }

    #[test]
    fn the_filler_is_the_first_ending_outside_the_options_compared_stripped() {
        let qs = vec![question("s1", ["a", "b", "c", "d"], 2)];
        let endings = vec![record(
            1,
            json!({"roc_passage_id": "s1", "endings": [{"ending": " b "}, {"ending": "e "}, {"ending": "f"}]}),
        )];
        assert_eq!(
            fillers(&qs, &endings).unwrap(),
            vec![Some("e ".to_string())]
        );
    }

    #[test]
    fn negatives_move_each_distractor_into_the_gold_slot_and_fill_its_own() {
        let qs = vec![question("s1", ["a", "b", "c", "d"], 2)];
        let fill = vec![Some("F".to_string())];
        let frames = dataset_frames(&qs, &[0], &fill);
        let shown: Vec<(FrameKind, Vec<&str>)> =
            frames.into_iter().map(|f| (f.kind, f.options)).collect();
        assert_eq!(
            shown,
            vec![
                (FrameKind::Positive, vec!["a", "b", "c", "d"]),
                (FrameKind::Negative { slot: 0 }, vec!["F", "b", "a", "d"]),
                (FrameKind::Negative { slot: 1 }, vec!["a", "F", "b", "d"]),
                (FrameKind::Negative { slot: 3 }, vec!["a", "b", "d", "F"]),
            ]
        );
    }

    #[test]
    fn a_story_without_a_spare_ending_has_positives_only() {
        let qs = vec![question("s1", ["a", "b", "c", "d"], 0)];
        let endings = vec![record(
            1,
            json!({"roc_passage_id": "s1", "endings": [{"ending": "a"}, {"ending": "d"}]}),
        )];
        let fill = fillers(&qs, &endings).unwrap();
        assert_eq!(fill, vec![None]);
        assert_eq!(dataset_frames(&qs, &[0], &fill).len(), 1);
    }

    #[test]
    fn every_dev_and_test_question_has_a_filler() {
        use scorekit_data::testdata::file;
        let read = |spec: &str, rel: &str| {
            scorekit_io::read_jsonl(&file(spec, rel)).expect("test data reads")
        };
        let endings = read("possible-stories:endings", "dataset/endings.jsonl");
        let mut by_story: HashMap<String, Vec<String>> = HashMap::new();
        for r in &endings {
            let texts = r.array("endings").unwrap().iter();
            let texts = texts.map(|e| e["ending"].as_str().unwrap().to_string());
            by_story
                .entry(r.str("roc_passage_id").unwrap().to_string())
                .or_insert_with(|| texts.collect());
        }
        for (split, n, spare_per_100) in [("dev", 458, 380), ("test", 671, 376)] {
            let qs = crate::story::parse_questions(&read(
                &format!("possible-stories:{split}"),
                &format!("dataset/{split}.jsonl"),
            ))
            .unwrap();
            let fill = fillers(&qs, &endings).unwrap();
            assert_eq!(fill.iter().filter(|f| f.is_some()).count(), n, "{split}");
            // Spare endings a question (the filler is the first of them): 3.80 and 3.76.
            let spare: usize = qs
                .iter()
                .map(|q| {
                    let opts: HashSet<&str> = q.options.iter().map(|o| py_strip(o)).collect();
                    by_story[&q.passage_id]
                        .iter()
                        .filter(|e| !opts.contains(py_strip(e)))
                        .count()
                })
                .sum();
            assert_eq!((spare * 100 + n / 2) / n, spare_per_100, "{split}");
        }
    }

    #[test]
    fn a_malformed_endings_line_names_its_field() {
        let qs = vec![question("s1", ["a", "b", "c", "d"], 0)];
        let endings = vec![record(3, json!({"roc_passage_id": "s1", "endings": [7]}))];
        let e = fillers(&qs, &endings).unwrap_err().to_string();
        assert!(e.contains(":3") && e.contains("endings"), "{e}");
    }
}
