//! Vectorised element-wise kernels (AVX-512): erf-GELU, tanh-GELU, SiLU, exp, LayerNorm, T5's
//! RMS norm, softmax.
//!
//! erf uses the Abramowitz–Stegun 7.1.26 form with the exponential (max abs error 1.5e-7), as
//! PyTorch's vectorised CPU GELU does; exp is a Cephes-style range reduction with a degree-6
//! polynomial and `vscalefps`.
//!
//! Every `unsafe fn` here needs AVX-512F and is crate-private: other crates call the row kernels
//! through the safe methods of [`crate::cpu::Avx512`], a token made only after the CPU check,
//! which also check the slices' lengths once per row. The slice kernels touch memory only with
//! masked loads and stores whose lanes stop at the slice's end: masked-off lanes are neither read
//! nor written and cannot fault.

use std::arch::x86_64::*;

/// e^x for x in [-87, 88] (clamped), relative error ~2 ulp.
///
/// # Safety
/// The CPU must support AVX-512F. Nothing else: it computes on registers only.
#[inline]
#[target_feature(enable = "avx512f")]
pub(crate) unsafe fn exp_avx512(x: __m512) -> __m512 {
    let x = _mm512_min_ps(
        _mm512_max_ps(x, _mm512_set1_ps(-87.3)),
        _mm512_set1_ps(88.3),
    );
    let n =
        _mm512_roundscale_ps::<0x08>(_mm512_mul_ps(x, _mm512_set1_ps(std::f32::consts::LOG2_E)));
    let r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693_145_75), x);
    let r = _mm512_fnmadd_ps(n, _mm512_set1_ps(1.428_606_8e-6), r);
    let mut p = _mm512_set1_ps(1.987_569_1e-4);
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.398_199_9e-3));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(8.333_452e-3));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(4.166_579_6e-2));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.666_666_5e-1));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(0.5));
    p = _mm512_fmadd_ps(
        p,
        _mm512_mul_ps(r, r),
        _mm512_add_ps(r, _mm512_set1_ps(1.0)),
    );
    _mm512_scalef_ps(p, n)
}

/// erf(x), max abs error 1.5e-7.
///
/// # Safety
/// The CPU must support AVX-512F. Nothing else: it computes on registers only.
#[inline]
#[target_feature(enable = "avx512f")]
pub(crate) unsafe fn erf_avx512(x: __m512) -> __m512 {
    let sign = _mm512_and_si512(_mm512_castps_si512(x), _mm512_set1_epi32(i32::MIN));
    let ax = _mm512_abs_ps(x);
    let t = _mm512_div_ps(
        _mm512_set1_ps(1.0),
        _mm512_fmadd_ps(_mm512_set1_ps(0.327_591_1), ax, _mm512_set1_ps(1.0)),
    );
    let mut p = _mm512_set1_ps(1.061_405_4);
    p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(-1.453_152_1));
    p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(1.421_413_8));
    p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(-0.284_496_74));
    p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(0.254_829_6));
    p = _mm512_mul_ps(p, t);
    let e = exp_avx512(_mm512_sub_ps(_mm512_setzero_ps(), _mm512_mul_ps(ax, ax)));
    let r = _mm512_fnmadd_ps(p, e, _mm512_set1_ps(1.0));
    _mm512_castsi512_ps(_mm512_or_si512(_mm512_castps_si512(r), sign))
}

/// 0.5·x·(1 + erf(x/√2)).
///
/// # Safety
/// The CPU must support AVX-512F. Nothing else: it computes on registers only.
#[inline]
#[target_feature(enable = "avx512f")]
pub(crate) unsafe fn gelu_erf_avx512(x: __m512) -> __m512 {
    let e = erf_avx512(_mm512_mul_ps(
        x,
        _mm512_set1_ps(std::f32::consts::FRAC_1_SQRT_2),
    ));
    _mm512_mul_ps(
        _mm512_mul_ps(x, _mm512_set1_ps(0.5)),
        _mm512_add_ps(e, _mm512_set1_ps(1.0)),
    )
}

