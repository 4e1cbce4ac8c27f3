//! The judge's calibration as `story` and `judge eval` run it: the loaded judge as the suites'
//! model step ([`JudgeStep`]), the endings and label files read, the cache key's inputs named,
//! and `story::calibration::pipeline` called. What is calibrated and how is the suite's.

use crate::commands::model_runtime::ModelRuntime;
use indicatif::ProgressBar;
use scorekit_core::error::{Error, Result};
use scorekit_core::progress::bar;
use scorekit_io::read_jsonl;
use scorekit_report::{MetricsDoc, ModelRef};
use scorekit_runtime::judge::AnyJudge;
use scorekit_suites::story::calibration::ask::{FrameJudge, Protocol};
use scorekit_suites::story::calibration::cache;
use scorekit_suites::story::calibration::label_set::{self, LabelSet};
use scorekit_suites::story::calibration::labels;
use scorekit_suites::story::calibration::pipeline::{
    self, DatasetSource, LabelSource, Outcome, Request,
};
use scorekit_suites::story::{Checked, Generation, Question};
use serde_json::json;
use std::path::{Path, PathBuf};

/// The dataset part the negatives' fillers come from.
pub const ENDINGS: &str = "possible-stories:endings";

/// A loaded judge as the calibration's model step, with a progress bar of its own.
pub struct JudgeStep<'a> {
    judge: &'a AnyJudge,
    batch_tokens: usize,
    quiet: bool,
}

impl<'a> JudgeStep<'a> {
    /// The step over `judge`, batched under `batch_tokens`.
    pub fn new(judge: &'a AnyJudge, batch_tokens: usize, quiet: bool) -> Self {
        JudgeStep {
            judge,
            batch_tokens,
            quiet,
        }
    }
}

impl FrameJudge for JudgeStep<'_> {
    fn score(&mut self, pairs: &[(String, String)]) -> Result<Vec<f32>> {
        let progress = bar(pairs.len() as u64, "calibrate", self.quiet);
        let scores = judge_scores(Some(self.judge), pairs, self.batch_tokens, &progress)?;
        progress.finish_and_clear();
        Ok(scores)
    }

    fn answer(&mut self, prompts: &[String]) -> Result<Vec<String>> {
        let progress = bar(prompts.len() as u64, "calibrate", self.quiet);
        let answers = judge_answers(Some(self.judge), prompts, self.batch_tokens, &progress)?;
        progress.finish_and_clear();
        Ok(answers)
    }
}

/// A scoring judge's score of each pair, on `progress` (an error for any other judge).
pub fn judge_scores(
    judge: Option<&AnyJudge>,
    pairs: &[(String, String)],
    batch_tokens: usize,
    progress: &ProgressBar,
) -> Result<Vec<f32>> {
    match judge {
        Some(AnyJudge::Scoring(j)) => j.score(pairs, batch_tokens, progress),
        _ => Err(Error::Internal(anyhow::anyhow!("no scoring judge runs"))),
    }
}

/// A letter judge's decoded answer to each prompt, on `progress` (an error for any other judge).
pub fn judge_answers(
    judge: Option<&AnyJudge>,
    prompts: &[String],
    batch_tokens: usize,
    progress: &ProgressBar,
) -> Result<Vec<String>> {
    match judge {
        Some(AnyJudge::Letter(j)) => Ok(j
            .answer(prompts, batch_tokens, progress)?
            .into_iter()
            .map(|a| a.text)
            .collect()),
        _ => Err(Error::Internal(anyhow::anyhow!("no letter judge runs"))),
    }
}

/// What the calibration flags ask for.
pub struct CalibrationFlags {
    /// Calibrate on the dataset (not `--no-calibration`).
    pub dataset: bool,
    /// `--recalibrate`.
    pub recalibrate: bool,
    /// `--offline` (for the endings file).
    pub offline: bool,
}

/// The label files read, checked against the dataset (and, for a story run, against its
/// generations: `check` is the whole run's checked generations) and combined across labellers,
/// before any model is loaded.
pub fn read_labels(
    paths: &[PathBuf],
    questions: &[Question],
    check: Option<(&[Generation], &[Checked])>,
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
    if let Some((generations, checked)) = check {
        label_set::check_models(&all, questions, generations, checked)?;
    }
    Ok(label_set::combine(all)?)
}

/// The protocol of a loaded judge: scoring, or letters with `shots` (and every rotation).
pub fn protocol<'a>(judge: &AnyJudge, shots: &'a str, cyclic: bool) -> Protocol<'a> {
    match judge {
        AnyJudge::Scoring(_) => Protocol::Scoring,
        AnyJudge::Letter(_) => Protocol::Letter { shots, cyclic },
    }
}

/// What decides the judge's answers besides the frames: the judge's files and every setting
/// that changes its numbers. Story runs and `judge eval` build it here alike, so they share one
/// cache entry.
pub fn judge_identity(
    judge: &AnyJudge,
    model: &ModelRef,
    rt: &ModelRuntime,
    shots: &str,
    cyclic: bool,
    dataset_sha256: &str,
) -> serde_json::Value {
    let max_length = match judge {
        AnyJudge::Scoring(j) => Some(j.max_length()),
        AnyJudge::Letter(_) => None,
    };
    json!({
        "judge": {"id": model.id, "revision": model.revision, "sha256": model.sha256},
        "arch": judge.arch(),
        "engine": judge.engine(),
        "kind": judge.kind(),
        "max_length": max_length,
        "device": rt.device_name(),
        "dtype": format!("{:?}", rt.dtype),
        "quantize": rt.quantize_setting(),
        "tf32": rt.tf32,
        "shots": shots,
        "cyclic": cyclic,
        "dataset_sha256": dataset_sha256,
    })
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
    step: &mut JudgeStep,
) -> Result<Outcome> {
    let endings = if flags.dataset {
        Some(endings(doc, flags.offline, step.quiet)?)
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
    let outcome = pipeline::run(request, step)?;
    for note in &outcome.notes {
        eprintln!("{note}");
    }
    Ok(outcome)
}
