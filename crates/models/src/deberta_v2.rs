//! DeBERTa-v2 and v3 (`model_type: deberta-v2`): disentangled relative attention, on scorekit's
//! own port of the encoder (`deberta_v2_layers.rs`), which scores and trains. Both heads
//! (`...ForMultipleChoice`, `...ForSequenceClassification`) are the context pooler
//! (`pooler.dense` + GELU on the first token) then `classifier`.

use super::bert::bert_layout_config;
use super::bert_layers::Train;
use super::deberta_v2_layers::{DebertaSpec, DebertaV2Encoder};
use crate::arch::{
    bad, Activation, Architecture, HeadDropouts, HeadKind, HeadLayout, ModelConfig,
    TrainableEncoder,
};
use candle_core::{DType, Device, Tensor};
use candle_nn::VarBuilder;
use scorekit_core::error::Result;
use scorekit_encoder::{Batch, Encoder, Hidden, Linear};
use serde_json::{Map, Value};
use std::path::Path;

/// DeBERTa-v2/v3.
pub struct DebertaV2;

impl Architecture for DebertaV2 {
    fn model_types(&self) -> &'static [&'static str] {
        &["deberta-v2"]
    }

    fn config(&self, mut raw: Map<String, Value>, path: &Path) -> Result<ModelConfig> {
        let hidden = crate::arch::usize_field(&raw, "hidden_size", path)?;
        // `transformers` writes these only when they differ from its defaults.
        crate::arch::default(&mut raw, "pooler_hidden_size", hidden.into());
        crate::arch::default(&mut raw, "pooler_dropout", 0.0.into());
        crate::arch::default(&mut raw, "pooler_hidden_act", "gelu".into());
        crate::arch::default(&mut raw, "relative_attention", false.into());
        crate::arch::default(&mut raw, "max_relative_positions", (-1).into());
        crate::arch::default(&mut raw, "position_biased_input", true.into());
        crate::arch::default(&mut raw, "pos_att_type", Value::Array(vec![]));
        crate::arch::default(&mut raw, "type_vocab_size", 0.into());
        if raw.get("pooler_hidden_act").and_then(Value::as_str) != Some("gelu") {
            return Err(bad(path, "pooler_hidden_act: only \"gelu\" is supported"));
        }
        if raw.get("pooler_hidden_size").and_then(Value::as_u64) != Some(hidden as u64) {
            return Err(bad(
                path,
                "pooler_hidden_size: only the hidden size is supported",
            ));
        }
        // The dimensions every encoder has; DeBERTa's own reading stays in `raw`.
        let mut dims = raw.clone();
        dims.remove("position_embedding_type");
        let mut cfg = bert_layout_config(dims, path, "deberta.", false)?;
        cfg.raw = raw;
        cfg.type_ids = cfg.bert.type_vocab_size > 1;
        // Checked here so that loading cannot fail on it later.
        deberta_spec(&cfg, path)?;
        Ok(cfg)
    }

    fn candle_dtype(&self, _dtype: DType) -> DType {
        // DeBERTa scores in f32: its half-precision arithmetic has not been compared with
        // PyTorch's. (Training builds its variables in the dtype it is given.)
        DType::F32
    }

    fn load_candle(
        &self,
        vb: VarBuilder<'static>,
        cfg: &ModelConfig,
    ) -> candle_core::Result<Box<dyn Encoder>> {
        Ok(Box::new(CandleDeberta::load(vb, cfg)?))
    }

    fn trainable(
        &self,
        vb: VarBuilder<'static>,
        cfg: &ModelConfig,
    ) -> Option<candle_core::Result<Box<dyn TrainableEncoder>>> {
        Some(CandleDeberta::load(vb, cfg).map(|m| Box::new(m) as _))
    }

    fn head(&self, _kind: HeadKind) -> HeadLayout {
        HeadLayout {
            first: "pooler.dense",
            act: Activation::Gelu,
            second: "classifier",
        }
    }

    fn legacy_tokenizer(&self, dir: &Path) -> Option<Result<tokenizers::Tokenizer>> {
        // The Hub's microsoft/deberta-v3-* and deberta-v2-* ship spm.model, no tokenizer.json.
        dir.join("spm.model")
            .exists()
            .then(|| crate::spm::deberta_v2_tokenizer(dir))
    }

    fn head_dropouts(&self, cfg: &ModelConfig) -> HeadDropouts {
        // `ContextPooler` drops the first token with `pooler_dropout`; the model then drops
        // the pooled vector with `cls_dropout`, else `hidden_dropout_prob`.
        let f = |k: &str| cfg.raw.get(k).and_then(Value::as_f64);
        HeadDropouts {
            pooler: f("pooler_dropout").unwrap_or(0.0),
            classifier: f("cls_dropout").unwrap_or(cfg.bert.hidden_dropout_prob),
        }
    }
}

