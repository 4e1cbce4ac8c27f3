//! MRC judges in the Hugging Face layouts: `...ForMultipleChoice` (BERT, RoBERTa, XLM-R,
//! DeBERTa-v2/v3, ELECTRA) and binary `...ForSequenceClassification` with a follow label.
//!
//! A judge is an encoder (`encoder::load_encoder`: native or candle) plus a classification head
//! (`models::heads::ClassifierHead`, its tensor names from the architecture's file). It scores
//! (first, second) text pairs, one score per pair. Multiple-choice heads encode each choice
//! separately and give it one logit, so a question's choices can be scored in any batch and
//! regrouped afterwards; the argmax over a question's choices is the judge's pick. For a binary
//! classifier the score of a pair is the log-odds of the follow label, so the same argmax
//! protocol applies.

use crate::engine::{load_encoder, EngineOptions};
use anyhow::anyhow;
use candle_core::{DType, Device};
use indicatif::ProgressBar;
use scorekit_core::error::{Error, InputError, Result, Setting};
use scorekit_encoder::Tokens;
use scorekit_encoder::{run_batched, Encoder};
use scorekit_models::heads::{ClassifierHead, Head as _};
use scorekit_models::{self as models, HeadKind};
use serde_json::{Map, Value};
use std::path::Path;
use tokenizers::{Encoding, Tokenizer, TruncationDirection, TruncationParams, TruncationStrategy};

/// Files a judge needs. Older RoBERTa checkpoints (the default judge among them) have no
/// tokenizer.json, only vocab.json + merges.txt; DeBERTa-v2/v3 checkpoints only spm.model; T5
/// folders may have only spiece.model, and large ones shard their weights behind an index.
pub const JUDGE_FILES: &[&str] = &[
    "config.json",
    "tokenizer.json|vocab.json|spm.model|spiece.model",
    "tokenizer.json|merges.txt|spm.model|spiece.model",
    "model.safetensors|pytorch_model.bin|model.safetensors.index.json|pytorch_model.bin.index.json",
];

/// A loaded judge of any kind: scoring (multiple-choice or binary), letter (T5 / Flan-T5) or
/// decoder letter (a decoder-only chat model). config.json decides which, here and nowhere else.
pub enum AnyJudge {
    /// An encoder with a classification head: one score per (passage, question + option).
    Scoring(Judge),
    /// An encoder-decoder asked the prompt with all options, answering with a letter.
    Letter(crate::letter_judge::LetterJudge),
    /// A decoder-only chat model asked the prompt through its chat template, its letter read
    /// from the next-token logits of A–D.
    Decoder(Box<crate::decoder_judge::DecoderJudge>),
}

/// How a letter judge's answer becomes a pick, for metrics.json's letter protocol.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LetterReading {
    /// How the answer is produced.
    pub decoding: String,
    /// How the pick is read from it.
    pub pick: String,
}

/// The [`LetterReading`] of the letter judge in model folder `dir` (`None`: not a letter
/// judge): T5's greedy generation, or a decoder's next-token logits of the four letters.
pub fn letter_reading(dir: &Path) -> Option<LetterReading> {
    if crate::decoder_judge::is_decoder_judge(dir) {
        return Some(LetterReading {
            decoding: "one forward pass of the prompt rendered through the model's chat template \
                       (tokenized without special tokens), no generation"
                .into(),
            pick: "the letter among A B C D whose single token has the largest next-token logit \
                   at the prompt's last token"
                .into(),
        });
    }
    crate::letter_judge::is_letter_judge(dir).then(t5_reading)
}

/// T5's reading: run_llm.py's greedy generation, the first letter of the answer.
pub fn t5_reading() -> LetterReading {
    LetterReading {
        decoding: format!(
            "greedy, max_length {} (the start token included), stop at </s>",
            crate::letter_judge::MAX_LENGTH
        ),
        pick: "the first character of the decoded answer among A B C D; none is wrong".into(),
    }
}

/// Whether the model folder `dir` holds a judge that answers with a letter: a T5 / Flan-T5
/// (`letter_judge`) or a decoder-only model (`decoder_judge`).
pub fn is_letter_judge(dir: &Path) -> bool {
    crate::letter_judge::is_letter_judge(dir) || crate::decoder_judge::is_decoder_judge(dir)
}

