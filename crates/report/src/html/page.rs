//! The page itself: the templates (crates/report/templates/, compiled in) filled by minijinja
//! with HTML auto-escaping, the style and the script inline, each run's data in a
//! `<script type="application/json">` block, and a Content-Security-Policy that allows no
//! network at all and runs only the page's own script (by its sha256).

use super::charts::{run_charts, Chart};
use super::compare::CompareView;
use super::escape::write_script_json;
use super::folder::RunData;
use super::lines::Lines;
use super::summary::{flatten, metric_rows, text, warnings, EstimateRow, FactRow, KeyValue};
use scorekit_core::error::{Error, Result};
use serde::Serialize;
use serde_json::Value;
use sha2::{Digest, Sha256};
use std::io::Write;

const PAGE: &str = include_str!("../../templates/report.html");
const RUN: &str = include_str!("../../templates/run.html");
const COMPARE: &str = include_str!("../../templates/compare.html");
const STYLE: &str = include_str!("../../templates/report.css");
const SCRIPT: &str = include_str!("../../templates/report.js");

/// One run's section of a page.
#[derive(Debug, Serialize)]
struct RunView {
    /// Element id prefix (`run0`).
    id: String,
    label: String,
    suite: String,
    version: String,
    binary: String,
    estimates: Vec<EstimateRow>,
    headline: Vec<EstimateRow>,
    facts: Vec<FactRow>,
    settings: Vec<KeyValue>,
    inputs: Vec<KeyValue>,
    datasets: Vec<KeyValue>,
    models: Vec<(String, String, String)>,
    warnings: Vec<String>,
    charts: Vec<Chart>,
    report_md: String,
    items_shown: usize,
    items_total: usize,
    calibration: Option<(usize, usize)>,
    texts: bool,
    /// Where the data block goes ([`data_marker`]).
    data: String,
}

/// The whole page's context.
#[derive(Debug, Serialize)]
struct PageView<'a> {
    title: String,
    style: &'static str,
    script: &'static str,
    script_hash: String,
    compare: Option<CompareView>,
    compare_note: Option<&'a str>,
    runs: Vec<RunView>,
}

/// The metrics a run's headline shows: story's headline IFSM (and Dissimilarity) per model,
/// MINT's SR_5 per configuration with Δtools and Δfeedback, else the estimates of the whole run.
fn headline(suite: &str, est: &[EstimateRow], facts: &[FactRow]) -> Vec<EstimateRow> {
    let mut pick: Vec<EstimateRow> = match suite {
        "story" => est
            .iter()
            .filter(|e| e.metric == "ifsm_headline" || e.metric == "dissimilarity_micro")
            .cloned()
            .collect(),
        "mint" => est
            .iter()
            .filter(|e| e.metric == "success_rate.micro")
            .cloned()
            .collect(),
        _ => est
            .iter()
            .filter(|e| e.scope == "overall")
            .cloned()
            .collect(),
    };
    if suite == "mint" {
        // The paper's gains: Δtools (SR points per turn, the slope of SR_k) and Δfeedback.
        pick.extend(facts.iter().filter_map(|f| {
            let rate = f.key.ends_with(".delta_feedback.micro");
            if !(rate || f.key.ends_with(".delta_tools_pct_per_turn")) {
                return None;
            }
            let v: f64 = f.value.parse().ok()?;
            Some(EstimateRow {
                scope: f.scope.clone(),
                metric: f.key.clone(),
                value: serde_json::json!(v),
                shown: super::summary::shown(v, rate),
                interval: String::new(),
                n: None,
                method: None,
                unit: if rate { "%" } else { "points/turn" },
            })
        }));
    }
    pick
}

/// Where a run's data block goes in the filled templates: the block (tens of megabytes for a
/// large run) is written straight into the page there rather than passed through the template
/// engine. No text the page shows can hold it: every text is escaped (`<` becomes `&lt;`), and
/// the style, script and charts are the page's own.
fn data_marker(i: usize) -> String {
    format!("<scorekit-data-{i}>")
}

