//! The f32 glue of the fused training operations: where the element type is f32, the element-wise
//! GELU and masked softmax run on `scorekit_kernels::train` (AVX-512 kernels with plain-loop
//! fallbacks; all the SIMD lives in scorekit-kernels). f64 (the exactness tests) keeps the generic
//! loops of [`super::ops`].
//!
//! Each function returns `false` when the element type is not f32, and the caller runs its
//! generic loop.

use candle_core::{DType, WithDType};
use scorekit_kernels::train;

/// `x` as f32 values when `T` is f32.
fn as_f32<T: WithDType>(x: &[T]) -> Option<&[f32]> {
    if T::DTYPE != DType::F32 {
        return None;
    }
    // SAFETY: `T::DTYPE` is F32, and candle maps that dtype to exactly one Rust type, f32: the
    // pointer, length and alignment are those of a valid `[f32]`.
    Some(unsafe { std::slice::from_raw_parts(x.as_ptr().cast::<f32>(), x.len()) })
}

/// [`as_f32`] for a mutable slice.
fn as_f32_mut<T: WithDType>(x: &mut [T]) -> Option<&mut [f32]> {
    if T::DTYPE != DType::F32 {
        return None;
    }
    // SAFETY: as in `as_f32`; the borrow of `x` is moved into the result.
    Some(unsafe { std::slice::from_raw_parts_mut(x.as_mut_ptr().cast::<f32>(), x.len()) })
}

/// `y = x · (1 + erf(x/√2)) / 2`, element by element ([`train::gelu`]).
pub fn gelu<T: WithDType>(x: &[T], y: &mut [T]) -> bool {
    let (Some(x), Some(y)) = (as_f32(x), as_f32_mut(y)) else {
        return false;
    };
    train::gelu(x, y);
    true
}

/// `dx = dy · (Φ(x) + x·φ(x))` ([`train::gelu_grad`]).
pub fn gelu_grad<T: WithDType>(x: &[T], dy: &[T], dx: &mut [T]) -> bool {
    let (Some(x), Some(dy), Some(dx)) = (as_f32(x), as_f32(dy), as_f32_mut(dx)) else {
        return false;
    };
    train::gelu_grad(x, dy, dx);
    true
}

/// One row of the masked softmax: `y = softmax(x·scale + mask)` ([`train::masked_softmax_row`]).
pub fn masked_softmax_row<T: WithDType>(x: &[T], mask: &[T], scale: f64, y: &mut [T]) -> bool {
    let (Some(x), Some(mask), Some(y)) = (as_f32(x), as_f32(mask), as_f32_mut(y)) else {
        return false;
    };
    train::masked_softmax_row(x, mask, scale, y);
    true
}

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
