//! Proof that the CPU has a feature, as a value: [`Avx512`] can only be made after the runtime
//! check, so its methods can call the `#[target_feature(enable = "avx512f")]` kernels safely.
//! An engine checks once when it is built and keeps the token; its hot loops then call safe
//! methods with no check per call.

use crate::act::{self, Activation};

/// This CPU runs AVX-512F: a zero-sized token, made only by [`Avx512::detect`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Avx512 {
    /// Private: no token without the check.
    _checked: (),
}

impl Avx512 {
    /// The token, where this CPU has AVX-512F.
    pub fn detect() -> Option<Self> {
        std::arch::is_x86_feature_detected!("avx512f").then_some(Avx512 { _checked: () })
    }

    /// LayerNorm of one row in place: `(x − mean) / sqrt(var + eps) · gamma + beta`.
    ///
    /// # Panics
    /// If `gamma` or `beta` is shorter than `x`.
    #[inline]
    pub fn layer_norm_row(self, x: &mut [f32], gamma: &[f32], beta: &[f32], eps: f32) {
        assert!(
            gamma.len() >= x.len() && beta.len() >= x.len(),
            "layer_norm_row: gamma or beta shorter than the row"
        );
        // SAFETY: the token proves AVX-512F; gamma and beta hold x.len() values (asserted).
        unsafe { act::layer_norm_row(x, gamma, beta, eps) }
    }

    /// Softmax of one row in place, after multiplying by `scale`.
    #[inline]
    pub fn softmax_row(self, x: &mut [f32], scale: f32) {
        // SAFETY: the token proves AVX-512F, softmax_row's one requirement.
        unsafe { act::softmax_row(x, scale) }
    }

    /// T5's LayerNorm of one row in place: `x · (mean(x²) + eps)^-½ · weight`.
    ///
    /// # Panics
    /// If `weight` is shorter than `x`.
    #[inline]
    pub fn rms_norm_row(self, x: &mut [f32], weight: &[f32], eps: f32) {
        assert!(
            weight.len() >= x.len(),
            "rms_norm_row: weight shorter than the row"
        );
        // SAFETY: the token proves AVX-512F; weight holds x.len() values (asserted).
        unsafe { act::rms_norm_row(x, weight, eps) }
    }

    /// `x = act(x) · gate` in place (`gate` absent: `x = act(x)`).
    ///
    /// # Panics
    /// If `gate` is shorter than `x`.
    #[inline]
    pub fn activate_row(self, x: &mut [f32], gate: Option<&[f32]>, act: Activation) {
        assert!(
            gate.is_none_or(|g| g.len() >= x.len()),
            "activate_row: gate shorter than the row"
        );
        // SAFETY: the token proves AVX-512F; the gate, when given, holds x.len() values
        // (asserted).
        unsafe { act::activate_row(x, gate, act) }
    }
}
