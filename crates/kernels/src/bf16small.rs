//! bf16 products of small matrices on the calling thread, for work already split into parallel
//! jobs: attention's per-(sequence, head) products in bf16-mixed training (n×n by n×d and n×d
//! by d×n, n ≈ 90 tokens and d = 32 on a Possible Stories batch of MiniLM). The arithmetic is
//! [`crate::bf16dot`]'s: both operands rounded to bf16 (`vcvtne2ps2bf16`: to nearest even,
//! subnormals to zero), products summed in f32, each result rounded to bf16 when asked.
//!
//! Why not [`crate::bf16dot::PackedBf16Dot`]: it packs A into 12-row panels by scattering each
//! pair to its slot, and splits the rows over rayon's threads. An n×n A times an n×32 B uses each
//! A value for 32 outputs only, so that scatter would cost about what the products do, and a
//! job has nothing to split. Here A read by rows stays row-major in pairs (the tile broadcasts
//! pair r of row i from `i·pairs + r`) and A read by columns becomes pair-major (from
//! `r·rows + i`): both are one conversion per 32 values and a plain store.
//!
//! Unsafe code: AVX-512F/BW and AVX512-BF16 intrinsics, reached only after
//! [`crate::bf16dot::available`]; raw pointers into buffers sized here.

use super::act::mask_for;
use super::amx::bf16_pairs;
use super::bf16dot::{
    available, convert_row, kn_panel, row_stride, scatter_row_pairs, tile_at, MR, T,
};
use super::block::BlockMut;
use super::gemm::Columns;
use std::arch::x86_64::*;

/// A matrix operand read from f32 storage with a row stride.
#[derive(Debug, Clone, Copy)]
pub enum Operand<'a> {
    /// Element (i, j) at `x[i·ld + j]`.
    Rows {
        /// The values.
        x: &'a [f32],
        /// Row stride.
        ld: usize,
    },
    /// Element (i, j) at `x[j·ld + i]`: the transpose of a row-major matrix.
    Columns {
        /// The values.
        x: &'a [f32],
        /// Row stride of the stored (transposed) matrix.
        ld: usize,
    },
}

impl Operand<'_> {
    /// Panics unless an operand of `rows` × `cols` lies inside the storage.
    fn check(&self, rows: usize, cols: usize, what: &str) {
        let (x, ld, stored_rows, stored_cols) = match *self {
            Operand::Rows { x, ld } => (x, ld, rows, cols),
            Operand::Columns { x, ld } => (x, ld, cols, rows),
        };
        let fits = stored_rows == 0
            || stored_cols == 0
            || (ld >= stored_cols
                && (stored_rows - 1)
                    .checked_mul(ld)
                    .and_then(|v| v.checked_add(stored_cols))
                    .is_some_and(|need| x.len() >= need));
        assert!(
            fits,
            "bf16 small product: {what} of {rows}x{cols} does not fit its storage"
        );
    }
}

/// Scratch of the small products (the converted operands), kept between calls on one thread.
#[derive(Debug, Default, Clone)]
pub struct SmallBf16 {
    a: Vec<u32>,
    b: Vec<u32>,
}

impl SmallBf16 {
    /// `out[i·ldo + j] = A·B` for i < m, j < n (A m×k, B k×n), each result rounded to bf16 when
    /// `round`; other elements of `out` are not touched.
    ///
    /// # Panics
    /// Without AVX512-BF16 ([`available`]), or when an operand or the output does not fit its
    /// storage.
    #[allow(clippy::too_many_arguments)]
    pub fn product(
        &mut self,
        m: usize,
        n: usize,
        k: usize,
        a: Operand,
        b: Operand,
        out: &mut [f32],
        ldo: usize,
        round: bool,
    ) {
        let fits = m == 0
            || n == 0
            || (ldo >= n
                && (m - 1)
                    .checked_mul(ldo)
                    .and_then(|v| v.checked_add(n))
                    .is_some_and(|need| out.len() >= need));
        assert!(fits, "bf16 small product: output of {m}x{n} does not fit");
        self.product_block(m, n, k, a, b, &mut BlockMut::new(out, m, n, ldo), round)
    }

