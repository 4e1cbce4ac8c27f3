//! MRC judges in the Hugging Face layouts: `...ForMultipleChoice` (BERT, RoBERTa / XLM-RoBERTa,
//! DeBERTa-v2/v3) and binary `...ForSequenceClassification` with a follow label.
//!
//! A judge scores (first, second) text pairs, one score per pair. Multiple-choice heads encode each
//! choice separately and give it one logit, so a question's choices can be scored in any batch and
//! regrouped afterwards; the argmax over a question's choices is the judge's pick. For a binary
//! classifier the score of a pair is the log-odds of the follow label, so the same argmax protocol
//! applies.
//!
//! candle-transformers 0.11.1 gives the encoders only; the heads are written here ([`Net`]). BERT's
//! encoder is `bert::BertModel`; RoBERTa uses `xlm_roberta::XLMRobertaModel`, because
//! `bert.rs` counts positions from 0 where RoBERTa counts from `pad_token_id + 1`.

use crate::error::{Error, InputError, Result};
use crate::runtime::batching::plan_batches;
use crate::runtime::embedder::check_bert_weights;
use crate::runtime::masked_bert::MaskedBert;
#[cfg(target_arch = "x86_64")]
use crate::runtime::ops::{
    self,
    bert::{Dense, FastBert},
};
use crate::runtime::tokenize::{pad_batch, PaddedBatch, Tokens};
use anyhow::{anyhow, Context};
use candle_core::{DType, Device, IndexOp};
use candle_nn::{Linear, Module, VarBuilder};
use candle_transformers::models::{bert, debertav2, xlm_roberta};
use indicatif::ProgressBar;
use serde_json::{Map, Value};
use std::path::Path;
use tokenizers::{Encoding, Tokenizer, TruncationDirection, TruncationParams, TruncationStrategy};

/// Encoder family, from `model_type` in config.json.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Arch {
    /// `bert`: BERT and its WordPiece relatives.
    Bert,
    /// `roberta` / `xlm-roberta`: RoBERTa position ids, no token types.
    Roberta,
    /// `deberta-v2` (DeBERTa-v2 and v3): disentangled relative attention.
    DebertaV2,
}

/// What the judge's head computes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Head {
    /// `...ForMultipleChoice`: one logit per (context, question + option) pair.
    MultipleChoice,
    /// `...ForSequenceClassification`: the pair's score is the log-odds of label `follow`.
    Binary {
        /// Label names by index (`id2label`).
        labels: Vec<String>,
        /// Index of the label that means "follows the instruction".
        follow: usize,
    },
}

/// A loaded judge: tokenizer, encoder and head.
pub struct Judge {
    arch: Arch,
    head: Head,
    net: Net,
    tokenizer: Tokenizer,
    max_length: usize,
    pad_id: u32,
    /// Whether token type ids reach the model (BERT) or are all zeros (RoBERTa, DeBERTa-v3).
    type_ids: bool,
    device: Device,
    /// (layers, hidden size, feed-forward size) from config.json.
    dims: (usize, usize, usize),
}

/// The network: an encoder from candle-transformers and the head of the checkpoint's class.
enum Net {
    #[cfg(target_arch = "x86_64")]
    /// BERT or RoBERTa on scorekit's CPU encoder (`ops::bert`, f32 AVX-512 or int8): the
    /// `[CLS]` / `<s>` row, then the head as two dense layers with tanh between (the pooler and
    /// classifier, or RoBERTa's `classifier.dense` and `classifier.out_proj`).
    Fast {
        encoder: Box<FastBert>,
        first: Dense,
        second: Dense,
        n_out: usize,
    },
    /// BERT: `bert.pooler.dense` + tanh on token 0, then `classifier`.
    Bert {
        encoder: MaskedBert,
        pooler: Linear,
        classifier: Linear,
    },
    /// RoBERTa multiple choice: `roberta.pooler.dense` + tanh, then `classifier`.
    RobertaPooled {
        encoder: xlm_roberta::XLMRobertaModel,
        pooler: Linear,
        classifier: Linear,
    },
    /// RoBERTa sequence classification: `classifier.dense` + tanh + `classifier.out_proj` on `<s>`.
    RobertaClassifier {
        encoder: xlm_roberta::XLMRobertaModel,
        dense: Linear,
        out_proj: Linear,
    },
    /// DeBERTa-v2: candle's sequence-classification model has exactly the weight names of both
    /// `DebertaV2ForMultipleChoice` and `...ForSequenceClassification` (ContextPooler + classifier).
    Deberta(Box<debertav2::DebertaV2SeqClassificationModel>),
}

