//! The scan of one JSON string, 64 bytes at a time: where it ends and which escapes it has,
//! checked as serde_json checks it (no control characters, only JSON's escapes, `\u`
//! surrogates in pairs) but not decoded. AVX-512 masks (BW and VBMI) where the CPU has them,
//! else a walk over SSE2 masks (any x86-64) or plain bytes (other CPUs). The MINT line reader
//! of scorekit-suites (`mint/fastline.rs`) is built on it.

/// A scanned string: where its closing quote is, and which escapes it has.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct JsonString {
    /// Index of the closing quote (the string's raw bytes are `from..end`).
    pub end: usize,
    /// Has at least one backslash escape.
    pub escapes: bool,
    /// Has at least one `\u` escape.
    pub unicode_escapes: bool,
    /// Has the escape `\\` followed by a raw `_` (a decoded `\_`, when there are no `\u`).
    pub escaped_underscore: bool,
}

/// Which scan [`StringScanner::scan`] runs: chosen once from the CPU ([`StringScanner::new`]),
/// or the walk alone ([`StringScanner::walk`]). Cheap to copy; make one per line or per file.
#[derive(Clone, Copy, Debug)]
pub struct StringScanner {
    /// The CPU has AVX-512F, BW and VBMI (only [`StringScanner::new`] sets it).
    wide: bool,
}

impl Default for StringScanner {
    fn default() -> Self {
        Self::new()
    }
}

impl StringScanner {
    /// The widest scan this CPU runs.
    pub fn new() -> Self {
        Self {
            wide: wide_available(),
        }
    }

    /// The walk over 64-byte masks, on any CPU (the fallback, and the reference of the tests).
    pub fn walk() -> Self {
        Self { wide: false }
    }

    /// Whether [`Self::scan`] runs the AVX-512 scan.
    pub fn is_wide(&self) -> bool {
        self.wide
    }

    /// The string whose raw bytes start at `from` in `b` (just after its opening quote):
    /// its end and escapes, or `None` when serde_json would not read it (a control character,
    /// an escape that is not JSON's, a lone surrogate or bad hex digits, no closing quote).
    pub fn scan(&self, b: &[u8], from: usize) -> Option<JsonString> {
        if from > b.len() {
            return None;
        }
        #[cfg(target_arch = "x86_64")]
        if self.wide {
            // SAFETY: `wide` is set only where the CPU has AVX-512F, BW and VBMI
            // (`wide_available`), all that `scan_avx512` requires.
            return unsafe { scan_avx512(b, from) };
        }
        scan_walk(b, from)
    }
}

/// Whether [`StringScanner::new`] picks the AVX-512 scan on this CPU.
pub fn wide_available() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        std::arch::is_x86_feature_detected!("avx512f")
            && std::arch::is_x86_feature_detected!("avx512bw")
            && std::arch::is_x86_feature_detected!("avx512vbmi")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// [`StringScanner::scan`], walking the specials of 64 bytes at a time bit by bit (any x86-64
/// or other CPU; and strings with `\u` escapes, whose hex digits and surrogate pairs it
/// checks).
fn scan_walk(b: &[u8], from: usize) -> Option<JsonString> {
    let mut raw = JsonString {
        end: from,
        escapes: false,
        unicode_escapes: false,
        escaped_underscore: false,
    };
    let mut i = from;
    // The specials (`"`, `\`, control characters) of 64 bytes at a time, as a bit mask
    // walked bit by bit: an escape costs a few instructions, not a new scan.
    loop {
        let base = i;
        let (mut mask, width) = specials64(b, base);
        if width == 0 {
            return None; // no closing quote
        }
        while mask != 0 {
            i = base + mask.trailing_zeros() as usize;
            match b[i] {
                b'"' => {
                    raw.end = i;
                    return Some(raw);
                }
                b'\\' => i = escape(b, i, &mut raw)?,
                // A control character.
                _ => return None,
            }
            let consumed = i - base;
            if consumed >= 64 {
                break;
            }
            mask &= !0u64 << consumed;
        }
        // No special left in `base..base + width` from `i` on.
        i = i.max(base + width);
    }
}

