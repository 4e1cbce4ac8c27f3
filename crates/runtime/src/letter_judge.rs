//! The letter judge: an encoder-decoder model (T5, Flan-T5) given a multiple-choice prompt and
//! answering with text, from which the caller reads the letter (`suites::letter`). It runs
//! `generate(input_ids, max_length=20)` greedily, as the Possible Stories authors' run_llm.py
//! ran google/flan-t5-xxl, on padded batches of prompts with the answers each prompt gets alone.
//!
//! The answer text is decoded as transformers 4.25's slow `T5Tokenizer.decode` (what the
//! authors ran): special tokens kept, SentencePiece pieces joined between them, a space before a
//! special token that follows text, and `clean_up_tokenization` applied. The fast tokenizer
//! would put a space after `<pad>` too; the letters, and so the picks, are the same either way.

use crate::engine::{seq2seq_engine, EngineOptions, Seq2SeqEngine};
use anyhow::anyhow;
use candle_core::{DType, Device, Tensor};
use indicatif::ProgressBar;
use scorekit_core::error::{Error, InputError, Result};
use scorekit_encoder::{run_batched, Tokens};
use scorekit_models::shards::WeightFiles;
use scorekit_models::shards::{var_builder_of, weight_files};
use scorekit_models::spm;
use scorekit_models::t5::{Encoded, T5Config, T5};
use serde_json::Value;
use std::collections::HashMap;
use std::path::Path;
use tokenizers::Tokenizer;

/// Tokens in all that `generate` may return, the decoder start token included (transformers'
/// default `max_length`, which run_llm.py kept).
pub const MAX_LENGTH: usize = 20;

/// Whether the model folder `dir` holds an encoder-decoder model the letter judge runs:
/// config.json's `model_type` is a seq2seq one, or its class is `...ForConditionalGeneration`.
pub fn is_letter_judge(dir: &Path) -> bool {
    let Ok(text) = std::fs::read_to_string(dir.join("config.json")) else {
        return false;
    };
    let Ok(config) = serde_json::from_str::<Value>(&text) else {
        return false;
    };
    let model_type = config.get("model_type").and_then(Value::as_str);
    let class = config
        .get("architectures")
        .and_then(Value::as_array)
        .and_then(|a| a.first())
        .and_then(Value::as_str)
        .unwrap_or("");
    model_type.is_some_and(|t| scorekit_models::SEQ2SEQ_MODEL_TYPES.contains(&t))
        || class == "T5ForConditionalGeneration"
}

/// One prompt's answer.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Answer {
    /// The generated ids: the decoder start token, the answer, `</s>` where it ended in time.
    pub ids: Vec<u32>,
    /// Their text, decoded with special tokens kept (see the module's comment).
    pub text: String,
}

/// A loaded letter judge.
pub struct LetterJudge {
    /// The whole model on candle, or its decoder only when `native` runs the encoder.
    model: T5,
    native: Option<Box<NativeEncoder>>,
    tokenizer: Tokenizer,
    /// Ids that decode as special tokens, with their text.
    specials: HashMap<u32, String>,
    engine: String,
    device: Device,
}

impl LetterJudge {
    /// Load a T5 / Flan-T5 folder: config.json, tokenizer.json (else spiece.model), and the
    /// weights in any of the Hub's forms (`models::shards`).
    pub fn load(
        dir: &Path,
        device: &Device,
        dtype: DType,
        engine: &EngineOptions,
    ) -> Result<LetterJudge> {
        let choice = seq2seq_engine(engine, device, dtype)?;
        let config_path = dir.join("config.json");
        let cfg = T5Config::read(&config_path)?;
        // Truncated or malformed safetensors are named here, before anything is read.
        let files = weight_files(dir)?;
        let tokenizer = load_tokenizer(dir, &cfg)?;
        let vb = var_builder_of(&files, dtype, device)?;
        let (model, native, engine_name) = match choice {
            Seq2SeqEngine::Candle => (
                T5::load(vb, &cfg, &config_path)?,
                None,
                "candle".to_string(),
            ),
            Seq2SeqEngine::Native => {
                let (model, native) = load_native(&files, &cfg, &config_path, vb, dtype, engine)?;
                let name = format!(
                    "scorekit kernels ({}) for the encoder and the decoder's products, candle ({}) \
                     for the decoder's attention",
                    native_products(&native),
                    if dtype == DType::BF16 { "bf16" } else { "f32" }
                );
                (model, Some(Box::new(native)), name)
            }
        };
        let specials = tokenizer
            .get_added_tokens_decoder()
            .into_iter()
            .filter(|(_, t)| t.special)
            .map(|(id, t)| (id, t.content))
            .collect();
        Ok(LetterJudge {
            model,
            native,
            tokenizer,
            specials,
            engine: engine_name,
            device: device.clone(),
        })
    }

