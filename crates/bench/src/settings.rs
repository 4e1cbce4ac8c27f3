//! What a bench is asked to do, resolved from the command's flags once, and the checks of its
//! values that need no device and no model (those that need the model's config.json come with
//! [`Settings::check_limits`]).

use scorekit_core::error::{Error, Result};
use std::path::PathBuf;

/// Untimed batches before each cell's timed repeats when `--warmup` is not given.
pub const DEFAULT_WARMUP: usize = 2;

/// The token budget of one batch when `--batch-tokens` names none.
pub use scorekit_runtime::DEFAULT_BATCH_TOKENS;

/// A bench's settings.
#[derive(Debug, Clone)]
pub struct Settings {
    /// The model measured, as named on the command line.
    pub model: String,
    /// Whether it is an MRC judge (pairs) rather than an embedder (sentences).
    pub judge: bool,
    /// Timed repeats of each cell.
    pub repeats: usize,
    /// `--warmup`: untimed batches per cell.
    pub warmup: Option<usize>,
    /// `--synthetic`: token lengths of synthetic sentence lists.
    pub synthetic: Vec<usize>,
    /// `--limit`: first N sentences (questions for a judge), or synthetic sentences per length.
    pub limit: Option<usize>,
    /// `--batch-tokens`: an axis.
    pub batch_tokens: Vec<usize>,
    /// `--max-length`: an axis (empty: the model's own limit).
    pub max_lengths: Vec<usize>,
    /// `--out`: the grid's folder.
    pub out: Option<PathBuf>,
    /// `--compare`: a peers file.
    pub compare: Option<PathBuf>,
    /// `--save`: the last pass's outputs of a one-cell bench, as .npy.
    pub save: Option<PathBuf>,
    /// `--json`.
    pub json: bool,
    /// `--tf32` (recorded).
    pub tf32: bool,
    /// Whether a grid (lists, `--out`, `--compare`, `--synthetic`, `--warmup`) rather than the
    /// one-cell bench.
    pub grid: bool,
}

impl Settings {
    /// Untimed batches per cell.
    pub fn warmup(&self) -> usize {
        self.warmup.unwrap_or(DEFAULT_WARMUP)
    }

    /// Checks that need no model: at least one repeat, `--save` only for one cell, positive
    /// axes, and `--synthetic` only for an embedder.
    pub fn check(&self) -> Result<()> {
        if self.repeats == 0 {
            return Err(Error::usage("--repeats must be at least 1"));
        }
        if self.grid && self.save.is_some() {
            return Err(Error::usage(
                "--save writes the vectors of a one-cell bench; leave it out of a grid (--out, lists, --synthetic, --warmup, --compare)",
            ));
        }
        if self.batch_tokens.contains(&0) {
            return Err(Error::usage(
                "--batch-tokens 0: a batch budget must be at least 1 token",
            ));
        }
        if let Some(m) = self.max_lengths.iter().find(|&&m| m < 2) {
            return Err(Error::usage(format!(
                "--max-length {m}: an input needs at least 2 tokens ([CLS] and [SEP])"
            )));
        }
        if let Some(n) = self.synthetic.iter().find(|&&n| n < 3) {
            return Err(Error::usage(format!(
                "--synthetic {n}: a sentence needs at least 3 tokens ([CLS], a word, [SEP])"
            )));
        }
        if self.judge && !self.synthetic.is_empty() {
            return Err(Error::usage(
                "--synthetic measures an embedder; --judge reads (passage, question) pairs",
            ));
        }
        Ok(())
    }

    /// Whether any axis value needs the model's config.json to be checked.
    pub fn needs_limits(&self) -> bool {
        !self.max_lengths.is_empty() || !self.synthetic.is_empty()
    }

    /// Axis values that need the model's config: lengths up to its position limit.
    pub fn check_limits(&self, max_tokens: usize) -> Result<()> {
        let model = &self.model;
        for &m in &self.max_lengths {
            if m > max_tokens {
                return Err(Error::usage(format!(
                    "--max-length {m}: above {model}'s limit of {max_tokens} tokens"
                )));
            }
        }
        for &n in &self.synthetic {
            if n > max_tokens {
                return Err(Error::usage(format!(
                    "--synthetic {n}: above {model}'s limit of {max_tokens} tokens"
                )));
            }
        }
        Ok(())
    }
}
