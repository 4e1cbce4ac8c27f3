//! The calibration step as `story` and `judge eval` run it: the endings file (resolved where the
//! flags are) and the label files read, the lent judge's identity and protocol taken from its
//! card, and [`super::pipeline`] called. Both commands build it here alike, so they share one
//! calibration cache entry.

use super::ask::{LentModels, Protocol};
use super::cache;
use super::label_set::{self, LabelSet};
use super::labels::{self, RunSample};
use super::pipeline::{self, DatasetSource, LabelSource, Outcome, Request};
use crate::models::JudgeCard;
use crate::story::{Checked, Generation, Question};
use scorekit_core::error::{Error, Result};
use scorekit_io::read_jsonl;
use scorekit_report::{DatasetRef, MetricsDoc};
use std::path::{Path, PathBuf};

/// The file the negatives' fillers come from, as the flags resolved it.
#[derive(Debug, Clone)]
pub struct EndingsFile {
    /// The file to read.
    pub path: PathBuf,
    /// The pinned dataset it came from (`possible-stories:endings`), when named.
    pub dataset: Option<DatasetRef>,
}

/// What the calibration flags ask for.
#[derive(Debug, Clone, Default)]
pub struct CalibrationFlags {
    /// The endings file of the dataset calibration; `None`: `--no-calibration`.
    pub endings: Option<EndingsFile>,
    /// `--recalibrate`.
    pub recalibrate: bool,
    /// `--calibration-labels`.
    pub labels: Vec<PathBuf>,
}

impl CalibrationFlags {
    /// Whether any calibration runs (the dataset's, or the labels').
    pub fn any(&self) -> bool {
        self.endings.is_some() || !self.labels.is_empty()
    }
}

/// The label files read, checked against the dataset (and, for a story run, against its
/// generations: `check` is the whole run's checked generations, and its own label sample, which
/// labels carrying `sample` must be of and take their models from) and combined across
/// labellers, before any model is loaded; `None` without label files.
pub fn read_labels(
    paths: &[PathBuf],
    questions: &[Question],
    check: Option<(&[Generation], &[Checked], Option<&RunSample>)>,
) -> Result<Option<LabelSet>> {
    if paths.is_empty() {
        return Ok(None);
    }
    let mut all = Vec::new();
    for path in paths {
        let records = read_jsonl(path)?;
        all.extend(labels::parse_labels(
            &path.display().to_string(),
            &records,
            questions,
        )?);
    }
    let lines = all.len();
    if let Some((generations, checked, sample)) = check {
        all = label_set::check_sample(all, questions, sample)?;
        label_set::check_models(&all, questions, generations, checked)?;
    }
    let mut set = label_set::combine(all)?;
    // An ending two models wrote alike is a label of each, from one line.
    set.read = lines;
    Ok(Some(set))
}

/// The protocol of a lent judge: scoring, or letters with `shots` (and every rotation).
pub fn protocol<'a>(judge: &JudgeCard, shots: &'a str, cyclic: bool) -> Protocol<'a> {
    if judge.is_letter() {
        Protocol::Letter { shots, cyclic }
    } else {
        Protocol::Scoring
    }
}

/// `path` among `doc`'s inputs; its sha256.
fn record_input(doc: &mut MetricsDoc, path: &Path) -> Result<String> {
    doc.add_input(path)?;
    Ok(doc
        .inputs
        .last()
        .map(|f| f.sha256.clone())
        .unwrap_or_default())
}

/// The label files recorded in `doc`, named and identified for the run's settings: the file's
/// sha256, or of several files the sha256 of their sha256s (one a line, in order).
fn label_source<'a>(
    doc: &mut MetricsDoc,
    paths: &[PathBuf],
    set: &'a LabelSet,
) -> Result<LabelSource<'a>> {
    let shas = paths
        .iter()
        .map(|p| record_input(doc, p))
        .collect::<Result<Vec<String>>>()?;
    let sha256 = match shas.as_slice() {
        [one] => one.clone(),
        many => {
            use sha2::Digest;
            let text: String = many.iter().map(|s| format!("{s}\n")).collect();
            format!("{:x}", sha2::Sha256::digest(text.as_bytes()))
        }
    };
    let names: Vec<String> = paths.iter().map(|p| p.display().to_string()).collect();
    Ok(LabelSource {
        set,
        path: names.join(" "),
        sha256,
    })
}

/// What one calibration step asks: the questions of its scope (dataset indices), the labels,
/// the flags and the letter protocol's demonstrations.
pub struct Step<'a> {
    /// The dataset's questions.
    pub questions: &'a [Question],
    /// The indices calibrated (a shard's).
    pub scope: Vec<usize>,
    /// The labels read ([`read_labels`]).
    pub labels: Option<&'a LabelSet>,
    /// The flags.
    pub flags: &'a CalibrationFlags,
    /// A letter judge's demonstrations block.
    pub shots: &'a str,
    /// `--option-orders cyclic`.
    pub cyclic: bool,
}

/// Run the calibration step with the lent judge: the endings file read and recorded in `doc`
/// when the dataset calibration runs, the label files recorded; the notes printed.
pub fn run(doc: &mut MetricsDoc, step: Step, judge: &mut dyn LentModels) -> Result<Outcome> {
    let card = judge
        .judge()
        .cloned()
        .ok_or_else(|| Error::Internal(anyhow::anyhow!("the calibration needs a lent judge")))?;
    let dataset_sha256 = doc
        .inputs
        .first()
        .map(|f| f.sha256.clone())
        .unwrap_or_default();
    let endings = match &step.flags.endings {
        Some(file) => {
            let sha = record_input(doc, &file.path)?;
            doc.datasets.extend(file.dataset.clone());
            Some((read_jsonl(&file.path)?, sha))
        }
        None => None,
    };
    let label_source = match step.labels {
        Some(set) => Some(label_source(doc, &step.flags.labels, set)?),
        None => None,
    };
    let request = Request {
        questions: step.questions,
        scope: step.scope,
        dataset: endings.as_ref().map(|(records, sha)| DatasetSource {
            endings: records,
            endings_sha256: sha,
            identity: card.identity(step.shots, step.cyclic, &dataset_sha256),
            cache_root: cache::default_root(),
            recalibrate: step.flags.recalibrate,
        }),
        labels: label_source,
        protocol: protocol(&card, step.shots, step.cyclic),
    };
    judge.step("calibrate", 0);
    let outcome = pipeline::run(request, judge)?;
    for note in &outcome.notes {
        eprintln!("{note}");
    }
    Ok(outcome)
}
