//! int8 matrix products with AVX-512 VNNI (`vpdpbusd`): weights quantised once per output
//! channel (symmetric, scale = max|w|/127), activations per row at run time (asymmetric u8 with
//! a zero point, so the skewed GELU outputs keep all 256 levels; the zero point is removed with
//! the weights' column sums). i32 accumulation over the full depth, then one f32 rescale with the
//! fused bias / residual / GELU epilogue.

use super::act;
use super::gemm::SendPtr;
use rayon::prelude::*;
use std::arch::x86_64::*;

const MR: usize = 12;
const NR: usize = 32;

/// Whether this CPU has AVX-512 VNNI (and BW for the packing).
pub fn available() -> bool {
    std::arch::is_x86_feature_detected!("avx512f")
        && std::arch::is_x86_feature_detected!("avx512bw")
        && std::arch::is_x86_feature_detected!("avx512vnni")
}

/// Quantised Wᵀ: panels of 32 output channels; inside, for each group of 4 inputs, 32×4 bytes.
#[derive(Debug, Clone)]
pub struct PackedI8 {
    pub k: usize,
    pub n: usize,
    k4: usize,
    data: Vec<i8>,
    scale: Vec<f32>,
    /// Σ_k q[j][k]; zero point × this is subtracted from the accumulators.
    colsum: Vec<i32>,
}

impl PackedI8 {
    /// From a PyTorch `Linear` weight (n rows of k).
    pub fn from_nk(w: &[f32], n: usize, k: usize) -> Self {
        let k4 = k.div_ceil(4);
        let np = n.div_ceil(NR);
        let mut data = vec![0i8; np * k4 * NR * 4];
        let mut scale = vec![0f32; np * NR];
        let mut colsum = vec![0i32; np * NR];
        for j in 0..n {
            let row = &w[j * k..(j + 1) * k];
            let amax = row.iter().fold(0f32, |m, v| m.max(v.abs()));
            let s = if amax > 0.0 { amax / 127.0 } else { 1.0 };
            scale[j] = s;
            let (p, jj) = (j / NR, j % NR);
            let mut sum = 0i32;
            for (kk, &v) in row.iter().enumerate() {
                let q = (v / s).round().clamp(-127.0, 127.0) as i8;
                sum += q as i32;
                data[p * k4 * NR * 4 + (kk / 4) * NR * 4 + jj * 4 + kk % 4] = q;
            }
            colsum[j] = sum;
        }
        PackedI8 {
            k,
            n,
            k4,
            data,
            scale,
            colsum,
        }
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
        assert!(x.len() >= m * self.k && out.len() >= m * self.n && bias.len() >= self.n);
        let cp = SendPtr(out.as_mut_ptr());
        let threads = rayon::current_num_threads();
        let chunk = (m.div_ceil(threads * 4).max(MR * 2)).div_ceil(MR) * MR;
        let chunk = chunk.min(MR * 64);
        (0..m.div_ceil(chunk)).into_par_iter().for_each(|bi| {
            let i0 = bi * chunk;
            let rows = chunk.min(m - i0);
            // Safety: AVX-512 VNNI checked at load; each task owns rows [i0, i0+rows).
            unsafe { self.block(x, i0, rows, cp.get(), bias, accumulate, gelu) };
        });
    }

