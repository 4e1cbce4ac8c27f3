//! The precision of a training run's products, and the two products (a linear layer, a batched
//! matrix product) that follow it.
//!
//! `Bf16Mixed` is PyTorch's bf16 autocast as the issue and `torch.autocast` describe it: the
//! operands of every product (linear layers, attention's two products, DeBERTa's relative
//! terms, the head) are rounded to bf16 and multiplied with f32 sums; each product's output is
//! rounded to bf16 (autocast's `linear`, `matmul` and `bmm` return bf16) and then carried in f32,
//! so LayerNorm, softmax, GELU's erf, dropout, the loss and every reduction run in f32. In the
//! backward pass the gradient reaching a product is rounded to bf16 and the product's input and
//! weight gradients come out rounded to bf16 (what autocast's bf16 `mm` backward returns), then
//! cast back (candle's `to_dtype` backward casts the gradient to the source dtype) and summed
//! into f32 gradients of the f32 master weights. No loss scaling: bf16 has f32's exponent range.
//!
//! How the products run: on CUDA and Metal, candle's bf16 products (cuBLAS bf16 with f32
//! accumulation on the tensor cores). BERT-family layers on a CPU with AMX-BF16 or AVX512-BF16
//! run the fused layer instead (`bert_block`, its weight products in `bf16_linear`). Elsewhere on
//! the CPU (this module's path), the f32 kernels on operands rounded to bf16
//! ([`Precision::round`]): a bf16 × bf16 product is exact in f32, so this is a bf16 product with
//! f32 sums at the f32 kernels' rate.

use crate::ops;
use candle_core::{CpuStorage, CustomOp1, DType, Layout, Result, Shape, Tensor};

/// The precision of a training run's products (`"f32"`, `"bf16-mixed"` in JSON).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum Precision {
    /// Everything in the model's dtype (f32, or f64 in exactness tests).
    #[default]
    F32,
    /// Products in bf16 with f32 sums; everything else, and the master weights, in f32.
    Bf16Mixed,
}

impl Precision {
    /// `x · wᵀ + b` (a PyTorch `Linear`) in this precision; the result has `x`'s dtype.
    pub fn linear(self, x: &Tensor, w: &Tensor, b: Option<&Tensor>) -> Result<Tensor> {
        let Some(dt) = self.product_dtype(x) else {
            return ops::linear(x, w, b);
        };
        if x.device().is_cpu() {
            // bf16 values in f32 tensors through the f32 kernels (see `round`).
            let b = b.map(|b| self.round(b)).transpose()?;
            let y = ops::linear(&self.round(x)?, &self.round(w)?, b.as_ref())?;
            return self.round(&y);
        }
        let b = b.map(|b| b.to_dtype(dt)).transpose()?;
        ops::linear(&x.to_dtype(dt)?, &w.to_dtype(dt)?, b.as_ref())?.to_dtype(x.dtype())
    }

    /// `a · b` (batched over leading dimensions) in this precision; the result has `a`'s dtype.
    pub fn matmul(self, a: &Tensor, b: &Tensor) -> Result<Tensor> {
        let Some(dt) = self.product_dtype(a) else {
            return a.matmul(b);
        };
        if a.device().is_cpu() {
            return self.round(&self.round(a)?.matmul(&self.round(b)?)?);
        }
        a.to_dtype(dt)?
            .matmul(&b.to_dtype(dt)?)?
            .to_dtype(a.dtype())
    }

