//! Flags turned into settings, once: the command line's `*Args` (clap's shapes) become the typed
//! settings the suites and the report read. Each `*Args` is destructured whole, so a new flag
//! does not compile until it is handled here.

use crate::cli::{GraspArgs, GraspTest, ModelArgs, OutputArgs};
use scorekit_core::error::Result;
use scorekit_report::RunOptions;
use scorekit_suites::grasp::{input as grasp_input, TestKind};
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

/// `scorekit grasp`'s flags as the GRASP pipeline reads them, and the model flags, which the
/// command's model runtime reads (it loads the `--semantic` embedder).
pub fn grasp(args: GraspArgs) -> (grasp_input::Settings, ModelArgs) {
    let GraspArgs {
        responses,
        labels,
        test,
        pairwise,
        semantic,
        allow_unknown_scenes,
        embedder,
        model,
        output,
    } = args;
    let settings = grasp_input::Settings {
        responses,
        labels,
        test: test.map(grasp_test),
        pairwise,
        semantic,
        allow_unknown_scenes,
        embedder,
        out: run_options(&output),
    };
    (settings, model)
}

/// The suite's test type of `--test`.
fn grasp_test(t: GraspTest) -> TestKind {
    match t {
        GraspTest::Level1Binary => TestKind::Level1Binary,
        GraspTest::Level1Open => TestKind::Level1Open,
        GraspTest::Level2 => TestKind::Level2,
        GraspTest::Level2Text => TestKind::Level2Text,
    }
}
