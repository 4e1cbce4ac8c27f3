//! AdamW exactly as PyTorch's `torch.optim.AdamW` (single-tensor path): decoupled weight decay
//! `p ← p·(1 − lr·wd)` before the Adam step, bias correction on both moments, ε added to
//! `√v̂`. Parameters whose name marks a bias or a normalisation weight get no decay, as the
//! `transformers` Trainer groups them. Moments live as tensors beside the variables so that a
//! checkpoint can save and restore them.

use candle_core::{Result, Tensor, Var};

/// AdamW hyper-parameters (PyTorch's defaults, the Trainer's β and ε).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AdamWParams {
    /// β1.
    pub beta1: f64,
    /// β2.
    pub beta2: f64,
    /// ε.
    pub eps: f64,
    /// Decoupled weight decay of the decayed group.
    pub weight_decay: f64,
}

impl Default for AdamWParams {
    fn default() -> Self {
        AdamWParams {
            beta1: 0.9,
            beta2: 0.999,
            eps: 1e-8,
            weight_decay: 0.0,
        }
    }
}

/// One optimised variable and its moments.
pub struct Slot {
    /// Its name in the model folder.
    pub name: String,
    /// The variable.
    pub var: Var,
    /// Whether weight decay applies.
    pub decay: bool,
    /// First moment (`exp_avg`).
    pub m: Tensor,
    /// Second moment (`exp_avg_sq`).
    pub v: Tensor,
}

/// The Trainer's grouping: no decay for biases and normalisation weights.
pub fn decays(name: &str) -> bool {
    let lower = name.to_ascii_lowercase();
    !(lower.contains("bias") || lower.contains("layernorm.weight") || lower.contains("norm.weight"))
}

/// AdamW over named variables.
pub struct AdamW {
    /// The variables in a fixed (name) order.
    pub slots: Vec<Slot>,
    /// Optimiser steps taken (PyTorch's per-parameter `step`; all equal here).
    pub step: u64,
    /// Hyper-parameters.
    pub params: AdamWParams,
}

impl AdamW {
    /// Zero moments for every variable.
    pub fn new(vars: Vec<(String, Var)>, params: AdamWParams) -> Result<Self> {
        let slots = vars
            .into_iter()
            .map(|(name, var)| {
                Ok(Slot {
                    decay: decays(&name),
                    m: var.zeros_like()?,
                    v: var.zeros_like()?,
                    name,
                    var,
                })
            })
            .collect::<Result<_>>()?;
        Ok(AdamW {
            slots,
            step: 0,
            params,
        })
    }

    /// One step at learning rate `lr` with gradients `grads` (aligned with `slots`; `None`: the
    /// variable took no part, and PyTorch skips it, decay included).
    pub fn step(&mut self, grads: &[Option<Tensor>], lr: f64) -> Result<()> {
        self.step += 1;
        let p = self.params;
        let t = self.step as i32;
        let bc1 = 1.0 - p.beta1.powi(t);
        let bc2_sqrt = (1.0 - p.beta2.powi(t)).sqrt();
        let step_size = lr / bc1;
        for (slot, g) in self.slots.iter_mut().zip(grads) {
            let Some(g) = g else { continue };
            let mut theta = slot.var.as_tensor().clone();
            if slot.decay && p.weight_decay != 0.0 {
                theta = (theta * (1.0 - lr * p.weight_decay))?;
            }
            // exp_avg.lerp_(grad, 1 - β1); exp_avg_sq.mul_(β2).addcmul_(grad, grad, 1 - β2)
            slot.m = (&slot.m + ((g - &slot.m)? * (1.0 - p.beta1))?)?;
            slot.v = ((&slot.v * p.beta2)? + (g.sqr()? * (1.0 - p.beta2))?)?;
            let denom = ((slot.v.sqrt()? / bc2_sqrt)? + p.eps)?;
            let update = (slot.m.div(&denom)? * step_size)?;
            slot.var.set(&(theta - update)?)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use candle_core::Device;

    #[test]
    fn groups_follow_the_trainer() {
        assert!(decays("bert.encoder.layer.0.attention.self.query.weight"));
        assert!(!decays("bert.encoder.layer.0.attention.self.query.bias"));
        assert!(!decays("bert.embeddings.LayerNorm.weight"));
        assert!(decays("classifier.weight"));
    }

    /// Two steps by hand (PyTorch's formulas) on one scalar.
    #[test]
    fn matches_the_pytorch_update() {
        let var = Var::new(&[1.0f64], &Device::Cpu).unwrap();
        let params = AdamWParams {
            weight_decay: 0.1,
            ..Default::default()
        };
        let mut opt = AdamW::new(vec![("w".into(), var.clone())], params).unwrap();
        let (lr, grads) = (0.01, [0.5f64, -0.25]);
        let (mut p, mut m, mut v) = (1.0f64, 0.0f64, 0.0f64);
        for (k, g) in grads.iter().enumerate() {
            let t = (k + 1) as i32;
            p *= 1.0 - lr * 0.1;
            m = 0.9 * m + 0.1 * g;
            v = 0.999 * v + 0.001 * g * g;
            let denom = (v.sqrt() / (1.0 - 0.999f64.powi(t)).sqrt()) + 1e-8;
            p -= lr / (1.0 - 0.9f64.powi(t)) * m / denom;
            let gt = Tensor::new(&[*g], &Device::Cpu).unwrap();
            opt.step(&[Some(gt)], lr).unwrap();
        }
        let got = var.as_tensor().to_vec1::<f64>().unwrap()[0];
        assert!((got - p).abs() < 1e-15, "{got} vs {p}");
    }
}
