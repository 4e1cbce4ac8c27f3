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
    /// variable took no part, and PyTorch skips it, decay included), each first multiplied by
    /// `grad_scale` when that is below 1 (gradient clipping, as `clip_grad_norm_` scales the
    /// gradients in place before the step).
    pub fn step(&mut self, grads: &[Option<Tensor>], lr: f64, grad_scale: f64) -> Result<()> {
        self.step += 1;
        let p = self.params;
        let t = self.step as i32;
        let bc1 = 1.0 - p.beta1.powi(t);
        let bc2_sqrt = (1.0 - p.beta2.powi(t)).sqrt();
        let k = Coefficients {
            grad_scale: (grad_scale < 1.0).then_some(grad_scale),
            beta1: p.beta1,
            beta2: p.beta2,
            decay: 1.0 - lr * p.weight_decay,
            inv_bc2_sqrt: 1.0 / bc2_sqrt,
            eps: p.eps,
            step_size: lr / bc1,
        };
        for (slot, g) in self.slots.iter_mut().zip(grads) {
            let Some(g) = g else { continue };
            let decay = slot.decay && p.weight_decay != 0.0;
            if fused::applies(slot, g) {
                fused::step(slot, g, &k, decay)?;
                continue;
            }
            let g = match k.grad_scale {
                Some(c) => (g * c)?,
                None => g.clone(),
            };
            let mut theta = slot.var.as_tensor().clone();
            if decay {
                theta = (theta * k.decay)?;
            }
            // exp_avg.lerp_(grad, 1 - β1); exp_avg_sq.mul_(β2).addcmul_(grad, grad, 1 - β2)
            slot.m = (&slot.m + ((&g - &slot.m)? * (1.0 - p.beta1))?)?;
            slot.v = ((&slot.v * p.beta2)? + (g.sqr()? * (1.0 - p.beta2))?)?;
            let denom = ((slot.v.sqrt()? / bc2_sqrt)? + p.eps)?;
            let update = (slot.m.div(&denom)? * k.step_size)?;
            slot.var.set(&(theta - update)?)?;
        }
        Ok(())
    }
}

/// The scalars of one AdamW step.
struct Coefficients {
    /// Clipping factor applied to the gradient first, when below 1.
    grad_scale: Option<f64>,
    beta1: f64,
    beta2: f64,
    /// `1 − lr·wd`.
    decay: f64,
    /// `1 / sqrt(1 − β2^t)`.
    inv_bc2_sqrt: f64,
    eps: f64,
    /// `lr / (1 − β1^t)`.
    step_size: f64,
}

/// The CPU step in place: gradient, moments and weight read once and the three written back in
/// one pass over the storage, where the composed tensor operations made about twelve, each into a
/// freshly allocated (page-faulted) tensor the size of the weight. The arithmetic is the composed
/// path's, operation for operation in the tensor's float type (candle's `x * c` is `x · c + 0`,
/// `x / c` is `x · (1/c) + 0`), so both paths give the same bits.
mod fused {
    use super::{Coefficients, Slot};
    use candle_core::{
        bail, CpuStorage, DType, InplaceOp1, Layout, Result, Storage, Tensor, WithDType,
    };
    use rayon::prelude::*;
    use scorekit_autograd::ops::with_slice;
    use std::cell::RefCell;
    use std::marker::PhantomData;

    /// Elements handed to one rayon task.
    const CHUNK: usize = 1 << 16;

    /// Whether the in-place CPU path handles this slot: f32 / f64 on the CPU, contiguous, and
    /// four distinct storages (the pass locks each one; a shared one would deadlock).
    pub fn applies(slot: &Slot, g: &Tensor) -> bool {
        let cpu = |t: &Tensor| {
            t.device().is_cpu()
                && matches!(t.dtype(), DType::F32 | DType::F64)
                && t.is_contiguous()
                && t.dtype() == g.dtype()
        };
        let tensors = [slot.var.as_tensor(), &slot.m, &slot.v, g];
        tensors.iter().all(|t| cpu(t)) && distinct_storages(&tensors)
    }

    /// Whether no two of `tensors` share a storage (compared by its first element's address).
    fn distinct_storages(tensors: &[&Tensor]) -> bool {
        let address = |t: &Tensor| -> Option<usize> {
            match &*t.storage_and_layout().0 {
                Storage::Cpu(CpuStorage::F32(v)) => Some(v.as_ptr() as usize),
                Storage::Cpu(CpuStorage::F64(v)) => Some(v.as_ptr() as usize),
                _ => None,
            }
        };
        let addresses: Option<Vec<usize>> = tensors.iter().map(|t| address(t)).collect();
        addresses.is_some_and(|a| (0..a.len()).all(|i| !a[i + 1..].contains(&a[i])))
    }

