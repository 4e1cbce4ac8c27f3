//! The judge's calibration in the IFSM frame: its sensitivity q1 and specificity q0, measured on
//! frames whose truth is known, for the judge-corrected IFSM (`ifsm_correction`).
//!
//! - [`frames`]: the dataset calibration's positives and negatives (protocol [`PROTOCOL`]) and
//!   the frames of human labels;
//! - [`labels`]: the label file and the sample a team labels; [`labelling`]: its labelling page;
//! - [`ask`]: the judge asked, through a model step the binary supplies;
//! - [`cache`]: finished calibrations kept between runs;
//! - [`memo`]: the positives' scores and answers, reused by the run's own items;
//! - [`pipeline`]: a run's calibration step; [`summary`]: what metrics.json records of it;
//! - here: one [`CalibrationItem`] per frame (a line of calibration.jsonl), their counts, and
//!   [`calibrate`], which asks the judge chunk by chunk, taking what the cache already holds.

pub mod ask;
pub mod cache;
pub mod frames;
pub mod label_set;
pub mod labelling;
pub mod labels;
pub mod memo;
pub mod pipeline;
pub mod step;
pub mod summary;

use crate::ifsm_correction::CalibrationCounts;
use crate::story::Question;
use ask::{LentModels, Picked, Protocol};
use cache::CalibrationCache;
use frames::{Frame, FrameKind};
use labels::Label;
use scorekit_core::error::Result;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;

/// The dataset calibration's protocol version: part of the cache key and of metrics.json.
pub const PROTOCOL: &str = "ifsm-frame-v1";

/// Questions per chunk of a dataset calibration: each finished chunk goes to the cache at once,
/// so a killed run loses at most the chunk in flight.
pub const CHUNK_QUESTIONS: usize = 64;

/// What a calibration item measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    /// Original options: sensitivity's item.
    Positive,
    /// A distractor in the gold slot: specificity's item.
    Negative,
    /// A human-labelled ending in the gold slot.
    Label,
}

/// One line of calibration.jsonl: a frame, what the judge picked, and whether it counts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CalibrationItem {
    /// The question framed.
    pub question_id: String,
    /// Its 1-based row in the dataset.
    pub row: usize,
    /// What the item measures.
    pub kind: Kind,
    /// A negative's distractor slot d (moved into the gold slot; the filler in slot d).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slot: Option<usize>,
    /// A label's line in the label file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label_line: Option<usize>,
    /// A label's human verdict.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub follows: Option<bool>,
    /// A label's model, when the label file names it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// The gold slot.
    pub gold: usize,
    /// The slot the judge picked (`null`: a letter judge's answer named none).
    pub pick: Option<usize>,
    /// Whether the item counts: a positive (or a label that follows) picked, a negative (or a
    /// label that does not follow) not picked.
    pub counted: bool,
    /// Under cyclic option orders: the majority's pick and whether it counts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cyclic_pick: Option<Option<usize>>,
    /// Under cyclic option orders: whether the majority's pick counts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cyclic_counted: Option<bool>,
    /// A scoring judge's score of each slot of the frame.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub scores: Vec<f32>,
    /// A letter judge's answer, as decoded, to each rotation asked.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub answers: Vec<String>,
    /// A decoder judge's next-token logits of A, B, C, D for each rotation asked.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub letter_logits: Vec<[f32; 4]>,
    /// A decoder judge's letter mass (the four letters' probability) for each rotation asked.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub letter_mass: Vec<f32>,
    /// The rotations whose prompt was cut to a decoder judge's context.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub truncated: Vec<usize>,
}

impl CalibrationItem {
    /// The item of `frame` given what the judge picked.
    fn new(frame: &Frame, picked: Picked, questions: &[Question], labels: &[Label]) -> Self {
        let q = &questions[frame.question];
        // Positives and labels that follow count when the gold slot is picked; the others when
        // it is not.
        let (kind, slot, label, wants_pick) = match &frame.kind {
            FrameKind::Positive => (Kind::Positive, None, None, true),
            FrameKind::Negative { slot } => (Kind::Negative, Some(*slot), None, false),
            FrameKind::Label { index, follows } => {
                (Kind::Label, None, Some(&labels[*index]), *follows)
            }
        };
        let counts = |pick: Option<usize>| (pick == Some(q.gold)) == wants_pick;
        CalibrationItem {
            question_id: q.id.clone(),
            row: q.row,
            kind,
            slot,
            label_line: label.map(|l| l.line),
            follows: label.map(|l| l.follows),
            model: label.and_then(|l| l.model.clone()),
            gold: q.gold,
            pick: picked.pick,
            counted: counts(picked.pick),
            cyclic_pick: picked.cyclic,
            cyclic_counted: picked.cyclic.map(counts),
            scores: picked.scores,
            answers: picked.answers,
            letter_logits: picked.letter_logits,
            letter_mass: picked.letter_mass,
            truncated: picked.truncated,
        }
    }

