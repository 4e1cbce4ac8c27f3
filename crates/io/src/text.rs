//! Whole-file text reading with UTF-8 validation, BOM stripping and line iteration.

use scorekit_core::error::InputError;
use std::path::{Path, PathBuf};

/// A text file read into memory, validated as UTF-8, without its BOM.
#[derive(Debug, Clone)]
pub struct TextFile {
    /// The path as the user gave it (used in messages).
    pub path: PathBuf,
    /// The content, without a leading byte-order mark.
    pub text: String,
}

impl TextFile {
    /// The file's name for messages.
    pub fn name(&self) -> String {
        self.path.display().to_string()
    }

    /// Non-blank lines with their 1-based numbers; a trailing `\r` (CRLF) is removed.
    pub fn lines(&self) -> impl Iterator<Item = (usize, &str)> {
        self.text
            .split('\n')
            .enumerate()
            .map(|(i, l)| (i + 1, l.strip_suffix('\r').unwrap_or(l)))
            .filter(|(_, l)| !l.trim().is_empty())
    }
}

/// Read a file as UTF-8 text. Errors name the file, and the line of the first invalid byte.
pub fn read_text(path: &Path) -> Result<TextFile, InputError> {
    let bytes = std::fs::read(path)
        .map_err(|e| InputError::file(path, format!("cannot read file: {e}")))?;
    text_from_bytes(path, bytes)
}

/// Validate bytes already in memory as a text file.
pub fn text_from_bytes(path: &Path, bytes: Vec<u8>) -> Result<TextFile, InputError> {
    let mut text = match String::from_utf8(bytes) {
        Ok(t) => t,
        Err(e) => {
            let valid = e.utf8_error().valid_up_to();
            let bytes = e.as_bytes();
            let line = bytes[..valid].iter().filter(|&&b| b == b'\n').count() + 1;
            return Err(InputError::line(
                path,
                line,
                format!(
                    "not valid UTF-8 (byte 0x{:02x} at offset {valid}); save the file as UTF-8",
                    bytes[valid]
                ),
            ));
        }
    };
    if text.starts_with('\u{feff}') {
        text.drain(..'\u{feff}'.len_utf8());
    }
    if text.trim().is_empty() {
        return Err(InputError::file(path, "file is empty"));
    }
    Ok(TextFile {
        path: path.to_path_buf(),
        text,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(bytes: &[u8]) -> Result<TextFile, InputError> {
        text_from_bytes(Path::new("f.txt"), bytes.to_vec())
    }

    #[test]
    fn non_utf8_is_reported_with_its_line() {
        let e = text(b"ok\nalso ok\nbad \xff here\n").unwrap_err();
        assert_eq!(e.line, Some(3));
        assert!(e.message.contains("not valid UTF-8"), "{e}");
    }

    #[test]
    fn empty_and_whitespace_only_files_are_errors() {
        assert_eq!(text(b"").unwrap_err().message, "file is empty");
        assert_eq!(text(b"\n \r\n\t\n").unwrap_err().message, "file is empty");
        assert_eq!(text(b"\xef\xbb\xbf").unwrap_err().message, "file is empty");
    }

    #[test]
    fn bom_is_stripped_and_crlf_handled_and_blank_lines_keep_numbering() {
        let t = text(b"\xef\xbb\xbfa\r\n\r\nb\r\n").unwrap();
        let lines: Vec<_> = t.lines().collect();
        assert_eq!(lines, vec![(1, "a"), (3, "b")]);
    }

    #[test]
    fn very_long_lines_are_read_whole() {
        let long = "x".repeat(5_000_000);
        let t = text(format!("{long}\nshort").as_bytes()).unwrap();
        let lines: Vec<_> = t.lines().collect();
        assert_eq!(lines[0].1.len(), 5_000_000);
        assert_eq!(lines[1], (2, "short"));
    }
}
