//! A JSON Lines file read as a stream: one buffer of the file at a time, lines handed out
//! in place (no copy), memory bounded by the buffer and the longest line however large the
//! file is. Each read's new bytes are handed out too ([`LineStream::fresh`]), so that the
//! caller can hash them, many files together ([`super::Sha256Lanes`]).
//!
//! Lines follow [`super::TextFile::lines`]: 1-based numbers counting every `\n`, a trailing
//! `\r` removed, blank lines skipped, a UTF-8 byte-order mark at the start dropped. Invalid
//! UTF-8 is reported with its line and the byte offset in the file.

use scorekit_core::error::InputError;
use std::fs::File;
use std::io::Read;
use std::path::Path;

/// How many spare buffers a thread keeps for its next streams (a reader of many files keeps
/// up to [`super::LANES`] open).
const SPARES: usize = super::LANES;

thread_local! {
    /// Buffers of this thread's closed streams, kept for its next ones: a fresh buffer per file
    /// (zeroed, and mapped and unmapped by the allocator at this size) cost more than hashing
    /// a small file.
    static SPARE: std::cell::RefCell<Vec<Vec<u8>>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// What the buffer holds next.
pub enum Buffered<'a> {
    /// A non-blank line and its number.
    Line(usize, &'a str),
    /// Only part of a line, or nothing: read more ([`LineStream::read_more`]).
    NeedsRead,
    /// The end of the file.
    End,
}

/// What the buffer holds next, without a borrow (so that the caller may read on): a line is
/// [`LineStream::valid`] and carries its number.
enum Span {
    Line(usize),
    NeedsRead,
    End,
}

/// A results file being read line by line.
pub struct LineStream {
    name: String,
    file: File,
    buf: Vec<u8>,
    /// Bytes per read (the buffer's usual size; a longer line grows it).
    chunk: usize,
    /// Start and end of the unread bytes in `buf`.
    start: usize,
    end: usize,
    /// Where the search for the next `\n` resumes (no `\n` in `start..searched`).
    searched: usize,
    /// File offset of `buf[0]`.
    base: u64,
    eof: bool,
    /// Number of the next line (1-based).
    next_line: usize,
    /// Bytes the last read added (at the end of the unread bytes).
    fresh: usize,
    bytes: u64,
    /// The span of `buf` that [`LineStream::next_span`] last checked as UTF-8 (empty when none):
    /// the only span [`LineStream::text`] hands out. `read_more`, the only writer of `buf`,
    /// empties it, so it always holds valid UTF-8.
    valid: (usize, usize),
}

impl LineStream {
    /// Open `path`, to be read `chunk` bytes at a time; `name` is how messages name it.
    pub fn open(path: &Path, name: &str, chunk: usize) -> Result<Self, InputError> {
        let file = File::open(path)
            .map_err(|e| InputError::file(name, format!("cannot read file: {e}")))?;
        let chunk = chunk.max(1);
        let mut buf = SPARE.with_borrow_mut(|s| s.pop()).unwrap_or_default();
        if buf.len() != chunk {
            buf = vec![0; chunk];
        }
        Ok(LineStream {
            name: name.to_string(),
            file,
            buf,
            chunk,
            start: 0,
            end: 0,
            searched: 0,
            base: 0,
            eof: false,
            next_line: 1,
            fresh: 0,
            bytes: 0,
            valid: (0, 0),
        })
    }

    /// The next non-blank line and its number, or `None` at the end of the file; reads as
    /// needed and hands each read's new bytes to `fresh`.
    pub fn next_line(
        &mut self,
        fresh: &mut dyn FnMut(&[u8]),
    ) -> Result<Option<(usize, &str)>, InputError> {
        loop {
            match self.next_span()? {
                Span::Line(number) => return Ok(Some((number, self.text()))),
                Span::End => return Ok(None),
                Span::NeedsRead => {
                    self.read_more()?;
                    fresh(self.fresh());
                }
            }
        }
    }

    /// The next non-blank line if the buffer holds all of it; never reads.
    pub fn buffered_line(&mut self) -> Result<Buffered<'_>, InputError> {
        Ok(match self.next_span()? {
            Span::Line(number) => Buffered::Line(number, self.text()),
            Span::NeedsRead => Buffered::NeedsRead,
            Span::End => Buffered::End,
        })
    }

    /// [`Self::buffered_line`], the line left in [`Self::valid`] (checked as UTF-8).
    fn next_span(&mut self) -> Result<Span, InputError> {
        loop {
            let Some((from, to, number)) = self.next_raw() else {
                return Ok(if self.eof { Span::End } else { Span::NeedsRead });
            };
            let bom = if number == 1 && self.buf[from..to].starts_with(b"\xEF\xBB\xBF") {
                3
            } else {
                0
            };
            let bytes = &self.buf[from + bom..to];
            // Only what follows the ASCII start of the line (most lines are ASCII throughout:
            // JSON writers escape the rest) goes through the full UTF-8 check.
            let ascii = scorekit_kernels::ascii::ascii_prefix(bytes);
            if let Err(e) = std::str::from_utf8(&bytes[ascii..]) {
                let offset = self.base + (from + bom + ascii + e.valid_up_to()) as u64;
                return Err(InputError::line(
                    &self.name,
                    number,
                    format!("not valid UTF-8 (byte offset {offset})"),
                ));
            }
            // A final `\r` dropped (ASCII: the span still ends on a character boundary); a
            // line of white space only is skipped.
            let mut to = to;
            if to > from + bom && self.buf[to - 1] == b'\r' {
                to -= 1;
            }
            self.valid = (from + bom, to);
            if !self.text().trim().is_empty() {
                return Ok(Span::Line(number));
            }
        }
    }

    /// The span last checked by [`Self::next_span`] as text, without checking it again.
    fn text(&self) -> &str {
        let (from, to) = self.valid;
        // SAFETY: `valid` holds UTF-8 (its field's invariant: `next_span` sets it only to a span
        // it checked, an ASCII prefix, which ends on a character boundary, and a rest that
        // `from_utf8` accepted, less at most a final ASCII `\r`; `read_more`, the only writer
        // of `buf`, empties it first). Slicing checks the bounds.
        unsafe { std::str::from_utf8_unchecked(&self.buf[from..to]) }
    }

    /// Read more of the file after the unread bytes (moved to the front of the buffer first,
    /// the buffer doubled if they fill it), until the buffer is full or the file ends. The new
    /// bytes are [`Self::fresh`].
    pub fn read_more(&mut self) -> Result<(), InputError> {
        // The bytes move or change below: the last checked span no longer holds them.
        self.valid = (0, 0);
        if self.start > 0 {
            self.buf.copy_within(self.start..self.end, 0);
            self.base += self.start as u64;
            self.searched -= self.start;
            self.end -= self.start;
            self.start = 0;
        }
        if self.end == self.buf.len() {
            self.buf.resize(self.buf.len() * 2, 0);
        }
        // Fill the free space, so that the read that reaches the end of the file also finds
        // it (a read that returns less than asked is followed by one that returns nothing).
        let from = self.end;
        while self.end < self.buf.len() {
            let n = match self.file.read(&mut self.buf[self.end..]) {
                Ok(n) => n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => {
                    return Err(InputError::file(
                        &self.name,
                        format!("cannot read file: {e}"),
                    ))
                }
            };
            if n == 0 {
                self.eof = true;
                break;
            }
            self.end += n;
        }
        self.fresh = self.end - from;
        self.bytes += self.fresh as u64;
        Ok(())
    }

    /// The bytes the last [`Self::read_more`] added.
    pub fn fresh(&self) -> &[u8] {
        &self.buf[self.end - self.fresh..self.end]
    }

    /// Read the rest of the file only to find invalid UTF-8, so that a file with a bad line
    /// and, further on, a bad byte reports the bad byte (as a whole-file check would).
    pub fn check_rest_utf8(&mut self) -> Result<(), InputError> {
        while self.next_line(&mut |_| {})?.is_some() {}
        Ok(())
    }

    /// Bytes read so far.
    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    /// The next `\n`-terminated line in the buffer (or the last line, at the end of the file):
    /// its span in `buf` without the `\n`, and its number.
    fn next_raw(&mut self) -> Option<(usize, usize, usize)> {
        if let Some(i) = memchr::memchr(b'\n', &self.buf[self.searched..self.end]) {
            let from = self.start;
            let to = self.searched + i;
            self.start = to + 1;
            self.searched = self.start;
            return Some((from, to, self.take_line_number()));
        }
        self.searched = self.end;
        if self.eof && self.start < self.end {
            let from = self.start;
            self.start = self.end;
            return Some((from, self.end, self.take_line_number()));
        }
        None
    }

    fn take_line_number(&mut self) -> usize {
        let n = self.next_line;
        self.next_line += 1;
        n
    }
}

