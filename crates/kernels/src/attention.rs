//! One attention head over one sequence, for the scoring encoders: the scores `q·kᵀ` and the
//! context `p·v` of a few dozen tokens at a time, read in place from the fused Q|K|V rows.
//!
//! The general product ([`crate::gemm`]) packs both operands for every such call (K's transpose
//! into 32-key panels, the rows of Q and of the probabilities into 12-row panels) and computes
//! whole 12×32 tiles of a product that is often 20×20; with LaBSE's and MiniLM's sentences that
//! overhead was most of attention's 9–17 % of a pass (`perf`, BENCHMARKS.md §3). Here only K is
//! transposed (the scores run over 16 keys a lane), V's rows are read where they are, and rows go
//! four at a time.
//!
//! The arithmetic is the general product's, operation for operation, so the results are its
//! bits: each score is a fused multiply-add chain over the head's dimensions in order from +0,
//! then + 0 (the product's bias-free epilogue); each context value a chain over the keys in
//! order, in 256-key chunks ([`crate::gemm::KC`]) summed as the product sums its depth chunks.

use crate::block::BlockMut;
use crate::gemm::KC;
use std::arch::x86_64::*;

/// Query rows computed together (accumulators: rows × 16-lane blocks ≤ 16 zmm).
const ROWS: usize = 4;
/// 16-lane blocks (of keys for the scores, of dimensions for the context) computed together.
const BLOCKS: usize = 4;

/// Where a head's rows are: row `i` of Q, K or V at `qkv[at + i·ld ..][..d]`.
#[derive(Clone, Copy, Debug)]
pub struct HeadRows {
    /// Offset of row 0.
    pub at: usize,
    /// Distance between rows.
    pub ld: usize,
}

impl HeadRows {
    /// Panics unless `rows` rows of `d` values fit in `len` values.
    fn check(self, rows: usize, d: usize, len: usize, what: &str) {
        let fits = rows == 0
            || (rows - 1)
                .checked_mul(self.ld)
                .and_then(|x| x.checked_add(self.at))
                .and_then(|x| x.checked_add(d))
                .is_some_and(|end| end <= len);
        assert!(fits, "attention: {what} rows out of range");
    }
}

/// `scores[i·keys + j] = q_i · k_j` for the `mq` query rows and `keys` key rows of one head of
/// width `d` (row i of Q at `q`, of K at `k`, both in `qkv`); `kt` is scratch for K's transpose.
///
/// # Panics
/// If the CPU lacks AVX-512F, a row lies outside `qkv`, or `scores` is shorter than `mq · keys`.
#[allow(clippy::too_many_arguments)]
pub fn scores(
    qkv: &[f32],
    q: HeadRows,
    k: HeadRows,
    mq: usize,
    keys: usize,
    d: usize,
    kt: &mut Vec<f32>,
    scores: &mut [f32],
) {
    assert!(crate::kernels_available(), "attention needs AVX-512F");
    q.check(mq, d, qkv.len(), "query");
    k.check(keys, d, qkv.len(), "key");
    assert!(scores.len() >= mq * keys, "attention: scores too short");
    if mq == 0 || keys == 0 {
        return;
    }
    // Kᵀ, d rows of the keys padded to whole 16-lane blocks (the padding's lanes are never
    // stored).
    let width = keys.div_ceil(16) * 16;
    if kt.len() < d * width {
        kt.resize(d * width, 0.0);
    }
    // SAFETY: K's rows lie in `qkv` (checked) and `kt` holds d·width values (sized just
    // above), keys ≤ width.
    unsafe {
        transpose_keys(
            qkv.as_ptr().add(k.at),
            k.ld,
            keys,
            d,
            kt.as_mut_ptr(),
            width,
        )
    };
    for i0 in (0..mq).step_by(ROWS) {
        for b0 in (0..width / 16).step_by(BLOCKS) {
            let rows = ROWS.min(mq - i0);
            let blocks = BLOCKS.min(width / 16 - b0);
            // SAFETY: AVX-512F (asserted above). Query rows i0..i0 + rows lie in `qkv` (checked);
            // `kt` holds d rows of `width` values and blocks b0..b0 + blocks lie inside a row;
            // the stores are masked to keys below `keys` in rows i0.. of `scores`, which holds
            // mq·keys values (asserted).
            unsafe {
                score_tile(
                    qkv.as_ptr().add(q.at + i0 * q.ld),
                    q.ld,
                    rows,
                    kt.as_ptr().add(b0 * 16),
                    width,
                    blocks,
                    d,
                    scores.as_mut_ptr().add(i0 * keys + b0 * 16),
                    keys,
                    keys - b0 * 16,
                )
            };
        }
    }
}

