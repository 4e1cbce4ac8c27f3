//! bf16 matrix products on AVX512-BF16 (`vdpbf16ps`), for CPUs that have the instruction but no
//! AMX tiles (AMD Zen 4, Intel Cooper Lake): both operands rounded to bf16 (to nearest even),
//! products summed in f32, as `amx::TileTerms::Bf16` computes them on tiles. One `vdpbf16ps`
//! is 32 multiply-adds (16 lanes of a bf16 pair each), twice an f32 FMA's 16.
//!
//! Layouts. W (n×k, a PyTorch `Linear` weight) is packed once in panels of 16 columns; a panel
//! holds, for each k-pair r, the 16 pairs (W[j][2r], W[j][2r+1]) as one 64-byte row (bf16 2r in
//! the low half of each 32-bit lane, as `vdpbf16ps` pairs them). Activations are rounded per call
//! into panels of 12 rows, the register tile's (12 rows × 2 panels, 24 accumulators): A read by
//! columns (training's gᵀ) pair-major, for each k-pair the 12 rows' pairs side by side, as BLIS
//! packs A; A read by rows row-major in pairs, each row's pairs in order, which the tile reads
//! with a row stride (one conversion and a plain store per 32 values: the pair-major scatter
//! cost more than the strided broadcasts save). k is padded to even with a zero; panels past n
//! and rows past m hold zeros.
//!
//! Unsafe code: AVX-512F/BW and AVX512-BF16 intrinsics, reached only after [`available`]; raw
//! pointers into buffers whose sizes the packing fixes, each function stating what it needs.

use super::act::mask_for;
use super::amx::{bf16_pairs, ASource, PackedProduct};
use super::gemm::{finish_row, Columns, SendPtr};
use rayon::prelude::*;
use std::arch::x86_64::*;

/// Columns per panel (one zmm of f32 sums).
pub(crate) const T: usize = 16;
/// Rows of a packed A panel and of the register tile (12 rows × 2 panels: 24 of the 32 zmm
/// registers accumulate, 2 hold W, 1 the broadcast pair). 8 rows with the row count a runtime
/// value kept the sums on the stack: 32% of the instruction's measured peak on Zen 4.
pub(crate) const MR: usize = 12;

/// Whether these products can run here: AVX-512F/BW and AVX512-BF16.
pub fn available() -> bool {
    std::arch::is_x86_feature_detected!("avx512f")
        && std::arch::is_x86_feature_detected!("avx512bw")
        && std::arch::is_x86_feature_detected!("avx512bf16")
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
        Self::pack(n, k, |panel, p, pairs| {
            for jj in 0..T.min(n.saturating_sub(p * T)) {
                // SAFETY: AVX-512F/BW and AVX512-BF16 (`pack` asserts them); row p·16 + jj
                // < n holds k values of w (asserted); pairs r < pairs of column jj land inside
                // the panel (pairs rows of 16).
                unsafe {
                    scatter_row_pairs(w.as_ptr().add((p * T + jj) * k), k, pairs, panel.add(jj), T)
                }
            }
        })
    }

    /// From B given as k rows of n (the product is x · B): the packing of `from_nk(Bᵀ)`
    /// without the transpose (training's dx = g·W and dW = gᵀ·x).
    pub fn from_kn(b: &[f32], k: usize, n: usize) -> Self {
        assert!(b.len() >= k * n, "B holds fewer than k·n values");
        // SAFETY: AVX-512F/BW and AVX512-BF16 (`pack` asserts them); b holds k rows of n
        // (asserted); the panel is `pairs` rows of 16.
        Self::pack(n, k, |panel, p, pairs| unsafe {
            kn_panel(b, n, k, n, p, pairs, panel)
        })
    }

    /// The packing of an n×k operand: `fill(panel, p, pairs)` writes panel p (`pairs` rows of
    /// 16 u32 at `panel`, zeros on entry), in parallel over panels.
    fn pack(n: usize, k: usize, fill: impl Fn(*mut u32, usize, usize) + Sync) -> Self {
        assert!(available(), "AVX512-BF16 products are not available");
        let pairs = k.div_ceil(2);
        let panels = n.div_ceil(2 * T) * 2;
        let mut data = vec![0u32; panels * pairs * T];
        data.par_chunks_mut((pairs * T).max(1))
            .enumerate()
            .for_each(|(p, panel)| fill(panel.as_mut_ptr(), p, pairs));
        PackedBf16Dot { k, n, pairs, data }
    }
}