/// The bf16 bits of 16 lanes of f32 bits, rounded to nearest even, in the low half of each
/// lane (`train::bf16_bits` in vector lanes; finite values: a NaN with a large payload carries
/// into the sign).
///
/// # Safety
/// The CPU must support AVX-512F. Nothing else: it computes on registers only.
#[inline]
#[target_feature(enable = "avx512f")]
pub(crate) unsafe fn round_bits16(v: __m512i) -> __m512i {
    let lsb = _mm512_and_si512(_mm512_srli_epi32(v, 16), _mm512_set1_epi32(1));
    let r = _mm512_add_epi32(_mm512_add_epi32(v, _mm512_set1_epi32(0x7fff)), lsb);
    _mm512_srli_epi32(r, 16)
}

/// 16 f32 rounded to their nearest bf16 values (ties to even), as f32; NaN stays NaN (the
/// rounding's carry could otherwise turn a NaN with a large payload into a zero).
///
/// # Safety
/// The CPU must support AVX-512F. Nothing else: it computes on registers only.
#[inline]
#[target_feature(enable = "avx512f")]
pub(crate) unsafe fn round_bf16_ps(v: __m512) -> __m512 {
    let rounded = _mm512_slli_epi32(round_bits16(_mm512_castps_si512(v)), 16);
    let nan = _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);
    _mm512_mask_blend_ps(nan, _mm512_castsi512_ps(rounded), v)
}

/// The lanes of a 16-lane step with `len` values left: all, or the first `len`.
#[inline(always)]
pub fn mask_for(len: usize) -> __mmask16 {
    if len >= 16 {
        0xffff
    } else {
        ((1u32 << len) - 1) as u16
    }
}

/// In-place exact GELU on a slice.
pub fn gelu_erf(x: &mut [f32]) {
    assert!(
        std::arch::is_x86_feature_detected!("avx512f"),
        "gelu_erf needs AVX-512F"
    );
    // SAFETY: AVX-512F is asserted on the line above, the one requirement of gelu_erf_slice.
    unsafe { gelu_erf_slice(x) }
}

/// [`gelu_erf`] without the CPU check.
///
/// # Safety
/// The CPU must support AVX-512F. Memory needs nothing from the caller: `x` is a slice and only
/// its lanes `i..x.len()` are loaded and stored (masked).
#[target_feature(enable = "avx512f")]
unsafe fn gelu_erf_slice(x: &mut [f32]) {
    let mut i = 0;
    while i < x.len() {
        let m = mask_for(x.len() - i);
        let p = x.as_mut_ptr().add(i);
        let v = _mm512_maskz_loadu_ps(m, p);
        _mm512_mask_storeu_ps(p, m, gelu_erf_avx512(v));
        i += 16;
    }
}

/// mean((x − c)²) over a row, `c` in every lane (LayerNorm's variance; T5's mean square at 0).
///
/// # Safety
/// The CPU must support AVX-512F. Memory needs nothing from the caller: only `x`'s own lanes are
/// loaded (masked).
#[inline]
#[target_feature(enable = "avx512f")]
unsafe fn mean_square_about(x: &[f32], c: __m512) -> f32 {
    let n = x.len();
    let mut q = _mm512_setzero_ps();
    let mut i = 0;
    while i < n {
        let m = mask_for(n - i);
        let d = _mm512_maskz_sub_ps(m, _mm512_maskz_loadu_ps(m, x.as_ptr().add(i)), c);
        q = _mm512_fmadd_ps(d, d, q);
        i += 16;
    }
    _mm512_reduce_add_ps(q) / n as f32
}

