//! One module per suite; each turns records into verdicts and metrics and knows nothing of the CLI.
//! Suites fill the typed summaries of `report/` and leave the writing to it; `pystr` holds the
//! Python string semantics that more than one suite reproduces (docs/architecture.md).
pub mod compare;
pub mod grasp;
pub mod ifsm_correction;
pub mod judge_data;
pub mod judge_eval;
pub mod letter;
pub mod merge;
pub mod mint;
pub mod models;
pub mod muse;
pub mod pyrandom;
pub mod pystr;
pub mod registry;
pub mod run;
pub mod settings;
pub mod similarity;
pub mod stats;
pub mod story;
pub mod suite;
pub mod view;
pub use similarity::cosine;
