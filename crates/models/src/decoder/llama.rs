//! Llama (Llama 2/3.x, SmolLM, TinyLlama): `LlamaConfig`'s defaults; `attention_bias` puts
//! biases on q, k, v and o, `mlp_bias` on the feed-forward layer.

use super::{common, opt_bool, DecoderConfig, DecoderFamily, Defaults};
use scorekit_core::error::Result;
use serde_json::{Map, Value};
use std::path::Path;

/// The Llama family.
pub struct Llama;

impl DecoderFamily for Llama {
    fn model_types(&self) -> &'static [&'static str] {
        &["llama"]
    }

    fn config(&self, raw: Map<String, Value>, path: &Path) -> Result<DecoderConfig> {
        let attention_bias = opt_bool(&raw, "attention_bias").unwrap_or(false);
        let mlp_bias = opt_bool(&raw, "mlp_bias").unwrap_or(false);
        let mut cfg = common(
            raw,
            path,
            "llama",
            Defaults {
                rms_norm_eps: 1e-6,
                max_positions: 2048,
                tie: false,
                kv_heads: None,
                head_dim: None,
                act: ("hidden_act", "silu"),
            },
        )?;
        cfg.qkv_bias = attention_bias;
        cfg.o_bias = attention_bias;
        cfg.mlp_bias = mlp_bias;
        Ok(cfg)
    }
}
