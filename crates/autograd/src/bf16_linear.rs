//! The weight products of the fused BERT layer in bf16-mixed precision, on the CPU's bf16
//! instructions: AMX-BF16 tiles where the CPU has them, else AVX512-BF16 (`vdpbf16ps`).
//!
//! The numbers are those of [`crate::Precision::linear`] (PyTorch's bf16 autocast): operands
//! rounded to bf16, products summed in f32, each product's result rounded to bf16; in the
//! backward pass the gradient reaching the product is rounded to bf16 and dx, dW and db come
//! out rounded to bf16. Only the summation order differs from the composed path (which runs the
//! f32 kernels on rounded operands), so a result may land one bf16 step away where an f32 sum
//! falls near a rounding boundary. Both operands are rounded as they are packed, so nothing is
//! rounded in a separate pass but the gradient (db sums it) and the results.

use scorekit_kernels::amx::{self, PackedProduct, PackedSplit, TileTerms};
use scorekit_kernels::bf16dot::{self, PackedBf16Dot};
use scorekit_kernels::train::bf16_round;

/// Whether the CPU has bf16 products for the fused layer (AMX-BF16 with the tile state
/// granted, or AVX512-BF16).
pub fn available() -> bool {
    Instructions::here().is_some()
}

/// The bf16 instructions the products run on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Instructions {
    /// AMX-BF16 tile products (`tdpbf16ps`).
    Tiles,
    /// AVX512-BF16 dot products (`vdpbf16ps`), for CPUs without AMX.
    Dot,
}

impl Instructions {
    /// The fastest this CPU has: tiles where AMX can run, else AVX512-BF16, else none.
    pub fn here() -> Option<Instructions> {
        if amx::available() {
            Some(Instructions::Tiles)
        } else if bf16dot::available() {
            Some(Instructions::Dot)
        } else {
            None
        }
    }
}

/// B = wᵀ for a `Linear` weight `w` `[n, k]`, rounded and packed for `on`.
fn packed_nk(w: &[f32], n: usize, k: usize, on: Instructions) -> Box<dyn PackedProduct> {
    match on {
        Instructions::Tiles => Box::new(PackedSplit::from_nk_as(w, n, k, TileTerms::Bf16)),
        Instructions::Dot => Box::new(PackedBf16Dot::from_nk(w, n, k)),
    }
}

/// B stored as k rows of n, rounded and packed for `on`.
fn packed_kn(b: &[f32], k: usize, n: usize, on: Instructions) -> Box<dyn PackedProduct> {
    match on {
        Instructions::Tiles => Box::new(PackedSplit::from_kn_as(b, k, n, TileTerms::Bf16)),
        Instructions::Dot => Box::new(PackedBf16Dot::from_kn(b, k, n)),
    }
}

/// `y = round(round(x)·round(w)ᵀ + round(bias))` for `x` `[m, k]`, `w` `[n, k]`, on `on`.
pub(crate) fn linear(
    x: &[f32],
    m: usize,
    w: &[f32],
    bias: &[f32],
    n: usize,
    k: usize,
    on: Instructions,
) -> Vec<f32> {
    let bias: Vec<f32> = bias.iter().map(|&b| bf16_round(b)).collect();
    packed_nk(w, n, k, on).gemm_round_bf16_new(m, x, k, &bias)
}

/// The gradients of [`linear`] for output gradient `g` `[m, n]`: dx `[m, k]`, dw `[n, k]`,
/// db `[n]`, each rounded to bf16 (from the rounded g, x and w).
///
/// `parts` > 1: the weight is that many linears of n/parts rows stacked (Q, K and V) that read
/// the same input, and dx is the f32 sum of their rounded dx, as autocast gives it (each
/// `Linear` casts its input to bf16 on its own, and the three casts' gradients are summed in
/// f32), not one rounding of the stacked product.
#[allow(clippy::too_many_arguments)]
pub(crate) fn grads(
    x: &[f32],
    w: &[f32],
    g: &[f32],
    m: usize,
    n: usize,
    k: usize,
    parts: usize,
    on: Instructions,
) -> (Vec<f32>, Vec<f32>, Vec<f32>) {
    debug_assert_eq!(n / parts * parts, n, "{n} rows in {parts} parts");
    if m == 0 {
        // No tokens: nothing flows back, and nothing to pack (a depth of 0).
        return (Vec::new(), vec![0f32; n * k], vec![0f32; n]);
    }
    let np = n / parts;
    let zeros = vec![0f32; k];
    // dx = Σ_parts round(g_part · w_part): g_part the part's columns of g (the products round
    // g as they pack it), w_part `[np, k]` as the k×n B of the product.
    let part = |p: usize| packed_kn(&w[p * np * k..(p + 1) * np * k], np, k, on);
    let mut dx = part(0).gemm_round_bf16_new(m, g, n, &zeros);
    for p in 1..parts {
        part(p).gemm_round_bf16(m, &g[p * np..], n, &mut dx, &zeros, true);
    }
    // dw = round(gᵀ · x): A = gᵀ `[n, m]`, read from g as it is; B = x (m rows of k).
    let dw = packed_kn(x, m, k, on).gemm_round_bf16_at_new(n, &g[..m * n], n, &zeros);
    (dx, dw, rounded_column_sums(g, m, n))
}

