//! `scorekit judge train` and `scorekit judge eval`: read questions, train or score a judge,
//! write the folder and reports. The loop is `runtime::train`; the pairs come from
//! `suites::story::Question::pair` (through `suites::judge_data`), as the story judge's do.

use crate::cli::{JudgeCommand, JudgeEvalArgs, JudgeTrainArgs, OptionOrders};
use crate::commands::calibration;
use crate::commands::model_runtime::ModelRuntime;
use anyhow::{anyhow, Context};
use candle_core::{DType, Tensor};
use scorekit_core::error::{Error, Result};
use scorekit_report::judge as render;
use scorekit_report::{bootstrap_mean, OutputDir};
use scorekit_runtime::judge::JUDGE_FILES;
use scorekit_runtime::judge::{AnyJudge, PairTokenizer};
use scorekit_runtime::train::checkpoint;
use scorekit_runtime::train::keep_best::KeepBest;
use scorekit_runtime::train::model::{Dropouts, McModel};
use scorekit_runtime::train::trainer::{
    argmax, predict, Control, Event, Example, Recipe, StepLog, Trainer,
};
use scorekit_runtime::train::Precision;
use scorekit_runtime::{self as runtime, ResolveOptions};
use scorekit_suites::letter;
use scorekit_suites::story::Question;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use std::collections::{BTreeMap, HashMap};
use std::path::Path;

pub use crate::commands::judge_questions::{read_questions, FileInfo};

/// Run a `scorekit judge` subcommand.
pub fn run(c: JudgeCommand) -> Result<()> {
    match c {
        JudgeCommand::Train(a) => train(a),
        JudgeCommand::Eval(a) => eval(a),
    }
}

/// One dev evaluation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EvalLog {
    /// Optimiser step after which it ran.
    pub step: u64,
    /// Epochs completed (fractional within an epoch).
    pub epoch: f64,
    /// Dev accuracy.
    pub accuracy: f64,
}

/// What a run has recorded so far (saved in checkpoints).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
struct RunLog {
    steps: Vec<StepLog>,
    evals: Vec<EvalLog>,
    /// The kept weights' step and accuracy, and evaluations since (checkpoint keys `best`,
    /// `since_best`).
    #[serde(flatten)]
    keep: KeepBest,
    /// Dev logits of the kept weights.
    best_logits: Vec<Vec<f32>>,
    early_stopped: bool,
    /// Wall-clock seconds from the previous step's end (or the loop's start) to each step's
    /// end, evaluations and checkpoints included: for benchmarks, never compared.
    #[serde(default)]
    step_seconds: Vec<f64>,
    /// The recipe and training data of the run, checked on `--resume`.
    #[serde(default)]
    identity: Value,
}

