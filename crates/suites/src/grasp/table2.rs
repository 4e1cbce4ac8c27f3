//! `scorekit grasp --responses a.csv b.csv ... [--labels A,B,...]`: several models' results
//! files of one test in one run, laid out as the GRASP paper's Table 2 (one row per model, one
//! column per test).
//!
//! Each file is read and scored exactly as a single-file run; its items carry the model's name
//! (`model`), so that items.jsonl holds every model, `scorekit merge` recomputes the same
//! tables, and `scorekit compare` sees each model as a system. metrics.json: `groups.<model>` is
//! that model's single-run headline (accuracy, n, ...) with its per-test groups under `tests`;
//! `metrics` holds the row count and the models in order.

use super::input::{read_and_score, resolve_test, Input, ResolvedTest};
use super::metrics::{headline, summary_options};
use super::{summarize, Item, Summary, TestKind};
use crate::settings::GraspSettings;
use scorekit_core::error::{Error, InputError, Result};
use scorekit_report::{self as report, MetricsDoc, Outputs};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};

/// Every `--responses` file read, checked and scored, its items named by the file's model.
pub(super) struct Models {
    /// The inputs recorded (each file, and the config beside it when one was read).
    pub(super) doc: MetricsDoc,
    /// The settings the run records.
    pub(super) recorded: GraspSettings,
    /// Every model's items, in `--responses` order, then row.
    pub(super) items: Vec<Item>,
}

/// Read, check and score every `--responses` file of `s` as a single-file run would, each
/// file's items named by its model; warnings go to `warn`. The files must be of one test.
pub(super) fn read(s: &Input, warn: &mut dyn FnMut(String)) -> Result<Models> {
    let labels = labels(&s.responses, s.labels.as_deref())?;
    let mut doc = MetricsDoc::new("grasp");
    let mut items = Vec::new();
    let mut first: Option<(TestKind, PathBuf)> = None;
    let mut resolved: Option<ResolvedTest> = None;
    for (file, label) in s.responses.iter().zip(&labels) {
        let test = resolve_test(s.test, file, warn)?;
        match &first {
            Some((kind, f)) if *kind != test.kind => {
                return Err(Error::usage(format!(
                    "{} is a {} results file but {} is {}: one run scores one test; pass --test \
                     or score them separately",
                    file.display(),
                    test.kind.name(),
                    f.display(),
                    kind.name()
                )))
            }
            Some(_) => {}
            None => first = Some((test.kind, file.clone())),
        }
        s.check(test.kind)?;
        // Read, checked and scored exactly as a single-file run.
        let mut scored =
            read_and_score(file, test.kind, s.allow_unknown_scenes, false, warn)?.items;
        for it in &mut scored {
            it.model = Some(label.clone());
        }
        items.extend(scored);
        doc.add_input(file)?;
        if let Some(cfg) = &test.config {
            doc.add_input(cfg)?;
        }
        resolved.get_or_insert(test);
    }
    let test = resolved.ok_or_else(|| Error::usage("--responses: no results file to score"))?;
    let mut recorded = test.recorded(s.pairwise);
    if s.responses.len() > 1 {
        // Each file's config may say another mode: the one run records none.
        recorded.mode = None;
    }
    recorded.models = Some(labels);
    recorded.allow_unknown_scenes = s.allow_unknown_scenes;
    Ok(Models {
        doc,
        recorded,
        items,
    })
}

/// One name per file: `--labels`, else the file's folder name (upstream writes one folder per
/// model and test), else its file name; names must be distinct.
fn labels(files: &[PathBuf], given: Option<&[String]>) -> Result<Vec<String>> {
    let labels: Vec<String> = match given {
        Some(l) if l.len() != files.len() => {
            return Err(Error::usage(format!(
                "--labels names {} model(s) but --responses gives {} file(s)",
                l.len(),
                files.len()
            )))
        }
        Some(l) => l.iter().map(|s| s.trim().to_string()).collect(),
        None => files.iter().map(|f| default_label(f)).collect(),
    };
    for (i, l) in labels.iter().enumerate() {
        if l.is_empty() {
            return Err(Error::usage("--labels: a model name is empty"));
        }
        if labels[..i].contains(l) {
            return Err(Error::usage(format!(
                "two --responses files are called {l:?}; name them with --labels"
            )));
        }
    }
    Ok(labels)
}

