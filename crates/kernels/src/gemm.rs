//! f32 matrix products with AVX-512: C (m×n) = A (m×k, row-major, any row stride) · B, where B
//! is packed once into 32-column panels (k-major inside a panel). Weights are packed at load
//! time, so a forward pass only packs the activations. BLIS-style blocking: a KC×32 panel of B
//! stays in L1 while the 12-row panels of an MC×KC block of A stream from L2; a 12×32 register
//! tile (24 zmm accumulators). Fused epilogue: bias, accumulate into C (residual), GELU.

use super::act;
use crate::block::BlockMut;
use rayon::prelude::*;
use std::arch::x86_64::*;

/// Rows of the register tile.
pub const MR: usize = 12;
/// Columns of the register tile (two zmm).
pub const NR: usize = 32;
/// Rows of A packed at a time (an MC×KC block: 384 KiB, in L2).
pub const MC: usize = MR * 32;
/// Depth of one packed block (B panel KC×32×4 bytes = 32 KiB, in L1).
pub const KC: usize = 256;

/// Whether this CPU can run these kernels.
pub fn available() -> bool {
    std::arch::is_x86_feature_detected!("avx512f")
}

/// B (k×n) packed in panels of NR columns; each panel holds k rows of NR values.
///
/// The fields are private so that `data` always holds `n.div_ceil(NR) * k * NR` values: the
/// kernels read whole panels through raw pointers without bounds checks.
#[derive(Debug, Clone, Default)]
pub struct PackedB {
    k: usize,
    n: usize,
    data: Vec<f32>,
}

impl PackedB {
    /// Rows of B (the product's depth).
    pub fn k(&self) -> usize {
        self.k
    }

    /// Columns of B (of C).
    pub fn n(&self) -> usize {
        self.n
    }

    fn panels(n: usize) -> usize {
        n.div_ceil(NR)
    }

    /// From a matrix stored as n rows of k (a PyTorch `Linear` weight: out × in): B = Wᵀ.
    pub fn from_nk(w: &[f32], n: usize, k: usize, ld: usize) -> Self {
        let mut p = PackedB::default();
        p.repack_nk(w, n, k, ld);
        p
    }

    /// Refill from n rows of k (reusing the allocation).
    pub fn repack_nk(&mut self, w: &[f32], n: usize, k: usize, ld: usize) {
        let np = Self::panels(n);
        self.k = k;
        self.n = n;
        self.resize_zeroing_padding(np, k);
        for j in 0..n {
            let (p, jj) = (j / NR, j % NR);
            let row = &w[j * ld..j * ld + k];
            let base = p * k * NR + jj;
            for (kk, &x) in row.iter().enumerate() {
                self.data[base + kk * NR] = x;
            }
        }
    }

    /// Refill from a row-major k×n matrix with row stride `ld`.
    pub fn repack_kn(&mut self, b: &[f32], k: usize, n: usize, ld: usize) {
        let np = Self::panels(n);
        self.k = k;
        self.n = n;
        self.resize_zeroing_padding(np, k);
        for kk in 0..k {
            let row = &b[kk * ld..kk * ld + n];
            for p in 0..np {
                let w = NR.min(n - p * NR);
                let dst = p * k * NR + kk * NR;
                if w == NR {
                    // A constant length: copied inline, not by a call to memmove.
                    self.data[dst..dst + NR].copy_from_slice(&row[p * NR..p * NR + NR]);
                } else {
                    self.data[dst..dst + w].copy_from_slice(&row[p * NR..p * NR + w]);
                }
            }
        }
    }

    /// The packed values, panel after panel (padding columns zero).
    pub(crate) fn data(&self) -> &[f32] {
        &self.data
    }

    /// Refill with `n` columns of depth `k` whose packed values `fill` writes (every value of
    /// the `n.div_ceil(NR) · k · NR`, padding zero): for copies of other packings.
    pub(crate) fn refill(&mut self, k: usize, n: usize, fill: impl FnOnce(&mut [f32])) {
        self.k = k;
        self.n = n;
        self.data.resize(Self::panels(n) * k * NR, 0.0);
        fill(&mut self.data);
    }