/// `out(i, c) = Σ_j p[i·keys + j] · v_j[c]` for the `mq` rows of probabilities over `keys`
/// keys and V's rows of width `d` at `v` in `qkv`: the first `mq` rows × `d` columns of `out`,
/// a head's block of the context matrix.
///
/// # Panics
/// If the CPU lacks AVX-512F, a row of V lies outside `qkv`, `p` is shorter than `mq · keys`,
/// or `out` has fewer than `mq` rows or `d` columns.
#[allow(clippy::too_many_arguments)]
pub fn context(
    p: &[f32],
    mq: usize,
    keys: usize,
    qkv: &[f32],
    v: HeadRows,
    d: usize,
    out: &mut BlockMut,
) {
    assert!(crate::kernels_available(), "attention needs AVX-512F");
    v.check(keys, d, qkv.len(), "value");
    assert!(p.len() >= mq * keys, "attention: probabilities too short");
    assert!(
        mq <= out.rows() && d <= out.cols(),
        "attention: context block too small"
    );
    if mq == 0 || d == 0 {
        return;
    }
    let ldo = out.ld();
    let out = out.as_mut_ptr();
    for j0 in (0..keys).step_by(KC) {
        let depth = KC.min(keys - j0);
        for i0 in (0..mq).step_by(ROWS) {
            for c0 in (0..d).step_by(16 * BLOCKS) {
                // SAFETY: AVX-512F (asserted). Rows i0.. of p hold keys values each, of which
                // j0..j0 + depth are read (p.len() ≥ mq·keys, asserted); V's rows j0.. lie in
                // qkv (checked) and columns c0.. are masked to d; the mq rows × d columns
                // written lie in `out`'s block (asserted), which only it reaches.
                unsafe {
                    context_tile(
                        p.as_ptr().add(i0 * keys + j0),
                        keys,
                        ROWS.min(mq - i0),
                        qkv.as_ptr().add(v.at + j0 * v.ld + c0),
                        v.ld,
                        depth,
                        d - c0,
                        out.add(i0 * ldo + c0),
                        ldo,
                        j0 > 0,
                    )
                };
            }
        }
    }
}

/// Kᵀ: `kt[c·width + j] = k[j·ld + c]` for the `keys` rows of `d` values. A plain loop: an
/// AVX-512 scatter down the columns was slower here (2.4 % of a MiniLM bf16 pass against 1.9 %).
///
/// # Safety
/// `k` holds `keys` rows (`ld` apart) of `d` values; `kt` holds `d · width` values and
/// `keys <= width`.
unsafe fn transpose_keys(
    k: *const f32,
    ld: usize,
    keys: usize,
    d: usize,
    kt: *mut f32,
    width: usize,
) {
    for j in 0..keys {
        let row = k.add(j * ld);
        for c in 0..d {
            *kt.add(c * width + j) = *row.add(c);
        }
    }
}

/// The lanes of block `b` of a row with `left` valid values from block 0 on.
#[inline(always)]
fn lanes(left: usize, b: usize) -> __mmask16 {
    crate::act::mask_for(left.saturating_sub(16 * b))
}

/// Up to 4 query rows × 4 blocks of 16 keys: the chains over the d dimensions, + 0, stored to
/// the first `left` keys of each row.
///
/// # Safety
/// AVX-512F; `q` holds `rows` rows of `d` (`ldq` apart); `kt` holds `d` rows (`ldk` apart) of
/// `16 · blocks` values; `out` holds `rows` rows (`ldo` apart) of `min(left, 16 · blocks)`
/// values, valid for writes.
#[allow(clippy::too_many_arguments)]
#[target_feature(enable = "avx512f")]
unsafe fn score_tile(
    q: *const f32,
    ldq: usize,
    rows: usize,
    kt: *const f32,
    ldk: usize,
    blocks: usize,
    d: usize,
    out: *mut f32,
    ldo: usize,
    left: usize,
) {
    // Constant tile sizes, so that the accumulators live in registers.
    let run = match (rows, blocks) {
        (4, 4) => score_tile_of::<4, 4>,
        (4, 3) => score_tile_of::<4, 3>,
        (4, 2) => score_tile_of::<4, 2>,
        (4, _) => score_tile_of::<4, 1>,
        (3, 4) => score_tile_of::<3, 4>,
        (3, 3) => score_tile_of::<3, 3>,
        (3, 2) => score_tile_of::<3, 2>,
        (3, _) => score_tile_of::<3, 1>,
        (2, 4) => score_tile_of::<2, 4>,
        (2, 3) => score_tile_of::<2, 3>,
        (2, 2) => score_tile_of::<2, 2>,
        (2, _) => score_tile_of::<2, 1>,
        (_, 4) => score_tile_of::<1, 4>,
        (_, 3) => score_tile_of::<1, 3>,
        (_, 2) => score_tile_of::<1, 2>,
        _ => score_tile_of::<1, 1>,
    };
    run(q, ldq, kt, ldk, d, out, ldo, left)
}

