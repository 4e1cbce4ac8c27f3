//! T5's encoder stack (T5, T5 v1.1, Flan-T5) on scorekit's kernels, for the letter judge: the
//! prompt (~250 tokens) is nearly all of a letter judge's work, the answer (1–5 tokens) little,
//! so the encoder runs here in f32, bf16 or int8 products while the decoder stays on candle.
//!
//! As `transformers`' `T5Stack` for the encoder, per sequence on its real tokens only (what the
//! attention mask does in PyTorch, without the masked work): pre-normed blocks with T5's RMS
//! LayerNorm (no mean, no bias), attention without score scaling and with the first block's
//! relative position bias (bidirectional buckets) in every block, the feed-forward `wo(act(wi(h)))`
//! or `wo(act(wi_0(h)) · wi_1(h))`, and the final RMS norm. No product has a bias.
//!
//! The caller gives the token embeddings (the decoder keeps the shared table, so it is held
//! once) and reads the weights through [`ReadTensor`] (any of the Hub's weight forms), one
//! tensor at a time: each is packed and its f32 copy dropped, so peak memory is the packed
//! encoder plus one layer's tensors per thread.

use crate::{attention, err, AttnShape, Linear, Products, RelBias, Weight};
use rayon::prelude::*;
use scorekit_kernels::act::Activation;
use scorekit_kernels::cpu::Avx512;

/// Reads a tensor by its full name and shape as f32 (an error when it is missing or of
/// another shape).
pub type ReadTensor<'a> = &'a (dyn Fn(&str, &[usize]) -> candle_core::Result<Vec<f32>> + Sync);

/// The encoder's shape, from config.json (the runtime reads it with `models::t5::T5Config`).
#[derive(Debug, Clone, Copy)]
pub struct T5Shape {
    /// Hidden size.
    pub d_model: usize,
    /// Size of one attention head.
    pub d_kv: usize,
    /// Attention heads.
    pub heads: usize,
    /// Feed-forward inner size.
    pub d_ff: usize,
    /// Encoder blocks.
    pub layers: usize,
    /// Whether the feed-forward is gated (`wi_0`, `wi_1`).
    pub gated: bool,
    /// The feed-forward activation.
    pub act: Activation,
    /// Relative position buckets.
    pub buckets: usize,
    /// Distance beyond which relative positions share the last bucket.
    pub max_distance: usize,
    /// RMS norm epsilon.
    pub eps: f32,
    /// `transformers`' `_relative_position_bucket(rel, bidirectional, buckets, max_distance)`.
    pub bucket: fn(i64, bool, usize, usize) -> u32,
}

struct Block {
    qkv: Linear,
    o: Linear,
    attn_norm: Vec<f32>,
    wi: Linear,
    gate: Option<Linear>,
    wo: Linear,
    ff_norm: Vec<f32>,
}

/// T5's encoder on scorekit's kernels.
pub struct FastT5Encoder {
    blocks: Vec<Block>,
    final_norm: Vec<f32>,
    /// `[buckets, heads]`: the first block's `relative_attention_bias`.
    table: Vec<f32>,
    shape: T5Shape,
    /// The CPU runs AVX-512F (checked at load): the norm, activation and softmax rows run on it.
    cpu: Avx512,
}