impl Judge {
    /// Load a judge from a model folder (config.json, tokenizer, model.safetensors or
    /// pytorch_model.bin).
    ///
    /// `follow_label` is required for a sequence-classification judge and refused for a
    /// multiple-choice one. `max_length` caps the model's own limit.
    pub fn load(
        dir: &Path,
        device: &Device,
        dtype: DType,
        max_length: Option<usize>,
        follow_label: Option<&str>,
    ) -> Result<Judge> {
        Self::load_with(dir, device, dtype, max_length, follow_label, true)
    }

    /// [`Judge::load`], with `fast = false` keeping BERT and RoBERTa on candle's encoder even
    /// where scorekit's CPU encoder applies (parity tests of both).
    pub fn load_with(
        dir: &Path,
        device: &Device,
        dtype: DType,
        max_length: Option<usize>,
        follow_label: Option<&str>,
        fast: bool,
    ) -> Result<Judge> {
        let config_path = dir.join("config.json");
        let text = std::fs::read_to_string(&config_path)
            .with_context(|| format!("cannot read judge config {}", config_path.display()))?;
        let mut config: Map<String, Value> = serde_json::from_str(&text)
            .with_context(|| format!("invalid judge config {}", config_path.display()))?;
        let arch = match config.get("model_type").and_then(Value::as_str) {
            Some("bert") => Arch::Bert,
            Some("roberta") | Some("xlm-roberta") => Arch::Roberta,
            Some("deberta-v2") => Arch::DebertaV2,
            other => {
                return Err(Error::usage(format!(
                    "judge {}: model_type {:?} is not supported (bert, roberta, xlm-roberta, deberta-v2)",
                    dir.display(),
                    other.unwrap_or("missing")
                )))
            }
        };
        let head = head_of(dir, &config, follow_label)?;
        // DeBERTa's XSoftmax in candle builds its mask constants in F32, and candle's XLM-RoBERTa
        // mask panics ("Unsupported data type") for anything but F32/F64: both run in F32.
        // BERT runs in any dtype through `MaskedBert`.
        let dtype = if matches!(arch, Arch::DebertaV2 | Arch::Roberta) {
            DType::F32
        } else {
            dtype
        };
        let hidden = usize_field(&config, "hidden_size")?;
        let n_out = match &head {
            Head::MultipleChoice => 1,
            Head::Binary { labels, .. } => labels.len(),
        };
        let pad_id = config
            .get("pad_token_id")
            .and_then(Value::as_u64)
            .unwrap_or(match arch {
                Arch::Roberta => 1,
                _ => 0,
            }) as u32;
        let weights_path = weights_file(dir)?;
        // BERT and RoBERTa share BERT's layout (config and tensors); the head names the prefix,
        // so candle's fallback to `model_type` is not needed.
        let bert_cfg: Option<bert::Config> = match arch {
            Arch::DebertaV2 => None,
            _ => {
                let mut c = config.clone();
                c.insert("model_type".into(), Value::Null);
                Some(parse_config(&c, dir)?)
            }
        };
        if let Some(cfg) = &bert_cfg {
            // Every encoder tensor against config.json before anything is loaded.
            if weights_path.extension().is_some_and(|e| e == "safetensors") {
                check_bert_weights(&weights_path, cfg, &["bert.", "roberta."])?;
            }
        }
        let fast = match &bert_cfg {
            Some(cfg) if fast => fast_net(
                &weights_path,
                cfg,
                arch,
                &head,
                device,
                dtype,
                pad_id,
                n_out,
            )?,
            _ => None,
        };
        let type_vocab = config
            .get("type_vocab_size")
            .and_then(Value::as_u64)
            .unwrap_or(0);
        let positions = usize_field(&config, "max_position_embeddings")?;
        let load_err = |e: candle_core::Error| model_file_err(&weights_path, e);
        let net = match (fast, arch) {
            (Some(net), _) => net,
            (None, Arch::Bert) => {
                let vb = weights(&weights_path, dtype, device)?;
                let cfg = bert_cfg.as_ref().expect("BERT has a BERT config");
                let encoder = MaskedBert::load(vb.pp("bert"), cfg).map_err(load_err)?;
                let pooler = candle_nn::linear(hidden, hidden, vb.pp("bert.pooler.dense"))
                    .map_err(load_err)?;
                let classifier =
                    candle_nn::linear(hidden, n_out, vb.pp("classifier")).map_err(load_err)?;
                Net::Bert {
                    encoder,
                    pooler,
                    classifier,
                }
            }
            (None, Arch::Roberta) => {
                let vb = weights(&weights_path, dtype, device)?;
                default(&mut config, "position_embedding_type", "absolute".into());
                default(&mut config, "attention_probs_dropout_prob", 0.1.into());
                default(&mut config, "hidden_dropout_prob", 0.1.into());
                default(&mut config, "pad_token_id", 1.into());
                let cfg: xlm_roberta::Config = parse_config(&config, dir)?;
                let encoder =
                    xlm_roberta::XLMRobertaModel::new(&cfg, vb.pp("roberta")).map_err(load_err)?;
                match head {
                    Head::MultipleChoice => Net::RobertaPooled {
                        encoder,
                        pooler: candle_nn::linear(hidden, hidden, vb.pp("roberta.pooler.dense"))
                            .map_err(load_err)?,
                        classifier: candle_nn::linear(hidden, 1, vb.pp("classifier"))
                            .map_err(load_err)?,
                    },
                    Head::Binary { .. } => Net::RobertaClassifier {
                        encoder,
                        dense: candle_nn::linear(hidden, hidden, vb.pp("classifier.dense"))
                            .map_err(load_err)?,
                        out_proj: candle_nn::linear(hidden, n_out, vb.pp("classifier.out_proj"))
                            .map_err(load_err)?,
                    },
                }
            }
            (None, Arch::DebertaV2) => {
                let vb = weights(&weights_path, dtype, device)?;
                // HF writes these only when they differ from the defaults; candle requires them.
                default(&mut config, "pooler_hidden_size", hidden.into());
                default(&mut config, "pooler_dropout", 0.0.into());
                default(&mut config, "pooler_hidden_act", "gelu".into());
                default(&mut config, "relative_attention", false.into());
                default(&mut config, "max_relative_positions", (-1).into());
                default(&mut config, "position_biased_input", true.into());
                default(&mut config, "pos_att_type", Value::Array(vec![]));
                // A multiple-choice config still lists HF's default two labels; the head has one.
                config.insert("id2label".into(), Value::Null);
                let mut cfg: debertav2::Config = parse_config(&config, dir)?;
                cfg.id2label = None;
                let id2label = (0..n_out as u32)
                    .map(|i| (i, format!("LABEL_{i}")))
                    .collect();
                Net::Deberta(Box::new(
                    debertav2::DebertaV2SeqClassificationModel::load(
                        vb.pp("deberta"),
                        &cfg,
                        Some(id2label),
                    )
                    .map_err(load_err)?,
                ))
            }
        };
        // RoBERTa positions start after the padding index, so two of them are never used by tokens.
        let model_limit = match arch {
            Arch::Roberta => positions.saturating_sub(pad_id as usize + 1),
            _ => positions,
        };
        let model_limit = model_limit.min(tokenizer_limit(dir).unwrap_or(usize::MAX));
        let max_length = max_length.unwrap_or(model_limit).min(model_limit);
        let tokenizer = load_tokenizer(dir, arch, max_length)?;
        // A tokenizer of another model gives ids past the embedding table: refuse it here.
        let vocab = usize_field(&config, "vocab_size")?;
        let tokens = tokenizer.get_vocab_size(true);
        if tokens > vocab {
            let file = if dir.join("tokenizer.json").exists() {
                "tokenizer.json"
            } else {
                "vocab.json"
            };
            return Err(Error::Input(InputError::file(
                dir.join(file),
                format!(
                    "has {tokens} tokens but config.json's vocab_size is {vocab} (a tokenizer of another model?)"
                ),
            )));
        }
        Ok(Judge {
            arch,
            head,
            net,
            tokenizer,
            max_length,
            pad_id,
            type_ids: type_vocab > 1,
            device: device.clone(),
            dims: (
                usize_field(&config, "num_hidden_layers")?,
                hidden,
                usize_field(&config, "intermediate_size")?,
            ),
        })
    }