    /// Size `data` for `np` panels of depth `k` without clearing it (every value of a whole
    /// column is written by the caller), zeroing only the last panel's columns beyond n.
    fn resize_zeroing_padding(&mut self, np: usize, k: usize) {
        self.data.resize(np * k * NR, 0.0);
        let w = self.n - (np.max(1) - 1) * NR;
        if np > 0 && w < NR {
            let last = &mut self.data[(np - 1) * k * NR..];
            for row in last.chunks_mut(NR) {
                row[w..].fill(0.0);
            }
        }
    }
}

/// What happens to C after the product.
#[derive(Debug, Clone, Copy, Default)]
pub struct Epilogue<'a> {
    /// Added to every row (length n).
    pub bias: Option<&'a [f32]>,
    /// C += A·B instead of C = A·B (a residual already in C).
    pub accumulate: bool,
    /// Apply the exact (erf) GELU at the end.
    pub gelu: bool,
}

/// A raw pointer that may cross threads: every task writes a disjoint set of rows.
#[derive(Clone, Copy)]
pub(crate) struct SendPtr<T>(pub(crate) *mut T);
// SAFETY: a SendPtr is only an address; moving or sharing it between threads accesses nothing.
// Every dereference is in an `unsafe` block whose SAFETY comment shows that concurrent tasks
// touch disjoint elements (rows of C in the products, (row, head) slices of the attention
// context).
unsafe impl<T> Send for SendPtr<T> {}
// SAFETY: as for Send: `&SendPtr` only gives out the address.
unsafe impl<T> Sync for SendPtr<T> {}

impl<T> SendPtr<T> {
    /// The pointer (a method, so closures capture the whole `Send` wrapper).
    pub(crate) fn get(self) -> *mut T {
        self.0
    }
}

thread_local! {
    static APACK: std::cell::RefCell<Vec<f32>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// How A is stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ALayout {
    /// Row-major: A[i][kk] at `a[i * lda + kk]`.
    Rows,
    /// Transposed (Aᵀ row-major): A[i][kk] at `a[kk * lda + i]`.
    Cols,
}

/// Pack rows [i0, i0+rows) × cols [p0, p0+kc) of A into MR-row panels, zero-padding the last.
#[inline]
#[allow(clippy::too_many_arguments)]
fn pack_a(
    a: &[f32],
    lda: usize,
    layout: ALayout,
    i0: usize,
    rows: usize,
    p0: usize,
    kc: usize,
    out: &mut Vec<f32>,
) {
    let panels = rows.div_ceil(MR);
    // Not cleared: every value is written below (the padding rows of a short last panel
    // explicitly), so the buffer needs no zero fill first.
    out.resize(panels * MR * kc, 0.0);
    for pi in 0..panels {
        let base = pi * MR * kc;
        let r = MR.min(rows - pi * MR);
        let panel = &mut out[base..base + MR * kc];
        match layout {
            ALayout::Rows => {
                for i in 0..r {
                    let src = &a[(i0 + pi * MR + i) * lda + p0..][..kc];
                    for (kk, &x) in src.iter().enumerate() {
                        panel[kk * MR + i] = x;
                    }
                }
                if r < MR {
                    for step in panel.chunks_mut(MR) {
                        step[r..].fill(0.0);
                    }
                }
            }
            ALayout::Cols => {
                // The MR values of one depth step are contiguous in Aᵀ.
                for (kk, step) in panel.chunks_mut(MR).enumerate() {
                    let src = &a[(p0 + kk) * lda + i0 + pi * MR..];
                    if r == MR {
                        step.copy_from_slice(&src[..MR]);
                    } else {
                        step[..r].copy_from_slice(&src[..r]);
                        step[r..].fill(0.0);
                    }
                }
            }
        }
    }
}

