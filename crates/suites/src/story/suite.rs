//! `scorekit story` as a [`Suite`]: its items, settings, outputs and how its runs merge and compare.

use crate::compare::corrected::{self, RunCalibration};
use crate::compare::observe::{self, DuplicateId, Observed};
use crate::compare::MetricSpec;
use crate::settings::StorySettings;
use crate::suite::{input, models, DatasetInput, Suite};
use scorekit_core::error::Result;
use scorekit_report::{MetricsDoc, Outputs};
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
    const METRICS: &'static [MetricSpec] = &observe::STORY;
    fn observe(_: &MetricsDoc, items: &[Self::Item]) -> std::result::Result<Observed, DuplicateId> {
        observe::story(items)
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
