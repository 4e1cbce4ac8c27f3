//! `scorekit judge train` as one library call: the base model resolved and loaded, the questions
//! tokenised, the run of `scorekit_train::run` (its folder rules, evaluations, checkpoints and
//! kept weights), and the trained folder: a Hugging Face model folder (config.json with the
//! multiple-choice class, the weights, the tokenizer files) with training.json, report.md and
//! curves.svg, every file written atomically.

use crate::hub::{resolve, ResolveOptions, TOKENIZER_FILES};
use crate::judge::{PairTokenizer, JUDGE_FILES};
use crate::{device_name, select_device};
use anyhow::{anyhow, Context};
use candle_core::DType;
use scorekit_core::error::Result;
use scorekit_core::fs::{atomic_write, write_atomically};
use scorekit_report::judge::QuestionFile;
use scorekit_train::model::{Dropouts, McModel};
use scorekit_train::run::{self, Ending, Policy, RunDir, RECORD_FILE};
use scorekit_train::trainer::{Example, Recipe, Trainer};
use serde::Serialize;
use serde_json::Value;
use std::path::{Path, PathBuf};

mod record;

pub use record::{BaseRecord, Kept, QuestionCounts, TrainingRecord};

/// Everything `judge train` was asked, flags resolved.
#[derive(Debug, Clone)]
pub struct TrainSettings {
    /// The base model: Hub id[@rev], manifest name or folder.
    pub base: String,
    /// The run's folder.
    pub out: PathBuf,
    /// Continue the run in `out` from its checkpoint.
    pub resume: bool,
    /// Start over in a folder that holds a run.
    pub force: bool,
    /// `auto`, `cpu`, `cuda[:N]`, `metal[:N]`.
    pub device: crate::DeviceSpec,
    /// How the base is found.
    pub resolve: ResolveOptions,
    /// Truncate pairs to this many tokens (default: the model's limit).
    pub max_length: Option<usize>,
    /// The recipe as asked: dropouts and precision left `None` default to the base's and the
    /// device's.
    pub recipe: Recipe,
    /// Evaluations, checkpoints, stopping.
    pub policy: Policy,
}

/// One question as the judge reads it: a (passage, question + option) pair per option.
#[derive(Debug, Clone, PartialEq)]
pub struct QuestionPairs {
    /// One pair per option.
    pub pairs: Vec<(String, String)>,
    /// Index of the right option.
    pub gold: usize,
}

/// The questions of a run, read and checked.
#[derive(Debug, Clone)]
pub struct TrainData {
    /// Training questions.
    pub train: Vec<QuestionPairs>,
    /// Their files.
    pub train_files: Vec<QuestionFile>,
    /// Dev questions and their file.
    pub dev: Option<(Vec<QuestionPairs>, QuestionFile)>,
    /// Options per question.
    pub choices: usize,
}

/// How a run ended.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Trained {
    /// Stopped after `step` of `total` steps (`stop_after`); `--resume` continues it.
    Interrupted {
        /// The last step taken.
        step: u64,
        /// Steps of the schedule.
        total: u64,
    },
    /// The folder is complete.
    Finished {
        /// Steps taken.
        steps: u64,
        /// The kept weights' step.
        kept_step: u64,
        /// Their dev accuracy (none without dev questions).
        kept_accuracy: Option<f64>,
    },
}

/// What a resumed run must share with the run it continues (`--resume` refuses otherwise).
#[derive(Serialize)]
struct Identity<'a> {
    recipe: &'a Recipe,
    base_sha256: &'a str,
    train_sha256: Vec<&'a str>,
    dev_sha256: Option<&'a str>,
    max_length: usize,
}

