//! The encoder interface every model runs through, and nothing else: token sequences ([`Tokens`],
//! laid end to end in a [`Batch`]) in, hidden states ([`Hidden`]) out, through the [`Encoder`]
//! trait; the dense layers of heads ([`Linear`]); the layout a BERT-shaped model offers scorekit's
//! native engine ([`NativeLayout`]); and batching under a token budget ([`batching`],
//! [`run_batched`]).
//!
//! Two engines implement [`Encoder`]: scorekit's x86-64 kernels (`scorekit-native`, unpadded:
//! every product runs on real tokens only) and candle's layers (`scorekit-models`, padded: the
//! batch is padded to its longest sequence with an attention mask, on any device and dtype).
//! `scorekit_runtime::engine::load_encoder` picks one; heads (`models::heads`) take their dense
//! layers from the encoder ([`Encoder::linear`]) so that they run on the same engine and read the
//! same weight file.

pub mod batching;

use candle_core::{Device, Tensor};
use scorekit_core::error::Result;

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

/// Token sequences laid end to end, as variable-length attention takes them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Batch {
    /// Token ids of every sequence, concatenated.
    pub ids: Vec<u32>,
    /// Token type (segment) ids, aligned with `ids`.
    pub type_ids: Vec<u32>,
    /// Sequence boundaries: sequence `i` is `ids[cu_seqlens[i]..cu_seqlens[i + 1]]`.
    pub cu_seqlens: Vec<usize>,
}

impl Batch {
    /// Lay out tokenised rows end to end.
    pub fn from_rows(rows: &[&Tokens]) -> Self {
        let total = rows.iter().map(|t| t.ids.len()).sum();
        let mut b = Batch {
            ids: Vec::with_capacity(total),
            type_ids: Vec::with_capacity(total),
            cu_seqlens: Vec::with_capacity(rows.len() + 1),
        };
        b.cu_seqlens.push(0);
        for t in rows {
            b.ids.extend_from_slice(&t.ids);
            b.type_ids.extend_from_slice(&t.type_ids);
            b.cu_seqlens.push(b.ids.len());
        }
        b
    }

    /// Number of sequences.
    pub fn len(&self) -> usize {
        self.cu_seqlens.len().saturating_sub(1)
    }

    /// Whether the batch has no sequence.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Sequence `i` as (ids, type ids).
    pub fn seq(&self, i: usize) -> (&[u32], &[u32]) {
        let (a, b) = (self.cu_seqlens[i], self.cu_seqlens[i + 1]);
        (&self.ids[a..b], &self.type_ids[a..b])
    }

    /// Whether some sequence is shorter than the longest (a padded batch then pads it).
    pub fn has_padding(&self) -> bool {
        let max = self.max_len();
        (0..self.len()).any(|i| self.seq(i).0.len() < max)
    }

    /// Length of the longest sequence.
    pub fn max_len(&self) -> usize {
        self.cu_seqlens
            .windows(2)
            .map(|w| w[1] - w[0])
            .max()
            .unwrap_or(0)
    }

    /// Padded `[b, s]` ids, type ids and mask (1 for real tokens) on `device`, for padded engines.
    pub fn padded(&self, pad_id: u32, device: &Device) -> candle_core::Result<Padded> {
        let (b, s) = (self.len(), self.max_len().max(1));
        let mut ids = vec![pad_id; b * s];
        let mut types = vec![0u32; b * s];
        let mut mask = vec![0u32; b * s];
        for i in 0..b {
            let (row_ids, row_types) = self.seq(i);
            ids[i * s..][..row_ids.len()].copy_from_slice(row_ids);
            types[i * s..][..row_types.len()].copy_from_slice(row_types);
            mask[i * s..][..row_ids.len()].fill(1);
        }
        Ok(Padded {
            input_ids: Tensor::from_vec(ids, (b, s), device)?,
            token_type_ids: Tensor::from_vec(types, (b, s), device)?,
            attention_mask: Tensor::from_vec(mask, (b, s), device)?,
        })
    }
}

/// A padded batch on a device.
#[derive(Debug, Clone)]
pub struct Padded {
    /// `[b, s]` u32 token ids, padding with the model's pad id.
    pub input_ids: Tensor,
    /// `[b, s]` u32 token type ids, 0 on padding.
    pub token_type_ids: Tensor,
    /// `[b, s]` u32, 1 for real tokens and 0 for padding.
    pub attention_mask: Tensor,
}

/// Hidden states of a batch, in the layout the engine produced them.
#[derive(Debug, Clone)]
pub enum Hidden {
    /// `[T, h]`: every real token, sequences end to end (`cu_seqlens` as in the batch).
    Unpadded {
        /// The states.
        x: Tensor,
        /// Sequence boundaries.
        cu_seqlens: Vec<usize>,
    },
    /// `[b, h]`: the first token of each sequence only (the encoder was asked for no more).
    FirstTokens(Tensor),
    /// `[b, s, h]` with padding; `mask` is `[b, s]` u32.
    Padded {
        /// The states.
        x: Tensor,
        /// 1 for real tokens.
        mask: Tensor,
    },
}

