//! Fisher's exact test on a 2x2 table, two-sided, as `scipy.stats.fisher_exact(table).pvalue`
//! computes it (scipy 1.17): given the margins, the `[0][0]` cell is hypergeometric, and the
//! p-value is the probability of the tables no more probable than the observed one, "no more"
//! with scipy's relative tolerance 1e-14 (pmf(k) ≤ pmf(observed)·(1 + 1e-14)), capped at 1.
//!
//! scipy finds the far tail by a binary search and sums it with Boost's cdf; here the support is
//! walked outward from the mode with probabilities relative to the mode's, which never overflow
//! and lose nothing to the tiny normalising constant of large tables. The ratios between
//! neighbours are exact integers' quotients, and the walk runs in double-double arithmetic
//! (error ~1e-30 per step), so tables that are equally probable in exact arithmetic are found
//! equal here, as scipy's tolerance means them to be, however many steps apart they lie.

/// Two-sided Fisher exact p-value, as scipy's `fisher_exact(table).pvalue`; 1.0 when a margin is 0.
///
/// Time grows with the spread of the distribution (about √ of the counts: the walk stops where
/// the probabilities relative to the mode underflow). A p-value below ~1e-308 of the mode's
/// probability is returned as 0. NaN for a table of more than 2⁴⁰ (~1.1e12) observations, where
/// the walk would take minutes and its integer ratios are no longer exact.
pub fn fisher_exact_two_sided(table: [[u64; 2]; 2]) -> f64 {
    const GAMMA: f64 = 1.0 + 1e-14;
    const MAX_TOTAL: u128 = 1 << 40;
    let [[a, b], [c, d]] = table.map(|row| row.map(u128::from));
    let (n1, n2, n) = (a + b, c + d, a + c);
    if n1 == 0 || n2 == 0 || n == 0 || b + d == 0 {
        // scipy: a row or column of zeros leaves one table possible.
        return 1.0;
    }
    if n1 + n2 > MAX_TOTAL {
        return f64::NAN;
    }
    let walk = Walk { n1, n2, n };
    let (lo, hi) = (n.saturating_sub(n2), n.min(n1));
    // The mode of the hypergeometric distribution (scipy's `mode`), within the support.
    let mode = ((n + 1) * (n1 + 1) / (n1 + n2 + 2)).clamp(lo, hi);

    // Weight of the observed table relative to the mode's (0 where the walk underflowed first).
    let observed = if a >= mode {
        walk.up(mode).find(|(k, _)| *k == a)
    } else {
        walk.down(mode).find(|(k, _)| *k == a)
    }
    .map_or(0.0, |(_, w)| w.hi);
    let threshold = observed * GAMMA;
    if threshold >= 1.0 {
        // As probable as the mode: every table counts (scipy returns 1.0 here).
        return 1.0;
    }

    let (mut total, mut extreme) = (0.0, 0.0);
    let tails = walk.up(mode).chain(walk.down(mode).skip(1));
    for w in tails.map(|(_, w)| w.hi) {
        total += w;
        if w <= threshold {
            extreme += w;
        }
    }
    (extreme / total).min(1.0)
}

/// The hypergeometric law of the `[0][0]` cell: row sums n1, n2, first column sum n.
#[derive(Clone, Copy)]
struct Walk {
    n1: u128,
    n2: u128,
    n: u128,
}

impl Walk {
    /// (k, pmf(k)/pmf(mode)) for k = mode, mode+1, … up to the support's end or underflow.
    fn up(self, mode: u128) -> impl Iterator<Item = (u128, Dd)> {
        let hi = self.n.min(self.n1);
        let mut state = Some((mode, Dd::ONE));
        std::iter::from_fn(move || {
            let (k, w) = state?;
            state = (k < hi).then(|| {
                // pmf(k+1)/pmf(k) = (n1 − k)(n − k) / ((k + 1)(n2 − n + k + 1)); k ≥ n − n2.
                let num = ((self.n1 - k) * (self.n - k)) as f64;
                let den = ((k + 1) * (self.n2 + k + 1 - self.n)) as f64;
                (k + 1, w.mul(num).div(den))
            });
            state = state.filter(|(_, w)| w.hi > 0.0);
            Some((k, w))
        })
    }

    /// (k, pmf(k)/pmf(mode)) for k = mode, mode−1, … down to the support's start or underflow.
    fn down(self, mode: u128) -> impl Iterator<Item = (u128, Dd)> {
        let lo = self.n.saturating_sub(self.n2);
        let mut state = Some((mode, Dd::ONE));
        std::iter::from_fn(move || {
            let (k, w) = state?;
            state = (k > lo).then(|| {
                // pmf(k−1)/pmf(k) = k(n2 − n + k) / ((n1 − k + 1)(n − k + 1)); k > n − n2.
                let num = (k * (self.n2 + k - self.n)) as f64;
                let den = ((self.n1 + 1 - k) * (self.n + 1 - k)) as f64;
                (k - 1, w.mul(num).div(den))
            });
            state = state.filter(|(_, w)| w.hi > 0.0);
            Some((k, w))
        })
    }
}

/// A double-double: hi + lo with |lo| ≤ ulp(hi)/2, about 106 bits of precision.
#[derive(Clone, Copy, Debug)]
struct Dd {
    hi: f64,
    lo: f64,
}

impl Dd {
    const ONE: Dd = Dd { hi: 1.0, lo: 0.0 };

    /// hi + lo renormalised, given |hi| ≥ |lo|.
    fn quick(hi: f64, lo: f64) -> Dd {
        let s = hi + lo;
        Dd {
            hi: s,
            lo: lo - (s - hi),
        }
    }

