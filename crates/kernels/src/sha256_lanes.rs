//! sha256 of up to 16 byte streams at once: one stream per 32-bit lane of AVX-512 registers.
//!
//! Why: hashing every input is part of the output contract, and on the 2-core machines this
//! was measured on, SHA-NI hashes one stream at ~1.1–1.25 GB/s (sha2's kernel and OpenSSL's
//! alike); interleaving two SHA-NI streams gained nothing (the instructions' throughput is the
//! limit). The same rounds on 16 streams in the lanes of AVX-512 registers run at ~2.6–2.75
//! GB/s in all (BENCHMARKS.md, MINT "Fifth round"; probe: `cargo test --release -p
//! scorekit-kernels sha256_lanes_speed -- --ignored --nocapture`). A reader of many files keeps up to
//! [`LANES`] of them open and hashes their new bytes together; where fewer streams have blocks
//! than pay for the wide kernel, or the CPU lacks AVX-512, each stream goes through sha2's
//! one-stream kernel.

use sha2::digest::generic_array::GenericArray;

/// How many streams one [`Sha256Lanes`] hashes together.
pub const LANES: usize = 16;

const IV: [u32; 8] = [
    0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19,
];

/// The sha256 states of up to [`LANES`] streams, each with the bytes of its last partial block.
pub struct Sha256Lanes {
    /// Word `w` of every lane's state: `state[w][lane]` (the layout the wide kernel loads).
    state: [[u32; LANES]; 8],
    /// Bytes not yet in a whole block, per lane.
    tail: [[u8; 64]; LANES],
    tail_len: [usize; LANES],
    /// Bytes hashed so far, per lane.
    len: [u64; LANES],
    /// The fewest streams with blocks to hash for which the wide kernel beats one stream at a
    /// time; `usize::MAX` without the wide kernel.
    wide_from: usize,
}

impl Default for Sha256Lanes {
    fn default() -> Self {
        Self::new()
    }
}

impl Sha256Lanes {
    /// Every lane at the start of an empty stream.
    pub fn new() -> Self {
        let mut lanes = Sha256Lanes {
            state: [[0; LANES]; 8],
            tail: [[0; 64]; LANES],
            tail_len: [0; LANES],
            len: [0; LANES],
            wide_from: wide_from(),
        };
        for lane in 0..LANES {
            lanes.reset(lane);
        }
        lanes
    }

    /// Start lane `lane` on a new stream.
    pub fn reset(&mut self, lane: usize) {
        self.set_state(lane, IV);
        self.tail_len[lane] = 0;
        self.len[lane] = 0;
    }

    /// Append `parts[lane]` to each lane's stream (an empty part leaves its lane as it is).
    pub fn update(&mut self, parts: &[&[u8]; LANES]) {
        // Whole blocks of each part, after what completes its lane's partial block.
        let mut bodies: [&[u8]; LANES] = [&[]; LANES];
        for (lane, &part) in parts.iter().enumerate() {
            self.len[lane] += part.len() as u64;
            let mut part = part;
            let have = self.tail_len[lane];
            if have > 0 {
                let take = (64 - have).min(part.len());
                self.tail[lane][have..have + take].copy_from_slice(&part[..take]);
                self.tail_len[lane] += take;
                part = &part[take..];
                if self.tail_len[lane] < 64 {
                    continue;
                }
                let block = self.tail[lane];
                self.compress_blocks(lane, &block);
                self.tail_len[lane] = 0;
            }
            let whole = part.len() / 64 * 64;
            let rest = &part[whole..];
            self.tail[lane][..rest.len()].copy_from_slice(rest);
            self.tail_len[lane] = rest.len();
            bodies[lane] = &part[..whole];
        }
        self.compress_bodies(bodies);
    }

    /// The sha256 of lane `lane`'s stream; the lane then starts a new, empty stream.
    pub fn finish(&mut self, lane: usize) -> [u8; 32] {
        let bits = self.len[lane].wrapping_mul(8);
        let have = self.tail_len[lane];
        let mut last = [0u8; 128];
        last[..have].copy_from_slice(&self.tail[lane][..have]);
        last[have] = 0x80;
        let blocks = if have < 56 { 1 } else { 2 };
        last[blocks * 64 - 8..blocks * 64].copy_from_slice(&bits.to_be_bytes());
        for block in last[..blocks * 64].chunks_exact(64) {
            let block: &[u8; 64] = block.try_into().expect("64-byte chunk");
            self.compress_blocks(lane, block);
        }
        let mut digest = [0u8; 32];
        for (w, out) in self.lane_state(lane).iter().zip(digest.chunks_exact_mut(4)) {
            out.copy_from_slice(&w.to_be_bytes());
        }
        self.reset(lane);
        digest
    }

