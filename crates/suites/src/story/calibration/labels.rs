//! Human labels for the judge's calibration (`--calibration-labels FILE...`): JSONL lines
//! `{"question_id", "ending", "follows": true|false}` (`model`, `labeller` and `sample`
//! optional), and the
//! file a team labels to make one (`--label-sample N`, `to_label.jsonl`: the same format,
//! `follows` null). `label_set` checks them against the run's generations and combines
//! labellers.

use crate::story::Question;
use scorekit_core::error::InputError;
use scorekit_io::Record;
use scorekit_kernels::resample::Xoshiro256;
use serde::Serialize;
use std::collections::HashMap;

/// One labelled ending.
#[derive(Debug, Clone, PartialEq)]
pub struct Label {
    /// The label file, as named.
    pub file: String,
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
    /// Who labelled it: the `labeller` field, else the label file (one file, one person).
    pub labeller: String,
    /// The sample it was labelled on (the sha256 of its to_label.jsonl), when the file says;
    /// one per file.
    pub sample: Option<String>,
}

/// Whether `s` is a sha256 as scorekit writes it: 64 lowercase hex digits.
fn is_sha256(s: &str) -> bool {
    s.len() == 64
        && s.bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

/// Parse a label file against the dataset's questions. A malformed line, an unknown
/// `question_id` or an empty ending (IFSM counts it Not-Follow without asking the judge, so it
/// calibrates nothing) is an input error. A file of one side only is not: the per-model PPI
/// estimate needs no negative (the pooled calibration then has no counts, and says so).
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
        let labeller = match r.opt_str("labeller")? {
            Some(l) if l.trim().is_empty() => {
                return Err(r.field_error("labeller", "empty: name the labeller or leave it out"))
            }
            Some(l) => l.to_string(),
            None => file.to_string(),
        };
        let sample = match r.opt_str("sample")? {
            Some(s) if !is_sha256(s) => {
                return Err(r.field_error(
                    "sample",
                    format!(
                        "expected the sha256 of the to_label.jsonl labelled (64 lowercase hex \
                         digits), found {s:?}"
                    ),
                ))
            }
            s => s.map(str::to_string),
        };
        // One file, one sample: lines of two samples (or with and without one) in one file
        // are files pasted together, and the sample check would hold for some lines only.
        if let Some(first) = labels.first().filter(|f: &&Label| f.sample != sample) {
            let said =
                |s: &Option<String>| s.as_deref().map_or("none".into(), |s| format!("{s:?}"));
            return Err(r.field_error(
                "sample",
                format!(
                    "{} here, {} at line {}: one label file, one sample",
                    said(&sample),
                    said(&first.sample),
                    first.line
                ),
            ));
        }
        labels.push(Label {
            file: file.to_string(),
            labeller,
            sample,
            line: r.line,
            question,
            ending: ending.to_string(),
            follows,
            model: r.opt_str("model")?.map(str::to_string),
        });
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
    /// The model that wrote it, when known (for the estimate; a labeller need not look).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model: Option<&'a str>,
    /// The story, for the labeller to read.
    pub passage: &'a str,
    /// The instruction the ending must follow.
    pub question: &'a str,
}

/// `k` of `pool` by a partial Fisher–Yates shuffle of stream `stream` of `seed`.
fn draw<T>(mut pool: Vec<T>, k: usize, seed: u64, stream: u64) -> Vec<T> {
    let k = k.min(pool.len());
    let mut rng = Xoshiro256::new(seed, stream);
    for i in 0..k {
        let j = i + rng.below((pool.len() - i) as u64) as usize;
        pool.swap(i, j);
    }
    pool.truncate(k);
    pool
}

/// `to_label.jsonl` (`--label-sample N`): `n` questions drawn uniformly at random among the
/// questions in `scope` (all of the run's, not only those every model answered: a frame
/// narrower than a model's judged endings would make its labels a biased sample), then every
/// model's judged (non-empty, scored) ending to them, in a seeded random order so that a
/// labeller cannot tell models apart by position; no judge verdict in the file. A model's
/// labelled endings are so a uniform sample of its judged endings, and every model is labelled
/// on the same questions (paired comparisons). Returns the file, the questions drawn and the
/// endings written.
pub fn sample_file(
    items: &[crate::story::Item],
    generations: &[crate::story::Generation],
    questions: &[Question],
    scope: &[&str],
    n: usize,
    seed: u64,
) -> scorekit_core::error::Result<(Vec<u8>, usize, usize)> {
    use crate::story::{Outcome, Status};
    let judged: Vec<(usize, &str)> = items
        .iter()
        .filter(|i| i.status == Status::Scored)
        .filter(|i| i.judge.as_ref().and_then(Outcome::verdict).is_some())
        .map(|i| (i.row, i.question_id.as_str()))
        .collect();
    draw_sample(&judged, generations, questions, scope, n, seed)
}

