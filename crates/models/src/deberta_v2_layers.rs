//! The DeBERTa-v2/v3 encoder in candle (embeddings, disentangled self-attention with relative
//! position buckets, feed-forward, post-LayerNorm), for scoring and for training.
//!
//! Ported from candle-transformers 0.11.1 `src/models/debertav2.rs` (Copyright the Candle
//! authors, MIT or Apache-2.0), itself a port of `transformers`' `modeling_deberta_v2.py`, and
//! trimmed to what DeBERTa-v2/v3 encoders use. Why our own: candle's `StableDropout` is the
//! identity and its `LayerNorm` has no backward pass (see `bert_layers.rs`), so candle's model
//! cannot be trained; and a trained folder must be scored by the definition it was trained
//! with. Differences from candle's file, each following `transformers` 5: the key and value
//! projections read the hidden states (candle reads the query states; the same tensor in an
//! encoder), the embeddings' token-type table is `embedding_size` wide, the attention mask is
//! additive with the dtype's most negative finite value (`bert_layers::additive_mask`), and the scale
//! √(head size · factor) is computed in f32 as `transformers` computes it (then cast, so f64
//! runs match PyTorch's f64 runs). Padded query rows differ from `transformers` (they attend
//! to the real keys instead of uniformly to all): nothing reads them, as no real position ever
//! attends to a padded one. The convolution layer of DeBERTa-v2-xlarge/xxlarge
//! (`conv_kernel_size`) is refused when the config is read.
//!
//! Training ([`Train`]) runs the fused operations of `train::ops` (linear layers, LayerNorm,
//! masked softmax, GELU) and applies dropout where `transformers` does: on the embeddings, on
//! the relative-position embeddings in every layer (`pos_dropout`), on attention probabilities
//! and after both dense outputs of every layer.

use super::bert_layers::additive_mask;
use super::bert_layers::{Norm, Train};
use candle_core::{Device, Module, Tensor, D};
use candle_nn::{embedding, linear, linear_no_bias, Embedding, Linear, VarBuilder};
use candle_transformers::models::bert::HiddenAct;
use scorekit_autograd::{ops, Precision};

/// What the DeBERTa-v2 layers need from config.json (with the defaults of `transformers`).
#[derive(Debug, Clone, PartialEq)]
pub struct DebertaSpec {
    /// Vocabulary size.
    pub vocab_size: usize,
    /// Hidden size.
    pub hidden_size: usize,
    /// Embedding width (`embedding_size`, else the hidden size; projected when they differ).
    pub embedding_size: usize,
    /// Layers.
    pub layers: usize,
    /// Attention heads.
    pub heads: usize,
    /// Feed-forward width.
    pub intermediate_size: usize,
    /// Feed-forward activation.
    pub act: HiddenAct,
    /// LayerNorm epsilon.
    pub eps: f64,
    /// Absolute position table size.
    pub max_position_embeddings: usize,
    /// Whether absolute position embeddings are added (`position_biased_input`).
    pub position_biased_input: bool,
    /// Token-type table size (0: none).
    pub type_vocab_size: usize,
    /// Disentangled relative attention (`relative_attention`).
    pub relative_attention: bool,
    /// `max_relative_positions` (below 1: `max_position_embeddings`).
    pub max_relative_positions: i64,
    /// `position_buckets` (below 1: no buckets).
    pub position_buckets: i64,
    /// Relative positions use the content projections (`share_att_key`).
    pub share_att_key: bool,
    /// Content-to-position attention (`"c2p"` in `pos_att_type`).
    pub c2p: bool,
    /// Position-to-content attention (`"p2c"` in `pos_att_type`).
    pub p2c: bool,
    /// LayerNorm on the relative embeddings (`norm_rel_ebd` contains `layer_norm`).
    pub norm_rel_ebd: bool,
}

impl DebertaSpec {
    /// `max_relative_positions`, or `max_position_embeddings` where it is below 1.
    fn max_relative(&self) -> i64 {
        if self.max_relative_positions < 1 {
            self.max_position_embeddings as i64
        } else {
            self.max_relative_positions
        }
    }

    /// Relative positions each side (`pos_ebd_size`): the buckets, else the maximum.
    pub fn att_span(&self) -> usize {
        if self.position_buckets > 0 {
            self.position_buckets as usize
        } else {
            self.max_relative() as usize
        }
    }

