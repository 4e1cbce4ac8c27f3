//! Sentence embeddings exactly as sentence-transformers computes them for BERT models:
//! encoder → pooling (CLS, mean, max or mean/√len) → optional Dense layers (Tanh or Identity) →
//! optional L2 normalisation, read from `modules.json` and the module configs. LaBSE is
//! BERT → CLS → Dense 768→768 tanh → Normalize, truncated at 256 tokens.

use crate::error::{Error, InputError, Result};
use crate::runtime::batching::plan_batches;
use crate::runtime::hub::ResolvedModel;
use crate::runtime::ops::BertEncoder;
use crate::runtime::tokenize::{pad_batch, TextTokenizer, Tokens};
use crate::runtime::weights;
use anyhow::Context;
use candle_core::{DType, Device, Tensor, D};
use candle_nn::VarBuilder;
use candle_transformers::models::bert::Config as BertConfig;
use serde_json::Value;
use std::path::{Path, PathBuf};

/// How token vectors become one sentence vector.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pooling {
    /// The first token (`[CLS]`).
    Cls,
    /// Mean over real tokens.
    Mean,
    /// Element-wise max over real tokens.
    Max,
    /// Sum over real tokens divided by √length.
    MeanSqrtLen,
}

/// A sentence-transformers `Dense` module.
struct Dense {
    weight: Tensor,
    bias: Option<Tensor>,
    tanh: bool,
}

/// A loaded sentence embedder.
pub struct Embedder {
    model: BertEncoder,
    tokenizer: TextTokenizer,
    pooling: Pooling,
    dense: Vec<Dense>,
    normalize: bool,
    lowercase: bool,
    dim: usize,
    device: Device,
    dtype: DType,
}

fn bad(path: &Path, msg: impl Into<String>) -> Error {
    Error::Input(InputError::file(path, msg.into()))
}

fn read_json(path: &Path) -> Result<Value> {
    let text = std::fs::read_to_string(path).map_err(|e| bad(path, format!("cannot read: {e}")))?;
    serde_json::from_str(&text).map_err(|e| bad(path, format!("not valid JSON: {e}")))
}

fn read_json_opt(path: &Path) -> Result<Option<Value>> {
    if path.is_file() {
        read_json(path).map(Some)
    } else {
        Ok(None)
    }
}

/// Parse a BERT `config.json` into candle's config, refusing what candle's BERT cannot run.
pub fn bert_config(path: &Path) -> Result<BertConfig> {
    let mut v = read_json(path)?;
    let model_type = v["model_type"].as_str().unwrap_or("bert").to_string();
    if model_type != "bert" {
        return Err(bad(
            path,
            format!("model_type {model_type:?} is not supported by the sentence embedder (supported: bert)"),
        ));
    }
    let act = v["hidden_act"].as_str().unwrap_or("gelu").to_string();
    let mapped = match act.as_str() {
        "gelu" => "gelu",
        "gelu_new" | "gelu_pytorch_tanh" | "gelu_fast" => "geluapproximate",
        "relu" => "relu",
        other => {
            return Err(bad(
                path,
                format!("hidden_act {other:?} is not supported (gelu, gelu_new, relu)"),
            ))
        }
    };
    if let Some(p) = v["position_embedding_type"].as_str() {
        if p != "absolute" {
            return Err(bad(
                path,
                format!("position_embedding_type {p:?} is not supported (absolute)"),
            ));
        }
    }
    let obj = v
        .as_object_mut()
        .ok_or_else(|| bad(path, "config.json is not a JSON object"))?;
    obj.insert("hidden_act".into(), Value::from(mapped));
    obj.entry("pad_token_id").or_insert(Value::from(0));
    obj.entry("hidden_dropout_prob").or_insert(Value::from(0.1));
    obj.entry("initializer_range").or_insert(Value::from(0.02));
    obj.entry("layer_norm_eps").or_insert(Value::from(1e-12));
    obj.entry("type_vocab_size").or_insert(Value::from(2));
    obj.entry("max_position_embeddings")
        .or_insert(Value::from(512));
    obj.insert("model_type".into(), Value::from("bert"));
    if obj.get("pad_token_id").is_some_and(Value::is_null) {
        obj.insert("pad_token_id".into(), Value::from(0));
    }
    let cfg: BertConfig =
        serde_json::from_value(v).map_err(|e| bad(path, format!("not a BERT config: {e}")))?;
    if cfg.num_attention_heads == 0 || !cfg.hidden_size.is_multiple_of(cfg.num_attention_heads) {
        return Err(bad(
            path,
            "hidden_size must be a multiple of num_attention_heads",
        ));
    }
    Ok(cfg)
}