// SAFETY: `gemm_epilogue_raw` writes every value of rows below m and columns below n: the row
// groups cover every A panel, each runs every W panel pair, and `tile` stores each of its rows
// below m in the columns below n (`Columns`' masks); it reads `out` only when `accumulate`
// (`finish_row`'s `load_c`).
unsafe impl PackedProduct for PackedBf16Dot {
    fn depth(&self) -> usize {
        self.k
    }

    fn columns(&self) -> usize {
        self.n
    }

    #[allow(clippy::too_many_arguments)]
    unsafe fn gemm_epilogue_raw(
        &self,
        m: usize,
        a: ASource,
        out: *mut f32,
        out_len: usize,
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
        assert!(m.checked_mul(self.n).is_some_and(|need| out_len >= need) && bias.len() >= self.n);
        let pairs = self.pairs;
        let cp = SendPtr(out);
        let panels = m.div_ceil(MR);
        // Groups of up to PANEL_GROUP panels, at least four tasks a thread where m allows.
        let group = (panels / (4 * rayon::current_num_threads())).clamp(1, PANEL_GROUP);
        // Pairs of 16-column panels (n / 32 rounded up; also for k = 0, whose packing is empty:
        // the tiles then write the bias alone).
        let panel_pairs = self.n.div_ceil(2 * T);
        // A by rows is packed row-major in pairs, A by columns pair-major (`pack_a_panels`).
        let by_rows = matches!(a, ASource::Rows { .. });
        let row_len = a_row_len(&a, pairs);
        (0..panels.div_ceil(group)).into_par_iter().for_each(|g| {
            let (p0, count) = (g * group, group.min(panels - g * group));
            let run = |packed: &[u32]| {
                // Each panel pair of W (in L1 or L2) over the group's A panels (in L2).
                for pj in 0..panel_pairs {
                    for q in 0..count {
                        let i0 = (p0 + q) * MR;
                        let cols = 2 * T;
                        // SAFETY: `tile`'s contract: AVX-512F/BW and AVX512-BF16 are available
                        // (asserted above); A panel q of the group holds MR·row_len values
                        // (MR rows of `pairs` read, row_len apart when by rows);
                        // panel pair pj < panels/2 holds 2·pairs·16 values; `cp + i0·n + pj·32`
                        // starts row i0 < m at column pj·32 < n (panel pairs past n are not
                        // made: their count is n/32 rounded up), `out` holds m·n values
                        // (asserted), and the tasks' row groups are disjoint, so no two threads
                        // touch one element; bias.len() ≥ n (asserted).
                        unsafe {
                            let out = cp.get().add(i0 * self.n + pj * cols);
                            let c = Columns::new(
                                cols.min(self.n - pj * cols),
                                bias.as_ptr().add(pj * cols),
                            )
                            .rounding(round);
                            let (a, w) = (
                                packed.as_ptr().add(q * MR * row_len),
                                self.data.as_ptr().add(2 * pj * pairs * T),
                            );
                            let rows = MR.min(m - i0);
                            if by_rows {
                                let (n, rl) = (self.n, row_len);
                                tile_at(a, rl, 1, w, pairs, out, n, rows, &c, accumulate, gelu);
                            } else {
                                tile(a, w, pairs, out, self.n, rows, &c, accumulate, gelu);
                            }
                        }
                    }
                }
            };
            // SAFETY: the CPU has AVX-512F/BW and AVX512-BF16 (asserted above); `a` holds m×k
            // (checked above); panels [p0, p0 + count) are below m.div_ceil(MR).
            unsafe { with_packed_a(a, p0, count, m, self.k, pairs, run) }
        });
    }
}