/// Lane masks for the first `nr` of 32 columns (two zmm).
#[inline(always)]
pub(crate) fn mask(nr: usize) -> (__mmask16, __mmask16) {
    let m0 = if nr >= 16 {
        0xffff
    } else {
        (1u32 << nr) as u16 - 1
    };
    let m1 = if nr >= 32 {
        0xffff
    } else if nr > 16 {
        (1u32 << (nr - 16)) as u16 - 1
    } else {
        0
    };
    (m0, m1)
}

/// The 12×32 register tile over `kc` steps, then the epilogue on the valid mr×nr part.
///
/// # Safety
/// The CPU must support AVX-512F, and (nothing here is bounds-checked):
/// - `a` is valid for reads of `kc * MR` f32 (a packed A panel: all MR rows are read, also
///   when `mr < MR`; `pack_a` zero-pads them);
/// - `b` is valid for reads of `kc * NR` f32 (`kc` rows of one packed B panel);
/// - `bias` is null or valid for reads of `nr.min(NR)` f32;
/// - for each row `i < mr.min(MR)`, the `nr.min(NR)` f32 at `c.add(i * ldc)` are valid for
///   writes, and for reads when `load_c`, and no other thread accesses them during the call.
#[target_feature(enable = "avx512f")]
#[allow(clippy::too_many_arguments)]
unsafe fn kernel(
    kc: usize,
    a: *const f32,
    b: *const f32,
    c: *mut f32,
    ldc: usize,
    mr: usize,
    nr: usize,
    load_c: bool,
    bias: *const f32,
    gelu: bool,
) {
    let mut acc = [[_mm512_setzero_ps(); 2]; MR];
    let mut ap = a;
    let mut bp = b;
    for _ in 0..kc {
        let b0 = _mm512_loadu_ps(bp);
        let b1 = _mm512_loadu_ps(bp.add(16));
        for (i, row) in acc.iter_mut().enumerate() {
            let x = _mm512_set1_ps(*ap.add(i));
            row[0] = _mm512_fmadd_ps(x, b0, row[0]);
            row[1] = _mm512_fmadd_ps(x, b1, row[1]);
        }
        ap = ap.add(MR);
        bp = bp.add(NR);
    }
    let cols = Columns::new(nr, bias);
    for (i, row) in acc.iter().enumerate().take(mr) {
        finish_row(c.add(i * ldc), row[0], row[1], &cols, load_c, gelu);
    }
}

/// The valid lanes of a 32-column slice of C and the bias there (zeros without one).
pub(crate) struct Columns {
    m0: __mmask16,
    m1: __mmask16,
    bias0: __m512,
    bias1: __m512,
    /// Round each result (after the bias, before C is added) to bf16: bf16-mixed training's
    /// products return bf16, and rounding here saves a pass over the output.
    round: bool,
}

impl Columns {
    /// For the first `nr` of 32 columns; `bias` null or pointing at those columns.
    ///
    /// # Safety
    /// The CPU must support AVX-512F, and `bias` must be null or valid for reads of
    /// `nr.min(32)` f32 (the lanes `mask(nr)` selects; the others are not read).
    #[inline]
    #[target_feature(enable = "avx512f")]
    pub(crate) unsafe fn new(nr: usize, bias: *const f32) -> Self {
        let (m0, m1) = mask(nr);
        let (bias0, bias1) = if bias.is_null() {
            (_mm512_setzero_ps(), _mm512_setzero_ps())
        } else {
            (
                _mm512_maskz_loadu_ps(m0, bias),
                // Past the end for nr ≤ 16 (no lane loaded then): no `add` promise.
                _mm512_maskz_loadu_ps(m1, bias.wrapping_add(16)),
            )
        };
        Columns {
            m0,
            m1,
            bias0,
            bias1,
            round: false,
        }
    }

    /// These columns, their results rounded to bf16 when `round` (see the field).
    pub(crate) fn rounding(self, round: bool) -> Self {
        Columns { round, ..self }
    }
}