    /// Hash the whole blocks of every lane: all lanes together while enough of them have
    /// blocks left, then each on its own.
    fn compress_bodies(&mut self, mut bodies: [&[u8]; LANES]) {
        loop {
            let busy = bodies.iter().filter(|b| !b.is_empty()).count();
            if busy == 0 {
                return;
            }
            if busy < self.wide_from {
                for (lane, body) in bodies.iter().enumerate() {
                    if !body.is_empty() {
                        self.compress_blocks(lane, body);
                    }
                }
                return;
            }
            let blocks = bodies
                .iter()
                .filter(|b| !b.is_empty())
                .map(|b| b.len() / 64)
                .min()
                .expect("a busy lane");
            self.compress_wide(&bodies, blocks);
            for body in bodies.iter_mut() {
                if !body.is_empty() {
                    *body = &body[blocks * 64..];
                }
            }
        }
    }

    /// `blocks` blocks of every non-empty body through the wide kernel.
    fn compress_wide(&mut self, bodies: &[&[u8]; LANES], blocks: usize) {
        #[cfg(target_arch = "x86_64")]
        {
            let mut active = 0u16;
            let mut starts = [ZERO_BLOCK.as_ptr(); LANES];
            let mut strides = [0usize; LANES];
            for (lane, body) in bodies.iter().enumerate() {
                if !body.is_empty() {
                    debug_assert!(body.len() >= blocks * 64);
                    active |= 1 << lane;
                    starts[lane] = body.as_ptr();
                    strides[lane] = 64;
                }
            }
            // SAFETY: `wide_from` is finite only where the CPU has AVX-512F and BW, all the
            // kernel requires, and this is reached only then (`busy >= wide_from`); each
            // active lane's start has at least `blocks * 64` readable bytes (its body is at
            // least that long), and every other lane reads the one zero block again and
            // again (stride 0).
            unsafe { wide::compress(&mut self.state, starts, strides, active, blocks) };
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            let _ = (bodies, blocks);
            unreachable!("the wide kernel exists only on x86_64, where wide_from is finite");
        }
    }

    /// Whole blocks of one lane through sha2's one-stream kernel (SHA-NI where the CPU has it).
    fn compress_blocks(&mut self, lane: usize, body: &[u8]) {
        let mut state = self.lane_state(lane);
        debug_assert!(body.len().is_multiple_of(64));
        for block in body.chunks_exact(64) {
            sha2::compress256(
                &mut state,
                std::slice::from_ref(GenericArray::from_slice(block)),
            );
        }
        self.set_state(lane, state);
    }

    fn lane_state(&self, lane: usize) -> [u32; 8] {
        std::array::from_fn(|w| self.state[w][lane])
    }

    fn set_state(&mut self, lane: usize, state: [u32; 8]) {
        for (w, v) in state.into_iter().enumerate() {
            self.state[w][lane] = v;
        }
    }
}

/// What a lane with no blocks left reads (stride 0) while the others are hashed.
#[cfg(target_arch = "x86_64")]
static ZERO_BLOCK: [u8; 64] = [0; 64];

/// [`Sha256Lanes::wide_from`] for this CPU: the wide kernel runs ~2.2× one SHA-NI stream, so
/// it pays from 8 busy lanes where the CPU has SHA-NI and from 2 where it has not.
fn wide_from() -> usize {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx512f")
            && std::arch::is_x86_feature_detected!("avx512bw")
        {
            return if std::arch::is_x86_feature_detected!("sha") {
                8
            } else {
                2
            };
        }
    }
    usize::MAX
}

#[cfg(target_arch = "x86_64")]
mod wide {
    use super::LANES;
    use std::arch::x86_64::*;

    const K: [u32; 64] = [
        0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4,
        0xab1c5ed5, 0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe,
        0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f,
        0x4a7484aa, 0x5cb0a9dc, 0x76f988da, 0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7,
        0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc,
        0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b,
        0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070, 0x19a4c116,
        0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
        0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7,
        0xc67178f2,
    ];