/// LayerNorm of one row in place.
///
/// # Safety
/// The CPU must support AVX-512F, and `gamma` and `beta` must each hold at least `x.len()`
/// values: they are read through raw pointers with `x`'s lane masks, without bounds checks
/// (`FastBert` checks its LayerNorm weights hold `hidden_size` values at load).
#[target_feature(enable = "avx512f")]
pub(crate) unsafe fn layer_norm_row(x: &mut [f32], gamma: &[f32], beta: &[f32], eps: f32) {
    let n = x.len();
    let mut s = _mm512_setzero_ps();
    let mut i = 0;
    while i < n {
        let m = mask_for(n - i);
        s = _mm512_add_ps(s, _mm512_maskz_loadu_ps(m, x.as_ptr().add(i)));
        i += 16;
    }
    let mean = _mm512_reduce_add_ps(s) / n as f32;
    let vm = _mm512_set1_ps(mean);
    let var = mean_square_about(x, vm);
    let inv = _mm512_set1_ps(1.0 / (var + eps).sqrt());
    i = 0;
    while i < n {
        let m = mask_for(n - i);
        let p = x.as_mut_ptr().add(i);
        let d = _mm512_mul_ps(_mm512_sub_ps(_mm512_maskz_loadu_ps(m, p), vm), inv);
        let g = _mm512_maskz_loadu_ps(m, gamma.as_ptr().add(i));
        let b = _mm512_maskz_loadu_ps(m, beta.as_ptr().add(i));
        _mm512_mask_storeu_ps(p, m, _mm512_fmadd_ps(d, g, b));
        i += 16;
    }
}

/// Softmax of one row in place, after multiplying by `scale`.
///
/// # Safety
/// The CPU must support AVX-512F. Memory needs nothing from the caller: only `x`'s own lanes
/// are loaded and stored (masked).
#[target_feature(enable = "avx512f")]
pub(crate) unsafe fn softmax_row(x: &mut [f32], scale: f32) {
    let n = x.len();
    let vs = _mm512_set1_ps(scale);
    let mut mx = _mm512_set1_ps(f32::NEG_INFINITY);
    let mut i = 0;
    while i < n {
        let m = mask_for(n - i);
        let v = _mm512_mask_loadu_ps(_mm512_set1_ps(f32::NEG_INFINITY), m, x.as_ptr().add(i));
        mx = _mm512_max_ps(mx, v);
        i += 16;
    }
    let vmax = _mm512_set1_ps(_mm512_reduce_max_ps(mx) * scale);
    let mut s = _mm512_setzero_ps();
    i = 0;
    while i < n {
        let m = mask_for(n - i);
        let p = x.as_mut_ptr().add(i);
        let e = exp_avx512(_mm512_fmsub_ps(_mm512_maskz_loadu_ps(m, p), vs, vmax));
        let e = _mm512_maskz_mov_ps(m, e);
        s = _mm512_add_ps(s, e);
        _mm512_mask_storeu_ps(p, m, e);
        i += 16;
    }
    let inv = _mm512_set1_ps(1.0 / _mm512_reduce_add_ps(s));
    i = 0;
    while i < n {
        let m = mask_for(n - i);
        let p = x.as_mut_ptr().add(i);
        _mm512_mask_storeu_ps(p, m, _mm512_mul_ps(_mm512_maskz_loadu_ps(m, p), inv));
        i += 16;
    }
}

/// T5's LayerNorm of one row in place: `x · (mean(x²) + eps)^-½ · weight`, no mean, no bias
/// (`T5LayerNorm`, in f32).
///
/// # Safety
/// The CPU must support AVX-512F, and `weight` must hold at least `x.len()` values: it is read
/// through raw pointers with `x`'s lane masks, without bounds checks (the native T5 encoder
/// checks its norms hold `d_model` values at load).
#[target_feature(enable = "avx512f")]
pub(crate) unsafe fn rms_norm_row(x: &mut [f32], weight: &[f32], eps: f32) {
    let n = x.len();
    let var = mean_square_about(x, _mm512_setzero_ps());
    // torch.rsqrt is 1/sqrt, rounded twice.
    let inv = _mm512_set1_ps(1.0 / (var + eps).sqrt());
    let mut i = 0;
    while i < n {
        let m = mask_for(n - i);
        let p = x.as_mut_ptr().add(i);
        let w = _mm512_maskz_loadu_ps(m, weight.as_ptr().add(i));
        // Masked: a row's last step must not read past it (the next row may be another
        // thread's, or the buffer may end).
        _mm512_mask_storeu_ps(
            p,
            m,
            _mm512_mul_ps(w, _mm512_mul_ps(_mm512_maskz_loadu_ps(m, p), inv)),
        );
        i += 16;
    }
}

