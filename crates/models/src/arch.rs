//! What every architecture file shares: the parsed config ([`ModelConfig`]), the
//! [`Architecture`] trait and the head layouts, and the helpers that read config.json and
//! weight files. Kept apart from the registry in `lib.rs`, so the architecture files import
//! this module and `lib.rs` imports them: no file imports one that imports it back.

use crate::bert_layers::Train;
use candle_core::{DType, Device, Tensor};
use candle_nn::VarBuilder;
use scorekit_core::error::{Error, InputError, Result};
use scorekit_encoder::{Encoder, NativeLayout};
use serde_json::{Map, Value};
use std::path::Path;
use tokenizers::Tokenizer;

/// A parsed config.json: the dimensions every encoder has, and the architecture's own reading.
#[derive(Debug, Clone)]
pub struct ModelConfig {
    /// `model_type` as config.json gives it.
    pub model_type: String,
    /// The BERT-shaped dimensions (every supported architecture has them), in candle's type.
    pub bert: candle_transformers::models::bert::Config,
    /// Whether the feed-forward activation is erf-GELU (what the native kernels implement).
    pub erf_gelu: bool,
    /// Set where the native encoder can run this architecture.
    pub native: Option<NativeLayout>,
    /// Padding token id.
    pub pad_id: u32,
    /// Tokens a sequence may have (positions the tokens can use).
    pub max_tokens: usize,
    /// Whether token type ids reach the model (a type vocabulary of more than one).
    pub type_ids: bool,
    /// Tensor-name prefix of the encoder inside a head model (`bert.`, `roberta.`, ...).
    pub prefix: &'static str,
    /// config.json with the architecture's defaults filled in.
    pub raw: Map<String, Value>,
}

/// Which classification head a checkpoint carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HeadKind {
    /// `...ForMultipleChoice`: one logit per (context, choice) pair.
    MultipleChoice,
    /// `...ForSequenceClassification` with this many labels.
    SequenceClassification(usize),
}

/// Activation between a head's two dense layers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Activation {
    /// tanh (BERT pooler, RoBERTa classification head).
    Tanh,
    /// erf-GELU (DeBERTa's context pooler, ELECTRA's heads).
    Gelu,
}

/// A head as `transformers` writes it: the first token, a dense layer, an activation, a dense
/// layer to the outputs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HeadLayout {
    /// Full tensor name of the first dense layer (hidden → hidden).
    pub first: &'static str,
    /// The activation after it.
    pub act: Activation,
    /// Full tensor name of the output layer (hidden → outputs).
    pub second: &'static str,
}

/// Dropouts of a multiple-choice head (see [`Architecture::head_dropouts`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct HeadDropouts {
    /// On the first token, before the head's first dense layer (DeBERTa's `pooler_dropout`).
    pub pooler: f64,
    /// After the activation, before the output layer (`classifier_dropout`, DeBERTa's
    /// `cls_dropout`; else `hidden_dropout_prob`).
    pub classifier: f64,
}

/// An encoder scorekit trains: the definition that scores, also run in training mode.
pub trait TrainableEncoder: Send + Sync {
    /// `[b, s]` ids, types and 0/1 mask in, `[b, s, h]` hidden states out: inference without
    /// `train`, else training mode (differentiable operations, dropout with `train`'s
    /// probabilities and generator).
    fn forward_padded(
        &self,
        input_ids: &Tensor,
        token_type_ids: &Tensor,
        attention_mask: &Tensor,
        train: Option<&mut Train>,
    ) -> candle_core::Result<Tensor>;
}

