//! MuSE's results from its items, the one place a run and a merge compute them: metrics.json's
//! numbers, report.md, the stdout table and the other files.

use super::metrics::failing_queries;
use super::{semantic, summarize, Item};
use crate::settings::MuseSettings;
use scorekit_core::error::Result;
use scorekit_report::{self as report, MetricsDoc, Outputs};

/// Metrics from items, the one place `scorekit muse` and `scorekit merge` compute them: puts
/// the items in the single-run order (by idx), fills `doc.metrics` and `doc.groups` with the
/// bootstrap and seed of `doc.settings`, and renders the report.
pub fn outputs(doc: &mut MetricsDoc, items: &mut [Item]) -> Result<Outputs> {
    items.sort_by_key(|i| i.idx);
    let run = doc.run_settings()?;
    let settings: MuseSettings = doc.suite_settings()?;
    let summary = summarize(items, run.bootstrap, run.seed);
    doc.metrics = summary.metrics.clone();
    doc.groups = summary.groups.clone();
    let verdicts = settings.output_verdicts.as_deref();
    let mut report = report::muse::report(&summary, &failing_queries(items));
    let mut table = report::muse::table(&summary).render();
    if let Some(path) = verdicts {
        report.insert_str(
            report.find('\n').map_or(0, |i| i + 2),
            &format!("O comes from the verdicts in {path}, not from scorekit's rule.\n\n"),
        );
        table.push_str("O from --output-verdicts\n");
    }
    let main = report::muse::main_table(&summary);
    let mut files = report::table::table_files("MuSE table", &main);
    files.push((
        "scores.svg".to_string(),
        report::muse::scores_chart(&summary).into_bytes(),
    ));
    if settings.embedder.is_some() {
        let th = settings.embedder_thresholds;
        doc.metrics.insert(
            "embedding_matches".into(),
            semantic::metrics_value(items, th),
        );
        let (accepted, rejected) = semantic::name_uses(items);
        report.push_str(&report::muse::matches_report(&accepted, &rejected, th));
        table.push_str(&format!(
            "task names matched by embeddings: {} (check them in report.md), left unknown: {}\n",
            accepted.len(),
            rejected.len()
        ));
        files.push((
            "suggested_aliases.json".to_string(),
            semantic::suggested_aliases(items).into_bytes(),
        ));
    }
    Ok(Outputs {
        report,
        table,
        files,
        texts: None,
    })
}
