//! JSONL and JSON readers.

use super::record::Record;
use super::text::{read_text, TextFile};
use scorekit_core::error::InputError;
use serde_json::Value;
use std::path::Path;
use std::sync::Arc;

/// Read a JSON Lines file: one value per non-blank line, each with its line number.
pub fn read_jsonl(path: &Path) -> Result<Vec<Record>, InputError> {
    read_jsonl_str(&read_text(path)?)
}

/// Parse an already-read text file as JSON Lines.
pub fn read_jsonl_str(file: &TextFile) -> Result<Vec<Record>, InputError> {
    let name: Arc<str> = file.name().into();
    let mut records = Vec::new();
    for (line, text) in file.lines() {
        let value: Value = serde_json::from_str(text).map_err(|e| {
            InputError::line(
                &*name,
                line,
                format!(
                    "invalid JSON at column {}: {}",
                    e.column(),
                    strip_position(&e)
                ),
            )
        })?;
        records.push(Record {
            file: name.clone(),
            line,
            row: records.len() + 1,
            value,
        });
    }
    Ok(records)
}

/// Read a whole JSON document. Errors carry serde's line and column.
pub fn read_json(path: &Path) -> Result<Value, InputError> {
    let file = read_text(path)?;
    serde_json::from_str(&file.text).map_err(|e| {
        InputError::line(
            path,
            e.line(),
            format!(
                "invalid JSON at column {}: {}",
                e.column(),
                strip_position(&e)
            ),
        )
    })
}

/// serde_json appends " at line L column C"; we print the location ourselves.
fn strip_position(e: &serde_json::Error) -> String {
    let s = e.to_string();
    match s.rfind(" at line ") {
        Some(i) => s[..i].to_string(),
        None => s,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::text::text_from_bytes;

    fn parse(bytes: &[u8]) -> Result<Vec<Record>, InputError> {
        read_jsonl_str(&text_from_bytes(Path::new("g.jsonl"), bytes.to_vec())?)
    }

    #[test]
    fn records_keep_line_and_row() {
        let recs = parse(b"{\"a\":1}\r\n\n{\"a\":2}\n").unwrap();
        assert_eq!(recs.len(), 2);
        assert_eq!((recs[1].line, recs[1].row), (3, 2));
    }

    #[test]
    fn truncated_json_names_the_line() {
        let e = parse(b"{\"a\":1}\n{\"a\":\n").unwrap_err();
        assert_eq!(e.line, Some(2));
        assert!(
            e.to_string()
                .starts_with("g.jsonl:2: invalid JSON at column"),
            "{e}"
        );
    }
}