/// One encoder architecture of the Hugging Face layouts.
pub trait Architecture: Sync {
    /// `model_type` values this architecture reads.
    fn model_types(&self) -> &'static [&'static str];
    /// Parse config.json (`raw`, read from `path`) with the defaults of `transformers`.
    fn config(&self, raw: Map<String, Value>, path: &Path) -> Result<ModelConfig>;
    /// Check the weight file against the config before anything is loaded (errors name the
    /// file and tensor). Default: nothing beyond what loading checks.
    fn check_weights(&self, _weights: &Path, _cfg: &ModelConfig) -> Result<()> {
        Ok(())
    }
    /// The float type candle's layers of this architecture run in, given the one asked for.
    fn candle_dtype(&self, dtype: DType) -> DType {
        dtype
    }
    /// candle's encoder (padded), on the device and dtype of `vb`.
    fn load_candle(
        &self,
        vb: VarBuilder<'static>,
        cfg: &ModelConfig,
    ) -> candle_core::Result<Box<dyn Encoder>>;
    /// The tensor names and activation of a head.
    fn head(&self, kind: HeadKind) -> HeadLayout;
    /// The encoder as a trainable module (candle's layers built from `vb`, typically backed by
    /// a `VarMap`), where scorekit can train this architecture.
    fn trainable(
        &self,
        _vb: VarBuilder<'static>,
        _cfg: &ModelConfig,
    ) -> Option<candle_core::Result<Box<dyn TrainableEncoder>>> {
        None
    }
    /// Dropout probabilities of the multiple-choice head in training, as `transformers` applies
    /// them: on the first token before the head's first layer, and after its activation.
    fn head_dropouts(&self, cfg: &ModelConfig) -> HeadDropouts {
        HeadDropouts {
            pooler: 0.0,
            classifier: cfg
                .bert
                .classifier_dropout
                .unwrap_or(cfg.bert.hidden_dropout_prob),
        }
    }
    /// A tokenizer for folders without tokenizer.json (RoBERTa: vocab.json + merges.txt;
    /// DeBERTa-v2/v3: spm.model).
    fn legacy_tokenizer(&self, _dir: &Path) -> Option<Result<Tokenizer>> {
        None
    }
}

/// An input error naming a model file.
pub fn bad(path: &Path, msg: impl Into<String>) -> Error {
    Error::Input(InputError::file(path, msg.into()))
}

/// A weight file that does not fit config.json: an input error naming the file.
pub fn weights_error(file: &Path, e: candle_core::Error) -> Error {
    bad(file, format!("does not fit config.json: {e}"))
}

/// candle's view of a weight file: model.safetensors (memory-mapped) or pytorch_model.bin.
pub fn var_builder(file: &Path, dtype: DType, device: &Device) -> Result<VarBuilder<'static>> {
    let vb = if file.extension().is_some_and(|e| e == "safetensors") {
        // SAFETY: the call memory-maps the file, and the mapped bytes must not change while
        // candle holds them (a rewrite changes them under a `&[u8]`, a truncation faults).
        // scorekit never writes a weight file, and model folders are inputs (the hub cache or
        // a folder given by the user) that nothing rewrites while scorekit runs: the
        // assumption every mmap-based weight loader makes.
        unsafe { VarBuilder::from_mmaped_safetensors(&[file], dtype, device) }
    } else {
        VarBuilder::from_pth(file, dtype, device)
    };
    vb.map_err(|e| bad(file, format!("cannot load: {e}")))
}

/// The weight file of a model folder: model.safetensors, else pytorch_model.bin.
pub fn weights_file(dir: &Path) -> Result<std::path::PathBuf> {
    ["model.safetensors", "pytorch_model.bin"]
        .iter()
        .map(|f| dir.join(f))
        .find(|p| p.exists())
        .ok_or_else(|| {
            Error::usage(format!(
                "model {}: no model.safetensors or pytorch_model.bin",
                dir.display()
            ))
        })
}

/// An integer field of config.json, required.
pub fn usize_field(config: &Map<String, Value>, field: &str, path: &Path) -> Result<usize> {
    config
        .get(field)
        .and_then(Value::as_u64)
        .map(|v| v as usize)
        .ok_or_else(|| bad(path, format!("no integer {field:?}")))
}

/// Fill a config.json field that `transformers` defaults and files often omit.
pub fn default(config: &mut Map<String, Value>, field: &str, value: Value) {
    if config.get(field).is_none_or(Value::is_null) {
        config.insert(field.into(), value);
    }
}

/// Deserialize a config.json map into an architecture's config type.
pub fn parse<T: serde::de::DeserializeOwned>(
    config: &Map<String, Value>,
    path: &Path,
) -> Result<T> {
    serde_json::from_value(Value::Object(config.clone()))
        .map_err(|e| bad(path, format!("config.json not understood: {e}")))
}