/// [`score_tile`] for `R` rows and `B` blocks (its contract, with rows = R, blocks = B).
#[allow(clippy::too_many_arguments)]
#[target_feature(enable = "avx512f")]
unsafe fn score_tile_of<const R: usize, const B: usize>(
    q: *const f32,
    ldq: usize,
    kt: *const f32,
    ldk: usize,
    d: usize,
    out: *mut f32,
    ldo: usize,
    left: usize,
) {
    let mut acc = [[_mm512_setzero_ps(); B]; R];
    for c in 0..d {
        let krow = kt.add(c * ldk);
        let mut kv = [_mm512_setzero_ps(); B];
        for (b, v) in kv.iter_mut().enumerate() {
            *v = _mm512_loadu_ps(krow.add(16 * b));
        }
        for (r, row) in acc.iter_mut().enumerate() {
            let x = _mm512_set1_ps(*q.add(r * ldq + c));
            for (a, &kb) in row.iter_mut().zip(&kv) {
                *a = _mm512_fmadd_ps(x, kb, *a);
            }
        }
    }
    for (r, row) in acc.iter().enumerate() {
        for (b, &a) in row.iter().enumerate() {
            let v = _mm512_add_ps(a, _mm512_setzero_ps());
            _mm512_mask_storeu_ps(out.add(r * ldo + 16 * b), lanes(left, b), v);
        }
    }
}

/// Up to 4 rows of probabilities × up to 64 of V's columns over `depth` keys: the chains over
/// the keys, + 0, and + the stored values when `add` (a later 256-key chunk).
///
/// # Safety
/// AVX-512F; `p` holds `rows` rows (`ldp` apart) of `depth` values; `v` holds `depth` rows
/// (`ldv` apart) of `min(cols, 64)` values; `out` holds `rows` rows (`ldo` apart) of
/// `min(cols, 64)` values, valid for reads and writes.
#[allow(clippy::too_many_arguments)]
#[target_feature(enable = "avx512f")]
unsafe fn context_tile(
    p: *const f32,
    ldp: usize,
    rows: usize,
    v: *const f32,
    ldv: usize,
    depth: usize,
    cols: usize,
    out: *mut f32,
    ldo: usize,
    add: bool,
) {
    // Constant tile sizes, so that the accumulators live in registers.
    let run = match (rows, cols.min(16 * BLOCKS).div_ceil(16)) {
        (4, 4) => context_tile_of::<4, 4>,
        (4, 3) => context_tile_of::<4, 3>,
        (4, 2) => context_tile_of::<4, 2>,
        (4, _) => context_tile_of::<4, 1>,
        (3, 4) => context_tile_of::<3, 4>,
        (3, 3) => context_tile_of::<3, 3>,
        (3, 2) => context_tile_of::<3, 2>,
        (3, _) => context_tile_of::<3, 1>,
        (2, 4) => context_tile_of::<2, 4>,
        (2, 3) => context_tile_of::<2, 3>,
        (2, 2) => context_tile_of::<2, 2>,
        (2, _) => context_tile_of::<2, 1>,
        (_, 4) => context_tile_of::<1, 4>,
        (_, 3) => context_tile_of::<1, 3>,
        (_, 2) => context_tile_of::<1, 2>,
        _ => context_tile_of::<1, 1>,
    };
    run(p, ldp, v, ldv, depth, cols, out, ldo, add)
}