    /// Which implementation runs the model (for reports).
    pub fn engine(&self) -> &str {
        &self.engine
    }

    /// Token ids of prompts, `</s>` appended, without truncation (as run_llm.py tokenised them).
    pub fn encode(&self, prompts: &[String]) -> Result<Vec<Tokens>> {
        let encodings = self
            .tokenizer
            .encode_batch(prompts.iter().map(String::as_str).collect::<Vec<_>>(), true)
            .map_err(|e| anyhow!("letter judge tokenizer failed: {e}"))?;
        Ok(encodings
            .into_iter()
            .map(|e| Tokens {
                ids: e.get_ids().to_vec(),
                type_ids: vec![0; e.get_ids().len()],
            })
            .collect())
    }

    /// Greedy answers to `prompts`, batched under `batch_tokens` (padded tokens per batch).
    pub fn answer(
        &self,
        prompts: &[String],
        batch_tokens: usize,
        progress: &ProgressBar,
    ) -> Result<Vec<Answer>> {
        let encoded = self.encode(prompts)?;
        run_batched(&encoded, batch_tokens, progress, |batch| {
            let (generated, _) = self
                .generate(batch, false)
                .map_err(|e| Error::Internal(anyhow!("letter judge model: {e}")))?;
            generated
                .into_iter()
                .map(|ids| {
                    let text = self.decode(&ids)?;
                    Ok(Answer { ids, text })
                })
                .collect()
        })
    }

    /// The log-probabilities of the first answer token for one prompt, over the model's
    /// vocabulary (for parity checks against transformers).
    pub fn first_log_probs(&self, prompt: &str) -> Result<Vec<f32>> {
        let encoded = self.encode(&[prompt.to_string()])?;
        let batch = scorekit_encoder::Batch::from_rows(&[&encoded[0]]);
        let (_, first) = self
            .generate(&batch, true)
            .map_err(|e| Error::Internal(anyhow!("letter judge model: {e}")))?;
        let first = first.ok_or_else(|| Error::Internal(anyhow!("no first step")))?;
        first
            .squeeze(0)
            .and_then(|t| t.to_vec1::<f32>())
            .map_err(|e| Error::Internal(anyhow!("letter judge model: {e}")))
    }

    fn generate(
        &self,
        batch: &scorekit_encoder::Batch,
        first: bool,
    ) -> candle_core::Result<(Vec<Vec<u32>>, Option<Tensor>)> {
        let padded = batch.padded(self.model.config().pad_token_id, &self.device)?;
        if let Some(native) = &self.native {
            let hidden = self.native_hidden(native, batch)?;
            let enc = Encoded::from_hidden(hidden, &padded.attention_mask)?;
            return self.model.generate_encoded(&enc, MAX_LENGTH, first);
        }
        self.model
            .generate(&padded.input_ids, &padded.attention_mask, MAX_LENGTH, first)
    }

    /// The encoder's hidden states of `batch` on scorekit's kernels, padded to `[b, s, d]` in
    /// the decoder's dtype (padding rows zero: the mask hides them).
    #[cfg(target_arch = "x86_64")]
    fn native_hidden(
        &self,
        native: &NativeEncoder,
        batch: &scorekit_encoder::Batch,
    ) -> candle_core::Result<Tensor> {
        let d = self.model.config().d_model;
        let embedded = self.model.embed_rows(&batch.ids)?;
        let dtype = embedded.dtype();
        let mut x = embedded
            .to_dtype(DType::F32)?
            .flatten_all()?
            .to_vec1::<f32>()?;
        native.forward(&mut x, &batch.cu_seqlens)?;
        // The mask's width (`Batch::padded`'s), so hidden states and mask always agree.
        let (b, s) = (batch.len(), batch.max_len().max(1));
        let mut padded = vec![0f32; b * s * d];
        for (i, w) in batch.cu_seqlens.windows(2).enumerate() {
            padded[i * s * d..][..(w[1] - w[0]) * d].copy_from_slice(&x[w[0] * d..w[1] * d]);
        }
        Tensor::from_vec(padded, (b, s, d), &self.device)?.to_dtype(dtype)
    }

