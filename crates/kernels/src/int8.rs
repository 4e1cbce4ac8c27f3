//! int8 matrix products with AVX-512 VNNI (`vpdpbusd`): weights quantised once per output
//! channel (symmetric, scale = max|w|/127), activations per row at run time (asymmetric u8 with
//! a zero point, so the skewed GELU outputs keep all 256 levels; the zero point is removed with
//! the weights' column sums). i32 accumulation over the full depth, then one f32 rescale with the
//! fused bias / residual / GELU epilogue.
//!
//! Where the CPU has AMX-INT8 the same products run on tiles (`tdpbusd`, u8 × s8 → i32, 16×16×64
//! per instruction) from the same packed weights; the integer sums are exact either way, so both
//! paths give bit-identical outputs.

use super::amx::{self, AlignedBuf};
use super::gemm::{finish_row, mask, Columns, SendPtr};
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

/// Quantised Wᵀ: panels of 32 output channels; inside, for each group of 4 inputs, 32×4 bytes
/// (so 16 groups × the first or last 16 channels are one int8 B tile, rows 128 bytes apart).
#[derive(Debug, Clone)]
pub struct PackedI8 {
    // Private, like every field here: the kernels read `data`, `scale` and `colsum` as whole
    // panels sized by `n`, `k4` and `kp4` without bounds checks.
    k: usize,
    n: usize,
    k4: usize,
    /// k4 rounded up to 16 (one 64-deep tile step); the padding is zeros.
    kp4: usize,
    data: AlignedBuf<i8>,
    scale: Vec<f32>,
    /// Σ_k q[j][k]; zero point × this is subtracted from the accumulators.
    colsum: Vec<i32>,
    /// Run on AMX-INT8 tiles (else AVX-512 VNNI), chosen at packing.
    tiles: bool,
}

impl PackedI8 {
    /// From a PyTorch `Linear` weight (n rows of k), for AMX-INT8 tiles where available.
    pub fn from_nk(w: &[f32], n: usize, k: usize) -> Self {
        Self::from_nk_on(w, n, k, amx::int8_available())
    }

    /// [`PackedI8::from_nk`], on AMX-INT8 tiles when `tiles` (which must be available), else VNNI.
    pub fn from_nk_on(w: &[f32], n: usize, k: usize, tiles: bool) -> Self {
        assert!(!tiles || amx::int8_available(), "AMX-INT8 is not available");
        let k4 = k.div_ceil(4);
        let kp4 = k4.div_ceil(16) * 16;
        let np = n.div_ceil(NR);
        let mut data = AlignedBuf::default();
        data.zeroed(np * kp4 * NR * 4);
        let d = data.as_mut_slice();
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
                d[p * kp4 * NR * 4 + (kk / 4) * NR * 4 + jj * 4 + kk % 4] = q;
            }
            colsum[j] = sum;
        }
        PackedI8 {
            k,
            n,
            k4,
            kp4,
            data,
            scale,
            colsum,
            tiles,
        }
    }

    /// Whether products run on AMX-INT8 tiles (else VNNI).
    pub fn on_tiles(&self) -> bool {
        self.tiles
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
        self.gemm_on(self.tiles, m, x, out, bias, accumulate, gelu);
    }

    /// [`PackedI8::gemm`] on AMX-INT8 tiles (`tiles`, which must be available) or VNNI.
    #[allow(clippy::too_many_arguments)]
    fn gemm_on(
        &self,
        tiles: bool,
        m: usize,
        x: &[f32],
        out: &mut [f32],
        bias: &[f32],
        accumulate: bool,
        gelu: bool,
    ) {
        assert!(x.len() >= m * self.k && out.len() >= m * self.n && bias.len() >= self.n);
        assert!(!tiles || amx::int8_available(), "AMX-INT8 is not available");
        assert!(tiles || available(), "int8 products need AVX-512 VNNI");
        let cp = SendPtr(out.as_mut_ptr());
        let threads = rayon::current_num_threads();
        // Row blocks: whole register tiles (12 rows) or tile pairs (32 rows), a few per thread.
        let unit = if tiles { 32 } else { MR };
        let chunk = (m.div_ceil(threads * 4).max(unit * 2)).div_ceil(unit) * unit;
        let chunk = chunk.min(if tiles { 256 } else { MR * 64 });
        (0..m.div_ceil(chunk)).into_par_iter().for_each(|bi| {
            let i0 = bi * chunk;
            let rows = chunk.min(m - i0);
            // SAFETY: the CPU features are asserted above: AVX-512F/BW/VNNI for `block`,
            // AMX-INT8 with AVX-512F/BW and the tile state for `block_amx`. out.len() ≥ m·n
            // and bias.len() ≥ n are asserted, rows [i0, i0 + rows) ⊂ [0, m) lie inside
            // `out`, and the tasks' row ranges are disjoint, so no element is touched by two
            // threads. `x` is sliced with bounds checks inside.
            unsafe {
                if tiles {
                    self.block_amx(x, i0, rows, cp.get(), bias, accumulate, gelu)
                } else {
                    self.block(x, i0, rows, cp.get(), bias, accumulate, gelu)
                }
            };
        });
    }

    /// Rows [i0, i0+rows) on AVX-512 VNNI: quantise them, then 12×32 register tiles.
    ///
    /// # Safety
    /// - The CPU must support AVX-512F, AVX-512BW and AVX-512 VNNI ([`available`]).
    /// - `out` is the base of the m×n output (row stride n): rows [i0, i0 + rows), element
    ///   (i, j) at `out.add(i * n + j)` for j < n, must be valid for reads and writes, and no
    ///   other thread may access them during the call.
    /// - `bias.len() >= self.n` (read through raw pointers).
    ///
    /// `x` is sliced with bounds checks; the packed weights are whole by construction.
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
            let b = self.data.as_ptr().add(jp * self.kp4 * NR * 4);
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
                let rescale = Rescale::new(self, j0, nr, bias);
                for (i, row) in acc.iter().enumerate().take(mr) {
                    let r = pi * MR + i;
                    let (v0, v1) = rescale.row(row[0], row[1], sa[r], za[r]);
                    finish_row(
                        out.add((i0 + r) * n + j0),
                        v0,
                        v1,
                        &rescale.cols,
                        accumulate,
                        gelu,
                    );
                }
            }
        }
    }
}

