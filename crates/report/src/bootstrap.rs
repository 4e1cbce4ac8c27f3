//! Seeded, deterministic percentile-bootstrap 95% intervals for rates and means.
//!
//! Resample `i` draws from its own generator seeded by (seed, i), so the result does not depend
//! on the number of threads, and a merge of shards recomputes exactly the single-run interval.

use rayon::prelude::*;
use scorekit_kernels::resample::{count_block, Xoshiro256, LANES};
use serde::{Deserialize, Serialize};
use std::sync::{Arc, OnceLock};

/// A mean (a rate when the values are 0/1) with its sample size and 95% bootstrap interval.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Estimate {
    /// The mean of the values (NaN-free; 0 items give `None` upstream of here).
    pub value: f64,
    /// Number of values.
    pub n: usize,
    /// Lower end of the 95% percentile-bootstrap interval.
    pub ci_low: f64,
    /// Upper end of the 95% percentile-bootstrap interval.
    pub ci_high: f64,
}

/// Mean of `values` with a percentile-bootstrap 95% interval from `resamples` resamples.
///
/// Returns `None` for no values. With `resamples == 0` the interval collapses to the mean.
pub fn bootstrap_mean(values: &[f64], resamples: usize, seed: u64) -> Option<Estimate> {
    let n = values.len();
    if n == 0 {
        return None;
    }
    let value = values.iter().sum::<f64>() / n as f64;
    if resamples == 0 {
        return Some(Estimate {
            value,
            n,
            ci_low: value,
            ci_high: value,
        });
    }
    let mut means: Vec<f64> = (0..resamples as u64)
        .into_par_iter()
        .map(|i| {
            let mut rng = Xoshiro256::new(seed, i);
            let mut sum = 0.0;
            for _ in 0..n {
                sum += values[rng.below(n as u64) as usize];
            }
            sum / n as f64
        })
        .collect();
    means.sort_by(f64::total_cmp);
    Some(Estimate {
        value,
        n,
        ci_low: percentile(&means, 2.5),
        ci_high: percentile(&means, 97.5),
    })
}

/// [`bootstrap_mean`] of 0/1 values given as booleans (a rate), with the same result bit for
/// bit, faster: a resample's sum of 0.0/1.0 values is an exact integer, so it is counted in
/// integers, and eight resamples' generators are stepped side by side, which the processor
/// (and, with AVX2 or AVX-512, its vector unit) runs in parallel instead of one dependent chain at
/// a time (`scorekit_kernels::resample::count_block`).
pub fn bootstrap_rate(bits: &[bool], resamples: usize, seed: u64) -> Option<Estimate> {
    let n = bits.len();
    if n == 0 {
        return None;
    }
    let ones = bits.iter().filter(|&&b| b).count();
    let value = ones as f64 / n as f64;
    if resamples == 0 || n as u64 > u64::from(u32::MAX) {
        let values: Vec<f64> = bits.iter().map(|&b| b as u8 as f64).collect();
        return bootstrap_mean(&values, resamples, seed);
    }
    // 0/1 as 32-bit words: what the AVX-512 kernel gathers.
    let ones: Vec<u32> = bits.iter().map(|&b| u32::from(b)).collect();
    let blocks = resamples.div_ceil(LANES);
    let mut means: Vec<f64> = (0..blocks)
        .into_par_iter()
        .flat_map_iter(|b| {
            let first = (b * LANES) as u64;
            let counts = count_block(&ones, seed, first);
            let lanes = LANES.min(resamples - b * LANES);
            counts
                .into_iter()
                .take(lanes)
                .map(move |c| c as f64 / n as f64)
        })
        .collect();
    means.sort_by(f64::total_cmp);
    Some(Estimate {
        value,
        n,
        ci_low: percentile(&means, 2.5),
        ci_high: percentile(&means, 97.5),
    })
}

/// [`bootstrap_rate`] for many rates with one seed and one number of resamples, with the same
/// results bit for bit, sharing the work between rates of the same size.
///
/// Resample `i`'s draws depend only on (seed, `i`, n), not on the values: so for each size n
/// the number of times each resample draws each position is counted once (a table of n × resamples
/// counts, one byte each), and a rate's resampled counts of ones are then column sums: the
/// columns of its ones, or n minus those of its zeros, whichever are fewer — vector additions
/// instead of n generator steps per resample. MINT computes intervals for thousands of groups
/// whose sizes repeat (every configuration runs the same tasks).
/// Tables stop at [`RateBootstrap::MAX_TABLE_BYTES`]; a size whose table would be larger, or
/// where a position is drawn more than 255 times, goes to [`bootstrap_rate`].
pub struct RateBootstrap {
    resamples: usize,
    seed: u64,
    tables: std::sync::Mutex<std::collections::HashMap<usize, Arc<OnceLock<Option<DrawTable>>>>>,
    limit: usize,
}

