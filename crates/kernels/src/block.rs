//! Disjoint, strided blocks of one row-major matrix, for parallel jobs that each write their own
//! rows × columns of it: an attention head's columns of its sequence's rows. No `&mut [f32]` can
//! cover such a block without overlapping the next head's columns, so the products and the
//! attention kernels write through a [`BlockMut`] instead: a block is made either from a whole
//! exclusive borrow ([`BlockMut::new`]) or by [`BlockMut::grid`], which checks once that the
//! blocks it hands out are disjoint and inside the matrix. The kernels then write to a block
//! without any check per element, and no caller needs `unsafe`.

use std::marker::PhantomData;
use std::ops::Range;

/// `rows` × `cols` elements of a row-major f32 matrix, rows `ld` apart: the only handle to them
/// while it lives (the kernels write results through it).
#[derive(Debug)]
pub struct BlockMut<'a> {
    /// Element (0, 0).
    ptr: *mut f32,
    rows: usize,
    cols: usize,
    ld: usize,
    /// The exclusive borrow of the matrix the block came from.
    _matrix: PhantomData<&'a mut [f32]>,
}

// SAFETY: a BlockMut is the only handle to its elements (made from an exclusive borrow, whole or
// split by `grid` into blocks that share no element), so sending it to another thread is sending
// a `&mut` to those elements, which `&mut [f32]: Send` allows.
unsafe impl Send for BlockMut<'_> {}

/// Whether `rows` × `cols` at `at` with row stride `ld` lies in `len` values (`cols <= ld`, no
/// overflow); an empty block fits anywhere.
fn fits(at: usize, rows: usize, cols: usize, ld: usize, len: usize) -> bool {
    rows == 0
        || cols == 0
        || (cols <= ld
            && (rows - 1)
                .checked_mul(ld)
                .and_then(|x| x.checked_add(at))
                .and_then(|x| x.checked_add(cols))
                .is_some_and(|end| end <= len))
}

/// Panics unless the ranges are pairwise disjoint (empty ranges overlap nothing).
fn assert_disjoint(ranges: &[Range<usize>], what: &str) {
    let mut sorted: Vec<&Range<usize>> = ranges.iter().filter(|r| !r.is_empty()).collect();
    sorted.sort_by_key(|r| r.start);
    for w in sorted.windows(2) {
        assert!(
            w[0].end <= w[1].start,
            "block grid: {what} {:?} and {:?} overlap",
            w[0],
            w[1]
        );
    }
}

impl<'a> BlockMut<'a> {
    /// The `rows` × `cols` matrix at the start of `data`, rows `ld` apart.
    ///
    /// # Panics
    /// If `cols > ld` (with rows and columns non-zero) or the matrix does not fit in `data`.
    pub fn new(data: &'a mut [f32], rows: usize, cols: usize, ld: usize) -> Self {
        assert!(
            fits(0, rows, cols, ld, data.len()),
            "block of {rows}x{cols} (row stride {ld}) does not fit in {} values",
            data.len()
        );
        BlockMut {
            ptr: data.as_mut_ptr(),
            rows,
            cols,
            ld,
            _matrix: PhantomData,
        }
    }

    /// The blocks `rows[r]` × `cols[c]` of the matrix `data` (rows `ld` apart), at index
    /// `r · cols.len() + c`: one per job, for jobs that each own some rows × some columns.
    ///
    /// # Panics
    /// If two row ranges or two column ranges overlap, a column range ends past `ld`, or a block
    /// does not fit in `data`: checked here once, so that the blocks share no element.
    pub fn grid(
        data: &'a mut [f32],
        ld: usize,
        rows: &[Range<usize>],
        cols: &[Range<usize>],
    ) -> Vec<BlockMut<'a>> {
        assert_disjoint(rows, "rows");
        assert_disjoint(cols, "columns");
        let len = data.len();
        let base = data.as_mut_ptr();
        let mut blocks = Vec::with_capacity(rows.len() * cols.len());
        for r in rows {
            for c in cols {
                let at = r.start.checked_mul(ld).and_then(|x| x.checked_add(c.start));
                assert!(
                    c.end <= ld && at.is_some_and(|at| fits(at, r.len(), c.len(), ld, len)),
                    "block grid: rows {r:?} x columns {c:?} (row stride {ld}) outside {len} values"
                );
                blocks.push(BlockMut {
                    // Not `add`: an empty block's offset may lie past the end.
                    ptr: base.wrapping_add(at.unwrap_or(0)),
                    rows: r.len(),
                    cols: c.len(),
                    ld,
                    _matrix: PhantomData,
                });
            }
        }
        blocks
    }

    /// Rows in the block.
    pub fn rows(&self) -> usize {
        self.rows
    }

    /// Columns in the block.
    pub fn cols(&self) -> usize {
        self.cols
    }

    /// Distance between rows.
    pub fn ld(&self) -> usize {
        self.ld
    }

    /// Row `i` of the block, its `cols` values.
    ///
    /// # Panics
    /// If `i >= rows`.
    pub fn row(&mut self, i: usize) -> &mut [f32] {
        assert!(i < self.rows, "block row {i} of {}", self.rows);
        if self.cols == 0 {
            // An empty block's address may lie outside the matrix: not offset from.
            return &mut [];
        }
        // SAFETY: row i < rows of a block with columns lies in the matrix (checked at
        // construction: `fits`), and its elements only this BlockMut reaches; `&mut self` keeps
        // the row the only borrow.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.add(i * self.ld), self.cols) }
    }

    /// Element (0, 0), for the kernels that write the block: element (i, j) for i < rows and
    /// j < cols at `ptr.add(i · ld + j)` is valid for reads and writes and reached by no other
    /// handle while `self` is borrowed. An empty block's address may lie outside the matrix:
    /// the kernels return before they offset it when m or n is 0.
    #[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
    pub(crate) fn as_mut_ptr(&mut self) -> *mut f32 {
        self.ptr
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grid_blocks_write_their_own_elements() {
        let mut m = vec![0.0f32; 6 * 8];
        let rows = [0..2, 2..2, 2..6];
        let cols = [0..3, 3..5, 6..8];
        let blocks = BlockMut::grid(&mut m, 8, &rows, &cols);
        assert_eq!(blocks.len(), 9);
        for (k, mut b) in blocks.into_iter().enumerate() {
            for i in 0..b.rows() {
                b.row(i).fill(k as f32 + 1.0);
            }
        }
        for (i, row) in m.chunks(8).enumerate() {
            let r = if i < 2 { 0 } else { 2 };
            let want: Vec<f32> = (0..8)
                .map(|j| match j {
                    0..=2 => (r * 3 + 1) as f32,
                    3..=4 => (r * 3 + 2) as f32,
                    5 => 0.0,
                    _ => (r * 3 + 3) as f32,
                })
                .collect();
            assert_eq!(row, want, "row {i}");
        }
    }

    #[test]
    #[should_panic(expected = "overlap")]
    fn overlapping_columns_are_refused() {
        let mut m = vec![0.0f32; 16];
        BlockMut::grid(&mut m, 4, &[0..2, 2..4], &[0..2, 1..3]);
    }

    #[test]
    #[should_panic(expected = "outside")]
    fn a_block_past_the_matrix_is_refused() {
        let mut m = vec![0.0f32; 15];
        BlockMut::grid(&mut m, 4, &[0..2, 2..4], &[0..2, 2..4]);
    }

    #[test]
    #[should_panic(expected = "does not fit")]
    fn a_short_buffer_is_refused() {
        let mut m = vec![0.0f32; 7];
        BlockMut::new(&mut m, 2, 4, 4);
    }
}
