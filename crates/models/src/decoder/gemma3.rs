//! Gemma 3 (text): Gemma 2's `(1 + w)` RMSNorms, sandwich norms, embedding scale and
//! `query_pre_attn_scalar`, plus `(1 + w)` RMSNorms on each head's queries and keys before RoPE,
//! sliding windows on five layers of six (`sliding_window_pattern`, or `layer_types`), and two
//! rotary embeddings: `rope_local_base_freq` unscaled on the sliding layers, `rope_theta` with
//! `rope_scaling` (linear on the 4B-27B checkpoints) on the global ones. Soft-capping only where
//! config.json sets it (`Gemma3TextConfig` defaults both to none).
//!
//! `model_type` `gemma3_text` is the text model (gemma-3-1b-it, `Gemma3ForCausalLM`); `gemma3` a
//! multimodal checkpoint (`Gemma3ForConditionalGeneration`), whose `text_config` is read here and
//! whose vision tower and projector are never loaded.

use super::{common, opt_bool, opt_f64, opt_usize, DecoderConfig, DecoderFamily, Defaults, Rope};
use crate::arch::bad;
use scorekit_core::error::Result;
use serde_json::{Map, Value};
use std::path::Path;

/// The Gemma 3 family.
pub struct Gemma3;

impl DecoderFamily for Gemma3 {
    fn model_types(&self) -> &'static [&'static str] {
        &["gemma3_text", "gemma3"]
    }

    fn config(&self, raw: Map<String, Value>, path: &Path) -> Result<DecoderConfig> {
        let multimodal = raw.get("model_type").and_then(Value::as_str) == Some("gemma3");
        let mut raw =
            if multimodal {
                match raw.get("text_config") {
                    Some(Value::Object(t)) => t.clone(),
                    // transformers builds a default Gemma3TextConfig; a judge needs the real sizes.
                    _ => return Err(bad(
                        path,
                        "field \"text_config\": missing or not an object in a multimodal gemma3 \
                         config (the text model's sizes are there)",
                    )),
                }
            } else {
                raw
            };
        if opt_bool(&raw, "use_bidirectional_attention") == Some(true) {
            return Err(bad(
                path,
                "field \"use_bidirectional_attention\": true (an embedding model, not a causal \
                 letter judge)",
            ));
        }
        // Gemma3TextConfig's defaults where they differ from the shared reading's.
        raw.entry("rope_theta").or_insert(Value::from(1_000_000.0));
        let scalar = opt_f64(&raw, "query_pre_attn_scalar").unwrap_or(256.0);
        let attn_softcap = opt_f64(&raw, "attn_logit_softcapping");
        let final_softcap = opt_f64(&raw, "final_logit_softcapping");
        let window = opt_usize(&raw, "sliding_window", path)?.unwrap_or(4096);
        let pattern = opt_usize(&raw, "sliding_window_pattern", path)?.unwrap_or(6);
        if pattern == 0 {
            return Err(bad(path, "field \"sliding_window_pattern\": 0"));
        }
        let local_base = opt_f64(&raw, "rope_local_base_freq").unwrap_or(10_000.0);
        let attention_bias = opt_bool(&raw, "attention_bias").unwrap_or(false);
        let mut cfg = common(
            raw,
            path,
            "gemma3_text",
            Defaults {
                rms_norm_eps: 1e-6,
                max_positions: 131_072,
                tie: true,
                kv_heads: Some(4),
                head_dim: Some(256),
                act: ("hidden_activation", "gelu_pytorch_tanh"),
            },
        )?;
        if multimodal {
            cfg.model_type = "gemma3".into();
            cfg.weight_prefixes = vec![
                "language_model.model".to_string(),
                "model.language_model".to_string(),
            ];
        }
        cfg.qkv_bias = attention_bias;
        cfg.o_bias = attention_bias;
        cfg.qk_norm = true;
        cfg.norm_plus_one = true;
        cfg.sandwich_norms = true;
        cfg.embed_scale = true;
        cfg.attn_scaling = scalar.powf(-0.5);
        cfg.attn_softcap = attn_softcap;
        cfg.final_softcap = final_softcap;
        // `"sliding_attention" if (i + 1) % pattern else "full_attention"`.
        cfg.sliding_windows =
            super::layer_windows(&cfg.raw, cfg.num_layers, path, Some(window), |i| {
                (i + 1) % pattern != 0
            })?;
        cfg.local_rope = Some(Rope::plain(local_base, cfg.rope.rotary_dim));
        Ok(cfg)
    }
}
