//! The calibration step of a story run (and of `judge eval`): the dataset calibration of the
//! run's questions, through the cache, and the human labels of its scope, with what metrics.json
//! records of them. The caller loads the judge and reads the files; this decides the rest.

use super::ask::{LentModels, Protocol};
use super::cache::{self, CalibrationCache};
use super::label_set::LabelSet;
use super::summary::CalibrationSummary;
use super::{calibrate, calibrate_labels, frames, CacheUse, CalibrationItem, PROTOCOL};
use crate::settings::{CalibrationSettings, DatasetCalibrationSettings, LabelFileSettings};
use crate::story::Question;
use scorekit_core::error::Result;
use scorekit_io::Record;
use serde_json::{json, Value};
use std::collections::HashSet;
use std::path::PathBuf;

/// The dataset calibration's inputs.
pub struct DatasetSource<'a> {
    /// `possible-stories:endings`' records (the fillers).
    pub endings: &'a [Record],
    /// Its sha256.
    pub endings_sha256: &'a str,
    /// What else decides the judge's answers: the judge (id, revision, file hashes), its
    /// settings, the dataset's sha256. Hashed with the endings and the protocol into the key.
    pub identity: Value,
    /// The cache's root (`None`: no cache).
    pub cache_root: Option<PathBuf>,
    /// `--recalibrate`.
    pub recalibrate: bool,
}

/// The human labels' inputs.
pub struct LabelSource<'a> {
    /// The labels, combined across labellers (`label_set`).
    pub set: &'a LabelSet,
    /// The files as named, space-separated.
    pub path: String,
    /// The file's sha256; of several files, the sha256 of their sha256s (one a line, in order).
    pub sha256: String,
}

/// What a run calibrates.
pub struct Request<'a> {
    /// The dataset's questions.
    pub questions: &'a [Question],
    /// Dataset indices of the run's questions (its shard's), in order.
    pub scope: Vec<usize>,
    /// The dataset calibration (`None`: `--no-calibration`).
    pub dataset: Option<DatasetSource<'a>>,
    /// The human labels (`--calibration-labels`).
    pub labels: Option<LabelSource<'a>>,
    /// How the judge reads a frame.
    pub protocol: Protocol<'a>,
}

/// A finished calibration step.
pub struct Outcome {
    /// What metrics.json's settings record.
    pub settings: CalibrationSettings,
    /// The counts (metrics.json `metrics.calibration`).
    pub summary: CalibrationSummary,
    /// calibration.jsonl's items: the dataset's, then the labels'.
    pub items: Vec<CalibrationItem>,
    /// Lines for stderr (what came from the cache, questions without a filler).
    pub notes: Vec<String>,
}

/// Run the calibration step with `judge`.
pub fn run(req: Request, judge: &mut dyn LentModels) -> Result<Outcome> {
    let mut settings = CalibrationSettings::default();
    let mut notes = Vec::new();
    let mut dataset_items = None;
    if let Some(src) = &req.dataset {
        let identity = json!({
            "protocol": PROTOCOL,
            "endings_sha256": src.endings_sha256,
            "run": src.identity,
        });
        let key = cache::key(&identity);
        let fillers = frames::fillers(req.questions, src.endings)?;
        let opened = match &src.cache_root {
            Some(root) => match CalibrationCache::open(root, &key, &identity) {
                Ok(c) => Some(c),
                Err(e) => {
                    notes.push(format!("calibration: no cache ({e}); calibrating afresh"));
                    None
                }
            },
            None => None,
        };
        let cache_use = opened.as_ref().map(|cache| CacheUse {
            cache,
            recalibrate: src.recalibrate,
        });
        let done = calibrate(
            req.questions,
            &req.scope,
            &fillers,
            req.protocol,
            judge,
            cache_use,
        )?;
        if done.from_cache > 0 {
            notes.push(format!(
                "calibration: {} of {} question(s) from the cache ({}; --recalibrate redoes them)",
                done.from_cache,
                req.scope.len(),
                opened
                    .as_ref()
                    .map_or(String::new(), |c| c.dir().display().to_string())
            ));
        }
        let without: Vec<&str> = req
            .scope
            .iter()
            .filter(|&&qi| fillers[qi].is_none())
            .map(|&qi| req.questions[qi].id.as_str())
            .collect();
        if !without.is_empty() {
            notes.push(format!(
                "warning: calibration: {} of {} question(s) have no ending of their story in the \
                 endings file outside their options, so no negatives (first: {})",
                without.len(),
                req.scope.len(),
                without[..without.len().min(3)].join(", ")
            ));
        }
        settings.dataset = Some(DatasetCalibrationSettings {
            protocol: PROTOCOL.to_string(),
            key,
            endings_sha256: src.endings_sha256.to_string(),
        });
        dataset_items = Some(done.items);
    }
    let mut label_items = None;
    if let Some(src) = &req.labels {
        let ids: HashSet<&str> = req
            .scope
            .iter()
            .map(|&qi| req.questions[qi].id.as_str())
            .collect();
        let items = calibrate_labels(
            req.questions,
            &src.set.labels,
            |q| ids.contains(q.id.as_str()),
            req.protocol,
            judge,
        )?;
        settings.human = Some(LabelFileSettings {
            path: src.path.clone(),
            sha256: src.sha256.clone(),
        });
        label_items = Some(items);
    }
    let labelled = label_items
        .as_deref()
        .zip(req.labels.as_ref().map(|l| l.set));
    let summary = CalibrationSummary::of(dataset_items.as_deref(), labelled);
    let mut items = dataset_items.unwrap_or_default();
    items.extend(label_items.unwrap_or_default());
    Ok(Outcome {
        settings,
        summary,
        items,
        notes,
    })
}
