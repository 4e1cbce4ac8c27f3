//! The judge's calibration as `story` and `judge eval` run it: the endings and label files read
//! and `story::calibration::pipeline` called with the lent judge (`crate::lent`). What is
//! calibrated and how is the suite's.

use scorekit_core::error::{Error, Result};
use scorekit_io::read_jsonl;
use scorekit_report::MetricsDoc;
use scorekit_suites::story::calibration::ask::{LentModels, Protocol};
use scorekit_suites::story::calibration::cache;
use scorekit_suites::story::calibration::label_set::{self, LabelSet};
use scorekit_suites::story::calibration::labels::{self, RunSample};
use scorekit_suites::story::calibration::pipeline::{
    self, DatasetSource, LabelSource, Outcome, Request,
};
use scorekit_suites::story::{Checked, Generation, Question};
use std::path::{Path, PathBuf};

/// The dataset part the negatives' fillers come from.
pub const ENDINGS: &str = "possible-stories:endings";

/// What the calibration flags ask for.
pub struct CalibrationFlags {
    /// Calibrate on the dataset (not `--no-calibration`).
    pub dataset: bool,
    /// `--recalibrate`.
    pub recalibrate: bool,
    /// `--offline` (for the endings file).
    pub offline: bool,
    /// `--quiet` (the endings file's download).
    pub quiet: bool,
}

/// The label files read, checked against the dataset (and, for a story run, against its
/// generations: `check` is the whole run's checked generations, and its own label sample, which
/// labels carrying `sample` must be of and take their models from) and combined across
/// labellers, before any model is loaded.
pub fn read_labels(
    paths: &[PathBuf],
    questions: &[Question],
    check: Option<(&[Generation], &[Checked], Option<&RunSample>)>,
) -> Result<LabelSet> {
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
    Ok(set)
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

/// The endings file the negatives' fillers come from, pulled through `scorekit data` and
/// recorded in `doc`, with its sha256.
fn endings(
    doc: &mut MetricsDoc,
    offline: bool,
    quiet: bool,
) -> Result<(Vec<scorekit_io::Record>, String)> {
    let arg = scorekit_data::resolve_arg(
        Path::new(ENDINGS),
        &scorekit_data::Options { offline, quiet },
    )
    .map_err(|e| {
        Error::usage(format!(
            "the judge's dataset calibration needs {ENDINGS} (its negatives' fillers): {e}; \
             or pass --no-calibration to report raw IFSM only"
        ))
    })?;
    let sha = record_input(doc, &arg.path)?;
    doc.datasets.extend(arg.dataset.map(|d| d.record()));
    Ok((read_jsonl(&arg.path)?, sha))
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

/// Run the calibration step for `scope` (dataset indices): the endings file pulled through
/// `scorekit data` when the dataset calibration runs (and recorded in `doc`), the labels given.
#[allow(clippy::too_many_arguments)]
pub fn run(
    doc: &mut MetricsDoc,
    questions: &[Question],
    scope: Vec<usize>,
    labels: Option<(&[PathBuf], &LabelSet)>,
    flags: &CalibrationFlags,
    protocol: Protocol,
    identity: serde_json::Value,
    judge: &mut dyn LentModels,
) -> Result<Outcome> {
    let endings = if flags.dataset {
        Some(endings(doc, flags.offline, flags.quiet)?)
    } else {
        None
    };
    let label_source = labels
        .map(|(paths, set)| label_source(doc, paths, set))
        .transpose()?;
    let request = Request {
        questions,
        scope,
        dataset: endings.as_ref().map(|(records, sha)| DatasetSource {
            endings: records,
            endings_sha256: sha,
            identity,
            cache_root: cache::default_root(),
            recalibrate: flags.recalibrate,
        }),
        labels: label_source,
        protocol,
    };
    let outcome = pipeline::run(request, judge)?;
    for note in &outcome.notes {
        eprintln!("{note}");
    }
    Ok(outcome)
}
