//! BERT, and the BERT tensor layout that RoBERTa, XLM-R and ELECTRA share: config.json with the
//! defaults of `transformers`, the tensor shapes a config implies, and candle's encoder layers
//! behind our own embeddings and attention mask.
//!
//! Why our own embeddings and mask: candle-transformers 0.11.1 `BertModel::forward` builds the
//! additive mask as `(1 - mask) * f32::MIN` cast to the model dtype; in f16/bf16 `f32::MIN` becomes
//! -inf and `0 * -inf` is NaN, so every output is NaN in half precision. Here the mask uses the
//! most negative *finite* value of the dtype, as transformers does (`torch.finfo(dtype).min`).
//! The embeddings (private in candle) are rebuilt with the same weights and arithmetic, plus what
//! the relatives need: a position offset (RoBERTa) and a projection (ELECTRA's embedding size).

use super::bert_layers::{additive_mask, BertLayers, Norm, Train};
use crate::arch::{
    bad, usize_field, Activation, Architecture, HeadKind, HeadLayout, ModelConfig, TrainableEncoder,
};
use crate::weights;
use candle_core::{Device, Module, Tensor};
use candle_nn::{embedding, Embedding, VarBuilder};
use candle_transformers::models::bert::{Config, HiddenAct, PositionEmbeddingType};
use scorekit_core::error::Result;
use scorekit_encoder::NativeLayout;
use scorekit_encoder::{Batch, Encoder, Hidden, Linear};
use serde_json::{Map, Value};
use std::path::Path;

/// BERT (`model_type: bert`).
pub struct Bert;

impl Architecture for Bert {
    fn model_types(&self) -> &'static [&'static str] {
        &["bert"]
    }

    fn config(&self, raw: Map<String, Value>, path: &Path) -> Result<ModelConfig> {
        let mut cfg = bert_layout_config(raw, path, "bert.", false)?;
        cfg.native = native_layout(&cfg, 0);
        Ok(cfg)
    }

    fn check_weights(&self, weights: &Path, cfg: &ModelConfig) -> Result<()> {
        check_bert_layout(weights, cfg, None)
    }

    fn load_candle(
        &self,
        vb: VarBuilder<'static>,
        cfg: &ModelConfig,
    ) -> candle_core::Result<Box<dyn Encoder>> {
        Ok(Box::new(CandleBert::load(vb, cfg, 0, None)?))
    }

    fn trainable(
        &self,
        vb: VarBuilder<'static>,
        cfg: &ModelConfig,
    ) -> Option<candle_core::Result<Box<dyn TrainableEncoder>>> {
        Some(CandleBert::load(vb, cfg, 0, None).map(|m| Box::new(m) as _))
    }

    fn head(&self, _kind: HeadKind) -> HeadLayout {
        // BertForMultipleChoice and ...ForSequenceClassification: pooler (dense + tanh) on
        // [CLS], then `classifier`.
        HeadLayout {
            first: "bert.pooler.dense",
            act: Activation::Tanh,
            second: "classifier",
        }
    }
}

/// The native layout of a BERT-layout config (BERT-layout tensors under `""` or the prefix).
pub fn native_layout(cfg: &ModelConfig, pos_offset: usize) -> Option<NativeLayout> {
    Some(NativeLayout {
        prefixes: vec![String::new(), cfg.prefix.to_string()],
        pos_offset,
    })
}

