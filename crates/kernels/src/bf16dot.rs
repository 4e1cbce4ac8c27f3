//! bf16 matrix products on AVX512-BF16 (`vdpbf16ps`), for CPUs that have the instruction but no
//! AMX tiles (AMD Zen 4, Intel Cooper Lake): both operands rounded to bf16 (to nearest even),
//! products summed in f32, as `amx::TileTerms::Bf16` computes them on tiles. One `vdpbf16ps`
//! is 32 multiply-adds (16 lanes of a bf16 pair each), twice an f32 FMA's 16.
//!
//! Layouts. W (n×k, a PyTorch `Linear` weight) is packed once in panels of 16 columns; a panel
//! holds, for each k-pair r, the 16 pairs (W[j][2r], W[j][2r+1]) as one 64-byte row (bf16 2r in
//! the low half of each 32-bit lane, as `vdpbf16ps` pairs them). Activations are rounded per call
//! into rows of k-pairs. k is padded to even with a zero; panels past n hold zeros.
//!
//! Unsafe code: AVX-512F/BW and AVX512-BF16 intrinsics, reached only after [`available`]; raw
//! pointers into buffers whose sizes the packing fixes, each function stating what it needs.

use super::amx::{bf16_bits, ASource};
use super::gemm::{finish_row, Columns, SendPtr};
use rayon::prelude::*;
use std::arch::x86_64::*;

/// Columns per panel (one zmm of f32 sums).
const T: usize = 16;
/// Rows of the output computed at once (2 panels × 8 rows: 16 accumulators).
const MR: usize = 8;

/// Whether these products can run here: AVX-512F/BW and AVX512-BF16.
pub fn available() -> bool {
    std::arch::is_x86_feature_detected!("avx512f")
        && std::arch::is_x86_feature_detected!("avx512bw")
        && std::arch::is_x86_feature_detected!("avx512bf16")
}

/// The pair (lo, hi) rounded to bf16 as `vdpbf16ps` reads one lane: `lo` in bits 0–15.
#[inline]
fn pair(lo: f32, hi: f32) -> u32 {
    u32::from(bf16_bits(lo)) | (u32::from(bf16_bits(hi)) << 16)
}

/// Wᵀ rounded to bf16 and packed for `vdpbf16ps`.
#[derive(Debug, Clone)]
pub struct PackedBf16Dot {
    // Private: the kernel reads whole panels (`pairs` rows of 16 lanes) without bounds checks.
    k: usize,
    n: usize,
    /// k-pairs: k rounded up to even, halved.
    pairs: usize,
    /// Panels of 16 columns (their count even), each `pairs` rows of 16 lanes.
    data: Vec<u32>,
}

impl PackedBf16Dot {
    /// From a PyTorch `Linear` weight (n rows of k).
    pub fn from_nk(w: &[f32], n: usize, k: usize) -> Self {
        assert!(w.len() >= n * k, "weight holds fewer than n·k values");
        Self::pack(n, k, |j, kk| w[j * k + kk])
    }

    /// From B given as k rows of n (the product is x · B): the packing of `from_nk(Bᵀ)`
    /// without the transpose (training's dx = g·W and dW = gᵀ·x).
    pub fn from_kn(b: &[f32], k: usize, n: usize) -> Self {
        assert!(b.len() >= k * n, "B holds fewer than k·n values");
        Self::pack(n, k, |j, kk| b[kk * n + j])
    }

    /// The packing of an n×k operand whose element (column j, depth kk) is `get(j, kk)`.
    fn pack<F: Fn(usize, usize) -> f32 + Sync>(n: usize, k: usize, get: F) -> Self {
        let pairs = k.div_ceil(2);
        let panels = n.div_ceil(2 * T) * 2;
        let mut data = vec![0u32; panels * pairs * T];
        data.par_chunks_mut(pairs * T)
            .enumerate()
            .for_each(|(p, panel)| {
                for r in 0..pairs {
                    for jj in 0..T.min(n.saturating_sub(p * T)) {
                        let j = p * T + jj;
                        let hi = if 2 * r + 1 < k {
                            get(j, 2 * r + 1)
                        } else {
                            0.0
                        };
                        panel[r * T + jj] = pair(get(j, 2 * r), hi);
                    }
                }
            });
        PackedBf16Dot { k, n, pairs, data }
    }

    /// out (m×n) = x (m×k)·Wᵀ + bias (+ out when `accumulate`), GELU when `gelu`.
    pub fn gemm(
        &self,
        m: usize,
        x: &[f32],
        out: &mut [f32],
        bias: &[f32],
        accumulate: bool,
        gelu: bool,
    ) {
        let a = ASource::Rows { x, lda: self.k };
        self.gemm_epilogue(m, a, out, bias, accumulate, gelu, false)
    }

