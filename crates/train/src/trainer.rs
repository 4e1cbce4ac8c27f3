//! The training loop: micro-batches of questions, cross-entropy over each question's choices,
//! gradient accumulation, global-norm clipping, AdamW on the linear schedule.
//!
//! An epoch takes the questions in file order (`shuffle: false`) or in a permutation drawn from
//! the seed and the epoch number (so a resumed run needs no generator state for it), cuts them
//! into micro-batches of `batch_questions` and groups `grad_accum` micro-batches into one
//! optimiser step; the last group of an epoch may hold fewer micro-batches, and each
//! micro-batch's loss is divided by the number of micro-batches of its group.

use super::adamw::{AdamW, AdamWParams};
use super::model::{Dropouts, McModel};
use super::schedule::{clip_coefficient, grad_norm, LinearSchedule};
use candle_core::{Result, Tensor};
use scorekit_autograd::rng::SplitMix;
use scorekit_autograd::{GradSink, Precision};
use scorekit_encoder::Batch;
use scorekit_encoder::Tokens;
use scorekit_models::bert_layers::Train;
use serde::{Deserialize, Serialize};

/// One training question: the tokenised (document, question + option) pair of every choice.
#[derive(Debug, Clone, PartialEq)]
pub struct Example {
    /// One tokenised pair per choice.
    pub choices: Vec<Tokens>,
    /// Index of the right choice.
    pub label: usize,
}

/// What `scorekit judge train` was asked to do: built from the flags, filled in by
/// [`Trainer::new`] (dropouts and precision left to the model) and recorded in training.json.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Recipe {
    /// Peak learning rate.
    pub lr: f64,
    /// Questions per micro-batch.
    pub batch_questions: usize,
    /// Micro-batches per optimiser step.
    pub grad_accum: usize,
    /// Decoupled weight decay (not on biases and normalisation weights).
    pub weight_decay: f64,
    /// Share of the optimiser steps spent warming up.
    pub warmup_ratio: f64,
    /// Global gradient norm limit (0: none).
    pub max_grad_norm: f64,
    /// Epochs, unless `max_steps` is set.
    pub epochs: u64,
    /// Optimiser steps in all (overrides `epochs`).
    pub max_steps: Option<u64>,
    /// Seeded shuffle per epoch (else file order).
    pub shuffle: bool,
    /// Seed of the shuffles, dropout masks and new heads.
    pub seed: u64,
    /// Dropout probabilities (`--dropout P`: [`Dropouts::all`]); `None`: the model's
    /// config.json ([`Recipe::dropouts_of`]). Written filled in.
    pub dropouts: Option<Dropouts>,
    /// The precision of the products (`--precision`); `None`: [`default_precision`] of the
    /// model's device ([`Recipe::precision_of`]). Written filled in; absent from runs recorded
    /// before bf16 trained (they trained in f32).
    pub precision: Option<Precision>,
}

impl Recipe {
    /// The one recipe check the flags' own parsers cannot make.
    pub fn check(&self) -> scorekit_core::error::Result<()> {
        if self.max_steps.is_none() && self.epochs == 0 {
            return Err(scorekit_core::error::Error::usage(
                "nothing to train: --epochs is 0 and no --max-steps",
            ));
        }
        Ok(())
    }

    /// The dropouts `model` trains with: as asked, else its config.json's.
    pub fn dropouts_of(&self, model: &McModel) -> Dropouts {
        self.dropouts.unwrap_or(model.config_dropouts)
    }

    /// The precision `model` trains in: as asked, else the default of its device.
    pub fn precision_of(&self, model: &McModel) -> Precision {
        self.precision
            .unwrap_or_else(|| default_precision(model.device()))
    }

    /// Optimiser steps per epoch for `n` questions.
    pub fn steps_per_epoch(&self, n: usize) -> u64 {
        let batches = n.div_ceil(self.batch_questions.max(1));
        batches.div_ceil(self.grad_accum.max(1)).max(1) as u64
    }

    /// Optimiser steps of the whole run.
    pub fn total_steps(&self, n: usize) -> u64 {
        self.max_steps
            .unwrap_or(self.epochs * self.steps_per_epoch(n))
    }

    /// The order of the questions in epoch `epoch`.
    pub fn order(&self, n: usize, epoch: u64) -> Vec<usize> {
        let mut v: Vec<usize> = (0..n).collect();
        if self.shuffle {
            let mix = self.seed ^ epoch.wrapping_add(1).wrapping_mul(0xD1B5_4A32_D192_ED03);
            SplitMix::new(mix).shuffle(&mut v);
        }
        v
    }
}