impl PackedI8 {
    /// Rows [i0, i0+rows) on AMX-INT8 tiles: 32×32 output blocks in four i32 C tiles, 64 inputs
    /// per step; then the VNNI path's rescale, so results are bit-identical to it.
    ///
    /// # Safety
    /// - AMX-TILE and AMX-INT8 usable with the tile state granted, and AVX-512F/BW
    ///   ([`amx::int8_available`]). The call loads its own tile configuration and releases the
    ///   tiles on return, so this thread's earlier tile state is lost.
    /// - `out` and `bias` as for [`PackedI8::block`].
    #[target_feature(enable = "avx512f,avx512bw")]
    #[allow(clippy::too_many_arguments)]
    unsafe fn block_amx(
        &self,
        x: &[f32],
        i0: usize,
        rows: usize,
        out: *mut f32,
        bias: &[f32],
        accumulate: bool,
        gelu: bool,
    ) {
        let (k, n) = (self.k, self.n);
        // Quantised rows, 64-byte aligned, row stride kp (rows padded to 32 with zeros).
        let kp = self.kp4 * 4;
        let padded = rows.div_ceil(32) * 32;
        let (mut qa, mut sa, mut za) = QROWS.with(|q| std::mem::take(&mut *q.borrow_mut()));
        qa.zeroed(padded * kp);
        sa.clear();
        za.clear();
        let qs = qa.as_mut_slice();
        for r in 0..rows {
            let src = &x[(i0 + r) * k..(i0 + r + 1) * k];
            let (s, z) = quantize_row(src, &mut qs[r * kp..r * kp + k]);
            sa.push(s);
            za.push(z);
        }
        let qa_ptr = qa.as_ptr();
        amx::configure_tiles();
        let mut acc = [0i32; 32 * 32];
        for jp in 0..n.div_ceil(NR) {
            let j0 = jp * NR;
            let nr = NR.min(n - j0);
            let b = self.data.as_ptr().add(jp * self.kp4 * NR * 4);
            let rescale = Rescale::new(self, j0, nr, bias);
            for r0 in (0..rows).step_by(32) {
                let a = qa_ptr.add(r0 * kp);
                int8_tiles(a, kp, b, self.kp4 / 16, acc.as_mut_ptr());
                for i in 0..(rows - r0).min(32) {
                    let r = r0 + i;
                    let row = acc.as_ptr().add(i * 32);
                    let (v0, v1) = rescale.row(
                        _mm512_loadu_si512(row as *const _),
                        _mm512_loadu_si512(row.add(16) as *const _),
                        sa[r],
                        za[r],
                    );
                    finish_row(
                        out.add((i0 + r) * n + j0),
                        v0,
                        v1,
                        &rescale.cols,
                        accumulate,
                        gelu,
                    );
                }
            }
        }
        std::arch::asm!("tilerelease");
        QROWS.with(|q| *q.borrow_mut() = (qa, sa, za));
    }
}

