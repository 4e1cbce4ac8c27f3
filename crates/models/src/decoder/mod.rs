//! Decoder-only causal language models (Llama, Qwen2, Qwen3, Mistral, Gemma 2, Gemma 3, Phi-3), as
//! `transformers` (4.57) computes them with eager attention: one file per family reads its
//! config.json with the family's defaults into one [`DecoderConfig`], and [`model::Decoder`] runs
//! the forward pass every family shares, switched by the config's fields (biases, q/k norms,
//! sandwich norms, soft-capping, fused projections, sliding windows).
//!
//! Written in candle rather than taken from candle-transformers: its Llama computes RoPE and
//! RMSNorm in the model's dtype and its Gemma 2 and Phi-3 differ from transformers in the masks
//! and rotary layout, while a judge's letters must equal transformers' to 1e-4.
//!
//! Adding a family: a file implementing [`DecoderFamily`] and one line in [`FAMILIES`].

pub mod gemma2;
pub mod gemma3;
pub mod llama;
pub mod mistral;
pub mod model;
pub mod phi3;
pub mod qwen2;
pub mod qwen3;
pub mod rope;

use crate::arch::{bad, usize_field};
use scorekit_core::error::Result;
use serde_json::{Map, Value};
use std::path::Path;

pub use rope::Rope;

/// The feed-forward activation of a decoder.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DecoderAct {
    /// SiLU (Llama, Qwen, Mistral, Phi-3).
    Silu,
    /// tanh-approximated GELU (`gelu_pytorch_tanh`, Gemma 2).
    GeluTanh,
    /// erf GELU (`gelu`).
    Gelu,
}

/// How a family lays out the weights of one layer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layout {
    /// Separate `q_proj`, `k_proj`, `v_proj` and `gate_proj`, `up_proj`.
    Split,
    /// Phi-3's fused `qkv_proj` and `gate_up_proj`.
    Fused,
}

/// A decoder's config.json, read with its family's `transformers` defaults.
#[derive(Debug, Clone)]
pub struct DecoderConfig {
    /// `model_type` as config.json gives it.
    pub model_type: String,
    /// Rows of the embedding table and of the head.
    pub vocab_size: usize,
    /// Width of the residual stream.
    pub hidden_size: usize,
    /// Width of the feed-forward layer.
    pub intermediate_size: usize,
    /// Decoder layers.
    pub num_layers: usize,
    /// Query heads.
    pub num_heads: usize,
    /// Key/value heads (grouped-query attention when fewer than the query heads).
    pub num_kv_heads: usize,
    /// Width of one head.
    pub head_dim: usize,
    /// RMSNorm's epsilon.
    pub rms_norm_eps: f64,
    /// The rotary embedding (frequencies, scaling, rotated width); of every layer but those
    /// [`DecoderConfig::local_rope`] covers ([`DecoderConfig::rope_of`]).
    pub rope: Rope,
    /// Gemma 3: the rotary embedding of the sliding-window layers (`rope_local_base_freq`, no
    /// scaling); `None`: every layer uses [`DecoderConfig::rope`].
    pub local_rope: Option<Rope>,
    /// Positions the model was trained for (the judge's context).
    pub max_positions: usize,
    /// Whether the head shares the embedding table.
    pub tie_word_embeddings: bool,
    /// Feed-forward activation.
    pub act: DecoderAct,
    /// Biases on q, k and v (Qwen2; Llama's `attention_bias`).
    pub qkv_bias: bool,
    /// Bias on the attention's output projection (Llama's `attention_bias`).
    pub o_bias: bool,
    /// Biases in the feed-forward layer (Llama's `mlp_bias`).
    pub mlp_bias: bool,
    /// RMSNorm on each head's queries and keys before RoPE (Qwen3).
    pub qk_norm: bool,
    /// Weight layout of a layer.
    pub layout: Layout,
    /// Gemma's RMSNorm: the weight applied as `1 + w`, in every norm (Gemma 3's q/k norms too).
    pub norm_plus_one: bool,
    /// Gemma 2's norms after attention and after the feed-forward layer too.
    pub sandwich_norms: bool,
    /// Gemma's embeddings scaled by sqrt(hidden_size).
    pub embed_scale: bool,
    /// Attention scores multiplied by this before the softmax.
    pub attn_scaling: f64,
    /// tanh soft-capping of attention scores (Gemma 2's `attn_logit_softcapping`).
    pub attn_softcap: Option<f64>,
    /// tanh soft-capping of the output logits (Gemma 2's `final_logit_softcapping`).
    pub final_softcap: Option<f64>,
    /// Per layer, the sliding window of its attention (`None`: full causal attention).
    pub sliding_windows: Vec<Option<usize>>,
    /// Where the language model's tensors are, tried in order: `model` (`model.embed_tokens`,
    /// `model.layers.N`, `model.norm`); a multimodal Gemma 3 checkpoint's text part is under
    /// `language_model.model` (the Hub's files) or `model.language_model` (saved by
    /// transformers ≥ 4.52), its vision tower ignored. An untied head is `lm_head` or, beside
    /// the first form, `language_model.lm_head`.
    pub weight_prefixes: Vec<String>,
    /// config.json with the defaults filled in (a multimodal config's `text_config`).
    pub raw: Map<String, Value>,
}

