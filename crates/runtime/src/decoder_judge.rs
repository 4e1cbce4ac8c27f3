//! The decoder letter judge: a decoder-only chat model (Llama, Qwen2, Qwen3, Mistral, Gemma 2,
//! Gemma 3, Phi-3; `models::decoder`) asked the letter judge's prompt as the one user message of its chat
//! template (`chat_template::judge_prompt`), its verdict read from one forward pass: the letter
//! among A–D whose single token has the largest next-token logit after the prompt's last token.
//!
//! No generation: the first answer token decides the pick, and reading the four logits gives the
//! same pick as greedy decoding whenever the model answers with a letter, with the letters'
//! share of the probability (`letter_mass`) to say how often it does.
//!
//! A prompt longer than the model's context (`max_position_embeddings`) keeps its last tokens
//! (the question, the options and the assistant's turn the verdict is read after); the prompts
//! cut are counted ([`DecoderJudge::truncated`]).

use crate::chat_template::{judge_prompt, ChatTemplate, JudgePrompt};
use crate::decoder_native::NativeDecoder;
use crate::engine::{products_on_kernels, EngineOptions};
use anyhow::anyhow;
use candle_core::{DType, Device};
use indicatif::ProgressBar;
use scorekit_core::error::{Error, InputError, Result};
use scorekit_encoder::{run_batched, Tokens};
use scorekit_models::decoder::model::Decoder;
use scorekit_models::decoder::{is_decoder_config, read_decoder_config, DecoderConfig};
use scorekit_models::shards::{var_builder_of, weight_files};
use scorekit_models::weights_error;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use tokenizers::Tokenizer;

/// The letters a verdict chooses among, in option order.
pub const LETTERS: [&str; 4] = ["A", "B", "C", "D"];

/// Whether the model folder `dir` holds a decoder-only model this judge runs: config.json's
/// `model_type` is a supported decoder family, or its class is a `...ForCausalLM` (an
/// unsupported one is then refused by name when loading).
pub fn is_decoder_judge(dir: &Path) -> bool {
    std::fs::read_to_string(dir.join("config.json"))
        .ok()
        .and_then(|t| serde_json::from_str::<Value>(&t).ok())
        .is_some_and(|c| is_decoder_config(&c))
}

/// One prompt's verdict.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Verdict {
    /// The next-token logits of the tokens of A, B, C, D.
    pub letter_logits: [f32; 4],
    /// The four letters' probability among all tokens.
    pub letter_mass: f32,
    /// The option picked: the letter with the largest logit (the first among equals).
    pub pick: usize,
    /// Whether the prompt was cut to the model's context.
    pub truncated: bool,
}

impl Verdict {
    /// The picked letter, as the answer text a letter judge gives.
    pub fn letter(&self) -> &'static str {
        LETTERS[self.pick]
    }
}

/// The model, on candle or on scorekit's kernels.
enum Model {
    Candle(Box<Decoder>),
    Native(Box<NativeDecoder>),
}

/// A loaded decoder letter judge.
pub struct DecoderJudge {
    model: Model,
    cfg: DecoderConfig,
    tokenizer: Tokenizer,
    template: Option<ChatTemplate>,
    system_prompt: Option<String>,
    letter_ids: [u32; 4],
    context: usize,
    engine: String,
    truncated: AtomicUsize,
}

