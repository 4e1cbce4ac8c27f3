//! `scorekit judge train` and `scorekit judge eval`: flags to settings, one library call, the
//! outputs. Training is `runtime::judge_train` (the run's policy in `runtime::train::run`);
//! evaluation runs the judge here and scores with `suites::judge_eval`. The questions come from
//! `suites::story::Question::pair` (through `suites::judge_data`), as the story judge's do.

use crate::cli::{JudgeCommand, JudgeEvalArgs, JudgeTrainArgs, OptionOrders};
use crate::commands::calibration;
use crate::commands::letter::{letter_options, letter_protocol};
use crate::commands::model_runtime::ModelRuntime;
use crate::lent::{self, Lent, Progress};
use scorekit_core::error::Result;
use scorekit_report::judge::{self as render, Bootstrap, EvalCalibration, EvalLetter};
use scorekit_report::{ModelRef, OutputDir};
use scorekit_runtime::judge::{AnyJudge, JUDGE_FILES};
use scorekit_runtime::judge_train::{self, QuestionPairs, TrainData, TrainSettings, Trained};
use scorekit_runtime::letter_judge::is_letter_judge;
use scorekit_runtime::train::model::Dropouts;
use scorekit_runtime::train::run::Policy;
use scorekit_runtime::train::trainer::Recipe;
use scorekit_runtime::ResolveOptions;
use scorekit_suites::ifsm_correction::judge_resolution;
use scorekit_suites::judge_eval::{self, EvalItem, EvalRecord};
use scorekit_suites::models::LentModels;
use scorekit_suites::settings::CalibrationSettings;
use scorekit_suites::story::calibration::summary::CalibrationSummary;
use scorekit_suites::story::outputs::CALIBRATION_FILE;
use scorekit_suites::story::Question;

pub use crate::commands::judge_questions::read_questions;

/// Run a `scorekit judge` subcommand.
pub fn run(c: JudgeCommand) -> Result<()> {
    match c {
        JudgeCommand::Train(a) => train(a),
        JudgeCommand::Eval(a) => eval(a),
    }
}

/// The training settings of the flags (destructured whole, so that a new flag is handled here).
fn train_settings(
    a: JudgeTrainArgs,
) -> (
    TrainSettings,
    Vec<std::path::PathBuf>,
    Option<std::path::PathBuf>,
) {
    let JudgeTrainArgs {
        base,
        train,
        dev,
        out,
        epochs,
        max_steps,
        lr,
        batch_questions,
        grad_accum,
        weight_decay,
        warmup_ratio,
        max_grad_norm,
        eval_every,
        patience,
        seed,
        no_shuffle,
        dropout,
        max_length,
        device,
        precision,
        resume,
        force,
        offline,
        quiet,
        stop_after,
    } = a;
    let recipe = Recipe {
        lr,
        batch_questions,
        grad_accum,
        weight_decay,
        warmup_ratio,
        max_grad_norm,
        epochs,
        max_steps,
        shuffle: !no_shuffle,
        seed,
        dropouts: dropout.map(Dropouts::all),
        precision,
    };
    let settings = TrainSettings {
        base,
        out,
        resume,
        force,
        device,
        resolve: ResolveOptions { offline, quiet },
        max_length,
        recipe,
        policy: Policy {
            eval_every,
            patience,
            stop_after,
            quiet,
        },
    };
    (settings, train, dev)
}

/// The judge's pairs of each question.
fn question_pairs(questions: &[Question]) -> Vec<QuestionPairs> {
    questions
        .iter()
        .map(|q| QuestionPairs {
            pairs: q.gold_pairs(),
            gold: q.gold,
        })
        .collect()
}

/// `scorekit judge train`.
fn train(a: JudgeTrainArgs) -> Result<()> {
    let (settings, train_files, dev_file) = train_settings(a);
    settings.recipe.check()?;
    // Every input is read and checked before anything is loaded or trained.
    let (questions, files) = read_questions(&train_files, None)?;
    let choices = questions[0].options.len();
    let dev = match &dev_file {
        Some(d) => {
            let (qs, mut f) = read_questions(std::slice::from_ref(d), Some(choices))?;
            Some((question_pairs(&qs), f.remove(0)))
        }
        None => None,
    };
    let data = TrainData {
        train: question_pairs(&questions),
        train_files: files,
        dev,
        choices,
    };
    match judge_train::train(&settings, &data)? {
        Trained::Interrupted { step, total } => {
            eprintln!("stopped after step {step} of {total}; continue with --resume");
        }
        Trained::Finished {
            steps,
            kept_step,
            kept_accuracy,
        } => eprintln!(
            "trained {steps} steps; kept step {kept_step}{}; folder {}",
            kept_accuracy.map_or(String::new(), |acc| format!(
                " (dev accuracy {:.1}%)",
                100.0 * acc
            )),
            settings.out.display()
        ),
    }
    Ok(())
}