/// The one recipe check the flags' own parsers cannot make (each value is checked as the
/// command line is parsed).
fn check_recipe(a: &JudgeTrainArgs) -> Result<()> {
    if a.max_steps.is_none() && a.epochs == 0 {
        return Err(Error::usage(
            "nothing to train: --epochs is 0 and no --max-steps",
        ));
    }
    Ok(())
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

/// Tokenizer and vocabulary files copied from the base into the trained folder.
const TOKENIZER_FILES: &[&str] = &[
    "tokenizer.json",
    "tokenizer_config.json",
    "special_tokens_map.json",
    "vocab.txt",
    "vocab.json",
    "merges.txt",
    "spm.model",
    "sentencepiece.bpe.model",
];

fn save_weights(model: &McModel, file: &Path) -> Result<()> {
    let map: HashMap<String, Tensor> = model
        .named_vars()
        .into_iter()
        .map(|(n, v)| (n, v.as_tensor().clone()))
        .collect();
    let tmp = file.with_extension("partial");
    candle_core::safetensors::save(&map, &tmp)
        .map_err(|e| anyhow!("writing {}: {e}", tmp.display()))?;
    std::fs::rename(&tmp, file).with_context(|| format!("writing {}", file.display()))?;
    Ok(())
}

fn accuracy(logits: &[Vec<f32>], data: &[Example]) -> f64 {
    let right = logits
        .iter()
        .zip(data)
        .filter(|(l, e)| argmax(l) == e.label)
        .count();
    right as f64 / data.len().max(1) as f64
}

/// Keep freed heap memory in the process for the next step instead of returning it to the
/// kernel. A training step allocates and frees tens of buffers of megabytes (activations,
/// packed operands, gradients); glibc gives blocks over its mmap threshold (128 KiB, raised
/// on the fly to at most 32 MiB) back with `munmap` and trims the heap top, so each step
/// faulted the same memory in again page by page, with TLB shootdowns between the two cores
/// (page faults were 23% of a bf16-mixed step's `perf` samples). Measured: 0.93–0.97 s a
/// bf16-mixed MiniLM step against 0.99–1.05 s without (BENCHMARKS.md §6). The cost is that
/// the resident size stays at its high-water mark, which a training process reaches in its
/// first step anyway.
fn keep_freed_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: `mallopt` only sets two of glibc's allocator parameters; it is called here
    // before training starts, and glibc's allocator serialises its own state.
    unsafe {
        // 32 MiB is glibc's largest mmap threshold on 64-bit targets.
        libc::mallopt(libc::M_MMAP_THRESHOLD, 32 << 20);
        libc::mallopt(libc::M_TRIM_THRESHOLD, i32::MAX);
    }
}

