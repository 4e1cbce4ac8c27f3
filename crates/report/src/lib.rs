//! Output files of every scoring command: metrics.json, items.jsonl, report.md, report.html, and
//! the suites' other files (CSV, LaTeX, SVG). The typed summaries that suites fill and these writers render
//! live here too, one module per suite, so that nothing here needs `suites/` (docs/architecture.md).

mod bootstrap;
pub mod compare;
pub mod doctor;
pub mod grasp;
pub mod html;
pub mod ifsm_corrected;
pub mod judge;
pub mod label_page;
pub mod latex;
mod markdown;
mod metrics;
pub mod mint;
pub mod muse;
mod npy;
mod output;
pub mod story;
pub mod svg;
pub mod table;

pub use bootstrap::{bootstrap_mean, bootstrap_rate, median, Estimate, RateBootstrap};
pub use markdown::{percent, Table};
pub use metrics::{
    hex, set_binary, sha256_file, sha256_hex, BinaryInfo, DatasetRef, InputFile, MetricsDoc,
    ModelRef, RunSettings,
};
pub use npy::npy_bytes;
pub use output::{
    atomic_write, jsonl, ItemsWriter, OutputDir, Outputs, RunOptions, StagedFile, METRICS_FILE,
    RUN_FILE,
};