    /// Off x86-64 there is no native encoder to run.
    #[cfg(not(target_arch = "x86_64"))]
    fn native_hidden(
        &self,
        native: &NativeEncoder,
        _: &scorekit_encoder::Batch,
    ) -> candle_core::Result<Tensor> {
        match *native {}
    }

    /// Decode as transformers 4.25's slow `T5Tokenizer.decode(ids)` (special tokens kept,
    /// `clean_up_tokenization_spaces=True`).
    pub fn decode(&self, ids: &[u32]) -> Result<String> {
        let pieces = |sub: &[u32]| -> Result<String> {
            self.tokenizer
                .decode(sub, false)
                .map_err(|e| Error::Internal(anyhow!("letter judge tokenizer: {e}")))
        };
        let mut out = String::new();
        let mut sub: Vec<u32> = Vec::new();
        let mut prev_special = false;
        for &id in ids {
            if let Some(token) = self.specials.get(&id) {
                if !prev_special {
                    out.push(' ');
                }
                out += &pieces(&sub)?;
                out += token;
                sub.clear();
                prev_special = true;
            } else {
                sub.push(id);
                prev_special = false;
            }
        }
        out += &pieces(&sub)?;
        Ok(clean_up_tokenization(out.trim()))
    }
}

/// T5's encoder on scorekit's kernels (x86-64 only: `seq2seq_engine` chooses it nowhere else).
#[cfg(target_arch = "x86_64")]
type NativeEncoder = scorekit_native::FastT5Encoder;
/// No value: there is no native encoder off x86-64.
#[cfg(not(target_arch = "x86_64"))]
type NativeEncoder = std::convert::Infallible;

/// Off x86-64 `seq2seq_engine` never chooses the kernels; reaching here is a bug.
#[cfg(not(target_arch = "x86_64"))]
fn load_native(
    _: &WeightFiles,
    _: &T5Config,
    _: &Path,
    _: candle_nn::VarBuilder,
    _: DType,
    _: &EngineOptions,
) -> Result<(T5, NativeEncoder)> {
    Err(Error::Internal(anyhow!(
        "scorekit's kernels exist on x86-64 only"
    )))
}

/// What computes the native encoder's products (for the engine's name).
#[cfg(not(target_arch = "x86_64"))]
fn native_products(native: &NativeEncoder) -> &'static str {
    match *native {}
}

/// A T5 judge on scorekit's kernels: the encoder, and the decoder's products and head, read
/// tensor by tensor from the weight files and packed for int8 products with `--quantize`, bf16
/// with `--dtype bf16`, else f32; the decoder's embeddings, norms and attention on candle from
/// `vb` (the judge's dtype).
#[cfg(target_arch = "x86_64")]
fn load_native(
    files: &WeightFiles,
    cfg: &T5Config,
    config_path: &Path,
    vb: candle_nn::VarBuilder,
    dtype: DType,
    engine: &EngineOptions,
) -> Result<(T5, NativeEncoder)> {
    use scorekit_kernels::act::Activation;
    use scorekit_models::t5::Act;
    let (gated, act) = cfg.feed_forward(config_path)?;
    let shape = scorekit_native::T5Shape {
        d_model: cfg.d_model,
        d_kv: cfg.d_kv,
        heads: cfg.num_heads,
        d_ff: cfg.d_ff,
        layers: cfg.num_layers,
        gated,
        act: match act {
            Act::Relu => Activation::Relu,
            Act::GeluNew => Activation::GeluTanh,
            Act::Gelu => Activation::GeluErf,
            Act::Silu => Activation::Silu,
        },
        buckets: cfg.relative_attention_num_buckets,
        max_distance: cfg.relative_attention_max_distance,
        eps: cfg.layer_norm_epsilon as f32,
        bucket: scorekit_models::t5::relative_bucket,
    };
    // An f32 view of the weights on the CPU, read one tensor at a time as the encoder packs it.
    let f32s = var_builder_of(files, DType::F32, &Device::Cpu)?;
    let read = |name: &str, shape: &[usize]| -> candle_core::Result<Vec<f32>> {
        f32s.get(shape, name)?.flatten_all()?.to_vec1::<f32>()
    };
    let products = crate::engine::kernel_products(engine, dtype);
    // The decoder's products see one row per prompt and step: they are bound by reading the
    // weights, where f32 as split-bf16 tiles reads no fewer bytes than AVX-512 f32 and adds
    // error (measured at 1.3e-4–2.9e-4 on the first step's log-probabilities of the Flan test
    // fixture, against 5e-6–1.1e-5 with AVX-512). Tiles stay for int8 and bf16 products.
    let decoder_products = scorekit_native::Products {
        amx: products.amx && (products.int8 || products.bf16),
        ..products
    };
    let make = |name: &str, n: usize, k: usize| {
        let w = read(&format!("{name}.weight"), &[n, k])?;
        scorekit_native::packed_linear(&w, n, k, decoder_products)
    };
    // The decoder first: it checks the weights against config.json.
    let model = T5::load_decoder(vb, cfg, config_path, &make)?;
    let encoder = scorekit_native::FastT5Encoder::load(&read, shape, products).map_err(|e| {
        Error::Input(InputError::file(
            config_path,
            format!("the weights do not fit config.json: {e}"),
        ))
    })?;
    Ok((model, encoder))
}