/// The escape whose backslash is at `at`: checked, noted in `raw`; where it ends.
fn escape(b: &[u8], at: usize, raw: &mut JsonString) -> Option<usize> {
    raw.escapes = true;
    match *b.get(at + 1)? {
        b'"' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => Some(at + 2),
        b'\\' => {
            raw.escaped_underscore |= b.get(at + 2) == Some(&b'_');
            Some(at + 2)
        }
        b'u' => {
            raw.unicode_escapes = true;
            unicode_escape(b, at)
        }
        _ => None,
    }
}

/// The `\u` escape whose backslash is at `at`: four hex digits, a high surrogate followed
/// by a `\u` low one, no lone low surrogate; where it (or the pair) ends.
fn unicode_escape(b: &[u8], at: usize) -> Option<usize> {
    let unit = hex4(b, at + 2)?;
    let mut end = at + 6;
    if (0xDC00..0xE000).contains(&unit) {
        return None;
    }
    if (0xD800..0xDC00).contains(&unit) {
        if b.get(end..end + 2)? != b"\\u" {
            return None;
        }
        let low = hex4(b, end + 2)?;
        if !(0xDC00..0xE000).contains(&low) {
            return None;
        }
        end += 6;
    }
    Some(end)
}

fn hex4(b: &[u8], at: usize) -> Option<u32> {
    let h = b.get(at..at + 4)?;
    let mut v = 0;
    for &c in h {
        v = v * 16 + (c as char).to_digit(16)?;
    }
    Some(v)
}

/// [`scan_walk`] in whole 64-byte blocks, without a loop over the escapes: the masks of `"`,
/// `\` and control characters, the escaped bytes (those after an odd run of backslashes,
/// carried from block to block), the end (the first quote not escaped); a control character
/// before it, or an escaped byte other than one of `"\/bfnrtu`, makes it `None`, as in the
/// walk; `\u` escapes (30 % of the string bytes of the shared MINT data are in strings with
/// one) are checked one by one with the walk's code.
///
/// # Safety
/// The CPU must have AVX-512F, BW and VBMI; `from <= b.len()`.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw,avx512vbmi")]
unsafe fn scan_avx512(b: &[u8], from: usize) -> Option<JsonString> {
    use std::arch::x86_64::*;
    // Escape letters, looked up by their low 7 bits: `ESCAPES[c & 127] == c` exactly when
    // `c` may follow a backslash (entry 0 is 1, so a 0 byte does not match it).
    let table = escape_table();
    // SAFETY: both loads read within `table`, which is 128 bytes.
    let (lo, hi) = unsafe {
        (
            _mm512_loadu_si512(table.as_ptr().cast()),
            _mm512_loadu_si512(table.as_ptr().add(64).cast()),
        )
    };
    let quote = _mm512_set1_epi8(b'"' as i8);
    let backslash = _mm512_set1_epi8(b'\\' as i8);
    let control = _mm512_set1_epi8(0x1f);
    let letter_u = _mm512_set1_epi8(b'u' as i8);
    let underscore = _mm512_set1_epi8(b'_' as i8);
    let mut escapes = false;
    let mut escaped_underscore = false;
    let mut unicode_escapes = false;
    // Where the last `\u` escape (or surrogate pair) checked ends.
    let mut unicode_done = 0;
    // Bit 0 of the next block is escaped / follows an escaped backslash.
    let mut carry_escaped = 0u64;
    let mut carry_escaped_backslash = 0u64;
    let mut at = from;
    loop {
        let left = b.len() - at;
        if left == 0 {
            return None; // no closing quote
        }
        let valid = if left >= 64 {
            !0u64
        } else {
            (1u64 << left) - 1
        };
        // SAFETY: `at < b.len()`, and the mask `valid` selects only the bytes
        // `at..min(at + 64, b.len())`, all within `b`; masked-off bytes are not read
        // (AVX-512 masked loads suppress faults there) and come back as 0.
        let v = unsafe { _mm512_maskz_loadu_epi8(valid, b.as_ptr().add(at).cast()) };
        let bs = _mm512_cmpeq_epi8_mask(v, backslash) & valid;
        let escaped = escaped_bytes(bs, &mut carry_escaped);
        let quotes = _mm512_cmpeq_epi8_mask(v, quote) & !escaped & valid;
        // The bytes of this block inside the string: below the first quote, if any.
        // Computed without branches on the data (escapes come at random places; a
        // mispredicted branch per block cost more than the masks).
        let inside = quotes.wrapping_sub(1) & !quotes & valid;
        let esc = escaped & inside;
        let known = _mm512_cmpeq_epi8_mask(_mm512_permutex2var_epi8(lo, v, hi), v);
        // A control character, or an escaped byte that is no JSON escape.
        let bad = (_mm512_cmple_epu8_mask(v, control) & inside) | (esc & !known);
        let mut us = esc & _mm512_cmpeq_epi8_mask(v, letter_u);
        if bad | us != 0 {
            if bad != 0 {
                return None;
            }
            // `\u` escapes: their hex digits and surrogate pairs checked by the walk's
            // code, in order; the `u` of a pair's second half is part of the first.
            unicode_escapes = true;
            while us != 0 {
                let u = at + us.trailing_zeros() as usize;
                us &= us - 1;
                if u >= unicode_done {
                    unicode_done = unicode_escape(b, u - 1)?;
                }
            }
        }
        escapes |= bs & inside != 0;
        // `\\` then `_`: an escaped backslash followed by an underscore.
        let escaped_backslash = esc & bs;
        escaped_underscore |= (escaped_backslash << 1 | carry_escaped_backslash)
            & _mm512_cmpeq_epi8_mask(v, underscore)
            & inside
            != 0;
        carry_escaped_backslash = escaped_backslash >> 63;
        if quotes != 0 {
            return Some(JsonString {
                end: at + quotes.trailing_zeros() as usize,
                escapes,
                unicode_escapes,
                escaped_underscore,
            });
        }
        at += left.min(64);
    }
}

