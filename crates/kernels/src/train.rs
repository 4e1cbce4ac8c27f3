//! The training path's element-wise f32 kernels (erf-GELU forward and backward, masked softmax,
//! rounding to bf16),
//! for `scorekit-autograd`'s fused operations, on the vectorised erf and exp of [`crate::act`]
//! that the scoring encoder uses. The scalar loops called libm's `erff` and `exp` once per
//! element; these were ~12% of a training step's CPU time (`perf`, BENCHMARKS.md "Judge
//! training").
//!
//! Each function runs its AVX-512 kernel where [`crate::kernels_available`] says so, else its
//! plain loop (`*_scalar`): the loop autograd ran for f32 before the kernels moved here, the same
//! operations in the same order (libm's `erff`, f64 `exp`), so results are those of before on
//! either kind of CPU.

/// `x` rounded to the nearest bf16 value, ties to even, as an f32 (NaN stays NaN; values that
/// round past the largest bf16 become infinite, as a conversion to bf16 does).
#[inline]
pub fn bf16_round(x: f32) -> f32 {
    if x.is_nan() {
        return x;
    }
    f32::from_bits(u32::from(bf16_bits(x)) << 16)
}

/// The bf16 bits of `x` rounded to nearest even (finite inputs: the packing loops' form, no
/// branch).
#[inline]
pub(crate) fn bf16_bits(x: f32) -> u16 {
    let b = x.to_bits();
    (b.wrapping_add(0x7fff + ((b >> 16) & 1)) >> 16) as u16
}

/// [`bf16_round`] of every element of `x`, in place, on the calling thread (for work already
/// split into parallel jobs: an attention head's block, its rounded operand).
pub fn bf16_round_in_place(x: &mut [f32]) {
    x.iter_mut().for_each(|v| *v = bf16_round(*v));
}

/// [`bf16_round`] of every element of `x` into `y`, on all threads (bf16-mixed training rounds
/// every product's operands and results: a plain loop the compiler vectorises; candle's
/// f32 → bf16 → f32 conversions were a quarter of a bf16-mixed step, BENCHMARKS.md §6).
///
/// # Panics
/// If `y` is not as long as `x`.
pub fn bf16_round_into(x: &[f32], y: &mut [f32]) {
    use rayon::prelude::*;
    assert_eq!(x.len(), y.len(), "bf16_round_into: x and y lengths");
    y.par_chunks_mut(1 << 14)
        .zip(x.par_chunks(1 << 14))
        .for_each(|(y, x)| {
            for (o, &v) in y.iter_mut().zip(x) {
                *o = bf16_round(v);
            }
        });
}

/// The column sums of `g` `[m, n]` (rows `n` apart): each column summed in f64 in row order,
/// the sum rounded to f32; with `round_bf16` each value is [`bf16_round`]ed before it is added
/// (bf16-mixed's bias gradient). A linear layer's bias gradient, in parallel over 64-column
/// strips. The scalar loop took 5% of a bf16-mixed MiniLM step (`perf`, BENCHMARKS.md §6);
/// the vector one adds the same values in the same order, so the sums are the same bits.
///
/// # Panics
/// If `g` holds fewer than `m · n` values.
pub fn column_sums(g: &[f32], m: usize, n: usize, round_bf16: bool) -> Vec<f32> {
    use rayon::prelude::*;
    assert!(
        m.checked_mul(n).is_some_and(|need| g.len() >= need),
        "column_sums: {} values for {m} x {n}",
        g.len()
    );
    let mut out = vec![0f32; n];
    out.par_chunks_mut(COLUMN_STRIP)
        .enumerate()
        .for_each(|(t, cols)| {
            let j0 = t * COLUMN_STRIP;
            #[cfg(target_arch = "x86_64")]
            if crate::kernels_available() {
                // SAFETY: AVX-512F (checked just above); g holds m rows of n values (asserted)
                // and the strip's columns [j0, j0 + cols.len()) lie inside a row.
                unsafe { x86::column_sums(g, m, n, j0, round_bf16, cols) };
                return;
            }
            column_sums_scalar(g, m, n, j0, round_bf16, cols);
        });
    out
}

/// Columns summed by one [`column_sums`] job.
const COLUMN_STRIP: usize = 64;