    /// Rows of 16 words become columns: `r[i]` holds word `i` of every lane's block.
    #[inline(always)]
    unsafe fn transpose(r: &mut [__m512i; 16]) {
        let mut t = [_mm512_setzero_si512(); 16];
        for i in 0..8 {
            t[2 * i] = _mm512_unpacklo_epi32(r[2 * i], r[2 * i + 1]);
            t[2 * i + 1] = _mm512_unpackhi_epi32(r[2 * i], r[2 * i + 1]);
        }
        let mut u = [_mm512_setzero_si512(); 16];
        for i in 0..4 {
            u[4 * i] = _mm512_unpacklo_epi64(t[4 * i], t[4 * i + 2]);
            u[4 * i + 1] = _mm512_unpackhi_epi64(t[4 * i], t[4 * i + 2]);
            u[4 * i + 2] = _mm512_unpacklo_epi64(t[4 * i + 1], t[4 * i + 3]);
            u[4 * i + 3] = _mm512_unpackhi_epi64(t[4 * i + 1], t[4 * i + 3]);
        }
        for i in 0..4 {
            for j in 0..2 {
                let (a, b) = (u[i + 8 * j], u[i + 8 * j + 4]);
                t[i + 8 * j] = _mm512_shuffle_i32x4::<0x88>(a, b);
                t[i + 8 * j + 4] = _mm512_shuffle_i32x4::<0xDD>(a, b);
            }
        }
        for i in 0..8 {
            let (a, b) = (t[i], t[i + 8]);
            r[i] = _mm512_shuffle_i32x4::<0x88>(a, b);
            r[i + 8] = _mm512_shuffle_i32x4::<0xDD>(a, b);
        }
    }

