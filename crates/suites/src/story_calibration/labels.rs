//! Human labels for the judge's calibration (`--calibration-labels FILE`): JSONL lines
//! `{"question_id", "ending", "follows": true|false}` (`model` optional), and the file a team
//! labels to make one (`--label-sample N`, `to_label.jsonl`: the same format, `follows` null).

use crate::story::Question;
use scorekit_core::error::InputError;
use scorekit_io::Record;
use scorekit_kernels::resample::Xoshiro256;
use serde::Serialize;
use std::collections::HashMap;

/// One labelled ending.
#[derive(Debug, Clone, PartialEq)]
pub struct Label {
    /// 1-based line in the label file.
    pub line: usize,
    /// Index of its question in the dataset.
    pub question: usize,
    /// The ending that was labelled.
    pub ending: String,
    /// The human verdict: the ending follows the instruction.
    pub follows: bool,
    /// The model that wrote the ending, when the file says.
    pub model: Option<String>,
}

/// Parse a label file against the dataset's questions. A malformed line, an unknown
/// `question_id`, an empty ending (IFSM counts it Not-Follow without asking the judge, so it
/// calibrates nothing) or a file without both a positive and a negative is an input error.
pub fn parse_labels(
    file: &str,
    records: &[Record],
    questions: &[Question],
) -> Result<Vec<Label>, InputError> {
    let index: HashMap<&str, usize> = questions
        .iter()
        .enumerate()
        .map(|(i, q)| (q.id.as_str(), i))
        .collect();
    let mut labels = Vec::with_capacity(records.len());
    for r in records {
        let id = r.str("question_id")?;
        let question = *index.get(id).ok_or_else(|| {
            r.field_error(
                "question_id",
                format!("{id:?} is not a question of the dataset"),
            )
        })?;
        let ending = r.str("ending")?;
        if ending.trim().is_empty() {
            return Err(r.field_error(
                "ending",
                "empty: an empty ending is Not-Follow without the judge, so it calibrates nothing",
            ));
        }
        let follows = match r.get("follows")? {
            Some(v) => v.as_bool().ok_or_else(|| {
                r.field_error(
                    "follows",
                    format!(
                        "expected true or false, found {}",
                        scorekit_io::type_name(v)
                    ),
                )
            })?,
            None => {
                return Err(r.field_error(
                    "follows",
                    "missing or null: label the ending true (follows the instruction) or false",
                ))
            }
        };
        labels.push(Label {
            line: r.line,
            question,
            ending: ending.to_string(),
            follows,
            model: r.opt_str("model")?.map(str::to_string),
        });
    }
    for (want, name) in [
        (true, "a positive (follows: true)"),
        (false, "a negative (follows: false)"),
    ] {
        if !labels.iter().any(|l| l.follows == want) {
            return Err(InputError::file(
                file,
                format!(
                    "field follows: the labels need at least {name}: sensitivity and specificity \
                     are each estimated from their own side ({} label(s) read)",
                    labels.len()
                ),
            ));
        }
    }
    Ok(labels)
}

/// One line of `to_label.jsonl`.
#[derive(Debug, Clone, Serialize)]
pub struct ToLabel<'a> {
    /// The question the ending answers.
    pub question_id: &'a str,
    /// The generated ending.
    pub ending: &'a str,
    /// For the labeller to fill: true or false.
    pub follows: Option<bool>,
    /// The model that wrote it, when known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model: Option<&'a str>,
}

/// `n` of the `candidates` (their judge verdict beside each) drawn at random without
/// replacement, stratified by the verdict: each side gets its share of `n` (rounded, the rest to
/// the larger side), drawn by a partial Fisher–Yates shuffle seeded by `seed`. Returns indices
/// into `candidates`, Follow ones first, each side in drawing order.
pub fn stratified_sample(verdicts: &[bool], n: usize, seed: u64) -> Vec<usize> {
    let n = n.min(verdicts.len());
    let follow: Vec<usize> = (0..verdicts.len()).filter(|&i| verdicts[i]).collect();
    let not: Vec<usize> = (0..verdicts.len()).filter(|&i| !verdicts[i]).collect();
    if n == 0 {
        return Vec::new();
    }
    let share = |side: usize| (side as f64 * n as f64 / verdicts.len() as f64).round() as usize;
    let mut take_follow = share(follow.len()).min(follow.len());
    let take_not = (n - take_follow.min(n)).min(not.len());
    take_follow = (n - take_not).min(follow.len());
    let mut out = draw(follow, take_follow, seed, 0);
    out.extend(draw(not, take_not, seed, 1));
    out
}

