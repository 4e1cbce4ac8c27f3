//! Tokenisation shared by the embedder and the judges: load `tokenizer.json` with our own
//! truncation (the file's built-in padding and truncation are dropped), encode texts or text
//! pairs, and pad a batch into the tensors a BERT-family encoder takes.

use crate::error::{Error, InputError, Result};
use candle_core::{Device, Tensor};
use std::path::Path;
use tokenizers::{Tokenizer, TruncationDirection, TruncationParams, TruncationStrategy};

/// The token ids of one input (a text or a pair), before padding.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tokens {
    /// Token ids, special tokens included.
    pub ids: Vec<u32>,
    /// Segment ids (0 for the first text, 1 for the second of a pair).
    pub type_ids: Vec<u32>,
}

impl Tokens {
    /// Number of tokens.
    pub fn len(&self) -> usize {
        self.ids.len()
    }

    /// Whether there are no tokens at all.
    pub fn is_empty(&self) -> bool {
        self.ids.is_empty()
    }
}

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

    /// Encode (first, second) pairs with special tokens, truncating longest-first.
    pub fn encode_pairs(&self, pairs: &[(String, String)]) -> Result<Vec<Tokens>> {
        let inputs: Vec<tokenizers::EncodeInput> = pairs
            .iter()
            .map(|(a, b)| (a.as_str(), b.as_str()).into())
            .collect();
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

/// Encoder inputs for a batch, right-padded to the longest row.
#[derive(Debug, Clone)]
pub struct PaddedBatch {
    /// `[batch, len]` u32 token ids.
    pub input_ids: Tensor,
    /// `[batch, len]` u32, 1 for real tokens and 0 for padding.
    pub attention_mask: Tensor,
    /// `[batch, len]` u32 segment ids.
    pub token_type_ids: Tensor,
    /// Unpadded length of each row.
    pub lengths: Vec<usize>,
}

/// Right-pad `rows` to the longest one and build the three input tensors on `device`.
///
/// Right padding keeps token 0 (`[CLS]`/`<s>`) unmasked in every row, which is what CLS pooling
/// and the half-precision masks of candle's BERT rely on.
pub fn pad_batch(rows: &[&Tokens], pad_id: u32, device: &Device) -> Result<PaddedBatch> {
    let len = rows.iter().map(|r| r.len()).max().unwrap_or(0).max(1);
    let n = rows.len();
    let mut ids = Vec::with_capacity(n * len);
    let mut mask = Vec::with_capacity(n * len);
    let mut types = Vec::with_capacity(n * len);
    for r in rows {
        let pad = len - r.len();
        ids.extend_from_slice(&r.ids);
        ids.extend(std::iter::repeat_n(pad_id, pad));
        mask.extend(std::iter::repeat_n(1u32, r.len()));
        mask.extend(std::iter::repeat_n(0u32, pad));
        types.extend_from_slice(&r.type_ids);
        types.extend(std::iter::repeat_n(0u32, pad));
    }
    let t = |v: Vec<u32>| Tensor::from_vec(v, (n, len), device).map_err(|e| anyhow::anyhow!(e));
    Ok(PaddedBatch {
        input_ids: t(ids)?,
        attention_mask: t(mask)?,
        token_type_ids: t(types)?,
        lengths: rows.iter().map(|r| r.len()).collect(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pads_right_with_mask() {
        let a = Tokens {
            ids: vec![101, 7, 102],
            type_ids: vec![0, 0, 0],
        };
        let b = Tokens {
            ids: vec![101, 102],
            type_ids: vec![0, 0],
        };
        let p = pad_batch(&[&a, &b], 0, &Device::Cpu).unwrap();
        assert_eq!(
            p.input_ids.to_vec2::<u32>().unwrap(),
            vec![vec![101, 7, 102], vec![101, 102, 0]]
        );
        assert_eq!(
            p.attention_mask.to_vec2::<u32>().unwrap(),
            vec![vec![1, 1, 1], vec![1, 1, 0]]
        );
        assert_eq!(p.lengths, vec![3, 2]);
    }
}
