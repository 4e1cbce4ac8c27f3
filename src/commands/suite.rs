//! The registry of suites `scorekit merge` and `scorekit compare` know, and the suites whose
//! [`Suite`] still lives with their command (GRASP, MINT, MuSE; story's is in the suites crate).

use scorekit_core::error::Result;
use scorekit_report::{MetricsDoc, Outputs};
use scorekit_suites as suites;
use scorekit_suites::compare::observe::{self, DuplicateId, Observed};
use scorekit_suites::compare::MetricSpec;
use scorekit_suites::muse::suite::Muse;
use scorekit_suites::settings::{GraspSettings, MintSettings};
use scorekit_suites::story_suite::Story;
use scorekit_suites::suite::{registered, setting, DatasetInput, Registered, Suite};

/// `scorekit grasp`.
pub struct Grasp;
/// `scorekit mint`.
pub struct Mint;

impl Suite for Grasp {
    const NAME: &'static str = "grasp";
    const TITLE: &'static str = "GRASP";
    type Item = suites::grasp::Item;
    type Settings = GraspSettings;
    /// A row of one model's file.
    type Key = (Option<String>, usize);
    fn key(item: &Self::Item) -> Self::Key {
        (item.model.clone(), item.row)
    }
    fn outputs(doc: &mut MetricsDoc, items: &mut [Self::Item]) -> Result<Outputs> {
        super::grasp::outputs(doc, items)
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