/// The data block of a run (`{"suite", "items", "calibration", "texts"}`, escaped for a script
/// element), written to `out`.
fn write_data_block(out: &mut dyn Write, run: &RunData) -> std::io::Result<()> {
    let texts = run.texts.as_ref().map(Value::to_string);
    let parts = [
        "{\"suite\":",
        &Value::String(run.suite().to_string()).to_string(),
        ",\"items\":",
        &run.items.json,
        ",\"calibration\":",
        run.calibration.as_ref().map_or("null", |c: &Lines| &c.json),
        ",\"texts\":",
        texts.as_deref().unwrap_or("null"),
        "}",
    ];
    for part in parts {
        write_script_json(out, part)?;
    }
    Ok(())
}

fn run_view(i: usize, run: &RunData) -> RunView {
    let doc = &run.metrics;
    let (estimates, facts) = metric_rows(doc);
    let suite = run.suite().to_string();
    RunView {
        id: format!("run{i}"),
        label: run.label.clone(),
        headline: headline(&suite, &estimates, &facts),
        version: text(&doc["scorekit_version"]),
        binary: doc["binary"]
            .as_object()
            .map(|b| {
                format!(
                    "{} ({} build)",
                    text(&b["name"].clone()),
                    text(&b["build"].clone())
                )
            })
            .unwrap_or_default(),
        estimates,
        facts,
        settings: flatten(&doc["settings"]),
        inputs: doc["inputs"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|f| KeyValue {
                key: text(&f["path"]),
                value: text(&f["sha256"]),
            })
            .collect(),
        datasets: doc["datasets"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|d| KeyValue {
                key: text(&d["name"]),
                value: format!("{} @ {}", text(&d["repo"]), text(&d["commit"])),
            })
            .collect(),
        models: doc["models"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|m| (text(&m["id"]), text(&m["revision"]), text(&m["sha256"])))
            .collect(),
        warnings: warnings(&run.report_md),
        charts: run_charts(doc),
        report_md: without_wall_clock(&run.report_md),
        items_shown: run.items.shown,
        items_total: run.items.total,
        calibration: run.calibration.as_ref().map(|c| (c.shown, c.total)),
        texts: run.texts.is_some(),
        data: data_marker(i),
        suite,
    }
}

/// report.md without the one line that says how long the run took (MINT's "read and tabulated
/// in N s", which scripts/check-same-outputs.sh masks too): the page is the same bytes for the
/// same run.
fn without_wall_clock(report_md: &str) -> String {
    report_md
        .split_inclusive('\n')
        .filter(|line| !line.contains(" read and tabulated in "))
        .collect()
}

/// The sha256 of the script, as CSP names it (`sha256-` and base64).
fn csp_hash(script: &str) -> String {
    format!("sha256-{}", base64(&Sha256::digest(script.as_bytes())))
}