/// `scorekit judge train`.
fn train(a: JudgeTrainArgs) -> Result<()> {
    check_recipe(&a)?;
    keep_freed_memory();
    // Every input is read and checked before anything is loaded or trained.
    let (questions, train_files) = read_questions(&a.train, None)?;
    let choices = questions[0].options.len();
    let dev = match &a.dev {
        Some(d) => Some(read_questions(std::slice::from_ref(d), Some(choices))?),
        None => None,
    };
    let out = &a.out;
    let ckpt = out.join("checkpoint");
    if a.resume {
        checkpoint::recover(&ckpt)?;
    }
    if a.resume && !ckpt.join("state.json").exists() {
        return Err(Error::usage(format!(
            "--resume: {} holds no checkpoint",
            out.display()
        )));
    }
    if !a.resume && !a.force && (out.join("training.json").exists() || ckpt.exists()) {
        return Err(Error::usage(format!(
            "--out {}: already holds a training run; --resume to continue it, --force to start over",
            out.display()
        )));
    }
    std::fs::create_dir_all(out).with_context(|| format!("cannot create {}", out.display()))?;
    let device = runtime::select_device(&a.device)?;
    let opts = ResolveOptions {
        offline: a.offline,
        quiet: a.quiet,
    };
    let base = runtime::resolve(&a.base, JUDGE_FILES, &opts)?;
    let base_ref = base.model_ref()?;
    let model = McModel::load(&base.dir, &device, DType::F32, a.seed)?;
    if !model.new_head.is_empty() {
        eprintln!(
            "base {} has no multiple-choice head: {} initialised as transformers does (normal(0, {}), zero bias, seed {})",
            base_ref.id,
            model.new_head.join(", "),
            model.cfg.bert.initializer_range,
            a.seed
        );
    }
    let tok = PairTokenizer::load(&base.dir, model.arch, &model.cfg, a.max_length)?;
    let encode = |qs: &[Question]| -> Result<Vec<Example>> {
        qs.iter()
            .map(|q| {
                Ok(Example {
                    choices: tok.encode(&q.gold_pairs())?,
                    label: q.gold,
                })
            })
            .collect()
    };
    let data = encode(&questions)?;
    let dev_data = match &dev {
        Some((qs, _)) => Some(encode(qs)?),
        None => None,
    };
    let recipe = Recipe {
        lr: a.lr,
        batch_questions: a.batch_questions,
        grad_accum: a.grad_accum,
        weight_decay: a.weight_decay,
        warmup_ratio: a.warmup_ratio,
        max_grad_norm: a.max_grad_norm,
        epochs: a.epochs,
        max_steps: a.max_steps,
        shuffle: !a.no_shuffle,
        seed: a.seed,
        dropouts: a.dropout.map_or(model.config_dropouts, Dropouts::all),
        precision: match a.precision {
            Some(crate::cli::Precision::F32) => Precision::F32,
            Some(crate::cli::Precision::Bf16Mixed) => Precision::Bf16Mixed,
            None => runtime::train::trainer::default_precision(&device),
        },
    };
    let mut trainer =
        Trainer::new(&model, recipe.clone(), data.len()).map_err(|e| anyhow!("optimiser: {e}"))?;
    let identity = json!({
        "recipe": recipe,
        "base_sha256": base_ref.sha256,
        "train_sha256": train_files.iter().map(|f| f.sha256.clone()).collect::<Vec<_>>(),
        "dev_sha256": dev.as_ref().map(|(_, f)| f[0].sha256.clone()),
        "max_length": tok.max_length,
    });
    let mut log = RunLog {
        identity: identity.clone(),
        ..RunLog::default()
    };
    if a.resume {
        let extra = checkpoint::load(&ckpt, &mut trainer)?;
        log = serde_json::from_value(extra).map_err(|e| anyhow!("checkpoint log: {e}"))?;
        if log.identity != identity {
            return Err(Error::usage(format!(
                "--resume: the run in {} was started with another recipe, base or data \
                 (checkpoint: {}; now: {}); use the same flags, or --force to start over",
                out.display(),
                log.identity,
                identity
            )));
        }
        eprintln!(
            "resuming at step {} of {}",
            trainer.pos.step, trainer.schedule.total
        );
    }
    let total = trainer.schedule.total;
    let per_epoch = recipe.steps_per_epoch(data.len());
    let bar = scorekit_core::progress::bar(total, "training", a.quiet);
    bar.set_position(trainer.pos.step);
    let best_file = out.join("model.safetensors");
    let mut stepped = 0u64;
    let mut clock = std::time::Instant::now();
    let mut interrupted = false;
    let evaluate = |t: &mut Trainer, log: &mut RunLog| -> Result<Control> {
        let Some(dev) = &dev_data else {
            return Ok(Control::Continue);
        };
        if log.evals.last().is_some_and(|e| e.step == t.pos.step) {
            return Ok(Control::Continue);
        }
        let logits =
            predict(t.model, dev, a.batch_questions).map_err(|e| anyhow!("dev evaluation: {e}"))?;
        let acc = accuracy(&logits, dev);
        log.evals.push(EvalLog {
            step: t.pos.step,
            epoch: t.pos.step as f64 / per_epoch as f64,
            accuracy: acc,
        });
        let decision = log.keep.observe(t.pos.step, acc, a.patience);
        if decision.keep {
            log.best_logits = logits;
            save_weights(t.model, &best_file)?;
        }
        if decision.stop {
            log.early_stopped = true;
            return Ok(Control::Stop);
        }
        Ok(Control::Continue)
    };
    trainer.run(&data, |t, event| {
        let mut control = Control::Continue;
        let mut save = false;
        match event {
            Event::Step(l) => {
                log.steps.push(l.clone());
                log.step_seconds.push(clock.elapsed().as_secs_f64());
                clock = std::time::Instant::now();
                bar.set_position(l.step);
                bar.set_message(format!("loss {:.4}", l.loss));
                stepped += 1;
                if l.step % a.eval_every == 0 {
                    control = evaluate(t, &mut log)?;
                    save = true;
                }
                if a.stop_after.is_some_and(|n| stepped >= n) {
                    interrupted = true;
                    control = Control::Stop;
                    save = true;
                }
            }
            Event::EpochEnd(_) => {
                control = evaluate(t, &mut log)?;
                save = true;
            }
        }
        if save {
            let extra = serde_json::to_value(&log).map_err(|e| anyhow!("{e}"))?;
            checkpoint::save(&ckpt, t, extra)?;
        }
        Ok(control)
    })?;
    bar.finish_and_clear();
    if interrupted {
        eprintln!(
            "stopped after step {} of {}; continue with --resume",
            trainer.pos.step, total
        );
        return Ok(());
    }
    if dev_data.is_some() {
        if !log.early_stopped {
            evaluate(&mut trainer, &mut log)?;
        }
    } else {
        save_weights(&model, &best_file)?;
    }
    // config.json: the base's own file with the multiple-choice class.
    let config_path = base.dir.join("config.json");
    let mut config: Value = serde_json::from_str(
        &std::fs::read_to_string(&config_path)
            .with_context(|| format!("reading {}", config_path.display()))?,
    )
    .map_err(|e| anyhow!("{}: {e}", config_path.display()))?;
    config["architectures"] = json!([mc_class(&model.cfg.model_type)]);
    if let Some(p) = a.dropout {
        for k in ["hidden_dropout_prob", "attention_probs_dropout_prob"] {
            config[k] = json!(p);
        }
    }
    std::fs::write(
        out.join("config.json"),
        serde_json::to_string_pretty(&config).unwrap_or_default(),
    )
    .with_context(|| format!("writing {}", out.display()))?;
    for f in TOKENIZER_FILES {
        let src = base.dir.join(f);
        if src.exists() {
            std::fs::copy(&src, out.join(f))
                .with_context(|| format!("copying {}", src.display()))?;
        }
    }
    let kept = match log.keep.best {
        Some((step, acc)) => {
            json!({"step": step, "dev_accuracy": acc, "dev_logits": log.best_logits})
        }
        None => json!({"step": trainer.pos.step, "dev_accuracy": null}),
    };
    let training = json!({
        "base": {"id": base_ref.id, "revision": base_ref.revision, "sha256": base_ref.sha256,
                 "new_head": model.new_head},
        "train_files": train_files,
        "dev_file": dev.as_ref().map(|(_, f)| f[0].clone()),
        "questions": {"train": data.len(), "dev": dev_data.as_ref().map(Vec::len), "choices": choices},
        "recipe": recipe,
        "max_length": tok.max_length,
        "device": runtime::device_name(&device),
        "precision": recipe.precision,
        "encoder_dropout": "applied with the recipe's probabilities (scorekit's seeded masks)",
        "total_steps": total,
        "warmup_steps": trainer.schedule.warmup,
        "steps_per_epoch": per_epoch,
        "steps_done": trainer.pos.step,
        "early_stopped": log.early_stopped,
        "steps": log.steps,
        "step_seconds": log.step_seconds,
        "evals": log.evals,
        "kept": kept,
    });
    std::fs::write(
        out.join("training.json"),
        serde_json::to_string_pretty(&training).unwrap_or_default(),
    )
    .with_context(|| format!("writing {}", out.display()))?;
    std::fs::write(out.join("report.md"), render::train_report(&training))
        .with_context(|| format!("writing {}", out.display()))?;
    std::fs::write(out.join("curves.svg"), render::curves_svg(&training))
        .with_context(|| format!("writing {}", out.display()))?;
    for dir in [
        ckpt.clone(),
        ckpt.with_extension("old"),
        ckpt.with_extension("partial"),
    ] {
        if dir.exists() {
            std::fs::remove_dir_all(&dir).with_context(|| format!("removing {}", dir.display()))?;
        }
    }
    eprintln!(
        "trained {} steps; kept step {}{}; folder {}",
        trainer.pos.step,
        training["kept"]["step"],
        log.keep.best.map_or(String::new(), |(_, acc)| format!(
            " (dev accuracy {:.1}%)",
            100.0 * acc
        )),
        out.display()
    );
    Ok(())
}

