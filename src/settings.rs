//! Flags turned into settings, once: the command line's `*Args` (clap's shapes) become the typed
//! settings the suites and the report read. Each `*Args` is destructured whole, so a new flag
//! does not compile until it is handled here.

use crate::cli::{
    CalibrationArgs, GraspArgs, JudgeEvalArgs, MintArgs, ModelArgs, OptionOrders, OutputArgs,
    ShotArgs, StoryArgs, ViewArgs,
};
use crate::commands::calibration::CalibrationFlags;
use scorekit_core::error::Result;
use scorekit_report::RunOptions;
use scorekit_suites::grasp::input as grasp_input;
use scorekit_suites::mint::checkers::Tolerance;
use scorekit_suites::mint::run::{MintOptions, PinnedPart};
use std::path::{Path, PathBuf};

/// The output flags every scoring command takes, as the suites' run loop reads them; `--out` is
/// checked here, before any model loads (a finished run there needs `--force`).
pub fn run_options(args: &OutputArgs) -> Result<RunOptions> {
    let OutputArgs {
        out,
        force,
        json,
        quiet,
        bootstrap,
        seed,
        shard,
    } = args;
    scorekit_report::OutputDir::check(out, *force)?;
    Ok(RunOptions {
        out: out.clone(),
        force: *force,
        json: *json,
        quiet: *quiet,
        bootstrap: *bootstrap,
        seed: *seed,
        shard: *shard,
    })
}

/// `scorekit view`'s flags: the folders and the leaderboard's bootstrap for the suite's call,
/// and the page's path.
pub fn view(args: ViewArgs) -> (scorekit_suites::view::ViewOptions, PathBuf) {
    let ViewArgs {
        dirs,
        labels,
        out,
        bootstrap,
        seed,
    } = args;
    let opts = scorekit_suites::view::ViewOptions {
        dirs,
        labels,
        bootstrap,
        seed,
    };
    (opts, out)
}

/// A dataset argument resolved: the file to read, and the pinned dataset it came from
/// (`--dataset possible-stories:test` names pinned upstream data, `scorekit data`).
pub fn dataset(arg: &Path, offline: bool, quiet: bool) -> Result<scorekit_data::InputArg> {
    scorekit_data::resolve_arg(arg, &scorekit_data::Options { offline, quiet })
}

/// `scorekit mint`'s flags as the suite's settings: `--outputs` resolved (a dataset name through
/// the cache), `--exec-code` implying `--recheck`, `--jobs` defaulting to the number of cores.
pub fn mint(args: &MintArgs) -> Result<MintOptions> {
    let MintArgs {
        outputs,
        recheck,
        exec_code,
        exec_timeout,
        exec_memory,
        jobs,
        tolerance,
        timings,
        offline,
        output,
    } = args;
    // The tolerance decides only the re-check: without it the stored flags are read, and a
    // non-default tolerance would silently change nothing.
    if *tolerance != Tolerance::Head && !(*recheck || *exec_code) {
        return Err(scorekit_core::error::Error::usage(format!(
            "--tolerance {}: the tolerance applies to the re-check only (without --recheck the \
             stored success flags are read as they are); add --recheck",
            tolerance.name()
        )));
    }
    // `--outputs mint:gpt-3.5-turbo-0613` names pinned upstream data (scorekit data).
    let input = dataset(outputs, *offline, output.quiet)?;
    let jobs = jobs.unwrap_or_else(|| {
        std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get)
    });
    Ok(MintOptions {
        root: input.path,
        dataset: input.dataset.map(|d| PinnedPart {
            record: d.record(),
            files: d.files.into_iter().map(|f| f.local).collect(),
        }),
        recheck: *recheck || *exec_code,
        tolerance: *tolerance,
        exec_code: *exec_code,
        exec_timeout_s: *exec_timeout,
        exec_memory_mib: *exec_memory,
        jobs,
        timings: *timings,
        run: run_options(output)?,
    })
}

/// `scorekit grasp`'s flags as the GRASP pipeline reads them, and the model flags, which the
/// command's model runtime reads (it loads the `--semantic` embedder).
pub fn grasp(args: GraspArgs) -> Result<(grasp_input::Settings, ModelArgs)> {
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
        test,
        pairwise,
        semantic,
        allow_unknown_scenes,
        embedder,
        out: run_options(&output)?,
    };
    Ok((settings, model))
}