    /// (layers, hidden size, feed-forward size) of the encoder, for FLOP counts.
    pub fn dims(&self) -> (usize, usize, usize) {
        self.dims
    }

    /// Which implementation runs the encoder (for reports).
    pub fn engine(&self) -> &'static str {
        match &self.net {
            #[cfg(target_arch = "x86_64")]
            Net::Fast { encoder, .. } => encoder.engine(),
            _ => "candle",
        }
    }

    /// The encoder family.
    pub fn arch(&self) -> Arch {
        self.arch
    }

    /// The head.
    pub fn head(&self) -> &Head {
        &self.head
    }

    /// Tokens per input after truncation.
    pub fn max_length(&self) -> usize {
        self.max_length
    }

    /// Tokenize pairs as the dataset authors did: `tokenizer(first, second, truncation=True)`
    /// (longest-first truncation to the model's limit).
    pub fn encode(&self, pairs: &[(String, String)]) -> Result<Vec<Tokens>> {
        let inputs: Vec<tokenizers::EncodeInput> = pairs
            .iter()
            .map(|(a, b)| (a.as_str(), b.as_str()).into())
            .collect();
        let encodings: Vec<Encoding> = self
            .tokenizer
            .encode_batch(inputs, true)
            .map_err(|e| anyhow!("judge tokenizer failed: {e}"))?;
        Ok(encodings
            .into_iter()
            .map(|e| Tokens {
                ids: e.get_ids().to_vec(),
                type_ids: if self.type_ids {
                    e.get_type_ids().to_vec()
                } else {
                    vec![0; e.get_ids().len()]
                },
            })
            .collect())
    }

    /// Raw head outputs per pair: 1 logit (multiple choice) or one per label (classifier).
    pub fn logits(
        &self,
        pairs: &[(String, String)],
        batch_tokens: usize,
        progress: &ProgressBar,
    ) -> Result<Vec<Vec<f32>>> {
        let encoded = self.encode(pairs)?;
        let lengths: Vec<usize> = encoded.iter().map(|e| e.ids.len()).collect();
        let mut out: Vec<Vec<f32>> = vec![Vec::new(); encoded.len()];
        for batch in plan_batches(&lengths, batch_tokens) {
            let rows: Vec<&Tokens> = batch.indices.iter().map(|&i| &encoded[i]).collect();
            let logits = match &self.net {
                #[cfg(target_arch = "x86_64")]
                Net::Fast {
                    encoder,
                    first,
                    second,
                    n_out,
                } => {
                    // No padding: the encoder takes the sequences as they are.
                    let seqs: Vec<(&[u32], &[u32])> = rows
                        .iter()
                        .map(|t| (t.ids.as_slice(), t.type_ids.as_slice()))
                        .collect();
                    let cls = encoder.forward_seqs(&seqs).map_err(model_err)?;
                    let mut pooled = first.forward(seqs.len(), &cls);
                    pooled.iter_mut().for_each(|v| *v = v.tanh());
                    let logits = second.forward(seqs.len(), &pooled);
                    logits.chunks(*n_out).map(<[f32]>::to_vec).collect()
                }
                _ => {
                    let inputs = pad_batch(&rows, self.pad_id, &self.device)?;
                    self.forward(&inputs).map_err(model_err)?
                }
            };
            for (&i, row) in batch.indices.iter().zip(logits) {
                out[i] = row;
            }
            progress.inc(batch.indices.len() as u64);
        }
        Ok(out)
    }

    /// One score per pair: the multiple-choice logit, or the follow label's log-odds.
    pub fn score(
        &self,
        pairs: &[(String, String)],
        batch_tokens: usize,
        progress: &ProgressBar,
    ) -> Result<Vec<f32>> {
        let logits = self.logits(pairs, batch_tokens, progress)?;
        Ok(logits
            .iter()
            .map(|row| match &self.head {
                Head::MultipleChoice => row[0],
                Head::Binary { follow, .. } => log_odds(row, *follow),
            })
            .collect())
    }

    /// Run one padded batch through encoder and head.
    fn forward(&self, inputs: &PaddedBatch) -> candle_core::Result<Vec<Vec<f32>>> {
        let (ids, mask, types) = (
            &inputs.input_ids,
            &inputs.attention_mask,
            &inputs.token_type_ids,
        );
        let logits = match &self.net {
            Net::Bert {
                encoder,
                pooler,
                classifier,
            } => {
                let h = encoder.forward(ids, types, Some(mask))?;
                classifier.forward(&pooler.forward(&h.i((.., 0))?)?.tanh()?)?
            }
            Net::RobertaPooled {
                encoder,
                pooler,
                classifier,
            } => {
                let h = encoder.forward(ids, mask, types, None, None, None)?;
                classifier.forward(&pooler.forward(&h.i((.., 0))?)?.tanh()?)?
            }
            Net::RobertaClassifier {
                encoder,
                dense,
                out_proj,
            } => {
                let h = encoder.forward(ids, mask, types, None, None, None)?;
                out_proj.forward(&dense.forward(&h.i((.., 0))?)?.tanh()?)?
            }
            Net::Deberta(model) => model.forward(ids, Some(types.clone()), Some(mask.clone()))?,
            #[cfg(target_arch = "x86_64")]
            Net::Fast { .. } => {
                return Err(candle_core::Error::Msg(
                    "internal: scorekit's encoder takes unpadded sequences (Judge::logits)".into(),
                ))
            }
        };
        logits.to_dtype(DType::F32)?.to_vec2::<f32>()
    }
}