/// The epilogue for one row of a 32-column slice: + bias, rounding to bf16 (`cols.round`), + C
/// (`load_c`), GELU, masked store.
///
/// # Safety
/// The CPU must support AVX-512F, and the f32 at `p` in the lanes of `cols`' masks (the first
/// `nr.min(32)` for `Columns::new(nr, _)`) must be valid for writes, and for reads when
/// `load_c`, with no other thread accessing them during the call.
#[inline]
#[target_feature(enable = "avx512f")]
pub(crate) unsafe fn finish_row(
    p: *mut f32,
    v0: __m512,
    v1: __m512,
    cols: &Columns,
    load_c: bool,
    gelu: bool,
) {
    let mut v0 = _mm512_add_ps(v0, cols.bias0);
    let mut v1 = _mm512_add_ps(v1, cols.bias1);
    if cols.round {
        v0 = act::round_bf16_ps(v0);
        v1 = act::round_bf16_ps(v1);
    }
    if load_c {
        v0 = _mm512_add_ps(v0, _mm512_maskz_loadu_ps(cols.m0, p));
        v1 = _mm512_add_ps(v1, _mm512_maskz_loadu_ps(cols.m1, p.wrapping_add(16)));
    }
    if gelu {
        v0 = act::gelu_erf_avx512(v0);
        v1 = act::gelu_erf_avx512(v1);
    }
    _mm512_mask_storeu_ps(p, cols.m0, v0);
    // Past the row's end for 16 columns or fewer (no lane stored then): no `add` promise.
    _mm512_mask_storeu_ps(p.wrapping_add(16), cols.m1, v1);
}

/// C rows [i0, i0+rows) for all n columns, all k.
///
/// # Safety
/// - The CPU must support AVX-512F.
/// - Rows [i0, i0 + rows) × columns [0, b.n) of C, element (i, j) at `c.add(i * ldc + j)`,
///   must be valid for reads and writes and not accessed by another thread during the call.
/// - `ep.bias`, when given, must hold at least `b.n` values (read through a raw pointer).
///
/// A needs nothing: `pack_a` reads it as a slice, bounds-checked. B's panels are read
/// unchecked but are whole by construction (`PackedB`'s fields are private).
#[allow(clippy::too_many_arguments)]
unsafe fn block(
    a: &[f32],
    lda: usize,
    layout: ALayout,
    b: &PackedB,
    c: *mut f32,
    ldc: usize,
    i0: usize,
    rows: usize,
    ep: &Epilogue,
    apack: &mut Vec<f32>,
) {
    let (k, n) = (b.k, b.n);
    let np = n.div_ceil(NR);
    let mut p0 = 0;
    while p0 < k {
        let kc = KC.min(k - p0);
        pack_a(a, lda, layout, i0, rows, p0, kc, apack);
        let first = p0 == 0;
        let last = p0 + kc >= k;
        for jp in 0..np {
            let nr = NR.min(n - jp * NR);
            let bpan = b.data.as_ptr().add(jp * k * NR + p0 * NR);
            let bias = match (first, ep.bias) {
                (true, Some(bs)) => bs.as_ptr().add(jp * NR),
                _ => std::ptr::null(),
            };
            for ip in 0..rows.div_ceil(MR) {
                let mr = MR.min(rows - ip * MR);
                kernel(
                    kc,
                    apack.as_ptr().add(ip * MR * kc),
                    bpan,
                    c.add((i0 + ip * MR) * ldc + jp * NR),
                    ldc,
                    mr,
                    nr,
                    !first || ep.accumulate,
                    bias,
                    last && ep.gelu,
                );
            }
        }
        p0 += kc;
    }
}

/// C = A·B (+ epilogue), A m×k with row stride `lda`, C m×n with row stride `ldc`. Rows are
/// split over rayon's threads when `parallel`.
#[allow(clippy::too_many_arguments)]
pub fn gemm(
    m: usize,
    a: &[f32],
    lda: usize,
    b: &PackedB,
    c: &mut [f32],
    ldc: usize,
    ep: Epilogue,
    parallel: bool,
) {
    gemm_into(m, a, lda, ALayout::Rows, b, c, ldc, ep, parallel)
}

