//! A GRASP run's metrics.json numbers, report.md, tables and chart, from its items (a run held
//! in memory, and `scorekit merge`) or from the counts of a streamed run.

use super::metrics::{headline, summary_options};
use super::semantic::{self, Thresholds};
use super::{scene_rows_from, table2, Item, RowIssue, SceneCounts, Summary, Tally};
use crate::settings::GraspSettings;
use scorekit_core::error::{Error, InputError, Result};
use scorekit_report::grasp::{RereadRow, SemanticSummary};
use scorekit_report::{self as report, MetricsDoc, Outputs};
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::path::Path;

/// Metrics from items, the one place `scorekit grasp` and `scorekit merge` compute them: puts
/// the items in the single-run order (by row; by model first for [`table2`]), fills
/// `doc.metrics` and `doc.groups` from the test, pairing, bootstrap and seed of `doc.settings`,
/// and renders tables and report. A row's issue names the first input and the row.
pub fn outputs(doc: &mut MetricsDoc, items: &mut [Item]) -> Result<Outputs> {
    if items.iter().any(|i| i.model.is_some()) {
        return table2::outputs(doc, items);
    }
    let file = doc
        .inputs
        .first()
        .map(|i| i.path.clone())
        .unwrap_or_default();
    let located = |issue: RowIssue| -> Error {
        InputError::field(
            &file,
            0,
            issue.field,
            format!("row {}: {}", issue.row, issue.message),
        )
        .into()
    };
    outputs_with(doc, items, &located)
}

/// [`outputs`] of one results file's items, a row's issue turned into an error by `located`
/// (a single run names the row's file line).
pub(super) fn outputs_with(
    doc: &mut MetricsDoc,
    items: &mut [Item],
    located: &dyn Fn(RowIssue) -> Error,
) -> Result<Outputs> {
    items.sort_by_key(|i| i.row);
    let settings: GraspSettings = doc.suite_settings()?;
    let opts = summary_options(doc, &settings)?;
    let mut tally = Tally::new(settings.kind()?, opts);
    for it in items.iter() {
        tally.add(it, 0);
    }
    let (summary, scenes) = tally.finish().map_err(|(issue, _)| located(issue))?;
    let semantic = settings.semantic.then(|| {
        (
            semantic::summarize(items, opts.bootstrap, opts.seed),
            semantic::reread_rows(items),
        )
    });
    outputs_from(doc, summary, scenes, semantic)
}

/// metrics.json's numbers and the rendered files from a summary and its scene counts (and the
/// semantic reading with its re-read rows, `--semantic`): the part of a GRASP run's outputs
/// that needs no item.
pub(super) fn outputs_from(
    doc: &mut MetricsDoc,
    summary: Summary,
    scenes: SceneCounts,
    semantic: Option<(SemanticSummary, Vec<RereadRow>)>,
) -> Result<Outputs> {
    let settings: GraspSettings = doc.suite_settings()?;
    let kind = settings.kind()?;
    doc.metrics = headline(&summary);
    set_groups(doc, &summary, semantic.as_ref().map(|(s, _)| s))?;
    let file = doc
        .inputs
        .first()
        .map(|i| i.path.clone())
        .unwrap_or_default();
    let mut report = report::grasp::report(
        &summary,
        &settings.test_source,
        settings.mode.as_deref(),
        Path::new(&file),
    );
    // Rows per scene (expected by the test's config and present), renamed and unknown scenes.
    let scenes_rows = scene_rows_from(kind, &scenes.rows);
    let (renamed, unknown) = (scenes.renamed, scenes.unknown);
    let scene_map: serde_json::Map<String, Value> = scenes_rows
        .iter()
        .map(|s| {
            (
                s.scene.clone(),
                json!({"expected": s.expected, "rows": s.rows}),
            )
        })
        .collect();
    doc.metrics
        .insert("scene_rows".into(), Value::Object(scene_map));
    doc.metrics.insert("renamed_scenes".into(), json!(renamed));
    doc.metrics.insert("unknown_scenes".into(), json!(unknown));
    report.push_str(&report::grasp::scenes_report(
        &scenes_rows,
        &renamed,
        &unknown,
    ));
    let mut table = report::grasp::tables(&summary);
    if let Some((s, reread)) = &semantic {
        add_semantic(doc, &settings, &summary, s, reread, &mut report, &mut table);
    }
    // A run of a few rows is a test of the tool, not of the model: say so where it is read.
    if let Some(w) = report::grasp::short_run_warning(&scenes_rows) {
        report = report.replacen("\n\n", &format!("\n\n**Warning**: {w}.\n\n"), 1);
        table.push_str(&format!("\nwarning: {w}\n"));
    }
    let main = report::grasp::main_table(&summary);
    let mut files = report::table::table_files("GRASP table", &main);
    files.push((
        "accuracy.svg".to_string(),
        report::grasp::accuracy_chart(&summary).into_bytes(),
    ));
    Ok(Outputs {
        report,
        table,
        files,
        texts: scorekit_report::html::timing::timed(
            scorekit_report::html::timing::Phase::Texts,
            || super::texts::page_texts(doc),
        ),
    })
}

/// `doc.groups`: each test's group, with its paired accuracy (`--pairwise`) and its semantic
/// reading (`--semantic`).
fn set_groups(
    doc: &mut MetricsDoc,
    summary: &Summary,
    semantic: Option<&SemanticSummary>,
) -> Result<()> {
    doc.groups.clear();
    for (name, g) in &summary.groups {
        let mut v = serde_json::to_value(g).map_err(anyhow::Error::from)?;
        if let (Some(p), Some(obj)) = (&summary.pairwise, v.as_object_mut()) {
            if let Some(e) = p.groups.get(name) {
                obj.insert("paired_accuracy".into(), json!(e));
            }
        }
        if let (Some(s), Some(obj)) = (semantic, v.as_object_mut()) {
            if let Some(g) = s.groups.get(name) {
                obj.insert("semantic_accuracy".into(), json!(g.semantic_accuracy));
                obj.insert("semantic".into(), json!(g));
            }
        }
        doc.groups.insert(name.clone(), v);
    }
    Ok(())
}

/// `--semantic`'s numbers beside the strict ones: in metrics.json, report.md and the table.
fn add_semantic(
    doc: &mut MetricsDoc,
    settings: &GraspSettings,
    summary: &Summary,
    s: &SemanticSummary,
    reread: &[RereadRow],
    report: &mut String,
    table: &mut String,
) {
    let th: Option<Thresholds> = settings.semantic_thresholds;
    let strict: BTreeMap<String, f64> = summary
        .groups
        .iter()
        .map(|(k, g)| (k.clone(), g.accuracy().value))
        .collect();
    doc.metrics
        .insert("semantic_accuracy".into(), json!(s.all.semantic_accuracy));
    doc.metrics
        .insert("semantic".into(), semantic::metrics_value(s, th));
    report.push_str(&report::grasp::semantic_report(
        s,
        reread,
        &strict,
        summary.accuracy.value,
        th,
    ));
    table.push_str(&report::grasp::semantic_table(
        s,
        &strict,
        summary.accuracy.value,
    ));
}
