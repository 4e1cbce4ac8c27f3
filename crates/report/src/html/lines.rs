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
    let f = File::open(path).with_context(|| format!("cannot read {}", path.display()))?;
    let mut r = BufReader::with_capacity(1 << 20, f);
    let mut table = Table::default();
    let mut rows = String::from("[");
    let (mut shown, mut total) = (0usize, 0usize);
    let mut line = String::new();
    let mut number = 0usize;
    loop {
        line.clear();
        let n = r
            .read_line(&mut line)
            .with_context(|| format!("cannot read {}", path.display()))?;
        if n == 0 {
            break;
        }
        number += 1;
        let text = line.trim_end_matches(['\n', '\r']);
        if text.trim().is_empty() {
            continue;
        }
        total += 1;
        if rows.len() + table.strings_len > MAX_EMBEDDED_BYTES {
            continue;
        }
        let bad = |why: String| InputError::line(path, number, why);
        serde_json::from_str::<serde::de::IgnoredAny>(text)
            .map_err(|e| bad(format!("not a JSON line: {e}")))?;
        let members = members(text).ok_or_else(|| bad("not a JSON object".into()))?;
        if shown > 0 {
            rows.push(',');
        }
        table.push_row(&mut rows, &members);
        shown += 1;
    }
    rows.push(']');
    let json = format!(
        "{{\"columns\":[{}],\"strings\":[{}],\"rows\":{rows}}}",
        table.columns.join(","),
        table.strings.join(",")
    );
    Ok(Lines { json, shown, total })
}

/// The columns and strings of the table [`read_lines`] builds, each kept as its JSON literal.
#[derive(Default)]
struct Table {
    columns: Vec<String>,
    column_of: HashMap<String, usize>,
    strings: Vec<String>,
    string_of: HashMap<String, usize>,
    /// Bytes of the strings so far (their share of the page).
    strings_len: usize,
}

impl Table {
    /// One line's members (key and value literals) as a row of cells, appended to `out`.
    fn push_row(&mut self, out: &mut String, members: &[(&str, &str)]) {
        let mut cells: Vec<Option<String>> = vec![None; self.columns.len()];
        for &(key, value) in members {
            let c = match self.column_of.get(key) {
                Some(&c) => c,
                None => {
                    self.columns.push(key.to_string());
                    self.column_of
                        .insert(key.to_string(), self.columns.len() - 1);
                    cells.push(None);
                    self.columns.len() - 1
                }
            };
            cells[c] = Some(if value.starts_with('"') {
                self.intern(value).to_string()
            } else {
                format!("[{value}]")
            });
        }
        out.push('[');
        for (i, c) in cells.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            out.push_str(c.as_deref().unwrap_or("null"));
        }
        out.push(']');
    }

    fn intern(&mut self, literal: &str) -> usize {
        if let Some(&i) = self.string_of.get(literal) {
            return i;
        }
        self.strings_len += literal.len() + 1;
        self.strings.push(literal.to_string());
        self.string_of
            .insert(literal.to_string(), self.strings.len() - 1);
        self.strings.len() - 1
    }
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
        match b[j] {
            b'\\' => j += 2,
            b'"' => return Some(j + 1),
            _ => j += 1,
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
