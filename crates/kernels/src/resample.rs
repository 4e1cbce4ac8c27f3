//! The bootstrap's resampling: the xoshiro256** generator of `scorekit-report`'s percentile
//! bootstrap, and the kernel that counts the ones eight resamples draw side by side (AVX-512F
//! gather, AVX2, or plain lane-wise code), for `bootstrap_rate`. Its measured reason is in
//! BENCHMARKS.md (the bootstrap rows); the counts are exact integers, so every path gives the same
//! intervals bit for bit.

/// xoshiro256** seeded through splitmix64: small, fast, and stable across versions and platforms.
/// The one definition of the bootstrap's generator: `scorekit-report`'s `bootstrap_mean` and its
/// draw tables step it one by one, [`count_block`] eight side by side.
pub struct Xoshiro256([u64; 4]);

impl Xoshiro256 {
    /// Generator `stream` of `seed` (resample `i` of a bootstrap uses stream `i`).
    pub fn new(seed: u64, stream: u64) -> Self {
        let mut sm = seed ^ stream.wrapping_mul(0x9E37_79B9_7F4A_7C15).rotate_left(17);
        let mut next = || {
            sm = sm.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = sm;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            z ^ (z >> 31)
        };
        Xoshiro256([next(), next(), next(), next()])
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        let s = &mut self.0;
        let result = s[1].wrapping_mul(5).rotate_left(7).wrapping_mul(9);
        let t = s[1] << 17;
        s[2] ^= s[0];
        s[3] ^= s[1];
        s[1] ^= s[2];
        s[0] ^= s[3];
        s[2] ^= t;
        s[3] = s[3].rotate_left(45);
        result
    }

    /// Uniform in `0..n` by multiply-shift (bias below 2^-64 * n, irrelevant here).
    pub fn below(&mut self, n: u64) -> u64 {
        ((self.next_u64() as u128 * n as u128) >> 64) as u64
    }
}

/// Resamples counted side by side by [`count_block`].
pub const LANES: usize = 8;

/// The counts of ones of resamples `first..first + LANES`: resample `i` draws `ones.len()`
/// positions with `Xoshiro256::new(seed, i)` and [`Xoshiro256::below`], and counts the ones it
/// draws (`ones` holds 0 or 1 per position). AVX-512F, else AVX2, else plain code; the three give
/// the same counts.
///
/// # Panics
/// If `ones` has 2^32 positions or more (the draws are computed from 32-bit halves).
pub fn count_block(ones: &[u32], seed: u64, first: u64) -> [u64; LANES] {
    assert!(
        u32::try_from(ones.len()).is_ok(),
        "count_block: {} positions, 2^32 or more",
        ones.len()
    );
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx512f") && !ones.is_empty() {
            // SAFETY: the CPU supports AVX-512F (checked just above), `ones` is not empty, and
            // its length is below 2^32 (asserted above): the requirements of `count_block_avx512`.
            return unsafe { count_block_avx512(ones, seed, first) };
        }
        if std::arch::is_x86_feature_detected!("avx2") {
            // SAFETY: the CPU supports AVX2 (checked just above), the only requirement of a
            // `target_feature(enable = "avx2")` function.
            return unsafe { count_block_avx2(ones, seed, first) };
        }
    }
    count_block_lanes(ones, seed, first)
}

/// [`count_block_lanes`] compiled for AVX2, where the compiler vectorises its lane loops.
///
/// # Safety
/// The CPU must support AVX2. (`ones` below 2^32 positions, as for [`count_block_lanes`].)
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn count_block_avx2(ones: &[u32], seed: u64, first: u64) -> [u64; LANES] {
    count_block_lanes(ones, seed, first)
}

/// [`count_block_lanes`] with the eight generators in one AVX-512 register per state word:
/// the multiplications by 5 and 9 as shift-and-add, the rotations as `vprolq`, the
/// multiply-high by `n` from two 32×32→64 products (`vpmuludq`, exact for `n < 2^32` as in
/// [`count_block_lanes`]), and the eight 0/1 values fetched by one gather.
///
/// # Safety
/// The CPU must support AVX-512F, and `ones` must not be empty (its length is below 2^32, as
/// [`count_block`] asserts).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
#[allow(clippy::needless_range_loop)] // lane-wise filling of the four state words
unsafe fn count_block_avx512(ones: &[u32], seed: u64, first: u64) -> [u64; LANES] {
    use std::arch::x86_64::*;
    let n = ones.len() as u64;
    let mut words = [[0u64; LANES]; 4];
    for l in 0..LANES {
        let g = Xoshiro256::new(seed, first + l as u64);
        for (k, word) in g.0.iter().enumerate() {
            words[k][l] = *word;
        }
    }
    // SAFETY: (the loads) each `words[k]` is 8 u64, 64 bytes, the size of the unaligned load.
    let load = |w: &[u64; LANES]| unsafe { _mm512_loadu_si512(w.as_ptr().cast()) };
    let (mut s0, mut s1, mut s2, mut s3) = (
        load(&words[0]),
        load(&words[1]),
        load(&words[2]),
        load(&words[3]),
    );
    let nv = _mm512_set1_epi64(n as i64);
    let mut counts = _mm256_setzero_si256();
    for _ in 0..n {
        let x = _mm512_add_epi64(s1, _mm512_slli_epi64::<2>(s1));
        let x = _mm512_rol_epi64::<7>(x);
        let r = _mm512_add_epi64(x, _mm512_slli_epi64::<3>(x));
        let t = _mm512_slli_epi64::<17>(s1);
        s2 = _mm512_xor_si512(s2, s0);
        s3 = _mm512_xor_si512(s3, s1);
        s1 = _mm512_xor_si512(s1, s2);
        s0 = _mm512_xor_si512(s0, s3);
        s2 = _mm512_xor_si512(s2, t);
        s3 = _mm512_rol_epi64::<45>(s3);
        let hi = _mm512_mul_epu32(_mm512_srli_epi64::<32>(r), nv);
        let lo = _mm512_mul_epu32(r, nv);
        let idx = _mm512_srli_epi64::<32>(_mm512_add_epi64(hi, _mm512_srli_epi64::<32>(lo)));
        // SAFETY: every lane of `idx` is (r * n) >> 64 < n = ones.len(), an index into `ones`.
        let v = unsafe { _mm512_i64gather_epi32::<4>(idx, ones.as_ptr().cast()) };
        counts = _mm256_add_epi32(counts, v);
    }
    let mut out = [0u32; LANES];
    // SAFETY: `out` is 8 u32, 32 bytes, the size of the unaligned store.
    unsafe { _mm256_storeu_si256(out.as_mut_ptr().cast(), counts) };
    out.map(u64::from)
}

