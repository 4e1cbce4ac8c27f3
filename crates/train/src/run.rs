//! One training run in its output folder, around [`Trainer::run`]: the folder's rules (a
//! `--resume` needs a checkpoint, a new run an unused folder), the start or the resumed state,
//! and the loop's policy: a dev evaluation every `eval_every` steps and at each epoch's end, a
//! checkpoint after each, the weights of the best dev accuracy kept ([`KeepBest`]), early stopping.
//! Every file a run writes is written whole or not at all (`scorekit_core::fs`, checkpoint folder
//! swaps).

use crate::checkpoint;
use crate::keep_best::KeepBest;
use crate::model::McModel;
use crate::trainer::{argmax, predict, Control, Event, Example, StepLog, Trainer};
use anyhow::anyhow;
use candle_core::Tensor;
use scorekit_core::error::{Error, Result};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::Instant;

/// The trained weights in the run's folder (the kept ones once the run has finished).
pub const WEIGHTS_FILE: &str = "model.safetensors";

/// The run's record, written once it has finished: its presence means a finished run.
pub const RECORD_FILE: &str = "training.json";

/// The folder of one training run: its checkpoint and the kept weights.
#[derive(Debug, Clone)]
pub struct RunDir {
    out: PathBuf,
}

impl RunDir {
    /// Open `out` for a run, before anything is loaded: resuming (`resume`) needs a checkpoint
    /// in it (one a kill left between the two renames of a swap is put back first); a new run
    /// refuses a folder that holds a run unless `force`. Created if missing.
    pub fn open(out: &Path, resume: bool, force: bool) -> Result<Self> {
        let dir = RunDir {
            out: out.to_path_buf(),
        };
        let ckpt = dir.checkpoint();
        if resume {
            checkpoint::recover(&ckpt)?;
            if !ckpt.join("state.json").exists() {
                return Err(Error::usage(format!(
                    "--resume: {} holds no checkpoint",
                    out.display()
                )));
            }
        } else if !force && (out.join(RECORD_FILE).exists() || ckpt.exists()) {
            return Err(Error::usage(format!(
                "--out {}: already holds a training run; --resume to continue it, --force to start over",
                out.display()
            )));
        }
        std::fs::create_dir_all(out)
            .map_err(|e| anyhow!("cannot create {}: {e}", out.display()))?;
        Ok(dir)
    }

    /// The folder.
    pub fn path(&self) -> &Path {
        &self.out
    }

    /// The checkpoint folder (`checkpoint/`, with `.old` and `.partial` beside it mid-swap).
    fn checkpoint(&self) -> PathBuf {
        self.out.join("checkpoint")
    }

    /// Remove the checkpoints once the finished run's folder is complete.
    pub fn remove_checkpoints(&self) -> Result<()> {
        let ckpt = self.checkpoint();
        for dir in [
            ckpt.clone(),
            ckpt.with_extension("old"),
            ckpt.with_extension("partial"),
        ] {
            if dir.exists() {
                std::fs::remove_dir_all(&dir)
                    .map_err(|e| anyhow!("removing {}: {e}", dir.display()))?;
            }
        }
        Ok(())
    }
}

/// How the loop evaluates, checkpoints and stops.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Policy {
    /// A dev evaluation and a checkpoint every this many optimiser steps (and at each epoch's end).
    pub eval_every: u64,
    /// Stop after this many dev evaluations in a row without a better accuracy.
    pub patience: u64,
    /// Stop, checkpoint written, after this many steps of this invocation, as a kill would
    /// (for testing `--resume`).
    pub stop_after: Option<u64>,
    /// No progress bar.
    pub quiet: bool,
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

/// What a run has recorded so far (saved in checkpoints, so that a resumed run decides and
/// records as an uninterrupted one).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct RunLog {
    /// Every optimiser step.
    pub steps: Vec<StepLog>,
    /// Every dev evaluation.
    pub evals: Vec<EvalLog>,
    /// The kept weights' step and accuracy, and evaluations since (checkpoint keys `best`,
    /// `since_best`).
    #[serde(flatten)]
    pub keep: KeepBest,
    /// Dev logits of the kept weights.
    pub best_logits: Vec<Vec<f32>>,
    /// Patience ran out.
    pub early_stopped: bool,
    /// Wall-clock seconds from the previous step's end (or the loop's start) to each step's
    /// end, evaluations and checkpoints included: for benchmarks, never compared.
    #[serde(default)]
    pub step_seconds: Vec<f64>,
    /// The recipe and training data of the run, checked on `--resume`.
    #[serde(default)]
    pub identity: serde_json::Value,
}

/// How the loop ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ending {
    /// The schedule's last step or early stopping: the kept weights are in [`WEIGHTS_FILE`].
    Finished,
    /// `stop_after` stopped it; the checkpoint continues it.
    Interrupted,
}

/// A new run's log, or a resumed run's from its checkpoint (with the trainer's weights, moments
/// and position), refused unless it was started with the same `identity` (recipe, base, data).
pub fn start(
    dir: &RunDir,
    trainer: &mut Trainer,
    identity: serde_json::Value,
    resume: bool,
) -> Result<RunLog> {
    if !resume {
        return Ok(RunLog {
            identity,
            ..RunLog::default()
        });
    }
    let extra = checkpoint::load(&dir.checkpoint(), trainer)?;
    let log: RunLog = serde_json::from_value(extra).map_err(|e| anyhow!("checkpoint log: {e}"))?;
    if log.identity != identity {
        return Err(Error::usage(format!(
            "--resume: the run in {} was started with another recipe, base or data \
             (checkpoint: {}; now: {}); use the same flags, or --force to start over",
            dir.out.display(),
            log.identity,
            identity
        )));
    }
    Ok(log)
}

