//! `scorekit muse` as a [`Suite`]: its items, settings, outputs and what two runs must share.

use crate::compare::observe::{self, DuplicateId, Observed};
use crate::compare::MetricSpec;
use crate::settings::MuseSettings;
use crate::suite::{input, setting, DatasetInput, Suite};
use scorekit_core::error::Result;
use scorekit_report::{MetricsDoc, Outputs};

/// `scorekit muse`.
pub struct Muse;

impl Suite for Muse {
    const NAME: &'static str = "muse";
    const TITLE: &'static str = "MuSE";
    type Item = super::Item;
    type Settings = MuseSettings;
    /// The query's idx.
    type Key = i64;
    fn key(item: &Self::Item) -> Self::Key {
        item.idx
    }
    fn outputs(doc: &mut MetricsDoc, items: &mut [Self::Item]) -> Result<Outputs> {
        super::outputs::outputs(doc, items)
    }
    const METRICS: &'static [MetricSpec] = &observe::MUSE;
    fn observe(_: &MetricsDoc, items: &[Self::Item]) -> std::result::Result<Observed, DuplicateId> {
        observe::muse(items, "")
    }
    /// queries.json (inputs[0]), the gold flow, the alias table and the scoring rules.
    fn dataset(doc: &MetricsDoc) -> Result<Vec<DatasetInput>> {
        let s: Self::Settings = doc.suite_settings()?;
        Ok(vec![
            input(doc, 0, "queries"),
            setting("flow", &s.flow),
            setting("aliases", &s.aliases),
            setting("final_output", &s.final_output),
            setting("name_mapping", &s.name_mapping),
        ])
    }
}
