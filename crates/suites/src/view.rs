//! `scorekit view` as a library call: the one self-contained page (report.html) of one finished
//! run, of a `scorekit compare` folder, or of several runs side by side under the leaderboard
//! and paired tests that `scorekit compare` computes for them ([`crate::compare::run`]). Runs
//! that cannot be compared (other suites, other benchmark inputs, a shard) are still shown, with
//! the reason in place of the leaderboard.

use crate::compare::run::comparison;
use scorekit_core::error::{Error, InputError, Result};
use scorekit_report::html::{self, RunData};
use scorekit_report::METRICS_FILE;
use serde_json::Value;
use std::path::{Path, PathBuf};

/// What `scorekit view` is asked: the folders, their names, the leaderboard's bootstrap.
#[derive(Debug, Clone)]
pub struct ViewOptions {
    /// Run or comparison folders.
    pub dirs: Vec<PathBuf>,
    /// A name per folder (`--labels`); else each folder's name.
    pub labels: Option<Vec<String>>,
    /// Bootstrap resamples of the leaderboard's intervals and paired differences.
    pub bootstrap: usize,
    /// Seed of that bootstrap.
    pub seed: u64,
}

/// The page of `opts.dirs`.
pub fn page(opts: &ViewOptions) -> Result<String> {
    if opts.dirs.is_empty() {
        return Err(Error::usage("name at least one run folder"));
    }
    let labels = labels(opts)?;
    let mut docs = Vec::new();
    for dir in &opts.dirs {
        docs.push(read_metrics(dir)?);
    }
    if let Some(i) = docs.iter().position(|d| d["suite"] == "compare") {
        if opts.dirs.len() > 1 {
            return Err(Error::usage(format!(
                "{} is a `scorekit compare` folder: view it on its own (several runs given to \
                 `scorekit view` are compared on the page)",
                opts.dirs[i].display()
            )));
        }
        let title = format!(
            "scorekit compare: {}",
            docs[0]["compared_suite"].as_str().unwrap_or("")
        );
        return html::compare_page(&title, Some(&docs[0]), None, &[]);
    }
    let runs = opts
        .dirs
        .iter()
        .zip(&labels)
        .map(|(dir, label)| {
            let doc = crate::merge::read_finished(dir, "finish it before viewing it")?;
            let texts = match doc.suite.as_str() {
                "story" => crate::story::texts::page_texts(&doc),
                "grasp" => crate::grasp::texts::page_texts(&doc),
                crate::judge_eval::SUITE => crate::story::texts::question_texts(&doc),
                _ => None,
            };
            RunData::read(dir, label.clone(), texts)
        })
        .collect::<Result<Vec<_>>>()?;
    if runs.len() == 1 {
        return html::run_page(&runs[0]);
    }
    let title = format!("scorekit view: {}", labels.join(", "));
    match comparison(
        &opts.dirs,
        opts.labels.as_deref(),
        opts.bootstrap,
        opts.seed,
    ) {
        Ok(c) => html::compare_page(&title, Some(&c.metrics), None, &runs),
        // Runs that cannot be compared are still shown side by side, with the reason.
        Err(Error::Usage(why)) => {
            html::compare_page(&title, None, Some(&format!("Not compared: {why}")), &runs)
        }
        Err(Error::Input(e)) => {
            html::compare_page(&title, None, Some(&format!("Not compared: {e}")), &runs)
        }
        Err(e) => Err(e),
    }
}

/// metrics.json of a folder, as JSON (a comparison's is not a run's), refused (exit 2, naming
/// the folder) where there is none.
fn read_metrics(dir: &Path) -> Result<Value> {
    let p = dir.join(METRICS_FILE);
    if !dir.is_dir() {
        return Err(InputError::file(dir, "not a folder").into());
    }
    if !p.is_file() {
        return Err(InputError::file(
            dir,
            "no metrics.json: not the output folder of a scoring command or of `scorekit compare`",
        )
        .into());
    }
    let text = std::fs::read_to_string(&p)
        .map_err(|e| InputError::file(&p, format!("cannot read: {e}")))?;
    serde_json::from_str(&text)
        .map_err(|e| InputError::line(&p, e.line(), format!("not JSON: {e}")).into())
}

/// One name per folder: `--labels`, else the folders' names, or their paths where two names
/// would be the same.
fn labels(opts: &ViewOptions) -> Result<Vec<String>> {
    if let Some(l) = &opts.labels {
        if l.len() != opts.dirs.len() {
            return Err(Error::usage(format!(
                "--labels names {} folder(s) but {} are given",
                l.len(),
                opts.dirs.len()
            )));
        }
        return Ok(l.iter().map(|s| s.trim().to_string()).collect());
    }
    let names: Vec<String> = opts.dirs.iter().map(|d| html::folder_label(d)).collect();
    let unique = names
        .iter()
        .enumerate()
        .all(|(i, n)| !names[..i].contains(n));
    Ok(if unique {
        names
    } else {
        opts.dirs.iter().map(|d| d.display().to_string()).collect()
    })
}
