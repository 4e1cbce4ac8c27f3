//! The registry of suites `scorekit merge` and `scorekit compare` know, and the suites whose
//! [`Suite`] still lives with their command (GRASP, MuSE; story's and MINT's are in the suites
//! crate).

use scorekit_core::error::Result;
use scorekit_report::{MetricsDoc, Outputs};
use scorekit_suites as suites;
use scorekit_suites::compare::observe::{self, DuplicateId, Observed};
use scorekit_suites::compare::MetricSpec;
use scorekit_suites::mint::suite::Mint;
use scorekit_suites::muse::suite::Muse;
use scorekit_suites::settings::GraspSettings;
use scorekit_suites::story_suite::Story;
use scorekit_suites::suite::{registered, setting, DatasetInput, Registered, Suite};

/// `scorekit grasp`.
pub struct Grasp;

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
