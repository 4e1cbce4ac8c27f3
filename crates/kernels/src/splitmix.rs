//! splitmix64, the generator of a training run's dropout masks (its state advances by
//! [`GAMMA`] a draw, and a draw is [`mix`] of the state), and dropout's keep decisions computed
//! from the draws' states, vectorised where the CPU has 64-bit vector products.

/// splitmix64's increment of the state per draw.
pub const GAMMA: u64 = 0x9E37_79B9_7F4A_7C15;

/// splitmix64's output function of a state.
#[inline(always)]
pub fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// `out[j] = mix(first + j·GAMMA) >> 40 >= threshold`: whether dropout keeps the elements of
/// consecutive draws, the first drawn from state `first`.
pub fn keep_flags(first: u64, threshold: u64, out: &mut [bool]) {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx512f")
        && std::arch::is_x86_feature_detected!("avx512dq")
        && std::arch::is_x86_feature_detected!("avx512bw")
        && std::arch::is_x86_feature_detected!("avx512vl")
    {
        // SAFETY: the CPU has the features the function is compiled for (checked above); it
        // touches nothing but `out`.
        return unsafe { keep_flags_avx512(first, threshold, out) };
    }
    keep_flags_lanes(first, threshold, out);
}

/// [`keep_flags`] as a loop over independent lanes (each draw from its own state), which the
/// compiler vectorises where 64-bit vector products exist.
#[inline(always)]
fn keep_flags_lanes(first: u64, threshold: u64, out: &mut [bool]) {
    for (j, o) in out.iter_mut().enumerate() {
        *o = mix(first.wrapping_add((j as u64).wrapping_mul(GAMMA))) >> 40 >= threshold;
    }
}

/// [`keep_flags_lanes`] compiled for AVX-512 (`vpmullq`: eight draws an instruction; the
/// scalar loop was 3% of a bf16-mixed training step's CPU time, BENCHMARKS.md §6).
///
/// # Safety
/// The CPU must support AVX-512F, DQ, BW and VL.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512dq,avx512bw,avx512vl")]
unsafe fn keep_flags_avx512(first: u64, threshold: u64, out: &mut [bool]) {
    keep_flags_lanes(first, threshold, out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Both paths give the decisions of the sequential draws.
    #[test]
    fn keep_flags_are_the_sequential_draws() {
        let (first, threshold) = (0xDEAD_BEEF_u64, 1u64 << 22);
        let want: Vec<bool> = (0..1000u64)
            .map(|j| mix(first.wrapping_add(j.wrapping_mul(GAMMA))) >> 40 >= threshold)
            .collect();
        let mut got = vec![false; 1000];
        keep_flags(first, threshold, &mut got);
        assert_eq!(got, want);
        let mut lanes = vec![false; 1000];
        keep_flags_lanes(first, threshold, &mut lanes);
        assert_eq!(lanes, want);
    }
}
