//! How much of a byte slice is ASCII, 64 bytes at a time: what the line reader of scorekit-io
//! need not check for UTF-8.

/// How many bytes at the start of `b` are ASCII, in whole 64-byte blocks where the CPU has
/// AVX-512BW (`b.len()` when all are), else 0: what the caller need not check for UTF-8.
pub fn ascii_prefix(b: &[u8]) -> usize {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx512bw") {
            // SAFETY: the CPU has AVX-512F/BW (AVX-512BW implies F), all `ascii_prefix_avx512`
            // requires.
            return unsafe { ascii_prefix_avx512(b) };
        }
    }
    let _ = b;
    0
}

/// [`ascii_prefix`] with AVX-512BW: four blocks of 64 bytes tested per step for a set high bit,
/// then one block at a time, then the tail with a masked load.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw")]
unsafe fn ascii_prefix_avx512(b: &[u8]) -> usize {
    use std::arch::x86_64::*;
    let p = b.as_ptr();
    let mut i = 0;
    // SAFETY (every unmasked load): `i + 64 * k + 64 <= b.len()` for each block loaded.
    while i + 256 <= b.len() {
        let v = _mm512_or_si512(
            _mm512_or_si512(
                _mm512_loadu_si512(p.add(i).cast()),
                _mm512_loadu_si512(p.add(i + 64).cast()),
            ),
            _mm512_or_si512(
                _mm512_loadu_si512(p.add(i + 128).cast()),
                _mm512_loadu_si512(p.add(i + 192).cast()),
            ),
        );
        if _mm512_movepi8_mask(v) != 0 {
            break;
        }
        i += 256;
    }
    while i + 64 <= b.len() {
        if _mm512_movepi8_mask(_mm512_loadu_si512(p.add(i).cast())) != 0 {
            return i;
        }
        i += 64;
    }
    if i < b.len() {
        let valid = (1u64 << (b.len() - i)) - 1;
        // SAFETY: the mask selects the bytes `i..b.len()` only, all within `b`; masked-off
        // bytes are not read (masked loads suppress faults there) and come back as 0.
        if _mm512_movepi8_mask(_mm512_maskz_loadu_epi8(valid, p.add(i).cast())) != 0 {
            return i;
        }
    }
    b.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ascii_prefix_stops_at_the_block_of_the_first_high_byte() {
        // Without AVX-512BW nothing is vouched for (0); with it an all-ASCII slice is whole.
        #[cfg(target_arch = "x86_64")]
        let wide = std::arch::is_x86_feature_detected!("avx512bw");
        #[cfg(not(target_arch = "x86_64"))]
        let wide = false;
        for len in [0, 1, 63, 64, 65, 200, 255, 256, 257, 600] {
            let mut v = vec![b'a'; len];
            assert_eq!(ascii_prefix(&v), if wide { len } else { 0 });
            for at in 0..len {
                v[at] = 0xC3;
                let got = ascii_prefix(&v);
                assert!(got <= at, "len {len} at {at}: {got}");
                if wide {
                    assert_eq!(got, at / 64 * 64, "len {len} at {at}");
                }
                v[at] = b'a';
            }
        }
    }
}