    /// out (m×n) = round(x (m×k, rows `lda` apart)·Wᵀ + bias) (+ out when `accumulate`), as
    /// `amx::PackedSplit::gemm_round_bf16`.
    pub fn gemm_round_bf16(
        &self,
        m: usize,
        x: &[f32],
        lda: usize,
        out: &mut [f32],
        bias: &[f32],
        accumulate: bool,
    ) {
        let a = ASource::Rows { x, lda };
        self.gemm_epilogue(m, a, out, bias, accumulate, false, true)
    }

    /// [`PackedBf16Dot::gemm_round_bf16`] of A = atᵀ (A[i][kk] = at[kk·ldat + i]), as
    /// `amx::PackedSplit::gemm_round_bf16_at`: the transpose happens as A is rounded into pairs.
    pub fn gemm_round_bf16_at(
        &self,
        m: usize,
        at: &[f32],
        ldat: usize,
        out: &mut [f32],
        bias: &[f32],
        accumulate: bool,
    ) {
        let a = ASource::Columns { at, ldat };
        self.gemm_epilogue(m, a, out, bias, accumulate, false, true)
    }

    #[allow(clippy::too_many_arguments)]
    fn gemm_epilogue(
        &self,
        m: usize,
        a: ASource,
        out: &mut [f32],
        bias: &[f32],
        accumulate: bool,
        gelu: bool,
        round: bool,
    ) {
        assert!(available(), "AVX512-BF16 products are not available");
        if m == 0 || self.n == 0 {
            return;
        }
        a.check(m, self.k);
        assert!(
            m.checked_mul(self.n).is_some_and(|need| out.len() >= need) && bias.len() >= self.n
        );
        let (k, pairs) = (self.k, self.pairs);
        // The activations as k-pairs, row by row (zero past k); `a` is checked to hold them.
        let packed = {
            let mut rows = vec![0u32; m * pairs];
            rows.par_chunks_mut(pairs.max(1))
                .enumerate()
                .for_each(|(i, row)| match a {
                    // Scoring's case: a row read along its k values.
                    ASource::Rows { x, lda } => {
                        let src = &x[i * lda..][..k];
                        for (r, v) in row.iter_mut().enumerate() {
                            *v = pair(src[2 * r], src.get(2 * r + 1).copied().unwrap_or(0.0));
                        }
                    }
                    ASource::Columns { .. } => {
                        for (r, v) in row.iter_mut().enumerate() {
                            let hi = if 2 * r + 1 < k {
                                a.get(i, 2 * r + 1)
                            } else {
                                0.0
                            };
                            *v = pair(a.get(i, 2 * r), hi);
                        }
                    }
                });
            rows
        };
        let cp = SendPtr(out.as_mut_ptr());
        let blocks = m.div_ceil(MR);
        let panel_pairs = self.data.len() / (pairs * T) / 2;
        (0..blocks * panel_pairs).into_par_iter().for_each(|job| {
            let (bi, pj) = (job % blocks, job / blocks);
            let i0 = bi * MR;
            let rows = MR.min(m - i0);
            // SAFETY: `block`'s contract: AVX-512F/BW and AVX512-BF16 are available (asserted
            // above); `packed[i0 * pairs..]` holds `rows` rows of `pairs` values (a is m·pairs and
            // i0 + rows ≤ m); panel pair pj < panels/2 holds 2·pairs·16 values; `cp + i0·n +
            // pj·32` starts row i0 at column pj·32 < n (panel pairs past n are not made: their
            // count is n/32 rounded up), `out` holds m·n values (asserted), and the jobs' (row
            // block, panel pair) tiles are disjoint, so no two threads touch one element;
            // bias.len() ≥ n (asserted).
            unsafe {
                self.block(
                    packed.as_ptr().add(i0 * pairs),
                    rows,
                    pj,
                    cp.get().add(i0 * self.n + pj * 2 * T),
                    bias.as_ptr().add(pj * 2 * T),
                    accumulate,
                    gelu,
                    round,
                )
            }
        });
    }