/// `gelu_new`, GELU's tanh form: 0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³))), computed as the
/// identical x / (1 + e^(−2u)), which needs no tanh and loses nothing near 0.
///
/// # Safety
/// The CPU must support AVX-512F. Nothing else: it computes on registers only.
#[inline]
#[target_feature(enable = "avx512f")]
pub(crate) unsafe fn gelu_tanh_avx512(x: __m512) -> __m512 {
    let x3 = _mm512_mul_ps(_mm512_mul_ps(x, x), x);
    let u = _mm512_mul_ps(
        _mm512_set1_ps(0.797_884_6),
        _mm512_fmadd_ps(_mm512_set1_ps(0.044_715), x3, x),
    );
    let e = exp_avx512(_mm512_mul_ps(u, _mm512_set1_ps(-2.0)));
    _mm512_div_ps(x, _mm512_add_ps(e, _mm512_set1_ps(1.0)))
}

/// SiLU: x / (1 + e^(−x)).
///
/// # Safety
/// The CPU must support AVX-512F. Nothing else: it computes on registers only.
#[inline]
#[target_feature(enable = "avx512f")]
pub(crate) unsafe fn silu_avx512(x: __m512) -> __m512 {
    let e = exp_avx512(_mm512_sub_ps(_mm512_setzero_ps(), x));
    _mm512_div_ps(x, _mm512_add_ps(e, _mm512_set1_ps(1.0)))
}

/// A feed-forward activation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Activation {
    /// max(x, 0).
    Relu,
    /// GELU's tanh form (`gelu_new`).
    GeluTanh,
    /// Exact (erf) GELU.
    GeluErf,
    /// x·sigmoid(x).
    Silu,
}

