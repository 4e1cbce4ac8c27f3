//! The f32 glue of the fused training operations: where the element type is f32, the element-wise
//! GELU and masked softmax run on `scorekit_kernels::train` (AVX-512 kernels with plain-loop
//! fallbacks; all the SIMD lives in scorekit-kernels). f64 (the exactness tests) keeps the generic
//! loops of [`super::ops`].
//!
//! Each hook returns `false` when the element type is not f32, and the caller runs its generic
//! loop.

use scorekit_kernels::train;

/// The element types' way to the f32 kernels: f32 runs them; other types (f64: the exactness
/// tests) keep the defaults, which return `false`, and the caller runs its generic loop. A trait
/// rather than a check of the dtype at run time, so that no slice is reinterpreted as another
/// type.
pub(super) trait Vectorised: Sized {
    /// `y = x · (1 + erf(x/√2)) / 2`, element by element ([`train::gelu`]).
    fn vector_gelu(_x: &[Self], _y: &mut [Self]) -> bool {
        false
    }

    /// `dx = dy · (Φ(x) + x·φ(x))` ([`train::gelu_grad`]).
    fn vector_gelu_grad(_x: &[Self], _dy: &[Self], _dx: &mut [Self]) -> bool {
        false
    }

    /// One row of the masked softmax: `y = softmax(x·scale + mask)`
    /// ([`train::masked_softmax_row`]).
    fn vector_masked_softmax_row(
        _x: &[Self],
        _mask: &[Self],
        _scale: f64,
        _y: &mut [Self],
    ) -> bool {
        false
    }
}

impl Vectorised for f32 {
    fn vector_gelu(x: &[f32], y: &mut [f32]) -> bool {
        train::gelu(x, y);
        true
    }

    fn vector_gelu_grad(x: &[f32], dy: &[f32], dx: &mut [f32]) -> bool {
        train::gelu_grad(x, dy, dx);
        true
    }

    fn vector_masked_softmax_row(x: &[f32], mask: &[f32], scale: f64, y: &mut [f32]) -> bool {
        train::masked_softmax_row(x, mask, scale, y);
        true
    }
}

impl Vectorised for f64 {}

#[cfg(test)]
mod tests {
    use super::super::ops;
    use super::*;

    /// Where the CPU has no AVX-512F, f32 now runs the kernels crate's plain loops instead of
    /// the generic loops of `ops`: they must be the same loops, bit for bit.
    #[test]
    fn the_kernels_plain_loops_are_the_generic_loops_at_f32() {
        let x: Vec<f32> = (-2000..=2000).map(|i| i as f32 / 211.0).collect();
        let dy: Vec<f32> = x.iter().map(|v| (v * 1.7).cos()).collect();
        let n = x.len();
        let bits = |v: &[f32]| v.iter().map(|f| f.to_bits()).collect::<Vec<_>>();
        let (mut a, mut b) = (vec![0f32; n], vec![0f32; n]);
        train::gelu_scalar(&x, &mut a);
        ops::gelu_plain(&x, &mut b);
        assert_eq!(bits(&a), bits(&b), "gelu");
        train::gelu_grad_scalar(&x, &dy, &mut a);
        ops::gelu_grad_plain(&x, &dy, &mut b);
        assert_eq!(bits(&a), bits(&b), "gelu'");
        for k in [1usize, 7, 64, 333] {
            let x = &x[..k];
            let mask: Vec<f32> = (0..k)
                .map(|i| if i % 5 == 4 { f32::MIN } else { 0.0 })
                .collect();
            let (mut a, mut b, mut z) = (vec![0f32; k], vec![0f32; k], vec![0f64; k]);
            train::masked_softmax_row_scalar(x, &mask, 0.125, &mut a);
            ops::softmax_row_plain(x, &mask, 0.125, &mut b, &mut z);
            assert_eq!(bits(&a), bits(&b), "softmax k {k}");
        }
    }
}
