//! Custom CPU kernels for the encoder, and the BERT encoder built on them: packed f32 and int8
//! (VNNI) matrix products with fused epilogues, vectorised erf-GELU, LayerNorm and softmax,
//! variable-length attention, and a peak-FLOP probe. Measurements: BENCHMARKS.md.
//!
//! The embedder uses [`BertEncoder`]: this fast encoder on x86-64 CPUs with AVX-512F for f32
//! weights in a safetensors file, candle's BERT layers behind our f16-safe mask (`MaskedBert`)
//! everywhere else (GPU, f16/bf16, `.bin` weights, activations other than erf-GELU). `SCOREKIT_ENCODER=candle` forces candle's.
//!
//! The AVX-512 intrinsics are stable since Rust 1.89; the crate's declared MSRV is older.
#![allow(clippy::incompatible_msrv)]

// The kernels are x86-64 SIMD; elsewhere (aarch64: Apple Silicon with Metal, ARM servers) the
// module keeps only what callers ask (`*_available()` say no) and candle's layers run.
#[cfg(target_arch = "x86_64")]
pub mod act;
#[cfg(target_arch = "x86_64")]
pub mod amx;
#[cfg(target_arch = "x86_64")]
pub mod bert;
#[cfg(target_arch = "x86_64")]
pub mod gemm;
#[cfg(target_arch = "x86_64")]
pub mod int8;
pub mod peak;

use super::masked_bert::MaskedBert;
use candle_core::{DType, Device, Tensor};
use candle_nn::VarBuilder;
use candle_transformers::models::bert::Config as BertConfig;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};

static INT8: AtomicBool = AtomicBool::new(false);

/// Ask encoders loaded from now on for int8 matrix products (`scorekit bench --quantize`).
pub fn set_int8(on: bool) {
    INT8.store(on, Ordering::Relaxed);
}

/// Whether this CPU can run the fast encoder's f32 kernels (x86-64 with AVX-512F).
pub fn kernels_available() -> bool {
    #[cfg(target_arch = "x86_64")]
    return gemm::available();
    #[cfg(not(target_arch = "x86_64"))]
    false
}

/// Whether the f32 products run as split-bf16 AMX tile products here (see `amx`).
pub fn amx_available() -> bool {
    #[cfg(target_arch = "x86_64")]
    return amx::available();
    #[cfg(not(target_arch = "x86_64"))]
    false
}

/// Whether `--quantize` runs on AMX-INT8 tiles here (else on AVX-512 VNNI).
pub fn amx_int8_available() -> bool {
    #[cfg(target_arch = "x86_64")]
    return amx::int8_available();
    #[cfg(not(target_arch = "x86_64"))]
    false
}

/// Whether `--quantize` can run here (AVX-512 VNNI).
pub fn int8_available() -> bool {
    #[cfg(target_arch = "x86_64")]
    return int8::available();
    #[cfg(not(target_arch = "x86_64"))]
    false
}

/// Whether the fast encoder may run a model on `device` in `dtype` (CPU f32, AVX-512F, not
/// turned off with `SCOREKIT_ENCODER=candle`).
pub fn fast_allowed(device: &Device, dtype: DType) -> bool {
    device.is_cpu()
        && dtype == DType::F32
        && kernels_available()
        && std::env::var("SCOREKIT_ENCODER").map_or(true, |v| v != "candle")
}

/// Whether int8 products were asked for (see [`set_int8`]).
pub fn int8_requested() -> bool {
    INT8.load(Ordering::Relaxed)
}

/// A BERT encoder: the fast CPU one where it applies, else candle's.
pub enum BertEncoder {
    #[cfg(target_arch = "x86_64")]
    Fast(Box<bert::FastBert>),
    Candle(Box<MaskedBert>),
}

impl BertEncoder {
    /// Load from `weights` (checked by the caller); `vb` is used for candle's encoder.
    #[cfg_attr(not(target_arch = "x86_64"), allow(unused_variables))]
    pub fn load(
        weights: &Path,
        vb: VarBuilder,
        cfg: &BertConfig,
        device: &Device,
        dtype: DType,
    ) -> candle_core::Result<Self> {
        #[cfg(target_arch = "x86_64")]
        if weights.extension().is_some_and(|e| e == "safetensors")
            && fast_allowed(device, dtype)
            && bert::FastBert::supports(cfg)
        {
            let int8 = INT8.load(Ordering::Relaxed);
            return Ok(BertEncoder::Fast(Box::new(bert::FastBert::load(
                weights, cfg, int8,
            )?)));
        }
        Ok(BertEncoder::Candle(Box::new(MaskedBert::load(vb, cfg)?)))
    }

    /// Which implementation runs (for reports), from what was loaded.
    pub fn engine(&self) -> &'static str {
        match self {
            #[cfg(target_arch = "x86_64")]
            BertEncoder::Fast(f) => f.engine(),
            BertEncoder::Candle(_) => "candle BERT layers",
        }
    }

    /// Only `[CLS]` rows of the output will be read (lets the fast encoder skip work).
    #[cfg_attr(not(target_arch = "x86_64"), allow(unused_variables))]
    pub fn set_cls_only(&mut self, on: bool) {
        #[cfg(target_arch = "x86_64")]
        if let BertEncoder::Fast(f) = self {
            f.cls_only = on;
        }
    }

    /// `[b, s]` ids, types and mask in, `[b, s, h]` hidden states out.
    pub fn forward(
        &self,
        input_ids: &Tensor,
        token_type_ids: &Tensor,
        attention_mask: Option<&Tensor>,
    ) -> candle_core::Result<Tensor> {
        match self {
            #[cfg(target_arch = "x86_64")]
            BertEncoder::Fast(f) => f.forward(input_ids, token_type_ids, attention_mask),
            BertEncoder::Candle(m) => m.forward(input_ids, token_type_ids, attention_mask),
        }
    }
}

/// Deterministic matrices for the kernels' tests.
#[cfg(test)]
pub(crate) mod test_data {
    /// `len` activations in about ±1.6 around `(506 − center) / 311` (center 506: symmetric).
    pub fn activations(len: usize, center: f32) -> Vec<f32> {
        (0..len)
            .map(|i| ((i * 7919 % 1013) as f32 - center) / 311.0)
            .collect()
    }

    /// `len` weights in about ±0.7.
    pub fn weights(len: usize) -> Vec<f32> {
        (0..len)
            .map(|i| ((i * 104729 % 997) as f32 - 498.0) / 701.0)
            .collect()
    }
}