/// The lookup table of [`scan_avx512`]: entry `c` is `c` for the bytes that may follow a
/// backslash, else 0 (entry 0 is 1).
#[cfg(target_arch = "x86_64")]
fn escape_table() -> &'static [u8; 128] {
    static TABLE: [u8; 128] = {
        let mut t = [0u8; 128];
        t[0] = 1;
        let letters = *b"\"\\/bfnrtu";
        let mut k = 0;
        while k < letters.len() {
            t[letters[k] as usize] = letters[k];
            k += 1;
        }
        t
    };
    &TABLE
}

/// The escaped bytes of a 64-byte block whose backslashes are `backslash`: those after an odd
/// run of backslashes (simdjson's carry trick: runs starting on odd bits are told from runs
/// starting on even bits by one addition). `carry` says, in and out, that bit 0 of the next
/// block is escaped by a run that ends the block.
// Only the x86-64 scan calls it; its unit test runs on every target.
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
fn escaped_bytes(backslash: u64, carry: &mut u64) -> u64 {
    const EVEN: u64 = 0x5555_5555_5555_5555;
    // A backslash escaped by the previous block starts no escape.
    let backslash = backslash & !*carry;
    let follows_escape = backslash << 1 | *carry;
    let odd_starts = backslash & !EVEN & !follows_escape;
    let (even_starts, overflow) = odd_starts.overflowing_add(backslash);
    *carry = u64::from(overflow);
    (EVEN ^ (even_starts << 1)) & follows_escape
}

fn special(c: u8) -> bool {
    matches!(c, b'"' | b'\\' | 0..=0x1f)
}

/// The specials among `b`'s bytes, one bit each, byte by byte.
fn specials_scalar(b: &[u8]) -> u64 {
    b.iter()
        .enumerate()
        .fold(0u64, |m, (k, &c)| m | (u64::from(special(c)) << k))
}