/// Panel p (columns 16p..) of B given as k rows of n (`ld` apart), rounded to pairs: pair row r
/// from B's rows 2r and 2r + 1, 16 columns at once (zeros past n and for the row past odd k).
/// A panel wholly past n is left as it is (its columns' results are never stored).
///
/// # Safety
/// The CPU must support AVX-512F/BW and AVX512-BF16; `b` holds k rows of n values `ld` apart
/// (`b.len() ≥ (k − 1)·ld + n`); `panel` valid for writes of `pairs · 16` u32, `pairs` = k
/// rounded up to even, halved.
#[target_feature(enable = "avx512f,avx512bw,avx512bf16")]
pub(crate) unsafe fn kn_panel(
    b: &[f32],
    ld: usize,
    k: usize,
    n: usize,
    p: usize,
    pairs: usize,
    panel: *mut u32,
) {
    if p * T >= n {
        return;
    }
    let mask = mask_for(n - p * T);
    for r in 0..pairs {
        // Rows 2r, 2r + 1 below k hold n values; the mask keeps to the columns below n.
        let v = bf16_pairs(b.as_ptr().add(p * T), ld, 2 * r, k, mask);
        _mm512_storeu_si512(panel.add(r * T) as *mut _, v);
    }
}

thread_local! {
    /// Per thread: the packed A panels of its last task, kept for the next one (fresh pages cost
    /// a fault and a clear each; every slot a product reads is written first).
    static APACK: std::cell::RefCell<Vec<u32>> = std::cell::RefCell::default();
}

/// Panels [p0, p0 + count) of A (m×k) rounded to bf16 and packed (see the module's layouts):
/// panel p0 + q at `q·MR·row_len` (`row_len` = [`a_row_len`]), k-pair r of its row ii at
/// `r·MR + ii` from there (A by columns) or `ii·row_len + r` (A by rows), in the calling
/// thread's buffer (a
/// new one if a product on this thread already holds it), then `then(packed)`: packed by the
/// task that multiplies them, so they are still in L2 when the tiles read them (BLIS's packed
/// block of A).
///
/// # Safety
/// The CPU must support AVX-512F/BW and AVX512-BF16, and `a` must hold an m×k A
/// (`ASource::check(m, k)` passed); `pairs` is k rounded up to even, halved; `count ≥ 1` and
/// `(p0 + count − 1)·MR < m`.
unsafe fn with_packed_a<R>(
    a: ASource,
    p0: usize,
    count: usize,
    m: usize,
    k: usize,
    pairs: usize,
    then: impl FnOnce(&[u32]) -> R,
) -> R {
    let pack = |packed: &mut Vec<u32>| {
        let len = count * MR * a_row_len(&a, pairs);
        // Grown with zeros when short; old values elsewhere are overwritten below.
        if packed.len() < len {
            packed.resize(len, 0);
        }
        // SAFETY: this function's contract; the slice is `count` panels of MR·a_row_len
        // values.
        unsafe { pack_a_panels(a, p0, count, m, k, pairs, &mut packed[..len]) };
        then(&packed[..len])
    };
    APACK.with(|buf| match buf.try_borrow_mut() {
        Ok(mut packed) => pack(&mut packed),
        Err(_) => pack(&mut Vec::new()),
    })
}

/// The slots a packed row of A takes: `pairs` for A by columns (pair-major panels); for A by
/// rows (row-major pairs) `pairs` rounded up to whole cache lines, an odd number of them, so
/// that the tile's 12 row streams fall in 12 different L1 sets (at k = 4,096 the rows were 8 KiB
/// apart, all in one set: the product ran 15–20% slower than with pair-major panels).
pub(crate) fn a_row_len(a: &ASource, pairs: usize) -> usize {
    match a {
        ASource::Rows { .. } => row_stride(pairs),
        ASource::Columns { .. } => pairs,
    }
}

