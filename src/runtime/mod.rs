//! Everything that touches a model: device, resolution (folder → HF cache → Hub), weight checks,
//! tokenisation, token-budget batching, and the sentence embedder. See docs/runtime.md.

pub mod batching;
pub mod device;
pub mod embedder;
pub mod fixture;
pub mod hub;
pub mod judge;
pub mod load;
pub mod manifest;
pub mod masked_bert;
pub mod ops;
pub mod tokenize;
pub mod weights;

pub use batching::{plan_batches, Batch};
pub use device::{select_device, select_dtype};
pub use embedder::{cosine, Embedder};
pub use hub::{resolve, ResolveOptions, ResolvedModel};
pub use tokenize::{pad_batch, PaddedBatch, TextTokenizer, Tokens};
