//! Mistral: Llama's layers with a sliding window on every layer (`sliding_window`, 4096 when
//! absent, none when null, as `MistralConfig` reads it).

use super::{common, opt_usize, DecoderConfig, DecoderFamily, Defaults};
use scorekit_core::error::Result;
use serde_json::{Map, Value};
use std::path::Path;

/// The Mistral family.
pub struct Mistral;

impl DecoderFamily for Mistral {
    fn model_types(&self) -> &'static [&'static str] {
        &["mistral"]
    }

    fn config(&self, raw: Map<String, Value>, path: &Path) -> Result<DecoderConfig> {
        let window = match raw.get("sliding_window") {
            None => Some(4096),
            Some(_) => opt_usize(&raw, "sliding_window", path)?,
        };
        let mut cfg = common(
            raw,
            path,
            "mistral",
            Defaults {
                rms_norm_eps: 1e-6,
                max_positions: 4096 * 32,
                tie: false,
                kv_heads: Some(8),
                head_dim: None,
                act: ("hidden_act", "silu"),
            },
        )?;
        cfg.sliding_windows = vec![window; cfg.num_layers];
        Ok(cfg)
    }
}