/// `pairs` rounded up to an odd number of 16-pair cache lines (see [`a_row_len`]).
pub(crate) fn row_stride(pairs: usize) -> usize {
    (pairs.div_ceil(T) | 1) * T
}

/// A task's panels at most: 96 rows, whose packed pairs stay in L2 (k = 2,912: 560 KiB). A read
/// by columns is read in blocks of 16 pairs (32 source rows) across the group's rows, so each
/// source row is read up to 384 bytes at a time (a panel at a time, 48 bytes from each of k
/// source rows: TLB and cache misses, 1.3 ns a value at 1,536 × 2,912).
const PANEL_GROUP: usize = 8;

/// The panels from `p0` on held in `panels` (each MR·[`a_row_len`] values; every value read
/// by the tiles written, rows past m as zeros). A read by columns (training's gᵀ) is read along its source
/// rows, 12 values at a time, into pair-major panels; A by rows is rounded 32 values at a time
/// into row-major pairs.
///
/// # Safety
/// As [`with_packed_a`]; `panels.len() == count · MR · a_row_len(a, pairs)`, panels [p0, p0 + count) below
/// m.div_ceil(MR).
#[target_feature(enable = "avx512f,avx512bw,avx512bf16")]
unsafe fn pack_a_panels(
    a: ASource,
    p0: usize,
    count: usize,
    m: usize,
    k: usize,
    pairs: usize,
    panels: &mut [u32],
) {
    let row_len = a_row_len(&a, pairs);
    debug_assert!(count > 0 && (p0 + count - 1) * MR < m && panels.len() == count * MR * row_len);
    let out = panels.as_mut_ptr();
    match a {
        ASource::Columns { at, ldat } => {
            for r0 in (0..pairs).step_by(T) {
                for q in 0..count {
                    let i0 = (p0 + q) * MR;
                    // Source row kk holds A's column kk: the panel's rows are side by side
                    // there, inside `at` for kk < k (the check); lanes past m load zeros.
                    let mask = mask_for(m - i0);
                    for r in r0..pairs.min(r0 + T) {
                        let v = bf16_pairs(at.as_ptr().add(i0), ldat, 2 * r, k, mask);
                        // Pair r's MR slots of panel q, all written (zeros past m).
                        let at = out.add((q * pairs + r) * MR);
                        _mm512_mask_storeu_epi32(at as *mut _, 0x0fff, v);
                    }
                }
            }
        }
        ASource::Rows { x, lda } => {
            // Row-major pairs: row ii of panel q at (q·MR + ii)·row_len, read by `tile_at`
            // with steps (row_len, 1). One conversion and a plain store per 32 values:
            // scattering each pair to its panel slot (the layout of A by columns) was 6–7% of a
            // bf16-mixed training step. The slots between pairs and row_len are not read.
            for q in 0..count {
                let (i0, panel) = ((p0 + q) * MR, out.add(q * row_len * MR));
                let rows = MR.min(m - i0);
                for ii in 0..rows {
                    // Row i0 + ii < m holds k values (the check); its pairs fill slots
                    // [ii·row_len, ii·row_len + pairs) of the panel.
                    convert_row(
                        x.as_ptr().add((i0 + ii) * lda),
                        k,
                        pairs,
                        panel.add(ii * row_len),
                    );
                }
                std::ptr::write_bytes(panel.add(rows * row_len), 0, (MR - rows) * row_len);
            }
        }
    }
}

/// One row's k values rounded to bf16 pairs, stored in order at `out` (`pairs` u32).
///
/// # Safety
/// AVX-512F/BW and AVX512-BF16; `row` valid for reads of k f32, `out` for writes of `pairs` u32.
#[inline]
#[target_feature(enable = "avx512f,avx512bw,avx512bf16")]
pub(crate) unsafe fn convert_row(row: *const f32, k: usize, pairs: usize, out: *mut u32) {
    for c in 0..pairs.div_ceil(T) {
        let v = chunk_pairs(row, k, c);
        _mm512_mask_storeu_epi32(out.add(c * T) as *mut _, mask_for(pairs - c * T), v);
    }
}