    #[target_feature(enable = "avx512f,avx512bw,avx512vnni")]
    #[allow(clippy::too_many_arguments)]
    unsafe fn block(
        &self,
        x: &[f32],
        i0: usize,
        rows: usize,
        out: *mut f32,
        bias: &[f32],
        accumulate: bool,
        gelu: bool,
    ) {
        let (k, k4, n) = (self.k, self.k4, self.n);
        let panels = rows.div_ceil(MR);
        // Quantise rows, then interleave them in MR-row panels of 4-byte groups.
        let mut qa = vec![0u32; panels * k4 * MR];
        let mut sa = vec![0f32; panels * MR];
        let mut za = vec![0i32; panels * MR];
        let mut row8 = vec![128u8; k4 * 4];
        for r in 0..rows {
            let src = &x[(i0 + r) * k..(i0 + r + 1) * k];
            (sa[r], za[r]) = quantize_row(src, &mut row8[..k]);
            let (pi, i) = (r / MR, r % MR);
            for g in 0..k4 {
                let v = u32::from_le_bytes([
                    row8[4 * g],
                    row8[4 * g + 1],
                    row8[4 * g + 2],
                    row8[4 * g + 3],
                ]);
                qa[pi * k4 * MR + g * MR + i] = v;
            }
        }
        for jp in 0..n.div_ceil(NR) {
            let nr = NR.min(n - jp * NR);
            let b = self.data.as_ptr().add(jp * k4 * NR * 4);
            for pi in 0..panels {
                let mr = MR.min(rows - pi * MR);
                let mut acc = [[_mm512_setzero_si512(); 2]; MR];
                let mut ap = qa.as_ptr().add(pi * k4 * MR);
                let mut bp = b;
                for _ in 0..k4 {
                    let b0 = _mm512_loadu_si512(bp as *const _);
                    let b1 = _mm512_loadu_si512(bp.add(64) as *const _);
                    for (i, row) in acc.iter_mut().enumerate() {
                        let a = _mm512_set1_epi32(*ap.add(i) as i32);
                        row[0] = _mm512_dpbusd_epi32(row[0], a, b0);
                        row[1] = _mm512_dpbusd_epi32(row[1], a, b1);
                    }
                    ap = ap.add(MR);
                    bp = bp.add(NR * 4);
                }
                let j0 = jp * NR;
                let m0: __mmask16 = if nr >= 16 {
                    0xffff
                } else {
                    ((1u32 << nr) - 1) as u16
                };
                let m1: __mmask16 = if nr >= 32 {
                    0xffff
                } else if nr > 16 {
                    ((1u32 << (nr - 16)) - 1) as u16
                } else {
                    0
                };
                let cs0 = _mm512_loadu_si512(self.colsum.as_ptr().add(j0) as *const _);
                let cs1 = _mm512_loadu_si512(self.colsum.as_ptr().add(j0 + 16) as *const _);
                let sw0 = _mm512_loadu_ps(self.scale.as_ptr().add(j0));
                let sw1 = _mm512_loadu_ps(self.scale.as_ptr().add(j0 + 16));
                let bi0 = _mm512_maskz_loadu_ps(m0, bias.as_ptr().add(j0));
                let bi1 = _mm512_maskz_loadu_ps(m1, bias.as_ptr().add(j0 + 16));
                for (i, row) in acc.iter().enumerate().take(mr) {
                    let s = _mm512_set1_ps(sa[pi * MR + i]);
                    let z = _mm512_set1_epi32(za[pi * MR + i]);
                    let off0 = _mm512_mullo_epi32(z, cs0);
                    let off1 = _mm512_mullo_epi32(z, cs1);
                    let p = out.add((i0 + pi * MR + i) * n + j0);
                    let f0 = _mm512_cvtepi32_ps(_mm512_sub_epi32(row[0], off0));
                    let f1 = _mm512_cvtepi32_ps(_mm512_sub_epi32(row[1], off1));
                    let mut v0 = _mm512_fmadd_ps(f0, _mm512_mul_ps(s, sw0), bi0);
                    let mut v1 = _mm512_fmadd_ps(f1, _mm512_mul_ps(s, sw1), bi1);
                    if accumulate {
                        v0 = _mm512_add_ps(v0, _mm512_maskz_loadu_ps(m0, p));
                        v1 = _mm512_add_ps(v1, _mm512_maskz_loadu_ps(m1, p.add(16)));
                    }
                    if gelu {
                        v0 = act::gelu_erf_avx512(v0);
                        v1 = act::gelu_erf_avx512(v1);
                    }
                    _mm512_mask_storeu_ps(p, m0, v0);
                    _mm512_mask_storeu_ps(p.add(16), m1, v1);
                }
            }
        }
    }
}

/// Quantise one row to u8 = round(x/s) + z over [min(x, 0), max(x, 0)]; returns (s, z).
#[target_feature(enable = "avx512f,avx512bw")]
unsafe fn quantize_row(x: &[f32], out: &mut [u8]) -> (f32, i32) {
    let (lo, hi) = x
        .iter()
        .fold((0f32, 0f32), |(lo, hi), &v| (lo.min(v), hi.max(v)));
    let s = if hi > lo { (hi - lo) / 255.0 } else { 1.0 };
    let z = (-lo / s).round().clamp(0.0, 255.0) as i32;
    let inv = _mm512_set1_ps(1.0 / s);
    let vz = _mm512_set1_epi32(z);
    let mut i = 0;
    while i + 16 <= x.len() {
        let v = _mm512_mul_ps(_mm512_loadu_ps(x.as_ptr().add(i)), inv);
        let q = _mm512_add_epi32(_mm512_cvtps_epi32(v), vz);
        let q = _mm512_max_epi32(
            _mm512_min_epi32(q, _mm512_set1_epi32(255)),
            _mm512_setzero_si512(),
        );
        _mm_storeu_si128(
            out.as_mut_ptr().add(i) as *mut __m128i,
            _mm512_cvtepi32_epi8(q),
        );
        i += 16;
    }
    while i < x.len() {
        out[i] = ((x[i] / s).round() as i32 + z).clamp(0, 255) as u8;
        i += 1;
    }
    (s, z)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn close_to_f32() {
        if !available() {
            return;
        }
        let (m, n, k) = (29, 70, 131);
        let a: Vec<f32> = (0..m * k)
            .map(|i| ((i * 7 % 13) as f32 - 6.0) / 7.0)
            .collect();
        let w: Vec<f32> = (0..n * k)
            .map(|i| ((i * 5 % 11) as f32 - 5.0) / 5.0)
            .collect();
        let bias: Vec<f32> = (0..n).map(|j| j as f32 * 0.01).collect();
        let p = PackedI8::from_nk(&w, n, k);
        let mut c = vec![0f32; m * n];
        p.gemm(m, &a, &mut c, &bias, false, false);
        for i in 0..m {
            for j in 0..n {
                let want: f32 =
                    (0..k).map(|kk| a[i * k + kk] * w[j * k + kk]).sum::<f32>() + bias[j];
                assert!(
                    (c[i * n + j] - want).abs() < 0.05 + 0.02 * want.abs(),
                    "{i},{j}"
                );
            }
        }
    }
}