impl DecoderConfig {
    /// Where this checkpoint's tensors are, `has` saying which names the files hold: the first
    /// of [`DecoderConfig::weight_prefixes`] whose `embed_tokens.weight` is there (none: the
    /// first, so a missing tensor's error names it), and the untied head's name (`lm_head`, or
    /// `language_model.lm_head` beside `language_model.model` where there is no `lm_head`).
    /// Both engines read the names from here.
    pub fn weight_names(&self, has: &dyn Fn(&str) -> bool) -> (String, String) {
        let prefix = self
            .weight_prefixes
            .iter()
            .find(|p| has(&format!("{p}.embed_tokens.weight")))
            .unwrap_or(&self.weight_prefixes[0])
            .clone();
        let head = if prefix == "language_model.model" && !has("lm_head.weight") {
            "language_model.lm_head"
        } else {
            "lm_head"
        };
        (prefix, head.to_string())
    }

    /// The rotary embedding of layer `layer`: Gemma 3's local one on its sliding-window
    /// layers, [`DecoderConfig::rope`] everywhere else.
    pub fn rope_of(&self, layer: usize) -> &Rope {
        match (&self.local_rope, self.sliding_windows.get(layer)) {
            (Some(local), Some(Some(_))) => local,
            _ => &self.rope,
        }
    }
}

/// One family of decoder-only models.
pub trait DecoderFamily: Sync {
    /// `model_type` values this family reads.
    fn model_types(&self) -> &'static [&'static str];
    /// Parse config.json (`raw`, read from `path`) with the family's `transformers` defaults.
    fn config(&self, raw: Map<String, Value>, path: &Path) -> Result<DecoderConfig>;
}

/// Every supported decoder family; `model_type` in config.json picks one.
pub static FAMILIES: &[&dyn DecoderFamily] = &[
    &llama::Llama,
    &qwen2::Qwen2,
    &qwen3::Qwen3,
    &mistral::Mistral,
    &gemma2::Gemma2,
    &gemma3::Gemma3,
    &phi3::Phi3,
];

/// The family of `model_type`.
pub fn family(model_type: &str) -> Option<&'static dyn DecoderFamily> {
    FAMILIES
        .iter()
        .copied()
        .find(|f| f.model_types().contains(&model_type))
}

/// Every decoder `model_type` scorekit reads, for messages.
pub fn supported_model_types() -> String {
    FAMILIES
        .iter()
        .flat_map(|f| f.model_types().iter().copied())
        .collect::<Vec<_>>()
        .join(", ")
}

/// Whether config.json (`raw`) describes a decoder-only causal LM: a `model_type` of
/// [`FAMILIES`], or a `...ForCausalLM` class.
pub fn is_decoder_config(raw: &Value) -> bool {
    let model_type = raw.get("model_type").and_then(Value::as_str);
    let class = raw
        .get("architectures")
        .and_then(Value::as_array)
        .and_then(|a| a.first())
        .and_then(Value::as_str)
        .unwrap_or("");
    model_type.is_some_and(|t| family(t).is_some()) || class.ends_with("ForCausalLM")
}

