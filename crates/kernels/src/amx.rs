//! f32 matrix products on AMX tiles, to near-f32 accuracy: every f32 value x is split into two
//! bf16 values, hi = bf16(x) and lo = bf16(x − hi), so hi + lo keeps about 17 significant bits
//! of x's 24, and A·B is computed as the four bf16 tile products Ahi·Bhi + Ahi·Blo + Alo·Bhi +
//! Alo·Blo with f32 accumulation ("split bf16"). The error per term is ~2⁻¹⁷ relative, against
//! 2⁻²⁴ for f32 and 2⁻⁹ for plain bf16 (measured: `cargo test --lib amx -- --nocapture`).
//!
//! Why four products and not three (dropping Alo·Blo, "bf16x3"): measured on a 1024×4096×1024
//! product, three are 5–10 % faster (890–910 against 810–880 GFLOP/s on 2 threads) and their
//! error 25 % larger (worst 6.1e-6 against 4.8e-6 of Σ|a·w|); accuracy wins. A step issues ten
//! tile loads (2.5 ns each when 64-byte aligned) and sixteen products (5.2 ns each):
//! `cargo test --release --lib amx_tile_costs -- --ignored --nocapture`.
//! One tile product (`tdpbf16ps`, 16×16×32 multiply-adds) is the work of 512 AVX-512 FMAs.
//!
//! Used for the encoder's weight products when the CPU has AMX-BF16 and Linux grants the tile
//! state (`arch_prctl(ARCH_REQ_XCOMP_PERM)`); `--amx off` (or `SCOREKIT_AMX=off`) keeps the AVX-512 f32 kernel.
//!
//! Layouts. B (k×n, the weights) is packed once in panels of 16 columns; inside a panel, row r
//! holds k-pair r: 16 × (B[2r][j], B[2r+1][j]) (the pairing `tdpbf16ps` reads). A (the
//! activations) is packed per call in tiles of 16 rows × 32 k, each tile 1 KiB contiguous.
//! k is padded to a multiple of 32 with zeros, rows and columns to multiples of 32.
//!
//! Unsafe code. The tile instructions are written with `asm!`. They need AMX on the CPU and the
//! tile state granted to the process ([`available`] checks and requests both), and a tile
//! configuration loaded on the calling thread ([`configure_tiles`]; tile state is per thread,
//! saved and restored by the kernel). The compiler never allocates tile registers, so the asm
//! blocks use tmm0..7 without declaring them clobbered. Memory is reached only through raw
//! pointers into buffers whose sizes the packing fixes; each function states what it needs.

use super::act::{mask_for, round_bits16};
use super::gemm::{finish_row, Columns, SendPtr};
use rayon::prelude::*;
use std::arch::asm;
use std::arch::x86_64::*;
use std::sync::OnceLock;

/// k values per tile row.
const KT: usize = 32;
/// Rows (A) or columns (B) per tile.
const T: usize = 16;
/// k tiles per depth chunk (1024 values): a deeper product runs chunk by chunk, so the rows of
/// A and the weight panels of one chunk stay in L2 (see `PackedSplit::block`).
const KC_TILES: usize = 32;

/// Whether AMX products can run here: AMX-TILE and AMX-BF16 in CPUID, AVX-512F/BW for the
/// packing, and the kernel granted this process the tile state. Whether to use them is the
/// caller's choice (`EngineOptions::amx`); this only says whether the hardware can.
pub fn available() -> bool {
    amx_edx().is_some_and(|edx| edx & (1 << 22) != 0)
}

/// Whether int8 tile products (AMX-INT8) can run here, on the same conditions.
pub fn int8_available() -> bool {
    amx_edx().is_some_and(|edx| edx & (1 << 25) != 0)
}

/// CPUID.(EAX=7,ECX=0):EDX (bit 22 AMX-BF16, 24 AMX-TILE, 25 AMX-INT8) where AMX-TILE is there,
/// AVX-512F/BW are there and Linux granted the tile state. Cached: CPUID and the grant do not
/// change while the process runs.
fn amx_edx() -> Option<u32> {
    static EDX: OnceLock<Option<u32>> = OnceLock::new();
    *EDX.get_or_init(|| {
        if !std::arch::is_x86_feature_detected!("avx512f")
            || !std::arch::is_x86_feature_detected!("avx512bw")
        {
            return None;
        }
        // `unsafe` until Rust 1.94 made it safe; the crate builds from 1.89.
        // SAFETY: CPUID exists on every x86-64 CPU, and leaf 7 exists here: the AVX-512F bit
        // detected above is in it. The instruction reads and writes registers only.
        #[allow(unused_unsafe)]
        let edx = unsafe { __cpuid_count(7, 0) }.edx;
        (edx & (1 << 24) != 0 && request_tile_state()).then_some(edx)
    })
}

/// Ask Linux for the AMX tile data state (XFEATURE 18) for this process; false where the
/// kernel refuses (too old, or AMX turned off).
fn request_tile_state() -> bool {
    const ARCH_REQ_XCOMP_PERM: libc::c_long = 0x1023;
    const XFEATURE_XTILEDATA: libc::c_long = 18;
    // SAFETY: arch_prctl(ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA) takes two integers and reads
    // or writes none of this process's memory; it only asks Linux to allow the AMX tile state
    // (an error code, not a fault, where the kernel or CPU lacks it).
    unsafe {
        libc::syscall(
            libc::SYS_arch_prctl,
            ARCH_REQ_XCOMP_PERM,
            XFEATURE_XTILEDATA,
        ) == 0
    }
}

pub(crate) use crate::train::bf16_bits;

/// (hi, lo) with hi + lo = x to within 2⁻¹⁷ relative.
#[inline]
fn split(x: f32) -> (u16, u16) {
    let hi = bf16_bits(x);
    let lo = bf16_bits(x - f32::from_bits((hi as u32) << 16));
    (hi, lo)
}

/// The same split on 16 lanes: (hi, lo) as 16 bf16 each.
///
/// # Safety
/// The CPU must support AVX-512F. Nothing else: it computes on registers only.
#[inline]
#[target_feature(enable = "avx512f")]
unsafe fn split16(x: __m512) -> (__m256i, __m256i) {
    let hi = round_bits16(_mm512_castps_si512(x));
    let hi_f = _mm512_castsi512_ps(_mm512_slli_epi32(hi, 16));
    let lo = round_bits16(_mm512_castps_si512(_mm512_sub_ps(x, hi_f)));
    (_mm512_cvtepi32_epi16(hi), _mm512_cvtepi32_epi16(lo))
}

/// One 64-byte line: a tile row, aligned to a cache line.
#[derive(Clone, Copy)]
#[repr(C, align(64))]
struct Line([u8; 64]);

/// Plain numbers: any bytes, zeros included, are a valid value, and 64-byte alignment
/// satisfies theirs.
///
/// # Safety
/// Implement only for types for which every bit pattern of their size is a valid value and
/// whose alignment divides 64: [`AlignedBuf::as_mut_slice`] hands out its zeroed or
/// previously written bytes as such values.
pub(crate) unsafe trait Plain: Copy {}
// SAFETY: every bit pattern is a valid u8, i8, u16 and f32 (NaNs included); their alignments
// (1, 1, 2, 4) divide 64.
unsafe impl Plain for u8 {}
// SAFETY: as above.
unsafe impl Plain for i8 {}
// SAFETY: as above.
unsafe impl Plain for u16 {}
// SAFETY: as above.
unsafe impl Plain for f32 {}

/// Values in cache-line-aligned storage. Tile loads need it: a tile row that straddles two
/// cache lines makes `tileloadd` about six times slower (2.6 against 16.9 ns per 1 KiB tile,
/// `amx_tile_costs`).
#[derive(Clone)]
pub(crate) struct AlignedBuf<T> {
    lines: Vec<Line>,
    len: usize,
    _values: std::marker::PhantomData<T>,
}

impl<T> Default for AlignedBuf<T> {
    fn default() -> Self {
        AlignedBuf {
            lines: Vec::new(),
            len: 0,
            _values: std::marker::PhantomData,
        }
    }
}

