//! The training run's random numbers: splitmix64, whose whole state is one u64 (saved in
//! checkpoints, so a resumed run draws what the uninterrupted one would have drawn).

use scorekit_kernels::splitmix::{keep_flags, mix, GAMMA};

/// splitmix64.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SplitMix {
    /// The state.
    pub state: u64,
}

impl SplitMix {
    /// A generator seeded with `seed`.
    pub fn new(seed: u64) -> Self {
        SplitMix { state: seed }
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(GAMMA);
        mix(self.state)
    }

    /// Dropout's keep decisions for the next `n` draws, with drop probability `p`, computed
    /// when asked for ([`KeepDraws::fill`]): the state moves past them now, as `n` calls of
    /// [`SplitMix::next_u64`] would. A fused layer asks only for the draws of the elements it
    /// computes (not those of padding), from the draw's index.
    pub fn keep_draws(&mut self, n: usize, p: f64) -> KeepDraws {
        let draws = KeepDraws {
            s0: self.state,
            threshold: (p * (1u64 << 24) as f64) as u64,
            n,
        };
        self.state = self.state.wrapping_add((n as u64).wrapping_mul(GAMMA));
        draws
    }

    /// Uniform in [0, 1) with 53 random bits.
    pub fn uniform(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// Standard normal (Box–Muller, one value per call).
    pub fn normal(&mut self) -> f64 {
        let u1 = 1.0 - self.uniform();
        let u2 = self.uniform();
        (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos()
    }

    /// A uniform index below `n` (`n` > 0).
    pub fn below(&mut self, n: usize) -> usize {
        (self.uniform() * n as f64) as usize
    }

    /// Fisher–Yates shuffle.
    pub fn shuffle<T>(&mut self, v: &mut [T]) {
        for i in (1..v.len()).rev() {
            let j = self.below(i + 1);
            v.swap(i, j);
        }
    }
}

/// A run of `n` draws of the generator read as dropout keep decisions: draw `i` keeps its
/// element when its top 24 bits reach `p`·2²⁴. Draw `i` depends only on the state before the
/// run and `i` (the state advances by a constant per draw), so any part of the run can be
/// computed alone, in parallel, and equals the sequential draws.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KeepDraws {
    /// The state before the first draw.
    s0: u64,
    /// Kept when `draw >> 40 >= threshold`.
    threshold: u64,
    /// Draws in the run.
    n: usize,
}

impl KeepDraws {
    /// Draws in the run.
    pub fn len(&self) -> usize {
        self.n
    }

    /// Whether the run is empty.
    pub fn is_empty(&self) -> bool {
        self.n == 0
    }

    /// The decisions of draws `i0..i0 + out.len()` into `out`, on the calling thread.
    ///
    /// # Panics
    /// If the range runs past the run.
    pub fn fill(&self, i0: usize, out: &mut [bool]) {
        assert!(
            i0.checked_add(out.len()).is_some_and(|end| end <= self.n),
            "draws {i0}..+{} of a run of {}",
            out.len(),
            self.n
        );
        let first = self
            .s0
            .wrapping_add((i0 as u64).wrapping_add(1).wrapping_mul(GAMMA));
        keep_flags(first, self.threshold, out);
    }

    /// Every decision of the run, computed in parallel.
    pub fn all(&self) -> Vec<bool> {
        use rayon::prelude::*;
        let mut out = vec![false; self.n];
        out.par_chunks_mut(1 << 14)
            .enumerate()
            .for_each(|(c, chunk)| self.fill(c << 14, chunk));
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shuffles_are_permutations_and_repeat_with_the_seed() {
        let mut a: Vec<usize> = (0..50).collect();
        let mut b = a.clone();
        SplitMix::new(7).shuffle(&mut a);
        SplitMix::new(7).shuffle(&mut b);
        assert_eq!(a, b);
        assert_ne!(a, (0..50).collect::<Vec<_>>());
        let mut s = a.clone();
        s.sort();
        assert_eq!(s, (0..50).collect::<Vec<_>>());
        let mut r = SplitMix::new(1);
        let xs: Vec<f64> = (0..20000).map(|_| r.normal()).collect();
        let mean = xs.iter().sum::<f64>() / xs.len() as f64;
        let var = xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / xs.len() as f64;
        assert!(
            mean.abs() < 0.03 && (var - 1.0).abs() < 0.05,
            "{mean} {var}"
        );
    }

    #[test]
    fn keep_draws_equal_sequential_draws() {
        for (n, p) in [(0, 0.1), (1, 0.1), (5, 0.5), (16_384, 0.1), (100_003, 0.3)] {
            let mut seq = SplitMix::new(0xDEAD_BEEF ^ n as u64);
            let mut par = seq;
            let threshold = (p * (1u64 << 24) as f64) as u64;
            let want: Vec<bool> = (0..n).map(|_| seq.next_u64() >> 40 >= threshold).collect();
            let draws = par.keep_draws(n, p);
            assert_eq!(draws.all(), want, "n = {n}");
            assert_eq!(par.state, seq.state, "n = {n}");
            assert_eq!(par.next_u64(), seq.next_u64());
            // Any part alone, at any offset, equals the same part of the run.
            if n > 40 {
                let mut part = vec![false; 33];
                draws.fill(7, &mut part);
                assert_eq!(part, want[7..40]);
            }
            let kept = want.iter().filter(|&&k| k).count() as f64;
            if n > 10_000 {
                assert!(
                    (kept / n as f64 - (1.0 - p)).abs() < 0.01,
                    "n = {n}: {kept}"
                );
            }
        }
    }

    #[test]
    #[should_panic(expected = "draws 3..+8 of a run of 10")]
    fn a_part_past_the_run_is_refused() {
        SplitMix::new(1)
            .keep_draws(10, 0.1)
            .fill(3, &mut [false; 8]);
    }
}