    /// `blocks` blocks of each lane whose bit is set in `active`: lane `j`'s block `b` starts
    /// at `starts[j] + strides[j] * b`. Other lanes keep their state.
    ///
    /// # Safety
    /// The CPU has AVX-512F and AVX-512BW, and for every lane `j` the bytes
    /// `starts[j] .. starts[j] + strides[j] * (blocks - 1) + 64` are readable.
    #[target_feature(enable = "avx512f,avx512bw")]
    pub(super) unsafe fn compress(
        state: &mut [[u32; LANES]; 8],
        starts: [*const u8; LANES],
        strides: [usize; LANES],
        active: u16,
        blocks: usize,
    ) {
        // Big-endian words: bytes reversed within each 32-bit word.
        let bswap = _mm512_broadcast_i32x4(_mm_set_epi8(
            12, 13, 14, 15, 8, 9, 10, 11, 4, 5, 6, 7, 0, 1, 2, 3,
        ));
        // (Loops, not closures: a closure does not inherit the target features, and was
        // called out of line for every vector.)
        let mut s = [_mm512_setzero_si512(); 8];
        for (sw, words) in s.iter_mut().zip(state.iter()) {
            *sw = _mm512_loadu_si512(words.as_ptr().cast());
        }
        for b in 0..blocks {
            let mut w = [_mm512_setzero_si512(); 16];
            for (j, wj) in w.iter_mut().enumerate() {
                // SAFETY: within lane j's readable bytes (the contract above).
                *wj = _mm512_loadu_si512(starts[j].add(strides[j] * b).cast());
            }
            transpose(&mut w);
            for wj in w.iter_mut() {
                *wj = _mm512_shuffle_epi8(*wj, bswap);
            }
            let [mut w0, mut w1, mut w2, mut w3, mut w4, mut w5, mut w6, mut w7, mut w8, mut w9, mut w10, mut w11, mut w12, mut w13, mut w14, mut w15] =
                w;
            let [mut a, mut bb, mut c, mut d, mut e, mut f, mut g, mut h] = s;
            // One round; the names rotate by reassignment, which compiles to nothing.
            macro_rules! round {
                ($w:expr, $t:expr) => {{
                    let s1 = _mm512_ternarylogic_epi32::<0x96>(
                        _mm512_ror_epi32::<6>(e),
                        _mm512_ror_epi32::<11>(e),
                        _mm512_ror_epi32::<25>(e),
                    );
                    let ch = _mm512_ternarylogic_epi32::<0xCA>(e, f, g);
                    let wk = _mm512_add_epi32($w, _mm512_set1_epi32(K[$t] as i32));
                    let t1 = _mm512_add_epi32(_mm512_add_epi32(h, s1), _mm512_add_epi32(ch, wk));
                    let s0 = _mm512_ternarylogic_epi32::<0x96>(
                        _mm512_ror_epi32::<2>(a),
                        _mm512_ror_epi32::<13>(a),
                        _mm512_ror_epi32::<22>(a),
                    );
                    let maj = _mm512_ternarylogic_epi32::<0xE8>(a, bb, c);
                    h = g;
                    g = f;
                    f = e;
                    e = _mm512_add_epi32(d, t1);
                    d = c;
                    c = bb;
                    bb = a;
                    a = _mm512_add_epi32(t1, _mm512_add_epi32(s0, maj));
                }};
            }
            // Message word t (t >= 16) in place of word t - 16.
            macro_rules! schedule {
                ($w:ident, $w1:ident, $w9:ident, $w14:ident) => {{
                    let s0 = _mm512_ternarylogic_epi32::<0x96>(
                        _mm512_ror_epi32::<7>($w1),
                        _mm512_ror_epi32::<18>($w1),
                        _mm512_srli_epi32::<3>($w1),
                    );
                    let s1 = _mm512_ternarylogic_epi32::<0x96>(
                        _mm512_ror_epi32::<17>($w14),
                        _mm512_ror_epi32::<19>($w14),
                        _mm512_srli_epi32::<10>($w14),
                    );
                    $w = _mm512_add_epi32(_mm512_add_epi32($w, s0), _mm512_add_epi32($w9, s1));
                }};
            }
            // Sixteen rounds; from the second sixteen on, each first computes its word.
            macro_rules! sixteen {
                ($j:literal) => {{
                    if $j > 0 {
                        schedule!(w0, w1, w9, w14);
                    }
                    round!(w0, $j * 16);
                    if $j > 0 {
                        schedule!(w1, w2, w10, w15);
                    }
                    round!(w1, $j * 16 + 1);
                    if $j > 0 {
                        schedule!(w2, w3, w11, w0);
                    }
                    round!(w2, $j * 16 + 2);
                    if $j > 0 {
                        schedule!(w3, w4, w12, w1);
                    }
                    round!(w3, $j * 16 + 3);
                    if $j > 0 {
                        schedule!(w4, w5, w13, w2);
                    }
                    round!(w4, $j * 16 + 4);
                    if $j > 0 {
                        schedule!(w5, w6, w14, w3);
                    }
                    round!(w5, $j * 16 + 5);
                    if $j > 0 {
                        schedule!(w6, w7, w15, w4);
                    }
                    round!(w6, $j * 16 + 6);
                    if $j > 0 {
                        schedule!(w7, w8, w0, w5);
                    }
                    round!(w7, $j * 16 + 7);
                    if $j > 0 {
                        schedule!(w8, w9, w1, w6);
                    }
                    round!(w8, $j * 16 + 8);
                    if $j > 0 {
                        schedule!(w9, w10, w2, w7);
                    }
                    round!(w9, $j * 16 + 9);
                    if $j > 0 {
                        schedule!(w10, w11, w3, w8);
                    }
                    round!(w10, $j * 16 + 10);
                    if $j > 0 {
                        schedule!(w11, w12, w4, w9);
                    }
                    round!(w11, $j * 16 + 11);
                    if $j > 0 {
                        schedule!(w12, w13, w5, w10);
                    }
                    round!(w12, $j * 16 + 12);
                    if $j > 0 {
                        schedule!(w13, w14, w6, w11);
                    }
                    round!(w13, $j * 16 + 13);
                    if $j > 0 {
                        schedule!(w14, w15, w7, w12);
                    }
                    round!(w14, $j * 16 + 14);
                    if $j > 0 {
                        schedule!(w15, w0, w8, w13);
                    }
                    round!(w15, $j * 16 + 15);
                }};
            }
            sixteen!(0);
            sixteen!(1);
            sixteen!(2);
            sixteen!(3);
            let rounds = [a, bb, c, d, e, f, g, h];
            for (sw, r) in s.iter_mut().zip(rounds) {
                *sw = _mm512_mask_add_epi32(*sw, active, *sw, r);
            }
        }
        for (w, sw) in s.iter().enumerate() {
            _mm512_storeu_si512(state[w].as_mut_ptr().cast(), *sw);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sha2::{Digest, Sha256};

    /// Deterministic bytes, different per seed.
    fn bytes(seed: u64, n: usize) -> Vec<u8> {
        let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
        (0..n)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x as u8
            })
            .collect()
    }

