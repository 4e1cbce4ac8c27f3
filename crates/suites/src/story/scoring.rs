//! A story run's scoring: every checked generation becomes one item of items.jsonl. Unscored
//! ones need no model (an empty ending is Not-Follow without the judge); scored ones go through
//! the models chunk by chunk (whole stories, fixed by the input alone), each
//! chunk's items handed on as soon as it is done, so a killed run loses at most the chunk in
//! flight and a resumed run computes every chunk exactly as an uninterrupted one (`story::plan`).
//!
//! The models come in lent as [`LentModels`], which the binary implements over its runtime:
//! this crate stays free of candle.

use crate::models::LentModels;
use crate::story::calibration::memo::Memo;
use crate::story::plan::{story_chunks, ChunkPlan, LetterPlan, Models};
use crate::story::{Checked, Generation, Item, Outcome, PairValue, Question, Status};
use scorekit_core::error::Result;
use scorekit_core::shard::Shard;
use std::collections::HashMap;

/// The inputs of a story run's scoring.
pub struct Scoring<'a> {
    /// The dataset's questions.
    pub questions: &'a [Question],
    /// The generations file.
    pub generations: &'a [Generation],
    /// The run's checked generations (its shard's).
    pub checked: &'a [Checked],
    /// A letter judge's demonstrations and option orders.
    pub letter: LetterPlan<'a>,
    /// The calibration's answers to the human options (empty without a calibration).
    pub memo: &'a Memo,
    /// Human labels of the models' endings: model → question id → follows.
    pub human: &'a crate::story::calibration::label_set::HumanLabels,
}

/// The chunks of the run's scored generations that still have an unfinished item.
pub fn plan<'a>(
    s: &Scoring<'a>,
    models: Models,
    is_done: impl Fn(usize) -> bool,
) -> Vec<ChunkPlan<'a>> {
    let scored: Vec<&Checked> = s
        .checked
        .iter()
        .filter(|c| c.status == Status::Scored)
        .collect();
    story_chunks(s.questions, &scored)
        .into_iter()
        .filter(|chunk| {
            chunk
                .iter()
                .any(|c| !is_done(s.generations[c.generation].row))
        })
        .map(|chunk| ChunkPlan::new(chunk, s.questions, s.generations, models, s.letter))
        .collect()
}

/// Every unfinished item of the run, handed to `emit` as it is done: first the unscored
/// generations, then `plans`' chunk by chunk. `is_done(row)` says an item was finished by an
/// unfinished run taken over.
pub fn score(
    s: &Scoring,
    plans: &[ChunkPlan],
    models: &mut dyn LentModels,
    is_done: impl Fn(usize) -> bool,
    mut emit: impl FnMut(Item) -> Result<()>,
) -> Result<()> {
    let judged = {
        let m = models.models();
        m.scoring_judge || m.letter_judge
    };
    let done = |c: &Checked| is_done(s.generations[c.generation].row);
    for c in s.checked.iter().filter(|c| c.status != Status::Scored) {
        if !done(c) {
            let outcome = (c.status == Status::EmptyEnding && judged).then_some(Outcome::EMPTY);
            emit(item(s, c, outcome, None))?;
        }
    }
    for plan in plans {
        let verdicts = verdicts(s, plan, models)?;
        let pairs = if models.models().embedder {
            let vectors = models.embed(&plan.texts)?;
            plan.pairs(s.questions, s.generations, &vectors)
        } else {
            HashMap::new()
        };
        for c in plan.members.iter().filter(|c| !done(c)) {
            let verdict = verdicts.get(&c.generation).cloned().map(Outcome::Judged);
            emit(item(s, c, verdict, pairs.get(&c.generation)))?;
        }
    }
    Ok(())
}

/// The judge's verdicts on a chunk's members, by generation index (none without a judge).
fn verdicts(
    s: &Scoring,
    plan: &ChunkPlan,
    models: &mut dyn LentModels,
) -> Result<HashMap<usize, crate::story::JudgeVerdict>> {
    let m = models.models();
    if m.scoring_judge {
        let (scores, served) = s.memo.scores(&plan.judge_pairs, |p| models.score(p))?;
        models.served(served);
        Ok(plan.scoring_verdicts(s.questions, &scores))
    } else if m.letter_judge {
        let (answers, served) = s
            .memo
            .answers(&plan.letter_prompts, |p| models.answer_scored(p))?;
        models.served(served);
        Ok(plan.letter_verdicts(s.questions, &answers))
    } else {
        Ok(HashMap::new())
    }
}

/// One line of items.jsonl for a checked generation and what the models said about it.
fn item(
    s: &Scoring,
    c: &Checked,
    verdict: Option<Outcome>,
    pairs: Option<&Vec<PairValue>>,
) -> Item {
    let g = &s.generations[c.generation];
    let q = c.question.map(|i| &s.questions[i]);
    let mean = pairs
        .filter(|p| !p.is_empty())
        .map(|p| p.iter().map(|v| v.dissimilarity).sum::<f64>() / p.len() as f64);
    Item {
        row: g.row,
        line: g.line,
        question_id: g.question_id.clone(),
        passage_id: q.map(|q| q.passage_id.clone()),
        model: g.model.clone(),
        group: g.group().to_string(),
        status: c.status,
        duplicate_of_row: c.duplicate_of_row,
        gold_label: q.map(|q| q.gold),
        judge: verdict,
        dissimilarity_pairs: pairs.cloned(),
        dissimilarity_mean: mean,
        ending_is_option: q.filter(|_| c.status == Status::Scored).and_then(|q| {
            let ending = g.ending.trim();
            (0..q.options.len()).find(|&k| k != q.gold && q.options[k].trim() == ending)
        }),
        // Only a scored ending was judged: the label of an ending belongs to its judged item.
        human_follows: (c.status == Status::Scored)
            .then(|| {
                let model = g.model.as_deref()?;
                s.human.get(model)?.get(&g.question_id).copied()
            })
            .flatten(),
    }
}

/// A shard's part of the run (`--shard I/N`), by story: Dissimilarity pairs endings of one
/// story, so a story's questions and generations stay in one shard (a generation of an unknown
/// question goes by its own id). Returns the shard's checked generations and its questions
/// (dataset indices), the coverage scope and the calibration's.
pub fn shard_part(
    questions: &[Question],
    generations: &[Generation],
    checked: Vec<Checked>,
    shard: Shard,
) -> (Vec<Checked>, Vec<usize>) {
    let checked = checked
        .into_iter()
        .filter(|c| match c.question {
            Some(qi) => shard.contains(&questions[qi].passage_id),
            None => shard.contains(&generations[c.generation].question_id),
        })
        .collect();
    let scope = (0..questions.len())
        .filter(|&i| shard.contains(&questions[i].passage_id))
        .collect();
    (checked, scope)
}

/// How many model inputs `plans` hold (the progress bar's work).
pub fn work(plans: &[ChunkPlan]) -> usize {
    plans.iter().map(ChunkPlan::work).sum()
}