/// The judge's verdict on every question: a scoring judge's scores, or a letter judge's
/// answers (every rotation of the options under `cyclic`).
fn judge_items(
    judge: &AnyJudge,
    questions: &[Question],
    shots: &str,
    cyclic: bool,
    rt: &ModelRuntime,
) -> Result<Vec<EvalItem>> {
    let mut lent = Lent::new(
        Some(judge),
        None,
        rt.batch_tokens,
        Progress::PerCall {
            label: "judge",
            quiet: rt.quiet,
        },
    );
    let items = if lent.models().scoring_judge {
        let scores = lent.score(&judge_eval::pairs(questions))?;
        judge_eval::scored_items(questions, &scores)?
    } else {
        let rotations = judge_eval::rotations(questions, cyclic);
        let prompts = judge_eval::letter_prompts(questions, shots, rotations);
        let answers = lent.answer(&prompts)?;
        judge_eval::answered_items(questions, &answers, rotations, cyclic)?
    };
    Ok(items)
}

/// `judge eval`'s calibration record in metrics.json.
type Calibration = EvalCalibration<CalibrationSettings, CalibrationSummary>;

/// `judge eval`'s calibration and its items (calibration.jsonl), unless `--no-calibration`
/// without labels: the same frames, judge identity and cache as a story run's, so either reuses
/// the other's finished calibration.
fn calibrate_eval(
    a: &crate::settings::JudgeEvalFlags,
    questions: &[Question],
    judge: &AnyJudge,
    model_ref: &ModelRef,
    rt: &ModelRuntime,
    shots: &str,
    dataset_sha256: &str,
) -> Result<Option<(Calibration, Vec<u8>)>> {
    let (flags, label_files) = (&a.calibration, &a.labels);
    if !flags.dataset && label_files.is_empty() {
        return Ok(None);
    }
    let cyclic = a.option_orders == OptionOrders::Cyclic;
    let labels = (!label_files.is_empty())
        .then(|| calibration::read_labels(label_files, questions, None))
        .transpose()?;
    let identity = lent::judge_identity(judge, model_ref, rt, shots, cyclic, dataset_sha256);
    let mut doc = scorekit_report::MetricsDoc::new(judge_eval::SUITE);
    let mut step = Lent::new(
        Some(judge),
        None,
        rt.batch_tokens,
        Progress::PerCall {
            label: "calibrate",
            quiet: a.out.quiet,
        },
    );
    let outcome = calibration::run(
        &mut doc,
        questions,
        (0..questions.len()).collect(),
        labels.as_ref().map(|set| (label_files.as_slice(), set)),
        flags,
        lent::protocol(judge, shots, cyclic),
        identity,
        &mut step,
    )?;
    let s = outcome.summary;
    let record = EvalCalibration {
        dataset: s.dataset.as_ref().and_then(|d| judge_resolution(&d.counts)),
        human: s.human.as_ref().and_then(|h| judge_resolution(&h.counts)),
        settings: outcome.settings,
        inputs: doc.inputs,
        datasets: doc.datasets,
        summary: s,
    };
    Ok(Some((record, scorekit_report::jsonl(&outcome.items)?)))
}

/// `scorekit judge eval`.
fn eval(a: JudgeEvalArgs) -> Result<()> {
    let a = crate::settings::judge_eval(a)?;
    let o = &a.out;
    let (questions, mut files) = read_questions(std::slice::from_ref(&a.dataset), None)?;
    let dir = OutputDir::prepare(&o.out, o.force)?;
    let rt = ModelRuntime::new(&a.model, o.quiet)?;
    let model = rt.resolve(&a.judge, JUDGE_FILES)?;
    let letter_judge = is_letter_judge(&model.dir);
    let (cyclic, shots) = letter_options(a.option_orders, &a.shots, Some(letter_judge))?;
    let judge = lent::load_judge(&model.dir, &rt, rt.max_length, a.follow_label.as_deref())?;
    let model_ref = model.model_ref()?;
    eprintln!("judge: {} @ {}", model_ref.id, model_ref.revision);
    let items = judge_items(&judge, &questions, &shots, cyclic, &rt)?;
    let dataset = files.remove(0);
    let calibrated = calibrate_eval(
        &a,
        &questions,
        &judge,
        &model_ref,
        &rt,
        &shots,
        &dataset.sha256,
    )?;
    let (calibration, calibration_items) = calibrated.unzip();
    let letter = letter_judge.then(|| {
        let p = letter_protocol(&a.shots);
        EvalLetter {
            judge_prompt: p.prompt,
            judge_decoding: p.decoding,
            judge_pick: p.pick,
        }
    });
    let record = EvalRecord {
        judge_kind: judge.kind().into(),
        engine: judge.engine().into(),
        judge: model_ref,
        options: questions[0].options.len(),
        dataset,
        bootstrap: Bootstrap {
            resamples: o.bootstrap,
            seed: o.seed,
        },
        tf32: rt.tf32,
        letter,
    };
    let metrics = judge_eval::metrics(record, &items, calibration);
    if let Some(jsonl) = calibration_items {
        dir.write(CALIBRATION_FILE, &jsonl)?;
    }
    let metrics_text =
        serde_json::to_string_pretty(&metrics).map_err(|e| anyhow::anyhow!("metrics.json: {e}"))?;
    dir.write("items.jsonl", &scorekit_report::jsonl(&items)?)?;
    dir.write("report.md", render::eval_report(&metrics).as_bytes())?;
    dir.write("metrics.json", metrics_text.as_bytes())?;
    if o.json {
        println!("{metrics_text}");
    } else {
        println!("{}", render::eval_table(&metrics));
    }
    Ok(())
}
