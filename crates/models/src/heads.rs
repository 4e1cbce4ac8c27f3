//! What runs on top of an encoder's hidden states, behind one [`Head`] trait: sentence-embedding
//! heads (pooling → Dense modules → normalise, as sentence-transformers) and classification heads
//! (first token → dense → activation → dense, as `transformers`' multiple-choice and
//! sequence-classification heads). Every head reads [`Hidden`] in whichever layout the engine
//! produced (unpadded, first tokens only, or padded with a mask).

use crate::arch::{Activation, HeadLayout};
use candle_core::{DType, IndexOp, Result, Tensor, D};
use scorekit_encoder::{Encoder, Hidden, Linear};

/// A head: hidden states of a batch in, one output row per sequence.
pub trait Head: Send + Sync {
    /// `[b, out]` for the batch's sequences.
    fn forward(&self, hidden: &Hidden) -> Result<Tensor>;
    /// Whether the head reads the first token only (the encoder may skip the rest).
    fn first_token_only(&self) -> bool;
}

/// How token vectors become one sentence vector.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pooling {
    /// The first token (`[CLS]`).
    Cls,
    /// Mean over real tokens.
    Mean,
    /// Element-wise max over real tokens.
    Max,
    /// Sum over real tokens divided by √length.
    MeanSqrtLen,
}

/// `[b, h]`: the first token of every sequence.
pub fn first_token(hidden: &Hidden) -> Result<Tensor> {
    match hidden {
        Hidden::FirstTokens(x) => Ok(x.clone()),
        Hidden::Padded { x, .. } => x.i((.., 0))?.contiguous(),
        Hidden::Unpadded { x, cu_seqlens } => {
            let starts: Vec<u32> = cu_seqlens[..cu_seqlens.len() - 1]
                .iter()
                .map(|&s| s as u32)
                .collect();
            let idx = Tensor::new(starts.as_slice(), x.device())?;
            x.index_select(&idx, 0)
        }
    }
}

/// Pool hidden states into one vector per sequence, in the encoder's dtype.
pub fn pool(hidden: &Hidden, pooling: Pooling) -> Result<Tensor> {
    if pooling == Pooling::Cls {
        return first_token(hidden);
    }
    match hidden {
        Hidden::FirstTokens(_) => Err(candle_core::Error::Msg(
            "internal: pooling over all tokens of an encoder asked for first tokens only".into(),
        )),
        Hidden::Padded { x, mask } => {
            let mask = mask.to_dtype(x.dtype())?.unsqueeze(2)?;
            match pooling {
                Pooling::Max => {
                    // Padding gets a very negative value so it never wins, as sentence-transformers does.
                    let neg = ((mask.ones_like()? - &mask)? * -1e9)?;
                    x.broadcast_add(&neg)?.max(1)
                }
                _ => {
                    let sum = x.broadcast_mul(&mask)?.sum(1)?;
                    let n = mask.sum(1)?.clamp(1e-9, f64::MAX)?;
                    sum.broadcast_div(&scale(n, pooling)?)
                }
            }
        }
        Hidden::Unpadded { x, cu_seqlens } => {
            // Per sequence over its own rows: the same sums, in the same order, as the padded
            // form (padding adds exact zeros there).
            let rows: Vec<Tensor> = cu_seqlens
                .windows(2)
                .map(|w| {
                    let seq = x.narrow(0, w[0], w[1] - w[0])?;
                    match pooling {
                        Pooling::Max => seq.max_keepdim(0),
                        _ => {
                            let n = Tensor::new(&[(w[1] - w[0]) as f32], x.device())?
                                .to_dtype(x.dtype())?
                                .clamp(1e-9, f64::MAX)?
                                .unsqueeze(0)?;
                            seq.sum_keepdim(0)?.broadcast_div(&scale(n, pooling)?)
                        }
                    }
                })
                .collect::<Result<_>>()?;
            Tensor::cat(&rows, 0)
        }
    }
}

/// The divisor of mean pooling: the count, or its square root.
fn scale(n: Tensor, pooling: Pooling) -> Result<Tensor> {
    if pooling == Pooling::MeanSqrtLen {
        n.sqrt()
    } else {
        Ok(n)
    }
}

/// A sentence-transformers `Dense` module: y = act(x·Wᵀ + b), act tanh or identity.
pub struct Dense {
    /// `[out, in]`.
    pub weight: Tensor,
    /// `[out]`, when the module has a bias.
    pub bias: Option<Tensor>,
    /// tanh after the product (else identity).
    pub tanh: bool,
}

