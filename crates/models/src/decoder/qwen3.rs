//! Qwen3 (dense): Qwen2's layout without the q/k/v biases (`attention_bias`, false) and with an
//! RMSNorm on each head's queries and keys before RoPE; `head_dim` defaults to 128.

use super::{common, opt_bool, DecoderConfig, DecoderFamily, Defaults};
use scorekit_core::error::Result;
use serde_json::{Map, Value};
use std::path::Path;

/// The Qwen3 family.
pub struct Qwen3;

impl DecoderFamily for Qwen3 {
    fn model_types(&self) -> &'static [&'static str] {
        &["qwen3"]
    }

    fn config(&self, raw: Map<String, Value>, path: &Path) -> Result<DecoderConfig> {
        let attention_bias = opt_bool(&raw, "attention_bias").unwrap_or(false);
        let mut cfg = common(
            raw,
            path,
            "qwen3",
            Defaults {
                rms_norm_eps: 1e-6,
                max_positions: 32768,
                tie: false,
                kv_heads: Some(32),
                head_dim: Some(128),
                act: ("hidden_act", "silu"),
            },
        )?;
        cfg.qkv_bias = attention_bias;
        cfg.o_bias = attention_bias;
        cfg.qk_norm = true;
        cfg.sliding_windows = super::qwen2::qwen_windows(&cfg.raw, cfg.num_layers, path)?;
        Ok(cfg)
    }
}