/// log p(follow) − log(1 − p(follow)) from a row of logits, computed stably.
fn log_odds(row: &[f32], follow: usize) -> f32 {
    let others: Vec<f32> = row
        .iter()
        .enumerate()
        .filter(|(i, _)| *i != follow)
        .map(|(_, &x)| x)
        .collect();
    let max = others.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    let lse = max + others.iter().map(|x| (x - max).exp()).sum::<f32>().ln();
    row[follow] - lse
}

/// The head from `architectures` in config.json, checked against `--follow-label`.
fn head_of(dir: &Path, config: &Map<String, Value>, follow_label: Option<&str>) -> Result<Head> {
    let class = config
        .get("architectures")
        .and_then(Value::as_array)
        .and_then(|a| a.first())
        .and_then(Value::as_str)
        .unwrap_or("");
    let classifier = if class.ends_with("ForMultipleChoice") {
        false
    } else if class.ends_with("ForSequenceClassification") {
        true
    } else {
        // Without a class name, the user's flag says which head to expect.
        follow_label.is_some()
    };
    if !classifier {
        if let Some(label) = follow_label {
            return Err(Error::usage(format!(
                "--follow-label {label:?}: judge {} is a multiple-choice model ({class}); \
                 the flag is for sequence-classification judges",
                dir.display()
            )));
        }
        return Ok(Head::MultipleChoice);
    }
    let mut labels: Vec<(u64, String)> = config
        .get("id2label")
        .and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .filter_map(|(k, v)| Some((k.parse().ok()?, v.as_str()?.to_string())))
                .collect()
        })
        .unwrap_or_default();
    labels.sort();
    let labels: Vec<String> = labels.into_iter().map(|(_, l)| l).collect();
    if labels.len() < 2 {
        return Err(Error::usage(format!(
            "judge {}: a sequence-classification judge needs at least 2 labels in id2label",
            dir.display()
        )));
    }
    let Some(label) = follow_label else {
        return Err(Error::usage(format!(
            "judge {} is a sequence classifier ({class}); name the label that means \"follows\" \
             with --follow-label (one of: {})",
            dir.display(),
            labels.join(", ")
        )));
    };
    let follow = labels.iter().position(|l| l == label).ok_or_else(|| {
        Error::usage(format!(
            "--follow-label {label:?}: not a label of judge {} (labels: {})",
            dir.display(),
            labels.join(", ")
        ))
    })?;
    Ok(Head::Binary { labels, follow })
}

