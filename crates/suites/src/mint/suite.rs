//! `scorekit mint` as a [`Suite`]: its items, settings, outputs and how its runs merge and
//! compare.

use crate::compare::observe::{self, DuplicateId, Observed};
use crate::compare::MetricSpec;
use crate::settings::MintSettings;
use crate::suite::{setting, DatasetInput, Suite};
use scorekit_core::error::Result;
use scorekit_report::{MetricsDoc, Outputs};

/// `scorekit mint`.
pub struct Mint;

impl Suite for Mint {
    const NAME: &'static str = "mint";
    const TITLE: &'static str = "MINT";
    type Item = crate::mint::Item;
    type Settings = MintSettings;
    /// A line of a trajectory file.
    type Key = (String, usize);
    fn key(item: &Self::Item) -> Self::Key {
        (item.file.clone(), item.line)
    }
    fn outputs(doc: &mut MetricsDoc, items: &mut [Self::Item]) -> Result<Outputs> {
        crate::mint::outputs::outputs(doc, items)
    }
    const METRICS: &'static [MetricSpec] = &observe::MINT;
    fn observe(
        doc: &MetricsDoc,
        items: &[Self::Item],
    ) -> std::result::Result<Observed, DuplicateId> {
        // A run whose settings do not read pairs as not rechecked: `dataset` reports the
        // settings error before any pairing.
        let rechecked = doc
            .suite_settings::<Self::Settings>()
            .is_ok_and(|s| s.recheck);
        observe::mint(items, rechecked)
    }
    /// MINT's inputs are the trajectories themselves (model outputs); the instances are paired
    /// by task and id, and the verdict rule must agree.
    fn dataset(doc: &MetricsDoc) -> Result<Vec<DatasetInput>> {
        let s: Self::Settings = doc.suite_settings()?;
        Ok(vec![
            setting("recheck", &s.recheck),
            setting("tolerance", &s.tolerance),
            setting("exec_code", &s.exec_code),
        ])
    }
}
