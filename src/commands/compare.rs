//! `scorekit compare`: two or more finished runs of one suite compared item by item
//! (`scorekit_suites::compare::run`); the leaderboard printed, or metrics.json with `--json`.

use crate::cli::CompareArgs;
use scorekit_core::error::Result;
use scorekit_suites::compare::run::{compare, CompareOptions};

/// Run `scorekit compare`.
pub fn run(args: CompareArgs) -> Result<()> {
    let CompareArgs {
        runs,
        labels,
        out,
        force,
        json,
        bootstrap,
        seed,
    } = args;
    let compared = compare(&CompareOptions {
        runs,
        labels,
        out,
        force,
        bootstrap,
        seed,
    })?;
    compared
        .dir
        .print_summary(json, &compared.metrics_json, &compared.report_md);
    Ok(())
}
