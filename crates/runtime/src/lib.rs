//! Everything that touches a model, above the model crates: device, resolution (folder → HF cache
//! → Hub, [`hub`], [`manifest`]), tokenisation ([`tokenize`]), the one place an engine is chosen
//! ([`engine`]), a decoder judge's chat prompt ([`chat_template`]), and the two things built on the encoders: the sentence embedder ([`embedder`])
//! and the MRC judge ([`judge`]), and the judge's training run in its folder ([`judge_train`]). Below it: `scorekit-encoder` (the interface), `scorekit-models`
//! (one file per architecture), `scorekit-kernels` and `scorekit-native` (scorekit's CPU
//! engine), `scorekit-autograd` and `scorekit-train` (judge training); they are re-exported here
//! under short names. See docs/architecture.md and docs/runtime.md.

pub mod chat_template;
pub mod decoder_judge;
pub mod decoder_native;
pub mod device;
pub mod embedder;
pub mod engine;
pub mod hub;
pub mod judge;
pub mod judge_train;
pub mod letter_judge;
pub mod manifest;
pub mod model_cache;
pub mod tokenize;

/// The token budget of one batch (padding counted) when `--batch-tokens` is not given.
pub const DEFAULT_BATCH_TOKENS: usize = 8192;

pub use scorekit_encoder::{self as encoder, batching, Tokens};
pub use scorekit_kernels as kernels;
pub use scorekit_models::{self as models, spm, weights};
pub use scorekit_train as train;

pub use device::{device_name, select_device, select_dtype, DeviceKind, DeviceSpec};
pub use embedder::{Embedder, EMBEDDER_FILES};
pub use engine::{EngineChoice, EngineOptions};
pub use hub::{resolve, ResolveOptions, ResolvedModel};
pub use tokenize::TextTokenizer;
