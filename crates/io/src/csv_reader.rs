//! CSV reader: header check, and the file line of every record (quoted fields may span lines).

use super::text::read_text;
use scorekit_core::error::InputError;
use std::collections::HashMap;
use std::path::Path;

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
    let text = read_text(path)?;
    let bytes = text.text.as_bytes();
    let mut reader = csv::ReaderBuilder::new().flexible(false).from_reader(bytes);
    let headers: Vec<String> = reader
        .headers()
        .map_err(|e| InputError::line(path, 1, format!("cannot read CSV header: {e}")))?
        .iter()
        .map(|h| h.trim().to_string())
        .collect();
    let mut index = HashMap::new();
    for (i, h) in headers.iter().enumerate() {
        if index.insert(h.clone(), i).is_some() {
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
        .filter(|c| !index.contains_key(*c))
        .collect();
    if !missing.is_empty() {
        return Err(InputError::line(
            path,
            1,
            format!(
                "CSV header lacks column(s) {}; found: {}",
                missing.join(", "),
                headers.join(", ")
            ),
        ));
    }
    let mut lines = LineCursor::new(bytes);
    let mut records = Vec::new();
    for result in reader.records() {
        let rec = result.map_err(|e| {
            let line = e.position().map(|p| lines.line_at(p.byte())).unwrap_or(0);
            let msg = match e.kind() {
                csv::ErrorKind::UnequalLengths {
                    expected_len, len, ..
                } => {
                    format!("row has {len} fields, the header has {expected_len}")
                }
                _ => format!("malformed CSV: {e}"),
            };
            InputError::line(path, line, msg)
        })?;
        let line = rec.position().map(|p| lines.line_at(p.byte())).unwrap_or(0);
        records.push(CsvRecord {
            row: records.len() + 1,
            line,
            fields: rec.iter().map(str::to_string).collect(),
        });
    }
    Ok(CsvTable {
        file: path.display().to_string(),
        headers,
        records,
        index,
    })
}

/// Maps byte offsets of records to 1-based lines. csv's positions point at the previous terminator
/// and its line counter miscounts CRLF inside quoted fields, so count from the bytes instead.
/// Offsets only grow, so each byte is counted once: linear in the file, not quadratic.
struct LineCursor<'a> {
    bytes: &'a [u8],
    offset: usize,
    line: usize,
}

impl<'a> LineCursor<'a> {
    fn new(bytes: &'a [u8]) -> Self {
        LineCursor {
            bytes,
            offset: 0,
            line: 1,
        }
    }

    /// The line on which the record at (or just after the terminator at) `offset` starts.
    fn line_at(&mut self, offset: u64) -> usize {
        let bytes = self.bytes;
        let mut end = (offset as usize).min(bytes.len());
        while end < bytes.len() && matches!(bytes[end], b'\r' | b'\n') {
            end += 1;
        }
        if end >= self.offset {
            self.line += bytes[self.offset..end]
                .iter()
                .filter(|&&b| b == b'\n')
                .count();
            self.offset = end;
        } else {
            // Not expected (positions only grow); stay correct anyway.
            return bytes[..end].iter().filter(|&&b| b == b'\n').count() + 1;
        }
        self.line
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
}