/// Pairs [16c, 16c + 16) of one row's k values (from `row`), rounded to bf16 (`vcvtne2ps2bf16`:
/// to nearest even, subnormals to zero; one instruction for 32 values): lane j is pair 16c + j,
/// zero past k (odd k's last pair is (x, 0)).
///
/// # Safety
/// AVX-512F/BW and AVX512-BF16; `row` valid for reads of k f32; 16c < k rounded up to even,
/// halved.
#[inline]
#[target_feature(enable = "avx512f,avx512bw,avx512bf16")]
unsafe fn chunk_pairs(row: *const f32, k: usize, c: usize) -> __m512i {
    let k0 = 2 * T * c;
    // Loads masked to the values below k; k0 < k as 16c < pairs.
    let lo = _mm512_maskz_loadu_ps(mask_for(k - k0), row.add(k0));
    // Past the end when k0 + 16 ≥ k (then no lane is loaded): computed without `add`'s promise.
    let hi = _mm512_maskz_loadu_ps(mask_for(k.saturating_sub(k0 + T)), row.wrapping_add(k0 + T));
    // Words 2j, 2j + 1 hold values k0 + 2j, k0 + 2j + 1.
    // SAFETY: __m512bh and __m512i are both 64 bytes of plain lanes.
    unsafe { std::mem::transmute(_mm512_cvtne2ps_pbh(hi, lo)) }
}

/// One row's k values (from `row`) rounded to bf16 pairs, pair r written to `out + r·stride`
/// ([`scatter_chunk_pairs`] for each chunk of 16 pairs).
///
/// # Safety
/// As [`scatter_chunk_pairs`], for every chunk.
#[inline]
#[target_feature(enable = "avx512f,avx512bw,avx512bf16")]
pub(crate) unsafe fn scatter_row_pairs(
    row: *const f32,
    k: usize,
    pairs: usize,
    out: *mut u32,
    stride: usize,
) {
    for c in 0..pairs.div_ceil(T) {
        scatter_chunk_pairs(row, k, pairs, c, out, stride);
    }
}

/// Pairs [16c, 16c + 16) ∩ [0, pairs) of one row's k values (from `row`), rounded to bf16
/// ([`chunk_pairs`]) and scattered, pair r to `out + r·stride`: a row-major operand lands in a
/// pair-major panel.
///
/// # Safety
/// The CPU must support AVX-512F/BW and AVX512-BF16; `row` valid for reads of k f32; `out +
/// r·stride` valid for writes for those r; `16c < pairs` = k rounded up to even, halved;
/// `stride < 2³¹ / 16`.
#[inline]
#[target_feature(enable = "avx512f,avx512bw,avx512bf16")]
unsafe fn scatter_chunk_pairs(
    row: *const f32,
    k: usize,
    pairs: usize,
    c: usize,
    out: *mut u32,
    stride: usize,
) {
    let lanes = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    let offsets = _mm512_mullo_epi32(lanes, _mm512_set1_epi32(stride as i32));
    let v = chunk_pairs(row, k, c);
    _mm512_mask_i32scatter_epi32::<4>(
        out.add(c * T * stride) as *mut _,
        mask_for(pairs - c * T),
        offsets,
        v,
    );
}

/// [`finish_row`] for each listed row below `rows` of the accumulators `acc` (the list is
/// 0..MR, checked below), with constant indices.
macro_rules! epilogue_rows {
    ($acc:ident, $rows:expr, $out:expr, $ldo:expr, $cols:expr, $accumulate:expr, $gelu:expr;
     $($i:literal)*) => {
        $(
            if $i < $rows {
                let row = $acc[$i];
                finish_row($out.add($i * $ldo), row[0], row[1], $cols, $accumulate, $gelu);
            }
        )*
    };
}

// The epilogue's row list is 0..12.
const _: () = assert!(MR == 12);

