//! bf16 weights multiplied as f32: the weights are kept packed in bf16 (half the memory of f32)
//! and widened, a few 32-column panels at a time, into an f32 panel that the f32 product
//! ([`crate::gemm`]) multiplies with f32 FMAs. Widening bf16 is exact (its bits are the top half
//! of an f32), so the product equals the f32 product of the bf16-rounded weights bit for bit.
//!
//! This is `--dtype bf16` on CPUs whose bf16 instructions are slower than their f32 FMAs: an
//! Intel Xeon with AVX512-BF16 and no AMX (Emerald Rapids guests) measures a `vdpbf16ps` peak of
//! 171 GFLOP/s against 350 for f32 FMA, so bf16 products there ran at 0.65× the f32 speed.
//! `scorekit_runtime::engine` measures both peaks once and chooses.

use crate::block::BlockMut;
use crate::gemm::{self, Epilogue, PackedB, NR};
use rayon::prelude::*;
use std::cell::RefCell;

/// Panels widened per job: 64 columns (a job's f32 copy is `k · 64 · 4` bytes, 0.9 MiB at
/// k = 3,584, so it stays in L2/L3 while every row of A passes it).
const PANELS_PER_JOB: usize = 2;

/// A weight packed as [`PackedB`] is, in bf16 (round to nearest even).
#[derive(Debug, Clone, Default)]
pub struct PackedBf16Weights {
    k: usize,
    n: usize,
    data: Vec<u16>,
}

/// f32 to bf16 bits, round to nearest even ([`crate::train::bf16_round`]; NaN stays NaN).
pub fn to_bf16(x: f32) -> u16 {
    (crate::train::bf16_round(x).to_bits() >> 16) as u16
}

impl PackedBf16Weights {
    /// From a PyTorch `Linear` weight (n rows of k): B = Wᵀ, rounded to bf16.
    pub fn from_nk(w: &[f32], n: usize, k: usize) -> Self {
        let f32s = PackedB::from_nk(w, n, k, k);
        PackedBf16Weights {
            k,
            n,
            data: f32s.data().iter().map(|&x| to_bf16(x)).collect(),
        }
    }

    /// Rows of B (the product's depth).
    pub fn k(&self) -> usize {
        self.k
    }

    /// Columns of B (of C).
    pub fn n(&self) -> usize {
        self.n
    }

    /// Panels `p0..p0 + np` widened into `out` (a [`PackedB`] of their columns).
    fn widen(&self, p0: usize, np: usize, out: &mut PackedB) {
        let cols = (self.n - p0 * NR).min(np * NR);
        let from = &self.data[p0 * self.k * NR..(p0 + np) * self.k * NR];
        out.refill(self.k, cols, |to| {
            for (t, &b) in to.iter_mut().zip(from) {
                *t = f32::from_bits((b as u32) << 16);
            }
        });
    }

    /// out (m×n, row stride n) = x (m×k, stride k)·B + bias (`accumulate`: out += …; `gelu`:
    /// erf-GELU at the end), jobs of [`PANELS_PER_JOB`] panels on rayon's threads.
    ///
    /// # Panics
    /// If the CPU lacks AVX-512F, `x` is shorter than m×k, `out` than m×n, or `bias` than n.
    pub fn gemm(
        &self,
        m: usize,
        x: &[f32],
        out: &mut [f32],
        bias: &[f32],
        accumulate: bool,
        gelu: bool,
    ) {
        let (k, n) = (self.k, self.n);
        assert!(
            x.len() >= m * k && out.len() >= m * n && bias.len() >= n,
            "widened bf16 product: operands too short"
        );
        if m == 0 || n == 0 {
            return;
        }
        let panels = n.div_ceil(NR);
        let starts: Vec<usize> = (0..panels).step_by(PANELS_PER_JOB).collect();
        let cols: Vec<std::ops::Range<usize>> = starts
            .iter()
            .map(|&p| p * NR..((p + PANELS_PER_JOB) * NR).min(n))
            .collect();
        // One row range (all rows) by the jobs' column ranges.
        let all_rows = std::iter::once(0..m).collect::<Vec<_>>();
        let blocks = BlockMut::grid(&mut out[..m * n], n, &all_rows, &cols);
        thread_local! {
            /// A job's widened panels, kept between jobs on a thread.
            static PANEL: RefCell<PackedB> = RefCell::new(PackedB::default());
        }
        blocks.into_par_iter().enumerate().for_each(|(job, mut c)| {
            let p0 = starts[job];
            let np = PANELS_PER_JOB.min(panels - p0);
            PANEL.with(|panel| {
                let panel = &mut *panel.borrow_mut();
                self.widen(p0, np, panel);
                let ep = Epilogue {
                    bias: Some(&bias[cols[job].clone()]),
                    accumulate,
                    gelu,
                };
                gemm::gemm_block(m, x, k, panel, &mut c, ep, false);
            });
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Values exactly representable in bf16, so the f32 reference sees the same weights.
    fn bf16_exact(len: usize, seed: u32) -> Vec<f32> {
        (0..len)
            .map(|i| {
                let v = ((i as u32).wrapping_mul(2654435761).wrapping_add(seed) >> 20) as f32;
                f32::from_bits(((v / 4096.0 - 0.5).to_bits() >> 16) << 16)
            })
            .collect()
    }

    #[test]
    fn equals_the_f32_product_of_the_rounded_weights_bit_for_bit() {
        if !gemm::available() {
            return;
        }
        // Ragged shapes: n not a multiple of a job's 64 columns, k not of the 256-deep blocks.
        for (m, n, k) in [(1, 1, 1), (7, 33, 17), (40, 150, 300), (13, 64, 513)] {
            let w = bf16_exact(n * k, 7);
            let x: Vec<f32> = (0..m * k).map(|i| ((i % 13) as f32 - 6.0) / 7.0).collect();
            let bias: Vec<f32> = (0..n).map(|j| j as f32 / 10.0).collect();
            for (accumulate, gelu) in [(false, false), (true, false), (false, true)] {
                let start: Vec<f32> = (0..m * n).map(|i| (i % 5) as f32).collect();
                let mut want = start.clone();
                let f32s = PackedB::from_nk(&w, n, k, k);
                let ep = Epilogue {
                    bias: Some(&bias),
                    accumulate,
                    gelu,
                };
                gemm::gemm(m, &x, k, &f32s, &mut want, n, ep, false);
                let mut got = start;
                PackedBf16Weights::from_nk(&w, n, k).gemm(m, &x, &mut got, &bias, accumulate, gelu);
                assert_eq!(got, want, "m {m} n {n} k {k} acc {accumulate} gelu {gelu}");
            }
        }
    }

    #[test]
    fn rounds_to_nearest_even() {
        assert_eq!(to_bf16(1.0), 0x3f80);
        // 1 + 2⁻⁸ is halfway between 1 and 1 + 2⁻⁷: ties go to the even mantissa (1.0).
        assert_eq!(to_bf16(1.0 + 1.0 / 256.0), 0x3f80);
        assert_eq!(to_bf16(1.0 + 3.0 / 256.0), 0x3f82);
        assert!(f32::from_bits((to_bf16(f32::NAN) as u32) << 16).is_nan());
    }
}