fn base64(bytes: &[u8]) -> String {
    const A: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::new();
    for c in bytes.chunks(3) {
        let n = (c[0] as u32) << 16
            | (*c.get(1).unwrap_or(&0) as u32) << 8
            | *c.get(2).unwrap_or(&0) as u32;
        for k in 0..4 {
            if k <= c.len() {
                out.push(A[(n >> (18 - 6 * k) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// Render a page: a comparison (or why there is none) above zero or more runs.
pub fn render(
    title: &str,
    compare: Option<CompareView>,
    compare_note: Option<&str>,
    runs: &[RunData],
) -> Result<String> {
    let mut out = Vec::new();
    render_to(&mut out, title, compare, compare_note, runs)?;
    String::from_utf8(out)
        .map_err(|e| Error::Internal(anyhow::anyhow!("report.html is not UTF-8: {e}")))
}

/// [`render`] written to `out`: the filled templates, each run's data block written in its
/// place from the run's tables (never copied whole).
pub fn render_to(
    out: &mut dyn Write,
    title: &str,
    compare: Option<CompareView>,
    compare_note: Option<&str>,
    runs: &[RunData],
) -> Result<()> {
    let mut env = minijinja::Environment::new();
    for (name, src) in [
        ("report.html", PAGE),
        ("run.html", RUN),
        ("compare.html", COMPARE),
    ] {
        env.add_template(name, src)
            .map_err(|e| Error::Internal(anyhow::anyhow!("template {name}: {e}")))?;
    }
    let view = PageView {
        title: title.to_string(),
        style: STYLE,
        script: SCRIPT,
        script_hash: csp_hash(SCRIPT),
        compare,
        compare_note,
        runs: runs
            .iter()
            .enumerate()
            .map(|(i, r)| run_view(i, r))
            .collect(),
    };
    let page = env
        .get_template("report.html")
        .and_then(|t| t.render(&view))
        .map_err(|e| Error::Internal(anyhow::anyhow!("cannot render report.html: {e}")))?;
    let write =
        |e: std::io::Error| Error::Internal(anyhow::anyhow!("cannot write report.html: {e}"));
    let mut rest = page.as_str();
    for (i, run) in runs.iter().enumerate() {
        let marker = data_marker(i);
        let at = rest.find(&marker).ok_or_else(|| {
            Error::Internal(anyhow::anyhow!("report.html: no place for run {i}'s data"))
        })?;
        out.write_all(&rest.as_bytes()[..at]).map_err(write)?;
        write_data_block(out, run).map_err(write)?;
        rest = &rest[at + marker.len()..];
    }
    out.write_all(rest.as_bytes()).map_err(write)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_inline_script_and_style_cannot_end_their_elements() {
        for (name, text) in [("report.js", SCRIPT), ("report.css", STYLE)] {
            for bad in ["</script", "<script", "<!--", "</style"] {
                assert!(
                    !text.to_ascii_lowercase().contains(bad),
                    "{name} holds {bad}"
                );
            }
        }
    }

    #[test]
    fn a_page_is_the_same_bytes_for_the_same_run_and_escapes_what_it_shows() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("items.jsonl"),
            "{\"row\":1,\"verdict\":\"</script><b>x</b>\"}\n",
        )
        .unwrap();
        let metrics = r#"{"suite":"grasp","scorekit_version":"0","inputs":[{"path":"<i>.csv","sha256":"ab"}],"models":[],"settings":{"test":"level1-binary"},"metrics":{"accuracy":{"value":0.5,"n":2,"ci_low":0.0,"ci_high":1.0}},"groups":{}}"#;
        let md = "# GRASP\n\n**Warning**: <script>alert(1)</script>\n".to_string();
        let run = RunData::from_parts(dir.path(), "r<1>".into(), metrics, md, None).unwrap();
        let a = render("t", None, None, std::slice::from_ref(&run)).unwrap();
        let b = render("t", None, None, std::slice::from_ref(&run)).unwrap();
        assert_eq!(a, b);
        // Two script elements only (the data block and the page's own); every text escaped.
        assert_eq!(a.matches("<script").count(), 2);
        assert!(a.contains("&lt;i&gt;.csv") && a.contains("r&lt;1&gt;"));
        assert!(a.contains("&lt;script&gt;alert(1)&lt;&#x2f;script&gt;"));
        assert!(a.contains("\\u003c/script\\u003e\\u003cb\\u003ex"));
        assert!(a.contains(&format!("script-src '{}'", csp_hash(SCRIPT))));
    }

    #[test]
    fn the_wall_clock_line_of_a_report_is_left_out() {
        let md = "# MINT tables\n\n| a |\n\n4102 trajectories from 56 files (36.1 MB) read and tabulated in 0.14 s.\n";
        assert_eq!(without_wall_clock(md), "# MINT tables\n\n| a |\n\n");
    }

    #[test]
    fn base64_matches_the_standard_alphabet_and_padding() {
        assert_eq!(base64(b""), "");
        assert_eq!(base64(b"f"), "Zg==");
        assert_eq!(base64(b"fo"), "Zm8=");
        assert_eq!(base64(b"foo"), "Zm9v");
        assert_eq!(base64(b"foobar"), "Zm9vYmFy");
    }
}