/// [`column_sums`]'s plain loop for the strip of columns starting at `j0`.
fn column_sums_scalar(g: &[f32], m: usize, n: usize, j0: usize, round: bool, out: &mut [f32]) {
    let mut acc = [0f64; COLUMN_STRIP];
    for row in g.chunks(n).take(m) {
        for (a, &v) in acc.iter_mut().zip(&row[j0..j0 + out.len()]) {
            *a += f64::from(if round { bf16_round(v) } else { v });
        }
    }
    for (o, a) in out.iter_mut().zip(acc) {
        *o = a as f32;
    }
}

/// `y = x · (1 + erf(x/√2)) / 2`, element by element.
///
/// # Panics
/// If `y` is not as long as `x`.
pub fn gelu(x: &[f32], y: &mut [f32]) {
    assert_eq!(x.len(), y.len(), "gelu: x and y lengths");
    #[cfg(target_arch = "x86_64")]
    if crate::kernels_available() {
        // SAFETY: the CPU has AVX-512F (`kernels_available`, checked just above), the kernel's
        // one requirement besides equal lengths (asserted above) for its masked loads and stores.
        unsafe { x86::gelu(x, y) };
        return;
    }
    gelu_scalar(x, y);
}

/// [`gelu`]'s plain loop (candle's formula and rounding order, `UnaryOpT for GeluErf`).
pub fn gelu_scalar(x: &[f32], y: &mut [f32]) {
    let r2 = std::f64::consts::FRAC_1_SQRT_2 as f32;
    for (y, &v) in y.iter_mut().zip(x) {
        *y = (libm::erff(v * r2) + 1.0) * 0.5 * v;
    }
}

/// `dx = dy · (Φ(x) + x·φ(x))`, the exact GELU's derivative times the incoming gradient.
///
/// # Panics
/// If `dy` or `dx` is not as long as `x`.
pub fn gelu_grad(x: &[f32], dy: &[f32], dx: &mut [f32]) {
    assert!(
        x.len() == dy.len() && x.len() == dx.len(),
        "gelu_grad: x, dy and dx lengths"
    );
    #[cfg(target_arch = "x86_64")]
    if crate::kernels_available() {
        // SAFETY: AVX-512F as in `gelu`; the three lengths are equal (asserted above).
        unsafe { x86::gelu_grad(x, dy, dx) };
        return;
    }
    gelu_grad_scalar(x, dy, dx);
}

/// [`gelu_grad`]'s plain loop, in f64 but for the f32 `erff`.
pub fn gelu_grad_scalar(x: &[f32], dy: &[f32], dx: &mut [f32]) {
    let inv_sqrt_2pi = 1.0 / (2.0 * std::f64::consts::PI).sqrt();
    for ((o, &v), &g) in dx.iter_mut().zip(x).zip(dy) {
        let v = f64::from(v);
        let cdf = 0.5 * (1.0 + f64::from(libm::erff((v * std::f64::consts::FRAC_1_SQRT_2) as f32)));
        let pdf = (-0.5 * v * v).exp() * inv_sqrt_2pi;
        *o = (f64::from(g) * (cdf + v * pdf)) as f32;
    }
}

/// One row of the masked softmax: `y = softmax(x·scale + mask)`.
///
/// # Panics
/// If `mask` or `y` is not as long as `x`.
pub fn masked_softmax_row(x: &[f32], mask: &[f32], scale: f64, y: &mut [f32]) {
    assert!(
        x.len() == mask.len() && x.len() == y.len(),
        "masked_softmax_row: x, mask and y lengths"
    );
    #[cfg(target_arch = "x86_64")]
    if crate::kernels_available() {
        // SAFETY: AVX-512F as in `gelu`; the three lengths are equal (asserted above).
        unsafe { x86::masked_softmax_row(x, mask, scale as f32, y) };
        return;
    }
    masked_softmax_row_scalar(x, mask, scale, y);
}