/// What computes the native encoder's products (for the engine's name).
#[cfg(target_arch = "x86_64")]
fn native_products(native: &NativeEncoder) -> &'static str {
    native.products_name()
}

/// `PreTrainedTokenizerBase.clean_up_tokenization`: spaces before punctuation and English
/// contractions removed, in transformers' order.
pub fn clean_up_tokenization(text: &str) -> String {
    [
        (" .", "."),
        (" ?", "?"),
        (" !", "!"),
        (" ,", ","),
        (" ' ", "'"),
        (" n't", "n't"),
        (" 'm", "'m"),
        (" 's", "'s"),
        (" 've", "'ve"),
        (" 're", "'re"),
    ]
    .iter()
    .fold(text.to_string(), |s, (from, to)| s.replace(from, to))
}

/// tokenizer.json, else spiece.model; it must have `</s>` at config.json's `eos_token_id` and no
/// more tokens than the model has embedding rows.
fn load_tokenizer(dir: &Path, cfg: &T5Config) -> Result<Tokenizer> {
    let json = dir.join("tokenizer.json");
    let (file, mut tokenizer) = if json.exists() {
        let t = Tokenizer::from_file(&json)
            .map_err(|e| Error::Input(InputError::file(&json, format!("cannot load: {e}"))))?;
        (json, t)
    } else if dir.join("spiece.model").exists() {
        (dir.join("spiece.model"), spm::t5_tokenizer(dir)?)
    } else {
        return Err(Error::usage(format!(
            "letter judge {}: no tokenizer.json or spiece.model",
            dir.display()
        )));
    };
    tokenizer.with_padding(None);
    tokenizer
        .with_truncation(None)
        .map_err(|e| anyhow!("letter judge tokenizer: {e}"))?;
    match tokenizer.token_to_id("</s>") {
        Some(id) if id == cfg.eos_token_id => {}
        Some(id) => {
            return Err(Error::Input(InputError::file(
                &file,
                format!(
                    "</s> has id {id}, but config.json's eos_token_id is {}",
                    cfg.eos_token_id
                ),
            )))
        }
        None => {
            return Err(Error::Input(InputError::file(
                &file,
                "has no </s> token (a tokenizer of another model?)",
            )))
        }
    }
    let tokens = tokenizer.get_vocab_size(true);
    if tokens > cfg.vocab_size {
        return Err(Error::Input(InputError::file(
            &file,
            format!(
                "has {tokens} tokens but config.json's vocab_size is {} (a tokenizer of another model?)",
                cfg.vocab_size
            ),
        )));
    }
    Ok(tokenizer)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clean_up_removes_spaces_before_punctuation_as_transformers() {
        assert_eq!(
            clean_up_tokenization("it 's a dog , is n't it ?"),
            "it's a dog, isn't it?"
        );
    }
}