impl<T: Plain> AlignedBuf<T> {
    /// `len` zeros, reusing the allocation.
    pub(crate) fn zeroed(&mut self, len: usize) {
        self.lines.clear();
        self.lines
            .resize((len * std::mem::size_of::<T>()).div_ceil(64), Line([0; 64]));
        self.len = len;
    }

    /// `len` values, reusing the allocation without clearing it: for a packing that writes
    /// every value (the old ones, like new zeros, are valid values: `Plain`).
    pub(crate) fn sized(&mut self, len: usize) {
        self.lines
            .resize((len * std::mem::size_of::<T>()).div_ceil(64), Line([0; 64]));
        self.len = len;
    }

    pub(crate) fn as_ptr(&self) -> *const T {
        self.lines.as_ptr() as *const T
    }

    pub(crate) fn as_mut_slice(&mut self) -> &mut [T] {
        // SAFETY: `zeroed` sized `lines` to at least `len * size_of::<T>()` bytes, and the
        // pointer (dangling but 64-aligned and non-null when `lines` is empty and `len` is 0)
        // is 64-byte aligned, which satisfies T's alignment; every byte pattern there is a
        // valid T (`Plain`'s contract); `&mut self` makes the slice the only access.
        unsafe { std::slice::from_raw_parts_mut(self.lines.as_mut_ptr() as *mut T, self.len) }
    }
}

impl<T> std::fmt::Debug for AlignedBuf<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "AlignedBuf({} values)", self.len)
    }
}

/// bf16 values, aligned for tile loads.
type Bf16Buf = AlignedBuf<u16>;

/// What one product of [`PackedSplit`] computes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TileTerms {
    /// f32 to ~2⁻¹⁷ relative: the four products of the bf16 hi and lo parts.
    Split,
    /// bf16 products with f32 accumulation (`torch.autocast`'s bf16 matmul): both operands
    /// rounded to bf16 (8 significant bits), one tile product per step, half the weight bytes.
    Bf16,
}

/// Wᵀ as bf16 tiles packed for the tile products: split into hi and lo ([`TileTerms::Split`])
/// or rounded to bf16 ([`TileTerms::Bf16`], `lo` empty).
#[derive(Debug, Clone)]
pub struct PackedSplit {
    // Private, like every field here: the kernels read `hi` and `lo` as whole panels sized by
    // `n` and `kp` without bounds checks.
    k: usize,
    n: usize,
    /// k rounded up to a multiple of 32.
    kp: usize,
    terms: TileTerms,
    /// Panels of 16 columns (their count even), each kp/2 rows of 16 pairs (B[2r][j], B[2r+1][j]).
    hi: Bf16Buf,
    /// As `hi` for [`TileTerms::Split`]; empty for [`TileTerms::Bf16`].
    lo: Bf16Buf,
}

impl PackedSplit {
    /// From a PyTorch `Linear` weight (n rows of k), for f32 products (split bf16).
    pub fn from_nk(w: &[f32], n: usize, k: usize) -> Self {
        Self::from_nk_as(w, n, k, TileTerms::Split)
    }

    /// From a PyTorch `Linear` weight (n rows of k), for the products `terms` names.
    pub fn from_nk_as(w: &[f32], n: usize, k: usize, terms: TileTerms) -> Self {
        assert!(w.len() >= n * k, "weight holds fewer than n·k values");
        Self::pack(n, k, terms, false, |j, kk| w[j * k + kk])
    }

    /// From B given as k rows of n (the product is x · B), for the products `terms` names: the
    /// packing of [`PackedSplit::from_nk_as`] of Bᵀ, without the transpose. Training multiplies
    /// by weights and activations both ways (dx = g·W, dW = gᵀ·x) and packs them fresh each step.
    pub fn from_kn_as(b: &[f32], k: usize, n: usize, terms: TileTerms) -> Self {
        assert!(b.len() >= k * n, "B holds fewer than k·n values");
        if terms == TileTerms::Bf16 && std::arch::is_x86_feature_detected!("avx512f") {
            return Self::pack_kn_bf16(b, k, n);
        }
        Self::pack(n, k, terms, true, |j, kk| b[kk * n + j])
    }

    /// [`PackedSplit::from_kn_as`] for bf16 terms in vector lanes: a k-pair's 16 columns are
    /// two 16-value runs of B's rows, rounded and interleaved into one 64-byte panel row.
    /// Training packs an activation this way for every weight gradient; the element loop of
    /// [`PackedSplit::pack`] took a third of such a gradient's time (2.3 ns a value).
    fn pack_kn_bf16(b: &[f32], k: usize, n: usize) -> Self {
        let kp = k.div_ceil(KT) * KT;
        let panels = n.div_ceil(2 * T) * 2;
        let mut hi = Bf16Buf::default();
        hi.zeroed(panels * kp * T);
        hi.as_mut_slice()
            .par_chunks_mut((kp * T).max(1))
            .enumerate()
            .for_each(|(p, hp)| {
                let cols = T.min(n.saturating_sub(p * T));
                if cols > 0 {
                    // SAFETY: AVX-512F was detected by the caller; rows kk < k of b hold n
                    // values (b.len() ≥ k·n, asserted by the caller) and columns
                    // [p·16, p·16 + cols) lie below n; hp holds kp·16 values, kp ≥ k.
                    unsafe { pack_kn_panel(b, k, n, p * T, cols, hp) }
                }
            });
        PackedSplit {
            k,
            n,
            kp,
            terms: TileTerms::Bf16,
            hi,
            lo: Bf16Buf::default(),
        }
    }

    /// The packing of an n×k operand whose element (column j, depth kk) is `get(j, kk)`, read
    /// k-row by k-row when `rows_of_k` (B stored k×n), else column by column in runs of 64 k
    /// (stored n×k): either way along the source's rows.
    fn pack<F>(n: usize, k: usize, terms: TileTerms, rows_of_k: bool, get: F) -> Self
    where
        F: Fn(usize, usize) -> f32 + Sync,
    {
        let kp = k.div_ceil(KT) * KT;
        let panels = n.div_ceil(2 * T) * 2;
        let (mut hi, mut lo) = (Bf16Buf::default(), Bf16Buf::default());
        let two_parts = terms == TileTerms::Split;
        hi.zeroed(panels * kp * T);
        if two_parts {
            lo.zeroed(panels * kp * T);
        }
        let pack_panel = |p: usize, hp: &mut [u16], mut lp: Option<&mut [u16]>| {
            let cols = T.min(n.saturating_sub(p * T));
            // Row r of a panel holds k-pair r: 16 × (B[2r][j], B[2r+1][j]).
            let mut put = |jj: usize, kk: usize| {
                let (x, at) = (get(p * T + jj, kk), (kk / 2) * 2 * T + jj * 2 + kk % 2);
                match lp.as_deref_mut() {
                    Some(lp) => (hp[at], lp[at]) = split(x),
                    None => hp[at] = bf16_bits(x),
                }
            };
            if rows_of_k {
                for kk in 0..k {
                    (0..cols).for_each(|jj| put(jj, kk));
                }
            } else {
                // 64 k at a time: writes stay in 4 KiB.
                for k0 in (0..k).step_by(64) {
                    for jj in 0..cols {
                        (k0..(k0 + 64).min(k)).for_each(|kk| put(jj, kk));
                    }
                }
            }
        };
        // Panel by panel in parallel, writing each panel front to back.
        if two_parts {
            hi.as_mut_slice()
                .par_chunks_mut((kp * T).max(1))
                .zip(lo.as_mut_slice().par_chunks_mut((kp * T).max(1)))
                .enumerate()
                .for_each(|(p, (hp, lp))| pack_panel(p, hp, Some(lp)));
        } else {
            hi.as_mut_slice()
                .par_chunks_mut((kp * T).max(1))
                .enumerate()
                .for_each(|(p, hp)| pack_panel(p, hp, None));
        }
        PackedSplit {
            k,
            n,
            kp,
            terms,
            hi,
            lo,
        }
    }

    /// What this packing's products compute.
    pub fn terms(&self) -> TileTerms {
        self.terms
    }

