//! `scorekit mint`: the flags resolved into the suite's settings ([`crate::settings::mint`]),
//! the run ([`scorekit_suites::mint::pipeline`]: find the results.jsonl files, read, aggregate,
//! write the tables, metrics.json and report.md), and what it prints.

use crate::cli::MintArgs;
use scorekit_core::error::Result;

/// Run `scorekit mint`.
pub fn run(args: MintArgs) -> Result<()> {
    let opts = crate::settings::mint(&args)?;
    let done = scorekit_suites::mint::pipeline::run(&opts)?;
    // The report (tables, re-check, files not read, the run's size and time), not the
    // summary other suites print: MINT's report is its table.
    if opts.run.json {
        print!("{}", done.metrics_json);
    } else {
        print!("{}", done.outputs.report);
    }
    Ok(())
}