    /// One step of `slot` with gradient `g`.
    pub fn step(slot: &Slot, g: &Tensor, k: &Coefficients, decay: bool) -> Result<()> {
        match g.dtype() {
            DType::F32 => step_as::<f32>(slot, g, &Pass { k, decay }),
            DType::F64 => step_as::<f64>(slot, g, &Pass { k, decay }),
            d => bail!("adamw: dtype {d:?}"),
        }
    }

    /// The step in `T`. Candle lends one tensor's storage mutably per op, so the weight's and
    /// the moments' ops nest, with the gradient read around them, and the innermost runs the
    /// pass over all four.
    fn step_as<T: Float>(slot: &Slot, g: &Tensor, pass: &Pass) -> Result<()> {
        with_slice::<T, _>(g, |g| {
            with_mut::<T>(slot.var.as_tensor(), |theta| {
                with_mut::<T>(&slot.m, |m| {
                    with_mut::<T>(&slot.v, |v| pass.run(theta, m, v, g))
                })
            })
        })
    }

    /// Runs `f` on `t`'s elements, lent mutably by candle.
    fn with_mut<T: Float>(t: &Tensor, f: impl FnOnce(&mut [T]) -> Result<()>) -> Result<()> {
        t.inplace_op1(&Once(RefCell::new(Some(f)), PhantomData))
    }

    /// An in-place op that calls its closure once (candle's ops take `&self`).
    struct Once<T, F>(RefCell<Option<F>>, PhantomData<T>);

    impl<T: Float, F: FnOnce(&mut [T]) -> Result<()>> InplaceOp1 for Once<T, F> {
        fn name(&self) -> &'static str {
            "scorekit-adamw"
        }

