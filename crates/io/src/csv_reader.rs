//! CSV reader: header check, and the file line of every record (quoted fields may span lines),
//! whole ([`read_csv`]) or one record at a time ([`CsvStream`]).

use scorekit_core::error::InputError;
use std::collections::{HashMap, VecDeque};
use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};

/// A CSV file with its header.
#[derive(Debug, Clone)]
pub struct CsvTable {
    /// The file, as the user named it.
    pub file: String,
    /// Column names in file order.
    pub headers: Vec<String>,
    /// Data rows.
    pub records: Vec<CsvRecord>,
    index: HashMap<String, usize>,
}

/// One data row: its 1-based data-row number, the file line it starts on, and its fields.
#[derive(Debug, Clone)]
pub struct CsvRecord {
    /// 1-based position among data rows.
    pub row: usize,
    /// 1-based line in the file where the row starts.
    pub line: usize,
    /// The fields, in header order.
    pub fields: Vec<String>,
}

impl CsvTable {
    /// Column index by name.
    pub fn column(&self, name: &str) -> Option<usize> {
        self.index.get(name).copied()
    }

    /// A field of a record by column name (empty string when the column is absent).
    pub fn get<'a>(&self, rec: &'a CsvRecord, name: &str) -> Option<&'a str> {
        self.column(name)
            .and_then(|i| rec.fields.get(i))
            .map(String::as_str)
    }
}

/// Read a CSV file whose header must contain `required` columns; extra columns are kept.
pub fn read_csv(path: &Path, required: &[&str]) -> Result<CsvTable, InputError> {
    let mut stream = CsvStream::open(path, required)?;
    let mut records = Vec::new();
    while let Some(rec) = stream.next_record()? {
        records.push(rec);
    }
    Ok(CsvTable {
        file: path.display().to_string(),
        headers: stream.headers,
        records,
        index: stream.index,
    })
}

/// A CSV file read one record at a time: memory bounded by csv's buffer and the longest record
/// however large the file is. Follows [`super::read_text`]: invalid UTF-8 named by line and
/// byte offset, an empty file refused, a UTF-8 byte-order mark dropped; every record has its
/// 1-based row and the file line it starts on.
pub struct CsvStream {
    path: PathBuf,
    reader: csv::Reader<Tracked<File>>,
    record: csv::StringRecord,
    headers: Vec<String>,
    index: HashMap<String, usize>,
    rows: usize,
}

impl CsvStream {
    /// Open `path` and check its header: every column of `required` once, no column twice.
    pub fn open(path: &Path, required: &[&str]) -> Result<Self, InputError> {
        let file = File::open(path)
            .map_err(|e| InputError::file(path, format!("cannot read file: {e}")))?;
        let tracked = Tracked::new(file)
            .map_err(|e| InputError::file(path, format!("cannot read file: {e}")))?;
        let mut reader = csv::ReaderBuilder::new()
            .flexible(false)
            .has_headers(true)
            .from_reader(tracked);
        let header = reader.headers().cloned();
        let headers: Vec<String> = match header {
            Ok(h) => h.iter().map(|h| h.trim().to_string()).collect(),
            Err(e) => return Err(stream_error(path, &mut reader, e, "cannot read CSV header")),
        };
        let mut stream = CsvStream {
            path: path.to_path_buf(),
            reader,
            record: csv::StringRecord::new(),
            headers,
            index: HashMap::new(),
            rows: 0,
        };
        if stream.headers.iter().all(String::is_empty) && stream.is_at_end()? {
            return Err(InputError::file(path, "file is empty"));
        }
        for (i, h) in stream.headers.iter().enumerate() {
            if stream.index.insert(h.clone(), i).is_some() {
                return Err(InputError::field(
                    path,
                    1,
                    h,
                    "column appears twice in the header",
                ));
            }
        }
        let missing: Vec<&str> = required
            .iter()
            .copied()
            .filter(|c| !stream.index.contains_key(*c))
            .collect();
        if !missing.is_empty() {
            return Err(InputError::line(
                path,
                1,
                format!(
                    "CSV header lacks column(s) {}; found: {}",
                    missing.join(", "),
                    stream.headers.join(", ")
                ),
            ));
        }
        Ok(stream)
    }

