//! What a page shows of one finished run, read from its folder: metrics.json, report.md, the
//! lines of items.jsonl and calibration.jsonl (each checked to be JSON, kept verbatim so that the
//! same folder always gives the same page), and the texts the suite found for its items.

use anyhow::Context;
use scorekit_core::error::{Error, InputError, Result};
use serde_json::Value;
use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::Path;

/// At most this many bytes of a JSON Lines file go into a page (the rest is counted and named):
/// a browser parses 32 MiB of JSON in well under a second, and a run larger than that (GRASP at
/// a million rows) is read in items.jsonl itself.
pub const MAX_EMBEDDED_BYTES: usize = 32 << 20;

/// The lines of a JSON Lines file as one JSON array (text), with how many were left out.
#[derive(Debug, Clone, Default)]
pub struct Lines {
    /// `[line,line,...]`: the lines embedded, verbatim.
    pub json: String,
    /// Lines embedded.
    pub shown: usize,
    /// Lines in the file.
    pub total: usize,
}

/// One run as a page shows it.
#[derive(Debug, Clone)]
pub struct RunData {
    /// The name the page gives the run (its folder's name, or `--labels`).
    pub label: String,
    /// metrics.json.
    pub metrics: Value,
    /// report.md (its warnings are shown, and the whole text at the end).
    pub report_md: String,
    /// items.jsonl.
    pub items: Lines,
    /// calibration.jsonl, where the run has one (story).
    pub calibration: Option<Lines>,
    /// The texts of the inputs the items point at (story's passages, questions, options and
    /// endings), found by the suite; `None` where the inputs were not found.
    pub texts: Option<Value>,
}

impl RunData {
    /// The run in `dir`: metrics.json given as text (a run that is finishing has not written it
    /// yet), the other files read from the folder.
    pub fn from_parts(
        dir: &Path,
        label: String,
        metrics_json: &str,
        report_md: String,
        texts: Option<Value>,
    ) -> Result<Self> {
        let metrics: Value = serde_json::from_str(metrics_json).map_err(|e| {
            InputError::line(dir.join("metrics.json"), e.line(), format!("not JSON: {e}"))
        })?;
        let items = read_lines(&dir.join("items.jsonl"))?;
        let cal = dir.join("calibration.jsonl");
        let calibration = if cal.is_file() {
            Some(read_lines(&cal)?)
        } else {
            None
        };
        Ok(RunData {
            label,
            metrics,
            report_md,
            items,
            calibration,
            texts,
        })
    }

    /// A finished run's folder (metrics.json, items.jsonl, report.md), refused (exit 2, naming
    /// the folder) where one of them is missing.
    pub fn read(dir: &Path, label: String, texts: Option<Value>) -> Result<Self> {
        for f in ["metrics.json", "items.jsonl", "report.md"] {
            if !dir.join(f).is_file() {
                return Err(Error::usage(format!(
                    "{}: not a finished scorekit run (no {f})",
                    dir.display()
                )));
            }
        }
        let metrics_json = read_text(&dir.join("metrics.json"))?;
        let report_md = read_text(&dir.join("report.md"))?;
        Self::from_parts(dir, label, &metrics_json, report_md, texts)
    }

    /// The suite that wrote the run (`story`, `grasp`, ...).
    pub fn suite(&self) -> &str {
        self.metrics["suite"].as_str().unwrap_or("")
    }
}

/// A whole text file.
pub fn read_text(path: &Path) -> Result<String> {
    Ok(std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?)
}

/// The lines of a JSON Lines file, each checked to be JSON (a bad one is an input error naming
/// its line), embedded up to [`MAX_EMBEDDED_BYTES`].
pub fn read_lines(path: &Path) -> Result<Lines> {
    let f = File::open(path).with_context(|| format!("cannot read {}", path.display()))?;
    let mut r = BufReader::with_capacity(1 << 20, f);
    let mut out = Lines {
        json: String::from("["),
        ..Lines::default()
    };
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
        out.total += 1;
        if out.json.len() + text.len() > MAX_EMBEDDED_BYTES {
            continue;
        }
        serde_json::from_str::<serde::de::IgnoredAny>(text)
            .map_err(|e| InputError::line(path, number, format!("not a JSON line: {e}")))?;
        if out.shown > 0 {
            out.json.push(',');
        }
        out.json.push_str(text);
        out.shown += 1;
    }
    out.json.push(']');
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_become_one_array_and_a_bad_line_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("items.jsonl");
        std::fs::write(&p, "{\"row\":1}\n\n{\"row\":2,\"t\":\"</script>\"}\n").unwrap();
        let l = read_lines(&p).unwrap();
        assert_eq!(l.json, "[{\"row\":1},{\"row\":2,\"t\":\"</script>\"}]");
        assert_eq!((l.shown, l.total), (2, 2));
        std::fs::write(&p, "{\"row\":1}\n{\"row\":\n").unwrap();
        let e = read_lines(&p).unwrap_err();
        assert_eq!(e.exit_code(), 2);
        assert!(e.to_string().contains("items.jsonl:2"), "{e}");
    }

    #[test]
    fn a_folder_without_results_is_refused_by_name() {
        let dir = tempfile::tempdir().unwrap();
        let e = RunData::read(dir.path(), "x".into(), None).unwrap_err();
        assert_eq!(e.exit_code(), 2);
        assert!(
            e.to_string().contains(&dir.path().display().to_string()),
            "{e}"
        );
    }
}