/// The tensor shapes a BERT config implies, to check weights before loading them.
pub fn bert_expected_shapes(cfg: &BertConfig) -> Vec<(String, Vec<usize>)> {
    let h = cfg.hidden_size;
    let mut v = vec![
        (
            "embeddings.word_embeddings.weight".into(),
            vec![cfg.vocab_size, h],
        ),
        (
            "embeddings.position_embeddings.weight".into(),
            vec![cfg.max_position_embeddings, h],
        ),
        (
            "embeddings.token_type_embeddings.weight".into(),
            vec![cfg.type_vocab_size, h],
        ),
    ];
    for l in 0..cfg.num_hidden_layers {
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
            vec![cfg.intermediate_size, h],
        ));
        v.push((
            format!("{p}output.dense.weight"),
            vec![h, cfg.intermediate_size],
        ));
    }
    // One layer more than the config says would be silently ignored by the loader: catch it.
    v
}

/// Check a BERT-layout safetensors file against its config before loading: every encoder tensor
/// present with the shape the config implies (under one of `prefixes`), and no layer beyond
/// `num_hidden_layers` (a loader would silently ignore it). Errors name the file and tensor.
pub fn check_bert_weights(w: &Path, cfg: &BertConfig, prefixes: &[&str]) -> Result<()> {
    let tensors = weights::check_safetensors(w)?;
    weights::expect_shapes(w, &tensors, prefixes, &bert_expected_shapes(cfg))?;
    let extra = format!(
        "encoder.layer.{}.output.dense.weight",
        cfg.num_hidden_layers
    );
    if weights::find_tensor(&tensors, &extra, prefixes).is_some() {
        return Err(bad(
            w,
            format!(
                "has more layers than config.json's num_hidden_layers = {} (config.json does not match the weights)",
                cfg.num_hidden_layers
            ),
        ));
    }
    Ok(())
}

fn load_bert(
    model: &ResolvedModel,
    cfg: &BertConfig,
    device: &Device,
    dtype: DType,
) -> Result<BertEncoder> {
    let w = model.weights_file()?;
    let vb = if w.extension().is_some_and(|e| e == "safetensors") {
        check_bert_weights(&w, cfg, &["", "bert."])?;
        // Safety: the file is memory-mapped read-only; a concurrent writer is the caller's problem.
        unsafe { VarBuilder::from_mmaped_safetensors(&[&w], dtype, device) }
            .map_err(|e| bad(&w, format!("cannot load: {e}")))?
    } else {
        VarBuilder::from_pth(&w, dtype, device).map_err(|e| bad(&w, format!("cannot load: {e}")))?
    };
    BertEncoder::load(&w, vb, cfg, device, dtype)
        .map_err(|e| bad(&w, format!("does not fit config.json: {e}")))
}

fn parse_pooling(path: &Path, v: &Value) -> Result<Pooling> {
    if let Some(mode) = v["pooling_mode"].as_str() {
        return match mode {
            "cls" => Ok(Pooling::Cls),
            "mean" => Ok(Pooling::Mean),
            "max" => Ok(Pooling::Max),
            "mean_sqrt_len_tokens" => Ok(Pooling::MeanSqrtLen),
            other => Err(bad(
                path,
                format!("pooling_mode {other:?} is not supported"),
            )),
        };
    }
    let on = |k: &str| v[k].as_bool().unwrap_or(false);
    let modes: Vec<Pooling> = [
        ("pooling_mode_cls_token", Pooling::Cls),
        ("pooling_mode_mean_tokens", Pooling::Mean),
        ("pooling_mode_max_tokens", Pooling::Max),
        ("pooling_mode_mean_sqrt_len_tokens", Pooling::MeanSqrtLen),
    ]
    .into_iter()
    .filter(|(k, _)| on(k))
    .map(|(_, p)| p)
    .collect();
    for k in ["pooling_mode_weightedmean_tokens", "pooling_mode_lasttoken"] {
        if on(k) {
            return Err(bad(
                path,
                format!("{k} is not supported (cls, mean, max, mean_sqrt_len)"),
            ));
        }
    }
    match modes.as_slice() {
        [p] => Ok(*p),
        [] => Err(bad(path, "no pooling mode is switched on")),
        _ => Err(bad(
            path,
            "several pooling modes at once (concatenated) are not supported",
        )),
    }
}

