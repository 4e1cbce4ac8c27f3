//! `scorekit grasp` as a [`Suite`]: its items, settings, outputs and how its runs merge and compare.

use super::outputs::outputs;
use super::Item;
use crate::compare::observe::{bit, insert, DuplicateId, Observed};
use crate::compare::MetricKind;
use crate::compare::MetricSpec;
use crate::settings::GraspSettings;
use crate::suite::{setting, DatasetInput, Suite};
use scorekit_core::error::Result;
use scorekit_report::{MetricsDoc, Outputs};
use std::collections::BTreeMap;

/// `scorekit grasp`.
pub struct Grasp;

impl Suite for Grasp {
    const NAME: &'static str = "grasp";
    const TITLE: &'static str = "GRASP";
    type Item = Item;
    type Settings = GraspSettings;
    /// A row of one model's file.
    type Key = (Option<String>, usize);
    fn key(item: &Self::Item) -> Self::Key {
        (item.model.clone(), item.row)
    }
    fn outputs(doc: &mut MetricsDoc, items: &mut [Self::Item]) -> Result<Outputs> {
        outputs(doc, items)
    }
    const METRICS: &'static [MetricSpec] = &METRICS;
    fn observe(_: &MetricsDoc, items: &[Self::Item]) -> std::result::Result<Observed, DuplicateId> {
        observe(items)
    }
    /// The test (its rows and labels); the responses and the config beside them are the
    /// model's.
    fn dataset(doc: &MetricsDoc) -> Result<Vec<DatasetInput>> {
        let s: Self::Settings = doc.suite_settings()?;
        Ok(vec![
            setting("test", &s.test),
            setting("scorer", &s.scorer),
            setting("semantic", &s.semantic),
        ])
    }
}

/// GRASP: accuracy.
pub const METRICS: [MetricSpec; 1] = [MetricSpec {
    name: "accuracy",
    label: "accuracy",
    kind: MetricKind::Binary,
    compared: true,
}];

/// GRASP items by model (one group for a single-file run, one per `model` when several files
/// were scored together): correct = 1. The id of a row is its scene, its video paths and its
/// gold label, with the occurrence count of that triple in file order (a Level 1 binary video is
/// asked twice, a true and a false statement; rows without video paths pair by their order
/// within the scene and label).
pub fn observe(items: &[crate::grasp::Item]) -> Result<Observed, DuplicateId> {
    let mut out = Observed::new();
    let mut seen: BTreeMap<(&str, String), usize> = BTreeMap::new();
    for (i, it) in items.iter().enumerate() {
        let group = it.model.as_deref().unwrap_or("");
        let base = format!(
            "{}|{}|{}",
            it.scene,
            it.video_file.as_deref().unwrap_or(""),
            it.gt
        );
        let k = seen.entry((group, base.clone())).or_default();
        *k += 1;
        let id = format!("{base}|#{k}");
        let correct = it.verdict == crate::grasp::rules::Verdict::Correct;
        insert(&mut out, group, "accuracy", id, bit(correct), i + 1)?;
    }
    Ok(out)
}