    /// Rows [0, rows) of the packed activations at `a` (`pairs` apart) times panels 2·pj and
    /// 2·pj + 1, into `out` (row stride n) from column 32·pj.
    ///
    /// # Safety
    /// - AVX-512F/BW and AVX512-BF16 usable ([`available`]).
    /// - `a` valid for reads of `rows · pairs` u32; `rows ≤ MR`; `pj < panels / 2`.
    /// - For each row i < rows, the `min(32, n − 32·pj)` f32 at `out + i·n` valid for writes
    ///   (and reads when `accumulate`), no other thread accessing them.
    /// - `bias` valid for reads of `min(32, n − 32·pj)` f32.
    #[allow(clippy::too_many_arguments)]
    #[target_feature(enable = "avx512f,avx512bw,avx512bf16")]
    unsafe fn block(
        &self,
        a: *const u32,
        rows: usize,
        pj: usize,
        out: *mut f32,
        bias: *const f32,
        accumulate: bool,
        gelu: bool,
        round: bool,
    ) {
        let pairs = self.pairs;
        let b0 = self.data.as_ptr().add(2 * pj * pairs * T);
        let b1 = b0.add(pairs * T);
        let mut acc = [[_mm512_setzero_ps(); 2]; MR];
        for r in 0..pairs {
            // SAFETY (of the transmutes): __m512i and __m512bh are both 64 bytes of plain
            // lanes; every bit pattern is a valid value of either.
            let w0: __m512bh = std::mem::transmute(_mm512_loadu_si512(b0.add(r * T) as *const _));
            let w1: __m512bh = std::mem::transmute(_mm512_loadu_si512(b1.add(r * T) as *const _));
            for (i, row) in acc.iter_mut().enumerate().take(rows) {
                let x: __m512bh =
                    std::mem::transmute(_mm512_set1_epi32(*a.add(i * pairs + r) as i32));
                row[0] = _mm512_dpbf16_ps(row[0], x, w0);
                row[1] = _mm512_dpbf16_ps(row[1], x, w1);
            }
        }
        let cols = Columns::new((2 * T).min(self.n - pj * 2 * T), bias).rounding(round);
        for (i, row) in acc.iter().enumerate().take(rows) {
            finish_row(out.add(i * self.n), row[0], row[1], &cols, accumulate, gelu);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The products of the bf16-rounded operands summed in f32: checked against the same
    /// rounding summed in f64, on ragged shapes (odd k, n not a multiple of 32, a row tail).
    #[test]
    fn products_of_rounded_operands() {
        if !available() {
            return;
        }
        let round = |x: f32| f32::from_bits(u32::from(bf16_bits(x)) << 16) as f64;
        for &(m, n, k) in &[(1, 1, 1), (13, 33, 7), (9, 96, 513), (70, 40, 1024)] {
            let a = crate::test_data::activations(m * k, 506.0);
            let w = crate::test_data::weights(n * k);
            let bias: Vec<f32> = (0..n).map(|j| j as f32 * 0.01).collect();
            let b = PackedBf16Dot::from_nk(&w, n, k);
            let mut c = vec![1f32; m * n];
            b.gemm(m, &a, &mut c, &bias, true, false);
            for i in 0..m {
                for j in 0..n {
                    let (mut want, mut mag) = (1.0 + bias[j] as f64, 0f64);
                    for kk in 0..k {
                        let (x, y) = (a[i * k + kk], w[j * k + kk]);
                        want += round(x) * round(y);
                        mag += (x as f64 * y as f64).abs();
                    }
                    let got = c[i * n + j] as f64;
                    assert!(
                        (got - want).abs() <= mag * 1e-6 + 1e-5,
                        "{m}x{n}x{k} at ({i},{j}): {got} vs {want}"
                    );
                }
            }
        }
    }

    /// B packed from its k×n form is B packed from its transpose: the same products.
    #[test]
    fn packing_from_k_rows_equals_packing_from_the_transpose() {
        if !available() {
            return;
        }
        let (m, n, k) = (11, 40, 9);
        let a = crate::test_data::activations(m * k, 506.0);
        let w = crate::test_data::weights(n * k);
        let wt: Vec<f32> = (0..k * n).map(|i| w[(i % n) * k + i / n]).collect();
        let bias = vec![0f32; n];
        let mut want = vec![0f32; m * n];
        PackedBf16Dot::from_nk(&w, n, k).gemm(m, &a, &mut want, &bias, false, false);
        let mut got = vec![0f32; m * n];
        PackedBf16Dot::from_kn(&wt, k, n).gemm(m, &a, &mut got, &bias, false, false);
        assert_eq!(got, want);
    }

    /// A read from its transpose gives the products of A read by rows, bit for bit (odd k, a
    /// stride wider than m, accumulation after the rounding).
    #[test]
    fn transposed_a_equals_a_by_rows() {
        if !available() {
            return;
        }
        let (m, n, k, ldat) = (13, 40, 9, 17);
        let a = crate::test_data::activations(m * k, 506.0);
        let w = crate::test_data::weights(n * k);
        let mut at = vec![f32::NAN; (k - 1) * ldat + m];
        for i in 0..m {
            for kk in 0..k {
                at[kk * ldat + i] = a[i * k + kk];
            }
        }
        let bias: Vec<f32> = (0..n).map(|j| j as f32 * 0.01).collect();
        let b = PackedBf16Dot::from_nk(&w, n, k);
        let mut want = vec![0.5f32; m * n];
        b.gemm_round_bf16(m, &a, k, &mut want, &bias, true);
        let mut got = vec![0.5f32; m * n];
        b.gemm_round_bf16_at(m, &at, ldat, &mut got, &bias, true);
        assert_eq!(got, want);
    }
}
