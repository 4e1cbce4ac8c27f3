//! Model architectures, one file each: config.json with the defaults of `transformers`, weight
//! names and shape checks, candle's (padded) encoder, and the names of the classification heads;
//! the safetensors checks ([`weights`]) and the DeBERTa-v2/v3 tokenizer built from spm.model
//! ([`spm`]) for folders without tokenizer.json.
//!
//! Adding an architecture: a new file implementing [`Architecture`], one line in
//! [`ARCHITECTURES`], and a parity test against PyTorch (see docs/architecture.md).

mod arch;
pub mod bert;
pub mod bert_layers;
pub mod deberta_v2;
pub mod deberta_v2_layers;
pub mod decoder;
pub mod electra;
pub mod heads;
pub mod roberta;
pub mod shards;
pub mod spm;
pub mod t5;
pub mod weights;
pub mod xlm_roberta;

/// The layout scorekit's native engine reads; a BERT-shaped architecture's config carries one.
pub use arch::*;
pub use scorekit_encoder::NativeLayout;

use scorekit_core::error::Result;
use serde_json::Value;
use std::path::Path;

/// Every supported architecture; `model_type` in config.json picks one.
pub static ARCHITECTURES: &[&dyn Architecture] = &[
    &bert::Bert,
    &roberta::Roberta,
    &xlm_roberta::XlmRoberta,
    &deberta_v2::DebertaV2,
    &electra::Electra,
];

/// Encoder-decoder architectures (`model_type`), run by the letter judge rather than as
/// encoders: T5, T5 v1.1 and Flan-T5 ([`t5`]).
pub static SEQ2SEQ_MODEL_TYPES: &[&str] = t5::MODEL_TYPES;

/// The architecture of `model_type`.
pub fn architecture(model_type: &str) -> Option<&'static dyn Architecture> {
    ARCHITECTURES
        .iter()
        .copied()
        .find(|a| a.model_types().contains(&model_type))
}

/// Every `model_type` scorekit reads, for messages.
pub fn supported_model_types() -> String {
    ARCHITECTURES
        .iter()
        .flat_map(|a| a.model_types().iter().copied())
        .chain(SEQ2SEQ_MODEL_TYPES.iter().copied())
        .collect::<Vec<_>>()
        .join(", ")
}

/// Read config.json, find its architecture and parse it. `default_type` is assumed where the
/// file has no `model_type` (sentence-transformers' BERT folders often omit it).
pub fn read_config(
    path: &Path,
    default_type: &str,
) -> Result<(&'static dyn Architecture, ModelConfig)> {
    let text = std::fs::read_to_string(path).map_err(|e| bad(path, format!("cannot read: {e}")))?;
    let raw: Value =
        serde_json::from_str(&text).map_err(|e| bad(path, format!("not valid JSON: {e}")))?;
    let Value::Object(raw) = raw else {
        return Err(bad(path, "config.json is not a JSON object"));
    };
    let model_type = raw
        .get("model_type")
        .and_then(Value::as_str)
        .unwrap_or(default_type)
        .to_string();
    if SEQ2SEQ_MODEL_TYPES.contains(&model_type.as_str()) {
        return Err(bad(
            path,
            format!(
                "model_type {model_type:?} is an encoder-decoder model: scorekit runs it as a \
                 letter judge (`--judge`), not as an encoder"
            ),
        ));
    }
    let arch = architecture(&model_type).ok_or_else(|| {
        bad(
            path,
            format!(
                "model_type {model_type:?} is not supported (supported: {})",
                supported_model_types()
            ),
        )
    })?;
    let cfg = arch.config(raw, path)?;
    Ok((arch, cfg))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_model_type_has_one_architecture() {
        let mut seen = std::collections::BTreeSet::new();
        for a in ARCHITECTURES {
            for t in a.model_types() {
                assert!(seen.insert(*t), "{t} claimed twice");
                assert!(std::ptr::eq(
                    architecture(t).unwrap() as *const _ as *const u8,
                    *a as *const _ as *const u8
                ));
            }
        }
        assert!(architecture("gpt2").is_none());
        assert!(supported_model_types().contains("electra"));
    }
}