        fn cpu_fwd(&self, s: &mut CpuStorage, l: &Layout) -> Result<()> {
            let Some(f) = self.0.borrow_mut().take() else {
                bail!("adamw: step op called twice")
            };
            let (Some(all), Some((a, b))) = (T::elements(s), l.contiguous_offsets()) else {
                bail!("adamw: storage not a contiguous {:?} tensor", T::DTYPE)
            };
            f(&mut all[a..b])
        }
    }

    /// The float types of the step: their square root and their elements in a CPU storage.
    trait Float: WithDType + Send + Sync {
        fn sqrt(self) -> Self;
        fn elements(s: &mut CpuStorage) -> Option<&mut [Self]>;
    }

    impl Float for f32 {
        fn sqrt(self) -> f32 {
            f32::sqrt(self)
        }

        fn elements(s: &mut CpuStorage) -> Option<&mut [f32]> {
            match s {
                CpuStorage::F32(v) => Some(v),
                _ => None,
            }
        }
    }

    impl Float for f64 {
        fn sqrt(self) -> f64 {
            f64::sqrt(self)
        }

        fn elements(s: &mut CpuStorage) -> Option<&mut [f64]> {
            match s {
                CpuStorage::F64(v) => Some(v),
                _ => None,
            }
        }
    }

    /// Per element: `m ← m + (g − m)(1 − β1)`, `v ← v·β2 + g²(1 − β2)`, then
    /// `θ ← θ·(1 − lr·wd) − (m / (sqrt(v)/sqrt(bc2) + ε))·step_size`.
    struct Pass<'a> {
        k: &'a Coefficients,
        decay: bool,
    }

    impl Pass<'_> {
        fn run<T: Float>(&self, theta: &mut [T], m: &mut [T], v: &mut [T], g: &[T]) -> Result<()> {
            let n = theta.len();
            if m.len() != n || v.len() != n || g.len() != n {
                bail!(
                    "adamw: gradient and moments of {} / {} / {} elements for {n}",
                    g.len(),
                    m.len(),
                    v.len()
                );
            }
            let k = self.k;
            let zero = T::from_f64(0.0);
            let one = T::from_f64(1.0);
            let scale = k.grad_scale.map(T::from_f64);
            let decay = self.decay.then(|| T::from_f64(k.decay));
            // The first moment is a lerp, `m + (g − m)(1 − β1)`, as PyTorch's.
            let one_minus_b1 = T::from_f64(1.0 - k.beta1);
            let (b2, one_minus_b2) = (T::from_f64(k.beta2), T::from_f64(1.0 - k.beta2));
            let (inv_bc2, eps, step) = (
                T::from_f64(k.inv_bc2_sqrt),
                T::from_f64(k.eps),
                T::from_f64(k.step_size),
            );
            theta
                .par_chunks_mut(CHUNK)
                .zip(m.par_chunks_mut(CHUNK))
                .zip(v.par_chunks_mut(CHUNK))
                .zip(g.par_chunks(CHUNK))
                // `move`: the closure holds the constants as values, so LLVM keeps them in
                // registers (through references it reloaded them after every store, as the
                // slices might alias them) and vectorises the loop; equal-length slices indexed
                // by one counter drop the bounds checks.
                .for_each(move |(((tc, mc), vc), gc)| {
                    let n = tc.len();
                    let (mc, vc, gc) = (&mut mc[..n], &mut vc[..n], &gc[..n]);
                    for i in 0..n {
                        let g = match scale {
                            Some(c) => gc[i] * c + zero,
                            None => gc[i],
                        };
                        let m = mc[i] + ((g - mc[i]) * one_minus_b1 + zero);
                        let v = (vc[i] * b2 + zero) + ((g * g) * one_minus_b2 + zero);
                        let theta = match decay {
                            Some(d) => tc[i] * d + zero,
                            None => tc[i],
                        };
                        let denom = (v.sqrt() * inv_bc2 + zero) * one + eps;
                        let update = (m / denom) * step + zero;
                        (mc[i], vc[i], tc[i]) = (m, v, theta - update);
                    }
                });
            Ok(())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use candle_core::{DType, Device};

    #[test]
    fn groups_follow_the_trainer() {
        assert!(decays("bert.encoder.layer.0.attention.self.query.weight"));
        assert!(!decays("bert.encoder.layer.0.attention.self.query.bias"));
        assert!(!decays("bert.embeddings.LayerNorm.weight"));
        assert!(decays("classifier.weight"));
    }

    /// The in-place CPU step gives the bits of the composed tensor operations (the path GPUs
    /// take), with decay, clipping and bias correction, over three steps.
    #[test]
    fn the_in_place_step_equals_the_composed_operations() {
        let dev = Device::Cpu;
        // Two rayon chunks and a tail past the vector lanes.
        let n = (1 << 16) + 3;
        let init: Vec<f32> = (0..n).map(|i| ((i as f32) * 0.37).sin() * 0.1).collect();
        let var = Var::new(init.as_slice(), &dev).unwrap();
        let params = AdamWParams {
            weight_decay: 0.01,
            ..Default::default()
        };
        let mut opt = AdamW::new(vec![("w".into(), var.clone())], params).unwrap();
        let probe = Tensor::new(init.as_slice(), &dev).unwrap();
        assert!(fused::applies(&opt.slots[0], &probe));
        let (mut theta, mut m, mut v) = (
            Tensor::new(init.as_slice(), &dev).unwrap(),
            Tensor::zeros(n, DType::F32, &dev).unwrap(),
            Tensor::zeros(n, DType::F32, &dev).unwrap(),
        );
        for (t, (lr, coef)) in [(1e-3, 1.0), (5e-4, 0.3), (2e-4, 1.0)]
            .into_iter()
            .enumerate()
        {
            let g: Vec<f32> = (0..n)
                .map(|i| ((i * (t + 3)) as f32 * 0.11).cos())
                .collect();
            let g = Tensor::new(g.as_slice(), &dev).unwrap();
            opt.step(&[Some(g.clone())], lr, coef).unwrap();
            // The composed path, expression for expression.
            let tt = (t + 1) as i32;
            let g = if coef < 1.0 { (g * coef).unwrap() } else { g };
            theta = (theta * (1.0 - lr * 0.01)).unwrap();
            m = (&m + ((&g - &m).unwrap() * (1.0 - 0.9)).unwrap()).unwrap();
            v = ((&v * 0.999).unwrap() + (g.sqr().unwrap() * (1.0 - 0.999)).unwrap()).unwrap();
            let denom =
                ((v.sqrt().unwrap() / (1.0 - 0.999f64.powi(tt)).sqrt()).unwrap() + 1e-8).unwrap();
            let update = (m.div(&denom).unwrap() * (lr / (1.0 - 0.9f64.powi(tt)))).unwrap();
            theta = (theta - update).unwrap();
        }
        let bits = |t: &Tensor| -> Vec<u32> {
            t.to_vec1::<f32>()
                .unwrap()
                .iter()
                .map(|x| x.to_bits())
                .collect()
        };
        assert_eq!(bits(var.as_tensor()), bits(&theta));
        assert_eq!(bits(&opt.slots[0].m), bits(&m));
        assert_eq!(bits(&opt.slots[0].v), bits(&v));
    }

    /// A gradient sharing the weight's storage takes the composed path (the in-place pass would
    /// lock one storage twice) and still gives PyTorch's step.
    #[test]
    fn a_gradient_sharing_the_weight_takes_the_composed_path() {
        let var = Var::new(&[0.5f32, -2.0], &Device::Cpu).unwrap();
        let mut opt = AdamW::new(vec![("w".into(), var.clone())], AdamWParams::default()).unwrap();
        let g = var.as_tensor().clone();
        assert!(!fused::applies(&opt.slots[0], &g));
        assert!(fused::applies(&opt.slots[0], &g.copy().unwrap()));
        opt.step(&[Some(g)], 0.1, 1.0).unwrap();
        // First step: m̂ = g, v̂ = g², so θ moves by lr·g/(|g| + ε) ≈ lr·sign(g).
        let got = var.as_tensor().to_vec1::<f32>().unwrap();
        assert!(
            (got[0] - 0.4).abs() < 1e-6 && (got[1] + 1.9).abs() < 1e-6,
            "{got:?}"
        );
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
            opt.step(&[Some(gt)], lr, 1.0).unwrap();
        }
        let got = var.as_tensor().to_vec1::<f64>().unwrap()[0];
        assert!((got - p).abs() < 1e-15, "{got} vs {p}");
    }

    /// One AdamW step over all-MiniLM-L6-v2's parameter shapes (22.7 M f32 in 101 tensors), the
    /// in-place CPU path against the composed tensor operations, in one run.
    #[test]
    #[ignore = "timing probe, run by hand: cargo test --release -p scorekit-train --lib adamw_step_speed -- --ignored --nocapture (BENCHMARKS.md §6)"]
    fn adamw_step_speed() {
        let dev = Device::Cpu;
        let (h, f) = (384usize, 1536usize);
        let mut shapes = vec![30522 * h, 512 * h, 2 * h, h, h];
        for _ in 0..6 {
            shapes.extend([h * h, h, h * h, h, h * h, h, h * h, h, h, h]);
            shapes.extend([f * h, f, h * f, h, h, h]);
        }
        shapes.extend([h * h, h]);
        let fill = |n: usize, s: f32| -> Tensor {
            let v: Vec<f32> = (0..n).map(|i| ((i as f32) * s).sin() * 0.02).collect();
            Tensor::new(v.as_slice(), &dev).unwrap()
        };
        let total: usize = shapes.iter().sum();
        let grads: Vec<Option<Tensor>> = shapes.iter().map(|&n| Some(fill(n, 0.7))).collect();
        let median_ms = |in_place: bool| -> f64 {
            let vars: Vec<(String, Var)> = shapes
                .iter()
                .enumerate()
                .map(|(i, &n)| {
                    (
                        format!("p{i}.weight"),
                        Var::from_tensor(&fill(n, 0.3)).unwrap(),
                    )
                })
                .collect();
            let params = AdamWParams {
                weight_decay: 0.01,
                ..Default::default()
            };
            let mut opt = AdamW::new(vars, params).unwrap();
            // The composed path is the one a gradient sharing its weight's storage takes, so the
            // weights themselves serve as its gradients.
            let grads: Vec<Option<Tensor>> = if in_place {
                grads.clone()
            } else {
                opt.slots
                    .iter()
                    .map(|s| Some(s.var.as_tensor().clone()))
                    .collect()
            };
            let chosen = fused::applies(&opt.slots[0], grads[0].as_ref().unwrap());
            assert_eq!(chosen, in_place, "the probe times the other path");
            let mut times: Vec<f64> = (0..12)
                .map(|_| {
                    let t = std::time::Instant::now();
                    opt.step(&grads, 5e-5, 1.0).unwrap();
                    t.elapsed().as_secs_f64() * 1e3
                })
                .skip(2)
                .collect();
            times.sort_by(f64::total_cmp);
            times[times.len() / 2]
        };
        let (in_place, composed) = (median_ms(true), median_ms(false));
        println!(
            "adamw step over {total} f32: in place {in_place:.1} ms ({:.1} GB/s of θ, m, v, g read \
             and θ, m, v written), composed {composed:.1} ms, ratio {:.2}x",
            (total * 4 * 7) as f64 / in_place / 1e6,
            composed / in_place
        );
    }
}