/// One line of `judge eval`'s items.jsonl.
#[derive(Debug, Clone, Serialize)]
struct EvalItem {
    line: usize,
    question_id: String,
    passage_id: String,
    gold: usize,
    /// The option picked (`null`: a letter judge's answer named none).
    pick: Option<usize>,
    correct: bool,
    /// A scoring judge's score per option.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    scores: Vec<f32>,
    /// A letter judge's answer, decoded with special tokens kept.
    #[serde(skip_serializing_if = "Option::is_none")]
    answer: Option<String>,
    /// Under `--option-orders cyclic`: the verdict of every rotation of the options.
    #[serde(skip_serializing_if = "Option::is_none")]
    cyclic: Option<CyclicVerdict>,
}

/// A letter judge's answers under every rotation of the options (`--option-orders cyclic`).
#[derive(Debug, Clone, Serialize)]
struct CyclicVerdict {
    /// Per rotation r (0 = the dataset's order): the option its answer picks, mapped back.
    picks: Vec<Option<usize>>,
    /// Per rotation: the answer text.
    answers: Vec<String>,
    /// The majority pick (ties: rotation 0's pick when tied, else the lowest option).
    pick: Option<usize>,
    correct: bool,
    /// Share of rotations whose pick is the majority's.
    agreement: f64,
}