/// The rescale of one 32-channel slice, shared by the VNNI and AMX paths (so they give the same
/// bits): v = s·sw·(acc − z·colsum) + bias per row, then [`finish_row`] (no bias there).
struct Rescale {
    cs0: __m512i,
    cs1: __m512i,
    sw0: __m512,
    sw1: __m512,
    bi0: __m512,
    bi1: __m512,
    /// The slice's valid lanes.
    cols: Columns,
}

impl Rescale {
    /// Channels [j0, j0 + nr) of `p` (nr ≤ 32; colsum and scale are padded to whole panels).
    ///
    /// # Safety
    /// The CPU must support AVX-512F; `j0` must be a panel start below `p.n` (a multiple of 32),
    /// so the 32 unmasked values of `p.colsum` and `p.scale` from `j0` exist (they are padded
    /// to whole panels); `bias` must hold at least `j0 + nr.min(32)` values (masked reads).
    #[inline]
    #[target_feature(enable = "avx512f")]
    unsafe fn new(p: &PackedI8, j0: usize, nr: usize, bias: &[f32]) -> Self {
        let (m0, m1) = mask(nr);
        Rescale {
            cs0: _mm512_loadu_si512(p.colsum.as_ptr().add(j0) as *const _),
            cs1: _mm512_loadu_si512(p.colsum.as_ptr().add(j0 + 16) as *const _),
            sw0: _mm512_loadu_ps(p.scale.as_ptr().add(j0)),
            sw1: _mm512_loadu_ps(p.scale.as_ptr().add(j0 + 16)),
            bi0: _mm512_maskz_loadu_ps(m0, bias.as_ptr().add(j0)),
            bi1: _mm512_maskz_loadu_ps(m1, bias.as_ptr().add(j0 + 16)),
            cols: Columns::new(nr, std::ptr::null()),
        }
    }

    /// One row's f32 values from its i32 sums, scale `s` and zero point `z`.
    ///
    /// # Safety
    /// The CPU must support AVX-512F. Nothing else: it computes on registers only.
    #[inline]
    #[target_feature(enable = "avx512f")]
    unsafe fn row(&self, acc0: __m512i, acc1: __m512i, s: f32, z: i32) -> (__m512, __m512) {
        let (s, z) = (_mm512_set1_ps(s), _mm512_set1_epi32(z));
        let f0 = _mm512_cvtepi32_ps(_mm512_sub_epi32(acc0, _mm512_mullo_epi32(z, self.cs0)));
        let f1 = _mm512_cvtepi32_ps(_mm512_sub_epi32(acc1, _mm512_mullo_epi32(z, self.cs1)));
        (
            _mm512_fmadd_ps(f0, _mm512_mul_ps(s, self.sw0), self.bi0),
            _mm512_fmadd_ps(f1, _mm512_mul_ps(s, self.sw1), self.bi1),
        )
    }
}

thread_local! {
    /// Quantised activation rows, their scales and zero points (the AMX path's per-thread buffer).
    static QROWS: std::cell::RefCell<(AlignedBuf<u8>, Vec<f32>, Vec<i32>)> =
        std::cell::RefCell::default();
}

