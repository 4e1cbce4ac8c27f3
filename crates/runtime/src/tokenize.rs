//! Tokenisation shared by the embedder and the judges: load `tokenizer.json` with our own
//! truncation (the file's built-in padding and truncation are dropped), encode texts or text
//! pairs, and pad a batch into the tensors a BERT-family encoder takes.

use scorekit_core::error::{Error, InputError, Result};
use scorekit_encoder::Tokens;
use std::path::Path;
use tokenizers::{Tokenizer, TruncationDirection, TruncationParams, TruncationStrategy};

/// A loaded `tokenizer.json` that truncates to `max_length` tokens (special tokens counted).
#[derive(Clone)]
pub struct TextTokenizer {
    inner: Tokenizer,
    max_length: usize,
    pad_id: u32,
}

impl TextTokenizer {
    /// Load `path`, truncating to `max_length` (longest-first for pairs, as transformers does)
    /// and padding with `pad_id` (the config's `pad_token_id`, else the tokenizer's `[PAD]`/`<pad>`).
    pub fn load(path: &Path, max_length: usize, pad_id: Option<u32>) -> Result<Self> {
        let mut inner = Tokenizer::from_file(path).map_err(|e| {
            let why = if path.exists() {
                format!("not a valid tokenizer.json: {e}")
            } else {
                "missing: the model folder needs tokenizer.json (the fast-tokenizer file)".into()
            };
            Error::Input(InputError::file(path, why))
        })?;
        inner.with_padding(None);
        inner
            .with_truncation(Some(TruncationParams {
                direction: TruncationDirection::Right,
                max_length,
                strategy: TruncationStrategy::LongestFirst,
                stride: 0,
            }))
            .map_err(|e| {
                Error::Input(InputError::file(
                    path,
                    format!("cannot set truncation: {e}"),
                ))
            })?;
        let pad_id = pad_id
            .or_else(|| inner.token_to_id("[PAD]"))
            .or_else(|| inner.token_to_id("<pad>"))
            .unwrap_or(0);
        Ok(TextTokenizer {
            inner,
            max_length,
            pad_id,
        })
    }

    /// The truncation length.
    pub fn max_length(&self) -> usize {
        self.max_length
    }

    /// The id used for padding.
    pub fn pad_id(&self) -> u32 {
        self.pad_id
    }

    /// The underlying `tokenizers` tokenizer.
    pub fn inner(&self) -> &Tokenizer {
        &self.inner
    }

    /// Encode texts with special tokens, in parallel; output in input order.
    pub fn encode_all(&self, texts: &[String]) -> Result<Vec<Tokens>> {
        let inputs: Vec<&str> = texts.iter().map(String::as_str).collect();
        let enc = self
            .inner
            .encode_batch(inputs, true)
            .map_err(|e| anyhow::anyhow!("tokenisation failed: {e}"))?;
        Ok(enc.into_iter().map(to_tokens).collect())
    }
}

fn to_tokens(e: tokenizers::Encoding) -> Tokens {
    Tokens {
        ids: e.get_ids().to_vec(),
        type_ids: e.get_type_ids().to_vec(),
    }
}