/// round(Σ round(g[i][j])) over the rows of `g` `[m, n]`, each column summed in f64 in row
/// order: the bias gradient from the rounded output gradient, with `column_sums`' arithmetic.
fn rounded_column_sums(g: &[f32], m: usize, n: usize) -> Vec<f32> {
    let mut sums = scorekit_kernels::train::column_sums(g, m, n, true);
    sums.iter_mut().for_each(|s| *s = bf16_round(*s));
    sums
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vals(len: usize, seed: u32) -> Vec<f32> {
        (0..len)
            .map(|i| (((i as u32).wrapping_mul(2654435761) ^ seed) % 10007) as f32 / 3001.0 - 1.6)
            .collect()
    }

    /// Within one bf16 step (the sums' order is the instructions', not the reference loop's),
    /// and a bf16 value where `rounded`.
    fn close(got: &[f32], want: &[f32], what: &str, rounded: bool) {
        assert_eq!(got.len(), want.len(), "{what}: length");
        for (i, (a, e)) in got.iter().zip(want).enumerate() {
            assert!(
                (a - e).abs() <= e.abs() * 2f32.powi(-7) + 1e-3,
                "{what}[{i}]: {a} vs {e}"
            );
            assert!(
                !rounded || *a == bf16_round(*a),
                "{what}[{i}] is not a bf16 value"
            );
        }
    }

    /// The forward product and the three gradients, stacked parts included, against loops over
    /// the rounded operands.
    #[test]
    fn products_and_gradients_are_those_of_the_rounded_operands() {
        let mut ran = false;
        if amx::available() {
            check_products_and_gradients(Instructions::Tiles);
            ran = true;
        }
        if bf16dot::available() {
            check_products_and_gradients(Instructions::Dot);
            ran = true;
        }
        if !ran {
            eprintln!("no bf16 products on this CPU");
        }
    }

    fn check_products_and_gradients(on: Instructions) {
        let (m, k, n, parts) = (37, 45, 3 * 22, 3);
        let r = |v: Vec<f32>| -> Vec<f32> { v.into_iter().map(bf16_round).collect() };
        let (x, w, b, g) = (vals(m * k, 1), vals(n * k, 2), vals(n, 3), vals(m * n, 4));
        let (xr, wr, br, gr) = (r(x.clone()), r(w.clone()), r(b.clone()), r(g.clone()));
        let y = linear(&x, m, &w, &b, n, k, on);
        let want_y: Vec<f32> = (0..m * n)
            .map(|e| {
                let (i, j) = (e / n, e % n);
                bf16_round((0..k).map(|t| xr[i * k + t] * wr[j * k + t]).sum::<f32>() + br[j])
            })
            .collect();
        close(&y, &want_y, "y", true);
        let (dx, dw, db) = grads(&x, &w, &g, m, n, k, parts, on);
        let np = n / parts;
        let want_dx: Vec<f32> = (0..m * k)
            .map(|e| {
                let (i, t) = (e / k, e % k);
                (0..parts)
                    .map(|p| {
                        let js = p * np..(p + 1) * np;
                        bf16_round(js.map(|j| gr[i * n + j] * wr[j * k + t]).sum())
                    })
                    .sum()
            })
            .collect();
        // dx sums three rounded products: not itself a bf16 value.
        close(&dx, &want_dx, "dx", false);
        let want_dw: Vec<f32> = (0..n * k)
            .map(|e| {
                let (j, t) = (e / k, e % k);
                bf16_round((0..m).map(|i| gr[i * n + j] * xr[i * k + t]).sum())
            })
            .collect();
        close(&dw, &want_dw, "dw", true);
        let want_db: Vec<f32> = (0..n)
            .map(|j| bf16_round((0..m).map(|i| gr[i * n + j]).sum()))
            .collect();
        close(&db, &want_db, "db", true);
    }

    /// A batch without tokens has zero gradients, not a panic (the f32 path's behaviour).
    #[test]
    fn no_tokens_no_panic() {
        let Some(on) = Instructions::here() else {
            return;
        };
        let (n, k) = (6, 5);
        let (dx, dw, db) = grads(&[], &vals(n * k, 2), &[], 0, n, k, 3, on);
        assert!(dx.is_empty());
        assert_eq!((dw, db), (vec![0f32; n * k], vec![0f32; n]));
    }
}