impl DecoderJudge {
    /// Load a decoder folder: config.json (an unsupported family, rope type or activation is
    /// refused naming the field), tokenizer.json, the chat template if any, the weights in any of
    /// the Hub's forms (shards behind their index). Everything is checked before any scoring:
    /// each letter must be one token, a system prompt needs a chat template. `max_length`
    /// (`--max-length`) caps the context below the model's own. The model runs on scorekit's
    /// kernels where `engine` allows and they run here (`engine::products_on_kernels`), else on
    /// candle.
    pub fn load(
        dir: &Path,
        device: &Device,
        dtype: DType,
        engine: &EngineOptions,
        system_prompt: Option<&str>,
        max_length: Option<usize>,
    ) -> Result<DecoderJudge> {
        let on_kernels = products_on_kernels(engine, device, dtype)?;
        let config_path = dir.join("config.json");
        let cfg = read_decoder_config(&config_path)?;
        // Missing shards are named here, before anything is read.
        let files = weight_files(dir)?;
        let (tokenizer, tokenizer_file) = load_tokenizer(dir, &cfg)?;
        let letter_ids = letter_ids(&tokenizer, &tokenizer_file, dir)?;
        let template = ChatTemplate::from_model_dir(dir)?;
        // A system prompt without a template, or a template that raises, fails here.
        judge_prompt(template.as_ref(), "", system_prompt)?;
        let (model, engine) = if on_kernels {
            let native = crate::decoder_native::load(&files, &cfg, dtype, engine)?;
            let name = format!(
                "scorekit kernels ({}, {}; causal attention per sequence)",
                cfg.model_type,
                native.products_name()
            );
            (Model::Native(Box::new(native)), name)
        } else {
            let vb = var_builder_of(&files, dtype, device)?;
            let model = Decoder::load(vb, &cfg).map_err(|e| weights_error(&files.files()[0], e))?;
            let name = format!(
                "candle ({}, eager attention, {})",
                cfg.model_type,
                format!("{dtype:?}").to_lowercase()
            );
            (Model::Candle(Box::new(model)), name)
        };
        Ok(DecoderJudge {
            context: max_length.map_or(cfg.max_positions, |m| m.clamp(1, cfg.max_positions)),
            model,
            cfg,
            tokenizer,
            template,
            system_prompt: system_prompt.map(str::to_string),
            letter_ids,
            engine,
            truncated: AtomicUsize::new(0),
        })
    }

    /// Which implementation runs the model (for reports).
    pub fn engine(&self) -> &str {
        &self.engine
    }

    /// The architecture, as config.json's `model_type`.
    pub fn arch(&self) -> &str {
        &self.cfg.model_type
    }

    /// The token ids of A, B, C, D.
    pub fn letter_ids(&self) -> [u32; 4] {
        self.letter_ids
    }

    /// Tokens a prompt may have (the model's `max_position_embeddings`, or `--max-length`).
    pub fn context(&self) -> usize {
        self.context
    }

    /// Prompts cut to the context so far.
    pub fn truncated(&self) -> usize {
        self.truncated.load(Ordering::Relaxed)
    }

    /// The text `prompt` is sent as: through the chat template (with the system prompt), or
    /// plain for a model without one.
    pub fn render(&self, prompt: &str) -> Result<JudgePrompt> {
        judge_prompt(
            self.template.as_ref(),
            prompt,
            self.system_prompt.as_deref(),
        )
    }

    /// The token ids of each prompt as the model reads them (rendered, tokenized with or
    /// without special tokens as [`JudgePrompt`] says), and whether it was cut to the context.
    pub fn encode(&self, prompts: &[String]) -> Result<Vec<(Vec<u32>, bool)>> {
        prompts
            .iter()
            .map(|p| {
                let rendered = self.render(p)?;
                let enc = self
                    .tokenizer
                    .encode(rendered.text.as_str(), rendered.add_special_tokens)
                    .map_err(|e| anyhow!("decoder judge tokenizer failed: {e}"))?;
                let ids = enc.get_ids();
                if ids.is_empty() {
                    return Err(Error::usage("a decoder judge's prompt has no tokens"));
                }
                let cut = ids.len() > self.context;
                Ok((ids[ids.len().saturating_sub(self.context)..].to_vec(), cut))
            })
            .collect()
    }