    /// Column index by name.
    pub fn column(&self, name: &str) -> Option<usize> {
        self.index.get(name).copied()
    }

    /// Whether nothing but blank lines follows the header.
    fn is_at_end(&mut self) -> Result<bool, InputError> {
        let mut probe = csv::ByteRecord::new();
        let more = match self.reader.read_byte_record(&mut probe) {
            Ok(more) => more,
            Err(e) => {
                return Err(stream_error(
                    &self.path,
                    &mut self.reader,
                    e,
                    "malformed CSV",
                ))
            }
        };
        Ok(!more || probe.iter().all(|f| f.iter().all(u8::is_ascii_whitespace)))
    }

    /// The next data record, or `None` at the end of the file.
    pub fn next_record(&mut self) -> Result<Option<CsvRecord>, InputError> {
        match self.reader.read_record(&mut self.record) {
            Ok(false) => return Ok(None),
            Ok(true) => {}
            Err(e) => {
                return Err(stream_error(
                    &self.path,
                    &mut self.reader,
                    e,
                    "malformed CSV",
                ))
            }
        }
        let byte = self.record.position().map_or(0, |p| p.byte());
        let line = self.reader.get_mut().line_at(byte);
        self.rows += 1;
        Ok(Some(CsvRecord {
            row: self.rows,
            line,
            fields: self.record.iter().map(str::to_string).collect(),
        }))
    }
}

/// A csv error as an input error naming the line: the reader's own UTF-8 check first (it
/// stops the bytes at the first invalid one), then a ragged row, then csv's own words.
fn stream_error(
    path: &Path,
    reader: &mut csv::Reader<Tracked<File>>,
    e: csv::Error,
    what: &str,
) -> InputError {
    if let Some(bad) = reader.get_ref().bad {
        return InputError::line(
            path,
            bad.line,
            format!(
                "not valid UTF-8 (byte 0x{:02x} at offset {}); save the file as UTF-8",
                bad.byte, bad.offset
            ),
        );
    }
    let line = e
        .position()
        .map(|p| reader.get_mut().line_at(p.byte()))
        .unwrap_or(0);
    let msg = match e.kind() {
        csv::ErrorKind::UnequalLengths {
            expected_len, len, ..
        } => format!("row has {len} fields, the header has {expected_len}"),
        csv::ErrorKind::Io(io) => format!("cannot read file: {io}"),
        _ => format!("{what}: {e}"),
    };
    InputError::line(path, line, msg)
}

/// The first invalid UTF-8 byte of a file: its value, file offset and line.
#[derive(Debug, Clone, Copy)]
struct BadByte {
    byte: u8,
    offset: u64,
    line: usize,
}

/// The file as csv reads it: a UTF-8 byte-order mark dropped, bytes checked as UTF-8 as they
/// pass (the bytes before the first invalid one are handed on, then an error), and the line
/// ends handed on remembered until their line is asked for. csv's positions point at the
/// previous terminator and its line counter miscounts CRLF inside quoted fields, so lines are
/// counted from the bytes; positions only grow, so each terminator is counted once.
struct Tracked<R> {
    inner: R,
    /// Bytes read ahead at the start (the byte-order-mark check), handed out first.
    pending: Vec<u8>,
    /// Bytes handed to csv (its positions count these).
    handed: u64,
    /// Bytes dropped at the start (a byte-order mark): file offset = position + skipped.
    skipped: u64,
    /// `\n`s handed out.
    newlines: usize,
    /// Positions of the `\r` and `\n` bytes handed out and not yet passed by a line query
    /// (true: `\n`).
    terminators: VecDeque<(u64, bool)>,
    /// Passed `\n`s plus one: the line at `passed`.
    line: usize,
    passed: u64,
    /// The start of a UTF-8 sequence cut by the end of the last read.
    carry: Vec<u8>,
    bad: Option<BadByte>,
}

impl<R: Read> Tracked<R> {
    fn new(mut inner: R) -> std::io::Result<Self> {
        let mut head = Vec::with_capacity(3);
        while head.len() < 3 {
            let mut b = [0u8; 3];
            let n = inner.read(&mut b[..3 - head.len()])?;
            if n == 0 {
                break;
            }
            head.extend_from_slice(&b[..n]);
        }
        let bom = head == b"\xef\xbb\xbf";
        Ok(Tracked {
            inner,
            pending: if bom { Vec::new() } else { head },
            handed: 0,
            skipped: if bom { 3 } else { 0 },
            newlines: 0,
            terminators: VecDeque::new(),
            line: 1,
            passed: 0,
            carry: Vec::new(),
            bad: None,
        })
    }

