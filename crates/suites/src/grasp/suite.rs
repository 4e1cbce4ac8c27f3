//! `scorekit grasp` as a [`Suite`]: its items, settings, outputs and how its runs merge and compare.

use super::outputs::outputs;
use super::Item;
use crate::compare::observe::{self, DuplicateId, Observed};
use crate::compare::MetricSpec;
use crate::settings::GraspSettings;
use crate::suite::{setting, DatasetInput, Suite};
use scorekit_core::error::Result;
use scorekit_report::{MetricsDoc, Outputs};

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
    const METRICS: &'static [MetricSpec] = &observe::GRASP;
    fn observe(_: &MetricsDoc, items: &[Self::Item]) -> std::result::Result<Observed, DuplicateId> {
        observe::grasp(items)
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
