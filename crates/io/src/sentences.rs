//! Sentences to embed (`scorekit embed`): JSONL records with `text`
//! (and `id`, else the row), or plain text lines (id = line number).

use crate::{read_jsonl, read_text, type_name};
use scorekit_core::error::{InputError, Result};
use std::path::Path;

/// Read the sentences: JSONL records with `text` (and `id`, else the row), or plain text lines
/// (id = line number). Returns (ids, texts).
pub fn read_sentences(path: &Path) -> Result<(Vec<serde_json::Value>, Vec<String>)> {
    let is_jsonl = matches!(
        path.extension()
            .and_then(|e| e.to_str())
            .map(str::to_ascii_lowercase)
            .as_deref(),
        Some("jsonl") | Some("ndjson")
    );
    let mut ids = Vec::new();
    let mut texts = Vec::new();
    if is_jsonl {
        for r in read_jsonl(path)? {
            texts.push(r.str("text")?.to_string());
            let id = match r.get("id")? {
                Some(v @ (serde_json::Value::String(_) | serde_json::Value::Number(_))) => {
                    v.clone()
                }
                Some(other) => {
                    return Err(r
                        .field_error(
                            "id",
                            format!("expected a string or a number, found {}", type_name(other)),
                        )
                        .into())
                }
                None => serde_json::Value::from(r.row),
            };
            ids.push(id);
        }
    } else {
        let file = read_text(path)?;
        for (line, text) in file.lines() {
            ids.push(serde_json::Value::from(line));
            texts.push(text.to_string());
        }
    }
    if texts.is_empty() {
        return Err(InputError::file(path, "no sentences").into());
    }
    Ok((ids, texts))
}
