//! Phi-3 (Phi-3, Phi-3.5, Phi-4-mini): fused `qkv_proj` and `gate_up_proj`, RoPE on the first
//! `partial_rotary_factor` of each head, a sliding window on every layer when `sliding_window`
//! is set (`Phi3Config`). Long-context `longrope` scaling (Phi-3.5, Phi-4-mini) is the rope
//! reader's, with Phi3Config's `original_max_position_embeddings` default (4096) and its renaming
//! of the older `su` / `yarn` rope types to `longrope`.

use super::{common, opt_usize, DecoderConfig, DecoderFamily, Defaults, Layout};
use scorekit_core::error::Result;
use serde_json::{Map, Value};
use std::path::Path;

/// The Phi-3 family.
pub struct Phi3;

impl DecoderFamily for Phi3 {
    fn model_types(&self) -> &'static [&'static str] {
        &["phi3"]
    }

    fn config(&self, mut raw: Map<String, Value>, path: &Path) -> Result<DecoderConfig> {
        let window = opt_usize(&raw, "sliding_window", path)?;
        // `Phi3Config.__init__`: the default, and `_rope_scaling_adjustment`.
        raw.entry("original_max_position_embeddings")
            .or_insert(Value::from(4096));
        if let Some(Value::Object(s)) = raw.get_mut("rope_scaling") {
            if matches!(s.get("type").and_then(Value::as_str), Some("su" | "yarn")) {
                s.insert("type".into(), Value::from("longrope"));
            }
        }
        let mut cfg = common(
            raw,
            path,
            "phi3",
            Defaults {
                rms_norm_eps: 1e-5,
                max_positions: 4096,
                tie: false,
                kv_heads: None,
                head_dim: None,
                act: ("hidden_act", "silu"),
            },
        )?;
        cfg.layout = Layout::Fused;
        cfg.sliding_windows = vec![window; cfg.num_layers];
        Ok(cfg)
    }
}
