//! `scorekit judge eval`'s typed metrics.json ([`EvalMetrics`]) with its report.md and terminal
//! table, and the question files both judge commands record. (A training run's report.md and
//! curves.svg live with its record, `runtime::judge_train`.)

use crate::ifsm_corrected::Resolution;
use crate::{DatasetRef, Estimate, InputFile, ModelRef};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// A question file of `judge train` or `judge eval` as read: path, sha256 and per-format counts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct QuestionFile {
    /// The path as given.
    pub path: String,
    /// sha256 of its bytes.
    pub sha256: String,
    /// Possible Stories lines.
    pub possible_stories: usize,
    /// RACE lines.
    pub race: usize,
}

/// How a judge's picks spread over the option positions, beside the gold answers' spread: a
/// judge that favours a position (a letter judge's "A") shows it here.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PickDistribution {
    /// Questions per picked position (`A`, `B`, ...), and `none` for answers naming no option.
    pub counts: BTreeMap<String, usize>,
    /// The same as shares of all questions.
    pub share: BTreeMap<String, f64>,
    /// Shares of the gold answers per position.
    pub gold_share: BTreeMap<String, f64>,
    /// Total variation distance between the two: half the sum of absolute differences (0: the
    /// judge picks positions as often as they are right; 1: never where the answers are).
    pub total_variation: f64,
}

/// `judge eval`'s metrics.json. `S` and `C` are the calibration's settings and summary, the
/// suites crate's types, recorded as they are (this crate cannot name them).
#[derive(Debug, Clone, Serialize)]
pub struct EvalMetrics<S, C> {
    /// `judge-eval`.
    pub suite: String,
    /// The judge.
    pub judge: ModelRef,
    /// `scoring` or `letter`.
    pub judge_kind: String,
    /// The engine that ran it.
    pub engine: String,
    /// The questions.
    pub dataset: QuestionFile,
    /// Questions scored.
    pub questions: usize,
    /// Passages they belong to.
    pub passages: usize,
    /// The accuracy of a uniform guess.
    pub chance: f64,
    /// Share of questions answered right (the dataset's option order).
    pub accuracy: Option<Estimate>,
    /// Share of passages with every question right.
    pub consistency: Option<Estimate>,
    /// What consistency counts, in words.
    pub consistency_definition: String,
    /// The bootstrap of the intervals.
    pub bootstrap: Bootstrap,
    /// How the picks spread over the positions.
    pub picks: PickDistribution,
    /// TF32 products on CUDA (absent when off).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub tf32: bool,
    /// A letter judge's protocol.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub letter: Option<EvalLetter>,
    /// `--option-orders cyclic`: the majority over rotations, apart from the headline numbers.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cyclic: Option<EvalCyclic>,
    /// The judge's calibration, unless `--no-calibration` without labels.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub calibration: Option<EvalCalibration<S, C>>,
}

/// The bootstrap of `judge eval`'s intervals.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Bootstrap {
    /// Resamples.
    pub resamples: usize,
    /// Seed.
    pub seed: u64,
}

/// A letter judge's protocol as `judge eval` records it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EvalLetter {
    /// The prompt.
    pub judge_prompt: String,
    /// The decoding.
    pub judge_decoding: String,
    /// How an answer names an option.
    pub judge_pick: String,
}

/// `--option-orders cyclic`: every question asked once per rotation of its options.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct EvalCyclic {
    /// What the majority is, in words.
    pub definition: String,
    /// Share of questions whose majority pick is right.
    pub accuracy: Option<Estimate>,
    /// Share of passages with every majority pick right.
    pub consistency: Option<Estimate>,
    /// Mean share of rotations that agree with the majority.
    pub agreement: f64,
    /// How the majority picks spread over the positions.
    pub picks: PickDistribution,
}

/// `judge eval`'s calibration: the record a story run keeps (settings `S`, inputs, datasets,
/// summary `C`) and the judge's resolution per calibration.
#[derive(Debug, Clone, Serialize)]
pub struct EvalCalibration<S, C> {
    /// The calibration's settings.
    pub settings: S,
    /// Its input files.
    pub inputs: Vec<InputFile>,
    /// Its datasets.
    pub datasets: Vec<DatasetRef>,
    /// What it counted.
    pub summary: C,
    /// The dataset calibration's resolution (none without positives or negatives).
    pub dataset: Option<Resolution>,
    /// The human labels' resolution.
    pub human: Option<Resolution>,
}

/// A share as a percentage with one decimal.
fn percent1(x: f64) -> String {
    format!("{:.1}%", 100.0 * x)
}