    /// 1 + one per relative attention kind: the scale is √(head size · factor).
    fn scale_factor(&self) -> usize {
        1 + usize::from(self.c2p) + usize::from(self.p2c)
    }
}

/// `transformers`' `make_log_bucket_position` for one relative position, in f32 as PyTorch
/// computes it (the default float dtype).
fn log_bucket(rel: i64, buckets: i64, max_position: i64) -> i64 {
    let mid = buckets / 2;
    let abs = if rel < mid && rel > -mid {
        mid - 1
    } else {
        rel.abs()
    };
    if abs <= mid {
        return rel;
    }
    let ratio = ((max_position - 1) as f64 / mid as f64) as f32;
    let log = ((abs as f32 / mid as f32).ln() / ratio.ln() * (mid - 1) as f32).ceil() + mid as f32;
    log as i64 * rel.signum()
}

/// The relative position `i − j` of query `i` and key `j` (bucketed where the config says),
/// row-major `[s, s]`: `transformers`' `build_relative_position`.
pub fn relative_positions(s: usize, spec: &DebertaSpec) -> Vec<i64> {
    let (buckets, max) = (spec.position_buckets, spec.max_relative());
    let mut v = Vec::with_capacity(s * s);
    for i in 0..s as i64 {
        for j in 0..s as i64 {
            let rel = i - j;
            v.push(if buckets > 0 && max > 0 {
                log_bucket(rel, buckets, max)
            } else {
                rel
            });
        }
    }
    v
}

/// The gather indices of content-to-position and position-to-content attention: `rel + span`
/// and `−rel + span`, clamped to the table, `[b, heads, s, s]`.
fn gather_indices(
    spec: &DebertaSpec,
    b: usize,
    s: usize,
    device: &Device,
) -> candle_core::Result<(Tensor, Tensor)> {
    let span = spec.att_span() as i64;
    let rel = relative_positions(s, spec);
    let clamp = |v: i64| v.clamp(0, 2 * span - 1) as u32;
    let c2p: Vec<u32> = rel.iter().map(|&r| clamp(r + span)).collect();
    let p2c: Vec<u32> = rel.iter().map(|&r| clamp(span - r)).collect();
    let shape = (b, spec.heads, s, s);
    let expand = |v: Vec<u32>| -> candle_core::Result<Tensor> {
        Tensor::from_vec(v, (1, 1, s, s), device)?
            .broadcast_as(shape)?
            .contiguous()
    };
    Ok((expand(c2p)?, expand(p2c)?))
}

/// √(head size · factor) as `transformers` computes it (`torch.sqrt` of an f32 tensor), as f64.
fn attention_scale(head_size: usize, factor: usize) -> f64 {
    ((head_size * factor) as f32).sqrt() as f64
}

struct Layer {
    query: Linear,
    key: Linear,
    value: Linear,
    /// Without `share_att_key`: the relative positions' own projections.
    pos_key: Option<Linear>,
    pos_query: Option<Linear>,
    attn_out: Linear,
    attn_norm: Norm,
    intermediate: Linear,
    output: Linear,
    out_norm: Norm,
}

/// Dropout and operations of one forward pass: scoring (`None`) or training.
struct Mode<'a> {
    train: Option<&'a mut Train>,
}

impl Mode<'_> {
    fn is_train(&self) -> bool {
        self.train.is_some()
    }

    /// The precision of the products (f32 when scoring).
    fn precision(&self) -> Precision {
        self.train.as_ref().map_or(Precision::F32, |t| t.precision)
    }

    /// `a · b` in the run's precision.
    fn matmul(&self, a: &Tensor, b: &Tensor) -> candle_core::Result<Tensor> {
        self.precision().matmul(a, b)
    }

    /// Dropout on hidden states (`hidden_dropout_prob`).
    fn hidden(&mut self, x: Tensor) -> candle_core::Result<Tensor> {
        match self.train.as_deref_mut() {
            Some(t) => t.dropout(&x, t.hidden),
            None => Ok(x),
        }
    }

    /// Dropout on attention probabilities (`attention_probs_dropout_prob`).
    fn attention(&mut self, x: Tensor) -> candle_core::Result<Tensor> {
        match self.train.as_deref_mut() {
            Some(t) => t.dropout(&x, t.attention),
            None => Ok(x),
        }
    }

    /// A linear layer: the fused differentiable one in training, candle's when scoring.
    fn linear(&self, l: &Linear, x: &Tensor) -> candle_core::Result<Tensor> {
        if self.is_train() {
            self.precision().linear(x, l.weight(), l.bias())
        } else {
            l.forward(x)
        }
    }
}