/// The loop of [`tile`] and [`tile_at`]: pair r of A's row i at `a + i·row_step + r·pair_step`,
/// expanded in each so that `tile` keeps its constant steps.
macro_rules! tile_body {
    ($a:expr, $row_step:expr, $pair_step:expr, $b0:expr, $pairs:expr, $out:expr, $ldo:expr,
     $rows:expr, $cols:expr, $accumulate:expr, $gelu:expr) => {{
        let b1 = $b0.add($pairs * T);
        // All MR rows are computed (the padding rows are zeros): a fixed count keeps the sums
        // in registers.
        let mut acc = [[_mm512_setzero_ps(); 2]; MR];
        for r in 0..$pairs {
            // SAFETY (of the transmutes): __m512i and __m512bh are both 64 bytes of plain
            // lanes; every bit pattern is a valid value of either.
            let w0: __m512bh = std::mem::transmute(_mm512_loadu_si512($b0.add(r * T) as *const _));
            let w1: __m512bh = std::mem::transmute(_mm512_loadu_si512(b1.add(r * T) as *const _));
            let ap = $a.add(r * $pair_step);
            for (i, row) in acc.iter_mut().enumerate() {
                let x: __m512bh =
                    std::mem::transmute(_mm512_set1_epi32(*ap.add(i * $row_step) as i32));
                row[0] = _mm512_dpbf16_ps(row[0], x, w0);
                row[1] = _mm512_dpbf16_ps(row[1], x, w1);
            }
        }
        // Row by row with constant indices (the macro below): a loop over `acc` kept the sums
        // in a stack array, cleared by a memset at every tile's start (~50 cycles, a tenth of
        // an attention tile of 16 pairs).
        epilogue_rows!(acc, $rows, $out, $ldo, $cols, $accumulate, $gelu; 0 1 2 3 4 5 6 7 8 9 10 11);
    }};
}

/// One MR×32 tile of the product: A panel `a` (`pairs` steps of MR values) times the two W
/// panels from `b0`, then the epilogue on its first `rows` rows (row stride `ldo`).
///
/// # Safety
/// - AVX-512F/BW and AVX512-BF16 usable ([`available`]).
/// - `a` valid for reads of `pairs · MR` u32; `b0` of `2 · pairs · 16` u32; `rows ≤ MR`.
/// - For each row i < rows, the f32 at `out + i·ldo` in the lanes of `cols` valid for writes
///   (and reads when `accumulate`), no other thread accessing them.
#[allow(clippy::too_many_arguments)]
#[target_feature(enable = "avx512f,avx512bw,avx512bf16")]
unsafe fn tile(
    a: *const u32,
    b0: *const u32,
    pairs: usize,
    out: *mut f32,
    ldo: usize,
    rows: usize,
    cols: &Columns,
    accumulate: bool,
    gelu: bool,
) {
    // The panel's constant steps, written into the loop (a call of `tile_at` with them was
    // not inlined: its broadcasts then took runtime strides).
    tile_body!(a, 1, MR, b0, pairs, out, ldo, rows, cols, accumulate, gelu)
}

/// [`tile`] with pair r of A's row i read from `a + i·row_step + r·pair_step`: A by rows packed
/// row-major (the row length and 1), and `bf16small`'s row-major and pair-major operands.
///
/// # Safety
/// As [`tile`], with `a + i·row_step + r·pair_step` valid for reads for i < MR, r < pairs.
#[allow(clippy::too_many_arguments)]
#[inline]
#[target_feature(enable = "avx512f,avx512bw,avx512bf16")]
pub(crate) unsafe fn tile_at(
    a: *const u32,
    row_step: usize,
    pair_step: usize,
    b0: *const u32,
    pairs: usize,
    out: *mut f32,
    ldo: usize,
    rows: usize,
    cols: &Columns,
    accumulate: bool,
    gelu: bool,
) {
    tile_body!(a, row_step, pair_step, b0, pairs, out, ldo, rows, cols, accumulate, gelu)
}