/// [`gemm_impl`] into a C borrowed as a slice, checked to hold the product.
#[allow(clippy::too_many_arguments)]
fn gemm_into(
    m: usize,
    a: &[f32],
    lda: usize,
    layout: ALayout,
    b: &PackedB,
    c: &mut [f32],
    ldc: usize,
    ep: Epilogue,
    parallel: bool,
) {
    if m > 0 && b.n > 0 {
        assert!(c.len() >= (m - 1) * ldc + b.n, "C too small");
    }
    // SAFETY: `c` is an exclusive borrow, checked just above to hold the m×n matrix at row
    // stride `ldc` (nothing is accessed when m or n is 0): gemm_impl's contract.
    unsafe { gemm_impl(m, a, lda, layout, b, c.as_mut_ptr(), ldc, ep, parallel) }
}

/// [`gemm`] into C given as a block of a larger matrix ([`BlockMut`]), for jobs that each write
/// their own columns of one matrix (attention heads), where no `&mut` slice could cover one job's
/// part without overlapping another's.
///
/// # Panics
/// If C has fewer than m rows or b.n() columns; as [`gemm`] otherwise.
#[allow(clippy::too_many_arguments)]
pub fn gemm_block(
    m: usize,
    a: &[f32],
    lda: usize,
    b: &PackedB,
    c: &mut BlockMut,
    ep: Epilogue,
    parallel: bool,
) {
    gemm_to_block(m, a, lda, ALayout::Rows, b, c, ep, parallel)
}

/// [`gemm_impl`] into a block, checked to hold the product.
#[allow(clippy::too_many_arguments)]
fn gemm_to_block(
    m: usize,
    a: &[f32],
    lda: usize,
    layout: ALayout,
    b: &PackedB,
    c: &mut BlockMut,
    ep: Epilogue,
    parallel: bool,
) {
    assert!(
        m <= c.rows() && b.n <= c.cols(),
        "C block of {}x{} too small for {m}x{}",
        c.rows(),
        c.cols(),
        b.n
    );
    let ldc = c.ld();
    // SAFETY: the m×n elements written lie in the block (asserted just above), which only `c`
    // reaches while it is borrowed: gemm_impl's contract.
    unsafe { gemm_impl(m, a, lda, layout, b, c.as_mut_ptr(), ldc, ep, parallel) }
}

/// C = A·B (+ epilogue) with A given transposed: `at` holds Aᵀ (k×m, row stride `lda`), so
/// that products such as the weight gradient gᵀ·x need no transposed copy of g.
#[allow(clippy::too_many_arguments)]
pub fn gemm_at(
    m: usize,
    at: &[f32],
    lda: usize,
    b: &PackedB,
    c: &mut [f32],
    ldc: usize,
    ep: Epilogue,
    parallel: bool,
) {
    gemm_into(m, at, lda, ALayout::Cols, b, c, ldc, ep, parallel)
}

/// [`gemm_at`] (no epilogue, one thread) into C given as a block, as [`gemm_block`].
///
/// # Panics
/// As [`gemm_block`].
pub fn gemm_at_block(m: usize, at: &[f32], lda: usize, b: &PackedB, c: &mut BlockMut) {
    gemm_to_block(m, at, lda, ALayout::Cols, b, c, Epilogue::default(), false)
}