    /// Rows [0, r) of A (`a`) into out (row stride n).
    ///
    /// # Safety
    /// - AMX-TILE, AMX-BF16, AVX-512F and AVX-512BW usable, the tile state granted
    ///   ([`available`]). The call loads its own tile configuration and releases the tiles on
    ///   return, so this thread's earlier tile state is lost.
    /// - `a` holds r rows of A: for `Rows`, `x` at least `(r − 1) * lda + self.k` values; for
    ///   `Columns`, `at` at least `(self.k − 1) * ldat + r` (read through raw pointers by
    ///   `pack_a` and `pack_a_columns`).
    /// - The `r * self.n` f32 at `out` (r rows, stride n) are valid for writes, and for reads
    ///   (initialised) when `accumulate`, and no other thread accesses them during the call.
    /// - `bias.len() >= self.n`.
    ///
    /// The weight panels (`hi`, `lo`) and the scratch buffers are sized here or at packing.
    #[allow(clippy::too_many_arguments)]
    #[target_feature(enable = "avx512f,avx512bw")]
    unsafe fn block(
        &self,
        a: ASource,
        r: usize,
        ahi: &mut Bf16Buf,
        alo: &mut Bf16Buf,
        partial: &mut AlignedBuf<f32>,
        out: *mut f32,
        bias: &[f32],
        accumulate: bool,
        gelu: bool,
        round: bool,
    ) {
        let (k, kp, n) = (self.k, self.kp, self.n);
        let mtiles = r.div_ceil(2 * T) * 2;
        let ktiles = kp / KT;
        let split = self.terms == TileTerms::Split;
        match a {
            ASource::Rows { x, lda } if !split && convert_available() => {
                pack_a_converted(x, lda, k, r, mtiles, ktiles, ahi)
            }
            ASource::Rows { x, lda } => {
                pack_a(x, lda, k, r, mtiles, ktiles, ahi, split.then_some(alo))
            }
            // Only bf16 packings get here (asserted by `gemm_epilogue`).
            ASource::Columns { at, ldat } => pack_a_columns(at, ldat, k, r, mtiles, ktiles, ahi),
        }
        configure_tiles();
        let mut tile_out = [0f32; 2 * T * 2 * T];
        let panels = n.div_ceil(2 * T) * 2;
        let panel = kp * T;
        // Depth chunks; between them the 32×32 sums wait in `partial` (rows × panels·16, f32).
        let chunks = ktiles.div_ceil(KC_TILES);
        let ldp = panels * T;
        if chunks > 1 {
            partial.zeroed(mtiles * T * ldp);
        }
        for c in 0..chunks {
            let (kt0, kt1) = (c * KC_TILES, ((c + 1) * KC_TILES).min(ktiles));
            let last = c + 1 == chunks;
            for pj in (0..panels).step_by(2) {
                let (bh0, bl0) = (
                    self.hi.as_ptr().add(pj * panel),
                    self.lo.as_ptr().wrapping_add(pj * panel),
                );
                let (bh1, bl1) = (bh0.add(panel), bl0.wrapping_add(panel));
                for mi in (0..mtiles).step_by(2) {
                    // `alo`, `bl0` and `bl1` are read only for split products; for bf16 they
                    // are computed with wrapping arithmetic and never dereferenced.
                    let (ah0, al0) = (
                        ahi.as_ptr().add(mi * ktiles * T * KT),
                        alo.as_ptr().wrapping_add(mi * ktiles * T * KT),
                    );
                    let (ah1, al1) = (ah0.add(ktiles * T * KT), al0.wrapping_add(ktiles * T * KT));
                    let sums = partial
                        .as_mut_slice()
                        .as_mut_ptr()
                        .wrapping_add(mi * T * ldp + pj * T);
                    if c == 0 {
                        asm!(
                            "tilezero tmm0",
                            "tilezero tmm1",
                            "tilezero tmm2",
                            "tilezero tmm3"
                        );
                    } else {
                        load_accumulators(sums as *const u8, ldp * 4);
                    }
                    for kt in kt0..kt1 {
                        let a = kt * T * KT;
                        let b = kt * T * KT; // 16 k-pair rows × 32 bf16 per k tile
                        if split {
                            tile_step(
                                ah0.add(a),
                                ah1.add(a),
                                al0.add(a),
                                al1.add(a),
                                bh0.add(b),
                                bh1.add(b),
                                bl0.add(b),
                                bl1.add(b),
                            );
                        } else {
                            tile_step_bf16(ah0.add(a), ah1.add(a), bh0.add(b), bh1.add(b));
                        }
                    }
                    if !last {
                        store_accumulators(sums as *mut u8, ldp * 4);
                        continue;
                    }
                    let t = tile_out.as_mut_ptr();
                    store_accumulators(t as *mut u8, 2 * T * 4);
                    // Panels and tiles past n and r are padding: pj·16 < n and mi·16 < r.
                    let rows_here = (2 * T).min(r - mi * T);
                    let cols = Columns::new((2 * T).min(n - pj * T), bias.as_ptr().add(pj * T))
                        .rounding(round);
                    for i in 0..rows_here {
                        let src = t.add(i * 2 * T);
                        finish_row(
                            out.add((mi * T + i) * n + pj * T),
                            _mm512_loadu_ps(src),
                            _mm512_loadu_ps(src.add(T)),
                            &cols,
                            accumulate,
                            gelu,
                        );
                    }
                }
            }
        }
        asm!("tilerelease");
    }
}

// SAFETY: `gemm_epilogue_raw` writes every value of rows below m and columns below n at the last
// depth chunk (`block`: all row tiles below r, all panel pairs below n, each row's columns below
// n by `Columns`' masks), and reads `out` only when `accumulate` (`finish_row`'s `load_c`).
unsafe impl PackedProduct for PackedSplit {
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
        assert!(available(), "AMX products are not available");
        if m == 0 || self.n == 0 {
            return;
        }
        // A product of depth 0 has no tiles to run (and would divide the block size by 0).
        assert!(self.k > 0, "a product of depth 0");
        a.check(m, self.k);
        assert!(
            matches!(a, ASource::Rows { .. }) || self.terms == TileTerms::Bf16,
            "A read from its transpose is packed for bf16 products only"
        );
        assert!(m.checked_mul(self.n).is_some_and(|need| out_len >= need) && bias.len() >= self.n);
        let cp = SendPtr(out);
        // Row blocks whose packed A (hi + lo, 4 bytes per value) is about 512 KiB, so it stays in
        // L2 while the weights stream past; at least two blocks per thread where m allows.
        let threads = rayon::current_num_threads();
        // Whole tile pairs (32 rows): a block of 170 rows would compute 192.
        let depth = self.kp.min(KC_TILES * KT);
        let by_cache = ((1 << 19) / (depth * 4) / (2 * T) * (2 * T)).clamp(2 * T, 256);
        let by_threads = m.div_ceil(threads * 2).div_ceil(2 * T) * 2 * T;
        let rows = by_cache.min(by_threads).max(2 * T);
        let blocks = m.div_ceil(rows);
        let run = |bi: usize| {
            let i0 = bi * rows;
            let r = rows.min(m - i0);
            APACK.with(|buf| {
                let (ahi, alo, partial) = &mut *buf.borrow_mut();
                // SAFETY: block's contract: AMX (with AVX-512F/BW) is available, asserted at
                // the top; `a.rows_from(i0)` holds rows [i0, i0 + r) of A: for rows, r rows of
                // k values `lda` apart because x.len() ≥ (m − 1)·lda + k (asserted) and
                // i0 + r ≤ m; for columns, k rows of at least r values `ldat` apart because
                // at.len() ≥ (k − 1)·ldat + m (asserted); `cp + i0·n` starts row i0 of `out`, which holds
                // m·n values (asserted), so rows [i0, i0 + r) lie inside it, and the blocks'
                // row ranges are disjoint, so no two threads touch the same element;
                // bias.len() ≥ n (asserted).
                unsafe {
                    self.block(
                        a.rows_from(i0),
                        r,
                        ahi,
                        alo,
                        partial,
                        cp.get().add(i0 * self.n),
                        bias,
                        accumulate,
                        gelu,
                        round,
                    )
                }
            })
        };
        if blocks == 1 {
            run(0);
        } else {
            (0..blocks).into_par_iter().for_each(run);
        }
    }
}

