//! Sentence embeddings exactly as sentence-transformers computes them: an encoder
//! (`encoder::load_encoder`, any architecture of `models/`) → pooling (CLS, mean, max or
//! mean/√len) → optional Dense layers (Tanh or Identity) → optional L2 normalisation
//! (`models::heads::SentenceHead`), read from `modules.json` and the module configs. LaBSE is
//! BERT → CLS → Dense 768→768 tanh → Normalize, truncated at 256 tokens.

use crate::engine::{load_encoder, EngineOptions};
use crate::hub::ResolvedModel;
use crate::tokenize::TextTokenizer;
use anyhow::Context;
use candle_core::{DType, Device};
use scorekit_core::error::{Error, InputError, Result, Setting};
use scorekit_encoder::Tokens;
use scorekit_encoder::{run_batched, Encoder};
use scorekit_models::heads::{Dense, Head, SentenceHead};
use scorekit_models::weights;
use scorekit_models::{self as models, Architecture, ModelConfig};
use serde_json::Value;
use std::path::{Path, PathBuf};

pub use scorekit_models::heads::Pooling;

/// Files an embedder needs; sentence-transformers module files come along when the repo has them.
pub const EMBEDDER_FILES: &[&str] = &[
    "config.json",
    "tokenizer.json",
    "model.safetensors|pytorch_model.bin",
];

/// A loaded sentence embedder: tokenizer, encoder and sentence head.
pub struct Embedder {
    encoder: Box<dyn Encoder>,
    head: SentenceHead,
    tokenizer: TextTokenizer,
    lowercase: bool,
    dim: usize,
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
        // Memory-mapped (`models::var_builder` says why that is sound); the header was checked
        // just above, candle checks the rest.
        let vb = models::var_builder(&st, dtype, device)?;
        (st, vb)
    } else if pth.is_file() {
        let vb = models::var_builder(&pth, dtype, device)?;
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

/// The encoder (first tokens only when pooling is CLS) and the Dense modules, checked to chain;
/// returns them with the output size.
#[allow(clippy::too_many_arguments)]
fn load_weights(
    model: &ResolvedModel,
    arch: &dyn Architecture,
    cfg: &ModelConfig,
    device: &Device,
    dtype: DType,
    engine: &EngineOptions,
    pooling: Pooling,
    dense_dirs: &[PathBuf],
) -> Result<(Box<dyn Encoder>, Vec<Dense>, usize)> {
    let w = model.weights_file()?;
    arch.check_weights(&w, cfg)?;
    let mut encoder = load_encoder(arch, cfg, &w, device, dtype, engine)?;
    if pooling == Pooling::Cls {
        encoder.first_token_only();
    }
    encoder.release_unused();
    let mut dim = cfg.bert.hidden_size;
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
    Ok((encoder, dense, dim))
}

impl Embedder {
    /// Load a sentence-transformers model (or a plain encoder, then mean pooling) from a
    /// resolved folder, on the engine `engine` chooses. Every file is checked before any text is
    /// embedded; errors name the file. `max_length` overrides the model's own limit
    /// (`max_seq_length`), capped at its positions.
    pub fn load(
        model: &ResolvedModel,
        device: &Device,
        dtype: DType,
        max_length: Option<usize>,
        engine: &EngineOptions,
    ) -> Result<Self> {
        // sentence-transformers' BERT folders often omit model_type.
        let (arch, cfg) = models::read_config(&model.file("config.json"), "bert")?;
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
            .unwrap_or(cfg.max_tokens);
        let max_len = max_length.unwrap_or(own_max).min(cfg.max_tokens).max(2);
        // The tokenizer (LaBSE: a 13.6 MB tokenizer.json, ~0.7 s to parse) loads on its own
        // thread while the weights are read and packed: load to first batch is the longer of
        // the two, not their sum.
        let tokenizer_path = model.file("tokenizer.json");
        let pad_id = cfg.pad_id;
        let (tokenizer, weights) = std::thread::scope(|scope| {
            let tok = scope.spawn(|| TextTokenizer::load(&tokenizer_path, max_len, Some(pad_id)));
            let weights = load_weights(
                model,
                arch,
                &cfg,
                device,
                dtype,
                engine,
                pooling,
                &dense_dirs,
            );
            let tokenizer = tok.join().unwrap_or_else(|p| std::panic::resume_unwind(p));
            (tokenizer, weights)
        });
        let tokenizer = tokenizer?;
        let vocab = tokenizer.inner().get_vocab_size(true);
        if vocab > cfg.bert.vocab_size {
            return Err(bad(
                &tokenizer_path,
                format!(
                    "has {vocab} tokens but config.json's vocab_size is {}",
                    cfg.bert.vocab_size
                ),
            ));
        }
        let (encoder, dense, dim) = weights?;
        Ok(Embedder {
            encoder,
            head: SentenceHead {
                pooling,
                dense,
                normalize,
            },
            tokenizer,
            lowercase,
            dim,
            dtype,
        })
    }

    /// Length of the embeddings.
    pub fn dim(&self) -> usize {
        self.dim
    }

    /// Which implementation runs the encoder (for reports).
    pub fn engine(&self) -> &'static str {
        self.encoder.name()
    }

    /// The pooling read from the model.
    pub fn pooling(&self) -> Pooling {
        self.head.pooling
    }

    /// Whether outputs are L2-normalised (a Normalize module).
    pub fn normalizes(&self) -> bool {
        self.head.normalize
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
        run_batched(&tokens, batch_tokens, progress, |batch| {
            self.embed_batch(batch)
                .context("embedding a batch failed")
                .map_err(Into::into)
        })
    }

    /// Embed texts already tokenised by [`Embedder::tokenize`], batched as [`Embedder::embed`]
    /// does: the model's work alone, for timing it apart from tokenisation (`scorekit bench`).
    pub fn embed_tokens(
        &self,
        tokens: &[Tokens],
        batch_tokens: usize,
        progress: &indicatif::ProgressBar,
    ) -> Result<Vec<Vec<f32>>> {
        run_batched(tokens, batch_tokens, progress, |batch| {
            self.embed_batch(batch)
                .context("embedding a batch failed")
                .map_err(Into::into)
        })
    }

    fn embed_batch(&self, batch: &scorekit_encoder::Batch) -> Result<Vec<Vec<f32>>> {
        let run = || -> candle_core::Result<Vec<Vec<f32>>> {
            let hidden = self.encoder.forward(batch)?;
            self.head.forward(&hidden)?.to_vec2::<f32>()
        };
        let rows = run().map_err(|e| anyhow::anyhow!(e))?;
        // Never hand NaN/inf embeddings to a scorer (they would serialise as null and poison
        // every cosine): a model that overflows in this dtype is a failure, said loudly.
        if rows.iter().flatten().any(|v| !v.is_finite()) {
            return Err(Error::setting(
                Setting::Dtype,
                Some(format!("{:?}", self.dtype).to_lowercase()),
                "the model produced non-finite embeddings in this float type; rerun in f32",
            ));
        }
        Ok(rows)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