/// C = A·B (+ epilogue), A stored as `layout` says, C given as a raw pointer.
///
/// # Safety
/// Element (i, j) of C, at `c.add(i * ldc + j)` for i < m and j < b.n(), must be valid for
/// reads and writes, and no other thread may access these elements during the call (others
/// between them, such as other columns of the same rows, may be in use elsewhere). When m or
/// b.n() is 0 nothing is accessed. The CPU, A and the bias are checked here (panics).
#[allow(clippy::too_many_arguments)]
unsafe fn gemm_impl(
    m: usize,
    a: &[f32],
    lda: usize,
    layout: ALayout,
    b: &PackedB,
    c: *mut f32,
    ldc: usize,
    ep: Epilogue,
    parallel: bool,
) {
    assert!(available(), "gemm needs AVX-512F");
    if m == 0 || b.n == 0 {
        return;
    }
    match layout {
        ALayout::Rows => assert!(a.len() >= (m - 1) * lda + b.k, "A too small"),
        ALayout::Cols => assert!(b.k == 0 || a.len() >= (b.k - 1) * lda + m, "A too small"),
    }
    if let Some(bias) = ep.bias {
        assert!(bias.len() >= b.n, "bias shorter than n");
    }
    let cp = SendPtr(c);
    let threads = rayon::current_num_threads();
    if !parallel || threads == 1 || m <= MR {
        // Blocks of MC rows, so that the packed A block stays in L2.
        for i0 in (0..m).step_by(MC) {
            // SAFETY: AVX-512F and the bias length are asserted above; rows [0, m) of C are
            // valid and ours alone by this function's contract, [i0, i0 + rows) among them.
            APACK.with(|buf| unsafe {
                block(
                    a,
                    lda,
                    layout,
                    b,
                    cp.0,
                    ldc,
                    i0,
                    MC.min(m - i0),
                    &ep,
                    &mut buf.borrow_mut(),
                )
            });
        }
        return;
    }
    // Blocks of rows as tasks (a few per thread, so a busy core does not hold everyone up).
    let target = m.div_ceil(threads * 4).max(MC / 4);
    let chunk = target.div_ceil(MR) * MR;
    let chunk = chunk.min(MC);
    let nblocks = m.div_ceil(chunk);
    (0..nblocks).into_par_iter().for_each(|bi| {
        let i0 = bi * chunk;
        let rows = chunk.min(m - i0);
        // SAFETY: as in the serial case, for rows [i0, i0 + rows) ⊂ [0, m); the tasks' row
        // ranges are disjoint, so no element of C is touched by two threads; A, B and the bias
        // are only read.
        APACK.with(|buf| unsafe {
            block(
                a,
                lda,
                layout,
                b,
                cp.get(),
                ldc,
                i0,
                rows,
                &ep,
                &mut buf.borrow_mut(),
            )
        });
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    fn naive(m: usize, n: usize, k: usize, a: &[f32], w: &[f32]) -> Vec<f32> {
        let mut c = vec![0f32; m * n];
        for i in 0..m {
            for j in 0..n {
                let mut s = 0f64;
                for kk in 0..k {
                    s += a[i * k + kk] as f64 * w[j * k + kk] as f64;
                }
                c[i * n + j] = s as f32;
            }
        }
        c
    }

    #[test]
    fn matches_naive_on_ragged_shapes() {
        if !available() {
            return;
        }
        for &(m, n, k) in &[
            (1, 1, 1),
            (13, 33, 7),
            (30, 64, 300),
            (100, 96, 513),
            (7, 40, 256),
        ] {
            let a: Vec<f32> = (0..m * k)
                .map(|i| ((i * 7 % 13) as f32 - 6.0) / 7.0)
                .collect();
            let w: Vec<f32> = (0..n * k)
                .map(|i| ((i * 5 % 11) as f32 - 5.0) / 5.0)
                .collect();
            let bias: Vec<f32> = (0..n).map(|j| j as f32 * 0.01).collect();
            let b = PackedB::from_nk(&w, n, k, k);
            let mut c = vec![1f32; m * n];
            let ep = Epilogue {
                bias: Some(&bias),
                accumulate: true,
                gelu: false,
            };
            gemm(m, &a, k, &b, &mut c, n, ep, true);
            let r = naive(m, n, k, &a, &w);
            for i in 0..m * n {
                let want = r[i] + 1.0 + bias[i % n];
                assert!(
                    (c[i] - want).abs() < 1e-3,
                    "{m}x{n}x{k} at {i}: {} vs {want}",
                    c[i]
                );
            }
        }
    }

    #[test]
    fn reused_buffers_leave_no_stale_values_in_the_padding() {
        if !available() {
            return;
        }
        // A large product first fills the packing buffers (this thread's A buffer, the
        // PackedB) with non-zero values; smaller ragged shapes then reuse them.
        let mut p = PackedB::default();
        let big: Vec<f32> = (0..200 * 300).map(|i| 1.0 + (i % 7) as f32).collect();
        p.repack_nk(&big, 200, 300, 300);
        let mut c = vec![0f32; 50 * 200];
        gemm(
            50,
            &big[..50 * 300],
            300,
            &p,
            &mut c,
            200,
            Epilogue::default(),
            false,
        );
        for (m, k, n) in [(13, 29, 45), (5, 300, 33), (1, 7, 1)] {
            let a: Vec<f32> = (0..m * k).map(|i| ((i * 31) % 17) as f32 - 8.0).collect();
            let w: Vec<f32> = (0..n * k).map(|i| ((i * 13) % 11) as f32 - 5.0).collect();
            let want = naive(m, n, k, &a, &w);
            p.repack_nk(&w, n, k, k);
            let mut c = vec![0f32; m * n];
            gemm(m, &a, k, &p, &mut c, n, Epilogue::default(), false);
            assert_eq!(c, want, "nk {m}x{k}x{n}");
            // The same B given k×n.
            let mut wt = vec![0f32; k * n];
            for j in 0..n {
                for kk in 0..k {
                    wt[kk * n + j] = w[j * k + kk];
                }
            }
            p.repack_nk(&big, 200, 300, 300);
            p.repack_kn(&wt, k, n, n);
            let mut c = vec![0f32; m * n];
            gemm(m, &a, k, &p, &mut c, n, Epilogue::default(), false);
            assert_eq!(c, want, "kn {m}x{k}x{n}");
        }
    }

    #[test]
    fn a_given_transposed_gives_the_same_bits() {
        if !available() {
            return;
        }
        // Ragged panels (m not a multiple of MR), depth over KC, row blocks over MC.
        for (m, k, n, par) in [
            (1, 1, 1, false),
            (13, 300, 45, true),
            (50, 257, 33, false),
            (400, 70, 64, true),
        ] {
            let a: Vec<f32> = (0..m * k)
                .map(|i| ((i * 7919) % 997) as f32 / 500.0 - 1.0)
                .collect();
            let w: Vec<f32> = (0..n * k)
                .map(|i| ((i * 104_729) % 991) as f32 / 500.0 - 1.0)
                .collect();
            let mut at = vec![0f32; m * k];
            for i in 0..m {
                for kk in 0..k {
                    at[kk * m + i] = a[i * k + kk];
                }
            }
            let p = PackedB::from_nk(&w, n, k, k);
            let (mut c1, mut c2) = (vec![0f32; m * n], vec![0f32; m * n]);
            gemm(m, &a, k, &p, &mut c1, n, Epilogue::default(), par);
            gemm_at(m, &at, m, &p, &mut c2, n, Epilogue::default(), par);
            assert_eq!(c1, c2, "{m}x{k}x{n}");
            assert!(c1.iter().any(|&v| v != 0.0));
        }
    }
}

#[cfg(test)]
mod speed {
    use super::*;

    /// `cargo test --release --lib gemm_speed -- --ignored --nocapture`
    #[test]
    #[ignore = "timing probe, run by hand: GEMM_SHAPE=MxNxK cargo test --release --lib gemm_speed -- --ignored --nocapture (BENCHMARKS.md)"]
    fn gemm_speed() {
        if !available() {
            return;
        }
        // GEMM_SHAPE=MxNxK (default LaBSE's feed-forward at 1024 tokens).
        let shape: Vec<usize> = std::env::var("GEMM_SHAPE")
            .unwrap_or_else(|_| "1024x3072x768".into())
            .split('x')
            .map(|v| v.parse().expect("GEMM_SHAPE=MxNxK"))
            .collect();
        let (m, n, k) = (shape[0], shape[1], shape[2]);
        let a: Vec<f32> = (0..m * k).map(|i| (i % 17) as f32 * 0.01).collect();
        let w: Vec<f32> = (0..n * k).map(|i| (i % 13) as f32 * 0.01).collect();
        let b = PackedB::from_nk(&w, n, k, k);
        let q = crate::int8::PackedI8::from_nk(&w, n, k);
        let bias = vec![0f32; n];
        let mut c = vec![0f32; m * n];
        let best = |f: &mut dyn FnMut()| {
            let mut b = f64::MAX;
            for _ in 0..10 {
                let t = std::time::Instant::now();
                f();
                b = b.min(t.elapsed().as_secs_f64());
            }
            b
        };
        let fl = 2.0 * (m * n * k) as f64 / 1e9;
        for round in 0..2 {
            let st = best(&mut || gemm(m, &a, k, &b, &mut c, n, Epilogue::default(), false));
            let mt = best(&mut || gemm(m, &a, k, &b, &mut c, n, Epilogue::default(), true));
            let ge = best(&mut || {
                let ep = Epilogue {
                    gelu: true,
                    ..Default::default()
                };
                gemm(m, &a, k, &b, &mut c, n, ep, true)
            });
            let i8s = best(&mut || q.gemm(m, &a, &mut c, &bias, false, false));
            let (amx, bf16) = if crate::amx::available() {
                use crate::amx::{PackedProduct, PackedSplit, TileTerms};
                let s = PackedSplit::from_nk(&w, n, k);
                let h = PackedSplit::from_nk_as(&w, n, k, TileTerms::Bf16);
                (
                    fl / best(&mut || s.gemm(m, &a, &mut c, &bias, false, false)),
                    // bf16-mixed training's product: bf16 tiles, the result rounded.
                    fl / best(&mut || h.gemm_round_bf16(m, &a, k, &mut c, &bias, false)),
                )
            } else {
                (f64::NAN, f64::NAN)
            };
            let (dot, dot_peak) = if crate::bf16dot::available() {
                use crate::amx::PackedProduct;
                let d = crate::bf16dot::PackedBf16Dot::from_nk(&w, n, k);
                let peak = crate::bf16dot::peak(2, 0.3).map_or(f64::NAN, |p| p.gflops);
                (
                    fl / best(&mut || d.gemm_round_bf16(m, &a, k, &mut c, &bias, false)),
                    peak,
                )
            } else {
                (f64::NAN, f64::NAN)
            };
            // bf16 weights widened to f32 products (the inference path where AVX512-BF16 is
            // slower than f32 FMA), and AVX512-BF16's inference product (f32 out), side by side.
            let wide = crate::widened::PackedBf16Weights::from_nk(&w, n, k);
            let widened = fl / best(&mut || wide.gemm(m, &a, &mut c, &bias, false, false));
            let dot_f32 = if crate::bf16dot::available() {
                use crate::amx::PackedProduct;
                let d = crate::bf16dot::PackedBf16Dot::from_nk(&w, n, k);
                fl / best(&mut || d.gemm(m, &a, &mut c, &bias, false, false))
            } else {
                f64::NAN
            };
            let p1 = crate::peak::measure(1, 0.3);
            let p2 = crate::peak::measure(2, 0.3);
            println!(
                "round {round}: f32 1 thread {:.1} GFLOP/s (peak {:.1}), 2 threads {:.1}, +gelu {:.1}, int8 {:.1} GOP/s, AMX split-bf16 {:.1}, AMX bf16 rounded {:.1}, AVX512-BF16 rounded {:.1} (peak {:.1}), AVX512-BF16 {:.1}, bf16 widened to f32 {:.1}; peak {:.1} ({})",
                fl / st, p1.gflops, fl / mt, fl / ge, fl / i8s, amx, bf16, dot, dot_peak, dot_f32, widened, p2.gflops, p2.isa
            );
        }
    }
}