fn load_dense(dir: &Path, device: &Device, dtype: DType) -> Result<Dense> {
    let cfg_path = dir.join("config.json");
    let cfg = read_json(&cfg_path)?;
    let act = cfg["activation_function"]
        .as_str()
        .unwrap_or("torch.nn.modules.linear.Identity");
    let tanh = match act {
        "torch.nn.modules.activation.Tanh" => true,
        "torch.nn.modules.linear.Identity" => false,
        other => {
            return Err(bad(
                &cfg_path,
                format!("activation_function {other:?} is not supported (Tanh, Identity)"),
            ))
        }
    };
    let (inf, outf) = match (cfg["in_features"].as_u64(), cfg["out_features"].as_u64()) {
        (Some(i), Some(o)) => (i as usize, o as usize),
        _ => return Err(bad(&cfg_path, "in_features and out_features are required")),
    };
    let has_bias = cfg["bias"].as_bool().unwrap_or(true);
    let st = dir.join("model.safetensors");
    let pth = dir.join("pytorch_model.bin");
    let (w, vb) = if st.is_file() {
        let tensors = weights::check_safetensors(&st)?;
        let mut want = vec![("linear.weight".to_string(), vec![outf, inf])];
        if has_bias {
            want.push(("linear.bias".to_string(), vec![outf]));
        }
        weights::expect_shapes(&st, &tensors, &[""], &want)?;
        // Safety: read-only memory map of a file we just checked.
        let vb = unsafe { VarBuilder::from_mmaped_safetensors(&[&st], dtype, device) }
            .map_err(|e| bad(&st, format!("cannot load: {e}")))?;
        (st, vb)
    } else if pth.is_file() {
        let vb = VarBuilder::from_pth(&pth, dtype, device)
            .map_err(|e| bad(&pth, format!("cannot load: {e}")))?;
        (pth, vb)
    } else {
        return Err(bad(
            &st,
            "missing: the Dense module needs model.safetensors or pytorch_model.bin",
        ));
    };
    let weight = vb
        .get((outf, inf), "linear.weight")
        .map_err(|e| bad(&w, format!("linear.weight: {e}")))?;
    let bias = if has_bias {
        Some(
            vb.get(outf, "linear.bias")
                .map_err(|e| bad(&w, format!("linear.bias: {e}")))?,
        )
    } else {
        None
    };
    Ok(Dense { weight, bias, tanh })
}

/// The encoder (CLS-only when pooling is CLS) and the Dense modules, checked to chain;
/// returns them with the output size.
fn load_weights(
    model: &ResolvedModel,
    cfg: &BertConfig,
    device: &Device,
    dtype: DType,
    pooling: Pooling,
    dense_dirs: &[PathBuf],
) -> Result<(BertEncoder, Vec<Dense>, usize)> {
    let mut bert = load_bert(model, cfg, device, dtype)?;
    bert.set_cls_only(pooling == Pooling::Cls);
    let mut dim = cfg.hidden_size;
    let mut dense = Vec::new();
    for d in dense_dirs {
        let layer = load_dense(d, device, dtype)?;
        let (out, inp) = layer.weight.dims2().map_err(|e| anyhow::anyhow!(e))?;
        if inp != dim {
            return Err(bad(
                &d.join("config.json"),
                format!("in_features {inp} does not follow the previous size {dim}"),
            ));
        }
        dim = out;
        dense.push(layer);
    }
    Ok((bert, dense, dim))
}