/// Train a judge as `s` says on `data`, into `s.out`.
pub fn train(s: &TrainSettings, data: &TrainData) -> Result<Trained> {
    run::keep_freed_memory();
    let dir = RunDir::open(&s.out, s.resume, s.force)?;
    let device = select_device(&s.device)?;
    let base = resolve(&s.base, JUDGE_FILES, &s.resolve)?;
    let base_ref = base.model_ref()?;
    let model = McModel::load(&base.dir, &device, DType::F32, s.recipe.seed)?;
    if !model.new_head.is_empty() {
        eprintln!(
            "base {} has no multiple-choice head: {} initialised as transformers does (normal(0, {}), zero bias, seed {})",
            base_ref.id,
            model.new_head.join(", "),
            model.cfg.bert.initializer_range,
            s.recipe.seed
        );
    }
    let tok = PairTokenizer::load(&base.dir, model.arch, &model.cfg, s.max_length)?;
    let examples = encode(&tok, &data.train)?;
    let dev = match &data.dev {
        Some((qs, _)) => Some(encode(&tok, qs)?),
        None => None,
    };
    let mut trainer = Trainer::new(&model, s.recipe.clone(), examples.len())
        .map_err(|e| anyhow!("optimiser: {e}"))?;
    let recipe = trainer.recipe.clone();
    let identity = serde_json::to_value(Identity {
        recipe: &recipe,
        base_sha256: &base_ref.sha256,
        train_sha256: data.train_files.iter().map(|f| f.sha256.as_str()).collect(),
        dev_sha256: data.dev.as_ref().map(|(_, f)| f.sha256.as_str()),
        max_length: tok.max_length,
    })
    .map_err(|e| anyhow!("run identity: {e}"))?;
    let mut log = run::start(&dir, &mut trainer, identity, s.resume)?;
    if s.resume {
        eprintln!(
            "resuming at step {} of {}",
            trainer.pos.step, trainer.schedule.total
        );
    }
    let ending = run::run(
        &dir,
        &mut trainer,
        &mut log,
        &examples,
        dev.as_deref(),
        &s.policy,
    )?;
    if ending == Ending::Interrupted {
        return Ok(Trained::Interrupted {
            step: trainer.pos.step,
            total: trainer.schedule.total,
        });
    }
    let kept = log.keep.best;
    let record = TrainingRecord {
        base: BaseRecord {
            id: base_ref.id,
            revision: base_ref.revision,
            sha256: base_ref.sha256,
            new_head: model.new_head.clone(),
        },
        train_files: data.train_files.clone(),
        dev_file: data.dev.as_ref().map(|(_, f)| f.clone()),
        questions: QuestionCounts {
            train: examples.len(),
            dev: dev.as_ref().map(Vec::len),
            choices: data.choices,
        },
        max_length: tok.max_length,
        device: device_name(&device),
        precision: recipe.precision_of(&model),
        encoder_dropout: "applied with the recipe's probabilities (scorekit's seeded masks)",
        total_steps: trainer.schedule.total,
        warmup_steps: trainer.schedule.warmup,
        steps_per_epoch: recipe.steps_per_epoch(examples.len()),
        steps_done: trainer.pos.step,
        recipe,
        early_stopped: log.early_stopped,
        steps: log.steps,
        step_seconds: log.step_seconds,
        evals: log.evals,
        kept: match kept {
            Some((step, acc)) => Kept {
                step,
                dev_accuracy: Some(acc),
                dev_logits: Some(log.best_logits),
            },
            None => Kept {
                step: trainer.pos.step,
                dev_accuracy: None,
                dev_logits: None,
            },
        },
    };
    write_folder(&dir, &base.dir, &model, s.recipe.dropouts, &record)?;
    Ok(Trained::Finished {
        steps: record.steps_done,
        kept_step: record.kept.step,
        kept_accuracy: kept.map(|(_, acc)| acc),
    })
}

/// Tokenise every question's pairs.
fn encode(tok: &PairTokenizer, questions: &[QuestionPairs]) -> Result<Vec<Example>> {
    questions
        .iter()
        .map(|q| {
            Ok(Example {
                choices: tok.encode(&q.pairs)?,
                label: q.gold,
            })
        })
        .collect()
}

/// The `...ForMultipleChoice` class of a model type, for config.json.
fn mc_class(model_type: &str) -> &'static str {
    match model_type {
        "roberta" => "RobertaForMultipleChoice",
        "xlm-roberta" => "XLMRobertaForMultipleChoice",
        "deberta-v2" => "DebertaV2ForMultipleChoice",
        _ => "BertForMultipleChoice",
    }
}

/// The finished run's folder beside its kept weights: config.json (the base's own, with the
/// multiple-choice class and the dropout trained with), the tokenizer files, report.md,
/// curves.svg and training.json last (its presence marks a finished run); then the checkpoints
/// go.
fn write_folder(
    dir: &RunDir,
    base: &Path,
    model: &McModel,
    dropouts: Option<Dropouts>,
    record: &TrainingRecord,
) -> Result<()> {
    let out = dir.path();
    let config_path = base.join("config.json");
    let mut config: Value = serde_json::from_str(
        &std::fs::read_to_string(&config_path)
            .with_context(|| format!("reading {}", config_path.display()))?,
    )
    .map_err(|e| anyhow!("{}: {e}", config_path.display()))?;
    let fields = config
        .as_object_mut()
        .ok_or_else(|| anyhow!("{}: not a JSON object", config_path.display()))?;
    fields.insert(
        "architectures".into(),
        Value::from(vec![mc_class(&model.cfg.model_type)]),
    );
    if let Some(d) = dropouts {
        fields.insert("hidden_dropout_prob".into(), Value::from(d.hidden));
        fields.insert(
            "attention_probs_dropout_prob".into(),
            Value::from(d.attention),
        );
    }
    atomic_write(&out.join("config.json"), pretty(&config)?.as_bytes())?;
    for f in TOKENIZER_FILES {
        let src = base.join(f);
        if src.exists() {
            write_atomically(&out.join(f), |tmp| {
                std::fs::copy(&src, tmp).with_context(|| format!("copying {}", src.display()))?;
                Ok(())
            })?;
        }
    }
    atomic_write(&out.join("report.md"), record.report_md().as_bytes())?;
    atomic_write(&out.join("curves.svg"), record.curves_svg().as_bytes())?;
    // Through a JSON value, so that the f32 dev logits print as f64 numbers, as they always have.
    let training = serde_json::to_value(record).map_err(|e| anyhow!("training.json: {e}"))?;
    atomic_write(&out.join(RECORD_FILE), pretty(&training)?.as_bytes())?;
    dir.remove_checkpoints()
}

/// Pretty JSON text.
fn pretty(v: &Value) -> Result<String> {
    Ok(serde_json::to_string_pretty(v).map_err(|e| anyhow!("{e}"))?)
}
