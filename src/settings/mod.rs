//! Flags turned into settings, once: the command line's `*Args` (clap's shapes) become the typed
//! settings the suites and the report read. Each `*Args` is destructured whole, so a new flag
//! does not compile until it is handled here.

pub mod bench;
pub mod embed;
pub mod letter;
pub mod muse;
pub mod train;

use crate::cli::{
    CalibrationArgs, GraspArgs, JudgeEvalArgs, LabelArgs, MintArgs, ModelArgs, OptionOrders,
    OutputArgs, ShotArgs, StoryArgs, ViewArgs,
};
use scorekit_core::error::Result;
use scorekit_report::RunOptions;
use scorekit_suites::grasp::input as grasp_input;
use scorekit_suites::mint::checkers::Tolerance;
use scorekit_suites::mint::pipeline::{Input as MintInput, PinnedPart};
use scorekit_suites::story::calibration::step::{CalibrationFlags, EndingsFile};
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
pub fn mint(args: &MintArgs) -> Result<MintInput> {
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
    Ok(MintInput {
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
pub fn grasp(args: GraspArgs) -> Result<(grasp_input::Input, ModelArgs)> {
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
    let settings = grasp_input::Input {
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

/// The dataset part the negatives' fillers of the judge's dataset calibration come from.
pub const ENDINGS: &str = "possible-stories:endings";

/// The calibration flags of `story` and `judge eval` (`offline` and `quiet` for the endings
/// file): the endings file resolved (pulled through `scorekit data`) unless `--no-calibration`
/// or no judge runs (`judge_runs`), and the label files.
pub fn calibration(
    args: CalibrationArgs,
    judge_runs: bool,
    offline: bool,
    quiet: bool,
) -> Result<CalibrationFlags> {
    let CalibrationArgs {
        no_calibration,
        recalibrate,
        calibration_labels,
    } = args;
    let endings = if no_calibration || !judge_runs {
        None
    } else {
        let arg = dataset(Path::new(ENDINGS), offline, quiet).map_err(|e| {
            scorekit_core::error::Error::usage(format!(
                "the judge's dataset calibration needs {ENDINGS} (its negatives' fillers): {e}; \
                 or pass --no-calibration to report raw IFSM only"
            ))
        })?;
        Some(EndingsFile {
            path: arg.path,
            dataset: arg.dataset.map(|d| d.record()),
        })
    };
    Ok(CalibrationFlags {
        endings,
        recalibrate,
        labels: calibration_labels,
    })
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
    /// What to calibrate on (the label files too).
    pub calibration: CalibrationFlags,
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
    if skip_judge {
        for (set, flag) in [
            (
                !calibration_args.calibration_labels.is_empty(),
                "--calibration-labels",
            ),
            (label_sample.is_some(), "--label-sample"),
            (calibration_args.recalibrate, "--recalibrate"),
        ] {
            if set {
                return Err(scorekit_core::error::Error::usage(format!(
                    "{flag}: no judge runs (--skip-judge), so there is no verdict to calibrate"
                )));
            }
        }
    }
    let out = run_options(&output)?;
    // The dataset first: a bad name there is the user's first error, not the endings'.
    let dataset = self::dataset(&dataset, model.offline, out.quiet)?;
    let calibration = calibration(calibration_args, !skip_judge, model.offline, out.quiet)?;
    Ok(StoryFlags {
        dataset,
        generations,
        require_complete,
        judge: (!skip_judge).then_some(judge),
        follow_label,
        embedder: (!skip_embedder).then_some(embedder),
        calibration,
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
    /// What to calibrate on (the label files too).
    pub calibration: CalibrationFlags,
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
    let out = run_options(&output)?;
    Ok(JudgeEvalFlags {
        calibration: calibration(calibration_args, true, model.offline, out.quiet)?,
        dataset,
        judge,
        follow_label,
        shots,
        option_orders,
        model,
        out,
    })
}

/// `scorekit label`'s flags, resolved (`LabelArgs` destructured whole).
pub struct LabelFlags {
    /// The label file.
    pub file: PathBuf,
    /// The dataset the lines without a story take it from, resolved.
    pub dataset: Option<scorekit_data::InputArg>,
    /// The page to write: `--out`, else the label file with `.html`.
    pub out: PathBuf,
}

/// Resolve `scorekit label`'s flags (see [`LabelFlags`]): `--out` defaults to the label file
/// with `.html`, and may not be the label file itself.
pub fn label(args: LabelArgs) -> Result<LabelFlags> {
    let LabelArgs {
        file,
        dataset,
        offline,
        out,
        quiet,
    } = args;
    let out = out.unwrap_or_else(|| file.with_extension("html"));
    if out == file {
        return Err(scorekit_core::error::Error::usage(format!(
            "--out {}: that is the label file; name another file for the page",
            out.display()
        )));
    }
    Ok(LabelFlags {
        dataset: dataset
            .map(|d| self::dataset(&d, offline, quiet))
            .transpose()?,
        file,
        out,
    })
}
