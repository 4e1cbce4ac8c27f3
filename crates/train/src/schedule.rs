//! The learning-rate schedule of `transformers`' `get_linear_schedule_with_warmup`, and the
//! global-norm clipping of `torch.nn.utils.clip_grad_norm_`.

use candle_core::{DType, Result, Tensor};
use scorekit_autograd::ops::with_slice;

/// Linear warm-up from 0 over `warmup` steps, then linear decay to 0 at `total`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LinearSchedule {
    /// Warm-up steps (`ceil(total · warmup_ratio)`, as the Trainer computes them).
    pub warmup: u64,
    /// Total optimiser steps.
    pub total: u64,
}

impl LinearSchedule {
    /// From a warm-up ratio, as the Trainer: `warmup = ceil(total · ratio)`.
    pub fn from_ratio(total: u64, ratio: f64) -> Self {
        LinearSchedule {
            warmup: (total as f64 * ratio).ceil() as u64,
            total,
        }
    }

    /// The factor of optimiser step `step` (0-based: the first step uses the factor at 0).
    pub fn factor(&self, step: u64) -> f64 {
        if step < self.warmup {
            return step as f64 / self.warmup.max(1) as f64;
        }
        let left = self.total.saturating_sub(step) as f64;
        (left / self.total.saturating_sub(self.warmup).max(1) as f64).max(0.0)
    }
}

/// The global L2 norm of the gradients, accumulated in f64 (f32 elements are squared in f64).
pub fn grad_norm(grads: &[Option<Tensor>]) -> Result<f64> {
    let mut sq = 0f64;
    for g in grads.iter().flatten() {
        sq += match (g.device().is_cpu(), g.dtype()) {
            (true, DType::F32) => with_slice::<f32, _>(g, |x| Ok(sum_sq(x, |v| v as f64)))?,
            (true, DType::F64) => with_slice::<f64, _>(g, |x| Ok(sum_sq(x, |v| v)))?,
            _ => g
                .to_dtype(DType::F64)?
                .sqr()?
                .sum_all()?
                .to_scalar::<f64>()?,
        };
    }
    Ok(sq.sqrt())
}

/// Σ x² of `xs` in f64, in parallel chunks.
fn sum_sq<T: Copy + Send + Sync>(xs: &[T], f: impl Fn(T) -> f64 + Sync) -> f64 {
    use rayon::prelude::*;
    xs.par_chunks(1 << 16)
        .map(|c| c.iter().map(|&v| f(v) * f(v)).sum::<f64>())
        .sum()
}

/// The factor `clip_grad_norm_` scales gradients of global norm `norm` by: `max_norm / (norm +
/// 1e-6)`, clamped at 1; 1 when `max_norm <= 0` (no clipping). The optimiser applies it.
pub fn clip_coefficient(norm: f64, max_norm: f64) -> f64 {
    if max_norm > 0.0 {
        (max_norm / (norm + 1e-6)).min(1.0)
    } else {
        1.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn warmup_then_linear_decay() {
        let s = LinearSchedule::from_ratio(10, 0.2);
        assert_eq!(s.warmup, 2);
        let f: Vec<f64> = (0..11).map(|k| s.factor(k)).collect();
        assert_eq!(f[0], 0.0);
        assert_eq!(f[1], 0.5);
        assert_eq!(f[2], 1.0);
        assert_eq!(f[6], 0.5);
        assert_eq!(f[10], 0.0);
        let none = LinearSchedule::from_ratio(4, 0.0);
        assert_eq!((none.factor(0), none.factor(3)), (1.0, 0.25));
    }

    #[test]
    fn clipping_scales_to_the_max_norm() {
        let dev = candle_core::Device::Cpu;
        let mut g: Vec<Option<Tensor>> = vec![
            Some(Tensor::new(&[3.0f32], &dev).unwrap()),
            None,
            Some(Tensor::new(&[4.0f32], &dev).unwrap()),
        ];
        let n = grad_norm(&g).unwrap();
        assert!((n - 5.0).abs() < 1e-12);
        let c = clip_coefficient(n, 1.0);
        assert!((c - 1.0 / (5.0 + 1e-6)).abs() < 1e-15, "{c}");
        assert_eq!(clip_coefficient(n, 10.0), 1.0);
        assert_eq!(clip_coefficient(n, 0.0), 1.0);
        g[0] = Some((g[0].take().unwrap() * c).unwrap());
        let a = g[0].as_ref().unwrap().to_vec1::<f32>().unwrap()[0];
        assert!((a - 0.6).abs() < 1e-6, "{a}");
    }
}
