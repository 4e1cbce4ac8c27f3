//! `scorekit judge eval` as a suite: a judge's verdict per question (items.jsonl) from a scoring
//! judge's scores or a letter judge's answers (every rotation of the options under
//! `--option-orders cyclic`), scored through the run loop (resumable, shardable, mergeable,
//! comparable), and its metrics: accuracy, consistency per passage, the pick distribution, the
//! cyclic majority apart and the judge's resolution in the IFSM frame.
//!
//! - [`pipeline`]: the questions read, the calibration, the run;
//! - [`outputs`]: metrics.json, report.md and the table, for a run and for `merge`;
//! - [`suite`]: the [`crate::suite::Suite`], with the metric `compare` pairs.

pub mod outputs;
pub mod pipeline;
pub mod suite;

use crate::letter;
use crate::models::ScoredAnswer;
use crate::story::{argmax, Question};
use serde::{Deserialize, Serialize};

/// The suite name metrics.json records.
pub const SUITE: &str = "judge-eval";

/// One line of items.jsonl.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EvalItem {
    /// 1-based line of the question in the dataset.
    pub line: usize,
    /// `question_id`.
    pub question_id: String,
    /// The passage (question_id before the first '_').
    pub passage_id: String,
    /// The right option.
    pub gold: usize,
    /// The option picked (`null`: a letter judge's answer named none).
    pub pick: Option<usize>,
    /// `pick == gold`.
    pub correct: bool,
    /// A scoring judge's score per option.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub scores: Vec<f32>,
    /// A letter judge's answer, decoded with special tokens kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answer: Option<String>,
    /// Under `--option-orders cyclic`: the verdict of every rotation of the options.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cyclic: Option<CyclicVerdict>,
    /// A decoder judge's next-token logits of A, B, C, D (the options in the dataset's order).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub letter_logits: Option<[f32; 4]>,
    /// A decoder judge's probability of the four letters among all tokens.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub letter_mass: Option<f32>,
    /// A prompt of the item (any rotation asked) was longer than the judge's context and lost
    /// its first tokens.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub truncated: bool,
}

impl EvalItem {
    /// The item of question `i` (0-based) with `pick`.
    fn new(i: usize, q: &Question, pick: Option<usize>) -> Self {
        EvalItem {
            line: i + 1,
            question_id: q.id.clone(),
            passage_id: q.passage_id.clone(),
            gold: q.gold,
            pick,
            correct: pick == Some(q.gold),
            scores: Vec::new(),
            answer: None,
            cyclic: None,
            letter_logits: None,
            letter_mass: None,
            truncated: false,
        }
    }
}

/// A letter judge's answers under every rotation of the options (`--option-orders cyclic`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CyclicVerdict {
    /// Per rotation r (0 = the dataset's order): the option its answer picks, mapped back.
    pub picks: Vec<Option<usize>>,
    /// Per rotation: the answer text.
    pub answers: Vec<String>,
    /// The majority pick (ties: rotation 0's pick when tied, else the lowest option).
    pub pick: Option<usize>,
    /// `pick == gold`.
    pub correct: bool,
    /// Share of rotations whose pick is the majority's.
    pub agreement: f64,
}

/// Questions asked together: each with its 0-based position in the dataset.
pub type Chunk<'a> = [(usize, &'a Question)];

/// Every question's pairs end to end, in the order [`scored_items`] reads the scores.
pub fn pairs(chunk: &Chunk) -> Vec<(String, String)> {
    chunk.iter().flat_map(|(_, q)| q.gold_pairs()).collect()
}

/// A scoring judge's items: `scores` holds one score per pair of [`pairs`]; the pick is the
/// highest (the first on ties). Refused when the judge returned another number of scores.
pub fn scored_items(chunk: &Chunk, scores: &[f32]) -> anyhow::Result<Vec<EvalItem>> {
    let want: usize = chunk.iter().map(|(_, q)| q.options.len()).sum();
    anyhow::ensure!(
        scores.len() == want,
        "the judge returned {} scores for {want} pairs",
        scores.len()
    );
    let mut rest = scores;
    let mut items = Vec::with_capacity(chunk.len());
    for &(i, q) in chunk {
        let (s, tail) = rest.split_at(q.options.len());
        rest = tail;
        let mut it = EvalItem::new(i, q, Some(argmax(s)));
        it.scores = s.to_vec();
        items.push(it);
    }
    Ok(items)
}

/// Rotations asked per question: 1 (the dataset's order), or every one under `cyclic`.
pub fn rotations(questions: &[Question], cyclic: bool) -> usize {
    if cyclic {
        questions.first().map_or(1, |q| q.options.len())
    } else {
        1
    }
}

/// A letter judge's prompts: one per question and rotation (rotation 0 is the dataset's order).
pub fn letter_prompts(chunk: &Chunk, shots: &str, rotations: usize) -> Vec<String> {
    chunk
        .iter()
        .flat_map(|(_, q)| {
            let options: Vec<&str> = q.options.iter().map(String::as_str).collect();
            letter::rotations(&options)
                .into_iter()
                .take(rotations)
                .map(|o| letter::prompt(shots, &q.document, &q.question, &o))
                .collect::<Vec<_>>()
        })
        .collect()
}

/// A letter judge's items from its `answers` to [`letter_prompts`] with `rotations` (see
/// [`rotations`]): rotation 0's pick is the item's; under `cyclic` the majority over the
/// rotations is recorded apart.
pub fn answered_items(
    chunk: &Chunk,
    answers: &[String],
    rotations: usize,
    cyclic: bool,
) -> anyhow::Result<Vec<EvalItem>> {
    let scored: Vec<ScoredAnswer> = answers
        .iter()
        .map(|text| ScoredAnswer {
            text: text.clone(),
            ..ScoredAnswer::default()
        })
        .collect();
    scored_answer_items(chunk, &scored, rotations, cyclic)
}

/// [`answered_items`] from answers with their letter scores: rotation 0's (the dataset's
/// order) are the item's.
pub fn scored_answer_items(
    chunk: &Chunk,
    scored: &[ScoredAnswer],
    rotations: usize,
    cyclic: bool,
) -> anyhow::Result<Vec<EvalItem>> {
    let answers: Vec<String> = scored.iter().map(|a| a.text.clone()).collect();
    anyhow::ensure!(
        rotations > 0 && answers.len() == chunk.len() * rotations,
        "the judge returned {} answers for {} prompts",
        answers.len(),
        chunk.len() * rotations
    );
    let mut items = Vec::with_capacity(chunk.len());
    for (&(i, q), group) in chunk.iter().zip(answers.chunks(rotations)) {
        let mut it = EvalItem::new(i, q, letter::pick(&group[0]));
        it.answer = Some(group[0].clone());
        let asked = &scored[items.len() * rotations..][..rotations];
        it.letter_logits = asked[0].letter_logits;
        it.letter_mass = asked[0].letter_mass;
        it.truncated = asked.iter().any(|a| a.truncated);
        if cyclic {
            let texts: Vec<&str> = group.iter().map(String::as_str).collect();
            let (picks, pick, agreement) = letter::cyclic_picks(&texts);
            it.cyclic = Some(CyclicVerdict {
                answers: group.to_vec(),
                picks,
                pick,
                correct: pick == Some(q.gold),
                agreement,
            });
        }
        items.push(it);
    }
    Ok(items)
}