impl Embedder {
    /// Load a sentence-transformers BERT model (or a plain BERT, then mean pooling) from a
    /// resolved folder. Every file is checked before any text is embedded; errors name the file.
    /// `max_length` overrides the model's own limit (`max_seq_length`), capped at its positions.
    pub fn load(
        model: &ResolvedModel,
        device: &Device,
        dtype: DType,
        max_length: Option<usize>,
    ) -> Result<Self> {
        let cfg = bert_config(&model.file("config.json"))?;
        let modules_path = model.file("modules.json");
        let mut pooling = Pooling::Mean;
        let mut dense_dirs = Vec::new();
        let mut normalize = false;
        let mut seen_pooling = false;
        if let Some(modules) = read_json_opt(&modules_path)? {
            let list = modules
                .as_array()
                .ok_or_else(|| bad(&modules_path, "expected a JSON array of modules"))?;
            for (i, m) in list.iter().enumerate() {
                let ty = m["type"].as_str().unwrap_or("");
                let sub = m["path"].as_str().unwrap_or("");
                let kind = ty.rsplit('.').next().unwrap_or(ty);
                match (i, kind) {
                    (0, "Transformer") => {}
                    (0, _) => return Err(bad(&modules_path, format!("module 0 is {ty:?}; only a Transformer encoder first is supported"))),
                    (_, "Pooling") if !seen_pooling => {
                        let p = model.file(sub).join("config.json");
                        pooling = parse_pooling(&p, &read_json(&p)?)?;
                        seen_pooling = true;
                    }
                    (_, "Dense") if seen_pooling && !normalize => dense_dirs.push(model.file(sub)),
                    (_, "Normalize") => normalize = true,
                    _ => {
                        return Err(bad(
                            &modules_path,
                            format!("module {i} ({ty:?}) is not supported here (Transformer → Pooling → Dense* → Normalize)"),
                        ))
                    }
                }
            }
            if !seen_pooling {
                return Err(bad(&modules_path, "no Pooling module"));
            }
        }
        let st_cfg = read_json_opt(&model.file("sentence_bert_config.json"))?;
        let lowercase = st_cfg
            .as_ref()
            .and_then(|v| v["do_lower_case"].as_bool())
            .unwrap_or(false);
        let own_max = st_cfg
            .as_ref()
            .and_then(|v| v["max_seq_length"].as_u64())
            .map(|n| n as usize)
            .unwrap_or(cfg.max_position_embeddings);
        let max_len = max_length
            .unwrap_or(own_max)
            .min(cfg.max_position_embeddings)
            .max(2);
        // The tokenizer (LaBSE: a 13.6 MB tokenizer.json, ~0.7 s to parse) loads on its own
        // thread while the weights are read and packed: load to first batch is the longer of
        // the two, not their sum.
        let tokenizer_path = model.file("tokenizer.json");
        let pad_id = cfg.pad_token_id as u32;
        let (tokenizer, weights) = std::thread::scope(|scope| {
            let tok = scope.spawn(|| TextTokenizer::load(&tokenizer_path, max_len, Some(pad_id)));
            let weights = load_weights(model, &cfg, device, dtype, pooling, &dense_dirs);
            let tokenizer = tok.join().unwrap_or_else(|p| std::panic::resume_unwind(p));
            (tokenizer, weights)
        });
        let tokenizer = tokenizer?;
        let vocab = tokenizer.inner().get_vocab_size(true);
        if vocab > cfg.vocab_size {
            return Err(bad(
                &tokenizer_path,
                format!(
                    "has {vocab} tokens but config.json's vocab_size is {}",
                    cfg.vocab_size
                ),
            ));
        }
        let (bert, dense, dim) = weights?;
        Ok(Embedder {
            model: bert,
            tokenizer,
            pooling,
            dense,
            normalize,
            lowercase,
            dim,
            device: device.clone(),
            dtype,
        })
    }

    /// Length of the embeddings.
    pub fn dim(&self) -> usize {
        self.dim
    }