/// A packed W of the AMX and AVX512-BF16 kernels (`PackedSplit`, `bf16dot::PackedBf16Dot`):
/// the products both offer, written once over each kernel's raw product.
///
/// # Safety
/// Implementations' `gemm_epilogue_raw` writes every value of rows below m and columns below
/// [`PackedProduct::columns`] before it returns, and reads `out` only when `accumulate`:
/// [`PackedProduct::gemm_round_bf16_new`] hands out memory it did not fill on that promise.
pub unsafe trait PackedProduct {
    /// Depth of the product (k: W's columns).
    fn depth(&self) -> usize;

    /// Columns of the product (n: W's rows).
    fn columns(&self) -> usize;

    /// out (m×n, `out_len` values at `out`) = A·Wᵀ + bias, each result rounded to bf16 when
    /// `round`, plus out when `accumulate`, then GELU when `gelu`.
    ///
    /// # Safety
    /// The `out_len` values at `out` must be valid for writes, accessed by no one else during
    /// the call, and initialised when `accumulate` (they are read then).
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
    );

    /// [`PackedProduct::gemm_epilogue_raw`] into a slice (checked to hold m×n by the product).
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
        // SAFETY: `out` is a live, initialised slice of out.len() values, borrowed mutably.
        unsafe {
            self.gemm_epilogue_raw(
                m,
                a,
                out.as_mut_ptr(),
                out.len(),
                bias,
                accumulate,
                gelu,
                round,
            )
        }
    }

    /// out (m×n) = x (m×k)·Wᵀ + bias (+ out when `accumulate`), GELU when `gelu`.
    fn gemm(
        &self,
        m: usize,
        x: &[f32],
        out: &mut [f32],
        bias: &[f32],
        accumulate: bool,
        gelu: bool,
    ) {
        let a = ASource::Rows {
            x,
            lda: self.depth(),
        };
        self.gemm_epilogue(m, a, out, bias, accumulate, gelu, false)
    }

    /// out (m×n) = round(x (m×k, rows `lda` apart)·Wᵀ + bias) (+ out when `accumulate`), each
    /// result rounded to bf16 before it is added: a product of bf16-mixed training
    /// (`torch.autocast` returns the product in bf16), several of which may be summed into one
    /// f32 `out`; `lda` > k reads x as columns of a wider matrix (Q's, K's or V's gradient).
    fn gemm_round_bf16(
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

    /// [`PackedProduct::gemm_round_bf16`] of A = atᵀ, `at` holding A's k columns as rows `ldat`
    /// apart (A[i][kk] = at[kk·ldat + i]): a weight gradient gᵀ·x reads the output gradient g
    /// as it is, the transpose done while A is packed (a separate transpose pass cost as much
    /// as the product, BENCHMARKS.md §6). On tiles, for bf16 packings ([`TileTerms::Bf16`])
    /// only.
    fn gemm_round_bf16_at(
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

    /// [`PackedProduct::gemm_round_bf16`] into a new m×n matrix (no accumulation), not
    /// zero-filled first: a fresh buffer's zero fill was ~9 % of a bf16-mixed training step
    /// (`perf`, BENCHMARKS.md §6).
    fn gemm_round_bf16_new(&self, m: usize, x: &[f32], lda: usize, bias: &[f32]) -> Vec<f32> {
        new_rounded(self, m, ASource::Rows { x, lda }, bias)
    }

    /// [`PackedProduct::gemm_round_bf16_at`] into a new m×n matrix, as
    /// [`PackedProduct::gemm_round_bf16_new`].
    fn gemm_round_bf16_at_new(&self, m: usize, at: &[f32], ldat: usize, bias: &[f32]) -> Vec<f32> {
        new_rounded(self, m, ASource::Columns { at, ldat }, bias)
    }
}

/// A new m×n matrix = round(A·Wᵀ + bias) from `p`, written by the product alone.
fn new_rounded<P: PackedProduct + ?Sized>(p: &P, m: usize, a: ASource, bias: &[f32]) -> Vec<f32> {
    let len = m.checked_mul(p.columns()).expect("product size overflows");
    let mut out = Vec::with_capacity(len);
    // SAFETY: the spare capacity holds len values, valid for writes and owned here; without
    // `accumulate` nothing is read from it, and the product writes all m·n values (the trait's
    // contract; for m or n of 0 there are none), so all len are initialised before `set_len`.
    unsafe {
        p.gemm_epilogue_raw(m, a, out.as_mut_ptr(), len, bias, false, false, true);
        out.set_len(len);
    }
    out
}

/// Values a strided operand spans: `rows` strides of `stride` and one last run of `len`, or
/// None where that overflows (a stride so large would wrap the bounds check, not fail it).
pub(crate) fn needs(rows: usize, stride: usize, len: usize) -> Option<usize> {
    rows.checked_mul(stride)?.checked_add(len)
}

/// Where a product's A (m×k) is read from (the AMX and the AVX512-BF16 products alike).
#[derive(Clone, Copy)]
pub enum ASource<'a> {
    /// Row i at `x[i·lda..]`, k values.
    Rows { x: &'a [f32], lda: usize },
    /// Column kk at `at[kk·ldat..]`, m values: A is atᵀ.
    Columns { at: &'a [f32], ldat: usize },
}

impl<'a> ASource<'a> {
    /// Panics unless this holds an m×k A: strides at least a row (column) long, and the last
    /// row (column) inside the slice, computed without wrapping.
    pub(crate) fn check(self, m: usize, k: usize) {
        match self {
            ASource::Rows { x, lda } => {
                assert!(lda >= k, "row stride below k");
                assert!(
                    m == 0 || needs(m - 1, lda, k).is_some_and(|need| x.len() >= need),
                    "A holds fewer than m rows"
                );
            }
            ASource::Columns { at, ldat } => {
                assert!(ldat >= m, "column stride below m");
                assert!(
                    k == 0 || needs(k - 1, ldat, m).is_some_and(|need| at.len() >= need),
                    "A holds fewer than k columns"
                );
            }
        }
    }

    /// The same A from row `i0` on.
    fn rows_from(self, i0: usize) -> ASource<'a> {
        match self {
            ASource::Rows { x, lda } => ASource::Rows {
                x: &x[i0 * lda..],
                lda,
            },
            ASource::Columns { at, ldat } => ASource::Columns {
                at: &at[i0..],
                ldat,
            },
        }
    }
}

thread_local! {
    /// Per thread: the packed A (hi, lo) and the partial sums between depth chunks.
    static APACK: std::cell::RefCell<(Bf16Buf, Bf16Buf, AlignedBuf<f32>)> =
        std::cell::RefCell::default();
}

/// Every tile 16 rows × 64 bytes (palette 1).
///
/// # Safety
/// The CPU must support AMX-TILE and Linux must have granted this process the tile data state
/// ([`available`] and [`int8_available`] ensure both; without the grant `ldtilecfg` faults).
/// Replaces the calling thread's tile configuration and zeroes its tiles; release them with
/// `tilerelease` on the same thread when done.
#[inline]
pub(crate) unsafe fn configure_tiles() {
    #[repr(C, align(64))]
    struct Config([u8; 64]);
    let mut c = Config([0; 64]);
    c.0[0] = 1;
    for t in 0..8 {
        c.0[16 + 2 * t] = 64;
        c.0[48 + t] = T as u8;
    }
    asm!("ldtilecfg [{0}]", in(reg) c.0.as_ptr());
}

/// tmm0..3 (the 2×2 accumulator tiles of a 32×32 block of 4-byte sums) from `p`, rows `ld`
/// bytes apart: tmm0 rows 0–15 / columns 0–15, tmm1 columns 16–31, tmm2 and tmm3 rows 16–31.
///
/// # Safety
/// Tiles configured on this thread by [`configure_tiles`], and for each row i < 32 the 128
/// bytes at `p.add(i * ld)` valid for reads (no alignment needed; 64 makes loads fast).
#[inline(always)]
unsafe fn load_accumulators(p: *const u8, ld: usize) {
    asm!(
        "tileloadd tmm0, [{p} + {s}]",
        "tileloadd tmm1, [{p1} + {s}]",
        "tileloadd tmm2, [{p2} + {s}]",
        "tileloadd tmm3, [{p3} + {s}]",
        p = in(reg) p,
        p1 = in(reg) p.add(64),
        p2 = in(reg) p.add(T * ld),
        p3 = in(reg) p.add(T * ld + 64),
        s = in(reg) ld,
        options(nostack, readonly),
    );
}

/// tmm0..3 to `p`, laid out as [`load_accumulators`] reads them.
///
/// # Safety
/// Tiles configured on this thread by [`configure_tiles`], and for each row i < 32 the 128
/// bytes at `p.add(i * ld)` valid for writes, with no other thread accessing them meanwhile.
#[inline(always)]
pub(crate) unsafe fn store_accumulators(p: *mut u8, ld: usize) {
    asm!(
        "tilestored [{p} + {s}], tmm0",
        "tilestored [{p1} + {s}], tmm1",
        "tilestored [{p2} + {s}], tmm2",
        "tilestored [{p3} + {s}], tmm3",
        p = in(reg) p,
        p1 = in(reg) p.add(64),
        p2 = in(reg) p.add(T * ld),
        p3 = in(reg) p.add(T * ld + 64),
        s = in(reg) ld,
        options(nostack),
    );
}

/// One 32-deep step of the 32×32 output block into tmm0..3: the four hi/lo products, in an
/// order where each tile is reloaded right after its last reader (tiles are not renamed, so a
/// load waits for the products that read the old contents) and only Ahi is loaded twice.
///
/// # Safety
/// AMX-BF16 usable and tiles configured on this thread by [`configure_tiles`]; each of the
/// eight pointers valid for reads of one tile, 1024 bytes (16 rows of 64 bytes, 64 apart).
/// Adds into tmm0..3 and overwrites tmm4..7.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
unsafe fn tile_step(
    ah0: *const u16,
    ah1: *const u16,
    al0: *const u16,
    al1: *const u16,
    bh0: *const u16,
    bh1: *const u16,
    bl0: *const u16,
    bl1: *const u16,
) {
    asm!(
        "tileloadd tmm4, [{ah0} + {s}]",
        "tileloadd tmm5, [{ah1} + {s}]",
        "tileloadd tmm6, [{bh0} + {s}]",
        "tileloadd tmm7, [{bh1} + {s}]",
        "tdpbf16ps tmm0, tmm4, tmm6",
        "tdpbf16ps tmm1, tmm4, tmm7",
        "tileloadd tmm4, [{al0} + {s}]",
        "tdpbf16ps tmm2, tmm5, tmm6",
        "tdpbf16ps tmm3, tmm5, tmm7",
        "tileloadd tmm5, [{al1} + {s}]",
        "tdpbf16ps tmm0, tmm4, tmm6",
        "tdpbf16ps tmm2, tmm5, tmm6",
        "tileloadd tmm6, [{bl0} + {s}]",
        "tdpbf16ps tmm1, tmm4, tmm7",
        "tdpbf16ps tmm3, tmm5, tmm7",
        "tileloadd tmm7, [{bl1} + {s}]",
        "tdpbf16ps tmm0, tmm4, tmm6",
        "tdpbf16ps tmm1, tmm4, tmm7",
        "tileloadd tmm4, [{ah0} + {s}]",
        "tdpbf16ps tmm2, tmm5, tmm6",
        "tdpbf16ps tmm3, tmm5, tmm7",
        "tileloadd tmm5, [{ah1} + {s}]",
        "tdpbf16ps tmm0, tmm4, tmm6",
        "tdpbf16ps tmm1, tmm4, tmm7",
        "tdpbf16ps tmm2, tmm5, tmm6",
        "tdpbf16ps tmm3, tmm5, tmm7",
        ah0 = in(reg) ah0,
        ah1 = in(reg) ah1,
        al0 = in(reg) al0,
        al1 = in(reg) al1,
        bh0 = in(reg) bh0,
        bh1 = in(reg) bh1,
        bl0 = in(reg) bl0,
        bl1 = in(reg) bl1,
        s = in(reg) 64usize,
        options(nostack, readonly),
    );
}

/// One 32-deep step of the 32×32 output block into tmm0..3 in plain bf16: the one product
/// Ahi·Bhi per output tile.
///
/// # Safety
/// As [`tile_step`], for the four pointers given.
#[inline(always)]
unsafe fn tile_step_bf16(ah0: *const u16, ah1: *const u16, bh0: *const u16, bh1: *const u16) {
    asm!(
        "tileloadd tmm4, [{ah0} + {s}]",
        "tileloadd tmm6, [{bh0} + {s}]",
        "tileloadd tmm7, [{bh1} + {s}]",
        "tdpbf16ps tmm0, tmm4, tmm6",
        "tileloadd tmm5, [{ah1} + {s}]",
        "tdpbf16ps tmm1, tmm4, tmm7",
        "tdpbf16ps tmm2, tmm5, tmm6",
        "tdpbf16ps tmm3, tmm5, tmm7",
        ah0 = in(reg) ah0,
        ah1 = in(reg) ah1,
        bh0 = in(reg) bh0,
        bh1 = in(reg) bh1,
        s = in(reg) 64usize,
        options(nostack, readonly),
    );
}

/// The measured peak of bf16 tile products on `threads` threads at once, about `seconds` long:
/// four independent accumulators (`tdpbf16ps`, 16×16×32 multiply-adds each), best of 3
/// rounds; `None` where AMX-BF16 is not [`available`]. The yardstick of bf16 products'
/// utilisation, as [`crate::peak::measure`] is of f32's.
pub fn bf16_peak(threads: usize, seconds: f64) -> Option<crate::peak::Peak> {
    if !available() {
        return None;
    }
    let threads = threads.max(1);
    let run = |iters: usize| {
        // SAFETY: AMX-BF16 is available (checked above) and the tile state granted, so this
        // thread may configure its tiles; the products read and write tiles only, and the
        // tiles are released on the same thread.
        unsafe {
            configure_tiles();
            for _ in 0..iters {
                asm!(
                    "tdpbf16ps tmm0, tmm4, tmm6",
                    "tdpbf16ps tmm1, tmm4, tmm7",
                    "tdpbf16ps tmm2, tmm5, tmm6",
                    "tdpbf16ps tmm3, tmm5, tmm7",
                    options(nostack, nomem),
                );
            }
            asm!("tilerelease", options(nostack, nomem));
        }
    };
    let flops_per_iter = (4 * T * T * KT * 2) as f64;
    let best = crate::peak::best_rate(threads, seconds, 100_000, flops_per_iter, run);
    Some(crate::peak::Peak {
        gflops: best,
        threads,
        isa: "amx-bf16",
    })
}

/// Columns [j0, j0 + cols) of B (k rows of n, row-major) as one bf16 panel: row r of `hp` holds
/// the 16 pairs (B[2r][j], B[2r + 1][j]), rounded to nearest even; columns past `cols` and the
/// row past k (odd k) are zeros.
///
/// # Safety
/// The CPU must support AVX-512F. `b` holds at least k·n values, `j0 + cols <= n`,
/// `cols <= 16`, and `hp` holds at least k rounded up to even, times 16, values (the loads are
/// masked to the panel's columns; each store writes one 64-byte row of `hp`).
#[target_feature(enable = "avx512f")]
unsafe fn pack_kn_panel(b: &[f32], k: usize, n: usize, j0: usize, cols: usize, hp: &mut [u16]) {
    debug_assert!(j0 + cols <= n && cols <= T && b.len() >= k * n);
    debug_assert!(hp.len() >= k.div_ceil(2) * 2 * T);
    let mask = mask_for(cols);
    for r in 0..k.div_ceil(2) {
        // Rows below k hold n values; the mask keeps to columns [j0, j0 + cols) < n.
        let pair = bf16_pairs(b.as_ptr().add(j0), n, 2 * r, k, mask);
        _mm512_storeu_si512(hp.as_mut_ptr().add(r * 2 * T) as *mut _, pair);
    }
}

/// Rows `kk` and `kk + 1` of a row-major source (rows `stride` apart, from `src`), the lanes
/// `mask` selects, rounded to bf16 and interleaved into 16 pairs (row kk in the low half of each
/// lane, as `tdpbf16ps` pairs k): what both bf16 packings from k-major sources store. Row kk + 1
/// is zero when it is k (odd k).
///
/// # Safety
/// The CPU must support AVX-512F; for each of the two rows below k, the lanes `mask` selects at
/// `src + row·stride` must be valid for reads.
#[inline]
#[target_feature(enable = "avx512f")]
pub(crate) unsafe fn bf16_pairs(
    src: *const f32,
    stride: usize,
    kk: usize,
    k: usize,
    mask: __mmask16,
) -> __m512i {
    if convert_available() {
        // SAFETY: AVX512-BF16 checked just above; the rest is this function's contract.
        return unsafe { bf16_pairs_converted(src, stride, kk, k, mask) };
    }
    let row = |r: usize| {
        if r < k {
            round_bits16(_mm512_castps_si512(_mm512_maskz_loadu_ps(
                mask,
                src.add(r * stride),
            )))
        } else {
            _mm512_setzero_si512()
        }
    };
    _mm512_or_si512(row(kk), _mm512_slli_epi32(row(kk + 1), 16))
}

/// [`bf16_pairs`] with `vcvtne2ps2bf16` (both rows rounded in one instruction) and one word
/// permutation to interleave them: the same bits for normal values and zeros, subnormals
/// flushed to zero and NaNs kept (as [`pack_a_converted`]).
///
/// # Safety
/// As [`bf16_pairs`], and the CPU must support AVX-512BW and AVX512-BF16.
#[inline]
#[target_feature(enable = "avx512f,avx512bw,avx512bf16")]
unsafe fn bf16_pairs_converted(
    src: *const f32,
    stride: usize,
    kk: usize,
    k: usize,
    mask: __mmask16,
) -> __m512i {
    let row = |r: usize| {
        if r < k {
            _mm512_maskz_loadu_ps(mask, src.add(r * stride))
        } else {
            _mm512_setzero_ps()
        }
    };
    // Words 0..16: row kk; 16..32: row kk + 1.
    let both: __m512i = std::mem::transmute(_mm512_cvtne2ps_pbh(row(kk + 1), row(kk)));
    // Lane i takes row kk's word i (low half) and row kk + 1's (high half).
    let interleave = _mm512_set_epi16(
        31, 15, 30, 14, 29, 13, 28, 12, 27, 11, 26, 10, 25, 9, 24, 8, 23, 7, 22, 6, 21, 5, 20, 4,
        19, 3, 18, 2, 17, 1, 16, 0,
    );
    _mm512_permutexvar_epi16(interleave, both)
}

/// Pack rows [0, r) of A = atᵀ (A[i][kk] = at[kk·ldat + i]) as [`pack_a`] packs A's rows,
/// rounded to bf16 (no low part): each k-pair's two source rows are read along their r values,
/// 16 at a time, rounded, interleaved into 16 (kk, kk + 1) pairs and scattered to the 16 tile
/// rows they belong to.
///
/// # Safety
/// The CPU must support AVX-512F; `at` must hold at least `(k − 1) * ldat + r` values when
/// k > 0 (the loads are masked to the r values of each source row); `r <= mtiles * 16` (the
/// scatters write inside `hi`, sized here from `mtiles` and `ktiles`, `ktiles·32 ≥ k`).
#[target_feature(enable = "avx512f")]
unsafe fn pack_a_columns(
    at: &[f32],
    ldat: usize,
    k: usize,
    r: usize,
    mtiles: usize,
    ktiles: usize,
    hi: &mut Bf16Buf,
) {
    debug_assert!(r <= mtiles * T && k <= ktiles * KT);
    debug_assert!(k == 0 || at.len() >= (k - 1) * ldat + r);
    hi.zeroed(mtiles * ktiles * T * KT);
    let hp = hi.as_mut_slice().as_mut_ptr() as *mut u8;
    // Tile row ii starts KT bf16 (64 bytes) after row ii − 1: byte offsets (scatter scale 1).
    let rows = _mm512_mullo_epi32(
        _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
        _mm512_set1_epi32((KT * 2) as i32),
    );
    for kk in (0..k).step_by(2) {
        let (kt, col) = (kk / KT, kk % KT);
        for mt in 0..r.div_ceil(T) {
            let mask = mask_for(r - mt * T);
            // Rows below k hold the r values from mt·16 on that the mask selects (the contract).
            let pair = bf16_pairs(at.as_ptr().add(mt * T), ldat, kk, k, mask);
            // Bytes: tile (mt, kt), row ii, bf16 column `col` (the pair's low half).
            let base = hp.add(((mt * ktiles + kt) * T * KT + col) * 2);
            _mm512_mask_i32scatter_epi32::<1>(base as *mut _, mask, rows, pair);
        }
    }
}

/// Whether the CPU converts f32 to bf16 in one instruction (`vcvtne2ps2bf16`, AVX512-BF16; the
/// CPUs with AMX have it).
pub(crate) fn convert_available() -> bool {
    std::arch::is_x86_feature_detected!("avx512bf16")
}

/// [`pack_a`] for bf16 products (no low part) with `vcvtne2ps2bf16`: one instruction rounds a
/// tile row's 32 values, where the integer rounding took about ten (the packing was ~6 % of a
/// bf16 MiniLM pass, `perf`). The same bits as [`pack_a`] for normal and zero values; subnormal
/// inputs become zeros (the instruction flushes them) and NaNs stay NaN (the integer rounding
/// may turn one into an infinity): neither occurs in activations.
///
/// # Safety
/// As [`pack_a`], and the CPU must support AVX512-BF16 ([`convert_available`]).
#[target_feature(enable = "avx512f,avx512bw,avx512bf16")]
unsafe fn pack_a_converted(
    x: &[f32],
    lda: usize,
    k: usize,
    r: usize,
    mtiles: usize,
    ktiles: usize,
    hi: &mut Bf16Buf,
) {
    // Every tile row is written below (rows past r as zeros), so the buffer is not cleared.
    hi.sized(mtiles * ktiles * T * KT);
    let hp = hi.as_mut_slice().as_mut_ptr();
    for i in 0..mtiles * T {
        let (mt, ii) = (i / T, i % T);
        // Past the end for i ≥ r; only dereferenced (masked loads) for i < r.
        let row = x.as_ptr().wrapping_add(i * lda);
        for kt in 0..ktiles {
            // One 64-byte tile row, 64-byte aligned (the buffer is, and rows are 64 bytes).
            let at = hp.add((mt * ktiles + kt) * T * KT + ii * KT) as *mut __m512i;
            if i >= r {
                _mm512_store_si512(at, _mm512_setzero_si512());
                continue;
            }
            let k0 = kt * KT;
            let lo = _mm512_maskz_loadu_ps(mask_for(k.saturating_sub(k0)), row.wrapping_add(k0));
            let up =
                _mm512_maskz_loadu_ps(mask_for(k.saturating_sub(k0 + T)), row.wrapping_add(k0 + T));
            // Values k0.. in the low half, k0 + 16.. in the high half.
            let b: __m512i = std::mem::transmute(_mm512_cvtne2ps_pbh(up, lo));
            _mm512_store_si512(at, b);
        }
    }
}

/// Pack rows [0, r) of x (k values each, `lda` apart) as `mtiles` × `ktiles` tiles of 16 rows × 32 k, hi and lo
/// (hi alone, rounded to bf16, when `lo` is `None`); rows ≥ r and k ≥ k are zeros.
///
/// # Safety
/// The CPU must support AVX-512F and AVX-512BW; `x` must hold at least `(r − 1) * lda + k`
/// values when r > 0 (rows
/// are read through raw pointers, masked to their k values); `r <= mtiles * 16` (rows past
/// the tiles would be written past the end of `hi` and `lo`, which are sized here from
/// `mtiles` and `ktiles`).
#[target_feature(enable = "avx512f,avx512bw")]
#[allow(clippy::too_many_arguments)]
unsafe fn pack_a(
    x: &[f32],
    lda: usize,
    k: usize,
    r: usize,
    mtiles: usize,
    ktiles: usize,
    hi: &mut Bf16Buf,
    lo: Option<&mut Bf16Buf>,
) {
    let len = mtiles * ktiles * T * KT;
    hi.zeroed(len);
    let hp = hi.as_mut_slice().as_mut_ptr();
    let lp = lo.map(|lo| {
        lo.zeroed(len);
        lo.as_mut_slice().as_mut_ptr()
    });
    for i in 0..r {
        let (mt, ii) = (i / T, i % T);
        let row = x.as_ptr().add(i * lda);
        for kt in 0..ktiles {
            let at = (mt * ktiles + kt) * T * KT + ii * KT;
            for half in 0..2 {
                let k0 = kt * KT + half * T;
                if k0 >= k {
                    break;
                }
                let m = if k - k0 >= T {
                    0xffff
                } else {
                    ((1u32 << (k - k0)) - 1) as __mmask16
                };
                let v = _mm512_maskz_loadu_ps(m, row.add(k0));
                let h = match lp {
                    Some(lp) => {
                        let (h, l) = split16(v);
                        _mm256_storeu_si256(lp.add(at + half * T) as *mut __m256i, l);
                        h
                    }
                    // bf16 products: the rounding alone, no low part to compute.
                    None => _mm512_cvtepi32_epi16(round_bits16(_mm512_castps_si512(v))),
                };
                _mm256_storeu_si256(hp.add(at + half * T) as *mut __m256i, h);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn naive(m: usize, n: usize, k: usize, a: &[f32], w: &[f32]) -> Vec<f64> {
        let mut c = vec![0f64; m * n];
        for i in 0..m {
            for j in 0..n {
                c[i * n + j] = (0..k)
                    .map(|kk| a[i * k + kk] as f64 * w[j * k + kk] as f64)
                    .sum();
            }
        }
        c
    }

    /// The one-instruction bf16 packing writes what the integer rounding writes, bit for bit,
    /// on ragged shapes (odd k, a last tile half empty, rows past r zeroed over old contents),
    /// zeros of both signs and values at rounding ties; and flushes subnormals to zero.
    #[test]
    fn converted_packing_equals_the_integer_rounding() {
        if !available() || !convert_available() {
            return;
        }
        let shapes: [(usize, usize, usize); 5] = [
            (1, 1, 1),
            (5, 17, 20),
            (16, 32, 32),
            (33, 70, 71),
            (40, 100, 100),
        ];
        for &(r, k, lda) in &shapes {
            let mut x: Vec<f32> = (0..r * lda)
                .map(|i| ((i as u32).wrapping_mul(2654435761) % 10007) as f32 / 1001.0 - 5.0)
                .collect();
            x[0] = -0.0;
            if x.len() > 3 {
                x[1] = f32::from_bits(0x3f80_8000); // a tie: rounds to even (down)
                x[2] = f32::from_bits(0x3f81_8000); // a tie: rounds to even (up)
                x[3] = 0.0;
            }
            let mtiles = r.div_ceil(2 * T) * 2;
            let ktiles = k.div_ceil(KT);
            let (mut want, mut got) = (Bf16Buf::default(), Bf16Buf::default());
            // Old contents that the packing must overwrite, padding included.
            got.sized(mtiles * ktiles * T * KT);
            got.as_mut_slice().fill(0x7777);
            // SAFETY: AMX and AVX512-BF16 checked above; x holds r rows of lda ≥ k values;
            // r ≤ mtiles·16.
            unsafe {
                pack_a(&x, lda, k, r, mtiles, ktiles, &mut want, None);
                pack_a_converted(&x, lda, k, r, mtiles, ktiles, &mut got);
            }
            assert_eq!(want.as_mut_slice(), got.as_mut_slice(), "r {r}, k {k}");
        }
        let x = [f32::from_bits(1), 1.0];
        let mut got = Bf16Buf::default();
        // SAFETY: as above, one row of 2 values.
        unsafe { pack_a_converted(&x, 2, 2, 1, 2, 1, &mut got) };
        assert_eq!(
            &got.as_mut_slice()[..2],
            &[0, 0x3f80],
            "a subnormal becomes zero"
        );
    }

    #[test]
    fn split_keeps_seventeen_bits() {
        for &x in &[1.0f32, -1.234_567, 1e-20, 6.02e23, 0.1, -0.0] {
            let (h, l) = split(x);
            let back = f32::from_bits((h as u32) << 16) + f32::from_bits((l as u32) << 16);
            assert!((back - x).abs() <= x.abs() * 2f32.powi(-17), "{x}: {back}");
        }
    }

    #[test]
    fn matches_f64_to_near_f32_accuracy_on_ragged_shapes() {
        if !available() {
            return;
        }
        for &(m, n, k) in &[
            (1, 1, 1),
            (13, 33, 7),
            (30, 64, 300),
            (100, 96, 513),
            (70, 40, 1024),
            // Three depth chunks, the last one partial; rows in two blocks.
            (300, 50, 2500),
        ] {
            let a = crate::test_data::activations(m * k, 506.0);
            let w = crate::test_data::weights(n * k);
            let bias: Vec<f32> = (0..n).map(|j| j as f32 * 0.01).collect();
            let b = PackedSplit::from_nk(&w, n, k);
            let mut c = vec![1f32; m * n];
            b.gemm(m, &a, &mut c, &bias, true, false);
            let want = naive(m, n, k, &a, &w);
            let mut worst = 0f64;
            // Scale of the error: Σ|a||w| (what rounding of each term is relative to).
            for i in 0..m {
                for j in 0..n {
                    let mag: f64 = (0..k)
                        .map(|kk| (a[i * k + kk] as f64 * w[j * k + kk] as f64).abs())
                        .sum();
                    let want = want[i * n + j] + 1.0 + bias[j] as f64;
                    let got = c[i * n + j] as f64;
                    worst = worst.max((got - want).abs() / mag.max(1e-30));
                    assert!(
                        (got - want).abs() <= mag * 1e-5 + 1e-7,
                        "{m}x{n}x{k} at ({i},{j}): {got} vs {want} (scale {mag})"
                    );
                }
            }
            eprintln!("{m}x{n}x{k}: worst |error| / Σ|a·w| = {worst:e}");
        }
    }

    /// bf16 products are the products of the bf16-rounded operands, summed in f32: checked
    /// against the same rounding summed in f64 (to f32 accumulation error), and against the
    /// exact f32 product (to bf16's 2⁻⁸ relative per term).
    #[test]
    fn bf16_terms_are_products_of_rounded_operands() {
        if !available() {
            return;
        }
        let round = |x: f32| f32::from_bits((bf16_bits(x) as u32) << 16) as f64;
        for &(m, n, k) in &[(1, 1, 1), (13, 33, 7), (100, 96, 513), (300, 50, 2500)] {
            let a = crate::test_data::activations(m * k, 506.0);
            let w = crate::test_data::weights(n * k);
            let bias: Vec<f32> = (0..n).map(|j| j as f32 * 0.01).collect();
            let b = PackedSplit::from_nk_as(&w, n, k, TileTerms::Bf16);
            assert_eq!(b.terms(), TileTerms::Bf16);
            let mut c = vec![0f32; m * n];
            b.gemm(m, &a, &mut c, &bias, false, false);
            let exact = naive(m, n, k, &a, &w);
            for i in 0..m {
                for j in 0..n {
                    let (mut rounded, mut mag) = (0f64, 0f64);
                    for kk in 0..k {
                        let (x, y) = (a[i * k + kk], w[j * k + kk]);
                        rounded += round(x) * round(y);
                        mag += (x as f64 * y as f64).abs();
                    }
                    let got = c[i * n + j] as f64 - bias[j] as f64;
                    assert!(
                        (got - rounded).abs() <= mag * 1e-6 + 1e-6,
                        "{m}x{n}x{k} at ({i},{j}): {got} vs rounded {rounded}"
                    );
                    let err = (got - exact[i * n + j]).abs();
                    assert!(err <= mag * 2f64.powi(-7), "{m}x{n}x{k} at ({i},{j})");
                }
            }
        }
    }

    /// B packed from its k×n form is B packed from its transpose: the same products, bit for
    /// bit, in both kinds of terms.
    #[test]
    fn packing_from_k_rows_equals_packing_from_the_transpose() {
        if !available() {
            return;
        }
        for &(m, n, k) in &[(3, 1, 1), (13, 33, 7), (40, 96, 70)] {
            let a = crate::test_data::activations(m * k, 506.0);
            let w = crate::test_data::weights(n * k);
            let wt: Vec<f32> = (0..k * n).map(|i| w[(i % n) * k + i / n]).collect();
            let bias = vec![0f32; n];
            for terms in [TileTerms::Split, TileTerms::Bf16] {
                let mut want = vec![0f32; m * n];
                PackedSplit::from_nk_as(&w, n, k, terms)
                    .gemm(m, &a, &mut want, &bias, false, false);
                let mut got = vec![0f32; m * n];
                PackedSplit::from_kn_as(&wt, k, n, terms)
                    .gemm(m, &a, &mut got, &bias, false, false);
                assert_eq!(got, want, "{m}x{n}x{k} {terms:?}");
            }
        }
    }

    /// A read from its transpose (`gemm_round_bf16_at`) gives the products of A read by rows,
    /// bit for bit, on ragged shapes (rows not a multiple of 16 or 32, odd k, several depth
    /// chunks, row blocks on several threads) and with a wider stride.
    #[test]
    fn transposed_a_equals_a_by_rows() {
        if !available() {
            return;
        }
        for &(m, n, k, extra) in &[
            (1, 1, 1, 0),
            (13, 33, 7, 3),
            (70, 40, 1025, 0),
            (300, 50, 2500, 5),
        ] {
            let a = crate::test_data::activations(m * k, 506.0);
            let w = crate::test_data::weights(n * k);
            let ldat = m + extra;
            let mut at = vec![f32::NAN; k * ldat];
            for i in 0..m {
                for kk in 0..k {
                    at[kk * ldat + i] = a[i * k + kk];
                }
            }
            let bias: Vec<f32> = (0..n).map(|j| j as f32 * 0.01).collect();
            let b = PackedSplit::from_nk_as(&w, n, k, TileTerms::Bf16);
            let mut want = vec![0f32; m * n];
            b.gemm_round_bf16(m, &a, k, &mut want, &bias, false);
            let mut got = vec![0f32; m * n];
            b.gemm_round_bf16_at(m, &at[..(k - 1) * ldat + m], ldat, &mut got, &bias, false);
            assert_eq!(got, want, "{m}x{n}x{k} ldat {ldat}");
            // Into new matrices, not zero-filled first: every value written all the same.
            assert_eq!(b.gemm_round_bf16_new(m, &a, k, &bias), want);
            let at = &at[..(k - 1) * ldat + m];
            assert_eq!(b.gemm_round_bf16_at_new(m, at, ldat, &bias), want);
        }
    }

    /// A row stride so large that the bounds check's product would wrap is refused, not read
    /// past the buffer.
    #[test]
    #[should_panic(expected = "A holds fewer than m rows")]
    fn a_stride_that_overflows_is_refused() {
        if !available() {
            panic!("A holds fewer than m rows (no AMX here: nothing to check)");
        }
        let b = PackedSplit::from_nk_as(&[1.0; 8], 2, 4, TileTerms::Bf16);
        let mut out = vec![0f32; 8];
        b.gemm_round_bf16(4, &[1.0; 8], usize::MAX / 3 + 1, &mut out, &[0.0; 2], false);
    }

    /// `gemm_round_bf16` rounds each result (bias added) to bf16 and only then adds it to
    /// `out`: bit for bit the plain product rounded, plus what `out` held.
    #[test]
    fn rounded_products_round_before_they_accumulate() {
        if !available() {
            return;
        }
        let (m, n, k) = (35, 40, 70);
        let a = crate::test_data::activations(m * k, 506.0);
        let w = crate::test_data::weights(n * k);
        let bias: Vec<f32> = (0..n).map(|j| j as f32 * 0.013).collect();
        let b = PackedSplit::from_nk_as(&w, n, k, TileTerms::Bf16);
        let mut plain = vec![0f32; m * n];
        b.gemm(m, &a, &mut plain, &bias, false, false);
        let start: Vec<f32> = (0..m * n).map(|i| (i % 7) as f32 * 0.3).collect();
        let mut got = start.clone();
        b.gemm_round_bf16(m, &a, k, &mut got, &bias, true);
        for i in 0..m * n {
            let want = start[i] + crate::train::bf16_round(plain[i]);
            assert_eq!(got[i].to_bits(), want.to_bits(), "element {i}");
        }
        // NaN stays NaN through the rounding.
        let mut nan_in = a.clone();
        nan_in[0] = f32::NAN;
        let mut out = vec![0f32; m * n];
        b.gemm_round_bf16(m, &nan_in, k, &mut out, &bias, false);
        assert!(out[..n].iter().all(|v| v.is_nan()));
    }
}

#[cfg(test)]
mod speed {
    use super::*;

    /// What one tile load and one tile product cost here (the numbers behind the four-product
    /// step): `cargo test --release --lib amx_tile_costs -- --ignored --nocapture`.
    #[test]
    #[ignore = "timing probe, run by hand: cargo test --release --lib amx_tile_costs -- --ignored --nocapture (BENCHMARKS.md)"]
    fn amx_tile_costs() {
        if !available() {
            return;
        }
        let mut buf = Bf16Buf::default();
        buf.zeroed(5 * T * KT);
        let n = 2_000_000u32;
        let time = |f: &mut dyn FnMut()| {
            let t = std::time::Instant::now();
            for _ in 0..n {
                f();
            }
            t.elapsed().as_secs_f64() * 1e9 / (4 * n) as f64
        };
        let loads_from = |p: *const u16| {
            // SAFETY: called only inside the block below, after `configure_tiles` on this
            // thread (AMX is available: checked at the top); `p` is `buf` or `buf + 8` values,
            // and the four tiles read end 4·1024 bytes (2048 values) later, inside `buf`'s 2560.
            time(&mut || unsafe {
                asm!(
                    "tileloadd tmm4, [{a} + {s}]",
                    "tileloadd tmm5, [{b} + {s}]",
                    "tileloadd tmm6, [{c} + {s}]",
                    "tileloadd tmm7, [{d} + {s}]",
                    a = in(reg) p,
                    b = in(reg) p.add(T * KT),
                    c = in(reg) p.add(2 * T * KT),
                    d = in(reg) p.add(3 * T * KT),
                    s = in(reg) 64usize,
                )
            })
        };
        // SAFETY: AMX is available (checked at the top), so configuring the tiles, the tile
        // products on them and `tilerelease` are sound on this thread; the loads are covered
        // in `loads_from`.
        unsafe {
            configure_tiles();
            let products = time(&mut || {
                asm!(
                    "tdpbf16ps tmm0, tmm4, tmm6",
                    "tdpbf16ps tmm1, tmm4, tmm7",
                    "tdpbf16ps tmm2, tmm5, tmm6",
                    "tdpbf16ps tmm3, tmm5, tmm7",
                )
            });
            let loads = loads_from(buf.as_ptr());
            let straddling = loads_from(buf.as_ptr().add(8));
            asm!("tilerelease");
            println!(
                "one thread: tile product (tdpbf16ps 16x16x32) {products:.2} ns, \
                 tile load (1 KiB, in L1) {loads:.2} ns aligned to 64 bytes, \
                 {straddling:.2} ns with rows 16 bytes off"
            );
        }
    }
}