/// `k` of `pool` by a partial Fisher–Yates shuffle of stream `stream` of `seed`.
fn draw(mut pool: Vec<usize>, k: usize, seed: u64, stream: u64) -> Vec<usize> {
    let mut rng = Xoshiro256::new(seed, stream);
    for i in 0..k {
        let j = i + rng.below((pool.len() - i) as u64) as usize;
        pool.swap(i, j);
    }
    pool.truncate(k);
    pool
}

/// `to_label.jsonl` (`--label-sample N`): `n` scored generations drawn at random, stratified by
/// the judge's verdict, in the label file's format with `follows` null. Returns the file and
/// how many generations were judged (the population drawn from).
pub fn sample_file(
    items: &[crate::story::Item],
    generations: &[crate::story::Generation],
    n: usize,
    seed: u64,
) -> scorekit_core::error::Result<(Vec<u8>, usize)> {
    use crate::story::{Outcome, Status};
    let by_row: HashMap<usize, &crate::story::Generation> =
        generations.iter().map(|g| (g.row, g)).collect();
    let judged: Vec<(&crate::story::Item, bool)> = items
        .iter()
        .filter(|i| i.status == Status::Scored)
        .filter_map(|i| {
            i.judge
                .as_ref()
                .and_then(Outcome::verdict)
                .map(|v| (i, v.follow))
        })
        .collect();
    let verdicts: Vec<bool> = judged.iter().map(|(_, f)| *f).collect();
    let mut text = Vec::new();
    for k in stratified_sample(&verdicts, n, seed) {
        let g = by_row[&judged[k].0.row];
        let line = ToLabel {
            question_id: &g.question_id,
            ending: &g.ending,
            follows: None,
            model: g.model.as_deref(),
        };
        serde_json::to_writer(&mut text, &line)
            .map_err(|e| scorekit_core::error::Error::Internal(e.into()))?;
        text.push(b'\n');
    }
    Ok((text, judged.len()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn q(id: &str) -> Question {
        Question {
            id: id.into(),
            row: 1,
            passage_id: id.into(),
            question: "Q".into(),
            document: "D".into(),
            options: vec!["a".into(), "b".into(), "c".into(), "d".into()],
            gold: 1,
        }
    }

    fn lines(v: &[serde_json::Value]) -> Vec<Record> {
        v.iter()
            .enumerate()
            .map(|(i, v)| Record {
                file: "labels.jsonl".into(),
                line: i + 1,
                row: i + 1,
                value: v.clone(),
            })
            .collect()
    }

    #[test]
    fn labels_parse_and_bad_ones_name_line_and_field() {
        let qs = vec![q("x"), q("y")];
        let ok = lines(&[
            json!({"question_id": "x", "ending": "e", "follows": true, "model": "m"}),
            json!({"question_id": "y", "ending": "f", "follows": false}),
        ]);
        let l = parse_labels("labels.jsonl", &ok, &qs).unwrap();
        assert_eq!(
            (l[0].question, l[0].follows, l[0].model.as_deref()),
            (0, true, Some("m"))
        );
        for (bad, field) in [
            (
                json!({"question_id": "z", "ending": "e", "follows": true}),
                "question_id",
            ),
            (
                json!({"question_id": "x", "ending": " ", "follows": true}),
                "ending",
            ),
            (
                json!({"question_id": "x", "ending": "e", "follows": null}),
                "follows",
            ),
            (
                json!({"question_id": "x", "ending": "e", "follows": "yes"}),
                "follows",
            ),
            (json!({"question_id": "x", "follows": true}), "ending"),
        ] {
            let rs = lines(&[ok[0].value.clone(), bad]);
            let e = parse_labels("labels.jsonl", &rs, &qs)
                .unwrap_err()
                .to_string();
            assert!(e.contains("labels.jsonl:2") && e.contains(field), "{e}");
        }
        let one_side = lines(&[ok[0].value.clone()]);
        let e = parse_labels("labels.jsonl", &one_side, &qs)
            .unwrap_err()
            .to_string();
        assert!(e.contains("negative"), "{e}");
    }

    #[test]
    fn the_sample_is_stratified_distinct_and_seeded() {
        let verdicts: Vec<bool> = (0..100).map(|i| i % 4 == 0).collect();
        let s = stratified_sample(&verdicts, 20, 7);
        assert_eq!(s.len(), 20);
        assert_eq!(s.iter().filter(|&&i| verdicts[i]).count(), 5);
        let mut d = s.clone();
        d.sort_unstable();
        d.dedup();
        assert_eq!(d.len(), 20);
        assert_eq!(s, stratified_sample(&verdicts, 20, 7));
        assert_ne!(s, stratified_sample(&verdicts, 20, 8));
        assert_eq!(stratified_sample(&verdicts, 1000, 7).len(), 100);
    }
}