    /// Streams of many lengths fed in pieces of many sizes, lanes finishing and restarting at
    /// different times, through both kernels: every digest equals sha2's of the whole stream.
    fn check(wide_from: usize) {
        let mut lanes = Sha256Lanes::new();
        if lanes.wide_from != usize::MAX {
            lanes.wide_from = wide_from; // the CPU has the wide kernel
        }
        let lengths = [
            0usize, 1, 55, 56, 63, 64, 65, 119, 120, 128, 1000, 4096, 70_000,
        ];
        let mut checked = 0;
        for round in 0..3u64 {
            let streams: Vec<Vec<u8>> = (0..LANES)
                .map(|j| {
                    bytes(
                        round * 100 + j as u64,
                        lengths[(j + round as usize) % lengths.len()] * (1 + j % 3),
                    )
                })
                .collect();
            let mut at = [0usize; LANES];
            let mut step = 0;
            while at.iter().zip(&streams).any(|(a, s)| *a < s.len()) {
                let parts: [&[u8]; LANES] = std::array::from_fn(|j| {
                    let piece = [64 * 16, 7, 64, 1, 200, 64 * 40 + 3][(j + step) % 6];
                    let end = (at[j] + piece).min(streams[j].len());
                    &streams[j][at[j]..end]
                });
                for (j, p) in parts.iter().enumerate() {
                    at[j] += p.len();
                }
                lanes.update(&parts);
                step += 1;
            }
            for (j, s) in streams.iter().enumerate() {
                let want: [u8; 32] = Sha256::digest(s).into();
                assert_eq!(lanes.finish(j), want, "lane {j}, {} bytes", s.len());
                checked += 1;
            }
        }
        assert_eq!(checked, 3 * LANES);
    }

    #[test]
    fn every_lane_equals_one_stream_sha256() {
        check(usize::MAX); // one stream at a time
        check(1); // the wide kernel whenever the CPU has it
        check(8);
    }

    /// Throughput of the wide kernel against sha2's one-stream kernel, 16 streams of
    /// `SHA_LANE_KIB` KiB (default 64) each, hashed over and over: a timing probe, run by hand
    /// (`cargo test --release --lib sha256_lanes_speed -- --ignored --nocapture`).
    #[test]
    #[ignore = "timing probe, run by hand: cargo test --release -p scorekit-kernels sha256_lanes_speed -- --ignored --nocapture (BENCHMARKS.md)"]
    fn sha256_lanes_speed() {
        let kib: usize = std::env::var("SHA_LANE_KIB")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(64);
        let streams: Vec<Vec<u8>> = (0..LANES).map(|j| bytes(j as u64, kib << 10)).collect();
        let parts: [&[u8]; LANES] = std::array::from_fn(|j| &streams[j][..]);
        let total = 1usize << 30;
        let reps = (total / (LANES * (kib << 10))).max(1);
        for round in 0..3 {
            let mut lanes = Sha256Lanes::new();
            let t = std::time::Instant::now();
            for _ in 0..reps {
                lanes.update(&parts);
            }
            let wide = t.elapsed().as_secs_f64();
            let t = std::time::Instant::now();
            let mut one = Sha256::new();
            for _ in 0..reps {
                for p in &parts {
                    one.update(p);
                }
            }
            std::hint::black_box(one.finalize());
            let single = t.elapsed().as_secs_f64();
            let gb = (reps * LANES * (kib << 10)) as f64 / 1e9;
            println!(
                "round {round}: {kib} KiB a stream: lanes {:.2} GB/s, one stream {:.2} GB/s (wide kernel: {})",
                gb / wide,
                gb / single,
                lanes.wide_from != usize::MAX
            );
        }
    }

    #[test]
    fn a_finished_lane_starts_over() {
        let mut lanes = Sha256Lanes::new();
        let mut parts: [&[u8]; LANES] = [&[]; LANES];
        parts[3] = b"abc";
        lanes.update(&parts);
        let _ = lanes.finish(3);
        lanes.update(&parts);
        let want: [u8; 32] = Sha256::digest(b"abc").into();
        assert_eq!(lanes.finish(3), want);
        let empty: [u8; 32] = Sha256::digest(b"").into();
        assert_eq!(lanes.finish(5), empty);
    }
}