fn default_label(file: &Path) -> String {
    let name = |p: &Path| p.file_name().map(|n| n.to_string_lossy().into_owned());
    file.parent()
        .and_then(name)
        .filter(|n| !n.is_empty())
        .or_else(|| name(file))
        .unwrap_or_else(|| file.display().to_string())
}

/// Metrics and files of a run with several models (also what `scorekit merge` computes): items
/// in model order (the `models` setting), then row; one summary per model, as a single run of
/// that file would compute it; Table 2 as report, tables.tex, table.csv and accuracy.svg.
pub fn outputs(doc: &mut MetricsDoc, items: &mut [Item]) -> Result<Outputs> {
    let settings: GraspSettings = doc.suite_settings()?;
    let models = summaries(doc, &settings, items)?;
    doc.groups.clear();
    for (name, s) in &models {
        let mut g = headline(s);
        g.insert(
            "tests".into(),
            serde_json::to_value(&s.groups).map_err(anyhow::Error::from)?,
        );
        doc.groups.insert(name.clone(), Value::Object(g));
    }
    doc.metrics = serde_json::Map::new();
    doc.metrics.insert("n".into(), json!(items.len()));
    doc.metrics.insert(
        "models".into(),
        json!(models.iter().map(|(n, _)| n).collect::<Vec<_>>()),
    );
    let kind = settings.kind()?;
    let table2 = report::grasp::table2(&models);
    let table = table2.markdown();
    let report = report_md(doc, &settings, kind, &models, &table);
    let mut files = report::table::table_files("GRASP Table 2", &table2);
    files.push((
        "accuracy.svg".to_string(),
        report::grasp::models_chart(&models).into_bytes(),
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

/// Sort `items` by model (the `models` setting's order), then row, and summarize each model's
/// items as a single run of its file would.
fn summaries(
    doc: &MetricsDoc,
    settings: &GraspSettings,
    items: &mut [Item],
) -> Result<Vec<(String, Summary)>> {
    let order: Vec<String> = settings.models.clone().unwrap_or_default();
    let rank = |m: &Option<String>| {
        m.as_ref()
            .and_then(|m| order.iter().position(|o| o == m))
            .unwrap_or(order.len())
    };
    items.sort_by(|a, b| (rank(&a.model), &a.model, a.row).cmp(&(rank(&b.model), &b.model, b.row)));
    let kind = settings.kind()?;
    let opts = summary_options(doc, settings)?;
    let mut models: Vec<(String, Summary)> = Vec::new();
    let mut start = 0;
    while start < items.len() {
        let model = items[start].model.clone();
        let end = start
            + items[start..]
                .iter()
                .take_while(|i| i.model == model)
                .count();
        let name = model.unwrap_or_else(|| "(no model)".into());
        let summary = summarize(kind, &items[start..end], &opts).map_err(|issue| {
            Error::from(InputError::file(
                format!("items of model {name}"),
                format!("row {}: {} {}", issue.row, issue.field, issue.message),
            ))
        })?;
        models.push((name, summary));
        start = end;
    }
    Ok(models)
}

/// report.md: Table 2, then each model's own report one heading level down.
fn report_md(
    doc: &MetricsDoc,
    settings: &GraspSettings,
    kind: TestKind,
    models: &[(String, Summary)],
    table: &str,
) -> String {
    let mut report_md = format!(
        "# GRASP {}: {} models\n\n## Table 2: accuracy (%) per model and test\n\n{table}\n\
         Accuracy = correct / rows of the test (invalid answers count as wrong); intervals are \
         in metrics.json (`groups.<model>.tests.<test>.accuracy`). Compare models with paired \
         tests: `scorekit compare --runs <this folder>`.\n",
        kind.name(),
        models.len()
    );
    let inputs: Vec<String> = doc
        .inputs
        .iter()
        .map(|i| i.path.clone())
        .filter(|p| !p.ends_with(".yaml"))
        .collect();
    for (k, (name, s)) in models.iter().enumerate() {
        let file = inputs.get(k).map(String::as_str).unwrap_or("");
        let one = report::grasp::report(s, &settings.test_source, None, Path::new(file));
        // The model's own report, one heading level down.
        report_md.push_str(&format!("\n## {name}\n"));
        report_md.push_str(one.split_once('\n').map_or("", |(_, rest)| rest));
    }
    report_md
}
