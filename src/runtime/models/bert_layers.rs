//! The BERT encoder layers (self-attention, feed-forward, post-LayerNorm) that BERT, RoBERTa,
//! XLM-R and ELECTRA share, in candle, for scoring and for training.
//!
//! Why our own and not `candle_transformers::models::bert::BertEncoder` (whose arithmetic this
//! copies operation for operation): in candle 0.11.1 that encoder cannot be trained. Its
//! `Dropout` is the identity (a `TODO` in candle's source), and its `LayerNorm` runs the fused
//! `candle_nn::ops::layer_norm`, which is registered without a backward pass
//! (`apply_op3_no_bwd`), so gradients stop at the first LayerNorm they meet. Here scoring runs
//! the same fused LayerNorm (same numbers as before), and training ([`Train`]) runs the fused
//! operations of `train::ops` (linear layers, LayerNorm, masked softmax, GELU, each with a
//! backward pass) and applies dropout from a seeded generator, so that a training run can be
//! repeated and resumed exactly.

use crate::runtime::train::ops;
use crate::runtime::train::rng::SplitMix;
use candle_core::{DType, Module, Tensor, D};
use candle_nn::{layer_norm, linear, LayerNorm, Linear, VarBuilder};
use candle_transformers::models::bert::{Config, HiddenAct};

/// Dropout probabilities of a training run and the generator of its masks.
#[derive(Debug, Clone, PartialEq)]
pub struct Train {
    /// Dropout on hidden states (embeddings, after each dense output).
    pub hidden: f64,
    /// Dropout on attention probabilities.
    pub attention: f64,
    /// The mask generator, saved in checkpoints.
    pub rng: SplitMix,
}

impl Train {
    /// Drop elements of `x` with probability `p` and scale the rest by 1 / (1 − p), as
    /// `torch.nn.functional.dropout` in training mode. `p = 0` draws nothing.
    pub fn dropout(&mut self, x: &Tensor, p: f64) -> candle_core::Result<Tensor> {
        if p <= 0.0 {
            return Ok(x.clone());
        }
        let keep = 1.0 / (1.0 - p);
        let n = x.elem_count();
        let threshold = (p * (1u64 << 24) as f64) as u64;
        let mask: Vec<f32> = (0..n)
            .map(|_| {
                if (self.rng.next_u64() >> 40) < threshold {
                    0.0
                } else {
                    keep as f32
                }
            })
            .collect();
        let mask = Tensor::from_vec(mask, x.shape(), x.device())?.to_dtype(x.dtype())?;
        x * mask
    }
}

/// A LayerNorm and its epsilon: candle's fused kernel when scoring, `train::ops::layer_norm`
/// (differentiable; the formula of `candle_nn::ops::layer_norm_slow`) when training.
#[derive(Clone)]
pub struct Norm {
    ln: LayerNorm,
    eps: f64,
}

impl Norm {
    /// `{vb}.weight` and `{vb}.bias` of width `h`.
    pub fn load(h: usize, eps: f64, vb: VarBuilder) -> candle_core::Result<Self> {
        Ok(Norm {
            ln: layer_norm(h, eps, vb)?,
            eps,
        })
    }

    /// Normalise the last dimension (differentiably when `train`).
    pub fn forward(&self, x: &Tensor, train: bool) -> candle_core::Result<Tensor> {
        // candle's fused kernel has no f64 (and no backward pass).
        if !train && x.dtype() != DType::F64 {
            return self.ln.forward(x);
        }
        let dtype = x.dtype();
        let internal = match dtype {
            DType::F16 | DType::BF16 => DType::F32,
            d => d,
        };
        let (w, b) = (self.ln.weight(), self.ln.bias());
        let y = match b {
            Some(b) if dtype == internal => return ops::layer_norm(x, w, b, self.eps),
            _ => ops::layer_norm(
                &x.to_dtype(internal)?,
                &w.to_dtype(internal)?,
                &match b {
                    Some(b) => b.to_dtype(internal)?,
                    None => w.zeros_like()?.to_dtype(internal)?,
                },
                self.eps,
            )?,
        };
        y.to_dtype(dtype)
    }
}

struct Layer {
    query: Linear,
    key: Linear,
    value: Linear,
    attn_out: Linear,
    attn_norm: Norm,
    intermediate: Linear,
    output: Linear,
    out_norm: Norm,
}