/// The DeBERTa-v2/v3 encoder (`embeddings.*`, `encoder.*`).
pub struct DebertaV2Encoder {
    spec: DebertaSpec,
    word: Embedding,
    position: Option<Embedding>,
    token_type: Option<Embedding>,
    embed_proj: Option<Linear>,
    emb_norm: Norm,
    layers: Vec<Layer>,
    /// `encoder.rel_embeddings`, with relative attention.
    rel_embeddings: Option<Embedding>,
    /// `encoder.LayerNorm` on the relative embeddings (`norm_rel_ebd`).
    rel_norm: Option<Norm>,
    head_size: usize,
}

impl DebertaV2Encoder {
    /// Load from `vb` (the encoder's prefix: `embeddings.*` and `encoder.*` below it).
    pub fn load(vb: VarBuilder, spec: &DebertaSpec) -> candle_core::Result<Self> {
        let (h, e) = (spec.hidden_size, spec.embedding_size);
        let emb = vb.pp("embeddings");
        let enc = vb.pp("encoder");
        let head_size = h / spec.heads;
        let layers = (0..spec.layers)
            .map(|i| {
                let vb = enc.pp(format!("layer.{i}"));
                let a = vb.pp("attention");
                let s = a.pp("self");
                let own = spec.relative_attention && !spec.share_att_key;
                Ok(Layer {
                    query: linear(h, h, s.pp("query_proj"))?,
                    key: linear(h, h, s.pp("key_proj"))?,
                    value: linear(h, h, s.pp("value_proj"))?,
                    pos_key: if own && spec.c2p {
                        Some(linear(h, h, s.pp("pos_key_proj"))?)
                    } else {
                        None
                    },
                    pos_query: if own && spec.p2c {
                        Some(linear(h, h, s.pp("pos_query_proj"))?)
                    } else {
                        None
                    },
                    attn_out: linear(h, h, a.pp("output.dense"))?,
                    attn_norm: Norm::load(h, spec.eps, a.pp("output.LayerNorm"))?,
                    intermediate: linear(h, spec.intermediate_size, vb.pp("intermediate.dense"))?,
                    output: linear(spec.intermediate_size, h, vb.pp("output.dense"))?,
                    out_norm: Norm::load(h, spec.eps, vb.pp("output.LayerNorm"))?,
                })
            })
            .collect::<candle_core::Result<Vec<_>>>()?;
        let rel_embeddings = if spec.relative_attention {
            Some(embedding(2 * spec.att_span(), h, enc.pp("rel_embeddings"))?)
        } else {
            None
        };
        let rel_norm = if spec.norm_rel_ebd {
            Some(Norm::load(h, spec.eps, enc.pp("LayerNorm"))?)
        } else {
            None
        };
        Ok(DebertaV2Encoder {
            word: embedding(spec.vocab_size, e, emb.pp("word_embeddings"))?,
            position: if spec.position_biased_input {
                Some(embedding(
                    spec.max_position_embeddings,
                    e,
                    emb.pp("position_embeddings"),
                )?)
            } else {
                None
            },
            token_type: if spec.type_vocab_size > 0 {
                Some(embedding(
                    spec.type_vocab_size,
                    e,
                    emb.pp("token_type_embeddings"),
                )?)
            } else {
                None
            },
            embed_proj: if e != h {
                Some(linear_no_bias(e, h, emb.pp("embed_proj"))?)
            } else {
                None
            },
            emb_norm: Norm::load(h, spec.eps, emb.pp("LayerNorm"))?,
            layers,
            rel_embeddings,
            rel_norm,
            head_size,
            spec: spec.clone(),
        })
    }

