//! The lines of a JSON Lines file (items.jsonl, calibration.jsonl) as a page embeds them: each
//! checked to be a JSON object, their values copied as written into a table of columns,
//! interned strings and rows, so that the same file always gives the same page.

use anyhow::Context;
use scorekit_core::error::{InputError, Result};
use std::collections::HashMap;
use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::Path;

/// At most this many bytes of a JSON Lines file go into a page (the rest is counted and named):
/// a browser parses 32 MiB of JSON in well under a second, and a run larger than that (GRASP at
/// a million rows) is read in items.jsonl itself.
pub const MAX_EMBEDDED_BYTES: usize = 32 << 20;

/// The lines of a JSON Lines file as a page embeds them ([`read_lines`]), with how many were
/// left out.
#[derive(Debug, Clone, Default)]
pub struct Lines {
    /// The table of the lines embedded (JSON text).
    pub json: String,
    /// Lines embedded.
    pub shown: usize,
    /// Lines in the file.
    pub total: usize,
}

/// The lines of a JSON Lines file as a page embeds them (each line checked to be a JSON object;
/// a bad one is an input error naming its line), up to [`MAX_EMBEDDED_BYTES`] of encoding: a
/// table, `{"columns": [key...], "strings": [text...], "rows": [[cell...]...]}`, where a cell is
/// the index of a string in `strings`, `[value]` for any other value, or `null` where the line
/// has no such key. Items repeat their strings (MINT's trajectory paths, agents, verdicts), so
/// the table is a fraction of items.jsonl: the whole MINT archive fits in a page. Values are
/// copied as the file writes them, never parsed into values and written again.
pub fn read_lines(path: &Path) -> Result<Lines> {
    read_checked(path, Check::Json)
}

/// [`read_lines`] of a file this process has just written from typed items (a finishing run's
/// items.jsonl): each line is known to be JSON, so it is only split, not parsed as JSON first.
/// The same file gives the same table either way.
pub fn read_own_lines(path: &Path) -> Result<Lines> {
    read_checked(path, Check::Object)
}

/// How much of each line is checked.
#[derive(Clone, Copy, PartialEq)]
enum Check {
    /// Parsed as JSON (a file from anywhere).
    Json,
    /// Only split into members (JSON this process wrote).
    Object,
}

fn read_checked(path: &Path, check: Check) -> Result<Lines> {
    let f = File::open(path).with_context(|| format!("cannot read {}", path.display()))?;
    let mut r = BufReader::with_capacity(1 << 20, f);
    let mut b = LinesBuilder::new(path, check);
    // The bytes of a line that runs past the end of the reader's buffer.
    let mut carry: Vec<u8> = Vec::new();
    loop {
        let buf = r
            .fill_buf()
            .with_context(|| format!("cannot read {}", path.display()))?;
        if buf.is_empty() {
            break;
        }
        let n = buf.len();
        let mut start = 0;
        for end in memchr::memchr_iter(b'\n', buf) {
            if carry.is_empty() {
                b.push_bytes(&buf[start..end])?;
            } else {
                carry.extend_from_slice(&buf[start..end]);
                b.push_bytes(&carry)?;
                carry.clear();
            }
            start = end + 1;
        }
        carry.extend_from_slice(&buf[start..]);
        r.consume(n);
    }
    if !carry.is_empty() {
        b.push_bytes(&carry)?;
    }
    Ok(b.finish())
}

/// The table of [`read_lines`] built a line at a time.
struct LinesBuilder<'p> {
    path: &'p Path,
    check: Check,
    table: Table,
    rows: String,
    shown: usize,
    total: usize,
    /// The 1-based number of the last line pushed.
    number: usize,
}

impl<'p> LinesBuilder<'p> {
    fn new(path: &'p Path, check: Check) -> Self {
        LinesBuilder {
            path,
            check,
            table: Table::default(),
            rows: String::from("["),
            shown: 0,
            total: 0,
            number: 0,
        }
    }

