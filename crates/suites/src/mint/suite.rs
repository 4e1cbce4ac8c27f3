//! `scorekit mint` as a [`Suite`]: its items, settings, outputs and how its runs merge and
//! compare.

use crate::compare::observe::{bit, insert, DuplicateId, Observed};
use crate::compare::MetricKind;
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
    const METRICS: &'static [MetricSpec] = &METRICS;
    fn observe(
        doc: &MetricsDoc,
        items: &[Self::Item],
    ) -> std::result::Result<Observed, DuplicateId> {
        // A run whose settings do not read pairs as not rechecked: `dataset` reports the
        // settings error before any pairing.
        let rechecked = doc
            .suite_settings::<Self::Settings>()
            .is_ok_and(|s| s.recheck);
        observe(items, rechecked)
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

/// MINT: success rate.
pub const METRICS: [MetricSpec; 1] = [MetricSpec {
    name: "success_rate",
    label: "SR",
    kind: MetricKind::Binary,
    compared: true,
}];

/// MINT items by configuration: success (re-checked where the run re-checked) by task and
/// `task_id`. Duplicate trajectories are left out, as in the run's tables.
pub fn observe(items: &[crate::mint::Item], rechecked: bool) -> Result<Observed, DuplicateId> {
    let mut out = Observed::new();
    for (i, it) in items.iter().enumerate() {
        if it.duplicate {
            continue;
        }
        let id = format!("{}/{}", it.task, it.task_id);
        insert(
            &mut out,
            &it.config.label(),
            "success_rate",
            id,
            bit(it.verdict(rechecked)),
            i + 1,
        )?;
    }
    Ok(out)
}