/// xoshiro256** as [`Xoshiro256`], `LANES` generators in struct-of-arrays form, and
/// [`Xoshiro256::below`] computed from 32-bit halves (exact for `n < 2^32`), so that every
/// step is a plain lane-wise operation the compiler can vectorise.
#[inline(always)]
#[allow(clippy::needless_range_loop)] // lane-wise indexing of several arrays is the point
fn count_block_lanes(ones: &[u32], seed: u64, first: u64) -> [u64; LANES] {
    let n = ones.len() as u64;
    let mut s = [[0u64; LANES]; 4];
    for l in 0..LANES {
        let g = Xoshiro256::new(seed, first + l as u64);
        for (k, word) in g.0.iter().enumerate() {
            s[k][l] = *word;
        }
    }
    let mut counts = [0u64; LANES];
    for _ in 0..n {
        let mut idx = [0usize; LANES];
        for l in 0..LANES {
            let r = (s[1][l].wrapping_mul(5)).rotate_left(7).wrapping_mul(9);
            let t = s[1][l] << 17;
            s[2][l] ^= s[0][l];
            s[3][l] ^= s[1][l];
            s[1][l] ^= s[2][l];
            s[0][l] ^= s[3][l];
            s[2][l] ^= t;
            s[3][l] = s[3][l].rotate_left(45);
            // (r * n) >> 64 with r = hi * 2^32 + lo: hi * n + (lo * n >> 32) < 2^64.
            let hi = (r >> 32) * n + (((r & 0xFFFF_FFFF) * n) >> 32);
            idx[l] = (hi >> 32) as usize;
        }
        for l in 0..LANES {
            counts[l] += u64::from(ones[idx[l]]);
        }
    }
    counts
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Resample `first + l`'s count of ones, drawn one at a time with [`Xoshiro256::below`]: the
    /// definition the kernels must meet.
    fn counted_one_by_one(ones: &[u32], seed: u64, first: u64) -> [u64; LANES] {
        std::array::from_fn(|l| {
            let mut g = Xoshiro256::new(seed, first + l as u64);
            let n = ones.len() as u64;
            (0..n).map(|_| u64::from(ones[g.below(n) as usize])).sum()
        })
    }

    #[test]
    fn below_from_halves_equals_the_wide_product() {
        let mut g = Xoshiro256::new(1, 2);
        for n in [1u64, 2, 3, 586, 4102, u32::MAX as u64] {
            for _ in 0..1000 {
                let r = g.next_u64();
                let wide = ((r as u128 * n as u128) >> 64) as u64;
                let halves = ((r >> 32) * n + (((r & 0xFFFF_FFFF) * n) >> 32)) >> 32;
                assert_eq!(wide, halves, "r {r} n {n}");
            }
        }
    }

    /// Every path (the dispatch, AVX-512F, AVX2 where the CPU has them) against the plain lanes,
    /// and the plain lanes against the generator stepped one draw at a time.
    #[test]
    fn every_kernel_counts_the_same() {
        let mut g = Xoshiro256::new(9, 9);
        for n in [0usize, 1, 2, 5, 63, 64, 65, 586, 1024, 4102] {
            let ones: Vec<u32> = (0..n).map(|_| u32::from(g.below(3) == 0)).collect();
            for first in [0u64, 8, 992] {
                let want = count_block_lanes(&ones, 42, first);
                assert_eq!(
                    want,
                    counted_one_by_one(&ones, 42, first),
                    "n {n} first {first}"
                );
                assert_eq!(count_block(&ones, 42, first), want, "n {n} first {first}");
                #[cfg(target_arch = "x86_64")]
                if std::arch::is_x86_feature_detected!("avx512f") && n > 0 {
                    // SAFETY: AVX-512F checked just above; `ones` is not empty and short.
                    let got = unsafe { count_block_avx512(&ones, 42, first) };
                    assert_eq!(got, want, "avx512 n {n} first {first}");
                }
                #[cfg(target_arch = "x86_64")]
                if std::arch::is_x86_feature_detected!("avx2") {
                    // SAFETY: AVX2 checked just above.
                    let got = unsafe { count_block_avx2(&ones, 42, first) };
                    assert_eq!(got, want, "avx2 n {n} first {first}");
                }
            }
        }
    }
}
