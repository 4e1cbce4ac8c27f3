//! Asking the judge a batch of frames: the judge comes in lent as [`LentModels`], which the
//! binary implements over its loaded judge, so this crate stays free of the model runtime.
//!
//! Inputs are deduplicated as a story run's are (`story::plan`): a scoring judge scores each
//! (question, option text) pair once, so a question's negatives add one pair (the filler) to its
//! positive's four; a letter judge is asked each distinct prompt once.

use super::frames::Frame;
use crate::letter;
pub use crate::models::{LentModels, ScoredAnswer};
use crate::story::{argmax, Question};
use scorekit_core::error::{Error, Result};
use std::collections::HashMap;

/// How the judge reads a frame.
#[derive(Debug, Clone, Copy)]
pub enum Protocol<'a> {
    /// Scores each option on its own; the pick is the argmax (ties: the lowest slot).
    Scoring,
    /// Answers a prompt with a letter (run_llm.py's protocol, `story::plan::letter_prompt`).
    Letter {
        /// The demonstrations block ("" for zero-shot).
        shots: &'a str,
        /// Also every rotation of the options; the majority reported apart.
        cyclic: bool,
    },
}

/// What the judge picked in one frame, and what it said.
#[derive(Debug, Clone, PartialEq)]
pub struct Picked {
    /// The slot picked (`None`: a letter judge's answer named no option).
    pub pick: Option<usize>,
    /// Under cyclic option orders: the majority's pick over every rotation.
    pub cyclic: Option<Option<usize>>,
    /// A scoring judge's score of each slot.
    pub scores: Vec<f32>,
    /// A letter judge's answer to each rotation asked (one without cyclic orders).
    pub answers: Vec<String>,
    /// A decoder judge's letter logits for each rotation asked (empty for other judges).
    pub letter_logits: Vec<[f32; 4]>,
    /// A decoder judge's letter mass for each rotation asked (empty for other judges).
    pub letter_mass: Vec<f32>,
    /// The rotations whose prompt was cut to the judge's context.
    pub truncated: Vec<usize>,
}

/// Ask `judge` every frame; one [`Picked`] per frame, in order.
pub fn ask(
    frames: &[Frame],
    questions: &[Question],
    protocol: Protocol,
    judge: &mut dyn LentModels,
) -> Result<Vec<Picked>> {
    match protocol {
        Protocol::Scoring => ask_scoring(frames, questions, judge),
        Protocol::Letter { shots, cyclic } => ask_letter(frames, questions, shots, cyclic, judge),
    }
}

fn ask_scoring(
    frames: &[Frame],
    questions: &[Question],
    judge: &mut dyn LentModels,
) -> Result<Vec<Picked>> {
    let mut index: HashMap<(usize, &str), usize> = HashMap::new();
    let mut pairs: Vec<(String, String)> = Vec::new();
    let slots: Vec<Vec<usize>> = frames
        .iter()
        .map(|f| {
            f.options
                .iter()
                .map(|&o| {
                    *index.entry((f.question, o)).or_insert_with(|| {
                        pairs.push(questions[f.question].pair(o));
                        pairs.len() - 1
                    })
                })
                .collect()
        })
        .collect();
    let scores = judge.score(&pairs)?;
    expect_len("scores", scores.len(), pairs.len())?;
    Ok(slots
        .iter()
        .map(|s| {
            let frame_scores: Vec<f32> = s.iter().map(|&i| scores[i]).collect();
            Picked {
                pick: Some(argmax(&frame_scores)),
                cyclic: None,
                scores: frame_scores,
                answers: Vec::new(),
                letter_logits: Vec::new(),
                letter_mass: Vec::new(),
                truncated: Vec::new(),
            }
        })
        .collect())
}

fn ask_letter(
    frames: &[Frame],
    questions: &[Question],
    shots: &str,
    cyclic: bool,
    judge: &mut dyn LentModels,
) -> Result<Vec<Picked>> {
    let mut index: HashMap<String, usize> = HashMap::new();
    let mut prompts: Vec<String> = Vec::new();
    let slots: Vec<Vec<usize>> = frames
        .iter()
        .map(|f| {
            let q = &questions[f.question];
            let rotations = letter::rotations(&f.options);
            let asked = if cyclic { rotations.len() } else { 1 };
            rotations[..asked]
                .iter()
                .map(|options| {
                    let p = letter::prompt(shots, &q.document, &q.question, options);
                    let next = prompts.len();
                    *index.entry(p).or_insert_with_key(|p| {
                        prompts.push(p.clone());
                        next
                    })
                })
                .collect()
        })
        .collect();
    let answers = judge.answer_scored(&prompts)?;
    expect_len("answers", answers.len(), prompts.len())?;
    Ok(slots
        .iter()
        .map(|s| {
            let asked: Vec<&ScoredAnswer> = s.iter().map(|&i| &answers[i]).collect();
            let texts: Vec<&str> = asked.iter().map(|a| a.text.as_str()).collect();
            Picked {
                pick: letter::pick(texts[0]),
                cyclic: cyclic.then(|| letter::cyclic_picks(&texts).1),
                scores: Vec::new(),
                answers: texts.iter().map(|t| t.to_string()).collect(),
                // All or none: a judge reads letter logits for every prompt or for none.
                letter_logits: asked.iter().filter_map(|a| a.letter_logits).collect(),
                letter_mass: asked.iter().filter_map(|a| a.letter_mass).collect(),
                truncated: (0..asked.len()).filter(|&r| asked[r].truncated).collect(),
            }
        })
        .collect())
}

/// A model step's answer has one result per input (a broken step is scorekit's failure).
pub(crate) fn expect_len(what: &str, got: usize, want: usize) -> Result<()> {
    if got == want {
        return Ok(());
    }
    Err(Error::Internal(anyhow::anyhow!(
        "the judge returned {got} {what} for {want} inputs"
    )))
}
