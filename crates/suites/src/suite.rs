//! A suite as the run loop, `scorekit merge` and `scorekit compare` see it: a name, an item type
//! (one line of items.jsonl, defined in the suite's module), the one function that rebuilds
//! metrics and reports from items, shared by a run and a merge, and for `compare` the headline
//! metrics per item and what makes two runs score the same dataset. The registry of suites is
//! [`crate::registry`].

use crate::compare::corrected::RunCalibration;
use crate::compare::observe::{DuplicateId, Observed};
use crate::compare::MetricSpec;
use scorekit_core::error::{InputError, Result};
use scorekit_report::{jsonl, MetricsDoc, Outputs};
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::Value;
use std::path::{Path, PathBuf};

/// One part of what a run was scored against (a dataset file, a scoring setting): two runs
/// compare only where all of these agree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DatasetInput {
    /// What it is (`dataset`, `queries`, `setting test`, ...).
    pub what: String,
    /// What must be equal (a sha256, a setting's JSON).
    pub key: String,
    /// How to show it in a message (path and sha256, or the setting).
    pub shown: String,
}

/// A scoring suite whose sharded runs can be merged.
pub trait Suite {
    /// The `suite` field of its metrics.json.
    const NAME: &'static str;
    /// How its messages name its items (`MINT items`).
    const TITLE: &'static str;
    /// One line of its items.jsonl.
    type Item: Serialize + DeserializeOwned;
    /// Its own settings in metrics.json (beside [`scorekit_report::RunSettings`]).
    type Settings: Serialize + DeserializeOwned;
    /// What identifies an item within a run (a resumed run skips the finished ones).
    type Key: std::hash::Hash + Eq;
    /// The key of an item.
    fn key(item: &Self::Item) -> Self::Key;
    /// Put `items` in the single-run order, fill `doc.metrics` and `doc.groups` from them with
    /// the settings in `doc`, and render the report, the stdout table and the other files.
    fn outputs(doc: &mut MetricsDoc, items: &mut [Self::Item]) -> Result<Outputs>;
    /// Before `outputs` in a merge: fold into `doc` (the first part's) what the parts'
    /// metrics.json know and their items do not (e.g. story's coverage scope). Nothing by default.
    fn combine(_doc: &mut MetricsDoc, _parts: &[&MetricsDoc]) -> Result<()> {
        Ok(())
    }
    /// In a merge: the suite's own files of the part folders, merged (e.g. story's
    /// calibration.jsonl). None by default.
    fn part_files(_parts: &[PathBuf]) -> Result<Vec<(String, Vec<u8>)>> {
        Ok(Vec::new())
    }
    /// The headline metrics `compare` reads per item (the leaderboard's columns).
    const METRICS: &'static [MetricSpec];
    /// Per result group, the per-item values of [`Suite::METRICS`] (`compare`).
    fn observe(
        doc: &MetricsDoc,
        items: &[Self::Item],
    ) -> std::result::Result<Observed, DuplicateId>;
    /// What the run was scored against: runs that differ here are not compared.
    fn dataset(doc: &MetricsDoc) -> Result<Vec<DatasetInput>>;
    /// The judge calibrations the run recorded, which `compare` uses to correct a difference
    /// for the judge's errors. None by default.
    fn calibration(_doc: &MetricsDoc) -> Result<RunCalibration> {
        Ok(RunCalibration::default())
    }
}

/// The `i`-th input file of a run as a dataset input called `what`.
pub fn input(doc: &MetricsDoc, i: usize, what: &str) -> DatasetInput {
    match doc.inputs.get(i) {
        Some(f) => DatasetInput {
            what: what.to_string(),
            key: f.sha256.clone(),
            shown: format!("{} (sha256 {})", f.path, f.sha256),
        },
        None => DatasetInput {
            what: what.to_string(),
            key: String::new(),
            shown: "none".into(),
        },
    }
}

/// One scoring setting as a dataset input (an absent one compares as `null`).
pub fn setting<T: Serialize>(name: &str, value: &T) -> DatasetInput {
    let v = serde_json::to_value(value).unwrap_or(Value::Null);
    DatasetInput {
        what: format!("setting {name}"),
        key: v.to_string(),
        shown: v.to_string(),
    }
}