impl AnyJudge {
    /// Load the judge of model folder `dir` (see [`Judge::load`]; `max_length` and
    /// `follow_label` apply to scoring judges, and `--follow-label` is refused for a letter one;
    /// `system_prompt` is a decoder judge's, refused for the others).
    pub fn load(
        dir: &Path,
        device: &Device,
        dtype: DType,
        max_length: Option<usize>,
        follow_label: Option<&str>,
        engine: &EngineOptions,
        system_prompt: Option<&str>,
    ) -> Result<AnyJudge> {
        let decoder = crate::decoder_judge::is_decoder_judge(dir);
        if let (Some(_), false) = (system_prompt, decoder) {
            return Err(Error::usage(format!(
                "--system-prompt: judge {} is not a chat model (a decoder-only model with a chat \
                 template); only a decoder judge's prompt has a system message",
                dir.display()
            )));
        }
        if decoder {
            if let Some(label) = follow_label {
                return Err(Error::setting(
                    Setting::FollowLabel,
                    Some(format!("{label:?}")),
                    format!(
                        "judge {} is a decoder letter judge, which answers with an option's \
                         letter; a follow label is for sequence-classification judges",
                        dir.display()
                    ),
                ));
            }
            let judge = crate::decoder_judge::DecoderJudge::load(
                dir,
                device,
                dtype,
                engine,
                system_prompt,
                max_length,
            )?;
            return Ok(AnyJudge::Decoder(Box::new(judge)));
        }
        if crate::letter_judge::is_letter_judge(dir) {
            if let Some(label) = follow_label {
                return Err(Error::setting(
                    Setting::FollowLabel,
                    Some(format!("{label:?}")),
                    format!(
                        "judge {} is a letter judge (T5), which answers with an option's letter; \
                         a follow label is for sequence-classification judges",
                        dir.display()
                    ),
                ));
            }
            let judge = crate::letter_judge::LetterJudge::load(dir, device, dtype, engine)?;
            return Ok(AnyJudge::Letter(judge));
        }
        Judge::load(dir, device, dtype, max_length, follow_label, engine).map(AnyJudge::Scoring)
    }

    /// What kind of judge: `multiple-choice`, `binary`, `letter` or `decoder-letter` (for
    /// reports).
    pub fn kind(&self) -> &'static str {
        match self {
            AnyJudge::Scoring(j) => match j.head() {
                Head::MultipleChoice => "multiple-choice",
                Head::Binary { .. } => "binary",
            },
            AnyJudge::Letter(_) => "letter",
            AnyJudge::Decoder(_) => "decoder-letter",
        }
    }

    /// Which implementation runs the model.
    pub fn engine(&self) -> &str {
        match self {
            AnyJudge::Scoring(j) => j.engine(),
            AnyJudge::Letter(j) => j.engine(),
            AnyJudge::Decoder(j) => j.engine(),
        }
    }

    /// The architecture, as config.json's `model_type`.
    pub fn arch(&self) -> &str {
        match self {
            AnyJudge::Scoring(j) => j.arch(),
            AnyJudge::Letter(_) => "t5",
            AnyJudge::Decoder(j) => j.arch(),
        }
    }
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
    model_type: String,
    head: Head,
    encoder: Box<dyn Encoder>,
    classifier: ClassifierHead,
    tokenizer: PairTokenizer,
    /// (layers, hidden size, feed-forward size) from config.json.
    dims: (usize, usize, usize),
}

