//! Output files of every scoring command: metrics.json, items.jsonl, report.md.

mod bootstrap;
mod markdown;
mod metrics;
mod output;

pub use bootstrap::{bootstrap_mean, bootstrap_rate, Estimate};
pub use markdown::{percent, Table};
pub use metrics::{sha256_file, sha256_hex, InputFile, MetricsDoc, ModelRef};
pub use output::{
    atomic_write, jsonl, ItemsWriter, OutputDir, Outputs, StagedFile, METRICS_FILE, RUN_FILE,
};
