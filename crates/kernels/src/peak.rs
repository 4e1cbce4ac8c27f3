//! The machine's measured f32 peak: a register-only FMA loop (12 independent accumulators, so
//! the FMA latency is hidden), on every worker thread at once, with the widest vectors the CPU
//! has (AVX-512, else AVX2+FMA, else a scalar estimate).

#[cfg(target_arch = "x86_64")]
use std::time::Instant;

/// Result of a peak measurement.
#[derive(Debug, Clone, Copy)]
pub struct Peak {
    /// GFLOP/s over all threads (a multiply-add counts as 2 FLOPs).
    pub gflops: f64,
    /// Threads that ran the loop.
    pub threads: usize,
    /// Which loop: "avx512", "avx2" or "scalar" (f32 FMAs), "amx-bf16" (bf16 tile products,
    /// `amx::bf16_peak`) or "avx512-bf16" (`vdpbf16ps`, `bf16dot::peak`).
    pub isa: &'static str,
}

/// `iters` rounds of 12 independent 16-lane FMAs; returns their sum (so the work is kept).
///
/// # Safety
/// The CPU must support AVX-512F. Nothing else: registers and locals only.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
unsafe fn fma_loop_avx512(iters: usize) -> f32 {
    use std::arch::x86_64::*;
    let m = _mm512_set1_ps(0.999_999);
    let a = _mm512_set1_ps(1e-7);
    let mut c = [_mm512_set1_ps(1.0); 12];
    for _ in 0..iters {
        for x in c.iter_mut() {
            *x = _mm512_fmadd_ps(*x, m, a);
        }
    }
    let mut s = _mm512_setzero_ps();
    for x in c {
        s = _mm512_add_ps(s, x);
    }
    _mm512_reduce_add_ps(s)
}

/// `iters` rounds of 12 independent 8-lane FMAs; returns their sum (so the work is kept).
///
/// # Safety
/// The CPU must support AVX2 and FMA. Nothing else: registers and locals only.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn fma_loop_avx2(iters: usize) -> f32 {
    use std::arch::x86_64::*;
    let m = _mm256_set1_ps(0.999_999);
    let a = _mm256_set1_ps(1e-7);
    let mut c = [_mm256_set1_ps(1.0); 12];
    for _ in 0..iters {
        for x in c.iter_mut() {
            *x = _mm256_fmadd_ps(*x, m, a);
        }
    }
    let mut s = _mm256_setzero_ps();
    for x in c {
        s = _mm256_add_ps(s, x);
    }
    let mut out = [0f32; 8];
    _mm256_storeu_ps(out.as_mut_ptr(), s);
    out.iter().sum()
}

/// GFLOP/s of `run(iters)` (`flops_per_iter` each iteration) on `threads` threads at once, for
/// about `seconds`: calibrated with `calibrate_iters` iterations on one thread, then the best of
/// 3 rounds of all threads together. The one timing loop of every peak probe.
#[cfg(target_arch = "x86_64")]
pub(crate) fn best_rate<R: Send>(
    threads: usize,
    seconds: f64,
    calibrate_iters: usize,
    flops_per_iter: f64,
    run: impl Fn(usize) -> R + Copy + Send,
) -> f64 {
    let t = Instant::now();
    std::hint::black_box(run(calibrate_iters));
    let per_iter = t.elapsed().as_secs_f64() / calibrate_iters as f64;
    let iters = ((seconds / 3.0) / per_iter.max(1e-12)) as usize + 1;
    let mut best = 0f64;
    for _ in 0..3 {
        let t = Instant::now();
        std::thread::scope(|s| {
            for _ in 0..threads {
                s.spawn(move || std::hint::black_box(run(iters)));
            }
        });
        let flops = threads as f64 * iters as f64 * flops_per_iter;
        best = best.max(flops / t.elapsed().as_secs_f64() / 1e9);
    }
    best
}

/// Run the FMA loop on `threads` threads for about `seconds`; returns GFLOP/s summed.
pub fn measure(threads: usize, seconds: f64) -> Peak {
    let threads = threads.max(1);
    #[cfg(target_arch = "x86_64")]
    {
        let (isa, lanes) = if std::arch::is_x86_feature_detected!("avx512f") {
            ("avx512", 16usize)
        } else if std::arch::is_x86_feature_detected!("avx2")
            && std::arch::is_x86_feature_detected!("fma")
        {
            ("avx2", 8usize)
        } else {
            ("scalar", 1usize)
        };
        if lanes > 1 {
            let run = move |iters: usize| -> f32 {
                // SAFETY: `lanes` is 16 only where AVX-512F was detected above, and 8 only
                // where AVX2 and FMA were; the scalar case (1) never reaches here.
                unsafe {
                    if lanes == 16 {
                        fma_loop_avx512(iters)
                    } else {
                        fma_loop_avx2(iters)
                    }
                }
            };
            let best = best_rate(threads, seconds, 1_000_000, (12 * lanes * 2) as f64, run);
            return Peak {
                gflops: best,
                threads,
                isa,
            };
        }
    }
    let _ = seconds;
    Peak {
        gflops: 2.0 * threads as f64,
        threads,
        isa: "scalar",
    }
}
