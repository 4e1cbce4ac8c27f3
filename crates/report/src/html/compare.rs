//! The comparison a page shows (`scorekit compare`'s metrics.json, written by
//! `suites::compare`, or computed by `scorekit view` for several runs): the leaderboard with
//! intervals, its chart, the paired tests and the headline ranking, as table rows.

use super::charts::{estimate, Chart};
use super::summary::{shown, text};
use crate::svg::{interval_chart, ChartRow};
use serde::Serialize;
use serde_json::Value;

/// A cell: the value and its interval as shown, and the value as metrics.json writes it.
#[derive(Debug, Clone, Serialize)]
pub struct Cell {
    /// The value as shown (`–` for none).
    pub shown: String,
    /// `[lo, hi]` or empty.
    pub interval: String,
    /// The value as written.
    pub value: Value,
}

/// A leaderboard row.
#[derive(Debug, Clone, Serialize)]
pub struct BoardRow {
    /// The system.
    pub system: String,
    /// The run folder (and group) it came from.
    pub run: String,
    /// One cell per metric.
    pub cells: Vec<Cell>,
}

/// A paired test.
#[derive(Debug, Clone, Serialize)]
pub struct TestRow {
    /// The metric.
    pub metric: String,
    /// System A.
    pub a: String,
    /// System B.
    pub b: String,
    /// A − B with its interval.
    pub diff: Cell,
    /// p, as written and shown.
    pub p: String,
    /// Holm-adjusted p.
    pub p_holm: String,
    /// The test.
    pub test: String,
    /// Paired items; items right (or higher) for A only and for B only.
    pub n_paired: String,
    /// `a_only / b_only`.
    pub discordant: String,
}

/// The comparison as the page's template takes it.
#[derive(Debug, Clone, Serialize)]
pub struct CompareView {
    /// The suite compared.
    pub suite: String,
    /// Metric names (the leaderboard's columns).
    pub metrics: Vec<String>,
    /// The leaderboard's rows.
    pub rows: Vec<BoardRow>,
    /// The paired tests.
    pub tests: Vec<TestRow>,
    /// The benchmark the runs share (what and value).
    pub benchmark: Vec<(String, String)>,
    /// The leaderboard chart.
    pub chart: Option<Chart>,
    /// Settings (bootstrap, seed, Holm family size).
    pub settings: Vec<super::summary::KeyValue>,
}

fn rate(metric: &str) -> bool {
    !metric.to_ascii_lowercase().contains("dissim")
}

fn cell(v: Option<&Value>, rate: bool) -> Cell {
    match estimate(v) {
        Some(e) => Cell {
            shown: shown(e.value, rate),
            interval: if e.ci_low == e.value && e.ci_high == e.value && e.n == 0 {
                String::new()
            } else {
                format!("[{}, {}]", shown(e.ci_low, rate), shown(e.ci_high, rate))
            },
            value: v
                .and_then(|v| v.get("value"))
                .cloned()
                .unwrap_or(Value::Null),
        },
        None => Cell {
            shown: "–".into(),
            interval: String::new(),
            value: Value::Null,
        },
    }
}

fn p(v: &Value) -> String {
    v.as_f64().map_or_else(|| "–".into(), |x| format!("{x:.4}"))
}

/// The view of a comparison's metrics.json.
pub fn view(doc: &Value) -> CompareView {
    let board = doc["leaderboard"].as_array().cloned().unwrap_or_default();
    let mut metrics: Vec<String> = Vec::new();
    for r in &board {
        for k in r["metrics"].as_object().into_iter().flat_map(|m| m.keys()) {
            if !metrics.contains(k) {
                metrics.push(k.clone());
            }
        }
    }
    let rows: Vec<BoardRow> = board
        .iter()
        .map(|r| BoardRow {
            system: text(&r["system"]),
            run: text(&r["run"]),
            cells: metrics
                .iter()
                .map(|m| cell(r["metrics"].get(m), rate(m)))
                .collect(),
        })
        .collect();
    let tests = doc["comparisons"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|c| {
            let metric = text(&c["metric"]);
            let r = rate(&metric);
            let diff = match c["diff"].as_object() {
                Some(d) => Cell {
                    shown: d["value"].as_f64().map_or("–".into(), |v| shown(v, r)),
                    interval: match (d["ci_low"].as_f64(), d["ci_high"].as_f64()) {
                        (Some(lo), Some(hi)) => format!("[{}, {}]", shown(lo, r), shown(hi, r)),
                        _ => String::new(),
                    },
                    value: d["value"].clone(),
                },
                None => cell(None, r),
            };
            TestRow {
                a: text(&c["a"]),
                b: text(&c["b"]),
                diff,
                p: p(&c["p_value"]),
                p_holm: p(&c["p_holm"]),
                test: text(&c["test"]),
                n_paired: text(&c["n_paired"]),
                discordant: format!("{} / {}", text(&c["a_only"]), text(&c["b_only"])),
                metric,
            }
        })
        .collect();
    let series: Vec<&String> = metrics.iter().filter(|m| rate(m)).collect();
    let chart = (!series.is_empty() && !board.is_empty()).then(|| {
        let names: Vec<&str> = series.iter().map(|s| s.as_str()).collect();
        let chart_rows: Vec<ChartRow> = board
            .iter()
            .map(|r| ChartRow {
                name: text(&r["system"]),
                values: series
                    .iter()
                    .map(|m| estimate(r["metrics"].get(*m)))
                    .collect(),
                reference: None,
            })
            .collect();
        let caption = format!(
            "{}: systems compared, 95% intervals",
            text(&doc["compared_suite"])
        );
        Chart {
            svg: interval_chart(&caption, &names, &chart_rows, ""),
            caption,
        }
    });
    CompareView {
        suite: text(&doc["compared_suite"]),
        metrics,
        rows,
        tests,
        benchmark: doc["benchmark"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|b| (text(&b["what"]), text(&b["value"])))
            .collect(),
        chart,
        settings: super::summary::flatten(&doc["settings"]),
    }
}
