//! `scorekit judge train`'s flags turned into the trainer's settings, once.

use crate::cli::JudgeTrainArgs;
use scorekit_runtime::judge_train::TrainSettings;
use scorekit_runtime::train::model::Dropouts;
use scorekit_runtime::train::run::Policy;
use scorekit_runtime::train::trainer::Recipe;
use scorekit_runtime::ResolveOptions;

/// `scorekit judge train`'s flags as the trainer's settings, with the train files and the dev
/// file (`JudgeTrainArgs` destructured whole, so that a new flag does not compile until handled).
pub fn judge_train(
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
