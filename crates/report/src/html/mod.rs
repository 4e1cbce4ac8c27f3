//! report.html: one self-contained page per run, comparison or `scorekit view` (no network:
//! style, script, charts and data inline), rendered from the run's folder (metrics.json,
//! report.md, items.jsonl, calibration.jsonl) so that a run, a merge and `scorekit view` give
//! the same bytes for the same folder. Text from models and datasets reaches the page only as
//! auto-escaped template values or as JSON in a data block that the script puts in the page
//! with `textContent`.
//!
//! - `folder`: a run folder read; `lines`: its JSON Lines files as a table; `summary`:
//!   estimates, settings, inputs, warnings;
//! - `charts`: the suites' charts from metrics.json (drawn by [`crate::svg`]);
//! - `compare`: a comparison's leaderboard and paired tests; `escape`: JSON for a script block;
//! - `page`: the templates of crates/report/templates/ filled.

mod charts;
mod compare;
mod escape;
mod folder;
mod lines;
mod page;
mod summary;
pub mod timing;

pub use escape::script_json;
pub use folder::RunData;
pub use lines::{read_lines, read_own_lines, Lines, MAX_EMBEDDED_BYTES};

use scorekit_core::error::Result;
use serde_json::Value;
use std::path::Path;

/// The page's file name in a run or comparison folder.
pub const REPORT_HTML: &str = "report.html";

/// The page of one run.
pub fn run_page(run: &RunData) -> Result<String> {
    page::render(&run_title(run), None, None, std::slice::from_ref(run))
}

fn run_title(run: &RunData) -> String {
    format!("scorekit {}: {}", run.suite(), run.label)
}

/// The page of a comparison (`scorekit compare`'s metrics.json) above the runs compared
/// (none for a comparison folder), or of several runs that could not be compared (`note`
/// says why).
pub fn compare_page(
    title: &str,
    comparison: Option<&Value>,
    note: Option<&str>,
    runs: &[RunData],
) -> Result<String> {
    page::render(title, comparison.map(compare::view), note, runs)
}

/// The name a page gives the run in `dir`: the folder's name.
pub fn folder_label(dir: &Path) -> String {
    dir.canonicalize()
        .ok()
        .as_deref()
        .unwrap_or(dir)
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| dir.display().to_string())
}

/// report.html of a run finishing in `dir`, whose items.jsonl (and calibration.jsonl) are in
/// place and whose metrics.json is `metrics_json` (written after this page). The page is
/// written straight to its file (its data block never held twice), then synced and moved in
/// place; the phases are timed for `SCOREKIT_PAGE_TIMINGS` ([`timing`]).
pub fn write_run_page(
    dir: &Path,
    metrics_json: &str,
    report_md: &str,
    texts: Option<Value>,
) -> Result<()> {
    let run = timing::timed(timing::Phase::Table, || {
        RunData::finishing(
            dir,
            folder_label(dir),
            metrics_json,
            report_md.to_string(),
            texts,
        )
    })?;
    let started = std::time::Instant::now();
    let cpu = timing::thread_ticks();
    let mut rendered = (std::time::Duration::ZERO, 0);
    scorekit_core::fs::write_atomically(&dir.join(REPORT_HTML), |tmp| {
        let t = std::time::Instant::now();
        let f = std::fs::File::create(tmp)?;
        let mut w = std::io::BufWriter::with_capacity(1 << 20, f);
        page::render_to(
            &mut w,
            &run_title(&run),
            None,
            None,
            std::slice::from_ref(&run),
        )?;
        w.into_inner().map_err(|e| e.into_error())?;
        rendered = (t.elapsed(), timing::thread_ticks());
        Ok(())
    })?;
    let (wall, ticks) = rendered;
    timing::add(timing::Phase::Render, wall);
    timing::add(timing::Phase::Sync, started.elapsed() - wall);
    timing::add_ticks(timing::Phase::Render, ticks.saturating_sub(cpu));
    timing::add_ticks(
        timing::Phase::Sync,
        timing::thread_ticks().saturating_sub(ticks),
    );
    Ok(())
}