/// [`masked_softmax_row`]'s plain loop, in f64 (one scratch row of f64 per call).
pub fn masked_softmax_row_scalar(x: &[f32], mask: &[f32], scale: f64, y: &mut [f32]) {
    let mut z: Vec<f64> = x
        .iter()
        .zip(mask)
        .map(|(&x, &m)| f64::from((f64::from(x) * scale) as f32) + f64::from(m))
        .collect();
    let max = z.iter().fold(f64::NEG_INFINITY, |a, &b| a.max(b));
    let mut sum = 0f64;
    for zj in z.iter_mut() {
        *zj = (*zj - max).exp();
        sum += *zj;
    }
    for (y, zj) in y.iter_mut().zip(&z) {
        *y = (zj / sum) as f32;
    }
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use crate::act::{erf_avx512, exp_avx512, gelu_erf_avx512, mask_for, round_bf16_ps};
    use std::arch::x86_64::*;

    /// `v` with its subnormal lanes set to zero. The vector exp stops at e^-87.3 instead of
    /// reaching 0, so the far tails of GELU and the masked softmax positions came out as
    /// subnormals, and products over subnormals run ~10x slower (microcode assists): measured, a
    /// training step's backward went from ~5 s to ~25 s before this.
    #[inline]
    #[target_feature(enable = "avx512f")]
    unsafe fn flush(v: __m512) -> __m512 {
        let normal =
            _mm512_cmp_ps_mask::<_CMP_GE_OQ>(_mm512_abs_ps(v), _mm512_set1_ps(f32::MIN_POSITIVE));
        _mm512_maskz_mov_ps(normal, v)
    }

    /// The strip of [`super::column_sums`] starting at column `j0`, `out.len()` ≤ 64 columns
    /// wide: eight f64 accumulators of eight lanes, each row's 16-value groups widened in two
    /// halves (the scalar loop's additions, lane by lane).
    ///
    /// # Safety
    /// AVX-512F; `g` holds `m` rows `n` apart and `j0 + out.len() <= n` (every load is masked to
    /// the strip's columns, which lie inside each row).
    #[target_feature(enable = "avx512f")]
    pub(super) unsafe fn column_sums(
        g: &[f32],
        m: usize,
        n: usize,
        j0: usize,
        round: bool,
        out: &mut [f32],
    ) {
        let cols = out.len();
        let mut acc = [_mm512_setzero_pd(); 8];
        for i in 0..m {
            let row = g.as_ptr().add(i * n + j0);
            for (q, pair) in acc.chunks_exact_mut(2).enumerate().take(cols.div_ceil(16)) {
                let mut v = _mm512_maskz_loadu_ps(mask_for(cols - q * 16), row.add(q * 16));
                if round {
                    v = round_bf16_ps(v);
                }
                let lo = _mm512_castps512_ps256(v);
                let hi = _mm256_castpd_ps(_mm512_extractf64x4_pd::<1>(_mm512_castps_pd(v)));
                pair[0] = _mm512_add_pd(pair[0], _mm512_cvtps_pd(lo));
                pair[1] = _mm512_add_pd(pair[1], _mm512_cvtps_pd(hi));
            }
        }
        for (q, pair) in acc.chunks_exact(2).enumerate().take(cols.div_ceil(16)) {
            let v = _mm512_insertf64x4::<1>(
                _mm512_castpd256_pd512(_mm256_castps_pd(_mm512_cvtpd_ps(pair[0]))),
                _mm256_castps_pd(_mm512_cvtpd_ps(pair[1])),
            );
            _mm512_mask_storeu_ps(
                out.as_mut_ptr().add(q * 16),
                mask_for(cols - q * 16),
                _mm512_castpd_ps(v),
            );
        }
    }

    /// # Safety
    /// AVX-512F; `y.len() == x.len()` (lanes are masked to `x`'s length).
    #[target_feature(enable = "avx512f")]
    pub(super) unsafe fn gelu(x: &[f32], y: &mut [f32]) {
        let mut i = 0;
        while i < x.len() {
            let m = mask_for(x.len() - i);
            let v = _mm512_maskz_loadu_ps(m, x.as_ptr().add(i));
            _mm512_mask_storeu_ps(y.as_mut_ptr().add(i), m, flush(gelu_erf_avx512(v)));
            i += 16;
        }
    }

    /// # Safety
    /// AVX-512F; `dy` and `dx` as long as `x`.
    #[target_feature(enable = "avx512f")]
    pub(super) unsafe fn gelu_grad(x: &[f32], dy: &[f32], dx: &mut [f32]) {
        let half = _mm512_set1_ps(0.5);
        let one = _mm512_set1_ps(1.0);
        let r2 = _mm512_set1_ps(std::f32::consts::FRAC_1_SQRT_2);
        let inv_sqrt_2pi = _mm512_set1_ps((1.0 / (2.0 * std::f64::consts::PI).sqrt()) as f32);
        let mut i = 0;
        while i < x.len() {
            let m = mask_for(x.len() - i);
            let v = _mm512_maskz_loadu_ps(m, x.as_ptr().add(i));
            let g = _mm512_maskz_loadu_ps(m, dy.as_ptr().add(i));
            let cdf = _mm512_mul_ps(half, _mm512_add_ps(one, erf_avx512(_mm512_mul_ps(v, r2))));
            let e = exp_avx512(_mm512_mul_ps(_mm512_mul_ps(v, v), _mm512_set1_ps(-0.5)));
            let pdf = flush(_mm512_mul_ps(e, inv_sqrt_2pi));
            let d = _mm512_mul_ps(g, _mm512_fmadd_ps(v, pdf, cdf));
            _mm512_mask_storeu_ps(dx.as_mut_ptr().add(i), m, flush(d));
            i += 16;
        }
    }

    /// # Safety
    /// AVX-512F; `mask` and `y` as long as `x`.
    #[target_feature(enable = "avx512f")]
    pub(super) unsafe fn masked_softmax_row(x: &[f32], mask: &[f32], scale: f32, y: &mut [f32]) {
        let n = x.len();
        let vs = _mm512_set1_ps(scale);
        let ninf = _mm512_set1_ps(f32::NEG_INFINITY);
        // z = x·scale + mask into y, and its maximum.
        let mut mx = ninf;
        let mut i = 0;
        while i < n {
            let m = mask_for(n - i);
            let z = _mm512_add_ps(
                _mm512_mul_ps(_mm512_maskz_loadu_ps(m, x.as_ptr().add(i)), vs),
                _mm512_maskz_loadu_ps(m, mask.as_ptr().add(i)),
            );
            mx = _mm512_mask_max_ps(mx, m, mx, z);
            _mm512_mask_storeu_ps(y.as_mut_ptr().add(i), m, z);
            i += 16;
        }
        let vmax = _mm512_set1_ps(_mm512_reduce_max_ps(mx));
        let mut s = _mm512_setzero_ps();
        i = 0;
        while i < n {
            let m = mask_for(n - i);
            let p = y.as_mut_ptr().add(i);
            let d = _mm512_sub_ps(_mm512_maskz_loadu_ps(m, p), vmax);
            // Below -87 the vector exp returns ~1e-38 rather than 0 (masked keys sit at
            // -3.4e38): zero them, as the exact exp would, so that no probability is a tiny
            // value whose products in P·V and in backward fall into the subnormal range.
            let live = m & _mm512_cmp_ps_mask::<_CMP_GE_OQ>(d, _mm512_set1_ps(-87.0));
            let e = _mm512_maskz_mov_ps(live, exp_avx512(d));
            s = _mm512_add_ps(s, e);
            _mm512_mask_storeu_ps(p, m, e);
            i += 16;
        }
        let inv = _mm512_set1_ps(1.0 / _mm512_reduce_add_ps(s));
        i = 0;
        while i < n {
            let m = mask_for(n - i);
            let p = y.as_mut_ptr().add(i);
            _mm512_mask_storeu_ps(p, m, flush(_mm512_mul_ps(_mm512_maskz_loadu_ps(m, p), inv)));
            i += 16;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The vector column sums add the same values in the same order as the plain loop: the
    /// same bits, plain and bf16-rounded, on ragged strips (n not a multiple of 16 or 64),
    /// values far apart in size (so the f64 order matters) and a NaN and an infinity kept.
    #[test]
    fn vector_column_sums_are_the_plain_loops_bits() {
        for &(m, n) in &[(1, 1), (7, 15), (33, 64), (50, 129), (301, 200), (0, 5)] {
            let mut g: Vec<f32> = (0..m * n)
                .map(|i| {
                    let x = ((i as u32).wrapping_mul(2654435761) % 10007) as f32 / 1001.0 - 5.0;
                    x * 10f32.powi((i % 9) as i32 - 4)
                })
                .collect();
            if m * n > 40 {
                g[17] = f32::NAN;
                g[33] = f32::INFINITY;
            }
            for round in [false, true] {
                let got = column_sums(&g, m, n, round);
                let mut want = vec![0f32; n];
                for (t, strip) in want.chunks_mut(COLUMN_STRIP).enumerate() {
                    column_sums_scalar(&g, m, n, t * COLUMN_STRIP, round, strip);
                }
                let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
                assert_eq!(bits(&got), bits(&want), "{m}x{n} round {round}");
            }
        }
    }

    /// The AVX-512 kernels against the plain loops, where the CPU has AVX-512F: the vector erf
    /// and exp are approximations (~1e-7) and the vector path flushes subnormals, so they agree
    /// to a tolerance, not bit for bit.
    #[test]
    fn the_vector_kernels_match_the_plain_loops() {
        if !crate::kernels_available() {
            return;
        }
        for n in [0usize, 1, 15, 16, 17, 100, 1801] {
            let x: Vec<f32> = (0..n).map(|i| (i as f32 * 0.731).sin() * 9.0).collect();
            let dy: Vec<f32> = (0..n).map(|i| (i as f32 * 1.7).cos()).collect();
            let (mut fast, mut plain) = (vec![0f32; n], vec![0f32; n]);
            gelu(&x, &mut fast);
            gelu_scalar(&x, &mut plain);
            for j in 0..n {
                let tol = 1e-6 * (1.0 + x[j].abs());
                assert!((fast[j] - plain[j]).abs() < tol, "gelu n {n} x {}", x[j]);
            }
            gelu_grad(&x, &dy, &mut fast);
            gelu_grad_scalar(&x, &dy, &mut plain);
            for j in 0..n {
                assert!((fast[j] - plain[j]).abs() < 2e-6, "gelu' n {n} x {}", x[j]);
            }
            let mask: Vec<f32> = (0..n)
                .map(|i| if i % 5 == 4 { f32::MIN } else { 0.0 })
                .collect();
            masked_softmax_row(&x, &mask, 0.125, &mut fast);
            masked_softmax_row_scalar(&x, &mask, 0.125, &mut plain);
            for j in 0..n {
                assert!((fast[j] - plain[j]).abs() < 1e-6, "softmax n {n} j {j}");
            }
        }
    }

    /// The kernels (AVX-512 where the CPU has it, else the plain loops) against the f64 formulas.
    #[test]
    fn kernels_match_the_f64_formulas() {
        let xs: Vec<f32> = (-900..=900).map(|i| i as f32 / 100.0).collect();
        let mut y = vec![0f32; xs.len()];
        gelu(&xs, &mut y);
        let dy: Vec<f32> = xs.iter().map(|x| (x * 1.7).cos()).collect();
        let mut dx = vec![0f32; xs.len()];
        gelu_grad(&xs, &dy, &mut dx);
        for i in 0..xs.len() {
            let x = xs[i] as f64;
            let cdf = 0.5 * (1.0 + libm_erf(x / std::f64::consts::SQRT_2));
            let pdf = (-0.5 * x * x).exp() / (2.0 * std::f64::consts::PI).sqrt();
            assert!(
                (y[i] as f64 - x * cdf).abs() < 1e-6 * (1.0 + x.abs()),
                "gelu {x}"
            );
            let want = dy[i] as f64 * (cdf + x * pdf);
            assert!(
                (dx[i] as f64 - want).abs() < 2e-6,
                "gelu' {x}: {} vs {want}",
                dx[i]
            );
        }
        for n in [1usize, 7, 16, 33, 100] {
            let x: Vec<f32> = (0..n).map(|i| (i as f32 * 0.37).sin() * 9.0).collect();
            let mask: Vec<f32> = (0..n)
                .map(|i| if i % 5 == 4 { f32::MIN } else { 0.0 })
                .collect();
            let mut y = vec![0f32; n];
            masked_softmax_row(&x, &mask, 0.125, &mut y);
            let z: Vec<f64> = x
                .iter()
                .zip(&mask)
                .map(|(&a, &m)| a as f64 * 0.125 + m as f64)
                .collect();
            let mx = z.iter().cloned().fold(f64::MIN, f64::max);
            let sum: f64 = z.iter().map(|v| (v - mx).exp()).sum();
            for (j, v) in z.iter().enumerate() {
                let want = (v - mx).exp() / sum;
                assert!((y[j] as f64 - want).abs() < 1e-6, "n {n} j {j}");
            }
        }
    }

    /// erf to ~1e-12 (Abramowitz–Stegun 7.1.26 is not enough here): the series for small |x|,
    /// the continued fraction of erfc otherwise.
    fn libm_erf(x: f64) -> f64 {
        let a = x.abs();
        let r = if a < 2.5 {
            let (mut term, mut sum, mut k) = (a, a, 0.0);
            while term.abs() > 1e-17 * sum.abs() {
                k += 1.0;
                term *= -a * a / k;
                sum += term / (2.0 * k + 1.0);
            }
            sum * 2.0 / std::f64::consts::PI.sqrt()
        } else {
            let mut f = 0.0;
            for k in (1..60).rev() {
                f = (k as f64 / 2.0) / (a + f);
            }
            1.0 - (-a * a).exp() / (std::f64::consts::PI.sqrt() * (a + f))
        };
        r.copysign(x)
    }
}
