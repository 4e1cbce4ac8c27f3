//! A JSON Lines file read as a stream: one buffer of the file at a time, lines handed out
//! in place (no copy), the file's sha256 computed from the same bytes, memory bounded by the
//! buffer and the longest line however large the file is.
//!
//! Lines follow [`super::TextFile::lines`]: 1-based numbers counting every `\n`, a trailing
//! `\r` removed, blank lines skipped, a UTF-8 byte-order mark at the start dropped. Invalid
//! UTF-8 is reported with its line and the byte offset in the file.

use crate::error::InputError;
use sha2::{Digest, Sha256};
use std::fs::File;
use std::io::Read;
use std::path::Path;

/// Bytes read from the file per `read` call; lines longer than this grow the buffer.
const CHUNK: usize = 1 << 20;

thread_local! {
    /// The buffer of this thread's last stream, kept for its next one: a fresh 1 MiB buffer
    /// per file (zeroed, and mapped and unmapped by the allocator at that size) cost more than
    /// hashing a small file.
    static SPARE: std::cell::Cell<Vec<u8>> = const { std::cell::Cell::new(Vec::new()) };
}

/// A results file being read line by line.
pub struct LineStream {
    name: String,
    file: File,
    buf: Vec<u8>,
    /// Start and end of the unread bytes in `buf`.
    start: usize,
    end: usize,
    /// File offset of `buf[0]`.
    base: u64,
    eof: bool,
    /// Number of the next line (1-based).
    next_line: usize,
    hasher: Sha256,
    bytes: u64,
}

impl LineStream {
    /// Open `path`; `name` is how messages name it.
    pub fn open(path: &Path, name: &str) -> Result<Self, InputError> {
        let file = File::open(path)
            .map_err(|e| InputError::file(name, format!("cannot read file: {e}")))?;
        let mut buf = SPARE.take();
        if buf.len() < CHUNK {
            buf = vec![0; CHUNK];
        }
        Ok(LineStream {
            name: name.to_string(),
            file,
            buf,
            start: 0,
            end: 0,
            base: 0,
            eof: false,
            next_line: 1,
            hasher: Sha256::new(),
            bytes: 0,
        })
    }

    /// The next non-blank line and its number, or `None` at the end of the file.
    pub fn next_line(&mut self) -> Result<Option<(usize, &str)>, InputError> {
        let (from, to, number) = loop {
            let Some((from, to, number)) = self.next_raw()? else {
                return Ok(None);
            };
            let bom = if number == 1 && self.buf[from..to].starts_with(b"\xEF\xBB\xBF") {
                3
            } else {
                0
            };
            let bytes = &self.buf[from + bom..to];
            // Only what follows the ASCII start of the line (most lines are ASCII throughout:
            // JSON writers escape the rest) goes through the full UTF-8 check.
            let ascii = ascii_prefix(bytes);
            if let Err(e) = std::str::from_utf8(&bytes[ascii..]) {
                let offset = self.base + (from + bom + ascii + e.valid_up_to()) as u64;
                return Err(InputError::line(
                    &self.name,
                    number,
                    format!("not valid UTF-8 (byte offset {offset})"),
                ));
            }
            // SAFETY: `bytes[..ascii]` is ASCII and `bytes[ascii..]` was validated as UTF-8
            // just above; an ASCII prefix ends on a character boundary, so the whole is UTF-8.
            let text = unsafe { std::str::from_utf8_unchecked(bytes) };
            let text = text.strip_suffix('\r').unwrap_or(text);
            if !text.trim().is_empty() {
                break (from + bom, from + bom + text.len(), number);
            }
        };
        // SAFETY: `buf[from..to]` was validated as UTF-8 just above (it is that string less
        // a final `\r`, an ASCII byte, so it still ends on a character boundary), and `buf`
        // has not changed since.
        let line = unsafe { std::str::from_utf8_unchecked(&self.buf[from..to]) };
        Ok(Some((number, line)))
    }

    /// Read the rest of the file only to find invalid UTF-8, so that a file with a bad line
    /// and, further on, a bad byte reports the bad byte (as a whole-file check would).
    pub fn check_rest_utf8(&mut self) -> Result<(), InputError> {
        while self.next_line()?.is_some() {}
        Ok(())
    }

    /// sha256 (hex) of every byte of the file; call after the last line.
    pub fn sha256(mut self) -> String {
        std::mem::take(&mut self.hasher)
            .finalize()
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect()
    }

    /// Bytes read so far.
    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    /// The next `\n`-terminated (or last) line: its span in `buf` without the `\n`, and its
    /// number.
    fn next_raw(&mut self) -> Result<Option<(usize, usize, usize)>, InputError> {
        let mut searched = self.start;
        loop {
            if let Some(i) = memchr::memchr(b'\n', &self.buf[searched..self.end]) {
                let from = self.start;
                let to = searched + i;
                self.start = to + 1;
                return Ok(Some((from, to, self.take_line_number())));
            }
            searched = self.end;
            if self.eof {
                if self.start == self.end {
                    return Ok(None);
                }
                let from = self.start;
                self.start = self.end;
                return Ok(Some((from, self.end, self.take_line_number())));
            }
            // Keep the partial line, make room after it, read more.
            if self.start > 0 {
                self.buf.copy_within(self.start..self.end, 0);
                self.base += self.start as u64;
                searched -= self.start;
                self.end -= self.start;
                self.start = 0;
            }
            if self.end == self.buf.len() {
                self.buf.resize(self.buf.len() * 2, 0);
            }
            let n = self
                .file
                .read(&mut self.buf[self.end..])
                .map_err(|e| InputError::file(&self.name, format!("cannot read file: {e}")))?;
            if n == 0 {
                self.eof = true;
            } else {
                self.hasher.update(&self.buf[self.end..self.end + n]);
                self.bytes += n as u64;
                self.end += n;
            }
        }
    }