/// Where a run stands: everything besides weights and moments that a resumed run needs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Position {
    /// Optimiser steps done.
    pub step: u64,
    /// Current epoch (0-based).
    pub epoch: u64,
    /// Optimiser steps done within the current epoch.
    pub step_in_epoch: u64,
    /// The dropout generator's state.
    pub rng: u64,
}

/// One optimiser step's record.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StepLog {
    /// 1-based optimiser step.
    pub step: u64,
    /// Epoch (0-based) it belongs to.
    pub epoch: u64,
    /// Mean cross-entropy of its micro-batches.
    pub loss: f64,
    /// Learning rate used.
    pub lr: f64,
    /// Global gradient norm before clipping.
    pub grad_norm: f64,
}

/// What the caller wants after a step.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Control {
    /// Go on.
    Continue,
    /// Stop now (early stopping, an interruption).
    Stop,
}

/// An event of the loop, for evaluation, checkpoints and progress.
pub enum Event<'a> {
    /// A step was taken.
    Step(&'a StepLog),
    /// An epoch ended (0-based number).
    EpochEnd(u64),
}

/// The loop's state: optimiser, schedule, position.
pub struct Trainer<'m> {
    /// The model.
    pub model: &'m McModel,
    /// The recipe.
    pub recipe: Recipe,
    /// AdamW and its moments.
    pub opt: AdamW,
    /// The schedule.
    pub schedule: LinearSchedule,
    /// Where the run stands.
    pub pos: Position,
}

impl<'m> Trainer<'m> {
    /// A fresh run over `n` questions; the recipe's dropouts and precision left unasked are
    /// filled in from `model` ([`Recipe::dropouts_of`], [`Recipe::precision_of`]).
    pub fn new(model: &'m McModel, mut recipe: Recipe, n: usize) -> Result<Self> {
        recipe.dropouts = Some(recipe.dropouts_of(model));
        recipe.precision = Some(recipe.precision_of(model));
        let opt = AdamW::new(
            model.named_vars(),
            AdamWParams {
                weight_decay: recipe.weight_decay,
                ..Default::default()
            },
        )?;
        let schedule = LinearSchedule::from_ratio(recipe.total_steps(n), recipe.warmup_ratio);
        let pos = Position {
            step: 0,
            epoch: 0,
            step_in_epoch: 0,
            rng: recipe.seed ^ 0x5DEE_CE66_D1CE_5EED,
        };
        Ok(Trainer {
            model,
            recipe,
            opt,
            schedule,
            pos,
        })
    }

    /// Run until the schedule's last step or until `on_event` says stop.
    pub fn run(
        &mut self,
        data: &[Example],
        mut on_event: impl FnMut(&mut Self, Event) -> scorekit_core::error::Result<Control>,
    ) -> scorekit_core::error::Result<()> {
        let n = data.len();
        let per_epoch = self.recipe.steps_per_epoch(n);
        let group = self.recipe.batch_questions * self.recipe.grad_accum;
        while self.pos.step < self.schedule.total {
            let order = self.recipe.order(n, self.pos.epoch);
            while self.pos.step_in_epoch < per_epoch && self.pos.step < self.schedule.total {
                let start = self.pos.step_in_epoch as usize * group;
                let picked = &order[start..(start + group).min(n)];
                let log = self
                    .step(data, picked)
                    .map_err(|e| anyhow::anyhow!("training step {}: {e}", self.pos.step + 1))?;
                self.pos.step_in_epoch += 1;
                if on_event(self, Event::Step(&log))? == Control::Stop {
                    return Ok(());
                }
            }
            if self.pos.step_in_epoch >= per_epoch {
                let ended = self.pos.epoch;
                self.pos.epoch += 1;
                self.pos.step_in_epoch = 0;
                if on_event(self, Event::EpochEnd(ended))? == Control::Stop {
                    return Ok(());
                }
            }
        }
        Ok(())
    }

