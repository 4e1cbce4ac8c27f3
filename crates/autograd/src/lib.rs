//! The trainable layers' own forward and backward passes, below the models that use them: ops with
//! the activations they save and their gradients ([`ops`]), the fused BERT block of the native
//! training path ([`bert_block`], x86-64) and its bf16-mixed weight products ([`bf16_linear`]), the f32 glue to scorekit-kernels' element-wise kernels
//! behind them (`simd`), the gradient sink the backward passes write to ([`GradSink`]) and the
//! seeded dropout stream ([`rng`]). `scorekit-models` builds its layers on these; `scorekit-train` drives them.

#[cfg(target_arch = "x86_64")]
pub mod bert_block;
#[cfg(target_arch = "x86_64")]
pub mod bf16_linear;
pub mod ops;
pub mod precision;
pub mod rng;
mod simd;
mod sink;

pub use precision::Precision;
pub use sink::GradSink;