/// Read config.json at `path` and parse it with its family's defaults. An unsupported
/// `model_type`, rope type or activation is an input error naming the file and the field.
pub fn read_decoder_config(path: &Path) -> Result<DecoderConfig> {
    let text = std::fs::read_to_string(path).map_err(|e| bad(path, format!("cannot read: {e}")))?;
    let raw: Value =
        serde_json::from_str(&text).map_err(|e| bad(path, format!("not valid JSON: {e}")))?;
    let Value::Object(raw) = raw else {
        return Err(bad(path, "config.json is not a JSON object"));
    };
    let model_type = raw
        .get("model_type")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    let fam = family(&model_type).ok_or_else(|| {
        bad(
            path,
            format!(
                "field \"model_type\": {model_type:?} is not a decoder family scorekit runs as a \
                 letter judge (supported: {})",
                supported_model_types()
            ),
        )
    })?;
    fam.config(raw, path)
}

/// What differs between the families that share the common reading ([`common`]).
#[derive(Debug, Clone, Copy)]
pub struct Defaults {
    /// `rms_norm_eps` when absent.
    pub rms_norm_eps: f64,
    /// `max_position_embeddings` when absent.
    pub max_positions: usize,
    /// `tie_word_embeddings` when absent.
    pub tie: bool,
    /// `num_key_value_heads` when absent (`None`: the query heads).
    pub kv_heads: Option<usize>,
    /// `head_dim` when absent (`None`: hidden size / heads).
    pub head_dim: Option<usize>,
    /// The activation field's name (`hidden_act`, Gemma 2's `hidden_activation`) and default.
    pub act: (&'static str, &'static str),
}

/// The reading every family shares: sizes, heads, norms, RoPE, head tying, activation. The
/// family then sets its own switches on the result.
pub fn common(
    mut raw: Map<String, Value>,
    path: &Path,
    model_type: &str,
    d: Defaults,
) -> Result<DecoderConfig> {
    let hidden_size = usize_field(&raw, "hidden_size", path)?;
    let num_heads = usize_field(&raw, "num_attention_heads", path)?;
    let num_kv_heads = opt_usize(&raw, "num_key_value_heads", path)?
        .or(d.kv_heads)
        .unwrap_or(num_heads);
    if num_heads == 0 || num_kv_heads == 0 || num_heads % num_kv_heads != 0 {
        return Err(bad(
            path,
            format!(
                "field \"num_key_value_heads\": {num_kv_heads} does not divide \
                 num_attention_heads {num_heads}"
            ),
        ));
    }
    let head_dim = match opt_usize(&raw, "head_dim", path)?.or(d.head_dim) {
        Some(h) => h,
        None => hidden_size / num_heads,
    };
    let rms_norm_eps = raw
        .get("rms_norm_eps")
        .and_then(Value::as_f64)
        .unwrap_or(d.rms_norm_eps);
    let max_positions =
        opt_usize(&raw, "max_position_embeddings", path)?.unwrap_or(d.max_positions);
    let tie_word_embeddings = raw
        .get("tie_word_embeddings")
        .and_then(Value::as_bool)
        .unwrap_or(d.tie);
    let act_name = match raw.get(d.act.0) {
        Some(Value::String(s)) => s.clone(),
        None | Some(Value::Null) => d.act.1.to_string(),
        Some(v) => return Err(bad(path, format!("field {:?}: {v} is not a name", d.act.0))),
    };
    let act = match act_name.as_str() {
        "silu" | "swish" => DecoderAct::Silu,
        "gelu_pytorch_tanh" | "gelu_new" | "gelu_fast" => DecoderAct::GeluTanh,
        "gelu" => DecoderAct::Gelu,
        other => {
            return Err(bad(
                path,
                format!(
                    "field {:?}: activation {other:?} is not supported (silu, gelu, \
                     gelu_pytorch_tanh)",
                    d.act.0
                ),
            ))
        }
    };
    let rope = Rope::read(&raw, path, head_dim)?;
    let num_layers = usize_field(&raw, "num_hidden_layers", path)?;
    let cfg = DecoderConfig {
        model_type: model_type.to_string(),
        vocab_size: usize_field(&raw, "vocab_size", path)?,
        hidden_size,
        intermediate_size: usize_field(&raw, "intermediate_size", path)?,
        num_layers,
        num_heads,
        num_kv_heads,
        head_dim,
        rms_norm_eps,
        rope,
        local_rope: None,
        max_positions,
        tie_word_embeddings,
        act,
        qkv_bias: false,
        o_bias: false,
        mlp_bias: false,
        qk_norm: false,
        layout: Layout::Split,
        norm_plus_one: false,
        sandwich_norms: false,
        embed_scale: false,
        attn_scaling: (head_dim as f64).powf(-0.5),
        attn_softcap: None,
        final_softcap: None,
        sliding_windows: vec![None; num_layers],
        weight_prefixes: vec!["model".to_string()],
        raw: std::mem::take(&mut raw),
    };
    Ok(cfg)
}

