//! The registry of suites: every suite `scorekit merge` can merge and `scorekit compare` can
//! compare, its item type erased. Add a new suite here.

use crate::grasp::suite::Grasp;
use crate::judge_eval::suite::JudgeEval;
use crate::mint::suite::Mint;
use crate::muse::suite::Muse;
use crate::story::suite::Story;
use crate::suite::{registered, Registered};

/// Every registered suite.
pub static REGISTRY: [Registered; 5] = [
    registered::<Grasp>(),
    registered::<JudgeEval>(),
    registered::<Mint>(),
    registered::<Muse>(),
    registered::<Story>(),
];

/// The registered suite called `name` (the `suite` field of a metrics.json).
pub fn find(name: &str) -> Option<&'static Registered> {
    REGISTRY.iter().find(|s| s.name == name)
}