/// The stack of BERT layers (`encoder.layer.{i}.*`).
pub struct BertLayers {
    layers: Vec<Layer>,
    heads: usize,
    head_size: usize,
    act: HiddenAct,
}

impl BertLayers {
    /// Load `layer.{i}` for every layer of `cfg` from `vb` (the `encoder` prefix).
    pub fn load(vb: VarBuilder, cfg: &Config) -> candle_core::Result<Self> {
        let h = cfg.hidden_size;
        let layers = (0..cfg.num_hidden_layers)
            .map(|i| {
                let vb = vb.pp(format!("layer.{i}"));
                let a = vb.pp("attention");
                Ok(Layer {
                    query: linear(h, h, a.pp("self.query"))?,
                    key: linear(h, h, a.pp("self.key"))?,
                    value: linear(h, h, a.pp("self.value"))?,
                    attn_out: linear(h, h, a.pp("output.dense"))?,
                    attn_norm: Norm::load(h, cfg.layer_norm_eps, a.pp("output.LayerNorm"))?,
                    intermediate: linear(h, cfg.intermediate_size, vb.pp("intermediate.dense"))?,
                    output: linear(cfg.intermediate_size, h, vb.pp("output.dense"))?,
                    out_norm: Norm::load(h, cfg.layer_norm_eps, vb.pp("output.LayerNorm"))?,
                })
            })
            .collect::<candle_core::Result<Vec<_>>>()?;
        Ok(BertLayers {
            layers,
            heads: cfg.num_attention_heads,
            head_size: h / cfg.num_attention_heads,
            act: cfg.hidden_act,
        })
    }

    /// `[b, s, h]` states and `[b, 1, 1, s]` additive mask in, `[b, s, h]` out. With `train`:
    /// differentiable LayerNorm and dropout.
    pub fn forward(
        &self,
        x: &Tensor,
        mask: &Tensor,
        mut train: Option<&mut Train>,
    ) -> candle_core::Result<Tensor> {
        let mut x = x.clone();
        let is_train = train.is_some();
        let mut drop = |t: Tensor, attention: bool| match train.as_deref_mut() {
            Some(tr) => {
                let p = if attention { tr.attention } else { tr.hidden };
                tr.dropout(&t, p)
            }
            None => Ok(t),
        };
        // Training runs the fused operations with backward passes (`train::ops`); scoring keeps
        // candle's layers, whose numbers the scoring engines are compared against.
        let lin = |l: &Linear, x: &Tensor| -> candle_core::Result<Tensor> {
            if is_train {
                ops::linear(x, l.weight(), l.bias())
            } else {
                l.forward(x)
            }
        };
        let (b, s, _) = x.dims3()?;
        for l in &self.layers {
            let split = |t: Tensor| -> candle_core::Result<Tensor> {
                t.reshape((b, s, self.heads, self.head_size))?
                    .transpose(1, 2)?
                    .contiguous()
            };
            let q = split(lin(&l.query, &x)?)?;
            let k = split(lin(&l.key, &x)?)?;
            let v = split(lin(&l.value, &x)?)?;
            let probs = if is_train {
                let scale = 1.0 / (self.head_size as f64).sqrt();
                ops::masked_softmax(&q.matmul(&k.t()?)?, mask, scale)?
            } else {
                let scores = (q.matmul(&k.t()?)? / (self.head_size as f64).sqrt())?;
                candle_nn::ops::softmax(&scores.broadcast_add(mask)?, D::Minus1)?
            };
            let probs = drop(probs, true)?;
            let ctx = probs
                .matmul(&v)?
                .transpose(1, 2)?
                .contiguous()?
                .flatten_from(D::Minus2)?;
            let a = drop(lin(&l.attn_out, &ctx)?, false)?;
            let a = l.attn_norm.forward(&(a + &x)?, is_train)?;
            let i = lin(&l.intermediate, &a)?;
            let i = match self.act {
                HiddenAct::Gelu if is_train => ops::gelu_erf(&i)?,
                HiddenAct::Gelu => i.gelu_erf()?,
                HiddenAct::GeluApproximate => i.gelu()?,
                HiddenAct::Relu => i.relu()?,
            };
            let o = drop(lin(&l.output, &i)?, false)?;
            x = l.out_norm.forward(&(o + a)?, is_train)?;
        }
        Ok(x)
    }
}