    /// Whether it measures specificity (a negative, or a label that does not follow).
    pub fn is_negative(&self) -> bool {
        self.kind == Kind::Negative || self.follows == Some(false)
    }

    /// calibration.jsonl's order: dataset items by question row, positive first, then slots;
    /// labels after them by label line. A merge of shards sorts its parts' items into it.
    pub fn order_key(&self) -> (bool, usize, usize) {
        match self.label_line {
            Some(line) => (true, line, 0),
            None => (false, self.row, self.slot.map_or(0, |s| s + 1)),
        }
    }
}

/// The counts of `items` of one source (the dataset's, or the labels'); with `cyclic`, of the
/// majority's picks (`None` when the items have none).
pub fn counts<'a>(
    items: impl IntoIterator<Item = &'a CalibrationItem>,
    cyclic: bool,
) -> Option<CalibrationCounts> {
    let mut c = CalibrationCounts::default();
    for it in items {
        let counted = if cyclic {
            it.cyclic_counted?
        } else {
            it.counted
        };
        if it.is_negative() {
            c.negatives += 1;
            c.negatives_counted += usize::from(counted);
        } else {
            c.positives += 1;
            c.positives_counted += usize::from(counted);
        }
    }
    Some(c)
}

/// Where a dataset calibration's finished questions come from and go.
pub struct CacheUse<'a> {
    /// The calibration's folder in the cache.
    pub cache: &'a CalibrationCache,
    /// `--recalibrate`: ignore what the cache holds (the new sets, appended, win from then on).
    pub recalibrate: bool,
}

/// What a dataset calibration did: its items, and how many questions came from the cache.
pub struct Calibrated {
    /// One item per frame, in calibration.jsonl's order.
    pub items: Vec<CalibrationItem>,
    /// Questions taken from the cache.
    pub from_cache: usize,
    /// Questions asked of the judge now.
    pub asked: usize,
}

/// The dataset calibration of the questions `scope` (dataset indices): each question's frames
/// from the cache when it holds all of them, else asked of `judge` chunk by chunk (each chunk
/// appended to the cache as it finishes).
pub fn calibrate(
    questions: &[Question],
    scope: &[usize],
    fillers: &[Option<String>],
    protocol: Protocol,
    judge: &mut dyn LentModels,
    cache: Option<CacheUse>,
) -> Result<Calibrated> {
    // `--recalibrate` reads nothing and appends afresh: the newest complete set wins later.
    let mut cached = match &cache {
        Some(c) if !c.recalibrate => c.cache.load()?,
        _ => HashMap::new(),
    };
    let mut items = Vec::new();
    let mut todo = Vec::new();
    let mut from_cache = 0;
    for &qi in scope {
        let want = dataset_frames_of(questions, qi, fillers);
        let complete = cached.remove(&questions[qi].id).and_then(|sets| {
            sets.into_iter()
                .rev()
                .find(|set| set.len() == want && set.iter().all(|i| i.row == questions[qi].row))
        });
        match complete {
            Some(set) => {
                from_cache += 1;
                items.extend(set);
            }
            None => todo.push(qi),
        }
    }
    for chunk in todo.chunks(CHUNK_QUESTIONS) {
        let frames = frames::dataset_frames(questions, chunk, fillers);
        let picked = ask::ask(&frames, questions, protocol, judge)?;
        let new: Vec<CalibrationItem> = frames
            .iter()
            .zip(picked)
            .map(|(f, p)| CalibrationItem::new(f, p, questions, &[]))
            .collect();
        if let Some(c) = &cache {
            c.cache.append(&new)?;
        }
        items.extend(new);
    }
    items.sort_by_key(CalibrationItem::order_key);
    Ok(Calibrated {
        items,
        from_cache,
        asked: todo.len(),
    })
}

/// How many frames the dataset calibration asks of question `qi`.
fn dataset_frames_of(questions: &[Question], qi: usize, fillers: &[Option<String>]) -> usize {
    match fillers[qi] {
        Some(_) => questions[qi].options.len(),
        None => 1,
    }
}

/// The human-label calibration of `labels` whose question passes `keep`: one item per label.
pub fn calibrate_labels(
    questions: &[Question],
    labels: &[Label],
    keep: impl Fn(&Question) -> bool,
    protocol: Protocol,
    judge: &mut dyn LentModels,
) -> Result<Vec<CalibrationItem>> {
    let frames = frames::label_frames(questions, labels, keep);
    let picked = ask::ask(&frames, questions, protocol, judge)?;
    Ok(frames
        .iter()
        .zip(picked)
        .map(|(f, p)| CalibrationItem::new(f, p, questions, labels))
        .collect())
}

#[cfg(test)]
mod tests;