impl FastT5Encoder {
    /// Load the encoder (`encoder.block.{i}`, `encoder.final_layer_norm`) through `read`, its
    /// products packed for `products`.
    pub fn load(
        read: ReadTensor,
        shape: T5Shape,
        products: Products,
    ) -> candle_core::Result<FastT5Encoder> {
        let cpu = products.check()?;
        let (d, inner, ff) = (shape.d_model, shape.heads * shape.d_kv, shape.d_ff);
        let lin = |w: Vec<f32>, n: usize, k: usize| Linear {
            w: Weight::pack(&w, n, k, products),
            b: vec![0.0; n],
        };
        let norm = |name: &str| read(&format!("{name}.weight"), &[d]);
        let table = read(
            "encoder.block.0.layer.0.SelfAttention.relative_attention_bias.weight",
            &[shape.buckets, shape.heads],
        )?;
        // Blocks are read and packed two at a time, each on its own thread: each holds a
        // block's f32 tensors until packed, so more at once would raise the peak with the core
        // count (the packing itself is parallel inside).
        let load_block = |l: usize| -> candle_core::Result<Block> {
            let p = format!("encoder.block.{l}.layer.");
            let mut wqkv = Vec::with_capacity(3 * inner * d);
            for m in ["q", "k", "v"] {
                wqkv.extend(read(
                    &format!("{p}0.SelfAttention.{m}.weight"),
                    &[inner, d],
                )?);
            }
            let ffp = format!("{p}1.DenseReluDense.");
            let (wi, gate) = if shape.gated {
                let wi = read(&format!("{ffp}wi_0.weight"), &[ff, d])?;
                let gate = read(&format!("{ffp}wi_1.weight"), &[ff, d])?;
                (lin(wi, ff, d), Some(lin(gate, ff, d)))
            } else {
                (
                    lin(read(&format!("{ffp}wi.weight"), &[ff, d])?, ff, d),
                    None,
                )
            };
            Ok(Block {
                qkv: lin(wqkv, 3 * inner, d),
                o: lin(
                    read(&format!("{p}0.SelfAttention.o.weight"), &[d, inner])?,
                    d,
                    inner,
                ),
                attn_norm: norm(&format!("{p}0.layer_norm"))?,
                wi,
                gate,
                wo: lin(read(&format!("{ffp}wo.weight"), &[d, ff])?, d, ff),
                ff_norm: norm(&format!("{p}1.layer_norm"))?,
            })
        };
        let mut blocks = Vec::with_capacity(shape.layers);
        for pair in (0..shape.layers).collect::<Vec<_>>().chunks(2) {
            let loaded: candle_core::Result<Vec<Block>> =
                pair.par_iter().map(|&l| load_block(l)).collect();
            blocks.extend(loaded?);
        }
        Ok(FastT5Encoder {
            blocks,
            final_norm: norm("encoder.final_layer_norm")?,
            table,
            shape,
            cpu,
        })
    }

