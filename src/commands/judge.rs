//! `scorekit judge train` and `scorekit judge eval`: flags to settings, one library call, the
//! outputs. Training is `runtime::judge_train` (the run's policy in `runtime::train::run`);
//! evaluation runs the judge here and scores with `suites::judge_eval`. The questions come from
//! `suites::story::Question::pair` (through `suites::judge_data`), as the story judge's do.

use crate::cli::{JudgeCommand, JudgeEvalArgs, JudgeTrainArgs};
use crate::lent::{self, Lent, Progress};
use crate::model_runtime::ModelRuntime;
use crate::settings::letter::{setup, system_prompt};
use scorekit_core::error::Result;
use scorekit_runtime::judge::letter_reading;
use scorekit_runtime::judge::JUDGE_FILES;
use scorekit_runtime::judge_train::{self, QuestionPairs, TrainData, Trained};
use scorekit_suites::judge_data::read_questions;
use scorekit_suites::judge_eval;
use scorekit_suites::story::Question;

/// Run a `scorekit judge` subcommand.
pub fn run(c: JudgeCommand) -> Result<()> {
    match c {
        JudgeCommand::Train(a) => train(a),
        JudgeCommand::Eval(a) => eval(a),
    }
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
    let (settings, train_files, dev_file) = crate::settings::train::judge_train(a);
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

/// `scorekit judge eval`: the questions read, the judge loaded and lent, the suite's run.
fn eval(a: JudgeEvalArgs) -> Result<()> {
    let a = crate::settings::judge_eval(a)?;
    let input = judge_eval::pipeline::Input {
        dataset: a.dataset,
        judge: a.judge,
        calibration: a.calibration,
        out: a.out,
    };
    let prepared = judge_eval::pipeline::prepare(&input)?;
    let rt = ModelRuntime::new(&a.model, input.out.quiet)?;
    let model = rt.resolve(&input.judge, JUDGE_FILES)?;
    let letter = Some(letter_reading(&model.dir));
    let setup = setup(&rt, a.option_orders, &a.shots, letter)?;
    let judge = lent::load_judge(
        &model,
        &rt,
        rt.max_length,
        a.follow_label.as_deref(),
        system_prompt(&a.shots)?,
    )?;
    let progress = Progress::new("judge", input.out.quiet);
    let mut lent = Lent::new(Some(&judge), None, rt.batch_tokens, progress);
    prepared.run(&input, &setup, &mut lent)?.print();
    Ok(())
}