/// The layers' reading of a DeBERTa-v2 config (defaults filled in by [`DebertaV2::config`]);
/// what scorekit does not implement is refused naming the field.
fn deberta_spec(cfg: &ModelConfig, path: &Path) -> Result<DebertaSpec> {
    let raw = &cfg.raw;
    let c = &cfg.bert;
    let int = |k: &str, d: i64| raw.get(k).and_then(Value::as_i64).unwrap_or(d);
    let flag = |k: &str, d: bool| raw.get(k).and_then(Value::as_bool).unwrap_or(d);
    if int("conv_kernel_size", 0) > 0 {
        return Err(bad(
            path,
            "conv_kernel_size: DeBERTa-v2's convolution layer (DeBERTa-v2-xlarge/xxlarge) is not supported (DeBERTa-v3 has none)",
        ));
    }
    if let Some(a) = raw.get("attention_head_size").and_then(Value::as_u64) {
        if a as usize * c.num_attention_heads != c.hidden_size {
            return Err(bad(
                path,
                "attention_head_size: only hidden_size / num_attention_heads is supported",
            ));
        }
    }
    if raw.get("z_steps").and_then(Value::as_u64).unwrap_or(0) > 1 {
        return Err(bad(path, "z_steps: more than 1 is not supported"));
    }
    // `pos_att_type`: a list, or a string joined by `|` (older configs); `transformers` reads
    // only c2p and p2c from it.
    let kinds: Vec<String> = match raw.get("pos_att_type") {
        Some(Value::String(s)) => s.split('|').map(|k| k.trim().to_lowercase()).collect(),
        Some(Value::Array(v)) => v
            .iter()
            .map(|k| {
                k.as_str()
                    .map(|k| k.trim().to_lowercase())
                    .ok_or_else(|| bad(path, "pos_att_type: a list of strings expected"))
            })
            .collect::<Result<_>>()?,
        Some(Value::Null) | None => Vec::new(),
        Some(_) => return Err(bad(path, "pos_att_type: a list of strings expected")),
    };
    let norm_rel_ebd = raw
        .get("norm_rel_ebd")
        .and_then(Value::as_str)
        .unwrap_or("none")
        .to_lowercase()
        .split('|')
        .any(|k| k.trim() == "layer_norm");
    Ok(DebertaSpec {
        vocab_size: c.vocab_size,
        hidden_size: c.hidden_size,
        embedding_size: super::bert::embedding_size(cfg),
        layers: c.num_hidden_layers,
        heads: c.num_attention_heads,
        intermediate_size: c.intermediate_size,
        act: c.hidden_act,
        eps: c.layer_norm_eps,
        max_position_embeddings: c.max_position_embeddings,
        position_biased_input: flag("position_biased_input", true),
        type_vocab_size: c.type_vocab_size,
        relative_attention: flag("relative_attention", false),
        max_relative_positions: int("max_relative_positions", -1),
        position_buckets: int("position_buckets", -1),
        share_att_key: flag("share_att_key", false),
        c2p: kinds.iter().any(|k| k == "c2p"),
        p2c: kinds.iter().any(|k| k == "p2c"),
        norm_rel_ebd,
    })
}

/// The DeBERTa-v2 encoder (padded), for scoring ([`Encoder`]) and training
/// ([`TrainableEncoder`]).
struct CandleDeberta {
    encoder: DebertaV2Encoder,
    pad_id: u32,
    /// The whole file's tensors, for heads.
    root: VarBuilder<'static>,
}