    /// [`SmallBf16::product`] into the first m rows × n columns of a block of a larger matrix
    /// ([`BlockMut`]), for jobs that each write their own columns of one matrix (attention
    /// heads).
    ///
    /// # Panics
    /// As [`SmallBf16::product`], and when `out` has fewer than m rows or n columns.
    #[allow(clippy::too_many_arguments)]
    pub fn product_block(
        &mut self,
        m: usize,
        n: usize,
        k: usize,
        a: Operand,
        b: Operand,
        out: &mut BlockMut,
        round: bool,
    ) {
        assert!(available(), "AVX512-BF16 products are not available");
        a.check(m, k, "A");
        b.check(k, n, "B");
        assert!(
            m <= out.rows() && n <= out.cols(),
            "bf16 small product: output of {m}x{n} does not fit its block"
        );
        if m == 0 || n == 0 {
            return;
        }
        let ldo = out.ld();
        // SAFETY: AVX-512F/BW and AVX512-BF16 (asserted); operands checked; the m×n elements
        // written lie in `out`'s block (asserted), which only it reaches while borrowed.
        unsafe { self.run(m, n, k, a, b, out.as_mut_ptr(), ldo, round) }
    }

    #[allow(clippy::too_many_arguments)]
    #[target_feature(enable = "avx512f,avx512bw,avx512bf16")]
    unsafe fn run(
        &mut self,
        m: usize,
        n: usize,
        k: usize,
        a: Operand,
        b: Operand,
        out: *mut f32,
        ldo: usize,
        round: bool,
    ) {
        let pairs = k.div_ceil(2);
        // Rows rounded up to whole tiles: the tile computes all MR rows (their results past m
        // are not stored), so those slots only need to be initialised, which `resize` does.
        let rows = m.div_ceil(MR) * MR;
        let (row_step, pair_step) = self.convert_a(a, m, k, rows, pairs);
        let panel_pairs = n.div_ceil(2 * T);
        self.convert_b(b, n, k, pairs, panel_pairs);
        for pj in 0..panel_pairs {
            let c = Columns::new((n - pj * 2 * T).min(2 * T), std::ptr::null()).rounding(round);
            for i0 in (0..m).step_by(MR) {
                // SAFETY: `tile_at`'s contract: A's rows i0.. lie in the `rows` converted rows
                // (pairs values each), the panel pair pj in the `2·panel_pairs` panels; rows
                // i0 + ii < m and columns pj·32 + jj < n of the output are the caller's.
                unsafe {
                    tile_at(
                        self.a.as_ptr().add(i0 * row_step),
                        row_step,
                        pair_step,
                        self.b.as_ptr().add(2 * pj * pairs * T),
                        pairs,
                        out.add(i0 * ldo + pj * 2 * T),
                        ldo,
                        MR.min(m - i0),
                        &c,
                        false,
                        false,
                    );
                }
            }
        }
    }

    /// A (m×k) in bf16 pairs in `self.a`, `rows` ≥ m rows; returns where pair r of row i is
    /// (`i·row_step + r·pair_step`).
    #[target_feature(enable = "avx512f,avx512bw,avx512bf16")]
    unsafe fn convert_a(
        &mut self,
        a: Operand,
        m: usize,
        k: usize,
        rows: usize,
        pairs: usize,
    ) -> (usize, usize) {
        // Row-major rows an odd number of cache lines apart (`bf16dot::row_stride`).
        let row_len = row_stride(pairs);
        if self.a.len() < rows * row_len {
            self.a.resize(rows * row_len, 0);
        }
        let dst = self.a.as_mut_ptr();
        match a {
            Operand::Rows { x, ld } => {
                for i in 0..m {
                    // SAFETY: `convert_row`'s contract: the features are this function's; row
                    // i < m holds k values at x[i·ld..] (`Operand::check`); its pairs go to
                    // dst[i·row_len..i·row_len + pairs], inside the rows·row_len buffer.
                    unsafe { convert_row(x.as_ptr().add(i * ld), k, pairs, dst.add(i * row_len)) };
                }
                (row_len, 1)
            }
            Operand::Columns { x, ld } => {
                // Stored row kk holds A's column kk: pair r of rows i0..i0 + 16 interleaves
                // stored rows 2r and 2r + 1 (zero past k), lanes past m zero.
                for r in 0..pairs {
                    for i0 in (0..m).step_by(T) {
                        // SAFETY: stored rows 2r, 2r + 1 below k hold m values from x (checked),
                        // read in the lanes below m − i0; the store's lanes end below r·rows +
                        // rows ≤ pairs·rows, the buffer's length.
                        unsafe {
                            let v = bf16_pairs(x.as_ptr().add(i0), ld, 2 * r, k, mask_for(m - i0));
                            _mm512_mask_storeu_epi32(
                                dst.add(r * rows + i0) as *mut _,
                                mask_for(rows - i0),
                                v,
                            );
                        }
                    }
                }
                (1, rows)
            }
        }
    }

