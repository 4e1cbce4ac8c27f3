//! Everything that touches a model: device, resolution (folder → HF cache → Hub), weight checks,
//! tokenisation, token-budget batching, the encoder API and the one place an engine is chosen
//! (`encoder`), one file per architecture (`models/`), scorekit's CPU kernels (`native/`), and
//! the two things built on them: the sentence embedder and the MRC judge. `spm` builds DeBERTa-v2/v3
//! tokenizers from spm.model for folders without tokenizer.json. See docs/architecture.md and
//! docs/runtime.md.

pub mod batching;
pub mod device;
pub mod embedder;
pub mod encoder;
pub mod hub;
pub mod judge;
pub mod manifest;
pub mod models;
pub mod native;
pub mod spm;
pub mod tokenize;
pub mod train;
pub mod weights;

pub use device::{device_name, select_device, select_dtype};
pub use embedder::{Embedder, EMBEDDER_FILES};
pub use encoder::{EngineChoice, EngineOptions};
pub use hub::{resolve, ResolveOptions, ResolvedModel};
pub use tokenize::{TextTokenizer, Tokens};
