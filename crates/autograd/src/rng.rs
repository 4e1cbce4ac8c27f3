//! The training run's random numbers: splitmix64, whose whole state is one u64 (saved in
//! checkpoints, so a resumed run draws what the uninterrupted one would have drawn).

/// splitmix64's increment of the state per draw.
const GAMMA: u64 = 0x9E37_79B9_7F4A_7C15;

/// splitmix64's output function of a state.
fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

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

    /// The next `n` draws, each mapped through `f`, computed in parallel: draw `i` depends only
    /// on the state and `i` (the state advances by a constant per draw), so the result and the
    /// state afterwards are those of `n` calls of [`SplitMix::next_u64`].
    pub fn map_draws<T: Send>(&mut self, n: usize, f: impl Fn(u64) -> T + Sync) -> Vec<T> {
        use rayon::prelude::*;
        let s0 = self.state;
        let out = (0..n)
            .into_par_iter()
            .with_min_len(1 << 14)
            .map(|i| f(mix(s0.wrapping_add((i as u64 + 1).wrapping_mul(GAMMA)))))
            .collect();
        self.state = s0.wrapping_add((n as u64).wrapping_mul(GAMMA));
        out
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
    fn parallel_draws_equal_sequential_draws() {
        for n in [0, 1, 5, 16_384, 100_003] {
            let mut seq = SplitMix::new(0xDEAD_BEEF ^ n as u64);
            let mut par = seq;
            let want: Vec<u64> = (0..n).map(|_| seq.next_u64() >> 40).collect();
            assert_eq!(par.map_draws(n, |r| r >> 40), want, "n = {n}");
            assert_eq!(par.state, seq.state, "n = {n}");
            assert_eq!(par.next_u64(), seq.next_u64());
        }
    }
}
