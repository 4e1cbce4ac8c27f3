//! Output files of every scoring command: metrics.json, items.jsonl, report.md.

mod bootstrap;
pub mod judge;
mod markdown;
mod metrics;
mod output;

pub use bootstrap::{bootstrap_mean, Estimate};
pub use markdown::{percent, Table};
pub use metrics::{sha256_file, sha256_hex, InputFile, MetricsDoc, ModelRef};
pub use output::{atomic_write, jsonl, ItemsWriter, OutputDir, Outputs, METRICS_FILE, RUN_FILE};
