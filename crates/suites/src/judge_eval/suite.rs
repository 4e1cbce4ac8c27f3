//! `scorekit judge eval` as a [`Suite`]: its items, settings, outputs, how its shards merge (the
//! calibration's counts and calibration.jsonl as a story run's), and what `compare` pairs: two
//! judges on the same questions, right or wrong per question (exact McNemar).

use super::EvalItem;
use crate::compare::observe::{DuplicateId, Observed};
use crate::compare::{MetricKind, MetricSpec};
use crate::settings::JudgeEvalSettings;
use crate::story::outputs::{combine_calibrations, merge_calibration_files};
use crate::suite::{input, DatasetInput, Suite};
use scorekit_core::error::Result;
use scorekit_report::{MetricsDoc, Outputs};
use std::path::PathBuf;

/// `scorekit judge eval`.
pub struct JudgeEval;

/// The metric `compare` reads of a judge: accuracy, right or wrong per question.
pub const METRICS: [MetricSpec; 1] = [MetricSpec {
    name: "accuracy",
    label: "accuracy",
    kind: MetricKind::Binary,
    compared: true,
}];

impl Suite for JudgeEval {
    const NAME: &'static str = super::SUITE;
    const TITLE: &'static str = "judge eval";
    type Item = EvalItem;
    type Settings = JudgeEvalSettings;
    /// The question's line in the dataset.
    type Key = usize;
    fn key(item: &Self::Item) -> Self::Key {
        item.line
    }
    fn outputs(doc: &mut MetricsDoc, items: &mut [Self::Item]) -> Result<Outputs> {
        super::outputs::outputs(doc, items)
    }
    fn combine(doc: &mut MetricsDoc, parts: &[&MetricsDoc]) -> Result<()> {
        combine_calibrations(doc, parts)
    }
    fn part_files(parts: &[PathBuf]) -> Result<Vec<(String, Vec<u8>)>> {
        merge_calibration_files(parts)
    }
    const METRICS: &'static [MetricSpec] = &METRICS;
    /// One system per run: right (1) or wrong (0) per `question_id`.
    fn observe(_: &MetricsDoc, items: &[Self::Item]) -> std::result::Result<Observed, DuplicateId> {
        let mut out = Observed::new();
        let values = out
            .entry(String::new())
            .or_default()
            .entry("accuracy")
            .or_default();
        for (i, it) in items.iter().enumerate() {
            let right = f64::from(u8::from(it.correct));
            if values.insert(it.question_id.clone(), right).is_some() {
                return Err(DuplicateId {
                    group: String::new(),
                    id: it.question_id.clone(),
                    item: i + 1,
                });
            }
        }
        Ok(out)
    }
    /// The question file (inputs[0]): two judges compare on the same questions.
    fn dataset(doc: &MetricsDoc) -> Result<Vec<DatasetInput>> {
        doc.suite_settings::<Self::Settings>()?;
        Ok(vec![input(doc, 0, "dataset")])
    }
}