impl Dense {
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        // The encoder's output may be f32 where the weights are not: scorekit's bf16 encoder
        // computes bf16 products but hands f32 hidden states on. The head computes in its
        // weights' dtype, as the encoder's own layers do.
        let x = x.to_dtype(self.weight.dtype())?;
        let mut x = x.broadcast_matmul(&self.weight.t()?)?;
        if let Some(b) = &self.bias {
            x = x.broadcast_add(b)?;
        }
        if self.tanh {
            x = x.tanh()?;
        }
        Ok(x)
    }
}

/// A sentence-transformers head: pooling → Dense modules → optional L2 normalisation; f32 out.
pub struct SentenceHead {
    /// The pooling.
    pub pooling: Pooling,
    /// Dense modules in order.
    pub dense: Vec<Dense>,
    /// A Normalize module at the end.
    pub normalize: bool,
}

impl Head for SentenceHead {
    fn forward(&self, hidden: &Hidden) -> Result<Tensor> {
        let mut x = pool(hidden, self.pooling)?;
        for d in &self.dense {
            x = d.forward(&x)?;
        }
        let mut x = x.to_dtype(DType::F32)?;
        if self.normalize {
            let norm = x
                .sqr()?
                .sum_keepdim(D::Minus1)?
                .sqrt()?
                .clamp(1e-12, f64::MAX)?;
            x = x.broadcast_div(&norm)?;
        }
        Ok(x)
    }

    fn first_token_only(&self) -> bool {
        self.pooling == Pooling::Cls
    }
}

/// A classification head of `transformers`: first token → dense → activation → dense.
pub struct ClassifierHead {
    first: Box<dyn Linear>,
    act: Activation,
    second: Box<dyn Linear>,
}

impl ClassifierHead {
    /// Load the head's two layers from the encoder's weight file (on its engine): hidden →
    /// hidden, then hidden → `n_out`.
    pub fn load(
        encoder: &dyn Encoder,
        layout: &HeadLayout,
        hidden: usize,
        n_out: usize,
    ) -> Result<Self> {
        Ok(ClassifierHead {
            first: encoder.linear(layout.first, hidden, hidden)?,
            act: layout.act,
            second: encoder.linear(layout.second, n_out, hidden)?,
        })
    }
}

impl Head for ClassifierHead {
    fn forward(&self, hidden: &Hidden) -> Result<Tensor> {
        let x = self.first.forward(&first_token(hidden)?)?;
        let x = match self.act {
            Activation::Tanh => x.tanh()?,
            Activation::Gelu => x.gelu_erf()?,
        };
        self.second.forward(&x)?.to_dtype(DType::F32)
    }

    fn first_token_only(&self) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use candle_core::Device;

    /// Two sequences (lengths 2 and 1) in all three layouts give the same pooled vectors.
    #[test]
    fn pooling_is_the_same_in_every_layout() {
        let dev = Device::Cpu;
        let rows = [[1f32, -2.0], [3.0, 4.0], [5.0, -6.0]];
        let unpadded = Hidden::Unpadded {
            x: Tensor::new(&rows, &dev).unwrap(),
            cu_seqlens: vec![0, 2, 3],
        };
        let padded = Hidden::Padded {
            x: Tensor::new(
                &[[[1f32, -2.0], [3.0, 4.0]], [[5.0, -6.0], [0.0, 0.0]]],
                &dev,
            )
            .unwrap(),
            mask: Tensor::new(&[[1u32, 1], [1, 0]], &dev).unwrap(),
        };
        for p in [
            Pooling::Cls,
            Pooling::Mean,
            Pooling::Max,
            Pooling::MeanSqrtLen,
        ] {
            let a = pool(&unpadded, p).unwrap().to_vec2::<f32>().unwrap();
            let b = pool(&padded, p).unwrap().to_vec2::<f32>().unwrap();
            assert_eq!(a, b, "{p:?}");
        }
        let mean = pool(&unpadded, Pooling::Mean)
            .unwrap()
            .to_vec2::<f32>()
            .unwrap();
        assert_eq!(mean, vec![vec![2.0, 1.0], vec![5.0, -6.0]]);
        let max = pool(&padded, Pooling::Max)
            .unwrap()
            .to_vec2::<f32>()
            .unwrap();
        assert_eq!(max, vec![vec![3.0, 4.0], vec![5.0, -6.0]]);
        let first = Hidden::FirstTokens(Tensor::new(&[[1f32, -2.0], [5.0, -6.0]], &dev).unwrap());
        assert_eq!(
            pool(&first, Pooling::Cls)
                .unwrap()
                .to_vec2::<f32>()
                .unwrap(),
            pool(&unpadded, Pooling::Cls)
                .unwrap()
                .to_vec2::<f32>()
                .unwrap()
        );
        assert!(pool(&first, Pooling::Mean).is_err());
    }
}
