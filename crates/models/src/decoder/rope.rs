//! Rotary position embeddings as `transformers`' `ROPE_INIT_FUNCTIONS` compute them: the
//! default frequencies, `linear` scaling, Llama 3's `llama3` scaling and Phi-3.5 / Phi-4-mini's
//! `longrope` (`rope_scaling` in config.json), on the first `partial_rotary_factor` of each head.
//! Other rope types (dynamic, yarn) are refused by name.
//!
//! `longrope` is the one type whose frequencies depend on the input: transformers 4.57's
//! `longrope_frequency_update` takes `seq_len = max(position_ids) + 1` of the forward pass and
//! uses `long_factor` when it exceeds `original_max_position_embeddings` (config.json's top-level
//! field, else `max_position_embeddings`), `short_factor` otherwise. A batch's positions are
//! those of its longest row (left-padded with `generate`'s position ids, or right-padded here),
//! so the longest row's length chooses for the whole batch: [`Rope::frequencies`].

use crate::arch::bad;
use crate::decoder::opt_f64;
use candle_core::{DType, Device, Tensor};
use scorekit_core::error::Result;
use serde_json::{Map, Value};
use std::path::Path;

/// A model's rotary embedding.
#[derive(Debug, Clone, PartialEq)]
pub struct Rope {
    /// The inverse frequencies, one per pair of rotated dimensions (f32, as transformers keeps
    /// them); `longrope`'s short ones.
    pub inv_freq: Vec<f32>,
    /// Dimensions of each head that rotate (the first ones; the rest pass through).
    pub rotary_dim: usize,
    /// The rope type, as config.json names it (`default`, `linear`, `llama3`, `longrope`).
    pub rope_type: String,
    /// `longrope`: the inverse frequencies of inputs longer than `original_max_positions`.
    pub long_inv_freq: Option<Vec<f32>>,
    /// `longrope`: the context the model was pretrained with; longer inputs take the long
    /// factors.
    pub original_max_positions: usize,
    /// What cos and sin are multiplied by (`longrope`'s attention factor; 1 otherwise).
    pub attention_scaling: f32,
}

impl Rope {
    /// Read `rope_theta`, `partial_rotary_factor` and `rope_scaling` from config.json.
    pub fn read(raw: &Map<String, Value>, path: &Path, head_dim: usize) -> Result<Rope> {
        let base = opt_f64(raw, "rope_theta").unwrap_or(10000.0);
        let partial = opt_f64(raw, "partial_rotary_factor").unwrap_or(1.0);
        let dim = (head_dim as f64 * partial) as usize;
        // `base ** (arange(0, dim, 2).float() / dim)`, in f32 as torch computes it.
        let powers: Vec<f32> = (0..dim)
            .step_by(2)
            .map(|i| (base as f32).powf(i as f32 / dim as f32))
            .collect();
        let mut inv_freq: Vec<f32> = powers.iter().map(|p| 1.0 / p).collect();
        let max_positions = super::opt_usize(raw, "max_position_embeddings", path)?;
        let (mut long_inv_freq, mut original_max_positions, mut attention_scaling) =
            (None, max_positions.unwrap_or(usize::MAX), 1.0f32);
        let scaling = match raw.get("rope_scaling") {
            None | Some(Value::Null) => None,
            Some(Value::Object(m)) => Some(m),
            Some(v) => {
                return Err(bad(
                    path,
                    format!("field \"rope_scaling\": {v} is not an object"),
                ))
            }
        };
        let rope_type = scaling
            .and_then(|m| m.get("rope_type").or_else(|| m.get("type")))
            .and_then(Value::as_str)
            .unwrap_or("default")
            .to_string();
        let num = |field: &str| -> Result<f64> {
            scaling
                .and_then(|m| m.get(field))
                .and_then(Value::as_f64)
                .ok_or_else(|| {
                    bad(
                        path,
                        format!(
                            "field \"rope_scaling.{field}\": missing for rope type {rope_type:?}"
                        ),
                    )
                })
        };
        match rope_type.as_str() {
            "default" => {}
            "linear" => {
                let factor = num("factor")? as f32;
                inv_freq.iter_mut().for_each(|f| *f /= factor);
            }
            "llama3" => {
                llama3(
                    &mut inv_freq,
                    num("factor")?,
                    num("low_freq_factor")?,
                    num("high_freq_factor")?,
                    num("original_max_position_embeddings")?,
                );
            }
            "longrope" => {
                let m = scaling.expect("a rope type other than default comes from rope_scaling");
                let factors = |field: &str| -> Result<Vec<f32>> {
                    let list = m.get(field).and_then(Value::as_array).ok_or_else(|| {
                        bad(
                            path,
                            format!("field \"rope_scaling.{field}\": missing for rope type \"longrope\""),
                        )
                    })?;
                    let f: Option<Vec<f32>> =
                        list.iter().map(|v| v.as_f64().map(|x| x as f32)).collect();
                    f.filter(|f| f.len() == powers.len()).ok_or_else(|| {
                        bad(
                            path,
                            format!(
                                "field \"rope_scaling.{field}\": not a list of {} numbers \
                                 (half the rotated dimensions)",
                                powers.len()
                            ),
                        )
                    })
                };
                // `1.0 / (ext_factors * base**inv_freq_shape)`.
                let scaled = |ext: &[f32]| -> Vec<f32> {
                    ext.iter()
                        .zip(&powers)
                        .map(|(e, p)| 1.0 / (e * p))
                        .collect()
                };
                inv_freq = scaled(&factors("short_factor")?);
                long_inv_freq = Some(scaled(&factors("long_factor")?));
                let max = max_positions.ok_or_else(|| {
                    bad(
                        path,
                        "field \"max_position_embeddings\": missing for rope type \"longrope\"",
                    )
                })? as f64;
                // transformers reads the top-level field (a family may default it), not
                // rope_scaling's; with it, `factor` is the ratio of the two contexts.
                let (original, factor) =
                    match super::opt_usize(raw, "original_max_position_embeddings", path)? {
                        Some(o) => (o, max / o as f64),
                        None => (max as usize, num("factor")?),
                    };
                original_max_positions = original;
                attention_scaling = match m.get("attention_factor").and_then(Value::as_f64) {
                    Some(a) => a as f32,
                    None if factor <= 1.0 => 1.0,
                    None => (1.0 + factor.ln() / (original as f64).ln()).sqrt() as f32,
                };
            }
            other => {
                return Err(bad(
                    path,
                    format!(
                        "field \"rope_scaling.rope_type\": {other:?} is not supported (default, \
                         linear, llama3, longrope)"
                    ),
                ))
            }
        }
        Ok(Rope {
            inv_freq,
            rotary_dim: dim,
            rope_type,
            long_inv_freq,
            original_max_positions,
            attention_scaling,
        })
    }