    /// The next line of the file, as bytes (without its `\n`): past the page's share only
    /// counted, never decoded.
    fn push_bytes(&mut self, line: &[u8]) -> Result<()> {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if self.full() {
            self.number += 1;
            if line.iter().any(|c| !c.is_ascii_whitespace()) {
                self.total += 1;
            }
            return Ok(());
        }
        let text = std::str::from_utf8(line)
            .map_err(|e| InputError::line(self.path, self.number + 1, format!("not UTF-8: {e}")))?;
        self.push(text)
    }

    /// Whether the page's share of the file is spent.
    fn full(&self) -> bool {
        self.rows.len() + self.table.strings_len > MAX_EMBEDDED_BYTES
    }

    /// The next line of the file (without its line end).
    fn push(&mut self, text: &str) -> Result<()> {
        self.number += 1;
        if text.trim().is_empty() {
            return Ok(());
        }
        self.total += 1;
        if self.full() {
            return Ok(());
        }
        let bad = |why: String| InputError::line(self.path, self.number, why);
        if self.check == Check::Json {
            serde_json::from_str::<serde::de::IgnoredAny>(text)
                .map_err(|e| bad(format!("not a JSON line: {e}")))?;
        }
        let members = members(text).ok_or_else(|| bad("not a JSON object".into()))?;
        if self.shown > 0 {
            self.rows.push(',');
        }
        self.table.push_row(&mut self.rows, &members);
        self.shown += 1;
        Ok(())
    }

    fn finish(mut self) -> Lines {
        self.rows.push(']');
        let t = &self.table;
        let mut json = String::with_capacity(self.rows.len() + t.strings_len + 64);
        json.push_str("{\"columns\":[");
        json.push_str(&t.columns.join(","));
        json.push_str("],\"strings\":[");
        for (i, s) in t.strings.iter().enumerate() {
            if i > 0 {
                json.push(',');
            }
            json.push_str(s);
        }
        json.push_str("],\"rows\":");
        json.push_str(&self.rows);
        json.push('}');
        Lines {
            json,
            shown: self.shown,
            total: self.total,
        }
    }
}

/// A cell of a row: a string's index in the table, or a value's literal.
#[derive(Clone, Copy)]
enum Cell<'a> {
    Absent,
    String(usize),
    Literal(&'a str),
}

/// The columns and strings of the table [`read_lines`] builds, each kept as its JSON literal.
#[derive(Default)]
struct Table {
    columns: Vec<String>,
    column_of: HashMap<String, usize, FoldHash>,
    strings: Vec<Box<str>>,
    string_of: HashMap<Box<str>, usize, FoldHash>,
    /// Per column, the string its last cell held (lines repeat their neighbours' paths and
    /// names: a comparison, not a hash, finds them).
    last: Vec<Option<usize>>,
    /// Bytes of the strings so far (their share of the page).
    strings_len: usize,
}

/// A fast hash for the table's keys (the literals of one file, not chosen by an attacker
/// who could gain anything from collisions but a slower page).
type FoldHash = foldhash::fast::FixedState;

impl Table {
    /// One line's members (key and value literals) as a row of cells, appended to `out`.
    fn push_row(&mut self, out: &mut String, members: &[(&str, &str)]) {
        let mut cells: Vec<Cell> = vec![Cell::Absent; self.columns.len()];
        for (j, &(key, value)) in members.iter().enumerate() {
            // Lines of one file mostly list their keys in one order: the j-th key is column j.
            let c = match self.columns.get(j) {
                Some(k) if k == key => j,
                _ => match self.column_of.get(key) {
                    Some(&c) => c,
                    None => {
                        self.columns.push(key.to_string());
                        self.column_of
                            .insert(key.to_string(), self.columns.len() - 1);
                        self.last.push(None);
                        cells.push(Cell::Absent);
                        self.columns.len() - 1
                    }
                },
            };
            cells[c] = if value.starts_with('"') {
                let i = match self.last[c] {
                    Some(i) if *self.strings[i] == *value => i,
                    _ => self.intern(value),
                };
                self.last[c] = Some(i);
                Cell::String(i)
            } else {
                Cell::Literal(value)
            };
        }
        out.push('[');
        for (i, c) in cells.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            match *c {
                Cell::Absent => out.push_str("null"),
                Cell::String(s) => push_index(out, s),
                Cell::Literal(v) => {
                    out.push('[');
                    out.push_str(v);
                    out.push(']');
                }
            }
        }
        out.push(']');
    }

    fn intern(&mut self, literal: &str) -> usize {
        if let Some(&i) = self.string_of.get(literal) {
            return i;
        }
        self.strings_len += literal.len() + 1;
        self.strings.push(literal.into());
        self.string_of
            .insert(literal.into(), self.strings.len() - 1);
        self.strings.len() - 1
    }
}