/// `x = act(x) · gate` in place (`gate` absent: `x = act(x)`), as T5's `DenseGatedActDense` and
/// `DenseReluDense` combine `wi_0` and `wi_1`.
///
/// # Safety
/// The CPU must support AVX-512F, and `gate`, when given, must hold at least `x.len()` values
/// (read with `x`'s lane masks, without bounds checks).
#[target_feature(enable = "avx512f")]
pub(crate) unsafe fn activate_row(x: &mut [f32], gate: Option<&[f32]>, act: Activation) {
    let n = x.len();
    let mut i = 0;
    while i < n {
        let m = mask_for(n - i);
        let p = x.as_mut_ptr().add(i);
        let v = _mm512_maskz_loadu_ps(m, p);
        let a = match act {
            Activation::Relu => _mm512_max_ps(v, _mm512_setzero_ps()),
            Activation::GeluTanh => gelu_tanh_avx512(v),
            Activation::GeluErf => gelu_erf_avx512(v),
            Activation::Silu => silu_avx512(v),
        };
        let a = match gate {
            Some(g) => _mm512_mul_ps(a, _mm512_maskz_loadu_ps(m, g.as_ptr().add(i))),
            None => a,
        };
        _mm512_mask_storeu_ps(p, m, a);
        i += 16;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn erf_ref(x: f64) -> f64 {
        // High-precision series/continued fraction via libm-quality std is unavailable; use
        // a 1e-12-accurate numerical integral of 2/√π e^{-t²}.
        let n = 20000;
        let h = x / n as f64;
        let f = |t: f64| (-t * t).exp();
        let mut s = f(0.0) + f(x);
        for i in 1..n {
            s += if i % 2 == 1 { 4.0 } else { 2.0 } * f(i as f64 * h);
        }
        s * h / 3.0 * 2.0 / std::f64::consts::PI.sqrt()
    }

    #[test]
    fn t5_activations_and_rms_norm_match_their_definitions() {
        if !std::arch::is_x86_feature_detected!("avx512f") {
            return;
        }
        let xs: Vec<f32> = (-900..=900).map(|i| i as f32 / 97.0).collect();
        let gate: Vec<f32> = xs.iter().map(|x| (x * 1.3).cos()).collect();
        for (act, f) in [
            (Activation::Relu, (|x: f64| x.max(0.0)) as fn(f64) -> f64),
            (Activation::GeluTanh, |x: f64| {
                0.5 * x
                    * (1.0
                        + ((2.0 / std::f64::consts::PI).sqrt() * (x + 0.044715 * x.powi(3))).tanh())
            }),
            (Activation::Silu, |x: f64| x / (1.0 + (-x).exp())),
        ] {
            let mut y = xs.clone();
            // SAFETY: AVX-512F was checked above; gate holds as many values as y.
            unsafe { activate_row(&mut y, Some(&gate), act) };
            for ((x, g), y) in xs.iter().zip(&gate).zip(&y) {
                let want = f(*x as f64) * *g as f64;
                assert!(
                    (*y as f64 - want).abs() < 1e-6 * (1.0 + want.abs()),
                    "{act:?} {x}: {y} vs {want}"
                );
            }
        }
        let mut row: Vec<f32> = (0..45).map(|i| (i as f32 * 0.61).sin() * 7.0).collect();
        let w: Vec<f32> = (0..45).map(|i| 0.5 + i as f32 / 45.0).collect();
        let orig = row.clone();
        // SAFETY: AVX-512F was checked above; w holds as many values as row.
        unsafe { rms_norm_row(&mut row, &w, 1e-6) };
        let ms = orig.iter().map(|&v| (v as f64).powi(2)).sum::<f64>() / 45.0;
        for ((o, w), r) in orig.iter().zip(&w).zip(&row) {
            let want = *o as f64 / (ms + 1e-6).sqrt() * *w as f64;
            assert!(
                (*r as f64 - want).abs() < 1e-6 * (1.0 + want.abs()),
                "{r} vs {want}"
            );
        }
    }

    #[test]
    fn gelu_and_softmax_are_accurate() {
        if !std::arch::is_x86_feature_detected!("avx512f") {
            return;
        }
        let xs: Vec<f32> = (-800..=800).map(|i| i as f32 / 100.0).collect();
        let mut g = xs.clone();
        gelu_erf(&mut g);
        for (x, y) in xs.iter().zip(&g) {
            let x64 = *x as f64;
            let want = 0.5 * x64 * (1.0 + erf_ref(x64 / std::f64::consts::SQRT_2));
            assert!(
                (*y as f64 - want).abs() < 5e-7 * (1.0 + x64.abs()),
                "{x}: {y} vs {want}"
            );
        }
        let mut row: Vec<f32> = (0..37).map(|i| (i as f32 * 0.37).sin() * 5.0).collect();
        let orig = row.clone();
        // SAFETY: AVX-512F, softmax_row's one requirement, was checked at the top of the test.
        unsafe { softmax_row(&mut row, 0.5) };
        let mx = orig.iter().cloned().fold(f32::MIN, f32::max) as f64 * 0.5;
        let z: f64 = orig.iter().map(|&v| (v as f64 * 0.5 - mx).exp()).sum();
        for (o, r) in orig.iter().zip(&row) {
            let want = (*o as f64 * 0.5 - mx).exp() / z;
            assert!((*r as f64 - want).abs() < 1e-6, "{r} vs {want}");
        }
    }
}
