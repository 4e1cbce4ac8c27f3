//! `scorekit story` as a [`Suite`]: its items, settings, outputs and how its runs merge and compare.

use crate::compare::corrected::{self, RunCalibration};
use crate::compare::observe::{bit, insert, DuplicateId, Observed};
use crate::compare::MetricKind;
use crate::compare::MetricSpec;
use crate::settings::StorySettings;
pub use crate::story::{HUMAN, JUDGED};
use crate::suite::{input, models, DatasetInput, Suite};
use scorekit_core::error::Result;
use scorekit_report::{MetricsDoc, Outputs};
use std::collections::BTreeMap;
use std::path::PathBuf;

/// `scorekit story`.
pub struct Story;

impl Suite for Story {
    const NAME: &'static str = "story";
    const TITLE: &'static str = "story";
    type Item = crate::story::Item;
    type Settings = StorySettings;
    /// The generation's row.
    type Key = usize;
    fn key(item: &Self::Item) -> Self::Key {
        item.row
    }
    fn outputs(doc: &mut MetricsDoc, items: &mut [Self::Item]) -> Result<Outputs> {
        crate::story::outputs::outputs(doc, items)
    }
    fn combine(doc: &mut MetricsDoc, parts: &[&MetricsDoc]) -> Result<()> {
        crate::story::outputs::combine_scopes(doc, parts);
        crate::story::outputs::combine_calibrations(doc, parts)
    }
    fn part_files(parts: &[PathBuf]) -> Result<Vec<(String, Vec<u8>)>> {
        crate::story::outputs::merge_calibration_files(parts)
    }
    const METRICS: &'static [MetricSpec] = &METRICS;
    fn observe(_: &MetricsDoc, items: &[Self::Item]) -> std::result::Result<Observed, DuplicateId> {
        observe(items)
    }
    /// The dataset (inputs[0]) and the judge and embedder.
    fn dataset(doc: &MetricsDoc) -> Result<Vec<DatasetInput>> {
        doc.suite_settings::<Self::Settings>()?;
        Ok(vec![input(doc, 0, "dataset"), models(doc)])
    }
    /// `settings.calibration` and the groups' `ifsm_corrected` entries.
    fn calibration(doc: &MetricsDoc) -> Result<RunCalibration> {
        corrected::story_calibration(doc)
    }
}

/// Possible Stories: IFSM and the judge's ceiling per question, Dissimilarity per story.
pub const METRICS: [MetricSpec; 3] = [
    MetricSpec {
        name: "ifsm",
        label: "IFSM",
        kind: MetricKind::Binary,
        compared: true,
    },
    MetricSpec {
        name: "judge_accuracy",
        label: "judge acc. (ceiling)",
        kind: MetricKind::Binary,
        compared: false,
    },
    MetricSpec {
        name: "dissimilarity_macro",
        label: "Dissimilarity",
        kind: MetricKind::Continuous,
        compared: true,
    },
];

/// Story items by model group. `ifsm` pairs by `question_id` (follow = 1; an empty ending of a
/// judged run is Not-Follow, 0, as the run counts it). `dissimilarity_macro` pairs by story
/// (`passage_id`): the story's mean over its pairs, each pair once.
pub fn observe(items: &[crate::story::Item]) -> Result<Observed, DuplicateId> {
    let mut out = Observed::new();
    let mut stories: BTreeMap<(&str, &str), Vec<f64>> = BTreeMap::new();
    for (i, it) in items.iter().enumerate() {
        let line = i + 1;
        // An empty ending is the model's answer and carries Not-Follow without a verdict: it
        // counts in IFSM, not in the judge's ceiling (as in the run's own metrics).
        let answered = matches!(
            it.status,
            crate::story::Status::Scored | crate::story::Status::EmptyEnding
        );
        if let (true, Some(outcome)) = (answered, &it.judge) {
            insert(
                &mut out,
                &it.group,
                "ifsm",
                it.question_id.clone(),
                bit(outcome.follow()),
                line,
            )?;
            // Not a compared metric: which endings the judge saw, so that the corrected
            // difference corrects only those (an empty ending is known not to follow).
            insert(
                &mut out,
                &it.group,
                JUDGED,
                it.question_id.clone(),
                bit(outcome.verdict().is_some()),
                line,
            )?;
            if let Some(h) = it.human_follows {
                insert(
                    &mut out,
                    &it.group,
                    HUMAN,
                    it.question_id.clone(),
                    bit(h),
                    line,
                )?;
            }
            if let Some(j) = outcome.verdict() {
                insert(
                    &mut out,
                    &it.group,
                    "judge_accuracy",
                    it.question_id.clone(),
                    bit(j.judge_correct),
                    line,
                )?;
            }
        }
        if let (crate::story::Status::Scored, Some(p), Some(pairs)) =
            (it.status, &it.passage_id, &it.dissimilarity_pairs)
        {
            let entry = stories.entry((&it.group, p)).or_default();
            entry.extend(
                pairs
                    .iter()
                    .filter(|q| it.question_id < q.question_id)
                    .map(|q| q.dissimilarity),
            );
        }
    }
    for ((group, passage), values) in stories {
        if !values.is_empty() {
            let mean = values.iter().sum::<f64>() / values.len() as f64;
            out.entry(group.to_string())
                .or_default()
                .entry("dissimilarity_macro")
                .or_default()
                .insert(passage.to_string(), mean);
        }
    }
    Ok(out)
}