/// Parse a BERT-layout config.json with the defaults of `transformers`' `BertConfig`. `prefix`
/// is the encoder's tensor prefix in head models; `roberta_positions`: positions count from
/// `pad_token_id + 1` (and `pad_token_id` defaults to 1), as in RoBERTa.
pub fn bert_layout_config(
    mut raw: Map<String, Value>,
    path: &Path,
    prefix: &'static str,
    roberta_positions: bool,
) -> Result<ModelConfig> {
    let model_type = raw
        .get("model_type")
        .and_then(Value::as_str)
        .unwrap_or("bert")
        .to_string();
    let act = raw
        .get("hidden_act")
        .and_then(Value::as_str)
        .unwrap_or("gelu")
        .to_string();
    let hidden_act = match act.as_str() {
        "gelu" => HiddenAct::Gelu,
        "gelu_new" | "gelu_pytorch_tanh" | "gelu_fast" => HiddenAct::GeluApproximate,
        "relu" => HiddenAct::Relu,
        other => {
            return Err(bad(
                path,
                format!("hidden_act {other:?} is not supported (gelu, gelu_new, relu)"),
            ))
        }
    };
    if let Some(p) = raw.get("position_embedding_type").and_then(Value::as_str) {
        if p != "absolute" {
            return Err(bad(
                path,
                format!("position_embedding_type {p:?} is not supported (absolute)"),
            ));
        }
    }
    let f64_or =
        |raw: &Map<String, Value>, k: &str, d: f64| raw.get(k).and_then(Value::as_f64).unwrap_or(d);
    let usize_or = |raw: &Map<String, Value>, k: &str, d: usize| {
        raw.get(k).and_then(Value::as_u64).map_or(d, |v| v as usize)
    };
    let bert = Config {
        vocab_size: usize_field(&raw, "vocab_size", path)?,
        hidden_size: usize_field(&raw, "hidden_size", path)?,
        num_hidden_layers: usize_field(&raw, "num_hidden_layers", path)?,
        num_attention_heads: usize_field(&raw, "num_attention_heads", path)?,
        intermediate_size: usize_field(&raw, "intermediate_size", path)?,
        hidden_act,
        hidden_dropout_prob: f64_or(&raw, "hidden_dropout_prob", 0.1),
        max_position_embeddings: usize_or(&raw, "max_position_embeddings", 512),
        type_vocab_size: usize_or(&raw, "type_vocab_size", 2),
        initializer_range: f64_or(&raw, "initializer_range", 0.02),
        layer_norm_eps: f64_or(&raw, "layer_norm_eps", 1e-12),
        pad_token_id: usize_or(&raw, "pad_token_id", usize::from(roberta_positions)),
        position_embedding_type: PositionEmbeddingType::Absolute,
        use_cache: false,
        classifier_dropout: raw.get("classifier_dropout").and_then(Value::as_f64),
        model_type: Some(model_type.clone()),
    };
    if bert.num_attention_heads == 0 || !bert.hidden_size.is_multiple_of(bert.num_attention_heads) {
        return Err(bad(
            path,
            "hidden_size must be a multiple of num_attention_heads",
        ));
    }
    let pos_offset = position_offset(&bert, roberta_positions);
    crate::arch::default(&mut raw, "embedding_size", bert.hidden_size.into());
    Ok(ModelConfig {
        model_type,
        erf_gelu: hidden_act == HiddenAct::Gelu,
        native: None,
        pad_id: bert.pad_token_id as u32,
        // RoBERTa positions start after the padding index: those below are never used by tokens.
        max_tokens: bert.max_position_embeddings.saturating_sub(pos_offset),
        type_ids: bert.type_vocab_size > 1,
        prefix,
        bert,
        raw,
    })
}

/// Position of the first token: 0, or `pad_token_id + 1` with RoBERTa's positions.
pub fn position_offset(cfg: &Config, roberta_positions: bool) -> usize {
    if roberta_positions {
        cfg.pad_token_id + 1
    } else {
        0
    }
}

/// The embedding width of a BERT-layout config (ELECTRA's `embedding_size`, else hidden).
pub fn embedding_size(cfg: &ModelConfig) -> usize {
    cfg.raw
        .get("embedding_size")
        .and_then(Value::as_u64)
        .map_or(cfg.bert.hidden_size, |v| v as usize)
}