impl Judge {
    /// Load a judge from a model folder (config.json, tokenizer, model.safetensors or
    /// pytorch_model.bin) on the engine `engine` chooses.
    ///
    /// `follow_label` is required for a sequence-classification judge and refused for a
    /// multiple-choice one. `max_length` caps the model's own limit.
    pub fn load(
        dir: &Path,
        device: &Device,
        dtype: DType,
        max_length: Option<usize>,
        follow_label: Option<&str>,
        engine: &EngineOptions,
    ) -> Result<Judge> {
        let config_path = dir.join("config.json");
        let (arch, cfg) = models::read_config(&config_path, "")?;
        let head = head_of(dir, &cfg.raw, follow_label)?;
        let (kind, n_out) = match &head {
            Head::MultipleChoice => (HeadKind::MultipleChoice, 1),
            Head::Binary { labels, .. } => {
                (HeadKind::SequenceClassification(labels.len()), labels.len())
            }
        };
        let weights = models::weights_file(dir)?;
        // Every encoder tensor against config.json before anything is loaded.
        arch.check_weights(&weights, &cfg)?;
        let mut encoder = load_encoder(arch, &cfg, &weights, device, dtype, engine)?;
        encoder.first_token_only();
        let hidden = cfg.bert.hidden_size;
        let classifier = ClassifierHead::load(encoder.as_ref(), &arch.head(kind), hidden, n_out)
            .map_err(|e| models::weights_error(&weights, e))?;
        encoder.release_unused();
        let tokenizer = PairTokenizer::load(dir, arch, &cfg, max_length)?;
        Ok(Judge {
            model_type: cfg.model_type.clone(),
            head,
            encoder,
            classifier,
            tokenizer,
            dims: (
                cfg.bert.num_hidden_layers,
                hidden,
                cfg.bert.intermediate_size,
            ),
        })
    }

    /// (layers, hidden size, feed-forward size) of the encoder, for FLOP counts.
    pub fn dims(&self) -> (usize, usize, usize) {
        self.dims
    }

    /// Which implementation runs the encoder (for reports).
    pub fn engine(&self) -> &'static str {
        self.encoder.name()
    }

    /// The architecture, as config.json's `model_type`.
    pub fn arch(&self) -> &str {
        &self.model_type
    }

    /// The head.
    pub fn head(&self) -> &Head {
        &self.head
    }

    /// Tokens per input after truncation.
    pub fn max_length(&self) -> usize {
        self.tokenizer.max_length
    }

    /// Tokenize pairs as the dataset authors did (see [`PairTokenizer::encode`]).
    pub fn encode(&self, pairs: &[(String, String)]) -> Result<Vec<Tokens>> {
        self.tokenizer.encode(pairs)
    }

    /// Raw head outputs per pair: 1 logit (multiple choice) or one per label (classifier).
    pub fn logits(
        &self,
        pairs: &[(String, String)],
        batch_tokens: usize,
        progress: &ProgressBar,
    ) -> Result<Vec<Vec<f32>>> {
        let encoded = self.encode(pairs)?;
        run_batched(&encoded, batch_tokens, progress, |batch| {
            let run = || -> candle_core::Result<Vec<Vec<f32>>> {
                let hidden = self.encoder.forward(batch)?;
                self.classifier.forward(&hidden)?.to_vec2::<f32>()
            };
            run().map_err(|e| Error::Internal(anyhow!("judge model: {e}")))
        })
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
}

/// A judge's tokenizer: (first, second) text pairs to token ids, as the dataset's authors
/// tokenised them. Shared by scoring ([`Judge`]) and training (`runtime::train`), so both see the
/// same ids for the same pair.
pub struct PairTokenizer {
    tokenizer: Tokenizer,
    /// Tokens per input after truncation.
    pub max_length: usize,
    /// Whether token type ids reach the model (BERT) or are all zeros (RoBERTa, DeBERTa-v3).
    type_ids: bool,
}