/// Run the loop from where `trainer` stands to the schedule's end, early stopping or
/// `stop_after`, under `policy`. With `dev`, the weights of the best dev accuracy are kept;
/// without, the last ones.
pub fn run(
    dir: &RunDir,
    trainer: &mut Trainer,
    log: &mut RunLog,
    data: &[Example],
    dev: Option<&[Example]>,
    policy: &Policy,
) -> Result<Ending> {
    let ckpt = dir.checkpoint();
    let weights = dir.out.join(WEIGHTS_FILE);
    let per_epoch = trainer.recipe.steps_per_epoch(data.len());
    let evaluate = |t: &mut Trainer, log: &mut RunLog| -> Result<Control> {
        let Some(dev) = dev else {
            return Ok(Control::Continue);
        };
        // A step that ends an epoch is evaluated once.
        if log.evals.last().is_some_and(|e| e.step == t.pos.step) {
            return Ok(Control::Continue);
        }
        let logits = predict(t.model, dev, t.recipe.batch_questions)
            .map_err(|e| anyhow!("dev evaluation: {e}"))?;
        let acc = accuracy(&logits, dev);
        log.evals.push(EvalLog {
            step: t.pos.step,
            epoch: t.pos.step as f64 / per_epoch as f64,
            accuracy: acc,
        });
        let decision = log.keep.observe(t.pos.step, acc, policy.patience);
        if decision.keep {
            log.best_logits = logits;
            save_weights(t.model, &weights)?;
        }
        if decision.stop {
            log.early_stopped = true;
            return Ok(Control::Stop);
        }
        Ok(Control::Continue)
    };
    let bar = scorekit_core::progress::bar(trainer.schedule.total, "training", policy.quiet);
    bar.set_position(trainer.pos.step);
    let mut stepped = 0u64;
    let mut clock = Instant::now();
    let mut interrupted = false;
    trainer.run(data, |t, event| {
        let mut control = Control::Continue;
        let mut save = false;
        match event {
            Event::Step(l) => {
                log.steps.push(l.clone());
                log.step_seconds.push(clock.elapsed().as_secs_f64());
                clock = Instant::now();
                bar.set_position(l.step);
                bar.set_message(format!("loss {:.4}", l.loss));
                stepped += 1;
                if l.step % policy.eval_every == 0 {
                    control = evaluate(t, log)?;
                    save = true;
                }
                if policy.stop_after.is_some_and(|n| stepped >= n) {
                    interrupted = true;
                    control = Control::Stop;
                    save = true;
                }
            }
            Event::EpochEnd(_) => {
                control = evaluate(t, log)?;
                save = true;
            }
        }
        if save {
            let extra = serde_json::to_value(&*log).map_err(|e| anyhow!("checkpoint log: {e}"))?;
            checkpoint::save(&ckpt, t, extra)?;
        }
        Ok(control)
    })?;
    bar.finish_and_clear();
    if interrupted {
        return Ok(Ending::Interrupted);
    }
    if dev.is_some() {
        // The last step is evaluated unless patience already stopped the run.
        if !log.early_stopped {
            evaluate(trainer, log)?;
        }
    } else {
        save_weights(trainer.model, &weights)?;
    }
    Ok(Ending::Finished)
}

/// The model's weights as a safetensors file, written atomically.
fn save_weights(model: &McModel, file: &Path) -> Result<()> {
    let map: HashMap<String, Tensor> = model
        .named_vars()
        .into_iter()
        .map(|(n, v)| (n, v.as_tensor().clone()))
        .collect();
    scorekit_core::fs::write_atomically(file, |tmp| {
        candle_core::safetensors::save(&map, tmp).map_err(|e| anyhow!("{e}"))
    })
}

/// Share of the questions whose largest logit is the right choice.
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
/// first step anyway. A training process calls it once, before it loads anything.
pub fn keep_freed_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: `mallopt` only sets two of glibc's allocator parameters; it is called here
    // before training starts, and glibc's allocator serialises its own state.
    unsafe {
        // 32 MiB is glibc's largest mmap threshold on 64-bit targets.
        libc::mallopt(libc::M_MMAP_THRESHOLD, 32 << 20);
        libc::mallopt(libc::M_TRIM_THRESHOLD, i32::MAX);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_new_run_refuses_a_used_folder_and_a_resume_needs_a_checkpoint() {
        let tmp = tempfile::tempdir().unwrap();
        let out = tmp.path().join("out");
        let e = RunDir::open(&out, true, false).unwrap_err();
        assert!(format!("{e}").contains("holds no checkpoint"), "{e}");
        RunDir::open(&out, false, false).unwrap();
        std::fs::write(out.join(RECORD_FILE), "{}").unwrap();
        let e = RunDir::open(&out, false, false).unwrap_err();
        assert_eq!(e.exit_code(), 2);
        assert!(
            format!("{e}").contains("already holds a training run"),
            "{e}"
        );
        RunDir::open(&out, false, true).unwrap();
    }

    #[test]
    fn a_kill_between_the_renames_of_a_swap_is_recovered_on_resume() {
        let tmp = tempfile::tempdir().unwrap();
        let old = tmp.path().join("checkpoint.old");
        std::fs::create_dir_all(&old).unwrap();
        std::fs::write(old.join("state.json"), "{}").unwrap();
        let dir = RunDir::open(tmp.path(), true, false).unwrap();
        assert!(tmp.path().join("checkpoint/state.json").exists());
        dir.remove_checkpoints().unwrap();
        assert!(!tmp.path().join("checkpoint").exists());
    }
}
