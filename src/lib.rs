//! scorekit: an offline scorer for LLM evaluation suites (Possible Stories, GRASP, MuSE, MINT).
//!
//! Data flows one way: input files -> parsed records -> (optional model runtime) -> per-item
//! verdicts -> metrics -> report files. The layers are the crates of the workspace, so an import
//! that runs back up does not compile (docs/architecture.md): `scorekit-core` <- `scorekit-io`,
//! `scorekit-report` <- `scorekit-data`, `scorekit-sandbox`, `scorekit-runtime` <-
//! `scorekit-suites` <- this crate (the CLI and the commands). The lower crates are re-exported
//! under their layer names, so `scorekit::runtime::...` names the same items for the tests and the
//! fuzz targets.

pub mod build_info;
pub mod cli;
pub mod commands;
pub mod doctor;
pub mod handover;
pub mod lent;
pub mod model_runtime;
pub mod settings;

pub use scorekit_core::{error, net, ordered, progress, shard, Error, InputError, Result};
pub use scorekit_data as data;
pub use scorekit_io as input;
pub use scorekit_report as report;
pub use scorekit_runtime as runtime;
pub use scorekit_sandbox as sandbox;
pub use scorekit_suites as suites;