/// acc (32×32 i32, row stride 32) = 32 rows of `a` (u8, row stride `lda` bytes) · the 32-channel
/// panel `b`, over `steps` × 64 inputs. Tiles: tmm0..3 C, tmm4/5 A (rows 0–15, 16–31), tmm6/7
/// B (channels 0–15, 16–31: the panel's rows are 128 bytes, 64 for each half).
///
/// # Safety
/// - AMX-INT8 usable and tiles configured on this thread by [`amx::configure_tiles`].
/// - `a`: for each row i < 32, the `steps * 64` bytes at `a.add(i * lda)` valid for reads.
/// - `b`: `steps * 2048` bytes valid for reads (16 rows of 128 bytes per step).
/// - `acc`: 32 × 32 i32 (4096 bytes) valid for writes, not accessed by another thread meanwhile.
unsafe fn int8_tiles(a: *const u8, lda: usize, b: *const i8, steps: usize, acc: *mut i32) {
    use std::arch::asm;
    asm!(
        "tilezero tmm0",
        "tilezero tmm1",
        "tilezero tmm2",
        "tilezero tmm3"
    );
    for st in 0..steps {
        let a0 = a.add(st * 64);
        let b0 = b.add(st * 16 * NR * 4);
        asm!(
            "tileloadd tmm4, [{a0} + {lda}]",
            "tileloadd tmm6, [{b0} + {ldb}]",
            "tileloadd tmm7, [{b1} + {ldb}]",
            "tdpbusd tmm0, tmm4, tmm6",
            "tdpbusd tmm1, tmm4, tmm7",
            "tileloadd tmm5, [{a1} + {lda}]",
            "tdpbusd tmm2, tmm5, tmm6",
            "tdpbusd tmm3, tmm5, tmm7",
            a0 = in(reg) a0,
            a1 = in(reg) a0.add(16 * lda),
            b0 = in(reg) b0,
            b1 = in(reg) b0.add(64),
            lda = in(reg) lda,
            ldb = in(reg) NR * 4,
            options(nostack, readonly),
        );
    }
    amx::store_accumulators(acc as *mut u8, 32 * 4);
}

/// Quantise one row to u8 = round(x/s) + z over [min(x, 0), max(x, 0)]; returns (s, z).
///
/// # Safety
/// The CPU must support AVX-512F and AVX-512BW, and `out.len() >= x.len()`: whole groups of 16
/// are loaded from `x` and stored to `out` through raw pointers (the tail is indexed, checked).
#[target_feature(enable = "avx512f,avx512bw")]
unsafe fn quantize_row(x: &[f32], out: &mut [u8]) -> (f32, i32) {
    // The range (0 included) in vector lanes: the scalar fold does not vectorise (f32::min's NaN
    // rule), and it was 16% of an int8 T5 judge's time. min and max are exact in any order; only a NaN
    // input (which quantises to nothing meaningful either way) can differ from the fold.
    let (mut vlo, mut vhi) = (_mm512_setzero_ps(), _mm512_setzero_ps());
    let mut i = 0;
    while i < x.len() {
        let v = _mm512_maskz_loadu_ps(crate::act::mask_for(x.len() - i), x.as_ptr().add(i));
        vlo = _mm512_min_ps(vlo, v);
        vhi = _mm512_max_ps(vhi, v);
        i += 16;
    }
    let (lo, hi) = (_mm512_reduce_min_ps(vlo), _mm512_reduce_max_ps(vhi));
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
    fn amx_tiles_match_vnni_bit_for_bit() {
        if !available() || !amx::int8_available() {
            return;
        }
        for &(m, n, k, accumulate, gelu) in &[
            (1, 1, 1, false, false),
            (29, 70, 131, true, false),
            (77, 96, 1024, false, true),
            (300, 40, 64, true, true),
        ] {
            let a = crate::test_data::activations(m * k, 400.0);
            let w = crate::test_data::weights(n * k);
            let bias: Vec<f32> = (0..n).map(|j| j as f32 * 0.01).collect();
            let p = PackedI8::from_nk(&w, n, k);
            let start: Vec<f32> = (0..m * n).map(|i| (i % 5) as f32 - 2.0).collect();
            let (mut tiles, mut vnni) = (start.clone(), start);
            p.gemm_on(true, m, &a, &mut tiles, &bias, accumulate, gelu);
            p.gemm_on(false, m, &a, &mut vnni, &bias, accumulate, gelu);
            for i in 0..m * n {
                assert_eq!(tiles[i].to_bits(), vnni[i].to_bits(), "{m}x{n}x{k} at {i}");
            }
        }
    }

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