/// How often each resample draws each position, for one size n, position by position.
struct DrawTable {
    /// Column `k` (positions `k·R .. (k+1)·R`, R resamples): how often each resample draws `k`.
    columns: Vec<u8>,
}

impl RateBootstrap {
    /// Memory all tables together may take.
    pub const MAX_TABLE_BYTES: usize = 64 << 20;

    /// Intervals from `resamples` resamples seeded by `seed`.
    pub fn new(resamples: usize, seed: u64) -> Self {
        RateBootstrap {
            resamples,
            seed,
            tables: Default::default(),
            limit: Self::MAX_TABLE_BYTES,
        }
    }

    /// `bootstrap_rate(bits, resamples, seed)`.
    pub fn estimate(&self, bits: &[bool]) -> Option<Estimate> {
        let n = bits.len();
        let cell = self.table(n);
        let Some(Some(table)) = cell.as_deref().and_then(OnceLock::get) else {
            return bootstrap_rate(bits, self.resamples, self.seed);
        };
        let ones = bits.iter().filter(|&&b| b).count();
        // Each resample draws n positions, so its count of ones is the sum of the ones' columns,
        // or n minus the sum of the zeros' columns: add whichever columns are fewer. (Sums fit
        // in u16: they are at most n, and `table` takes n < 2^16.)
        let r = self.resamples;
        let ones_side = ones <= n - ones;
        let mut sums = vec![0u16; r];
        for (k, &b) in bits.iter().enumerate() {
            if b == ones_side {
                let column = &table.columns[k * r..(k + 1) * r];
                for (sum, &c) in sums.iter_mut().zip(column) {
                    *sum += u16::from(c);
                }
            }
        }
        let mut means: Vec<f64> = sums
            .into_iter()
            .map(|c| {
                let c = if ones_side {
                    usize::from(c)
                } else {
                    n - usize::from(c)
                };
                c as f64 / n as f64
            })
            .collect();
        means.sort_by(f64::total_cmp);
        Some(Estimate {
            value: ones as f64 / n as f64,
            n,
            ci_low: percentile(&means, 2.5),
            ci_high: percentile(&means, 97.5),
        })
    }

    /// The cell of the draw table of size `n`, filled by the first caller (with None where a
    /// position is drawn more than 255 times); None where [`bootstrap_rate`] applies instead
    /// (no values, no resamples, n of 2^16 or more, over the memory limit).
    fn table(&self, n: usize) -> Option<Arc<OnceLock<Option<DrawTable>>>> {
        let bytes = n.checked_mul(self.resamples)?;
        if n == 0 || self.resamples == 0 || n > usize::from(u16::MAX) {
            return None;
        }
        let cell = {
            let mut tables = self.tables.lock().unwrap_or_else(|e| e.into_inner());
            if let Some(cell) = tables.get(&n) {
                cell.clone()
            } else {
                // A table of size k takes k × resamples bytes.
                let taken = tables.keys().sum::<usize>() * self.resamples;
                if taken + bytes > self.limit {
                    return None;
                }
                tables.entry(n).or_default().clone()
            }
        };
        cell.get_or_init(|| self.build(n));
        Some(cell)
    }

    /// Count resample `i`'s draws of every position, as [`bootstrap_rate`] draws them.
    fn build(&self, n: usize) -> Option<DrawTable> {
        let mut counts = vec![0u8; self.resamples * n];
        let ok = counts.par_chunks_mut(n).enumerate().all(|(i, row)| {
            let mut rng = Xoshiro256::new(self.seed, i as u64);
            for _ in 0..n {
                let k = rng.below(n as u64) as usize;
                match row[k].checked_add(1) {
                    Some(c) => row[k] = c,
                    None => return false,
                }
            }
            true
        });
        if !ok {
            return None;
        }
        // Resample by resample is how the draws come; position by position is how `estimate`
        // reads them.
        let r = self.resamples;
        let mut columns = vec![0u8; r * n];
        for (i, row) in counts.chunks_exact(n).enumerate() {
            for (k, &c) in row.iter().enumerate() {
                columns[k * r + i] = c;
            }
        }
        Some(DrawTable { columns })
    }
}

/// Median (NaN when empty).
pub fn median(v: &mut [f64]) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    let n = v.len();
    if n == 0 {
        f64::NAN
    } else if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// Percentile with linear interpolation between order statistics (numpy's default method).
