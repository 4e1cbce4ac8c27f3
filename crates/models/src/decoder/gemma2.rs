//! Gemma 2: `(1 + w)` RMSNorms, norms before and after both attention and the feed-forward
//! layer, embeddings scaled by sqrt(hidden_size), scores scaled by `query_pre_attn_scalar`,
//! tanh soft-capping of scores and logits, and a sliding window on every other layer (the
//! first included), as `Gemma2Config` lays them out.

use super::{common, opt_f64, opt_usize, DecoderConfig, DecoderFamily, Defaults};
use scorekit_core::error::Result;
use serde_json::{Map, Value};
use std::path::Path;

/// The Gemma 2 family.
pub struct Gemma2;

impl DecoderFamily for Gemma2 {
    fn model_types(&self) -> &'static [&'static str] {
        &["gemma2"]
    }

    fn config(&self, raw: Map<String, Value>, path: &Path) -> Result<DecoderConfig> {
        let scalar = opt_f64(&raw, "query_pre_attn_scalar").unwrap_or(256.0);
        // A null cap is no capping; an absent one transformers' default.
        let cap = |field: &str, default: f64| match raw.get(field) {
            None => Some(default),
            Some(v) => v.as_f64(),
        };
        let attn_softcap = cap("attn_logit_softcapping", 50.0);
        let final_softcap = cap("final_logit_softcapping", 30.0);
        let window = opt_usize(&raw, "sliding_window", path)?.unwrap_or(4096);
        let attention_bias = super::opt_bool(&raw, "attention_bias").unwrap_or(false);
        let mut cfg = common(
            raw,
            path,
            "gemma2",
            Defaults {
                rms_norm_eps: 1e-6,
                max_positions: 8192,
                tie: true,
                kv_heads: Some(4),
                head_dim: Some(256),
                act: ("hidden_activation", "gelu_pytorch_tanh"),
            },
        )?;
        cfg.qkv_bias = attention_bias;
        cfg.o_bias = attention_bias;
        cfg.norm_plus_one = true;
        cfg.sandwich_norms = true;
        cfg.embed_scale = true;
        cfg.attn_scaling = scalar.powf(-0.5);
        cfg.attn_softcap = attn_softcap;
        cfg.final_softcap = final_softcap;
        cfg.sliding_windows =
            super::layer_windows(&cfg.raw, cfg.num_layers, path, Some(window), |i| i % 2 == 0)?;
        Ok(cfg)
    }
}