/// An estimate with its interval and size, "–" when there is none.
fn estimate(e: Option<&Estimate>) -> String {
    e.map_or("–".into(), |e| {
        format!(
            "{} [{}, {}] (n = {})",
            percent1(e.value),
            percent1(e.ci_low),
            percent1(e.ci_high),
            e.n
        )
    })
}

/// report.md of `judge eval`.
pub fn eval_report<S, C>(m: &EvalMetrics<S, C>) -> String {
    format!(
        "# Judge evaluation\n\n- judge: `{}` @ `{}` ({})\n- dataset: `{}` (sha256 {})\n- {} questions, {} passages; chance {}\n\n| metric | value [95% CI] |\n|---|---|\n| accuracy | {} |\n| consistency | {} |\n\nConsistency: {}.\n",
        m.judge.id,
        m.judge.revision,
        m.engine,
        m.dataset.path,
        m.dataset.sha256,
        m.questions,
        m.passages,
        percent1(m.chance),
        estimate(m.accuracy.as_ref()),
        estimate(m.consistency.as_ref()),
        m.consistency_definition,
    ) + &m.calibration.as_ref().map_or(String::new(), calibration_section)
        + &picks_section(&m.judge_kind, &m.picks)
        + &letter_section(m.letter.as_ref(), m.cyclic.as_ref())
}

/// The judge's resolution in the IFSM frame (metrics.json `calibration`): q1, q0 and
/// J = q0 + q1 − 1 with its interval per calibration, and what J means for IFSM.
fn calibration_section<S, C>(c: &EvalCalibration<S, C>) -> String {
    let mut out = String::from(
        "\n## Resolution in the IFSM frame\n\n| calibration | q1 (sensitivity) | q0 (specificity) \
         | J = q0 + q1 − 1 [95% CI] | informative |\n|---|---|---|---|---|\n",
    );
    for (r, name) in [(&c.dataset, "dataset"), (&c.human, "human labels")] {
        let Some(r) = r else {
            continue;
        };
        out += &format!(
            "| {name} | {} of {} | {} of {} | {:.3} [{:.3}, {:.3}] | {} |\n",
            percent1(r.q1),
            r.m1,
            percent1(r.q0),
            r.m0,
            r.j,
            r.j_ci[0],
            r.j_ci[1],
            if r.informative { "yes" } else { "no" }
        );
    }
    out += "
A story run's raw IFSM is p = J·θ + (1 − q0) for a true share θ of endings that             follow: the judge compresses every difference between models by J and lifts weak             models toward 1 − q0. Choose a judge by J, not by accuracy (q1) alone; a judge whose             J interval reaches 0 cannot measure IFSM on this dataset (docs/story.md).\n";
    out
}

/// A letter judge's protocol (metrics.json `letter`) and, with `--option-orders cyclic`, the
/// majority over rotations (metrics.json `cyclic`), reported apart from the reference numbers.
fn letter_section(letter: Option<&EvalLetter>, cyclic: Option<&EvalCyclic>) -> String {
    let mut out = String::new();
    if let Some(l) = letter {
        out += &format!(
            "\n## Letter protocol\n\n- prompt: {}\n- decoding: {}\n- pick: {}\n",
            l.judge_prompt, l.judge_decoding, l.judge_pick
        );
    }
    if let Some(c) = cyclic {
        out += &format!(
            "\n## Cyclic option orders (beyond the reference protocol)\n\n{}.\n\n| metric | value [95% CI] |\n|---|---|\n| accuracy | {} |\n| consistency | {} |\n| agreement of the rotations | {} |\n",
            c.definition,
            estimate(c.accuracy.as_ref()),
            estimate(c.consistency.as_ref()),
            percent1(c.agreement),
        );
    }
    out
}

/// The pick distribution of `judge eval` (metrics.json `picks`) as a markdown table: each
/// position's share of the picks beside its share of the gold answers.
fn picks_section(kind: &str, picks: &PickDistribution) -> String {
    let mut out = format!(
        "\n## Picks ({kind} judge)\n\n| position | picks | share | gold share |\n|---|---|---|---|\n"
    );
    for (name, count) in &picks.counts {
        let gold = picks
            .gold_share
            .get(name)
            .map_or_else(|| "—".to_string(), |&g| percent1(g));
        let share = picks.share.get(name).map_or("–".into(), |&s| percent1(s));
        out += &format!("| {name} | {count} | {share} | {gold} |\n");
    }
    out += &format!(
        "\nTotal variation distance between the picks and the gold answers: {:.3}.\n",
        picks.total_variation
    );
    out
}

/// The terminal summary of `judge eval`.
pub fn eval_table<S, C>(m: &EvalMetrics<S, C>) -> String {
    format!(
        "accuracy     {}\nconsistency  {}",
        estimate(m.accuracy.as_ref()),
        estimate(m.consistency.as_ref())
    )
}