    /// The plain rotary embedding of `base` over `rotary_dim` dimensions (Gemma 3's sliding
    /// layers: `rope_local_base_freq`, no scaling).
    pub fn plain(base: f64, rotary_dim: usize) -> Rope {
        Rope {
            inv_freq: (0..rotary_dim)
                .step_by(2)
                .map(|i| 1.0 / (base as f32).powf(i as f32 / rotary_dim as f32))
                .collect(),
            rotary_dim,
            rope_type: "default".into(),
            long_inv_freq: None,
            original_max_positions: usize::MAX,
            attention_scaling: 1.0,
        }
    }

    /// The inverse frequencies for a batch whose longest row has `len` tokens, and the factor
    /// cos and sin are multiplied by (1 but for `longrope`). Only `longrope` depends on `len`:
    /// its long factors when `len` exceeds `original_max_position_embeddings`, as
    /// transformers' `max(position_ids) + 1` chooses for the batch (module comment).
    pub fn frequencies(&self, len: usize) -> (Vec<f32>, f32) {
        let freqs = match &self.long_inv_freq {
            Some(long) if len > self.original_max_positions => long,
            _ => &self.inv_freq,
        };
        (freqs.clone(), self.attention_scaling)
    }

    /// `(cos, sin)` of positions `0..len`, `[len, rotary_dim]` in `dtype`: computed in f32
    /// (times the attention scaling) and cast, as transformers' rotary embedding does.
    pub fn cos_sin(
        &self,
        len: usize,
        dtype: DType,
        device: &Device,
    ) -> candle_core::Result<(Tensor, Tensor)> {
        let (inv_freq, scaling) = self.frequencies(len);
        let half = inv_freq.len();
        let mut cos = Vec::with_capacity(len * half * 2);
        let mut sin = Vec::with_capacity(len * half * 2);
        for p in 0..len {
            // `emb = cat(freqs, freqs)`; `emb.cos() * attention_scaling`.
            for _ in 0..2 {
                for f in &inv_freq {
                    let a = p as f32 * f;
                    cos.push(a.cos() * scaling);
                    sin.push(a.sin() * scaling);
                }
            }
        }
        let cos = Tensor::from_vec(cos, (len, half * 2), device)?.to_dtype(dtype)?;
        let sin = Tensor::from_vec(sin, (len, half * 2), device)?.to_dtype(dtype)?;
        Ok((cos, sin))
    }
}