    /// self · b (the product hi·b exactly, by a fused multiply-add).
    fn mul(self, b: f64) -> Dd {
        let p = self.hi * b;
        let e = self.hi.mul_add(b, -p) + self.lo * b;
        Dd::quick(p, e)
    }

    /// self / b: one quotient, its exact remainder, and a correction.
    fn div(self, b: f64) -> Dd {
        let q1 = self.hi / b;
        let p = q1 * b;
        let p_err = q1.mul_add(b, -p);
        // (hi − p) is exact when q1 is the rounded quotient (Sterbenz).
        let r = (self.hi - p) - p_err + self.lo;
        Dd::quick(q1, r / b)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Exact rationals for small tables: numerators over the common C(M, n).
    fn exact(table: [[u64; 2]; 2]) -> f64 {
        fn comb(n: u64, k: u64) -> f64 {
            (0..k).fold(1.0, |c, i| c * (n - i) as f64 / (i + 1) as f64)
        }
        let [[a, b], [c, d]] = table;
        let (n1, n2, n) = (a + b, c + d, a + c);
        let p = |k: u64| comb(n1, k).round() * comb(n2, n - k).round();
        let support: Vec<u64> = (n.saturating_sub(n2)..=n.min(n1)).collect();
        let p0 = p(a);
        let total: f64 = support.iter().map(|&k| p(k)).sum();
        let tail: f64 = support.iter().map(|&k| p(k)).filter(|&x| x <= p0).sum();
        tail / total
    }

    #[test]
    fn zero_margins_give_one() {
        for t in [
            [[0, 0], [0, 0]],
            [[0, 0], [3, 4]],
            [[4, 0], [0, 0]],
            [[0, 3], [0, 5]],
            [[2, 0], [7, 0]],
        ] {
            assert_eq!(fisher_exact_two_sided(t), 1.0, "{t:?}");
        }
    }

    #[test]
    fn the_mode_gives_one_and_ties_count() {
        assert_eq!(fisher_exact_two_sided([[3, 3], [3, 3]]), 1.0);
        assert_eq!(fisher_exact_two_sided([[1, 1], [1, 1]]), 1.0);
        // [[1,0],[0,1]]: both tables have probability 1/2.
        assert_eq!(fisher_exact_two_sided([[1, 0], [0, 1]]), 1.0);
        // Symmetric margins: the mirrored table is exactly as probable and counts.
        let p = fisher_exact_two_sided([[5, 0], [0, 5]]);
        assert!((p - 2.0 / 252.0).abs() < 1e-15, "{p}");
        assert_eq!(p, fisher_exact_two_sided([[0, 5], [5, 0]]));
    }

    #[test]
    fn small_tables_match_exact_sums() {
        for t in [
            [[1, 9], [11, 3]],
            [[8, 2], [1, 5]],
            [[7, 12], [0, 1]],
            [[12, 5], [29, 2]],
            [[2, 7], [8, 2]],
        ] {
            let (got, want) = (fisher_exact_two_sided(t), exact(t));
            assert!((got - want).abs() <= 1e-13 * want, "{t:?}: {got} vs {want}");
        }
        // Exact rational sums (Python fractions), rounded once.
        let p = fisher_exact_two_sided([[1, 9], [11, 3]]);
        assert!((p - 0.002_759_456_185_220_083_6).abs() <= 1e-15, "{p}");
        let p = fisher_exact_two_sided([[500, 120], [130, 480]]);
        assert!((p - 3.320_427_768_079_721e-102).abs() <= 1e-12 * p, "{p}");
    }

    #[test]
    fn large_tables_are_finite_and_symmetric() {
        // Transposing, swapping rows or columns changes nothing.
        for t in [
            [[2000, 1500], [1800, 3000]],
            [[1000, 3], [2, 0]],
            [[4000, 1], [3999, 2]],
        ] {
            let [[a, b], [c, d]] = t;
            let p = fisher_exact_two_sided(t);
            assert!((0.0..=1.0).contains(&p));
            for other in [
                [[a, c], [b, d]],
                [[c, d], [a, b]],
                [[b, a], [d, c]],
                [[d, c], [b, a]],
            ] {
                let q = fisher_exact_two_sided(other);
                assert!(
                    (p - q).abs() <= 1e-12 * p.max(1e-300),
                    "{t:?} {p} vs {other:?} {q}"
                );
            }
        }
    }

    #[test]
    fn huge_counts_do_not_panic() {
        assert!(fisher_exact_two_sided([[u64::MAX, 0], [0, u64::MAX]]).is_nan());
        assert!(fisher_exact_two_sided([[1 << 40, 1], [1, 1]]).is_nan());
        assert_eq!(fisher_exact_two_sided([[u64::MAX, 0], [0, 0]]), 1.0);
        // Far in the tail of a large table: the walk underflows before the observed cell.
        assert_eq!(fisher_exact_two_sided([[1 << 20, 0], [0, 1 << 20]]), 0.0);
        let p = fisher_exact_two_sided([[1 << 20, 1 << 20], [1 << 20, 1 << 20]]);
        assert_eq!(p, 1.0);
    }

    #[test]
    fn double_double_keeps_the_bits() {
        // (1/3)·3 is exactly 1 within 1e-30, where plain doubles leave an ulp.
        let third = Dd::ONE.div(3.0);
        let back = third.mul(3.0);
        assert!(((back.hi - 1.0) + back.lo).abs() < 1e-30, "{back:?}");
    }
}
