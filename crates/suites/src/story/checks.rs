//! What a story run says about its inputs before it scores: the generations it will not score
//! (unknown question, duplicate, empty ending), the dataset questions a model left without an
//! ending, and `--require-complete`'s verdict on them. Messages are returned, the command prints.

use crate::story::{Checked, Generation, Status, MISSING_IDS_LISTED};
use scorekit_core::error::{Error, Result};
use std::collections::BTreeMap;

/// One warning per kind of unscored generation, naming the first few by file:line.
pub fn unscored_warnings(
    file: &str,
    generations: &[Generation],
    checked: &[Checked],
) -> Vec<String> {
    let mut by: BTreeMap<&str, Vec<String>> = BTreeMap::new();
    for c in checked {
        let g = &generations[c.generation];
        let what = match c.status {
            Status::Scored => continue,
            Status::UnknownQuestion => "question_id not in the dataset",
            Status::Duplicate => "duplicate (model, question_id): the first one is scored",
            Status::EmptyEnding => "empty ending",
        };
        by.entry(what)
            .or_default()
            .push(format!("{file}:{}", g.line));
    }
    by.into_iter()
        .map(|(what, at)| {
            let shown: Vec<&str> = at.iter().take(5).map(String::as_str).collect();
            format!(
                "warning: {} generation(s) not scored, {what}: {}{} (status in items.jsonl)",
                at.len(),
                shown.join(", "),
                if at.len() > 5 { ", ..." } else { "" }
            )
        })
        .collect()
}

/// One warning per group with dataset questions (of the `scope` in this run) without an ending.
pub fn missing_warnings(missing: &BTreeMap<String, Vec<&str>>, scope: usize) -> Vec<String> {
    missing
        .iter()
        .filter(|(_, ids)| !ids.is_empty())
        .map(|(g, ids)| {
            format!(
                "warning: model {g:?} has no ending for {} of {scope} dataset question(s): {} \
                 (coverage in metrics.json; --require-complete makes this an error)",
                ids.len(),
                first_ids(ids)
            )
        })
        .collect()
}

/// `--require-complete`: a group with a missing question is an error (exit 2).
pub fn require_complete(missing: &BTreeMap<String, Vec<&str>>, scope: usize) -> Result<()> {
    let gaps: Vec<String> = missing
        .iter()
        .filter(|(_, ids)| !ids.is_empty())
        .map(|(g, ids)| {
            format!(
                "model {g:?} has no ending for {} of {scope} dataset question(s): {}",
                ids.len(),
                first_ids(ids)
            )
        })
        .collect();
    if gaps.is_empty() {
        return Ok(());
    }
    Err(Error::usage(format!(
        "--require-complete: {}",
        gaps.join("; ")
    )))
}

/// `a, b, c, ...`: the first listed ids.
fn first_ids(ids: &[&str]) -> String {
    let shown: Vec<&str> = ids.iter().take(MISSING_IDS_LISTED).copied().collect();
    format!(
        "{}{}",
        shown.join(", "),
        if ids.len() > MISSING_IDS_LISTED {
            ", ..."
        } else {
            ""
        }
    )
}