/// The calibration flags of `story` and `judge eval` (with `--offline` and `--quiet` for the
/// endings file): what to calibrate on, and the label files.
pub fn calibration(
    args: &CalibrationArgs,
    offline: bool,
    quiet: bool,
) -> (CalibrationFlags, Vec<PathBuf>) {
    let CalibrationArgs {
        no_calibration,
        recalibrate,
        calibration_labels,
    } = args;
    let flags = CalibrationFlags {
        dataset: !no_calibration,
        recalibrate: *recalibrate,
        offline,
        quiet,
    };
    (flags, calibration_labels.clone())
}

/// `scorekit story`'s flags, each handled here once (`StoryArgs` is destructured whole, so a
/// new flag does not compile until it is): the dataset resolved, the models that run, the
/// calibration, and the flags that need a judge refused without one.
pub struct StoryFlags {
    /// The dataset file, and the pinned dataset it came from when named.
    pub dataset: scorekit_data::InputArg,
    /// The generations file.
    pub generations: PathBuf,
    /// `--require-complete`.
    pub require_complete: bool,
    /// The judge, unless `--skip-judge`.
    pub judge: Option<String>,
    /// `--follow-label`.
    pub follow_label: Option<String>,
    /// The embedder, unless `--skip-embedder`.
    pub embedder: Option<String>,
    /// What to calibrate on.
    pub calibration: CalibrationFlags,
    /// `--calibration-labels`.
    pub labels: Vec<PathBuf>,
    /// `--label-sample N`.
    pub label_sample: Option<usize>,
    /// A letter judge's demonstrations.
    pub shots: ShotArgs,
    /// `--option-orders`.
    pub option_orders: OptionOrders,
    /// The model runtime's flags.
    pub model: ModelArgs,
    /// The output flags.
    pub out: RunOptions,
}

/// Resolve `scorekit story`'s flags (see [`StoryFlags`]).
pub fn story(args: StoryArgs) -> Result<StoryFlags> {
    let StoryArgs {
        dataset,
        generations,
        require_complete,
        judge,
        follow_label,
        skip_judge,
        embedder,
        skip_embedder,
        calibration: calibration_args,
        label_sample,
        shots,
        option_orders,
        model,
        output,
    } = args;
    let (calibration, labels) = calibration(&calibration_args, model.offline, output.quiet);
    if skip_judge {
        for (set, flag) in [
            (!labels.is_empty(), "--calibration-labels"),
            (label_sample.is_some(), "--label-sample"),
            (calibration.recalibrate, "--recalibrate"),
        ] {
            if set {
                return Err(scorekit_core::error::Error::usage(format!(
                    "{flag}: no judge runs (--skip-judge), so there is no verdict to calibrate"
                )));
            }
        }
    }
    let out = run_options(&output)?;
    Ok(StoryFlags {
        dataset: self::dataset(&dataset, model.offline, out.quiet)?,
        generations,
        require_complete,
        judge: (!skip_judge).then_some(judge),
        follow_label,
        embedder: (!skip_embedder).then_some(embedder),
        calibration,
        labels,
        label_sample,
        shots,
        option_orders,
        model,
        out,
    })
}

/// `scorekit judge eval`'s flags, each handled here once (`JudgeEvalArgs` destructured whole).
pub struct JudgeEvalFlags {
    /// The dataset (a judge-eval JSONL file).
    pub dataset: PathBuf,
    /// The judge as named.
    pub judge: String,
    /// `--follow-label`.
    pub follow_label: Option<String>,
    /// What to calibrate on.
    pub calibration: CalibrationFlags,
    /// `--calibration-labels`.
    pub labels: Vec<PathBuf>,
    /// A letter judge's demonstrations.
    pub shots: ShotArgs,
    /// `--option-orders`.
    pub option_orders: OptionOrders,
    /// The model runtime's flags.
    pub model: ModelArgs,
    /// The output flags.
    pub out: RunOptions,
}

/// Resolve `scorekit judge eval`'s flags (see [`JudgeEvalFlags`]).
pub fn judge_eval(args: JudgeEvalArgs) -> Result<JudgeEvalFlags> {
    let JudgeEvalArgs {
        dataset,
        judge,
        follow_label,
        calibration: calibration_args,
        shots,
        option_orders,
        model,
        output,
    } = args;
    let (calibration, labels) = calibration(&calibration_args, model.offline, output.quiet);
    Ok(JudgeEvalFlags {
        dataset,
        judge,
        follow_label,
        calibration,
        labels,
        shots,
        option_orders,
        model,
        out: run_options(&output)?,
    })
}