/// An optional integer field (absent or null: `None`; another type: an error naming it).
pub fn opt_usize(raw: &Map<String, Value>, field: &str, path: &Path) -> Result<Option<usize>> {
    match raw.get(field) {
        None | Some(Value::Null) => Ok(None),
        Some(v) => v
            .as_u64()
            .map(|v| Some(v as usize))
            .ok_or_else(|| bad(path, format!("field {field:?}: {v} is not an integer"))),
    }
}

/// An optional boolean field.
pub fn opt_bool(raw: &Map<String, Value>, field: &str) -> Option<bool> {
    raw.get(field).and_then(Value::as_bool)
}

/// An optional float field.
pub fn opt_f64(raw: &Map<String, Value>, field: &str) -> Option<f64> {
    raw.get(field).and_then(Value::as_f64)
}

/// Per-layer windows: config.json's `layer_types` (`sliding_attention` / `full_attention`)
/// where it lists them, else `sliding(i)` for layer `i`; sliding layers get `window`.
pub fn layer_windows(
    raw: &Map<String, Value>,
    layers: usize,
    path: &Path,
    window: Option<usize>,
    sliding: impl Fn(usize) -> bool,
) -> Result<Vec<Option<usize>>> {
    let Some(types) = raw.get("layer_types").filter(|v| !v.is_null()) else {
        return Ok((0..layers).map(|i| window.filter(|_| sliding(i))).collect());
    };
    let types = types
        .as_array()
        .filter(|a| a.len() == layers)
        .ok_or_else(|| {
            bad(
                path,
                format!("field \"layer_types\": not a list of {layers} layer types"),
            )
        })?;
    types
        .iter()
        .map(|t| match t.as_str() {
            Some("full_attention") => Ok(None),
            Some("sliding_attention") => window.map(Some).ok_or_else(|| {
                bad(
                    path,
                    "field \"layer_types\": a sliding_attention layer but no sliding_window",
                )
            }),
            _ => Err(bad(
                path,
                format!("field \"layer_types\": {t} is not supported (full_attention, sliding_attention)"),
            )),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(json: &str) -> Result<DecoderConfig> {
        let raw: Map<String, Value> = serde_json::from_str(json).unwrap();
        let model_type = raw["model_type"].as_str().unwrap().to_string();
        family(&model_type)
            .unwrap()
            .config(raw, Path::new("config.json"))
    }

    const DIMS: &str = r#""vocab_size": 100, "hidden_size": 64, "intermediate_size": 128,
        "num_hidden_layers": 4, "num_attention_heads": 4"#;

    #[test]
    fn each_family_fills_transformers_defaults() {
        let llama = config(&format!(r#"{{"model_type": "llama", {DIMS}}}"#)).unwrap();
        assert_eq!((llama.num_kv_heads, llama.head_dim), (4, 16));
        assert!(!llama.tie_word_embeddings && !llama.qkv_bias);
        assert_eq!(llama.sliding_windows, vec![None; 4]);
        // Mistral: 4096 when absent, none when null.
        let absent = config(&format!(
            r#"{{"model_type": "mistral", "num_key_value_heads": 2, {DIMS}}}"#
        ))
        .unwrap();
        assert_eq!(absent.sliding_windows, vec![Some(4096); 4]);
        let null = config(&format!(
            r#"{{"model_type": "mistral", "sliding_window": null, "num_key_value_heads": 1, {DIMS}}}"#
        ))
        .unwrap();
        assert_eq!(null.sliding_windows, vec![None; 4]);
        // Gemma 2: sliding on layers 0 and 2, head_dim 256, tied, capped, (1 + w) norms.
        let gemma = config(&format!(
            r#"{{"model_type": "gemma2", "num_key_value_heads": 2, {DIMS}}}"#
        ))
        .unwrap();
        assert_eq!(
            gemma.sliding_windows,
            vec![Some(4096), None, Some(4096), None]
        );
        assert_eq!(gemma.head_dim, 256);
        assert!(gemma.tie_word_embeddings && gemma.norm_plus_one && gemma.embed_scale);
        assert_eq!(
            (gemma.attn_softcap, gemma.final_softcap),
            (Some(50.0), Some(30.0))
        );
        assert_eq!(gemma.attn_scaling, 256f64.powf(-0.5));
        // Qwen2: biases; sliding only from max_window_layers on, and only when asked.
        let qwen = config(&format!(
            r#"{{"model_type": "qwen2", "num_key_value_heads": 2, "use_sliding_window": true,
                "sliding_window": 32, "max_window_layers": 2, {DIMS}}}"#
        ))
        .unwrap();
        assert!(qwen.qkv_bias && !qwen.o_bias);
        assert_eq!(qwen.sliding_windows, vec![None, None, Some(32), Some(32)]);
        let qwen3 = config(&format!(
            r#"{{"model_type": "qwen3", "num_key_value_heads": 2, {DIMS}}}"#
        ))
        .unwrap();
        assert!(qwen3.qk_norm && !qwen3.qkv_bias);
        assert_eq!(qwen3.head_dim, 128);
        let phi = config(&format!(r#"{{"model_type": "phi3", {DIMS}}}"#)).unwrap();
        assert_eq!(phi.layout, Layout::Fused);
        assert_eq!(phi.rms_norm_eps, 1e-5);
        assert!(std::ptr::eq(phi.rope_of(3), &phi.rope));
    }

    #[test]
    fn gemma3_reads_its_two_ropes_windows_and_multimodal_text_config() {
        let text = format!(
            r#"{{"model_type": "gemma3_text", "num_key_value_heads": 2, "head_dim": 16,
                "sliding_window": 512, "sliding_window_pattern": 2,
                "rope_scaling": {{"rope_type": "linear", "factor": 8.0}}, {DIMS}}}"#
        );
        let g = config(&text).unwrap();
        assert_eq!(g.sliding_windows, vec![Some(512), None, Some(512), None]);
        assert!(g.qk_norm && g.norm_plus_one && g.sandwich_norms && g.embed_scale);
        assert_eq!((g.attn_softcap, g.final_softcap), (None, None));
        // Global layers: rope_theta 1e6 (the default) scaled by 1/8; sliding layers: 10000.
        let local = g.rope_of(0);
        assert_eq!(local.inv_freq[1], 1.0 / 10000f32.powf(2.0 / 16.0));
        assert_eq!(
            g.rope_of(1).inv_freq[1],
            1.0 / 1e6f32.powf(2.0 / 16.0) / 8.0
        );
        assert_eq!(g.weight_prefixes, vec!["model".to_string()]);
        // The multimodal config's text part, its weights under language_model.
        let raw: Value = serde_json::from_str(&text).unwrap();
        let mm = serde_json::json!({"model_type": "gemma3", "text_config": raw,
            "vision_config": {"hidden_size": 8}});
        let m = config(&mm.to_string()).unwrap();
        assert_eq!(m.model_type, "gemma3");
        assert_eq!(m.weight_prefixes[0], "language_model.model");
        assert_eq!(m.sliding_windows, g.sliding_windows);
        // Default pattern 6: layers 5, 11, ... are global.
        let six = config(&format!(r#"{{"model_type": "gemma3_text", {DIMS}}}"#)).unwrap();
        assert_eq!(six.sliding_windows, vec![Some(4096); 4]);
        let e = config(&format!(
            r#"{{"model_type": "gemma3_text", "use_bidirectional_attention": true, {DIMS}}}"#
        ))
        .unwrap_err()
        .to_string();
        assert!(e.contains("use_bidirectional_attention"), "{e}");
    }

    #[test]
    fn bad_fields_are_named() {
        let e = config(&format!(
            r#"{{"model_type": "llama", "num_key_value_heads": 3, {DIMS}}}"#
        ))
        .unwrap_err()
        .to_string();
        assert!(e.contains("num_key_value_heads"), "{e}");
        let e = config(&format!(
            r#"{{"model_type": "gemma2", "layer_types": ["full_attention"], {DIMS}}}"#
        ))
        .unwrap_err()
        .to_string();
        assert!(e.contains("layer_types"), "{e}");
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("config.json");
        std::fs::write(&path, r#"{"model_type": "gpt_neox"}"#).unwrap();
        let e = read_decoder_config(&path).unwrap_err();
        assert_eq!(e.exit_code(), 2);
        assert!(e.to_string().contains("gpt_neox"));
        assert!(is_decoder_config(
            &serde_json::json!({"architectures": ["GPTNeoXForCausalLM"]})
        ));
        assert!(!is_decoder_config(&serde_json::json!({"model_type": "t5"})));
    }
}
