//! What the calibration's positives already asked the judge, for the run's own items.
//!
//! A positive frame is a question's original options: exactly what a story item asks for the
//! judge's ceiling. So the items take those scores (a scoring judge) or answers (a letter judge)
//! from here and the judge is asked only what is new: the dataset calibration costs a scoring
//! judge one pair a question (the filler), not five. The memo is built from the calibration's
//! items, fresh or from the cache alike, so a run's item scores do not depend on whether its
//! calibration was computed now or earlier (raw scores depend in their last bits on batching).

use super::ask::Protocol;
use super::{CalibrationItem, Kind};
use crate::letter;
use crate::models::ScoredAnswer;
use crate::story::Question;
use scorekit_core::error::Result;
use std::collections::HashMap;

/// The positives' scores and answers, by the judge input that produced them. A decoder judge's
/// answers keep their letter logits and mass (calibration.jsonl records them), so an item
/// served from here carries them as an item asked now does.
#[derive(Debug, Default)]
pub struct Memo {
    scores: HashMap<(String, String), f32>,
    answers: HashMap<String, ScoredAnswer>,
}

impl Memo {
    /// The memo of a calibration's `items` over `questions`, asked under `protocol`.
    pub fn of(items: &[CalibrationItem], questions: &[Question], protocol: Protocol) -> Self {
        let index: HashMap<&str, &Question> =
            questions.iter().map(|q| (q.id.as_str(), q)).collect();
        let mut memo = Memo::default();
        for it in items.iter().filter(|i| i.kind == Kind::Positive) {
            let Some(q) = index.get(it.question_id.as_str()) else {
                continue;
            };
            if it.scores.len() == q.options.len() {
                for (o, &s) in q.options.iter().zip(&it.scores) {
                    memo.scores.insert(q.pair(o), s);
                }
            }
            if let Protocol::Letter { shots, .. } = protocol {
                let options: Vec<&str> = q.options.iter().map(String::as_str).collect();
                for (r, (rotated, answer)) in letter::rotations(&options)
                    .iter()
                    .zip(&it.answers)
                    .enumerate()
                {
                    let prompt = letter::prompt(shots, &q.document, &q.question, rotated);
                    let scored = ScoredAnswer {
                        text: answer.clone(),
                        letter_logits: it.letter_logits.get(r).copied(),
                        letter_mass: it.letter_mass.get(r).copied(),
                        truncated: it.truncated.contains(&r),
                    };
                    memo.answers.insert(prompt, scored);
                }
            }
        }
        memo
    }

    /// A score per pair: the memo's where it has one, the rest from `ask` (called once, with
    /// the missing pairs in order, and not at all when none is missing). Also how many the
    /// memo served.
    pub fn scores(
        &self,
        pairs: &[(String, String)],
        ask: impl FnOnce(&[(String, String)]) -> Result<Vec<f32>>,
    ) -> Result<(Vec<f32>, usize)> {
        fill(pairs, |p| self.scores.get(p).copied(), ask)
    }

    /// An answer per prompt (with a decoder judge's letter scores), as [`Memo::scores`].
    pub fn answers(
        &self,
        prompts: &[String],
        ask: impl FnOnce(&[String]) -> Result<Vec<ScoredAnswer>>,
    ) -> Result<(Vec<ScoredAnswer>, usize)> {
        fill(prompts, |p| self.answers.get(p).cloned(), ask)
    }
}

fn fill<I: Clone, O>(
    inputs: &[I],
    known: impl Fn(&I) -> Option<O>,
    ask: impl FnOnce(&[I]) -> Result<Vec<O>>,
) -> Result<(Vec<O>, usize)> {
    let mut out: Vec<Option<O>> = inputs.iter().map(&known).collect();
    let missing: Vec<usize> = (0..inputs.len()).filter(|&i| out[i].is_none()).collect();
    let served = inputs.len() - missing.len();
    if !missing.is_empty() {
        let asked: Vec<I> = missing.iter().map(|&i| inputs[i].clone()).collect();
        let got = ask(&asked)?;
        super::ask::expect_len("results", got.len(), asked.len())?;
        for (i, v) in missing.into_iter().zip(got) {
            out[i] = Some(v);
        }
    }
    Ok((
        out.into_iter().map(|v| v.expect("filled")).collect(),
        served,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_memo_serves_what_it_knows_and_asks_for_the_rest_in_order() {
        let q = Question {
            id: "s_a_0".into(),
            row: 1,
            passage_id: "s".into(),
            question: "Q".into(),
            document: "D".into(),
            options: ["a", "b", "c", "d"].map(String::from).to_vec(),
            gold: 0,
        };
        let item = CalibrationItem {
            question_id: q.id.clone(),
            row: 1,
            kind: Kind::Positive,
            slot: None,
            label_line: None,
            follows: None,
            model: None,
            gold: 0,
            pick: Some(0),
            counted: true,
            cyclic_pick: None,
            cyclic_counted: None,
            scores: vec![1.0, 2.0, 3.0, 4.0],
            answers: Vec::new(),
            letter_logits: Vec::new(),
            letter_mass: Vec::new(),
            truncated: Vec::new(),
        };
        let memo = Memo::of(&[item], std::slice::from_ref(&q), Protocol::Scoring);
        let pairs = vec![q.pair("c"), q.pair("new"), q.pair("a"), q.pair("other")];
        let (scores, served) = memo
            .scores(&pairs, |missing| {
                assert_eq!(missing, &[q.pair("new"), q.pair("other")]);
                Ok(vec![10.0, 20.0])
            })
            .unwrap();
        assert_eq!((scores, served), (vec![3.0, 10.0, 1.0, 20.0], 2));
        let (_, served) = memo
            .scores(&[q.pair("b")], |_| panic!("nothing to ask"))
            .unwrap();
        assert_eq!(served, 1);
    }
}