/// `_compute_llama3_parameters`: long wavelengths divided by `factor`, short ones kept, the band
/// between smoothly interpolated (computed in f32 as torch does on f32 `inv_freq`).
fn llama3(inv_freq: &mut [f32], factor: f64, low: f64, high: f64, old_context: f64) {
    let (factor, low, high, old) = (factor as f32, low as f32, high as f32, old_context as f32);
    let low_wavelen = old / low;
    let high_wavelen = old / high;
    for f in inv_freq.iter_mut() {
        let wavelen = 2.0 * std::f32::consts::PI / *f;
        let scaled = if wavelen > low_wavelen {
            *f / factor
        } else {
            *f
        };
        let smooth = (old / wavelen - low) / (high - low);
        let smoothed = (1.0 - smooth) * scaled / factor + smooth * scaled;
        // `~(wavelen < high) * ~(wavelen > low)`; wavelengths are finite and positive.
        let medium = wavelen >= high_wavelen && wavelen <= low_wavelen;
        *f = if medium { smoothed } else { scaled };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rope(json: &str) -> Result<Rope> {
        let raw: Map<String, Value> = serde_json::from_str(json).unwrap();
        Rope::read(&raw, Path::new("config.json"), 64)
    }

    #[test]
    fn llama3_scaling_divides_long_wavelengths_only() {
        let plain = rope(r#"{"rope_theta": 500000.0}"#).unwrap();
        let scaled = rope(
            r#"{"rope_theta": 500000.0, "rope_scaling": {"rope_type": "llama3", "factor": 8.0,
                "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                "original_max_position_embeddings": 8192}}"#,
        )
        .unwrap();
        // The highest frequency (wavelength 2π) is untouched; the lowest is divided by 8.
        assert_eq!(plain.inv_freq[0], scaled.inv_freq[0]);
        let last = plain.inv_freq.len() - 1;
        assert!((plain.inv_freq[last] / 8.0 - scaled.inv_freq[last]).abs() < 1e-12);
        assert_eq!(scaled.rope_type, "llama3");
    }

    #[test]
    fn unknown_rope_types_are_refused_naming_the_field() {
        let e = rope(r#"{"rope_scaling": {"rope_type": "yarn", "factor": 4.0}}"#).unwrap_err();
        assert_eq!(e.exit_code(), 2);
        let e = e.to_string();
        assert!(
            e.contains("config.json") && e.contains("rope_scaling.rope_type") && e.contains("yarn"),
            "{e}"
        );
    }

    #[test]
    fn longrope_takes_the_long_factors_past_the_original_context() {
        let short: Vec<f64> = (0..32).map(|i| 1.0 + i as f64 * 0.01).collect();
        let long: Vec<f64> = (0..32).map(|i| 2.0 + i as f64).collect();
        let json = serde_json::json!({
            "rope_theta": 10000.0, "max_position_embeddings": 131072,
            "original_max_position_embeddings": 4096,
            "rope_scaling": {"type": "longrope", "short_factor": short, "long_factor": long},
        });
        let r = rope(&json.to_string()).unwrap();
        let plain = rope(r#"{"rope_theta": 10000.0}"#).unwrap();
        let (at, scale) = r.frequencies(4096);
        let (past, scale_past) = r.frequencies(4097);
        // Phi-3.5's attention factor: sqrt(1 + ln(32) / ln(4096)).
        let want = (1.0 + 32f64.ln() / 4096f64.ln()).sqrt() as f32;
        assert_eq!((scale, scale_past), (want, want));
        assert_eq!(at[0], plain.inv_freq[0] / 1.0);
        assert!((at[31] - plain.inv_freq[31] / 1.31).abs() < 1e-9);
        assert!((past[31] - plain.inv_freq[31] / 33.0).abs() < 1e-9);
        assert_eq!(plain.frequencies(1 << 20), (plain.inv_freq.clone(), 1.0));
        // A factor list of the wrong length is named.
        let e = rope(
            r#"{"max_position_embeddings": 8, "rope_scaling": {"type": "longrope",
                "short_factor": [1.0], "long_factor": [1.0]}}"#,
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("rope_scaling.short_factor"), "{e}");
    }

    #[test]
    fn partial_rotary_factor_rotates_the_first_dimensions() {
        let r = rope(r#"{"partial_rotary_factor": 0.75}"#).unwrap();
        assert_eq!(r.rotary_dim, 48);
        assert_eq!(r.inv_freq.len(), 24);
    }
}