impl Drop for LineStream {
    fn drop(&mut self) {
        // A buffer grown for a long line goes back to the usual size.
        let mut buf = std::mem::take(&mut self.buf);
        buf.truncate(self.chunk);
        buf.shrink_to(self.chunk);
        SPARE.with_borrow_mut(|s| {
            if s.len() < SPARES {
                s.push(buf);
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sha2::{Digest, Sha256};
    use std::io::Write;

    /// A small buffer, so that the tests' lines cross reads.
    const CHUNK: usize = 4096;

    fn lines_of(bytes: &[u8]) -> (Vec<(usize, String)>, String) {
        let dir = std::env::temp_dir().join(format!("scorekit-lines-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join(format!("{}.jsonl", bytes.len()));
        std::fs::File::create(&p).unwrap().write_all(bytes).unwrap();
        let mut s = LineStream::open(&p, "f.jsonl", CHUNK).unwrap();
        let mut out = Vec::new();
        let mut hasher = Sha256::new();
        while let Some((n, l)) = s.next_line(&mut |b| hasher.update(b)).unwrap() {
            out.push((n, l.to_string()));
        }
        std::fs::remove_file(&p).unwrap();
        assert_eq!(s.bytes(), bytes.len() as u64);
        let hex = hasher
            .finalize()
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        (out, hex)
    }

    #[test]
    fn lines_match_the_whole_file_reader() {
        let text = "\u{feff}{\"a\":1}\r\n\n  \n{\"b\":2}\n\u{a0}\n{\"c\":3}";
        let (got, sha) = lines_of(text.as_bytes());
        let file = crate::TextFile {
            path: "f".into(),
            text: text.trim_start_matches('\u{feff}').to_string(),
        };
        let want: Vec<(usize, String)> = file.lines().map(|(n, l)| (n, l.to_string())).collect();
        assert_eq!(got, want);
        assert_eq!(got.len(), 3);
        let hex: String = Sha256::digest(text.as_bytes())
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        assert_eq!(sha, hex);
    }

    #[test]
    fn buffered_lines_and_reads_give_the_same_lines_and_every_byte_once() {
        let mut text = String::new();
        for i in 0..300 {
            text.push_str(&format!(
                "{{\"i\":{i},\"pad\":\"{}\"}}\r\n\n",
                "y".repeat(i * 7 % 900)
            ));
        }
        let (want, _) = lines_of(text.as_bytes());
        let dir = std::env::temp_dir().join(format!("scorekit-lines-buf-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("f.jsonl");
        std::fs::File::create(&p)
            .unwrap()
            .write_all(text.as_bytes())
            .unwrap();
        let mut s = LineStream::open(&p, "f.jsonl", 1000).unwrap();
        let (mut got, mut seen, mut reads) = (Vec::new(), Vec::new(), 0);
        loop {
            match s.buffered_line().unwrap() {
                Buffered::Line(n, l) => got.push((n, l.to_string())),
                Buffered::NeedsRead => {
                    s.read_more().unwrap();
                    seen.extend_from_slice(s.fresh());
                    reads += 1;
                }
                Buffered::End => break,
            }
        }
        std::fs::remove_dir_all(&dir).unwrap();
        assert_eq!(got, want);
        assert_eq!(seen, text.as_bytes());
        assert!(reads > text.len() / 1000, "{reads} reads");
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
        let mut s = LineStream::open(&p, "bad.jsonl", CHUNK).unwrap();
        assert!(s.next_line(&mut |_| {}).unwrap().is_some());
        let e = s.next_line(&mut |_| {}).unwrap_err();
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
        let mut s = LineStream::open(&p, "bad.jsonl", CHUNK).unwrap();
        assert!(s.next_line(&mut |_| {}).unwrap().is_some());
        let e = s.next_line(&mut |_| {}).unwrap_err();
        assert_eq!(
            e.to_string(),
            "bad.jsonl:2: not valid UTF-8 (byte offset 14)"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