    /// B (k×n) in `2·panel_pairs` panels of 16 columns in `self.b`, each `pairs` rows of 16
    /// pairs (bf16dot's layout of W).
    #[target_feature(enable = "avx512f,avx512bw,avx512bf16")]
    unsafe fn convert_b(
        &mut self,
        b: Operand,
        n: usize,
        k: usize,
        pairs: usize,
        panel_pairs: usize,
    ) {
        let len = 2 * panel_pairs * pairs * T;
        if self.b.len() < len {
            self.b.resize(len, 0);
        }
        let dst = self.b.as_mut_ptr();
        match b {
            Operand::Rows { x, ld } => {
                for p in 0..2 * panel_pairs {
                    // SAFETY: `kn_panel`'s contract: B's k rows of n values `ld` apart lie in x
                    // (`Operand::check`); panel p's `pairs` rows of 16 end below the buffer's
                    // 2·panel_pairs·pairs·16. A panel past n keeps old values, as lanes past n
                    // do below: their results are not stored.
                    unsafe { kn_panel(x, ld, k, n, p, pairs, dst.add(p * pairs * T)) };
                }
            }
            Operand::Columns { x, ld } => {
                // B's column j is stored row j (k values): its pairs go to lane j % 16 of
                // panel j / 16. Lanes past n keep old values: their results are not stored.
                if pairs == 0 {
                    return;
                }
                for j in 0..n {
                    // SAFETY: `scatter_row_pairs`' contract: stored row j < n holds k values
                    // (checked); pair r lands at panel j/16's slot r·16 + j % 16, inside the
                    // buffer; the stride 16 is small.
                    unsafe {
                        scatter_row_pairs(
                            x.as_ptr().add(j * ld),
                            k,
                            pairs,
                            dst.add((j / T) * pairs * T + j % T),
                            T,
                        );
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::train::bf16_round;

    fn vals(len: usize, seed: u32) -> Vec<f32> {
        (0..len)
            .map(|i| (((i as u32).wrapping_mul(2654435761) ^ seed) % 10007) as f32 / 3001.0 - 1.6)
            .collect()
    }

    /// Every operand form and shape (tile edges, odd k, k = 0), strided storage, against a loop
    /// over the rounded operands; elements outside the output are left alone.
    #[test]
    fn products_equal_the_rounded_operands_loop() {
        if !available() {
            eprintln!("no AVX512-BF16 here");
            return;
        }
        let mut small = SmallBf16::default();
        for &(m, n, k) in &[
            (1, 1, 1),
            (13, 32, 32),
            (90, 32, 90),
            (90, 90, 32),
            (25, 47, 7),
            (12, 33, 0),
            (5, 17, 64),
        ] {
            for (ai, bi) in [(0, 0), (0, 1), (1, 0), (1, 1)] {
                let (lda, ldb, ldo) = (k.max(m) + 3, k.max(n) + 5, n + 4);
                let xa = vals(lda * (m.max(k) + 1), 1);
                let xb = vals(ldb * (n.max(k) + 1), 2);
                let a = if ai == 0 {
                    Operand::Rows { x: &xa, ld: lda }
                } else {
                    Operand::Columns { x: &xa, ld: lda }
                };
                let b = if bi == 0 {
                    Operand::Rows { x: &xb, ld: ldb }
                } else {
                    Operand::Columns { x: &xb, ld: ldb }
                };
                let at = |op: &Operand, i: usize, j: usize| -> f32 {
                    bf16_round(match *op {
                        Operand::Rows { x, ld } => x[i * ld + j],
                        Operand::Columns { x, ld } => x[j * ld + i],
                    })
                };
                for round in [false, true] {
                    let mut out = vec![f32::NAN; m * ldo];
                    small.product(m, n, k, a, b, &mut out, ldo, round);
                    for i in 0..m {
                        for j in 0..ldo {
                            let got = out[i * ldo + j];
                            if j >= n {
                                assert!(got.is_nan(), "({m},{n},{k}) wrote ({i},{j})");
                                continue;
                            }
                            let want: f32 = (0..k).map(|t| at(&a, i, t) * at(&b, t, j)).sum();
                            let want = if round { bf16_round(want) } else { want };
                            assert!(
                                (got - want).abs() <= want.abs() * 2f32.powi(-7) + 1e-4,
                                "({m},{n},{k}) {ai}{bi} round {round} ({i},{j}): {got} vs {want}"
                            );
                            assert!(!round || got == bf16_round(got));
                        }
                    }
                }
            }
        }
    }

    #[test]
    #[should_panic(expected = "B of 8x5 does not fit")]
    fn operands_outside_their_storage_are_refused() {
        if !available() {
            panic!("B of 8x5 does not fit (no AVX512-BF16 here)");
        }
        let x = vec![0f32; 32];
        let mut out = vec![0f32; 20];
        SmallBf16::default().product(
            4,
            5,
            8,
            Operand::Rows { x: &x, ld: 8 },
            Operand::Rows { x: &x, ld: 5 },
            &mut out,
            5,
            false,
        );
    }
}
