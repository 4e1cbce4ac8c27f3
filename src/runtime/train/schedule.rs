//! The learning-rate schedule of `transformers`' `get_linear_schedule_with_warmup`, and the
//! global-norm clipping of `torch.nn.utils.clip_grad_norm_`.

use candle_core::{Result, Tensor};

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

/// Scale gradients so that their global L2 norm is at most `max_norm`, as
/// `clip_grad_norm_` (coefficient `max_norm / (norm + 1e-6)`, clamped at 1). Returns the norm
/// before clipping. `max_norm <= 0` leaves them as they are.
pub fn clip_grad_norm(grads: &mut [Option<Tensor>], max_norm: f64) -> Result<f64> {
    let mut sq = 0f64;
    for g in grads.iter().flatten() {
        sq += g
            .to_dtype(candle_core::DType::F64)?
            .sqr()?
            .sum_all()?
            .to_scalar::<f64>()?;
    }
    let norm = sq.sqrt();
    if max_norm > 0.0 {
        let coef = (max_norm / (norm + 1e-6)).min(1.0);
        if coef < 1.0 {
            for g in grads.iter_mut().flatten() {
                *g = (&*g * coef)?;
            }
        }
    }
    Ok(norm)
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
        let mut g = vec![
            Some(Tensor::new(&[3.0f32], &dev).unwrap()),
            None,
            Some(Tensor::new(&[4.0f32], &dev).unwrap()),
        ];
        let n = clip_grad_norm(&mut g, 1.0).unwrap();
        assert!((n - 5.0).abs() < 1e-12);
        let a = g[0].as_ref().unwrap().to_vec1::<f32>().unwrap()[0];
        assert!((a - 0.6).abs() < 1e-6, "{a}");
    }
}
