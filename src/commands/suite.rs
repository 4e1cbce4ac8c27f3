//! The registry of suites `scorekit merge` and `scorekit compare` know, and the suites whose
//! [`Suite`] still lives with their command (MINT, MuSE; story's and GRASP's are in the suites
//! crate).

use scorekit_core::error::Result;
use scorekit_report::{MetricsDoc, Outputs};
use scorekit_suites as suites;
use scorekit_suites::compare::observe::{self, DuplicateId, Observed};
use scorekit_suites::compare::MetricSpec;
use scorekit_suites::grasp::suite::Grasp;
use scorekit_suites::settings::{MintSettings, MuseSettings};
use scorekit_suites::story_suite::Story;
use scorekit_suites::suite::{input, registered, setting, DatasetInput, Registered, Suite};

/// `scorekit mint`.
pub struct Mint;
/// `scorekit muse`.
pub struct Muse;

impl Suite for Mint {
    const NAME: &'static str = "mint";
    const TITLE: &'static str = "MINT";
    type Item = suites::mint::Item;
    type Settings = MintSettings;
    /// A line of a trajectory file.
    type Key = (String, usize);
    fn key(item: &Self::Item) -> Self::Key {
        (item.file.clone(), item.line)
    }
    fn outputs(doc: &mut MetricsDoc, items: &mut [Self::Item]) -> Result<Outputs> {
        super::mint::outputs(doc, items)
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

impl Suite for Muse {
    const NAME: &'static str = "muse";
    const TITLE: &'static str = "MuSE";
    type Item = suites::muse::Item;
    type Settings = MuseSettings;
    /// The query's idx.
    type Key = i64;
    fn key(item: &Self::Item) -> Self::Key {
        item.idx
    }
    fn outputs(doc: &mut MetricsDoc, items: &mut [Self::Item]) -> Result<Outputs> {
        super::muse::outputs(doc, items)
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

/// Every suite `scorekit merge` can merge.
pub static REGISTRY: [Registered; 4] = [
    registered::<Grasp>(),
    registered::<Mint>(),
    registered::<Muse>(),
    registered::<Story>(),
];

/// The registered suite called `name`.
pub fn find(name: &str) -> Option<&'static Registered> {
    REGISTRY.iter().find(|s| s.name == name)
}