fn percentile(sorted: &[f64], p: f64) -> f64 {
    let pos = p / 100.0 * (sorted.len() - 1) as f64;
    let lo = pos.floor() as usize;
    let hi = pos.ceil() as usize;
    sorted[lo] + (sorted[hi] - sorted[lo]) * (pos - lo as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bits(ones: usize, zeros: usize) -> Vec<f64> {
        let mut v = vec![1.0; ones];
        v.extend(std::iter::repeat_n(0.0, zeros));
        v
    }

    #[test]
    fn binomial_case_by_hand() {
        // 5 of 10 right: a resampled rate is Binomial(10, 0.5) / 10.
        // P(X <= 1) = 11/1024 = 0.0107 < 0.025 < P(X <= 2) = 56/1024 = 0.0547, so the 2.5th
        // percentile is 0.2; by symmetry the 97.5th is 0.8.
        let e = bootstrap_mean(&bits(5, 5), 20_000, 7).unwrap();
        assert_eq!(e.value, 0.5);
        assert_eq!(e.n, 10);
        assert_eq!((e.ci_low, e.ci_high), (0.2, 0.8));
    }

    #[test]
    fn skewed_binomial_case_by_hand() {
        // 18 of 20 right: X ~ Binomial(20, 0.9). P(X <= 15) = 0.0432, P(X <= 14) = 0.0113, so the
        // 2.5th percentile is 15/20; P(X <= 19) = 0.878 < 0.975, so the 97.5th is 20/20.
        let e = bootstrap_mean(&bits(18, 2), 20_000, 3).unwrap();
        assert_eq!((e.ci_low, e.ci_high), (0.75, 1.0));
    }

    #[test]
    fn deterministic_for_a_seed_and_different_across_seeds() {
        let v: Vec<f64> = (0..97).map(|i| ((i * 37) % 11) as f64 / 10.0).collect();
        let a = bootstrap_mean(&v, 1000, 42).unwrap();
        assert_eq!(a, bootstrap_mean(&v, 1000, 42).unwrap());
        assert_ne!(a, bootstrap_mean(&v, 1000, 43).unwrap());
        assert!(a.ci_low < a.value && a.value < a.ci_high);
    }

    #[test]
    fn degenerate_cases() {
        assert!(bootstrap_mean(&[], 1000, 0).is_none());
        let e = bootstrap_mean(&bits(4, 0), 1000, 0).unwrap();
        assert_eq!((e.value, e.ci_low, e.ci_high), (1.0, 1.0, 1.0));
        let e = bootstrap_mean(&bits(1, 1), 0, 0).unwrap();
        assert_eq!((e.ci_low, e.ci_high), (0.5, 0.5));
    }

    #[test]
    fn shared_tables_give_bootstrap_rate_bit_for_bit() {
        let mut g = Xoshiro256::new(9, 1);
        for (resamples, seed) in [(1000, 0), (13, 42), (0, 7)] {
            let boot = RateBootstrap::new(resamples, seed);
            // Sizes repeat (tables reused) with different values; 1 and 586 on their own.
            for n in [97, 1, 97, 586, 97, 7, 7, 0] {
                for share in [0, 1, 3] {
                    let bits: Vec<bool> = (0..n).map(|_| g.below(4) < share).collect();
                    assert_eq!(
                        boot.estimate(&bits),
                        bootstrap_rate(&bits, resamples, seed),
                        "n {n} resamples {resamples} seed {seed} share {share}"
                    );
                }
            }
        }
        // Over the memory limit: the plain path, same numbers.
        let mut boot = RateBootstrap::new(200, 3);
        boot.limit = 200 * 50;
        for n in [40, 60, 40, 60] {
            let bits: Vec<bool> = (0..n).map(|_| g.below(2) == 0).collect();
            assert_eq!(boot.estimate(&bits), bootstrap_rate(&bits, 200, 3), "n {n}");
        }
        assert_eq!(boot.tables.lock().unwrap().len(), 1, "only n = 40 fits");
    }

    #[test]
    fn rates_equal_the_general_mean_bit_for_bit() {
        let mut g = Xoshiro256::new(5, 0);
        for (n, resamples) in [
            (1, 1000),
            (7, 13),
            (97, 1000),
            (586, 999),
            (4102, 200),
            (3, 0),
        ] {
            let bits: Vec<bool> = (0..n).map(|_| g.below(3) == 0).collect();
            let values: Vec<f64> = bits.iter().map(|&b| b as u8 as f64).collect();
            for seed in [0, 42] {
                assert_eq!(
                    bootstrap_rate(&bits, resamples, seed),
                    bootstrap_mean(&values, resamples, seed),
                    "n {n} resamples {resamples} seed {seed}"
                );
            }
        }
        assert!(bootstrap_rate(&[], 10, 0).is_none());
    }

    #[test]
    fn percentile_interpolates_like_numpy() {
        // numpy.percentile([0, 1, 2, 3], 2.5) == 0.075
        assert!((percentile(&[0.0, 1.0, 2.0, 3.0], 2.5) - 0.075).abs() < 1e-12);
    }
}