/// Per passage (question_id before the first '_'), 1 when `right` holds for every question of it.
fn passage_consistency(items: &[EvalItem], right: impl Fn(&EvalItem) -> bool) -> Vec<f64> {
    let mut passages: BTreeMap<&str, bool> = BTreeMap::new();
    for it in items {
        *passages.entry(&it.passage_id).or_insert(true) &= right(it);
    }
    passages.values().map(|&c| f64::from(u8::from(c))).collect()
}

/// `judge eval`'s calibration (unless `--no-calibration` without labels): the judge's q0, q1
/// and J with its interval per calibration, and calibration.jsonl. The same frames, judge
/// identity and cache as a story run's, so either reuses the other's finished calibration.
fn calibrate_eval(
    a: &JudgeEvalArgs,
    questions: &[Question],
    judge: &AnyJudge,
    model_ref: &scorekit_report::ModelRef,
    rt: &ModelRuntime,
    shots: &str,
    dataset_sha256: &str,
) -> Result<Option<(Value, Vec<u8>)>> {
    let c = &a.calibration;
    if c.no_calibration && c.calibration_labels.is_none() {
        return Ok(None);
    }
    let cyclic = a.option_orders == OptionOrders::Cyclic;
    let labels = c
        .calibration_labels
        .as_deref()
        .map(|p| calibration::read_labels(p, questions))
        .transpose()?;
    let flags = calibration::CalibrationFlags {
        dataset: !c.no_calibration,
        recalibrate: c.recalibrate,
        offline: a.model.offline,
    };
    let identity = calibration::judge_identity(judge, model_ref, rt, shots, cyclic, dataset_sha256);
    let mut doc = scorekit_report::MetricsDoc::new("judge-eval");
    let mut step = calibration::JudgeStep::new(judge, rt.batch_tokens, a.output.quiet);
    let outcome = calibration::run(
        &mut doc,
        questions,
        (0..questions.len()).collect(),
        c.calibration_labels.as_deref().zip(labels.as_deref()),
        &flags,
        calibration::protocol(judge, shots, cyclic),
        identity,
        &mut step,
    )?;
    let s = &outcome.summary;
    let resolution = |counts: Option<&scorekit_suites::ifsm_correction::CalibrationCounts>| {
        counts.and_then(scorekit_suites::ifsm_correction::judge_resolution)
    };
    let value = json!({
        "settings": outcome.settings,
        "inputs": doc.inputs,
        "datasets": doc.datasets,
        "summary": s,
        "dataset": resolution(s.dataset.as_ref().map(|d| &d.counts)),
        "human": resolution(s.human.as_ref().map(|h| &h.counts)),
    });
    Ok(Some((
        value,
        scorekit_suites::story_calibration::summary::jsonl(&outcome.items),
    )))
}