/// The tensor shapes a BERT-layout config implies (names without the prefix). `projection`
/// names the embedding projection where the embedding width differs from the hidden size.
pub fn bert_layout_shapes(
    cfg: &ModelConfig,
    projection: Option<&str>,
) -> Vec<(String, Vec<usize>)> {
    let c = &cfg.bert;
    let (h, e) = (c.hidden_size, embedding_size(cfg));
    let mut v = vec![
        (
            "embeddings.word_embeddings.weight".into(),
            vec![c.vocab_size, e],
        ),
        (
            "embeddings.position_embeddings.weight".into(),
            vec![c.max_position_embeddings, e],
        ),
        (
            "embeddings.token_type_embeddings.weight".into(),
            vec![c.type_vocab_size, e],
        ),
    ];
    if let Some(p) = projection.filter(|_| e != h) {
        v.push((format!("{p}.weight"), vec![h, e]));
    }
    for l in 0..c.num_hidden_layers {
        let p = format!("encoder.layer.{l}.");
        for m in [
            "attention.self.query",
            "attention.self.key",
            "attention.self.value",
            "attention.output.dense",
        ] {
            v.push((format!("{p}{m}.weight"), vec![h, h]));
        }
        v.push((
            format!("{p}intermediate.dense.weight"),
            vec![c.intermediate_size, h],
        ));
        v.push((
            format!("{p}output.dense.weight"),
            vec![h, c.intermediate_size],
        ));
    }
    v
}

/// Check a BERT-layout safetensors file against its config before loading: every encoder tensor
/// present with the shape the config implies (unprefixed or under the prefix), and no layer
/// beyond `num_hidden_layers` (a loader would silently ignore it). `.bin` files are checked by
/// loading. Errors name the file and tensor.
pub fn check_bert_layout(w: &Path, cfg: &ModelConfig, projection: Option<&str>) -> Result<()> {
    if w.extension().is_none_or(|e| e != "safetensors") {
        return Ok(());
    }
    let prefixes = ["", cfg.prefix];
    let tensors = weights::check_safetensors(w)?;
    weights::expect_shapes(w, &tensors, &prefixes, &bert_layout_shapes(cfg, projection))?;
    let extra = format!(
        "encoder.layer.{}.output.dense.weight",
        cfg.bert.num_hidden_layers
    );
    if weights::find_tensor(&tensors, &extra, &prefixes).is_some() {
        return Err(bad(
            w,
            format!(
                "has more layers than config.json's num_hidden_layers = {} (config.json does not match the weights)",
                cfg.bert.num_hidden_layers
            ),
        ));
    }
    Ok(())
}

/// The BERT-layout encoder in candle (our embeddings, f16-safe mask and [`BertLayers`]): BERT,
/// RoBERTa, XLM-R, ELECTRA. Scoring runs it as an [`Encoder`]; training runs
/// [`TrainableEncoder::forward_padded`] with a [`Train`] on the same definition, built from a
/// `VarMap`.
pub struct CandleBert {
    word: Embedding,
    position: Embedding,
    token_type: Embedding,
    norm: Norm,
    /// ELECTRA: embedding width → hidden size.
    project: Option<candle_nn::Linear>,
    encoder: BertLayers,
    /// Position of the first token.
    pos_offset: usize,
    pad_id: u32,
    /// The whole file's tensors, for heads.
    root: VarBuilder<'static>,
}

impl CandleBert {
    /// Load from `vb` (the whole weight file): the encoder's tensors unprefixed or under the
    /// config's prefix. `projection`: the name of ELECTRA's embedding projection, used when
    /// the embedding width differs from the hidden size.
    pub fn load(
        vb: VarBuilder<'static>,
        cfg: &ModelConfig,
        pos_offset: usize,
        projection: Option<&str>,
    ) -> candle_core::Result<Self> {
        let c = &cfg.bert;
        let root = vb.clone();
        let prefix = cfg.prefix.trim_end_matches('.');
        let vb = if !vb.contains_tensor("embeddings.word_embeddings.weight")
            && vb.contains_tensor(&format!("{prefix}.embeddings.word_embeddings.weight"))
        {
            vb.pp(prefix)
        } else {
            vb
        };
        let e = embedding_size(cfg);
        let emb = vb.pp("embeddings");
        let project = match projection {
            Some(p) if e != c.hidden_size => {
                let name = p.strip_prefix(cfg.prefix).unwrap_or(p);
                Some(candle_nn::linear(e, c.hidden_size, vb.pp(name))?)
            }
            _ => None,
        };
        Ok(CandleBert {
            word: embedding(c.vocab_size, e, emb.pp("word_embeddings"))?,
            position: embedding(c.max_position_embeddings, e, emb.pp("position_embeddings"))?,
            token_type: embedding(c.type_vocab_size, e, emb.pp("token_type_embeddings"))?,
            norm: Norm::load(e, c.layer_norm_eps, emb.pp("LayerNorm"))?,
            project,
            encoder: BertLayers::load(vb.pp("encoder"), c)?,
            pos_offset,
            pad_id: cfg.pad_id,
            root,
        })
    }