/// Memory-map model.safetensors, or read pytorch_model.bin (older checkpoints ship only that).
/// BERT and RoBERTa judges on scorekit's CPU encoder where it applies (CPU, f32, AVX-512F,
/// erf-GELU; see `ops::fast_allowed`), else `None` and candle runs them.
#[cfg(target_arch = "x86_64")]
#[allow(clippy::too_many_arguments)]
fn fast_net(
    file: &Path,
    cfg: &bert::Config,
    arch: Arch,
    head: &Head,
    device: &Device,
    dtype: DType,
    pad_id: u32,
    n_out: usize,
) -> Result<Option<Net>> {
    if !ops::fast_allowed(device, dtype) || !FastBert::supports(cfg) {
        return Ok(None);
    }
    let pos_offset = match arch {
        Arch::Roberta => pad_id as usize + 1,
        _ => 0,
    };
    let file_err = |e| model_file_err(file, e);
    let mut encoder =
        FastBert::load_with(file, cfg, ops::int8_requested(), pos_offset).map_err(file_err)?;
    encoder.cls_only = true;
    let (first, second) = match (arch, head) {
        (Arch::Roberta, Head::Binary { .. }) => ("classifier.dense", "classifier.out_proj"),
        (Arch::Roberta, _) => ("roberta.pooler.dense", "classifier"),
        _ => ("bert.pooler.dense", "classifier"),
    };
    let h = cfg.hidden_size;
    let first = encoder.dense(first, h, h).map_err(file_err)?;
    let second = encoder.dense(second, n_out, h).map_err(file_err)?;
    encoder.release_unused();
    Ok(Some(Net::Fast {
        encoder: Box::new(encoder),
        first,
        second,
        n_out,
    }))
}