    /// `x` rounded to the products' dtype and back, where autocast leaves an element-wise
    /// result in bf16 (a scaled product's scores); its backward rounds the gradient alike.
    ///
    /// On the CPU the products themselves are built from it: a product of bf16
    /// values is exact in f32, so rounding the operands, multiplying with the f32 kernels and
    /// rounding the result is a bf16 product with f32 sums, and the backward pass, through the
    /// same roundings, gives bf16-rounded gradients. candle's CPU bf16 products were 5× slower
    /// than that (BENCHMARKS.md §6).
    pub fn round(self, x: &Tensor) -> Result<Tensor> {
        match self.product_dtype(x) {
            None => Ok(x.clone()),
            Some(_) if x.device().is_cpu() => x.contiguous()?.apply_op1(RoundBf16),
            Some(dt) => x.to_dtype(dt)?.to_dtype(x.dtype()),
        }
    }

    /// A scalar as autocast holds it next to bf16 values (`scale.to(dtype=...)`): rounded to
    /// bf16 in bf16-mixed, as it is in f32.
    pub fn round_scalar(self, v: f64) -> f64 {
        match self {
            Precision::F32 => v,
            Precision::Bf16Mixed => f64::from(scorekit_kernels::train::bf16_round(v as f32)),
        }
    }

    /// The dtype the products run in when it is not the operands' own.
    fn product_dtype(self, x: &Tensor) -> Option<DType> {
        match (self, x.dtype()) {
            (Precision::Bf16Mixed, DType::F32) => Some(DType::BF16),
            _ => None,
        }
    }
}

/// f32 values rounded to bf16 (kept as f32), on the CPU; the backward rounds the gradient
/// alike, as the `to_dtype` pair it stands for (f32 → bf16 → f32) does.
struct RoundBf16;