impl PairTokenizer {
    /// The tokenizer of model folder `dir` (tokenizer.json, or the architecture's older files),
    /// truncating to `max_length` capped by the model's own limit; refused when it has more
    /// tokens than the model's vocabulary.
    pub fn load(
        dir: &Path,
        arch: &dyn models::Architecture,
        cfg: &models::ModelConfig,
        max_length: Option<usize>,
    ) -> Result<Self> {
        let model_limit = cfg
            .max_tokens
            .min(tokenizer_limit(dir).unwrap_or(usize::MAX));
        let max_length = max_length.unwrap_or(model_limit).min(model_limit);
        let tokenizer = load_tokenizer(dir, arch, max_length)?;
        // A tokenizer of another model gives ids past the embedding table: refuse it here.
        let vocab = cfg.bert.vocab_size;
        let tokens = tokenizer.get_vocab_size(true);
        if tokens > vocab {
            let file = ["tokenizer.json", "spm.model", "vocab.json"]
                .into_iter()
                .find(|f| dir.join(f).exists())
                .unwrap_or("tokenizer.json");
            return Err(Error::Input(InputError::file(
                dir.join(file),
                format!(
                    "has {tokens} tokens but config.json's vocab_size is {vocab} (a tokenizer of another model?)"
                ),
            )));
        }
        Ok(PairTokenizer {
            tokenizer,
            max_length,
            type_ids: cfg.type_ids,
        })
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
    } else if class.is_empty() {
        // Without a class name, the user's flag says which head to expect.
        follow_label.is_some()
    } else {
        // A named class without either head (a sentence encoder's `BertModel`, say) would load
        // as far as the head's missing tensors, which reads like a corrupt file: name the
        // problem, as transformers does.
        return Err(Error::usage(format!(
            "judge {}: config.json's architectures names {class}, which has no multiple-choice or \
             sequence-classification head (a sentence encoder or a base model, not a judge). A \
             judge is a ...ForMultipleChoice model (such as the RoBERTa-large RACE judge, \
             `scorekit models list`), a ...ForSequenceClassification model with \
             --follow-label, or a Flan-T5 letter judge",
            dir.display()
        )));
    };
    if !classifier {
        if let Some(label) = follow_label {
            return Err(Error::setting(
                Setting::FollowLabel,
                Some(format!("{label:?}")),
                format!(
                    "judge {} is a multiple-choice model ({class}); a follow label is for \
                     sequence-classification judges",
                    dir.display()
                ),
            ));
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
        return Err(Error::setting(
            Setting::FollowLabel,
            None,
            format!(
                "judge {} is a sequence classifier ({class}); name the label that means \
                 \"follows\" (one of: {})",
                dir.display(),
                labels.join(", ")
            ),
        ));
    };
    let follow = labels.iter().position(|l| l == label).ok_or_else(|| {
        Error::setting(
            Setting::FollowLabel,
            Some(format!("{label:?}")),
            format!(
                "not a label of judge {} (labels: {})",
                dir.display(),
                labels.join(", ")
            ),
        )
    })?;
    Ok(Head::Binary { labels, follow })
}

/// tokenizer.json, or the architecture's older files (RoBERTa: vocab.json + merges.txt;
/// DeBERTa-v2/v3: spm.model).
fn load_tokenizer(
    dir: &Path,
    arch: &dyn models::Architecture,
    max_length: usize,
) -> Result<Tokenizer> {
    let file = dir.join("tokenizer.json");
    let mut tokenizer = if file.exists() {
        Tokenizer::from_file(&file).map_err(|e| anyhow!("cannot load {}: {e}", file.display()))?
    } else if let Some(legacy) = arch.legacy_tokenizer(dir) {
        legacy?
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

/// `model_max_length` from tokenizer_config.json, when it is a real limit (HF writes 1e30 for none).
fn tokenizer_limit(dir: &Path) -> Option<usize> {
    let text = std::fs::read_to_string(dir.join("tokenizer_config.json")).ok()?;
    let v: Value = serde_json::from_str(&text).ok()?;
    let n = v.get("model_max_length")?.as_f64()?;
    (1.0..1e9).contains(&n).then_some(n as usize)
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
            e.contains("follow_label") && e.contains("not, follow"),
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
        // A sentence encoder given as the judge: its class is named, not a missing tensor.
        let encoder: Map<String, Value> =
            serde_json::from_str(r#"{"architectures":["BertModel"]}"#).unwrap();
        let e = head_of(dir, &encoder, None).unwrap_err();
        assert_eq!(e.exit_code(), 2);
        let e = e.to_string();
        assert!(
            e.contains("BertModel") && e.contains("no multiple-choice"),
            "{e}"
        );
        // No class name: the flag decides, as before.
        let bare: Map<String, Value> = serde_json::from_str("{}").unwrap();
        assert_eq!(head_of(dir, &bare, None).unwrap(), Head::MultipleChoice);
    }
}