/// Off x86-64 the judge always runs on candle's layers.
#[cfg(not(target_arch = "x86_64"))]
#[allow(clippy::too_many_arguments)]
fn fast_net(
    _file: &Path,
    _cfg: &bert::Config,
    _arch: Arch,
    _head: &Head,
    _device: &Device,
    _dtype: DType,
    _pad_id: u32,
    _n_out: usize,
) -> Result<Option<Net>> {
    Ok(None)
}

/// A weight file that does not fit the config: an input error naming the file.
fn model_file_err(file: &Path, e: candle_core::Error) -> Error {
    Error::Input(InputError::file(
        file,
        format!("does not fit config.json: {e}"),
    ))
}

/// The judge's weight file: model.safetensors, else pytorch_model.bin.
fn weights_file(dir: &Path) -> Result<std::path::PathBuf> {
    ["model.safetensors", "pytorch_model.bin"]
        .iter()
        .map(|f| dir.join(f))
        .find(|p| p.exists())
        .ok_or_else(|| {
            Error::usage(format!(
                "judge {}: no model.safetensors or pytorch_model.bin",
                dir.display()
            ))
        })
}

/// candle's view of the weight file found by [`weights_file`].
fn weights(file: &Path, dtype: DType, device: &Device) -> Result<VarBuilder<'static>> {
    let vb = if file.extension().is_some_and(|e| e == "safetensors") {
        // SAFETY: the file is not modified while mapped; model folders are read-only inputs.
        unsafe { VarBuilder::from_mmaped_safetensors(&[file], dtype, device) }
    } else {
        VarBuilder::from_pth(file, dtype, device)
    };
    Ok(vb.with_context(|| format!("cannot load {}", file.display()))?)
}

/// tokenizer.json, or for RoBERTa checkpoints that predate it, vocab.json + merges.txt.
fn load_tokenizer(dir: &Path, arch: Arch, max_length: usize) -> Result<Tokenizer> {
    let file = dir.join("tokenizer.json");
    let mut tokenizer = if file.exists() {
        Tokenizer::from_file(&file).map_err(|e| anyhow!("cannot load {}: {e}", file.display()))?
    } else if arch == Arch::Roberta && dir.join("vocab.json").exists() {
        roberta_tokenizer(dir)?
    } else {
        return Err(Error::usage(format!(
            "judge {}: no tokenizer.json",
            dir.display()
        )));
    };
    tokenizer.with_padding(None);
    tokenizer
        .with_truncation(Some(TruncationParams {
            direction: TruncationDirection::Right,
            max_length,
            strategy: TruncationStrategy::LongestFirst,
            stride: 0,
        }))
        .map_err(|e| anyhow!("judge tokenizer: {e}"))?;
    Ok(tokenizer)
}