/// `n` in decimal, appended without a formatter.
fn push_index(out: &mut String, mut n: usize) {
    let mut digits = [0u8; 20];
    let mut i = digits.len();
    loop {
        i -= 1;
        digits[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    // ASCII digits only.
    out.push_str(std::str::from_utf8(&digits[i..]).unwrap_or("0"));
}

/// The members of a JSON object's text (valid JSON, checked before): each key's and value's
/// literal, in order; `None` where the text is not an object.
fn members(text: &str) -> Option<Vec<(&str, &str)>> {
    let b = text.as_bytes();
    let mut i = skip_space(b, 0);
    if b.get(i) != Some(&b'{') {
        return None;
    }
    i += 1;
    let mut out = Vec::new();
    loop {
        i = skip_space(b, i);
        match b.get(i)? {
            b'}' => return Some(out),
            b',' => {
                i += 1;
                continue;
            }
            b'"' => {}
            _ => return None,
        }
        let key_end = string_end(b, i)?;
        let key = &text[i..key_end];
        i = skip_space(b, key_end);
        if b.get(i) != Some(&b':') {
            return None;
        }
        i = skip_space(b, i + 1);
        let value_end = value_end(b, i)?;
        out.push((key, &text[i..value_end]));
        i = value_end;
    }
}

fn skip_space(b: &[u8], mut i: usize) -> usize {
    while i < b.len() && matches!(b[i], b' ' | b'\t' | b'\r' | b'\n') {
        i += 1;
    }
    i
}

/// The end (past the closing quote) of the string literal that starts at `i`.
fn string_end(b: &[u8], i: usize) -> Option<usize> {
    let mut j = i + 1;
    while j < b.len() {
        j += memchr::memchr2(b'"', b'\\', &b[j..])?;
        match b[j] {
            b'\\' => j += 2,
            _ => return Some(j + 1),
        }
    }
    None
}

/// The end of the value literal that starts at `i`.
fn value_end(b: &[u8], i: usize) -> Option<usize> {
    match b.get(i)? {
        b'"' => string_end(b, i),
        b'{' | b'[' => {
            let mut depth = 0usize;
            let mut j = i;
            while j < b.len() {
                match b[j] {
                    b'"' => {
                        j = string_end(b, j)?;
                        continue;
                    }
                    b'{' | b'[' => depth += 1,
                    b'}' | b']' => {
                        depth -= 1;
                        if depth == 0 {
                            return Some(j + 1);
                        }
                    }
                    _ => {}
                }
                j += 1;
            }
            None
        }
        _ => {
            let mut j = i;
            while j < b.len() && !matches!(b[j], b',' | b'}' | b' ' | b'\t' | b'\r' | b'\n') {
                j += 1;
            }
            Some(j)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The lines back from the table, as the page's script reads it.
    use serde_json::{Map, Value};

    fn decode(json: &str) -> Vec<Value> {
        let t: Value = serde_json::from_str(json).unwrap();
        let cols = t["columns"].as_array().unwrap();
        t["rows"]
            .as_array()
            .unwrap()
            .iter()
            .map(|row| {
                let mut m = Map::new();
                for (c, cell) in cols.iter().zip(row.as_array().unwrap()) {
                    match cell {
                        Value::Null => continue,
                        Value::Array(a) => m.insert(c.as_str().unwrap().into(), a[0].clone()),
                        Value::Number(i) => m.insert(
                            c.as_str().unwrap().into(),
                            t["strings"][i.as_u64().unwrap() as usize].clone(),
                        ),
                        other => panic!("bad cell {other}"),
                    };
                }
                Value::Object(m)
            })
            .collect()
    }

    #[test]
    fn lines_become_one_table_that_gives_them_back_and_a_bad_line_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("items.jsonl");
        let text = "{\"row\":1,\"m\":\"a\",\"x\":null}\n\n{\"row\":2,\"m\":\"a\",\"t\":\"</script>\",\"l\":[1,\"b\"]}\n";
        std::fs::write(&p, text).unwrap();
        let l = read_lines(&p).unwrap();
        assert_eq!(
            l.json,
            "{\"columns\":[\"row\",\"m\",\"x\",\"t\",\"l\"],\"strings\":[\"a\",\"</script>\"],\
             \"rows\":[[[1],0,[null]],[[2],0,null,1,[[1,\"b\"]]]]}"
        );
        let back: Vec<Value> = text
            .lines()
            .filter(|l| !l.is_empty())
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(decode(&l.json), back);
        assert_eq!((l.shown, l.total), (2, 2));
        std::fs::write(&p, "{\"row\":1}\n{\"row\":\n").unwrap();
        let e = read_lines(&p).unwrap_err();
        assert_eq!(e.exit_code(), 2);
        assert!(e.to_string().contains("items.jsonl:2"), "{e}");
    }

    #[test]
    fn lines_across_the_reader_buffer_give_the_same_table_checked_or_not() {
        // 3 MB of lines, so that many cross the 1 MiB reads; CRLF ends, a blank line, a last
        // line without its end, repeated and new strings.
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("items.jsonl");
        let mut text = String::new();
        let mut want = Vec::new();
        for i in 0..6000 {
            let v = serde_json::json!({"row": i, "agent": format!("a{}", i % 3),
                "path": format!("p/{}", i / 7), "text": "x".repeat(i % 900), "ok": i % 2 == 0});
            text.push_str(&v.to_string());
            text.push_str(if i % 5 == 0 { "\r\n" } else { "\n" });
            if i == 10 {
                text.push_str("  \n");
            }
            want.push(v);
        }
        text.pop();
        std::fs::write(&p, &text).unwrap();
        let checked = read_lines(&p).unwrap();
        let own = read_own_lines(&p).unwrap();
        assert_eq!(checked.json, own.json);
        assert_eq!((own.shown, own.total), (6000, 6000));
        assert_eq!(decode(&own.json), want);
    }

    #[test]
    fn members_are_split_whatever_the_strings_and_nesting_hold() {
        let line = r#" { "a" : "x\"}],{" , "b":[1,{"c":"]"}],"d":-1.5e3,"e":null, "f":{"g":[]} } "#;
        assert_eq!(
            members(line).unwrap(),
            [
                ("\"a\"", r#""x\"}],{""#),
                ("\"b\"", r#"[1,{"c":"]"}]"#),
                ("\"d\"", "-1.5e3"),
                ("\"e\"", "null"),
                ("\"f\"", r#"{"g":[]}"#)
            ]
        );
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("items.jsonl");
        std::fs::write(&p, format!("{line}\n")).unwrap();
        let back: Value = serde_json::from_str(line).unwrap();
        assert_eq!(decode(&read_lines(&p).unwrap().json), [back]);
        std::fs::write(&p, "{\"row\":1}\n[1,2]\n").unwrap();
        let e = read_lines(&p).unwrap_err();
        assert!(
            e.to_string().contains("items.jsonl:2: not a JSON object"),
            "{e}"
        );
    }
}