/// The models of a run (judge, embedder) as one dataset input: they are the measuring
/// instrument, so runs with different ones are not paired.
pub fn models(doc: &MetricsDoc) -> DatasetInput {
    let shown: Vec<String> = doc
        .models
        .iter()
        .map(|m| format!("{}@{} (sha256 {})", m.id, m.revision, m.sha256))
        .collect();
    DatasetInput {
        what: "models".into(),
        key: doc
            .models
            .iter()
            .map(|m| m.sha256.as_str())
            .collect::<Vec<_>>()
            .join(","),
        shown: if shown.is_empty() {
            "none".into()
        } else {
            shown.join(", ")
        },
    }
}

/// A merge's result: the merged items.jsonl and the rebuilt outputs.
pub type Rebuilt = (Vec<u8>, Outputs);

/// One registered suite, its item type erased: its name and how a merge rebuilds its results.
pub struct Registered {
    /// [`Suite::NAME`].
    pub name: &'static str,
    /// Read the items.jsonl of every part folder (in the order given), rebuild metrics and
    /// outputs from the items, and return the merged items.jsonl with the outputs.
    pub rebuild: fn(&mut MetricsDoc, &[PathBuf]) -> Result<Rebuilt>,
    /// [`Suite::combine`].
    pub combine: fn(&mut MetricsDoc, &[&MetricsDoc]) -> Result<()>,
    /// [`Suite::METRICS`].
    pub metrics: &'static [MetricSpec],
    /// Read one run's items.jsonl and return [`Suite::observe`] of it.
    pub observe: fn(&MetricsDoc, &Path) -> Result<Observed>,
    /// [`Suite::dataset`].
    pub dataset: fn(&MetricsDoc) -> Result<Vec<DatasetInput>>,
    /// [`Suite::calibration`].
    pub calibration: fn(&MetricsDoc) -> Result<RunCalibration>,
}

/// Read one run's items.jsonl and observe them ([`Suite::observe`]).
pub fn observe_run<S: Suite>(doc: &MetricsDoc, dir: &Path) -> Result<Observed> {
    let items = read_items::<S::Item>(&[dir.to_path_buf()])?;
    S::observe(doc, &items).map_err(|d| {
        InputError::line(
            dir.join("items.jsonl"),
            d.item,
            format!(
                "item id {:?} of group {:?} appears twice; compare pairs items by id",
                d.id, d.group
            ),
        )
        .into()
    })
}

/// Read the parts' items and rebuild the outputs ([`Registered::rebuild`]).
pub fn rebuild<S: Suite>(doc: &mut MetricsDoc, parts: &[PathBuf]) -> Result<Rebuilt> {
    let mut items = read_items::<S::Item>(parts)?;
    let mut outputs = S::outputs(doc, &mut items)?;
    outputs.files.extend(S::part_files(parts)?);
    Ok((jsonl(&items)?, outputs))
}

/// Every part's items.jsonl, parsed as the suite's items (order: parts, then lines; the suite's
/// `outputs` puts them back into the single-run order).
fn read_items<T: DeserializeOwned>(parts: &[PathBuf]) -> Result<Vec<T>> {
    let mut items = Vec::new();
    for dir in parts {
        let path = dir.join("items.jsonl");
        let text = std::fs::read_to_string(&path)
            .map_err(|e| InputError::file(&path, format!("cannot read: {e}")))?;
        for (i, line) in text.lines().enumerate() {
            if line.trim().is_empty() {
                continue;
            }
            let item: T = serde_json::from_str(line).map_err(|e| {
                InputError::line(&path, i + 1, format!("not an item of this suite: {e}"))
            })?;
            items.push(item);
        }
    }
    Ok(items)
}

/// `S` with its item type erased, for a registry.
pub const fn registered<S: Suite>() -> Registered {
    Registered {
        name: S::NAME,
        rebuild: rebuild::<S>,
        combine: S::combine,
        metrics: S::METRICS,
        observe: observe_run::<S>,
        dataset: S::dataset,
        calibration: S::calibration,
    }
}