/// The byte-level BPE tokenizer of `RobertaTokenizer`: `<s> A </s></s> B </s>`.
fn roberta_tokenizer(dir: &Path) -> Result<Tokenizer> {
    use tokenizers::models::bpe::BPE;
    use tokenizers::pre_tokenizers::byte_level::ByteLevel;
    use tokenizers::processors::roberta::RobertaProcessing;
    use tokenizers::AddedToken;
    let vocab = dir.join("vocab.json");
    let merges = dir.join("merges.txt");
    let bpe = BPE::from_file(&vocab.to_string_lossy(), &merges.to_string_lossy())
        .build()
        .map_err(|e| anyhow!("cannot load {} / merges.txt: {e}", vocab.display()))?;
    let id = |t: &str| {
        tokenizers::Model::token_to_id(&bpe, t)
            .ok_or_else(|| anyhow!("{}: no token {t}", vocab.display()))
    };
    let (bos, eos) = (id("<s>")?, id("</s>")?);
    let specials: Vec<AddedToken> = ["<s>", "</s>", "<unk>", "<pad>", "<mask>"]
        .iter()
        .filter(|t| tokenizers::Model::token_to_id(&bpe, t).is_some())
        .map(|t| AddedToken::from(t.to_string(), true))
        .collect();
    let mut tokenizer = Tokenizer::new(bpe);
    tokenizer.with_pre_tokenizer(Some(ByteLevel::new(false, true, true)));
    tokenizer.with_decoder(Some(ByteLevel::new(false, true, true)));
    tokenizer.with_post_processor(Some(
        RobertaProcessing::new(("</s>".into(), eos), ("<s>".into(), bos))
            .trim_offsets(true)
            .add_prefix_space(false),
    ));
    // Returns how many were new; all of them are in the vocabulary already.
    let _ = tokenizer.add_special_tokens(specials);
    Ok(tokenizer)
}

/// `model_max_length` from tokenizer_config.json, when it is a real limit (HF writes 1e30 for none).
fn tokenizer_limit(dir: &Path) -> Option<usize> {
    let text = std::fs::read_to_string(dir.join("tokenizer_config.json")).ok()?;
    let v: Value = serde_json::from_str(&text).ok()?;
    let n = v.get("model_max_length")?.as_f64()?;
    (1.0..1e9).contains(&n).then_some(n as usize)
}

fn usize_field(config: &Map<String, Value>, field: &str) -> Result<usize> {
    config
        .get(field)
        .and_then(Value::as_u64)
        .map(|v| v as usize)
        .ok_or_else(|| Error::Internal(anyhow!("judge config.json: no integer {field:?}")))
}

fn default(config: &mut Map<String, Value>, field: &str, value: Value) {
    if config.get(field).is_none_or(Value::is_null) {
        config.insert(field.into(), value);
    }
}

fn parse_config<T: serde::de::DeserializeOwned>(
    config: &Map<String, Value>,
    dir: &Path,
) -> Result<T> {
    serde_json::from_value(Value::Object(config.clone())).map_err(|e| {
        Error::Internal(anyhow!(
            "judge {}: config.json not understood: {e}",
            dir.display()
        ))
    })
}

fn model_err(e: candle_core::Error) -> Error {
    Error::Internal(anyhow!("judge model: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log_odds_of_two_labels_is_the_logit_difference() {
        assert!((log_odds(&[0.5, 2.0], 1) - 1.5).abs() < 1e-6);
        assert!((log_odds(&[0.5, 2.0], 0) + 1.5).abs() < 1e-6);
        // Three labels: log p / (1 - p) with p = softmax[0].
        let row = [1.0f32, 0.0, -1.0];
        let z: f32 = row.iter().map(|x| x.exp()).sum();
        let p = row[0].exp() / z;
        assert!((log_odds(&row, 0) - (p / (1.0 - p)).ln()).abs() < 1e-5);
    }

    #[test]
    fn heads_follow_the_architecture_and_the_flag() {
        let dir = Path::new("m");
        let mc: Map<String, Value> =
            serde_json::from_str(r#"{"architectures":["BertForMultipleChoice"]}"#).unwrap();
        assert_eq!(head_of(dir, &mc, None).unwrap(), Head::MultipleChoice);
        assert_eq!(head_of(dir, &mc, Some("yes")).unwrap_err().exit_code(), 2);
        let sc: Map<String, Value> = serde_json::from_str(
            r#"{"architectures":["BertForSequenceClassification"],"id2label":{"1":"follow","0":"not"}}"#,
        )
        .unwrap();
        let e = head_of(dir, &sc, None).unwrap_err().to_string();
        assert!(
            e.contains("--follow-label") && e.contains("not, follow"),
            "{e}"
        );
        assert_eq!(
            head_of(dir, &sc, Some("follow")).unwrap(),
            Head::Binary {
                labels: vec!["not".into(), "follow".into()],
                follow: 1
            }
        );
        assert!(head_of(dir, &sc, Some("maybe")).is_err());
    }
}