impl CustomOp1 for RoundBf16 {
    fn name(&self) -> &'static str {
        "scorekit-round-bf16"
    }

    fn cpu_fwd(&self, s: &CpuStorage, l: &Layout) -> Result<(CpuStorage, Shape)> {
        let x = crate::ops::slice::<f32>(s, l)?;
        let mut y = vec![0f32; x.len()];
        scorekit_kernels::train::bf16_round_into(x, &mut y);
        Ok((CpuStorage::F32(y), l.shape().clone()))
    }

    fn bwd(&self, _arg: &Tensor, _res: &Tensor, grad: &Tensor) -> Result<Option<Tensor>> {
        Ok(Some(grad.contiguous()?.apply_op1(RoundBf16)?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use candle_core::{Device, Var};

    fn bf16_round(v: f32) -> f32 {
        half::bf16::from_f32(v).to_f32()
    }

    /// A bf16-mixed linear layer is the f32 product of the rounded operands, rounded: forward
    /// and every gradient (the gradient reaching it is rounded too).
    #[test]
    fn bf16_mixed_linear_rounds_operands_outputs_and_gradients() -> Result<()> {
        let dev = Device::Cpu;
        let (m, k, n) = (5, 37, 19);
        let vals = |len: usize, seed: u32| -> Vec<f32> {
            (0..len)
                .map(|i| {
                    (((i as u32).wrapping_mul(2654435761) ^ seed) % 10007) as f32 / 3001.0 - 1.6
                })
                .collect()
        };
        let x = Var::from_vec(vals(m * k, 1), (m, k), &dev)?;
        let w = Var::from_vec(vals(n * k, 2), (n, k), &dev)?;
        let b = Var::from_vec(vals(n, 3), n, &dev)?;
        let g = Tensor::from_vec(vals(m * n, 4), (m, n), &dev)?;
        let y = Precision::Bf16Mixed.linear(x.as_tensor(), w.as_tensor(), Some(b.as_tensor()))?;
        assert_eq!(y.dtype(), DType::F32);
        let grads = (&y * &g)?.sum_all()?.backward()?;
        let r = |t: &Tensor| -> Result<Vec<f32>> {
            Ok(t.flatten_all()?
                .to_vec1::<f32>()?
                .into_iter()
                .map(bf16_round)
                .collect())
        };
        let (xr, wr, br, gr) = (r(&x)?, r(&w)?, r(&b)?, r(&g)?);
        let close = |got: &[f32], want: &[f32], what: &str| {
            for (i, (a, e)) in got.iter().zip(want).enumerate() {
                // Both sides are bf16 roundings of f32 sums taken in another order (candle's
                // products, off AVX-512, also round before the bias): a bf16 step at most.
                assert!(
                    (a - e).abs() <= e.abs() * 2f32.powi(-7) + 1e-3,
                    "{what}[{i}]: {a} vs {e}"
                );
                assert_eq!(*a, bf16_round(*a), "{what}[{i}] is not a bf16 value");
            }
        };
        let mut want_y = vec![0f32; m * n];
        for i in 0..m {
            for j in 0..n {
                let dot: f32 = (0..k).map(|t| xr[i * k + t] * wr[j * k + t]).sum();
                want_y[i * n + j] = bf16_round(dot + br[j]);
            }
        }
        close(&y.flatten_all()?.to_vec1::<f32>()?, &want_y, "y");
        let mut want_dx = vec![0f32; m * k];
        let mut want_dw = vec![0f32; n * k];
        for i in 0..m {
            for t in 0..k {
                let s: f32 = (0..n).map(|j| gr[i * n + j] * wr[j * k + t]).sum();
                want_dx[i * k + t] = bf16_round(s);
            }
        }
        for j in 0..n {
            for t in 0..k {
                let s: f32 = (0..m).map(|i| gr[i * n + j] * xr[i * k + t]).sum();
                want_dw[j * k + t] = bf16_round(s);
            }
        }
        let got = |v: &Var| -> Result<Vec<f32>> {
            let g = grads.get(v.as_tensor()).expect("a gradient");
            assert_eq!(g.dtype(), DType::F32, "master gradients are f32");
            g.flatten_all()?.to_vec1::<f32>()
        };
        close(&got(&x)?, &want_dx, "dx");
        close(&got(&w)?, &want_dw, "dw");
        let db: Vec<f32> = (0..n)
            .map(|j| bf16_round((0..m).map(|i| gr[i * n + j]).sum()))
            .collect();
        close(&got(&b)?, &db, "db");
        Ok(())
    }

    /// scorekit's rounding is `half`'s f32 → bf16 conversion, ties, overflow and NaN included.
    #[test]
    fn bf16_round_is_the_conversion_to_bf16() {
        let mut bits: Vec<u32> = (0..1u32 << 16)
            .map(|i| i.wrapping_mul(65521) ^ (i << 16))
            .collect();
        bits.extend([
            0x3f80_8000, // a tie, rounds to even (down)
            0x3f81_8000, // a tie, rounds to even (up)
            0x7f7f_ffff, // f32::MAX: past the largest bf16, infinite
            0x7f80_0000,
            0xff80_0000,
            0x7fc0_0001,
            0x0000_0001,
            0x8000_0000,
        ]);
        for b in bits {
            let x = f32::from_bits(b);
            let ours = scorekit_kernels::train::bf16_round(x);
            let theirs = bf16_round(x);
            assert!(
                ours.to_bits() == theirs.to_bits() || (ours.is_nan() && theirs.is_nan()),
                "{b:#010x}: {ours} vs {theirs}"
            );
        }
    }

    /// f32 is untouched by the precision: the same numbers as `ops::linear`.
    #[test]
    fn f32_precision_is_the_plain_product() -> Result<()> {
        let dev = Device::Cpu;
        let x = Tensor::arange(0f32, 12.0, &dev)?.reshape((3, 4))?;
        let w = (Tensor::arange(0f32, 8.0, &dev)?.reshape((2, 4))? * 0.37)?;
        let a = Precision::F32.linear(&x, &w, None)?.to_vec2::<f32>()?;
        let b = ops::linear(&x, &w, None)?.to_vec2::<f32>()?;
        assert_eq!(a, b);
        let m = Precision::Bf16Mixed.matmul(&x, &w.t()?)?;
        assert_eq!(m.dtype(), DType::F32);
        Ok(())
    }
}