    /// Which implementation runs the encoder (for reports).
    pub fn engine(&self) -> &'static str {
        self.model.engine()
    }

    /// The pooling read from the model.
    pub fn pooling(&self) -> Pooling {
        self.pooling
    }

    /// Whether outputs are L2-normalised (a Normalize module).
    pub fn normalizes(&self) -> bool {
        self.normalize
    }

    /// The tokenizer, with the model's truncation.
    pub fn tokenizer(&self) -> &TextTokenizer {
        &self.tokenizer
    }

    /// Tokenise texts as the model sees them (lower-cased first when the model says so).
    pub fn tokenize(&self, texts: &[String]) -> Result<Vec<Tokens>> {
        if self.lowercase {
            let lower: Vec<String> = texts.iter().map(|t| t.to_lowercase()).collect();
            self.tokenizer.encode_all(&lower)
        } else {
            self.tokenizer.encode_all(texts)
        }
    }

    /// Embed texts: tokenise once, batch by length under `batch_tokens` (padding counted), run,
    /// and return one vector per text in input order. `progress` advances by texts.
    pub fn embed(
        &self,
        texts: &[String],
        batch_tokens: usize,
        progress: &indicatif::ProgressBar,
    ) -> Result<Vec<Vec<f32>>> {
        let tokens = self.tokenize(texts)?;
        let lengths: Vec<usize> = tokens.iter().map(Tokens::len).collect();
        let mut out = vec![Vec::new(); texts.len()];
        for batch in plan_batches(&lengths, batch_tokens) {
            let rows: Vec<&Tokens> = batch.indices.iter().map(|&i| &tokens[i]).collect();
            let vecs = self
                .embed_tokens(&rows)
                .context("embedding a batch failed")?;
            for (i, v) in batch.indices.iter().zip(vecs) {
                out[*i] = v;
            }
            progress.inc(batch.indices.len() as u64);
        }
        Ok(out)
    }

    /// Run one padded batch through the encoder and the head.
    pub fn embed_tokens(&self, rows: &[&Tokens]) -> Result<Vec<Vec<f32>>> {
        let batch = pad_batch(rows, self.tokenizer.pad_id(), &self.device)?;
        let run = || -> candle_core::Result<Vec<Vec<f32>>> {
            let hidden = self.model.forward(
                &batch.input_ids,
                &batch.token_type_ids,
                Some(&batch.attention_mask),
            )?;
            let mask = batch.attention_mask.to_dtype(self.dtype)?.unsqueeze(2)?;
            let mut x = match self.pooling {
                Pooling::Cls => hidden.narrow(1, 0, 1)?.squeeze(1)?,
                Pooling::Mean | Pooling::MeanSqrtLen => {
                    let sum = hidden.broadcast_mul(&mask)?.sum(1)?;
                    let n = mask.sum(1)?.clamp(1e-9, f64::MAX)?;
                    let n = if self.pooling == Pooling::MeanSqrtLen {
                        n.sqrt()?
                    } else {
                        n
                    };
                    sum.broadcast_div(&n)?
                }
                Pooling::Max => {
                    // Padding gets a very negative value so it never wins, as sentence-transformers does.
                    let neg = ((mask.ones_like()? - &mask)? * -1e9)?;
                    hidden.broadcast_add(&neg)?.max(1)?
                }
            };
            for d in &self.dense {
                x = x.broadcast_matmul(&d.weight.t()?)?;
                if let Some(b) = &d.bias {
                    x = x.broadcast_add(b)?;
                }
                if d.tanh {
                    x = x.tanh()?;
                }
            }
            let mut x = x.to_dtype(DType::F32)?;
            if self.normalize {
                let norm = x
                    .sqr()?
                    .sum_keepdim(D::Minus1)?
                    .sqrt()?
                    .clamp(1e-12, f64::MAX)?;
                x = x.broadcast_div(&norm)?;
            }
            x.to_vec2::<f32>()
        };
        let rows = run().map_err(|e| anyhow::anyhow!(e))?;
        // Never hand NaN/inf embeddings to a scorer (they would serialise as null and poison
        // every cosine): a model that overflows in this dtype is a failure, said loudly.
        if rows.iter().flatten().any(|v| !v.is_finite()) {
            return Err(anyhow::anyhow!(
                "the model produced non-finite embeddings in {:?}; rerun with --dtype f32",
                self.dtype
            )
            .into());
        }
        Ok(rows)
    }
}

/// Cosine similarity; 0 when either vector is zero.
pub fn cosine(a: &[f32], b: &[f32]) -> f32 {
    let (mut dot, mut na, mut nb) = (0f64, 0f64, 0f64);
    for (x, y) in a.iter().zip(b) {
        dot += *x as f64 * *y as f64;
        na += *x as f64 * *x as f64;
        nb += *y as f64 * *y as f64;
    }
    if na == 0.0 || nb == 0.0 {
        0.0
    } else {
        (dot / (na.sqrt() * nb.sqrt())) as f32
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cosine_basics() {
        assert!((cosine(&[1.0, 0.0], &[2.0, 0.0]) - 1.0).abs() < 1e-7);
        assert!(cosine(&[1.0, 0.0], &[0.0, 3.0]).abs() < 1e-7);
        assert!((cosine(&[1.0, 1.0], &[-1.0, -1.0]) + 1.0).abs() < 1e-7);
        assert_eq!(cosine(&[0.0, 0.0], &[1.0, 1.0]), 0.0);
    }

    #[test]
    fn pooling_config_forms() {
        let p = Path::new("1_Pooling/config.json");
        let labse = serde_json::json!({"word_embedding_dimension": 768, "pooling_mode_cls_token": true,
            "pooling_mode_mean_tokens": false, "pooling_mode_max_tokens": false, "pooling_mode_mean_sqrt_len_tokens": false});
        assert_eq!(parse_pooling(p, &labse).unwrap(), Pooling::Cls);
        assert_eq!(
            parse_pooling(p, &serde_json::json!({"pooling_mode": "mean"})).unwrap(),
            Pooling::Mean
        );
        let two =
            serde_json::json!({"pooling_mode_cls_token": true, "pooling_mode_mean_tokens": true});
        assert!(parse_pooling(p, &two)
            .unwrap_err()
            .to_string()
            .contains("1_Pooling/config.json"));
    }
}