    /// `[b, s]` ids, types and 0/1 mask in, `[b, s, h]` hidden states out; training mode with
    /// `train`.
    pub fn forward(
        &self,
        input_ids: &Tensor,
        token_type_ids: &Tensor,
        attention_mask: &Tensor,
        train: Option<&mut Train>,
    ) -> candle_core::Result<Tensor> {
        let mut mode = Mode { train };
        let is_train = mode.is_train();
        let (b, s) = input_ids.dims2()?;
        let device = input_ids.device();
        // Embeddings: words (+ positions) (+ types), projected, normalised, padding zeroed.
        let mut x = self.word.forward(input_ids)?;
        if let Some(p) = &self.position {
            let positions = Tensor::arange(0u32, s as u32, device)?;
            x = x.broadcast_add(&p.forward(&positions)?)?;
        }
        if let Some(t) = &self.token_type {
            x = (x + t.forward(token_type_ids)?)?;
        }
        if let Some(p) = &self.embed_proj {
            x = mode.linear(p, &x)?;
        }
        let x = self.emb_norm.forward(&x, is_train)?;
        let keep = attention_mask.to_dtype(x.dtype())?.unsqueeze(2)?;
        let mut x = mode.hidden(x.broadcast_mul(&keep)?)?;
        let mask = additive_mask(attention_mask, x.dtype())?;
        let rel = match &self.rel_embeddings {
            Some(r) => {
                let span = self.spec.att_span();
                let table = r.embeddings().narrow(0, 0, 2 * span)?;
                let table = match &self.rel_norm {
                    Some(n) => n.forward(&table, is_train)?,
                    None => table,
                };
                let (c2p, p2c) = gather_indices(&self.spec, b, s, device)?;
                Some((table, c2p, p2c))
            }
            None => None,
        };
        for l in &self.layers {
            x = self.layer(l, &x, &mask, rel.as_ref(), &mut mode)?;
        }
        Ok(x)
    }