    /// Which products run the encoder (for reports).
    pub fn products_name(&self) -> &'static str {
        self.blocks
            .first()
            .map_or("f32 AVX-512", |b| b.qkv.w.products_name())
    }

    /// The relative position bias of a batch whose longest sequence has `len` tokens.
    fn rel_bias(&self, len: usize) -> RelBias {
        let s = &self.shape;
        let span = 2 * len - 1;
        let mut per_head = vec![0f32; s.heads * span];
        for (i, rel) in (-(len as i64 - 1)..=len as i64 - 1).enumerate() {
            let b = (s.bucket)(rel, true, s.buckets, s.max_distance) as usize;
            for hd in 0..s.heads {
                per_head[hd * span + i] = self.table[b * s.heads + hd];
            }
        }
        RelBias { len, per_head }
    }

    /// RMS-normalise rows of `d_model` values in place.
    fn rms_rows(&self, x: &mut [f32], weight: &[f32]) {
        let (d, eps, cpu) = (self.shape.d_model, self.shape.eps, self.cpu);
        x.par_chunks_mut(d * 16).for_each(|rows| {
            for r in rows.chunks_mut(d) {
                cpu.rms_norm_row(r, weight, eps);
            }
        });
    }

    /// Run the encoder in place on token embeddings `x` (T×d_model, the sequences one after
    /// another; sequence i is rows `starts[i]..starts[i + 1]`): `x` ends as the final hidden
    /// states, after the final norm.
    pub fn forward(&self, x: &mut [f32], starts: &[usize]) -> candle_core::Result<()> {
        let s = &self.shape;
        let (d, inner, ff) = (s.d_model, s.heads * s.d_kv, s.d_ff);
        let t = *starts.last().unwrap_or(&0);
        if x.len() != t * d || starts.windows(2).any(|w| w[1] < w[0]) {
            return Err(err("T5 encoder: embeddings and sequence starts disagree"));
        }
        if starts.windows(2).any(|w| w[1] == w[0]) {
            return Err(err("T5 encoder: a prompt has no tokens"));
        }
        let longest = starts.windows(2).map(|w| w[1] - w[0]).max().unwrap_or(0);
        if t == 0 {
            return Ok(());
        }
        let bias = self.rel_bias(longest);
        let shape = AttnShape {
            heads: s.heads,
            d: s.d_kv,
            inner,
            // T5 folds the 1/√d scaling into its initialisation: scores are not scaled.
            scale: 1.0,
            cpu: self.cpu,
        };
        let mut h = vec![0f32; t * d];
        let mut qkv = vec![0f32; t * 3 * inner];
        let mut ctx = vec![0f32; t * inner];
        let mut mid = vec![0f32; t * ff];
        let mut gated = vec![0f32; if s.gated { t * ff } else { 0 }];
        for b in &self.blocks {
            h.copy_from_slice(x);
            self.rms_rows(&mut h, &b.attn_norm);
            b.qkv.run(t, &h, &mut qkv, false, false);
            attention(&qkv, starts, shape, Some(&bias), false, &mut ctx);
            b.o.run(t, &ctx, x, true, false);
            h.copy_from_slice(x);
            self.rms_rows(&mut h, &b.ff_norm);
            b.wi.run(t, &h, &mut mid, false, false);
            if let Some(g) = &b.gate {
                g.run(t, &h, &mut gated, false, false);
            }
            let (act, cpu) = (s.act, self.cpu);
            mid.par_chunks_mut(ff * 16)
                .enumerate()
                .for_each(|(i, rows)| {
                    let gate = (!gated.is_empty()).then(|| &gated[i * ff * 16..][..rows.len()]);
                    cpu.activate_row(rows, gate, act);
                });
            b.wo.run(t, &mid, x, true, false);
        }
        self.rms_rows(x, &self.final_norm);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use scorekit_kernels::gemm;

    fn bucket(rel: i64, _: bool, buckets: usize, _: usize) -> u32 {
        (rel.unsigned_abs() as usize).min(buckets - 1) as u32
    }

    /// A tiny encoder of small constant weights (d_model 20: not a multiple of 16, so every
    /// kernel's masked tail runs).
    fn tiny() -> FastT5Encoder {
        let read = |_: &str, shape: &[usize]| -> candle_core::Result<Vec<f32>> {
            Ok(vec![0.05; shape.iter().product()])
        };
        let shape = T5Shape {
            d_model: 20,
            d_kv: 6,
            heads: 3,
            d_ff: 36,
            layers: 3,
            gated: true,
            act: Activation::GeluTanh,
            buckets: 8,
            max_distance: 16,
            eps: 1e-6,
            bucket,
        };
        let products = Products {
            int8: false,
            amx: false,
            bf16: false,
            widen_bf16: false,
        };
        FastT5Encoder::load(&read, shape, products).unwrap()
    }

    #[test]
    fn a_prompt_without_tokens_is_an_error_not_a_panic() {
        if !gemm::available() {
            return;
        }
        let enc = tiny();
        let mut x = vec![0.3f32; 5 * 20];
        enc.forward(&mut x, &[0, 2, 5]).unwrap();
        assert!(x.iter().all(|v| v.is_finite()));
        let mut x = vec![0.3f32; 3 * 20];
        let e = enc.forward(&mut x, &[0, 0, 3]).unwrap_err().to_string();
        assert!(e.contains("no tokens"), "{e}");
        let e = enc.forward(&mut x, &[0, 3, 3]).unwrap_err().to_string();
        assert!(e.contains("no tokens"), "{e}");
        enc.forward(&mut [], &[0]).unwrap();
    }
}
