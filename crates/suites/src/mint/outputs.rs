//! MINT's metrics and reports from its counts: metrics.json's `metrics` and `groups`, sr.csv,
//! tables.md/.tex, sr_curves.svg, recheck.csv and report.md. A run renders from what it
//! aggregated while reading; a merge ([`outputs`]) aggregates its items the same way first.

use crate::mint::aggregate::{Aggregate, Totals};
use crate::mint::checkers::Tolerance;
use crate::mint::{metrics, tables, Item};
use crate::settings::MintSettings;
use scorekit_core::error::Result;
use scorekit_report::mint::RecheckTask;
use scorekit_report::{self as report, MetricsDoc, Outputs, RunSettings};
use serde_json::{json, Map, Value};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// The folder facts of metrics.json that a run records before [`render`] and that survive it.
const FOLDER_FACTS: [&str; 3] = ["skipped_files", "other_files", "other_file_paths"];

/// Metrics from items, the one place `scorekit merge` computes them: puts the items in the
/// single-run order (files by path, then lines), marks duplicates, and renders as
/// [`render`] does for `scorekit mint`, which aggregates the same way while it reads.
pub fn outputs(doc: &mut MetricsDoc, items: &mut [Item]) -> Result<Outputs> {
    items.sort_by(|a, b| {
        Path::new(&a.file)
            .cmp(Path::new(&b.file))
            .then(a.line.cmp(&b.line))
    });
    let rechecked = doc.suite_settings::<MintSettings>()?.rechecked();
    let mut agg = Aggregate::new(rechecked);
    for it in items.iter_mut() {
        agg.add(it);
    }
    Ok(render(doc, agg.finish())?.0)
}

/// Record in `doc.metrics` the files of the outputs folder a run did not read: those that do
/// not fit the layout (with why) and any other files.
pub fn record_folder_facts(doc: &mut MetricsDoc, misfits: &[(PathBuf, String)], stray: &[PathBuf]) {
    doc.metrics.insert(
        "skipped_files".into(),
        Value::Array(
            misfits
                .iter()
                .map(|(p, why)| json!({"path": p.display().to_string(), "reason": why}))
                .collect(),
        ),
    );
    doc.metrics.insert("other_files".into(), json!(stray.len()));
    doc.metrics.insert(
        "other_file_paths".into(),
        json!(stray
            .iter()
            .map(|p| p.display().to_string())
            .collect::<Vec<_>>()),
    );
}

/// Fill `doc.metrics` (keeping the folder facts `skipped_files`, `other_files`,
/// `other_file_paths` already there) and `doc.groups` with the settings of `doc.settings`,
/// and render tables, sr.csv, tables.tex, sr_curves.svg, recheck.csv and the report. Returns
/// the outputs and the time the bootstrap took (`--timings`).
pub fn render(doc: &mut MetricsDoc, totals: Totals) -> Result<(Outputs, Duration)> {
    let settings: MintSettings = doc.suite_settings()?;
    let use_recheck = settings.rechecked();
    let RunSettings {
        bootstrap, seed, ..
    } = doc.run_settings()?;
    let kept: Vec<(String, Value)> = FOLDER_FACTS
        .iter()
        .filter_map(|k| doc.metrics.get(*k).map(|v| (k.to_string(), v.clone())))
        .collect();
    doc.metrics.clear();
    doc.groups.clear();
    let tolerance = Tolerance::from_name(&settings.tolerance);
    let recheck_summary = recheck_report(&totals, tolerance);
    let started = Instant::now();
    metrics::fill(&mut doc.metrics, &mut doc.groups, &totals, bootstrap, seed);
    let bootstrap_time = started.elapsed();
    for (k, v) in kept {
        doc.metrics.insert(k, v);
    }
    if use_recheck {
        doc.metrics
            .insert("recheck".into(), recheck_summary.0.clone());
        // Which tolerance the numeric answers were re-checked with, and how many re-checked
        // verdicts differ from the stored flags (per task in `recheck.<task>.differ`).
        if let Some(t) = tolerance {
            doc.metrics.insert(
                "recheck_tolerance".into(),
                json!({"name": t.name(), "rule": t.rule()}),
            );
        }
        let differ: usize = totals.recheck.values().map(|t| t.differ).sum();
        doc.metrics.insert("recheck_differ".into(), json!(differ));
    }
    let summary = tables::summary(&totals.stats);
    let tables_md = report::mint::markdown(&summary);
    let mut files = vec![
        (
            "sr.csv".to_string(),
            report::mint::sr_csv(&summary).into_bytes(),
        ),
        ("tables.md".to_string(), tables_md.clone().into_bytes()),
        (
            "tables.tex".to_string(),
            report::latex::mint_tables(&summary).into_bytes(),
        ),
        (
            "sr_curves.svg".to_string(),
            report::svg::sr_curves(&summary.table2).into_bytes(),
        ),
    ];
    if use_recheck {
        files.push(("recheck.csv".to_string(), recheck_summary.2.into_bytes()));
    }
    let mut report = tables_md;
    if use_recheck {
        report.push('\n');
        report.push_str(&recheck_summary.1);
    }
    report.push_str(&files_not_used(doc));
    let outputs = Outputs {
        table: report.clone(),
        report,
        files,
        texts: None,
    };
    Ok((outputs, bootstrap_time))
}

/// The report's section on the files of the folder that were not read, from the folder facts
/// in `doc.metrics`.
fn files_not_used(doc: &MetricsDoc) -> String {
    let list = |key: &str| {
        doc.metrics
            .get(key)
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default()
    };
    let skipped = list("skipped_files");
    let stray = list("other_file_paths");
    let skipped: Vec<(&str, &str)> = skipped
        .iter()
        .map(|s| {
            (
                s["path"].as_str().unwrap_or(""),
                s["reason"].as_str().unwrap_or(""),
            )
        })
        .collect();
    let stray: Vec<&str> = stray.iter().map(|p| p.as_str().unwrap_or("")).collect();
    report::mint::files_not_used(&skipped, &stray)
}

/// Per task: re-checked, agreeing, differing, unverifiable, and the differing instances.
/// Returns (metrics value, markdown section, recheck.csv).
fn recheck_report(totals: &Totals, tolerance: Option<Tolerance>) -> (Value, String, String) {
    let rows = &totals.recheck_rows;
    let tasks: Vec<RecheckTask> = totals
        .recheck
        .iter()
        .filter(|(_, t)| t.checked + t.unchecked > 0)
        .map(|(task, t)| RecheckTask {
            task: task.clone(),
            checked: t.checked,
            differ: t.differ,
            gained: t.gained,
            lost: t.lost,
            unchecked: t.unchecked,
        })
        .collect();
    let mut json_per = Map::new();
    for t in &tasks {
        let ids: Vec<Value> = rows
            .iter()
            .filter(|i| i.task == t.task && i.rechecked.is_some())
            .map(|i| json!({"config": i.config, "task_id": i.task_id, "stored": i.stored, "rechecked": i.rechecked}))
            .collect();
        json_per.insert(
            t.task.clone(),
            json!({"rechecked": t.checked, "differ": t.differ, "stored_false_rechecked_true": t.gained,
                   "stored_true_rechecked_false": t.lost, "no_verdict": t.unchecked, "differing": ids}),
        );
    }
    (
        Value::Object(json_per),
        report::mint::recheck_markdown(
            &tasks,
            tolerance.map(|t| (t.name(), t.rule())),
            !rows.is_empty(),
        ),
        report::mint::recheck_csv(rows),
    )
}
