//! scorekit's x86-64 CPU kernels, on plain slices (no tensors, no candle): packed f32, split-bf16
//! AMX and int8 (VNNI / AMX-INT8) matrix products with fused epilogues, vectorised erf-GELU and
//! exp, a peak-FLOP probe, sha256 of 16 streams in AVX-512 lanes ([`sha256_lanes`]), the ASCII
//! test of the line reader ([`ascii`]), the JSON string scan of MINT's line reader
//! ([`json_string`]), the bootstrap's generator and resample-counting kernel ([`resample`], for
//! `scorekit-report`) and the training path's element-wise GELU and masked softmax ([`train`],
//! for `scorekit-autograd`). `scorekit-native` builds the unpadded encoder on them and
//! `scorekit-autograd` the training path. Each kernel has a measured reason in BENCHMARKS.md.
//! `scorekit_runtime::engine::load_encoder` decides where they run; this crate only says whether
//! the CPU can (`*_available`).
//!
//! Every entry point is safe: the `#[target_feature]` kernels are reached through functions that
//! check the CPU (the products assert it; the row kernels are methods of the token
//! [`cpu::Avx512`], made only after the check) and the slices' lengths once at entry, and jobs
//! that write their own columns of one matrix get disjoint [`block::BlockMut`]s instead of raw
//! pointers. No other crate of the engine needs `unsafe`.
//!
//! All of scorekit's hand-written SIMD (`std::arch`) lives here, under the workspace's one lint
//! policy; `tests/integration/layers.rs` fails on `std::arch` in any other crate.
//!
//! The AVX-512 intrinsics are stable since Rust 1.89; the crate's declared MSRV is older.
#![allow(clippy::incompatible_msrv)]

// The kernels are x86-64 SIMD; elsewhere (aarch64: Apple Silicon with Metal, ARM servers) the
// module keeps only what callers ask (`*_available()` say no) and candle's layers run.
#[cfg(target_arch = "x86_64")]
pub mod act;
#[cfg(target_arch = "x86_64")]
pub mod amx;
pub mod ascii;
#[cfg(target_arch = "x86_64")]
pub mod attention;
#[cfg(target_arch = "x86_64")]
pub mod bf16dot;
#[cfg(target_arch = "x86_64")]
pub mod bf16small;
pub mod block;
#[cfg(target_arch = "x86_64")]
pub mod cpu;
#[cfg(target_arch = "x86_64")]
pub mod gemm;
#[cfg(target_arch = "x86_64")]
pub mod int8;
pub mod json_string;
pub mod peak;
pub mod resample;
pub mod sha256_lanes;
pub mod splitmix;
pub mod train;
#[cfg(target_arch = "x86_64")]
pub mod widened;

/// Whether this CPU can run the fast encoder's f32 kernels (x86-64 with AVX-512F).
pub fn kernels_available() -> bool {
    #[cfg(target_arch = "x86_64")]
    return gemm::available();
    #[cfg(not(target_arch = "x86_64"))]
    false
}

/// Whether the f32 products run as split-bf16 AMX tile products here, and bf16 products as
/// plain bf16 tile products (see `amx`).
pub fn amx_available() -> bool {
    #[cfg(target_arch = "x86_64")]
    return amx::available();
    #[cfg(not(target_arch = "x86_64"))]
    false
}

/// The measured peak of bf16 tile products (see `amx::bf16_peak`); `None` where AMX-BF16 is
/// not available, and off x86-64.
pub fn amx_bf16_peak(threads: usize, seconds: f64) -> Option<peak::Peak> {
    #[cfg(target_arch = "x86_64")]
    return amx::bf16_peak(threads, seconds);
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = (threads, seconds);
        None
    }
}

/// Whether bf16 products can run on AVX512-BF16 (`vdpbf16ps`) here, for CPUs without AMX.
pub fn bf16dot_available() -> bool {
    #[cfg(target_arch = "x86_64")]
    return bf16dot::available();
    #[cfg(not(target_arch = "x86_64"))]
    false
}

/// The measured peak of bf16 pair products in vector lanes (see `bf16dot::peak`); `None` where
/// AVX512-BF16 is not available, and off x86-64.
pub fn bf16dot_peak(threads: usize, seconds: f64) -> Option<peak::Peak> {
    #[cfg(target_arch = "x86_64")]
    return bf16dot::peak(threads, seconds);
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = (threads, seconds);
        None
    }
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