    /// The verdict on each prompt, batched under `batch_tokens` (padded tokens per batch).
    pub fn verdicts(
        &self,
        prompts: &[String],
        batch_tokens: usize,
        progress: &ProgressBar,
    ) -> Result<Vec<Verdict>> {
        let encoded = self.encode(prompts)?;
        let rows: Vec<Tokens> = encoded
            .iter()
            .map(|(ids, _)| Tokens {
                ids: ids.clone(),
                type_ids: vec![0; ids.len()],
            })
            .collect();
        // `longrope`: a batch's longest row chooses the rope factors for every row (rope.rs), so
        // prompts up to the original context and longer ones are never batched together: each
        // verdict is then the prompt's own, batched or alone.
        let rope = &self.cfg.rope;
        let groups: Vec<Vec<usize>> = match &rope.long_inv_freq {
            Some(_) => {
                let (short, long) = (0..rows.len())
                    .partition(|&i| rows[i].ids.len() <= rope.original_max_positions);
                vec![short, long]
            }
            None => vec![(0..rows.len()).collect()],
        };
        let mut out = vec![Verdict::default(); rows.len()];
        for group in groups {
            let part: Vec<Tokens> = group.iter().map(|&i| rows[i].clone()).collect();
            let verdicts = run_batched(&part, batch_tokens, progress, |batch| {
                let ids: Vec<Vec<u32>> =
                    (0..batch.len()).map(|i| batch.seq(i).0.to_vec()).collect();
                let logits = self
                    .last_logits(&ids)
                    .map_err(|e| Error::Internal(anyhow!("decoder judge model: {e}")))?;
                Ok(logits.iter().map(|row| self.verdict(row)).collect())
            })?;
            for (i, v) in group.into_iter().zip(verdicts) {
                out[i] = v;
            }
        }
        let mut cut = 0;
        for (v, (_, truncated)) in out.iter_mut().zip(&encoded) {
            v.truncated = *truncated;
            cut += usize::from(*truncated);
        }
        self.truncated.fetch_add(cut, Ordering::Relaxed);
        Ok(out)
    }

    /// Next-token logits at the last token of each row of `ids`, on the model's engine.
    fn last_logits(&self, ids: &[Vec<u32>]) -> candle_core::Result<Vec<Vec<f32>>> {
        match &self.model {
            Model::Candle(m) => m.last_logits(ids)?.to_vec2::<f32>(),
            Model::Native(m) => m.last_logits(ids, &self.cfg),
        }
    }

    /// The verdict read from one row of next-token logits.
    fn verdict(&self, row: &[f32]) -> Verdict {
        let letter_logits = self.letter_ids.map(|id| row[id as usize]);
        let max = row.iter().copied().fold(f32::NEG_INFINITY, f32::max);
        let total: f64 = row.iter().map(|&x| f64::from(x - max).exp()).sum();
        let letters: f64 = letter_logits
            .iter()
            .map(|&x| f64::from(x - max).exp())
            .sum();
        let mut pick = 0;
        for (i, &l) in letter_logits.iter().enumerate() {
            if l > letter_logits[pick] {
                pick = i;
            }
        }
        Verdict {
            letter_logits,
            letter_mass: (letters / total) as f32,
            pick,
            truncated: false,
        }
    }
}

/// tokenizer.json, with no padding or truncation of its own; it must not have more tokens than
/// the model has embedding rows.
fn load_tokenizer(dir: &Path, cfg: &DecoderConfig) -> Result<(Tokenizer, PathBuf)> {
    let file = dir.join("tokenizer.json");
    if !file.exists() {
        return Err(Error::usage(format!(
            "decoder judge {}: no tokenizer.json",
            dir.display()
        )));
    }
    let mut tokenizer = Tokenizer::from_file(&file)
        .map_err(|e| Error::Input(InputError::file(&file, format!("cannot load: {e}"))))?;
    tokenizer.with_padding(None);
    tokenizer
        .with_truncation(None)
        .map_err(|e| anyhow!("decoder judge tokenizer: {e}"))?;
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
    Ok((tokenizer, file))
}

/// The one token of each letter, `encode(letter, add_special_tokens=False)`; a letter of
/// several tokens (or none) is an input error naming the model and the letter.
fn letter_ids(tokenizer: &Tokenizer, file: &Path, dir: &Path) -> Result<[u32; 4]> {
    let mut ids = [0u32; 4];
    for (slot, letter) in ids.iter_mut().zip(LETTERS) {
        let enc = tokenizer
            .encode(letter, false)
            .map_err(|e| anyhow!("decoder judge tokenizer failed: {e}"))?;
        match enc.get_ids() {
            [id] => *slot = *id,
            other => {
                return Err(Error::Input(InputError::file(
                    file,
                    format!(
                        "model {}: the letter {letter:?} is {} tokens ({other:?}), not one: the \
                         verdict reads one next-token logit per letter",
                        dir.display(),
                        other.len()
                    ),
                )))
            }
        }
    }
    Ok(ids)
}