    /// The line on which the record at (or just after the terminator at) `offset` starts.
    fn line_at(&mut self, offset: u64) -> usize {
        let mut end = offset.max(self.passed);
        while let Some(&(pos, lf)) = self.terminators.front() {
            if pos <= end {
                // Before the record, or the run of terminators that starts at it.
                if pos == end {
                    end += 1;
                }
                self.line += usize::from(lf);
                self.terminators.pop_front();
            } else {
                break;
            }
        }
        self.passed = end;
        self.line
    }

    /// Check `bytes` (the next ones to hand out) as UTF-8; how many of them may be handed out.
    fn check_utf8(&mut self, bytes: &[u8]) -> usize {
        let mut from = 0;
        if !self.carry.is_empty() {
            // Complete the cut sequence with the first bytes of this read.
            let width = utf8_width(self.carry[0]);
            let need = width.saturating_sub(self.carry.len()).min(bytes.len());
            let mut joined = self.carry.clone();
            joined.extend_from_slice(&bytes[..need]);
            match std::str::from_utf8(&joined) {
                Ok(_) => {
                    self.carry.clear();
                    from = need;
                }
                Err(e) if e.error_len().is_none() && need == bytes.len() => {
                    self.carry = joined;
                    return bytes.len();
                }
                Err(_) => {
                    let at = self.handed - self.carry.len() as u64;
                    self.fail(self.carry[0], at, 0);
                    return 0;
                }
            }
        }
        match std::str::from_utf8(&bytes[from..]) {
            Ok(_) => bytes.len(),
            Err(e) => {
                let valid = from + e.valid_up_to();
                if e.error_len().is_none() {
                    self.carry = bytes[valid..].to_vec();
                    bytes.len()
                } else {
                    let newlines = memchr::memchr_iter(b'\n', &bytes[..valid]).count();
                    self.fail(bytes[valid], self.handed + valid as u64, newlines);
                    valid
                }
            }
        }
    }

    fn fail(&mut self, byte: u8, position: u64, newlines_before: usize) {
        self.bad = Some(BadByte {
            byte,
            offset: position + self.skipped,
            line: self.newlines + newlines_before + 1,
        });
    }

    /// Remember the line ends among bytes about to be handed out.
    fn note(&mut self, bytes: &[u8]) {
        for (i, &b) in bytes.iter().enumerate() {
            if b == b'\n' || b == b'\r' {
                self.terminators
                    .push_back((self.handed + i as u64, b == b'\n'));
                self.newlines += usize::from(b == b'\n');
            }
        }
        self.handed += bytes.len() as u64;
    }
}

/// Bytes of the UTF-8 sequence a lead byte starts (1 for a byte that starts none: the check
/// then fails on it).
fn utf8_width(lead: u8) -> usize {
    match lead {
        0xc0..=0xdf => 2,
        0xe0..=0xef => 3,
        0xf0..=0xf7 => 4,
        _ => 1,
    }
}