    /// One optimiser step over the questions `picked` (one group of micro-batches).
    fn step(&mut self, data: &[Example], picked: &[usize]) -> candle_core::Result<StepLog> {
        let micro: Vec<&[usize]> = picked.chunks(self.recipe.batch_questions).collect();
        let k = micro.len() as f64;
        let mut grads: Vec<Option<Tensor>> = vec![None; self.opt.slots.len()];
        let mut loss_sum = 0f64;
        let dropouts = self.recipe.dropouts_of(self.model);
        let mut train = Train {
            hidden: dropouts.hidden,
            attention: dropouts.attention,
            rng: SplitMix::new(self.pos.rng),
            grads: GradSink::default(),
            precision: self.recipe.precision_of(self.model),
        };
        for qs in micro {
            let loss = self.loss(data, qs, &mut train)?;
            loss_sum += loss.to_dtype(candle_core::DType::F64)?.to_scalar::<f64>()?;
            let store = (loss / k)?.backward()?;
            let mut outside: std::collections::HashMap<_, Vec<Tensor>> = Default::default();
            for (var, g) in train.grads.take() {
                outside.entry(var.id()).or_default().push(g);
            }
            for (slot, acc) in self.opt.slots.iter().zip(grads.iter_mut()) {
                let var = slot.var.as_tensor();
                let parts = store.get(var).into_iter().cloned();
                for g in parts.chain(outside.remove(&var.id()).unwrap_or_default()) {
                    *acc = Some(match acc.take() {
                        Some(a) => (a + g)?,
                        None => g,
                    });
                }
            }
            if !outside.is_empty() {
                candle_core::bail!(
                    "gradients of {} tensors that are not trained",
                    outside.len()
                );
            }
        }
        self.pos.rng = train.rng.state;
        let grad_norm = grad_norm(&grads)?;
        let lr = self.recipe.lr * self.schedule.factor(self.pos.step);
        let coef = clip_coefficient(grad_norm, self.recipe.max_grad_norm);
        self.opt.step(&grads, lr, coef)?;
        self.pos.step += 1;
        Ok(StepLog {
            step: self.pos.step,
            epoch: self.pos.epoch,
            loss: loss_sum / k,
            lr,
            grad_norm,
        })
    }

    /// Mean cross-entropy of questions `qs`, in training mode.
    fn loss(
        &self,
        data: &[Example],
        qs: &[usize],
        train: &mut Train,
    ) -> candle_core::Result<Tensor> {
        let (batch, labels, choices) = batch_of(data, qs);
        let dev = self.model.device();
        let p = batch.padded(self.model.cfg.pad_id, dev)?;
        let labels = Tensor::new(labels.as_slice(), dev)?;
        let logits = self.model.logits(
            &p.input_ids,
            &p.token_type_ids,
            &p.attention_mask,
            choices,
            Some((train, &self.recipe.dropouts_of(self.model))),
        )?;
        candle_nn::loss::cross_entropy(&logits, &labels)
    }
}

/// The precision `judge train` uses on `device` unless told: bf16-mixed on CUDA (the tensor
/// cores multiply bf16 at ~15x their f32 rate), f32 elsewhere: on the CPU, bf16-mixed is
/// faster only where the fused layer runs (BERT-family layers on AMX-BF16 or AVX512-BF16,
/// 1.5-2.1x a step, BENCHMARKS.md §6) and slower elsewhere, while f32 reproduces PyTorch's f32
/// training exactly (docs/judge.md "Precision"); candle's Metal bf16 products are not measured.
pub fn default_precision(device: &candle_core::Device) -> Precision {
    if device.is_cuda() {
        Precision::Bf16Mixed
    } else {
        Precision::F32
    }
}

/// The sequences of questions `qs` end to end, their labels and the number of choices.
pub fn batch_of(data: &[Example], qs: &[usize]) -> (Batch, Vec<u32>, usize) {
    let rows: Vec<&Tokens> = qs.iter().flat_map(|&q| data[q].choices.iter()).collect();
    let labels = qs.iter().map(|&q| data[q].label as u32).collect();
    let choices = qs.first().map_or(1, |&q| data[q].choices.len());
    (Batch::from_rows(&rows), labels, choices)
}

/// Logits `[choices]` of every question (inference mode), `batch_questions` at a time.
pub fn predict(
    model: &McModel,
    data: &[Example],
    batch_questions: usize,
) -> candle_core::Result<Vec<Vec<f32>>> {
    let idx: Vec<usize> = (0..data.len()).collect();
    let mut out = Vec::with_capacity(data.len());
    for qs in idx.chunks(batch_questions.max(1)) {
        let (batch, _, choices) = batch_of(data, qs);
        let p = batch.padded(model.cfg.pad_id, model.device())?;
        let logits = model.logits(
            &p.input_ids,
            &p.token_type_ids,
            &p.attention_mask,
            choices,
            None,
        )?;
        out.extend(logits.to_dtype(candle_core::DType::F32)?.to_vec2::<f32>()?);
    }
    Ok(out)
}

/// The index of the largest logit (the first on ties).
pub fn argmax(row: &[f32]) -> usize {
    let mut best = 0;
    for (i, &x) in row.iter().enumerate() {
        if x > row[best] {
            best = i;
        }
    }
    best
}