/// `iters` rounds of 12 independent `vdpbf16ps` (16 lanes of one bf16 pair each); returns
/// their sum (so the work is kept).
///
/// # Safety
/// The CPU must support AVX-512F and AVX512-BF16 ([`available`]). Registers and locals only.
#[target_feature(enable = "avx512f,avx512bf16")]
unsafe fn dot_loop(iters: usize) -> f32 {
    // SAFETY (of the transmutes): __m512i and __m512bh are both 64 bytes of plain lanes.
    let x: __m512bh = std::mem::transmute(_mm512_set1_epi32(0x3f80_3f80)); // (1.0, 1.0)
    let w: __m512bh = std::mem::transmute(_mm512_set1_epi32(0x3380_3380)); // (6e-8, 6e-8)
    let mut c = [_mm512_set1_ps(1.0); 12];
    for _ in 0..iters {
        for acc in c.iter_mut() {
            *acc = _mm512_dpbf16_ps(*acc, x, w);
        }
    }
    let mut s = _mm512_setzero_ps();
    for acc in c {
        s = _mm512_add_ps(s, acc);
    }
    _mm512_reduce_add_ps(s)
}

/// The measured rate of `vdpbf16ps` in a register-only loop (12 independent accumulators, so
/// the latency is hidden) on `threads` threads at once, best of 3 rounds; `None` where
/// AVX512-BF16 is not [`available`]. The yardstick of these products' utilisation, as
/// [`crate::peak::measure`] is of f32's.
pub fn peak(threads: usize, seconds: f64) -> Option<crate::peak::Peak> {
    if !available() {
        return None;
    }
    let threads = threads.max(1);
    // SAFETY: AVX-512F and AVX512-BF16 are available (checked above).
    let run = |iters: usize| unsafe { dot_loop(iters) };
    // 12 instructions of 16 lanes × 2 multiply-adds, 2 FLOPs each.
    let flops_per_iter = (12 * T * 2 * 2) as f64;
    let best = crate::peak::best_rate(threads, seconds, 1_000_000, flops_per_iter, run);
    Some(crate::peak::Peak {
        gflops: best,
        threads,
        isa: "avx512-bf16",
    })
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
        let round = |x: f32| f32::from_bits(u32::from(crate::amx::bf16_bits(x)) << 16) as f64;
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

    /// Products into new matrices (not zero-filled first) equal products into zeroed ones, for
    /// A by rows and by columns, on shapes with a ragged last panel, several row groups and
    /// threads, odd k, and k = 0 (the bias alone).
    #[test]
    fn new_matrices_equal_products_into_zeroed_ones() {
        if !available() {
            return;
        }
        for &(m, n, k) in &[
            (1, 1, 1),
            (13, 33, 7),
            (300, 50, 99),
            (1000, 70, 40),
            (5, 20, 0),
        ] {
            let a = crate::test_data::activations(m * k, 506.0);
            let w = crate::test_data::weights(n * k);
            let at: Vec<f32> = (0..k * m).map(|i| a[(i % m) * k + i / m]).collect();
            let bias: Vec<f32> = (0..n).map(|j| j as f32 * 0.01).collect();
            let b = PackedBf16Dot::from_nk(&w, n, k);
            let mut want = vec![0f32; m * n];
            b.gemm_round_bf16(m, &a, k, &mut want, &bias, false);
            assert_eq!(b.gemm_round_bf16_new(m, &a, k, &bias), want, "{m}x{n}x{k}");
            if k == 0 {
                // No depth: the bias alone (0.01·j rounded to bf16).
                let round = |x: f32| f32::from_bits(u32::from(crate::amx::bf16_bits(x)) << 16);
                assert!(
                    (0..m * n).all(|i| want[i] == round(bias[i % n])),
                    "{want:?}"
                );
            }
            assert_eq!(
                b.gemm_round_bf16_at_new(m, &at, m, &bias),
                want,
                "{m}x{n}x{k}"
            );
        }
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