/// A dense layer y = x·Wᵀ + b of a head, on the encoder's engine: `[m, k]` in, `[m, n]` out.
pub trait Linear: Send + Sync {
    /// Apply to `[m, k]` rows.
    fn forward(&self, x: &Tensor) -> candle_core::Result<Tensor>;
}

impl Linear for candle_nn::Linear {
    fn forward(&self, x: &Tensor) -> candle_core::Result<Tensor> {
        candle_core::Module::forward(self, x)
    }
}

/// A transformer encoder: token sequences in, hidden states out.
pub trait Encoder: Send + Sync {
    /// Run a batch. Unpadded engines take it as it is; padded ones pad it to its longest row.
    fn forward(&self, batch: &Batch) -> candle_core::Result<Hidden>;
    /// Whether the engine pads batches (then the budget of a batch counts padding).
    fn is_padded(&self) -> bool;
    /// The engine's name for reports (`settings.judge_engine`, `.meta.json`'s `engine`).
    fn name(&self) -> &'static str;
    /// Only the first token of each sequence will be read (CLS pooling, classification heads):
    /// an engine may skip the rest of the last layer.
    fn first_token_only(&mut self) {}
    /// A head's dense layer `{name}.weight` (`[n, k]`) and `{name}.bias` from the model's
    /// weight file, by its full name, on this engine.
    fn linear(&self, name: &str, n: usize, k: usize) -> candle_core::Result<Box<dyn Linear>>;
    /// Heads are built: free weight bytes that only they needed.
    fn release_unused(&mut self) {}
    /// The device the hidden states live on.
    fn device(&self) -> &Device;
}

/// What scorekit's native (x86-64) encoder needs to run a BERT-layout model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NativeLayout {
    /// Prefixes the encoder's tensors may carry (`""` for a base model, `"bert."` in a head model).
    pub prefixes: Vec<String>,
    /// Position of the first token: 0 for BERT, `pad_token_id + 1` for RoBERTa.
    pub pos_offset: usize,
}

/// Run `rows` through `run` in batches under a token budget, and return one output per row in
/// input order. Shared by the embedder and the judge; `progress` advances by rows.
pub fn run_batched<T: Default + Clone>(
    rows: &[Tokens],
    batch_tokens: usize,
    progress: &indicatif::ProgressBar,
    mut run: impl FnMut(&Batch) -> Result<Vec<T>>,
) -> Result<Vec<T>> {
    let lengths: Vec<usize> = rows.iter().map(Tokens::len).collect();
    let mut out = vec![T::default(); rows.len()];
    for plan in batching::plan_batches(&lengths, batch_tokens) {
        let picked: Vec<&Tokens> = plan.indices.iter().map(|&i| &rows[i]).collect();
        let results = run(&Batch::from_rows(&picked))?;
        for (&i, r) in plan.indices.iter().zip(results) {
            out[i] = r;
        }
        progress.inc(plan.indices.len() as u64);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tokens(ids: &[u32]) -> Tokens {
        Tokens {
            ids: ids.to_vec(),
            type_ids: vec![0; ids.len()],
        }
    }

    #[test]
    fn batch_lays_rows_end_to_end_and_pads_them_back() {
        let (a, b) = (tokens(&[5, 6, 7]), tokens(&[8]));
        let batch = Batch::from_rows(&[&a, &b]);
        assert_eq!(batch.ids, vec![5, 6, 7, 8]);
        assert_eq!(batch.cu_seqlens, vec![0, 3, 4]);
        assert_eq!(batch.seq(1).0, &[8]);
        let p = batch.padded(1, &Device::Cpu).unwrap();
        assert_eq!(
            p.input_ids.to_vec2::<u32>().unwrap(),
            vec![vec![5, 6, 7], vec![8, 1, 1]]
        );
        assert_eq!(
            p.attention_mask.to_vec2::<u32>().unwrap(),
            vec![vec![1, 1, 1], vec![1, 0, 0]]
        );
    }

    #[test]
    fn run_batched_returns_outputs_in_input_order() {
        let rows: Vec<Tokens> = [3usize, 1, 2]
            .iter()
            .map(|&n| tokens(&vec![1; n]))
            .collect();
        let bar = indicatif::ProgressBar::hidden();
        let out = run_batched(&rows, 2, &bar, |b| {
            Ok((0..b.len()).map(|i| b.seq(i).0.len()).collect())
        })
        .unwrap();
        assert_eq!(out, vec![3, 1, 2]);
    }
}