    /// [`TrainableEncoder::forward_padded`]; `padded`: whether some sequence is padded (else,
    /// when scoring, no mask is added).
    fn run(
        &self,
        input_ids: &Tensor,
        token_type_ids: &Tensor,
        attention_mask: &Tensor,
        padded: bool,
        mut train: Option<&mut Train>,
    ) -> candle_core::Result<Tensor> {
        let (_, seq_len) = input_ids.dims2()?;
        let start = self.pos_offset as u32;
        let positions = Tensor::arange(start, start + seq_len as u32, input_ids.device())?;
        let x = (self.word.forward(input_ids)? + self.token_type.forward(token_type_ids)?)?
            .broadcast_add(&self.position.forward(&positions)?)?;
        let mut x = self.norm.forward(&x, train.is_some())?;
        if let Some(t) = train.as_deref_mut() {
            x = t.dropout(&x, t.hidden)?;
        }
        if let Some(p) = &self.project {
            x = Module::forward(p, &x)?;
        }
        let mask = if padded || train.is_some() {
            Some(additive_mask(attention_mask, x.dtype())?)
        } else {
            None
        };
        self.encoder.forward(&x, mask.as_ref(), train)
    }
}

impl TrainableEncoder for CandleBert {
    fn forward_padded(
        &self,
        input_ids: &Tensor,
        token_type_ids: &Tensor,
        attention_mask: &Tensor,
        train: Option<&mut Train>,
    ) -> candle_core::Result<Tensor> {
        self.run(input_ids, token_type_ids, attention_mask, true, train)
    }
}

impl Encoder for CandleBert {
    fn forward(&self, batch: &Batch) -> candle_core::Result<Hidden> {
        let p = batch.padded(self.pad_id, self.root.device())?;
        let padded = batch.has_padding();
        let x = self.run(
            &p.input_ids,
            &p.token_type_ids,
            &p.attention_mask,
            padded,
            None,
        )?;
        Ok(Hidden::Padded {
            x,
            mask: p.attention_mask,
        })
    }

    fn is_padded(&self) -> bool {
        true
    }

    fn name(&self) -> &'static str {
        "candle BERT layers"
    }

    fn linear(&self, name: &str, n: usize, k: usize) -> candle_core::Result<Box<dyn Linear>> {
        Ok(Box::new(candle_nn::linear(k, n, self.root.pp(name))?))
    }

    fn device(&self) -> &Device {
        self.root.device()
    }
}

/// FLOPs of one BERT forward over `b` rows of padded length `s` (the work PyTorch does):
/// per layer and token 2·(4h² + 2h·i) for the products with weights, 4·s·h for attention.
pub fn forward_flops(layers: usize, h: usize, inter: usize, b: usize, s: usize) -> f64 {
    let t = (b * s) as f64;
    let (h, i, s) = (h as f64, inter as f64, s as f64);
    layers as f64 * t * (2.0 * (4.0 * h * h + 2.0 * h * i) + 4.0 * s * h)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn config_defaults_and_refusals() {
        let p = Path::new("config.json");
        let raw: Map<String, Value> = serde_json::from_str(
            r#"{"vocab_size": 10, "hidden_size": 8, "num_hidden_layers": 1,
                "num_attention_heads": 2, "intermediate_size": 16}"#,
        )
        .unwrap();
        let cfg = Bert.config(raw.clone(), p).unwrap();
        assert_eq!(cfg.bert.max_position_embeddings, 512);
        assert_eq!(cfg.max_tokens, 512);
        assert!(cfg.erf_gelu && cfg.type_ids && cfg.native.is_some());
        let mut odd = raw.clone();
        odd.insert("num_attention_heads".into(), 3.into());
        assert!(Bert.config(odd, p).is_err());
        let mut act = raw;
        act.insert("hidden_act".into(), "swish".into());
        let e = Bert.config(act, p).unwrap_err().to_string();
        assert!(e.contains("config.json") && e.contains("swish"), "{e}");
    }
}