    fn take_line_number(&mut self) -> usize {
        let n = self.next_line;
        self.next_line += 1;
        n
    }
}

/// How many bytes at the start of `b` are ASCII, in whole 64-byte blocks where the CPU has
/// AVX-512BW (`b.len()` when all are), else 0: what the caller need not check for UTF-8.
fn ascii_prefix(b: &[u8]) -> usize {
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

impl Drop for LineStream {
    fn drop(&mut self) {
        // A buffer grown for a long line goes back to the usual size.
        let mut buf = std::mem::take(&mut self.buf);
        buf.truncate(CHUNK);
        buf.shrink_to(CHUNK);
        SPARE.set(buf);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn lines_of(bytes: &[u8]) -> (Vec<(usize, String)>, String) {
        let dir = std::env::temp_dir().join(format!("scorekit-lines-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join(format!("{}.jsonl", bytes.len()));
        std::fs::File::create(&p).unwrap().write_all(bytes).unwrap();
        let mut s = LineStream::open(&p, "f.jsonl").unwrap();
        let mut out = Vec::new();
        while let Some((n, l)) = s.next_line().unwrap() {
            out.push((n, l.to_string()));
        }
        std::fs::remove_file(&p).unwrap();
        (out, s.sha256())
    }

    #[test]
    fn lines_match_the_whole_file_reader() {
        let text = "\u{feff}{\"a\":1}\r\n\n  \n{\"b\":2}\n\u{a0}\n{\"c\":3}";
        let (got, sha) = lines_of(text.as_bytes());
        let file = crate::input::TextFile {
            path: "f".into(),
            text: text.trim_start_matches('\u{feff}').to_string(),
        };
        let want: Vec<(usize, String)> = file.lines().map(|(n, l)| (n, l.to_string())).collect();
        assert_eq!(got, want);
        assert_eq!(got.len(), 3);
        use sha2::{Digest, Sha256};
        let hex: String = Sha256::digest(text.as_bytes())
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        assert_eq!(sha, hex);
    }

    #[test]
    fn lines_longer_than_the_buffer_and_across_reads() {
        let long = "x".repeat(CHUNK * 2 + 17);
        let mut text = String::new();
        for i in 0..5 {
            text.push_str(&format!("{i}{long}\n"));
        }
        let (got, _) = lines_of(text.as_bytes());
        assert_eq!(got.len(), 5);
        assert!(got
            .iter()
            .enumerate()
            .all(|(i, (n, l))| *n == i + 1 && l.len() == long.len() + 1));
    }

    #[test]
    fn ascii_prefix_stops_at_the_block_of_the_first_high_byte() {
        for len in [0, 1, 63, 64, 65, 200, 255, 256, 257, 600] {
            let mut v = vec![b'a'; len];
            assert_eq!(ascii_prefix(&v), len);
            for at in 0..len {
                v[at] = 0xC3;
                let got = ascii_prefix(&v);
                assert!(got <= at, "len {len} at {at}: {got}");
                #[cfg(target_arch = "x86_64")]
                if std::arch::is_x86_feature_detected!("avx512bw") {
                    assert_eq!(got, at / 64 * 64, "len {len} at {at}");
                }
                v[at] = b'a';
            }
        }
    }

    #[test]
    fn invalid_utf8_after_a_long_ascii_start_names_its_offset() {
        let dir = std::env::temp_dir().join(format!("scorekit-lines-bad2-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("bad.jsonl");
        let mut bytes = b"{\"a\":1}\n".to_vec();
        let line = format!("{{\"b\":\"{}\u{e9}", "x".repeat(300));
        bytes.extend_from_slice(line.as_bytes());
        bytes.extend_from_slice(b"\xe9\"}\n");
        std::fs::File::create(&p)
            .unwrap()
            .write_all(&bytes)
            .unwrap();
        let mut s = LineStream::open(&p, "bad.jsonl").unwrap();
        assert!(s.next_line().unwrap().is_some());
        let e = s.next_line().unwrap_err();
        let offset = 8 + line.len();
        assert_eq!(
            e.to_string(),
            format!("bad.jsonl:2: not valid UTF-8 (byte offset {offset})")
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn invalid_utf8_names_line_and_file_offset() {
        let dir = std::env::temp_dir().join(format!("scorekit-lines-bad-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("bad.jsonl");
        std::fs::File::create(&p)
            .unwrap()
            .write_all(b"{\"a\":1}\n{\"b\":\"\xff\"}\n")
            .unwrap();
        let mut s = LineStream::open(&p, "bad.jsonl").unwrap();
        assert!(s.next_line().unwrap().is_some());
        let e = s.next_line().unwrap_err();
        assert_eq!(
            e.to_string(),
            "bad.jsonl:2: not valid UTF-8 (byte offset 14)"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
