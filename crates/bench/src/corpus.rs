//! The sentences a bench measures: what the command hands over ([`Input`]), the corpus reader
//! (Possible Stories endings, JSONL with `text`, plain text), the default inputs, and synthetic
//! sentences of exact token lengths.

use scorekit_core::error::{Error, InputError, Result};
use scorekit_runtime::TextTokenizer;
use std::path::{Path, PathBuf};

/// The items a bench runs on, as the command read them.
#[derive(Debug, Clone)]
pub struct Input {
    /// The file they came from (a dataset name resolved through the data cache).
    pub source: PathBuf,
    /// The sentences, or the judge's pairs.
    pub items: Items,
    /// Questions the pairs come from (a judge; 0 for sentences).
    pub questions: usize,
}

/// What a bench runs on: the items of a pass.
#[derive(Debug, Clone)]
pub enum Items {
    /// Sentences for an embedder.
    Texts(Vec<String>),
    /// (passage, question + option) pairs for a judge.
    Pairs(Vec<(String, String)>),
}

impl Items {
    /// Items per pass.
    pub fn len(&self) -> usize {
        match self {
            Items::Texts(t) => t.len(),
            Items::Pairs(p) => p.len(),
        }
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The items as lines of text (a pair as passage, tab, question): what a corpus's sha256
    /// is taken over.
    pub fn lines(&self) -> Vec<String> {
        match self {
            Items::Texts(t) => t.clone(),
            Items::Pairs(p) => p.iter().map(|(a, b)| format!("{a}\t{b}")).collect(),
        }
    }
}

/// The corpus used when `--input` is not given: the real Possible Stories endings and passages,
/// from the data cache (`scorekit data`; pulled once where the network allows).
pub const DEFAULT_CORPUS: &str = "possible-stories:endings";

/// The dataset used when `--input` is not given: the Possible Stories dev split, from the data
/// cache (`scorekit data`).
pub const DEFAULT_DATASET: &str = "possible-stories:dev";

/// Synthetic sentences per length when `--limit` is not given.
pub const DEFAULT_SYNTHETIC_SENTENCES: usize = 256;

/// Read a corpus: Possible Stories endings records (`story` + `endings[].ending`: every ending,
/// then every passage), JSONL with `text`, or plain text (one sentence a line).
pub fn read_corpus(path: &Path) -> Result<Vec<String>> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| InputError::file(path, format!("cannot read: {e}")))?;
    let is_jsonl = matches!(
        path.extension().and_then(|e| e.to_str()),
        Some("jsonl") | Some("ndjson")
    );
    let mut out = Vec::new();
    if !is_jsonl {
        out.extend(
            text.lines()
                .filter(|l| !l.trim().is_empty())
                .map(String::from),
        );
    } else {
        let mut passages = Vec::new();
        for (i, line) in text.lines().enumerate() {
            if line.trim().is_empty() {
                continue;
            }
            let v: serde_json::Value = serde_json::from_str(line).map_err(|e| {
                InputError::file(path, format!("line {}: not valid JSON: {e}", i + 1))
            })?;
            if let Some(t) = v["text"].as_str() {
                out.push(t.to_string());
            } else if let Some(endings) = v["endings"].as_array() {
                for e in endings {
                    if let Some(t) = e["ending"].as_str() {
                        out.push(t.to_string());
                    }
                }
                if let Some(s) = v["story"].as_str() {
                    passages.push(s.to_string());
                }
            } else {
                return Err(InputError::file(
                    path,
                    format!(
                        "line {}: expected \"text\" or Possible Stories \"endings\"",
                        i + 1
                    ),
                )
                .into());
            }
        }
        out.extend(passages);
    }
    if out.is_empty() {
        return Err(InputError::file(path, "no sentences").into());
    }
    Ok(out)
}

/// Synthetic sentences of exactly `len` tokens as `tok` counts them (special tokens included),
/// from whole-word entries of the model's own vocabulary, so that no padding hides in a batch.
pub fn synthetic_sentences(tok: &TextTokenizer, len: usize, count: usize) -> Result<Vec<String>> {
    let specials = tok.encode_all(&[String::new()])?[0].len();
    if len <= specials {
        return Err(Error::usage(format!(
            "--synthetic {len}: the tokenizer adds {specials} special tokens to every sentence"
        )));
    }
    let mut vocab: Vec<(String, u32)> = tok
        .inner()
        .get_vocab(false)
        .into_iter()
        .filter(|(w, _)| (3..=10).contains(&w.len()) && w.bytes().all(|b| b.is_ascii_lowercase()))
        .collect();
    vocab.sort_by_key(|(_, id)| *id);
    let candidates: Vec<String> = vocab.into_iter().map(|(w, _)| w).take(4000).collect();
    let one = tok.encode_all(&candidates)?;
    let words: Vec<&str> = candidates
        .iter()
        .zip(&one)
        .filter(|(_, t)| t.len() == specials + 1)
        .map(|(w, _)| w.as_str())
        .collect();
    if words.len() < 16 {
        return Err(Error::usage(format!(
            "--synthetic: the model's vocabulary has too few whole lower-case words ({}) to build sentences from",
            words.len()
        )));
    }
    // A fixed linear congruential walk: the same sentences on every run and machine.
    let mut state: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = || {
        state = state
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (state >> 33) as usize
    };
    let sentences: Vec<String> = (0..count)
        .map(|_| {
            (0..len - specials)
                .map(|_| words[next() % words.len()])
                .collect::<Vec<_>>()
                .join(" ")
        })
        .collect();
    for (i, t) in tok.encode_all(&sentences)?.iter().enumerate() {
        if t.len() != len {
            return Err(Error::Internal(anyhow::anyhow!(
                "synthetic sentence {i} of length {len} tokenises to {} tokens",
                t.len()
            )));
        }
    }
    Ok(sentences)
}