/// The specials (`"`, `\`, control characters) among the 64 bytes from `at` (fewer at the end
/// of `b`): bit k set when `b[at + k]` is one, and how many bytes were looked at.
#[inline]
fn specials64(b: &[u8], at: usize) -> (u64, usize) {
    if at + 64 > b.len() {
        let tail = &b[at.min(b.len())..];
        return (specials_scalar(tail), tail.len());
    }
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::*;
        let mut mask = 0u64;
        // SAFETY: SSE2 is part of x86-64, and the four 16-byte loads lie within `b`
        // (`at + 64 <= b.len()`, checked above).
        unsafe {
            let quote = _mm_set1_epi8(b'"' as i8);
            let backslash = _mm_set1_epi8(b'\\' as i8);
            let control = _mm_set1_epi8(0x1f);
            for k in 0..4 {
                let v = _mm_loadu_si128(b.as_ptr().add(at + 16 * k).cast());
                let hit = _mm_or_si128(
                    _mm_or_si128(_mm_cmpeq_epi8(v, quote), _mm_cmpeq_epi8(v, backslash)),
                    // v <= 0x1f (unsigned) exactly when min(v, 0x1f) == v.
                    _mm_cmpeq_epi8(_mm_min_epu8(v, control), v),
                );
                mask |= u64::from(_mm_movemask_epi8(hit) as u16) << (16 * k);
            }
        }
        (mask, 64)
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        (specials_scalar(&b[at..at + 64]), 64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_specials_at_every_offset() {
        for len in 0..140 {
            for at in 0..len {
                for c in [b'"', b'\\', 0u8, 0x1f, b'\n'] {
                    let mut v = vec![b'a'; len];
                    v[at] = c;
                    v[len - 1 - at] = c;
                    for from in [0, 1, 60, 64, 70] {
                        let (mask, width) = specials64(&v, from.min(len));
                        let want: u64 = (from.min(len)..len)
                            .take(64)
                            .enumerate()
                            .filter(|&(_, i)| i == at || i == len - 1 - at)
                            .fold(0, |m, (k, _)| m | 1 << k);
                        assert_eq!((mask, width), (want, (len - from.min(len)).min(64)));
                        // The SSE2 masks equal the byte-by-byte ones.
                        let end = (from.min(len) + 64).min(len);
                        assert_eq!(mask, specials_scalar(&v[from.min(len)..end]));
                    }
                }
            }
            let v = vec![0xC3u8; len];
            assert_eq!(specials64(&v, 0).0, 0);
        }
    }

    /// Whether each byte is escaped: it follows a backslash that is not itself escaped.
    fn escaped_by_walking(b: &[u8]) -> Vec<bool> {
        let mut pending = false;
        b.iter()
            .map(|&c| {
                let escaped = pending;
                pending = c == b'\\' && !escaped;
                escaped
            })
            .collect()
    }

    #[test]
    fn escaped_bytes_follow_odd_backslash_runs_across_blocks() {
        let mut rng = 0x2545_F491_4F6C_DD1Du64;
        for round in 0..4000 {
            let len = 64 * (1 + round % 4);
            // Backslash density from sparse to long runs.
            let density = 1 + round % 7;
            let b: Vec<u8> = (0..len)
                .map(|_| {
                    rng ^= rng << 13;
                    rng ^= rng >> 7;
                    rng ^= rng << 17;
                    if rng % 8 < density {
                        b'\\'
                    } else {
                        b'x'
                    }
                })
                .collect();
            let want = escaped_by_walking(&b);
            let mut carry = 0;
            for (k, block) in b.chunks(64).enumerate() {
                let bs = block
                    .iter()
                    .enumerate()
                    .fold(0u64, |m, (j, &c)| m | u64::from(c == b'\\') << j);
                let got = escaped_bytes(bs, &mut carry);
                for j in 0..64 {
                    assert_eq!(
                        got >> j & 1 == 1,
                        want[64 * k + j],
                        "round {round} byte {}",
                        64 * k + j
                    );
                }
            }
        }
    }

    /// The AVX-512 scan of strings gives what the walk gives: the same [`JsonString`], or
    /// `None` for the same strings.
    #[test]
    fn wide_string_scan_agrees_with_the_walk() {
        let wide = StringScanner::new();
        if !wide.is_wide() {
            eprintln!("no AVX-512 BW/VBMI here: the walk is the only string scan");
            return;
        }
        let walk = StringScanner::walk();
        // Pieces that make escape runs, quotes and controls land on every side of a block edge.
        const PIECES: [&[u8]; 22] = [
            b"a",
            b"xyz",
            b"\\",
            b"\\\\",
            b"\\\\\\",
            b"\\\"",
            b"\"",
            b"\\n",
            b"\\/",
            b"\\_",
            b"\\\\_",
            b"_",
            b"\\u00e9",
            b"\\ud83d\\ude00",
            b"\\ud800",
            b"\\udc00x",
            b"\\u12g4",
            b"\\x",
            b"\\\xc3\xa9",
            b"\x01",
            b"\x1f",
            b"\xc3\xa9 [PYTHON] ",
        ];
        let mut rng = 0x9E37_79B9_7F4A_7C15u64;
        let mut next = |m: usize| {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            (rng % m as u64) as usize
        };
        let (mut tried, mut some, mut walked) = (0, 0, 0);
        for _ in 0..60_000 {
            let mut b = b"{\"k\": ".to_vec();
            b.extend(std::iter::repeat_n(b' ', next(70)));
            // Just after the opening quote.
            let at = b.len() + 1;
            b.push(b'"');
            // Mostly plain text with the odd special, sometimes dense with them.
            let dense = next(3) == 0;
            for _ in 0..next(40) {
                if dense || next(6) == 0 {
                    b.extend_from_slice(PIECES[next(PIECES.len())]);
                } else {
                    b.extend(std::iter::repeat_n(b'y', next(40)));
                }
            }
            match next(4) {
                0 => {} // unterminated
                _ => b.extend_from_slice(b"\", \"z\": \"w\"}"),
            }
            let (want, got) = (walk.scan(&b, at), wide.scan(&b, at));
            assert_eq!(got, want, "{:?}", String::from_utf8_lossy(&b[at..]));
            if let Some(raw) = &want {
                some += 1;
                walked += usize::from(raw.unicode_escapes);
            }
            tried += 1;
        }
        // Both outcomes, and `\u` escapes, are exercised.
        assert!(
            some > tried / 5 && some < tried * 4 / 5,
            "{some} of {tried}"
        );
        assert!(walked > 100, "{walked}");
    }

    #[test]
    fn both_scans_end_strings_longer_than_a_block_with_escapes_at_its_edges() {
        for scanner in [StringScanner::new(), StringScanner::walk()] {
            for pad in 55..75 {
                for (esc, unicode) in [
                    (r#"\""#, false),
                    (r#"\\"#, false),
                    (r#"\u00e9"#, true),
                    (r#"\ud83d\ude00"#, true),
                    (r#"\\_"#, false),
                ] {
                    let body = format!("{}{esc}{}{esc}", "x".repeat(pad), "y".repeat(pad));
                    let json = format!(r#""{body}""#);
                    let got = scanner.scan(json.as_bytes(), 1).unwrap();
                    assert_eq!(
                        got,
                        JsonString {
                            end: json.len() - 1,
                            escapes: true,
                            unicode_escapes: unicode,
                            escaped_underscore: esc == r#"\\_"#,
                        },
                        "{json}"
                    );
                    let cut = &json[..json.len() - 1];
                    assert!(
                        scanner.scan(cut.as_bytes(), 1).is_none(),
                        "unterminated {cut}"
                    );
                }
            }
            // Starting at the end, or past it, finds nothing.
            assert_eq!(scanner.scan(b"\"", 1), None);
            assert_eq!(scanner.scan(b"\"", 2), None);
            assert_eq!(scanner.scan(b"\"\"", 1).map(|s| s.end), Some(1));
        }
    }
}
