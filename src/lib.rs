//! scorekit: an offline scorer for LLM evaluation suites (Possible Stories, GRASP, MuSE, MINT).
//!
//! Data flows one way: input files -> parsed records -> (optional model runtime) -> per-item
//! verdicts -> metrics -> report files. Suites are plain functions over plain data. Layers: main ->
//! commands -> suites and runtime -> report and input (docs/architecture.md,
//! scripts/check-layers.sh).

pub mod cli;
pub mod commands;
pub mod data;
pub mod error;
pub mod input;
pub mod net;
pub mod ordered;
pub mod progress;
pub mod report;
pub mod runtime;
pub mod sandbox;
pub mod shard;
pub mod suites;

pub use error::{Error, InputError, Result};
