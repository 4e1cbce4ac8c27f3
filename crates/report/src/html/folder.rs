//! What a page shows of one finished run, read from its folder: metrics.json, report.md, the
//! lines of items.jsonl and calibration.jsonl (`lines`), and the texts the suite found for its
//! items.

use super::lines::{read_lines, read_own_lines, Lines};
use anyhow::Context;
use scorekit_core::error::{Error, InputError, Result};
use serde_json::Value;
use std::path::Path;

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
        Self::from_parts_with(dir, label, metrics_json, report_md, texts, read_lines)
    }

    /// [`RunData::from_parts`] of a run this process is finishing: its items.jsonl and
    /// calibration.jsonl were just written from typed items, so their lines are split without
    /// being parsed as JSON first ([`read_own_lines`]; the same page either way).
    pub fn finishing(
        dir: &Path,
        label: String,
        metrics_json: &str,
        report_md: String,
        texts: Option<Value>,
    ) -> Result<Self> {
        Self::from_parts_with(dir, label, metrics_json, report_md, texts, read_own_lines)
    }

    fn from_parts_with(
        dir: &Path,
        label: String,
        metrics_json: &str,
        report_md: String,
        texts: Option<Value>,
        read_lines: fn(&Path) -> Result<Lines>,
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

#[cfg(test)]
mod tests {
    use super::*;

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
