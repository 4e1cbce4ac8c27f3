//! Python's `random` as far as `random.seed(int)` then `random.sample(population, k)` go: the
//! Mersenne Twister (MT19937) seeded by `init_by_array` with the integer's 32-bit words, and
//! CPython 3.11's `sample` (a pool for small populations, rejection of repeats for large ones),
//! so that run_llm.py's k-shot demonstrations (`random.seed(1234)`, `random.sample(train, k)`)
//! are the same examples here.

/// MT19937 with CPython's integer seeding.
pub struct PyRandom {
    state: [u32; 624],
    index: usize,
}

impl PyRandom {
    /// `random.seed(seed)` for a non-negative integer seed.
    pub fn seed(seed: u64) -> Self {
        // CPython: the absolute value's 32-bit words, least significant first (at least one).
        let mut key = vec![seed as u32];
        if seed >> 32 != 0 {
            key.push((seed >> 32) as u32);
        }
        let mut r = PyRandom {
            state: [0; 624],
            index: 624,
        };
        r.init_genrand(19_650_218);
        let (mut i, mut j) = (1usize, 0usize);
        for _ in 0..624.max(key.len()) {
            let prev = r.state[i - 1] ^ (r.state[i - 1] >> 30);
            r.state[i] = (r.state[i] ^ prev.wrapping_mul(1_664_525))
                .wrapping_add(key[j])
                .wrapping_add(j as u32);
            i += 1;
            j += 1;
            if i >= 624 {
                r.state[0] = r.state[623];
                i = 1;
            }
            if j >= key.len() {
                j = 0;
            }
        }
        for _ in 0..623 {
            let prev = r.state[i - 1] ^ (r.state[i - 1] >> 30);
            r.state[i] = (r.state[i] ^ prev.wrapping_mul(1_566_083_941)).wrapping_sub(i as u32);
            i += 1;
            if i >= 624 {
                r.state[0] = r.state[623];
                i = 1;
            }
        }
        r.state[0] = 0x8000_0000;
        r
    }

    fn init_genrand(&mut self, s: u32) {
        self.state[0] = s;
        for i in 1..624 {
            let prev = self.state[i - 1] ^ (self.state[i - 1] >> 30);
            self.state[i] = 1_812_433_253u32.wrapping_mul(prev).wrapping_add(i as u32);
        }
        self.index = 624;
    }

    /// The next 32 random bits (`genrand_uint32`).
    pub fn next_u32(&mut self) -> u32 {
        if self.index >= 624 {
            for k in 0..624 {
                let y = (self.state[k] & 0x8000_0000) | (self.state[(k + 1) % 624] & 0x7fff_ffff);
                let mag = if y & 1 == 1 { 0x9908_b0df } else { 0 };
                self.state[k] = self.state[(k + 397) % 624] ^ (y >> 1) ^ mag;
            }
            self.index = 0;
        }
        let mut y = self.state[self.index];
        self.index += 1;
        y ^= y >> 11;
        y ^= (y << 7) & 0x9d2c_5680;
        y ^= (y << 15) & 0xefc6_0000;
        y ^ (y >> 18)
    }

    /// `getrandbits(k)` for 1 ≤ k ≤ 32.
    fn getrandbits(&mut self, k: u32) -> u32 {
        self.next_u32() >> (32 - k)
    }

    /// `_randbelow(n)` for 1 ≤ n < 2³²: rejection sampling on `n.bit_length()` bits.
    pub fn randbelow(&mut self, n: u32) -> u32 {
        let k = 32 - n.leading_zeros();
        loop {
            let r = self.getrandbits(k);
            if r < n {
                return r;
            }
        }
    }

    /// The indices `random.sample(range(n), k)` gives (population indices in selection order).
    /// `None` when `k > n` (Python raises "Sample larger than population").
    pub fn sample(&mut self, n: usize, k: usize) -> Option<Vec<usize>> {
        if k > n || n >= 1 << 32 {
            return None;
        }
        // CPython 3.11: setsize = 21, plus 4 ** ceil(log(3k, 4)) when k > 5.
        let mut setsize = 21usize;
        if k > 5 {
            setsize += 4usize.pow(((k * 3) as f64).log(4.0).ceil() as u32);
        }
        let mut out = Vec::with_capacity(k);
        if n <= setsize {
            let mut pool: Vec<usize> = (0..n).collect();
            for i in 0..k {
                let j = self.randbelow((n - i) as u32) as usize;
                out.push(pool[j]);
                pool[j] = pool[n - i - 1];
            }
        } else {
            let mut selected = std::collections::HashSet::new();
            for _ in 0..k {
                let mut j = self.randbelow(n as u32) as usize;
                while selected.contains(&j) {
                    j = self.randbelow(n as u32) as usize;
                }
                selected.insert(j);
                out.push(j);
            }
        }
        Some(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // The values CPython 3.11 prints for the same calls.
    #[test]
    fn seed_and_sample_are_cpythons() {
        let mut r = PyRandom::seed(1234);
        assert_eq!(
            [r.next_u32(), r.next_u32(), r.next_u32()],
            [4150886329, 3342196574, 1892932127]
        );
        assert_eq!(
            PyRandom::seed(1234).sample(3404, 3),
            Some(vec![3187, 1805, 478])
        );
        assert_eq!(
            PyRandom::seed(2345).sample(3404, 5),
            Some(vec![2663, 2118, 2043, 2512, 834])
        );
        // The pool branch (a population no larger than the set size).
        assert_eq!(PyRandom::seed(7).sample(10, 4), Some(vec![5, 2, 6, 9]));
        let thirty = PyRandom::seed(1234).sample(3404, 30).unwrap();
        assert_eq!(&thirty[..6], &[3187, 1805, 478, 30, 371, 3305]);
        assert_eq!(thirty[29], 468);
        assert_eq!(PyRandom::seed(1).sample(3, 4), None);
    }
}
