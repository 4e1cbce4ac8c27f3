//! AVX-512 f32 kernels of the fused training operations (erf-GELU forward and backward, masked
//! softmax), on the vectorised erf and exp of `native::act` that the scoring encoder uses. The
//! scalar kernels in [`super::ops`] called libm's `erff` and `exp` once per element; these were
//! ~12% of a training step's CPU time (`perf`, BENCHMARKS.md "Judge training"). f64 (the
//! exactness tests) keeps the scalar kernels.
//!
//! Each function returns `false` when it cannot run (another float type, a CPU without
//! AVX-512F, another architecture), and the caller runs its scalar loop.

use candle_core::{DType, WithDType};

/// `x` as f32 values when `T` is f32 and this CPU runs the AVX-512 kernels.
fn as_f32<T: WithDType>(x: &[T]) -> Option<&[f32]> {
    if T::DTYPE != DType::F32 || !scorekit_kernels::kernels_available() {
        return None;
    }
    // SAFETY: `T::DTYPE` is F32, and candle maps that dtype to exactly one Rust type, f32: the
    // pointer, length and alignment are those of a valid `[f32]`.
    Some(unsafe { std::slice::from_raw_parts(x.as_ptr().cast::<f32>(), x.len()) })
}

/// [`as_f32`] for a mutable slice.
fn as_f32_mut<T: WithDType>(x: &mut [T]) -> Option<&mut [f32]> {
    if T::DTYPE != DType::F32 || !scorekit_kernels::kernels_available() {
        return None;
    }
    // SAFETY: as in `as_f32`; the borrow of `x` is moved into the result.
    Some(unsafe { std::slice::from_raw_parts_mut(x.as_mut_ptr().cast::<f32>(), x.len()) })
}

/// `y = x · (1 + erf(x/√2)) / 2`, element by element.
pub fn gelu<T: WithDType>(x: &[T], y: &mut [T]) -> bool {
    let (Some(x), Some(y)) = (as_f32(x), as_f32_mut(y)) else {
        return false;
    };
    assert_eq!(x.len(), y.len());
    #[cfg(target_arch = "x86_64")]
    // SAFETY: `as_f32` returned Some, so the CPU has AVX-512F (the kernel's one requirement);
    // the lengths are equal (asserted), as the kernel's masked loads and stores need.
    unsafe {
        x86::gelu(x, y)
    }
    #[cfg(target_arch = "x86_64")]
    return true;
    #[cfg(not(target_arch = "x86_64"))]
    return false;
}

/// `dx = dy · (Φ(x) + x·φ(x))`, the exact GELU's derivative times the incoming gradient.
pub fn gelu_grad<T: WithDType>(x: &[T], dy: &[T], dx: &mut [T]) -> bool {
    let (Some(x), Some(dy), Some(dx)) = (as_f32(x), as_f32(dy), as_f32_mut(dx)) else {
        return false;
    };
    assert!(x.len() == dy.len() && x.len() == dx.len());
    #[cfg(target_arch = "x86_64")]
    // SAFETY: AVX-512F as in `gelu`; the three lengths are equal (asserted).
    unsafe {
        x86::gelu_grad(x, dy, dx)
    }
    #[cfg(target_arch = "x86_64")]
    return true;
    #[cfg(not(target_arch = "x86_64"))]
    return false;
}

/// One row of the masked softmax: `y = softmax(x·scale + mask)`.
pub fn masked_softmax_row<T: WithDType>(x: &[T], mask: &[T], scale: f64, y: &mut [T]) -> bool {
    let (Some(x), Some(mask), Some(y)) = (as_f32(x), as_f32(mask), as_f32_mut(y)) else {
        return false;
    };
    assert!(x.len() == mask.len() && x.len() == y.len());
    #[cfg(target_arch = "x86_64")]
    // SAFETY: AVX-512F as in `gelu`; the three lengths are equal (asserted).
    unsafe {
        x86::masked_softmax_row(x, mask, scale as f32, y)
    }
    #[cfg(target_arch = "x86_64")]
    return true;
    #[cfg(not(target_arch = "x86_64"))]
    return false;
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use scorekit_kernels::act::{erf_avx512, exp_avx512, gelu_erf_avx512, mask_for};
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

    /// # Safety
    /// AVX-512F; `y.len() == x.len()` (lanes are masked to `x`'s length).
    #[target_feature(enable = "avx512f")]
    pub unsafe fn gelu(x: &[f32], y: &mut [f32]) {
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
    pub unsafe fn gelu_grad(x: &[f32], dy: &[f32], dx: &mut [f32]) {
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
    pub unsafe fn masked_softmax_row(x: &[f32], mask: &[f32], scale: f32, y: &mut [f32]) {
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

    /// The vector kernels against the f64 formulas, where the CPU has them.
    #[test]
    fn kernels_match_the_f64_formulas() {
        let xs: Vec<f32> = (-900..=900).map(|i| i as f32 / 100.0).collect();
        let mut y = vec![0f32; xs.len()];
        if !gelu(&xs, &mut y) {
            return;
        }
        let dy: Vec<f32> = xs.iter().map(|x| (x * 1.7).cos()).collect();
        let mut dx = vec![0f32; xs.len()];
        assert!(gelu_grad(&xs, &dy, &mut dx));
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
            assert!(masked_softmax_row(&x, &mask, 0.125, &mut y));
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