/// [`context_tile`] for `R` rows and `B` 16-column blocks (its contract, with rows = R and
/// B = ⌈min(cols, 64) / 16⌉).
#[allow(clippy::too_many_arguments)]
#[target_feature(enable = "avx512f")]
unsafe fn context_tile_of<const R: usize, const B: usize>(
    p: *const f32,
    ldp: usize,
    v: *const f32,
    ldv: usize,
    depth: usize,
    cols: usize,
    out: *mut f32,
    ldo: usize,
    add: bool,
) {
    let mut masks = [0 as __mmask16; B];
    for (b, m) in masks.iter_mut().enumerate() {
        *m = lanes(cols, b);
    }
    let mut acc = [[_mm512_setzero_ps(); B]; R];
    for j in 0..depth {
        let vrow = v.add(j * ldv);
        let mut vv = [_mm512_setzero_ps(); B];
        for (b, x) in vv.iter_mut().enumerate() {
            *x = _mm512_maskz_loadu_ps(masks[b], vrow.add(16 * b));
        }
        for (r, row) in acc.iter_mut().enumerate() {
            let x = _mm512_set1_ps(*p.add(r * ldp + j));
            for (a, &vb) in row.iter_mut().zip(&vv) {
                *a = _mm512_fmadd_ps(x, vb, *a);
            }
        }
    }
    for (r, row) in acc.iter().enumerate() {
        for (b, &a) in row.iter().enumerate() {
            let at = out.add(r * ldo + 16 * b);
            let mut x = _mm512_add_ps(a, _mm512_setzero_ps());
            if add {
                x = _mm512_add_ps(x, _mm512_maskz_loadu_ps(masks[b], at));
            }
            _mm512_mask_storeu_ps(at, masks[b], x);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gemm::{gemm, Epilogue, PackedB};

    /// The general product's scores and context (packed K and V, as the encoders did), for
    /// the same rows.
    #[allow(clippy::too_many_arguments)]
    fn by_gemm(
        qkv: &[f32],
        q: HeadRows,
        k: HeadRows,
        v: HeadRows,
        mq: usize,
        keys: usize,
        d: usize,
        ldo: usize,
    ) -> (Vec<f32>, Vec<f32>) {
        let (mut kp, mut vp) = (PackedB::default(), PackedB::default());
        kp.repack_nk(&qkv[k.at..], keys, d, k.ld);
        vp.repack_kn(&qkv[v.at..], keys, d, v.ld);
        let mut s = vec![0f32; mq * keys];
        gemm(
            mq,
            &qkv[q.at..],
            q.ld,
            &kp,
            &mut s,
            keys,
            Epilogue::default(),
            false,
        );
        let mut out = vec![f32::NAN; mq * ldo];
        gemm(mq, &s, keys, &vp, &mut out, ldo, Epilogue::default(), false);
        (s, out)
    }

    /// The same bits as the general product, for scores and context: ragged key counts (1, 15,
    /// 17, 300 > one 256-key chunk), head widths 32, 64 and 40 (a ragged last block), one query
    /// row ([CLS] only) or all, rows read at the fused Q|K|V stride.
    #[test]
    fn scores_and_context_are_the_general_products_bits() {
        if !crate::kernels_available() {
            return;
        }
        for &(keys, d) in &[(1, 32), (15, 64), (17, 40), (33, 32), (300, 64)] {
            let heads = 3;
            let inner = heads * d;
            let ld = 3 * inner;
            let qkv: Vec<f32> = (0..keys * ld)
                .map(|i| ((i as u32).wrapping_mul(2654435761) % 20011) as f32 / 5003.0 - 2.0)
                .collect();
            for mq in [1, keys] {
                let hd = 1;
                let q = HeadRows { at: hd * d, ld };
                let k = HeadRows {
                    at: inner + hd * d,
                    ld,
                };
                let v = HeadRows {
                    at: 2 * inner + hd * d,
                    ld,
                };
                let (want_s, want_o) = by_gemm(&qkv, q, k, v, mq, keys, d, inner);
                let mut kt = Vec::new();
                let mut s = vec![f32::NAN; mq * keys];
                scores(&qkv, q, k, mq, keys, d, &mut kt, &mut s);
                let bits = |x: &[f32]| x.iter().map(|v| v.to_bits()).collect::<Vec<_>>();
                assert_eq!(
                    bits(&s),
                    bits(&want_s),
                    "scores {keys} keys, d {d}, {mq} rows"
                );
                let mut o = vec![f32::NAN; mq * inner];
                let mut block = BlockMut::new(&mut o, mq, d, inner);
                context(&want_s, mq, keys, &qkv, v, d, &mut block);
                for i in 0..mq {
                    assert_eq!(
                        bits(&o[i * inner..i * inner + d]),
                        bits(&want_o[i * inner..i * inner + d]),
                        "context row {i}, {keys} keys, d {d}"
                    );
                    // Columns past the head are not touched.
                    assert!(o[i * inner + d..(i + 1) * inner].iter().all(|x| x.is_nan()));
                }
            }
        }
    }

    /// Rows outside Q|K|V are refused, not read.
    #[test]
    #[should_panic(expected = "key rows out of range")]
    fn keys_past_the_rows_are_refused() {
        if !crate::kernels_available() {
            panic!("key rows out of range");
        }
        let qkv = vec![0f32; 10 * 96];
        let mut s = vec![0f32; 100];
        let rows = HeadRows { at: 32, ld: 96 };
        scores(&qkv, rows, rows, 10, 11, 32, &mut Vec::new(), &mut s);
    }
}