impl CandleDeberta {
    /// Load from `vb` (the whole weight file): the encoder's tensors unprefixed or under
    /// `deberta.`.
    fn load(vb: VarBuilder<'static>, cfg: &ModelConfig) -> candle_core::Result<Self> {
        let spec = deberta_spec(cfg, Path::new("config.json"))
            .map_err(|e| candle_core::Error::Msg(e.to_string()))?;
        let inner = if !vb.contains_tensor("embeddings.word_embeddings.weight")
            && vb.contains_tensor("deberta.embeddings.word_embeddings.weight")
        {
            vb.pp("deberta")
        } else {
            vb.clone()
        };
        Ok(CandleDeberta {
            encoder: DebertaV2Encoder::load(inner, &spec)?,
            pad_id: cfg.pad_id,
            root: vb,
        })
    }
}

impl TrainableEncoder for CandleDeberta {
    fn forward_padded(
        &self,
        input_ids: &Tensor,
        token_type_ids: &Tensor,
        attention_mask: &Tensor,
        train: Option<&mut Train>,
    ) -> candle_core::Result<Tensor> {
        self.encoder
            .forward(input_ids, token_type_ids, attention_mask, train)
    }
}

impl Encoder for CandleDeberta {
    fn forward(&self, batch: &Batch) -> candle_core::Result<Hidden> {
        let p = batch.padded(self.pad_id, self.root.device())?;
        let x = self
            .encoder
            .forward(&p.input_ids, &p.token_type_ids, &p.attention_mask, None)?;
        Ok(Hidden::Padded {
            x,
            mask: p.attention_mask,
        })
    }

    fn is_padded(&self) -> bool {
        true
    }

    fn name(&self) -> &'static str {
        "candle DeBERTa-v2 layers"
    }

    fn linear(&self, name: &str, n: usize, k: usize) -> candle_core::Result<Box<dyn Linear>> {
        Ok(Box::new(candle_nn::linear(k, n, self.root.pp(name))?))
    }

    fn device(&self) -> &Device {
        self.root.device()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw(extra: &str) -> Map<String, Value> {
        serde_json::from_str(&format!(
            r#"{{"model_type": "deberta-v2", "vocab_size": 10, "hidden_size": 8,
                "num_hidden_layers": 1, "num_attention_heads": 2, "intermediate_size": 16,
                "max_position_embeddings": 64{extra}}}"#
        ))
        .unwrap()
    }

    #[test]
    fn config_defaults_follow_transformers() {
        let p = Path::new("config.json");
        let cfg = DebertaV2.config(raw(""), p).unwrap();
        let s = deberta_spec(&cfg, p).unwrap();
        // DebertaV2Config's defaults: absolute positions, no relative attention, no types.
        assert!(s.position_biased_input && !s.relative_attention && !s.share_att_key);
        assert!(!s.c2p && !s.p2c && !s.norm_rel_ebd);
        assert_eq!((s.type_vocab_size, s.att_span()), (0, 64));
        assert!(!cfg.type_ids);
        // DeBERTa-v3's reading, with the older `|`-joined pos_att_type.
        let v3 = raw(
            r#", "relative_attention": true, "position_buckets": 16, "share_att_key": true,
               "pos_att_type": "p2c|c2p", "norm_rel_ebd": "layer_norm", "position_biased_input": false"#,
        );
        let s = deberta_spec(&DebertaV2.config(v3, p).unwrap(), p).unwrap();
        assert!(s.relative_attention && s.share_att_key && s.c2p && s.p2c && s.norm_rel_ebd);
        assert!(!s.position_biased_input);
        assert_eq!(s.att_span(), 16);
    }

    #[test]
    fn what_is_not_implemented_is_refused_naming_the_field() {
        let p = Path::new("config.json");
        for (extra, field) in [
            (r#", "conv_kernel_size": 3"#, "conv_kernel_size"),
            (r#", "attention_head_size": 3"#, "attention_head_size"),
            (r#", "pooler_hidden_act": "tanh""#, "pooler_hidden_act"),
            (r#", "pos_att_type": 3"#, "pos_att_type"),
        ] {
            let e = DebertaV2.config(raw(extra), p).unwrap_err().to_string();
            assert!(
                e.contains("config.json") && e.contains(field),
                "{field}: {e}"
            );
        }
        // DeBERTa trains, with the context pooler's dropouts.
        let mut r = raw(r#", "pooler_dropout": 0.2, "cls_dropout": 0.3"#);
        r.insert("hidden_dropout_prob".into(), 0.1.into());
        let d = DebertaV2.head_dropouts(&DebertaV2.config(r, p).unwrap());
        assert_eq!((d.pooler, d.classifier), (0.2, 0.3));
    }
}