    fn layer(
        &self,
        l: &Layer,
        x: &Tensor,
        mask: &Tensor,
        rel: Option<&(Tensor, Tensor, Tensor)>,
        mode: &mut Mode,
    ) -> candle_core::Result<Tensor> {
        let (b, s, _) = x.dims3()?;
        let heads = self.spec.heads;
        let d = self.head_size;
        let split = |t: Tensor| -> candle_core::Result<Tensor> {
            t.reshape((b, s, heads, d))?.transpose(1, 2)?.contiguous()
        };
        let q = split(mode.linear(&l.query, x)?)?;
        let k = split(mode.linear(&l.key, x)?)?;
        let v = split(mode.linear(&l.value, x)?)?;
        let precision = mode.precision();
        // Autocast keeps these element-wise results in bf16, and `transformers` divides by the
        // scale cast to the scores' dtype (`scale.to(dtype=...)`): bf16-mixed rounds both.
        let round = |t: Tensor| precision.round(&t);
        let scale = precision.round_scalar(attention_scale(d, self.spec.scale_factor()));
        // As `transformers`: the keys divided by the scale, then the product.
        let mut scores = mode.matmul(&q, &round((k.t()? / scale)?)?)?;
        if let Some((table, c2p_idx, p2c_idx)) = rel {
            let table = mode.hidden(table.clone())?;
            let rows = table.dim(0)?;
            // `[2·span, h]` → `[1, heads, 2·span, d]`, as many times as the batch has sequences.
            let per_head = |t: Tensor| -> candle_core::Result<Tensor> {
                t.reshape((rows, heads, d))?
                    .transpose(0, 1)?
                    .unsqueeze(0)?
                    .broadcast_as((b, heads, rows, d))?
                    .contiguous()
            };
            let mut bias: Option<Tensor> = None;
            if self.spec.c2p {
                let proj = l.pos_key.as_ref().unwrap_or(&l.key);
                let pos_k = per_head(mode.linear(proj, &table)?)?;
                let c2p = mode.matmul(&q, &pos_k.t()?)?.gather(c2p_idx, D::Minus1)?;
                bias = Some(round((c2p / scale)?)?);
            }
            if self.spec.p2c {
                let proj = l.pos_query.as_ref().unwrap_or(&l.query);
                let pos_q = per_head(mode.linear(proj, &table)?)?;
                let p2c = mode
                    .matmul(&k, &pos_q.t()?)?
                    .gather(p2c_idx, D::Minus1)?
                    .t()?;
                let p2c = round((p2c / scale)?)?;
                bias = Some(match bias {
                    Some(c2p) => round((c2p + p2c)?)?,
                    None => p2c,
                });
            }
            if let Some(bias) = bias {
                scores = round((scores + bias)?)?;
            }
        }
        let probs = if mode.is_train() {
            ops::masked_softmax(&scores.contiguous()?, mask, 1.0)?
        } else {
            candle_nn::ops::softmax_last_dim(&scores.broadcast_add(mask)?)?
        };
        let probs = mode.attention(probs)?;
        let ctx = mode
            .matmul(&probs, &v)?
            .transpose(1, 2)?
            .contiguous()?
            .flatten_from(D::Minus2)?;
        let a = mode.hidden(mode.linear(&l.attn_out, &ctx)?)?;
        let a = l.attn_norm.forward(&(a + x)?, mode.is_train())?;
        let i = mode.linear(&l.intermediate, &a)?;
        let i = match self.spec.act {
            HiddenAct::Gelu if mode.is_train() => ops::gelu_erf(&i)?,
            HiddenAct::Gelu => i.gelu_erf()?,
            HiddenAct::GeluApproximate => i.gelu()?,
            HiddenAct::Relu => i.relu()?,
        };
        let o = mode.hidden(mode.linear(&l.output, &i)?)?;
        l.out_norm.forward(&(o + a)?, mode.is_train())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(buckets: i64, max_rel: i64) -> DebertaSpec {
        DebertaSpec {
            vocab_size: 10,
            hidden_size: 8,
            embedding_size: 8,
            layers: 1,
            heads: 2,
            intermediate_size: 16,
            act: HiddenAct::Gelu,
            eps: 1e-7,
            max_position_embeddings: 512,
            position_biased_input: false,
            type_vocab_size: 0,
            relative_attention: true,
            max_relative_positions: max_rel,
            position_buckets: buckets,
            share_att_key: true,
            c2p: true,
            p2c: true,
            norm_rel_ebd: true,
        }
    }

    /// DeBERTa-v3's buckets (256 buckets, 512 positions): `transformers`' values, computed with
    /// `make_log_bucket_position` in PyTorch 2.15 for these distances.
    #[test]
    fn log_buckets_match_transformers() {
        let cases = [
            (0, 0),
            (1, 1),
            (-1, -1),
            (127, 127),
            (128, 128),
            (129, 129),
            (130, 130),
            (200, 169),
            (-200, -169),
            (300, 207),
            (511, 255),
            (-511, -255),
        ];
        for (rel, want) in cases {
            assert_eq!(log_bucket(rel, 256, 512), want, "distance {rel}");
        }
        // The tiny test judges' buckets (16 buckets, 128 positions), distances 0..=127: the
        // first distance of each bucket, from PyTorch (the table is symmetric in sign).
        let firsts = [
            (9, 9),
            (12, 10),
            (18, 11),
            (27, 12),
            (39, 13),
            (58, 14),
            (86, 15),
        ];
        let s = spec(16, 128);
        let rel = relative_positions(128, &s);
        for d in 0..128i64 {
            let want = firsts
                .iter()
                .rev()
                .find(|(from, _)| d >= *from)
                .map_or(d, |&(_, b)| b);
            // Row d, column 0: distance d; row 0, column d: distance −d.
            assert_eq!(rel[d as usize * 128], want, "distance {d}");
            assert_eq!(rel[d as usize], -want, "distance -{d}");
        }
        // Without buckets: plain distances, spans from the config.
        let plain = spec(-1, -1);
        assert_eq!(
            relative_positions(3, &plain),
            vec![0, -1, -2, 1, 0, -1, 2, 1, 0]
        );
        assert_eq!(plain.att_span(), 512);
        assert_eq!(spec(256, 512).att_span(), 256);
    }

    #[test]
    fn the_scale_is_computed_in_f32() {
        // √24 in f32, widened: what PyTorch's f64 models divide by.
        assert_eq!(attention_scale(8, 3), (24f32).sqrt() as f64);
        assert_ne!(attention_scale(8, 3), 24f64.sqrt());
    }
}
