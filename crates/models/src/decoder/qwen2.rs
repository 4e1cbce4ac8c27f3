//! Qwen2 (Qwen 2 and 2.5): Llama's layers with biases on q, k and v; sliding windows on the
//! layers from `max_window_layers` on when `use_sliding_window` is set (`Qwen2Config`).

use super::{common, DecoderConfig, DecoderFamily, Defaults};
use scorekit_core::error::Result;
use serde_json::{Map, Value};
use std::path::Path;

/// The Qwen2 family.
pub struct Qwen2;

impl DecoderFamily for Qwen2 {
    fn model_types(&self) -> &'static [&'static str] {
        &["qwen2"]
    }

    fn config(&self, raw: Map<String, Value>, path: &Path) -> Result<DecoderConfig> {
        let mut cfg = common(
            raw,
            path,
            "qwen2",
            Defaults {
                rms_norm_eps: 1e-6,
                max_positions: 32768,
                tie: false,
                kv_heads: Some(32),
                head_dim: None,
                act: ("hidden_act", "silu"),
            },
        )?;
        cfg.qkv_bias = true;
        cfg.sliding_windows = qwen_windows(&cfg.raw, cfg.num_layers, path)?;
        Ok(cfg)
    }
}

/// Qwen's per-layer windows: `layer_types` when config.json lists them, else sliding from
/// `max_window_layers` on when `use_sliding_window` is set (window `sliding_window`, 4096).
pub fn qwen_windows(
    raw: &Map<String, Value>,
    layers: usize,
    path: &Path,
) -> Result<Vec<Option<usize>>> {
    let window = if super::opt_bool(raw, "use_sliding_window").unwrap_or(false) {
        Some(super::opt_usize(raw, "sliding_window", path)?.unwrap_or(4096))
    } else {
        None
    };
    let from = super::opt_usize(raw, "max_window_layers", path)?.unwrap_or(28);
    super::layer_windows(raw, layers, path, window, |i| window.is_some() && i >= from)
}