/// `scorekit judge eval`.
fn eval(a: JudgeEvalArgs) -> Result<()> {
    let o = &a.output;
    let (questions, files) = read_questions(std::slice::from_ref(&a.dataset), None)?;
    let dir = OutputDir::prepare(&o.out, o.force)?;
    let rt = ModelRuntime::new(&a.model, o.quiet)?;
    let model = rt.resolve(&a.judge, JUDGE_FILES)?;
    if a.option_orders == OptionOrders::Cyclic
        && !scorekit_runtime::letter_judge::is_letter_judge(&model.dir)
    {
        return Err(Error::usage(
            "--option-orders cyclic: a scoring judge scores each option on its own, so the order \
             of the options cannot change its pick; the flag is for letter judges (T5)",
        ));
    }
    let shots = crate::commands::letter::shots_block(
        &a.shots,
        scorekit_runtime::letter_judge::is_letter_judge(&model.dir),
    )?;
    let judge = AnyJudge::load(
        &model.dir,
        &rt.device,
        rt.dtype,
        rt.max_length,
        a.follow_label.as_deref(),
        &rt.engine,
    )?;
    let model_ref = model.model_ref()?;
    eprintln!("judge: {} @ {}", model_ref.id, model_ref.revision);
    let item = |i: usize, q: &Question, pick: Option<usize>, scores, answer| EvalItem {
        line: i + 1,
        question_id: q.id.clone(),
        passage_id: q.passage_id.clone(),
        gold: q.gold,
        pick,
        correct: pick == Some(q.gold),
        scores,
        answer,
        cyclic: None,
    };
    let mut items = Vec::with_capacity(questions.len());
    match &judge {
        AnyJudge::Scoring(judge) => {
            let pairs: Vec<(String, String)> =
                questions.iter().flat_map(|q| q.gold_pairs()).collect();
            let bar = scorekit_core::progress::bar(pairs.len() as u64, "judge", o.quiet);
            let scores = judge.score(&pairs, rt.batch_tokens, &bar)?;
            bar.finish_and_clear();
            let mut offset = 0;
            for (i, q) in questions.iter().enumerate() {
                let s = scores[offset..offset + q.options.len()].to_vec();
                offset += q.options.len();
                items.push(item(i, q, Some(argmax(&s)), s, None));
            }
        }
        AnyJudge::Letter(judge) => {
            // One prompt per question and rotation: rotation 0 is the dataset's order.
            let rotations = match a.option_orders {
                OptionOrders::Reference => 1,
                OptionOrders::Cyclic => questions[0].options.len(),
            };
            let prompts: Vec<String> = questions
                .iter()
                .flat_map(|q| {
                    let options: Vec<&str> = q.options.iter().map(String::as_str).collect();
                    letter::rotations(&options)
                        .into_iter()
                        .take(rotations)
                        .map(|o| letter::prompt(&shots, &q.document, &q.question, &o))
                        .collect::<Vec<_>>()
                })
                .collect();
            let bar = scorekit_core::progress::bar(prompts.len() as u64, "judge", o.quiet);
            let answers = judge.answer(&prompts, rt.batch_tokens, &bar)?;
            bar.finish_and_clear();
            for (i, (q, group)) in questions.iter().zip(answers.chunks(rotations)).enumerate() {
                let mut it = item(
                    i,
                    q,
                    letter::pick(&group[0].text),
                    Vec::new(),
                    Some(group[0].text.clone()),
                );
                if a.option_orders == OptionOrders::Cyclic {
                    let texts: Vec<&str> = group.iter().map(|a| a.text.as_str()).collect();
                    let (picks, pick, agreement) = letter::cyclic_picks(&texts);
                    it.cyclic = Some(CyclicVerdict {
                        answers: group.iter().map(|a| a.text.clone()).collect(),
                        picks,
                        pick,
                        correct: pick == Some(q.gold),
                        agreement,
                    });
                }
                items.push(it);
            }
        }
    }
    let correct: Vec<f64> = items
        .iter()
        .map(|i| f64::from(u8::from(i.correct)))
        .collect();
    let consistent = passage_consistency(&items, |it| it.correct);
    let acc = bootstrap_mean(&correct, o.bootstrap, o.seed);
    let cons = bootstrap_mean(&consistent, o.bootstrap, o.seed);
    let options = questions[0].options.len();
    let picks: Vec<Option<usize>> = items.iter().map(|i| i.pick).collect();
    let golds: Vec<usize> = items.iter().map(|i| i.gold).collect();
    let mut metrics = json!({
        "suite": "judge-eval",
        "judge": model_ref,
        "judge_kind": judge.kind(),
        "engine": judge.engine(),
        "dataset": files[0],
        "questions": items.len(),
        "passages": consistent.len(),
        "chance": 1.0 / questions[0].options.len() as f64,
        "accuracy": acc,
        "consistency": cons,
        "consistency_definition": "share of passages (question_id before the first '_') with every question answered right",
        "bootstrap": {"resamples": o.bootstrap, "seed": o.seed},
        "picks": scorekit_suites::judge_data::pick_distribution(&picks, &golds, options),
    });
    if rt.tf32 {
        metrics["tf32"] = json!(true);
    }
    if matches!(judge, AnyJudge::Letter(_)) {
        let p = crate::commands::letter::letter_protocol(&a.shots);
        metrics["letter"] = serde_json::json!({
            "judge_prompt": p.prompt,
            "judge_decoding": p.decoding,
            "judge_pick": p.pick,
        });
    }
    if a.option_orders == OptionOrders::Cyclic {
        // Beyond the authors' protocol, reported apart: the headline numbers stay rotation 0's.
        let cyclic: Vec<&CyclicVerdict> = items.iter().filter_map(|i| i.cyclic.as_ref()).collect();
        let right: Vec<f64> = cyclic
            .iter()
            .map(|c| f64::from(u8::from(c.correct)))
            .collect();
        let consistent =
            passage_consistency(&items, |it| it.cyclic.as_ref().is_some_and(|c| c.correct));
        let agreement =
            cyclic.iter().map(|c| c.agreement).sum::<f64>() / cyclic.len().max(1) as f64;
        let cyclic_picks: Vec<Option<usize>> = cyclic.iter().map(|c| c.pick).collect();
        metrics["cyclic"] = json!({
            "definition": "each question asked once per rotation of its options; each answer mapped back to its option; the majority pick (ties: the unrotated pick when tied, else the lowest option)",
            "accuracy": bootstrap_mean(&right, o.bootstrap, o.seed),
            "consistency": bootstrap_mean(&consistent, o.bootstrap, o.seed),
            "agreement": agreement,
            "picks": scorekit_suites::judge_data::pick_distribution(&cyclic_picks, &golds, options),
        });
    }
    let calibrated = calibrate_eval(
        &a,
        &questions,
        &judge,
        &model_ref,
        &rt,
        &shots,
        &files[0].sha256,
    )?;
    if let Some((resolution, items_jsonl)) = calibrated {
        metrics["calibration"] = resolution;
        dir.write(
            scorekit_suites::story_outputs::CALIBRATION_FILE,
            &items_jsonl,
        )?;
    }
    let mut jsonl = Vec::new();
    for it in &items {
        jsonl.extend(serde_json::to_vec(it).map_err(|e| anyhow!("{e}"))?);
        jsonl.push(b'\n');
    }
    let metrics_text = serde_json::to_string_pretty(&metrics).map_err(|e| anyhow!("{e}"))?;
    dir.write("items.jsonl", &jsonl)?;
    dir.write("report.md", render::eval_report(&metrics).as_bytes())?;
    dir.write("metrics.json", metrics_text.as_bytes())?;
    if o.json {
        println!("{metrics_text}");
    } else {
        println!("{}", render::eval_table(&metrics));
    }
    Ok(())
}
