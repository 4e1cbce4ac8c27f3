//! Flags turned into settings, once: the command line's `*Args` (clap's shapes) become the typed
//! settings the suites and the report read. Each `*Args` is destructured whole, so a new flag
//! does not compile until it is handled here.

use crate::cli::OutputArgs;
use scorekit_core::error::Result;
use scorekit_report::RunOptions;
use std::path::Path;

/// The output flags every scoring command takes, as the suites' run loop reads them.
pub fn run_options(args: &OutputArgs) -> RunOptions {
    let OutputArgs {
        out,
        force,
        json,
        quiet,
        bootstrap,
        seed,
        shard,
    } = args;
    RunOptions {
        out: out.clone(),
        force: *force,
        json: *json,
        quiet: *quiet,
        bootstrap: *bootstrap,
        seed: *seed,
        shard: *shard,
    }
}

/// A dataset argument resolved: the file to read, and the pinned dataset it came from
/// (`--dataset possible-stories:test` names pinned upstream data, `scorekit data`).
pub fn dataset(arg: &Path, offline: bool, quiet: bool) -> Result<scorekit_data::InputArg> {
    scorekit_data::resolve_arg(arg, &scorekit_data::Options { offline, quiet })
}