impl<R: Read> Read for Tracked<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if self.bad.is_some() {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                "not valid UTF-8",
            ));
        }
        let n = if self.pending.is_empty() {
            self.inner.read(buf)?
        } else {
            let n = self.pending.len().min(buf.len());
            buf[..n].copy_from_slice(&self.pending[..n]);
            self.pending.drain(..n);
            n
        };
        if n == 0 && !self.carry.is_empty() {
            // The file ends inside a sequence.
            let at = self.handed - self.carry.len() as u64;
            self.fail(self.carry[0], at, 0);
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                "not valid UTF-8",
            ));
        }
        let ok = self.check_utf8(&buf[..n]);
        self.note(&buf[..ok]);
        if ok == 0 && n > 0 {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                "not valid UTF-8",
            ));
        }
        Ok(ok)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn write(bytes: &[u8]) -> tempfile::NamedTempFile {
        let mut f = tempfile::NamedTempFile::new().unwrap();
        f.write_all(bytes).unwrap();
        f
    }

    #[test]
    fn reads_rows_with_lines_across_quoted_newlines_bom_and_crlf() {
        let f = write(b"\xef\xbb\xbfscene,gt,response\r\na,yes,\"multi\r\nline\"\r\nb,no,No.\r\n");
        let t = read_csv(f.path(), &["scene", "gt", "response"]).unwrap();
        assert_eq!(t.records.len(), 2);
        assert_eq!(t.get(&t.records[0], "response"), Some("multi\r\nline"));
        assert_eq!((t.records[1].row, t.records[1].line), (2, 4));
    }

    #[test]
    fn missing_column_and_ragged_rows_are_errors() {
        let f = write(b"scene,gt\na,yes\n");
        let e = read_csv(f.path(), &["scene", "response"]).unwrap_err();
        assert!(e.message.contains("lacks column(s) response"), "{e}");
        let f = write(b"scene,gt\na,yes\nb\n");
        let e = read_csv(f.path(), &["scene"]).unwrap_err();
        assert_eq!(e.line, Some(3));
        assert!(e.message.contains("1 fields, the header has 2"), "{e}");
    }

    /// A reader that hands out one byte per read: every UTF-8 sequence and CRLF cut apart.
    struct Trickle<'a>(&'a [u8]);

    impl Read for Trickle<'_> {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            match self.0.split_first() {
                Some((&b, rest)) if !buf.is_empty() => {
                    buf[0] = b;
                    self.0 = rest;
                    Ok(1)
                }
                _ => Ok(0),
            }
        }
    }

    /// Lines of the records csv reads through [`Tracked`], and the bad byte that stopped it.
    fn trickled(bytes: &[u8]) -> (Vec<(usize, String)>, Option<BadByte>) {
        let mut reader = csv::ReaderBuilder::new()
            .has_headers(false)
            .flexible(true)
            .from_reader(Tracked::new(Trickle(bytes)).unwrap());
        let mut rec = csv::StringRecord::new();
        let mut lines = Vec::new();
        while let Ok(true) = reader.read_record(&mut rec) {
            let byte = rec.position().unwrap().byte();
            let line = reader.get_mut().line_at(byte);
            lines.push((line, rec.iter().collect::<Vec<_>>().join("|")));
        }
        (lines, reader.get_ref().bad)
    }

    #[test]
    fn byte_at_a_time_keeps_lines_and_multibyte_text() {
        let (lines, bad) = trickled("\u{feff}h,x\r\n\"é\r\n€\",𝄞\r\n\r\nlast,ü\n".as_bytes());
        assert!(bad.is_none());
        assert_eq!(
            lines,
            vec![
                (1, "h|x".to_string()),
                (2, "é\r\n€|𝄞".to_string()),
                (5, "last|ü".to_string())
            ]
        );
    }

    #[test]
    fn invalid_utf8_is_named_by_line_and_file_offset_however_it_is_read() {
        // Offsets count the byte-order mark, as the whole-file check does.
        let bytes = b"\xef\xbb\xbfscene,gt\na,\xc3\xa9\nb,\xc3(\n";
        let (lines, bad) = trickled(bytes);
        let bad = bad.expect("the bad byte is found");
        assert_eq!((bad.byte, bad.offset, bad.line), (0xc3, 19, 3));
        assert_eq!(lines.len(), 2, "the rows before it are read: {lines:?}");
        let f = write(bytes);
        let e = read_csv(f.path(), &["scene"]).unwrap_err();
        let whole = crate::text::text_from_bytes(f.path(), bytes.to_vec()).unwrap_err();
        assert_eq!(
            (e.line, e.message.clone()),
            (whole.line, whole.message),
            "{e}"
        );
        // A sequence cut by the end of the file.
        let (_, bad) = trickled(b"a,b\nc,\xe2\x82");
        let bad = bad.expect("a cut sequence is invalid");
        assert_eq!((bad.byte, bad.offset, bad.line), (0xe2, 6, 2));
    }

    #[test]
    fn an_empty_or_blank_file_is_refused_as_empty() {
        for bytes in [&b""[..], b"\n\n", b"  \r\n", b"\xef\xbb\xbf"] {
            let f = write(bytes);
            let e = read_csv(f.path(), &["scene"]).unwrap_err();
            assert_eq!(e.message, "file is empty", "{bytes:?}");
        }
    }
}
