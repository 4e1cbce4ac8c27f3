//! `scorekit muse` as a [`Suite`]: its items, settings, outputs and what two runs must share.

use crate::compare::observe::{bit, insert, DuplicateId, Observed};
use crate::compare::MetricKind;
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
    const METRICS: &'static [MetricSpec] = &METRICS;
    fn observe(_: &MetricsDoc, items: &[Self::Item]) -> std::result::Result<Observed, DuplicateId> {
        observe(items, "")
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

/// MuSE: Task Selection, Flow of Thought, Final Output.
pub const METRICS: [MetricSpec; 3] = [
    MetricSpec {
        name: "TS",
        label: "TS",
        kind: MetricKind::Binary,
        compared: true,
    },
    MetricSpec {
        name: "FoT",
        label: "FoT",
        kind: MetricKind::Binary,
        compared: true,
    },
    MetricSpec {
        name: "O",
        label: "O",
        kind: MetricKind::Binary,
        compared: true,
    },
];

/// MuSE items of one run (one group): TS, FoT and O by query `idx` (a query without a plan
/// scores 0, as in the run; O is left out where verdicts were given but none for the query).
pub fn observe(items: &[crate::muse::score::Item], group: &str) -> Result<Observed, DuplicateId> {
    let mut out = Observed::new();
    for (i, it) in items.iter().enumerate() {
        let id = it.idx.to_string();
        insert(&mut out, group, "TS", id.clone(), bit(it.ts), i + 1)?;
        insert(&mut out, group, "FoT", id.clone(), bit(it.fot), i + 1)?;
        if let Some(o) = it.o {
            insert(&mut out, group, "O", id, bit(o), i + 1)?;
        }
    }
    Ok(out)
}