/// The to_label.jsonl that a run of these generations with a judge writes for `--label-sample
/// n` and `--seed`, over the whole run (every dataset question in scope), known before any model
/// runs: with a judge every scored generation is judged, so `checked`'s scored generations (in
/// row order, as the finished items are) are [`sample_file`]'s items. Returns its sha256 and
/// its lines' (question id, ending, model), the run's sample that labels carrying `sample` are
/// checked against (`label_set::check_sample`).
pub fn run_sample(
    generations: &[crate::story::Generation],
    questions: &[Question],
    checked: &[crate::story::Checked],
    n: usize,
    seed: u64,
) -> scorekit_core::error::Result<RunSample> {
    let mut judged: Vec<(usize, &str)> = checked
        .iter()
        .filter(|c| c.status == crate::story::Status::Scored)
        .map(|c| {
            let g = &generations[c.generation];
            (g.row, g.question_id.as_str())
        })
        .collect();
    judged.sort_by_key(|&(row, _)| row);
    let scope: Vec<&str> = questions.iter().map(|q| q.id.as_str()).collect();
    let (text, _, _) = draw_sample(&judged, generations, questions, &scope, n, seed)?;
    let mut endings: HashMap<(String, String), Vec<Option<String>>> = HashMap::new();
    for line in text.split(|&b| b == b'\n').filter(|l| !l.is_empty()) {
        let v: serde_json::Value = serde_json::from_slice(line)
            .map_err(|e| scorekit_core::error::Error::Internal(e.into()))?;
        let text_of = |k: &str| v[k].as_str().unwrap_or_default().to_string();
        endings
            .entry((text_of("question_id"), text_of("ending").trim().to_string()))
            .or_default()
            .push(v["model"].as_str().map(str::to_string));
    }
    Ok(RunSample {
        sha256: scorekit_report::sha256_hex(&text),
        n,
        seed,
        endings,
    })
}

/// A run's own label sample: what labels carrying `sample` must have been labelled on.
#[derive(Debug, Clone, PartialEq)]
pub struct RunSample {
    /// The sha256 of its to_label.jsonl.
    pub sha256: String,
    /// `--label-sample N`.
    pub n: usize,
    /// `--seed`.
    pub seed: u64,
    /// Its endings, by (question id, ending trimmed): the models that wrote each (`None`: the
    /// generations name no model).
    pub endings: HashMap<(String, String), Vec<Option<String>>>,
}

/// [`sample_file`] from the judged generations' (row, question id), in row order.
fn draw_sample(
    judged: &[(usize, &str)],
    generations: &[crate::story::Generation],
    questions: &[Question],
    scope: &[&str],
    n: usize,
    seed: u64,
) -> scorekit_core::error::Result<(Vec<u8>, usize, usize)> {
    let by_row: HashMap<usize, &crate::story::Generation> =
        generations.iter().map(|g| (g.row, g)).collect();
    let by_id: HashMap<&str, &Question> = questions.iter().map(|q| (q.id.as_str(), q)).collect();
    let mut pool: Vec<&str> = scope.to_vec();
    pool.sort_unstable();
    pool.dedup();
    let drawn: std::collections::HashSet<&str> = draw(pool, n, seed, 0).into_iter().collect();
    let chosen: Vec<&(usize, &str)> = judged
        .iter()
        .filter(|(_, qid)| drawn.contains(qid))
        .collect();
    let count = chosen.len();
    let mut text = Vec::new();
    for &&(row, qid) in &draw(chosen, count, seed, 1) {
        let (Some(g), Some(q)) = (by_row.get(&row), by_id.get(qid)) else {
            continue;
        };
        let line = ToLabel {
            question_id: &g.question_id,
            ending: &g.ending,
            follows: None,
            model: g.model.as_deref(),
            passage: &q.document,
            question: &q.question,
        };
        serde_json::to_writer(&mut text, &line)
            .map_err(|e| scorekit_core::error::Error::Internal(e.into()))?;
        text.push(b'\n');
    }
    Ok((text, drawn.len(), count))
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
        // One side only is a valid sample (PPI needs no negative); the labeller defaults to
        // the file.
        let one_side = lines(&[ok[0].value.clone()]);
        let l = parse_labels("labels.jsonl", &one_side, &qs).unwrap();
        assert_eq!(l[0].labeller, "labels.jsonl");
        let named = lines(&[json!({"question_id": "x", "ending": "e", "follows": true,
                                    "labeller": "ann"})]);
        assert_eq!(
            parse_labels("l.jsonl", &named, &qs).unwrap()[0].labeller,
            "ann"
        );
    }

    #[test]
    fn a_sample_is_a_sha256_and_one_file_holds_one() {
        let qs = vec![q("x"), q("y")];
        let sha = "0123456789abcdef".repeat(4);
        let line = |id: &str, s: serde_json::Value| json!({"question_id": id, "ending": "e", "follows": true, "sample": s});
        let ok = lines(&[line("x", json!(sha)), line("y", json!(sha))]);
        let l = parse_labels("l.jsonl", &ok, &qs).unwrap();
        assert!(l.iter().all(|l| l.sample.as_deref() == Some(sha.as_str())));
        for (rs, line_no) in [
            (vec![line("x", json!("ABC"))], 1),
            (vec![line("x", json!(sha.to_uppercase()))], 1),
            (
                vec![line("x", json!(sha)), line("y", json!("1".repeat(64)))],
                2,
            ),
            (
                vec![
                    line("x", json!(sha)),
                    json!({"question_id": "y", "ending": "e", "follows": false}),
                ],
                2,
            ),
        ] {
            let e = parse_labels("l.jsonl", &lines(&rs), &qs)
                .unwrap_err()
                .to_string();
            assert!(
                e.contains(&format!("labels.jsonl:{line_no}")) && e.contains("field \"sample\""),
                "{e}"
            );
        }
    }

    #[test]
    fn draws_are_distinct_seeded_and_capped() {
        let pool: Vec<usize> = (0..100).collect();
        let s = draw(pool.clone(), 20, 7, 0);
        let mut d = s.clone();
        d.sort_unstable();
        d.dedup();
        assert_eq!(d.len(), 20);
        assert_eq!(s, draw(pool.clone(), 20, 7, 0));
        assert_ne!(s, draw(pool.clone(), 20, 8, 0));
        assert_ne!(s, draw(pool.clone(), 20, 7, 1));
        assert_eq!(draw(pool, 1000, 7, 0).len(), 100);
    }
}
