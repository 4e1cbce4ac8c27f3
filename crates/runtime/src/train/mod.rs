//! Fine-tuning multiple-choice judges on candle's autograd (`scorekit judge train`).
//!
//! The model is the scoring judge's own definition (`models::Architecture::trainable` and
//! `Architecture::head`) built on a `VarMap` ([`model`]); the optimiser ([`adamw`]), schedule
//! and clipping ([`schedule`]) follow PyTorch and the `transformers` Trainer formula for formula;
//! [`trainer`] runs the loop (cross-entropy over each question's choices, gradient accumulation,
//! seeded shuffles) and [`checkpoint`] saves and restores everything a resumed run needs.

pub mod adamw;
#[cfg(target_arch = "x86_64")]
pub mod bert_block;
pub mod checkpoint;
pub mod model;
pub mod ops;
pub mod rng;
pub mod schedule;
mod simd;
mod sink;
pub mod trainer;

pub use sink::GradSink;
