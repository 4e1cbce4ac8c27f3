//! Fine-tuning multiple-choice judges on candle's autograd (`scorekit judge train`). The layers'
//! own backward passes (the fused BERT block, ops with saved activations) are `scorekit-autograd`;
//! this crate holds the model built for training, the optimiser and the loop.
//!
//! The model is the scoring judge's own definition (`models::Architecture::trainable` and
//! `Architecture::head`) built on a `VarMap` ([`model`]); the optimiser ([`adamw`]), schedule
//! and clipping ([`schedule`]) follow PyTorch and the `transformers` Trainer formula for formula;
//! [`trainer`] runs the loop (cross-entropy over each question's choices, gradient accumulation,
//! seeded shuffles), [`checkpoint`] saves and restores everything a resumed run needs, and [`run`]
//! holds one run's policy in its folder: dev evaluations, checkpoints, the kept weights.

pub mod adamw;
pub mod checkpoint;
pub mod keep_best;
pub mod model;
pub mod run;
pub mod schedule;
pub mod trainer;

pub use scorekit_autograd::Precision;
