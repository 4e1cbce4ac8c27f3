//! `scorekit compare`: the typed results (pairwise comparisons, leaderboard) and their writers:
//! report.md (leaderboard and pairwise table) and tables.tex (the same two tables).

use super::svg::{interval_chart, ChartRow};
use super::table::{latex_document, Cell, DataTable};
use super::{Estimate, MetricsDoc};
use serde::{Deserialize, Serialize};

/// How a metric is measured per item, which decides the test.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MetricKind {
    /// 0/1 per item (a rate): exact McNemar.
    Binary,
    /// A number per item: exact sign test.
    Continuous,
}

/// A headline metric of a suite as `compare` sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MetricSpec {
    /// Name as in the suite's metrics.json (`ifsm`, `accuracy`, `TS`, ...).
    pub name: &'static str,
    /// Column header in the leaderboard.
    pub label: &'static str,
    /// Binary or continuous per item.
    pub kind: MetricKind,
    /// Compared pairwise (false: shown in the leaderboard only, such as the judge's ceiling).
    pub compared: bool,
}

/// A − B of the means over the paired items, with its paired-bootstrap 95% interval.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Diff {
    /// a_value − b_value.
    pub value: f64,
    /// Lower end of the 95% interval.
    pub ci_low: f64,
    /// Upper end of the 95% interval.
    pub ci_high: f64,
}

/// A − B corrected for the judge's errors (Δp / J, `scorekit compare` on story runs that share a
/// judge calibration); computed by `suites::ifsm_correction::corrected_difference`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CorrectedDifference {
    /// clip₋₁¹(Δp / J); `null` when the judge is uninformative.
    pub value: Option<f64>,
    /// 95% interval; `null` when the judge is uninformative.
    pub ci: Option<[f64; 2]>,
    /// How the interval was made.
    pub method: String,
    /// J's 95% interval stays above 0.
    pub informative: bool,
    /// The judge's J = q0 + q1 − 1 the raw difference was divided by.
    #[serde(rename = "J")]
    pub j: f64,
}

/// One metric compared between two systems on their paired items.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Comparison {
    /// Metric name as in the suite's metrics.json.
    pub metric: String,
    /// System A.
    pub a: String,
    /// System B.
    pub b: String,
    /// A's mean over the paired items (`null` when nothing pairs).
    pub a_value: Option<f64>,
    /// B's mean over the paired items.
    pub b_value: Option<f64>,
    /// A − B with its interval.
    pub diff: Option<Diff>,
    /// Two-sided p-value of `test`.
    pub p_value: f64,
    /// Holm-adjusted over every comparison of the run.
    pub p_holm: Option<f64>,
    /// The test used.
    pub test: String,
    /// Items both systems have.
    pub n_paired: usize,
    /// Paired items where A is right and B wrong (binary), or A higher (continuous).
    pub a_only: u64,
    /// Paired items where B is right and A wrong (binary), or B higher (continuous).
    pub b_only: u64,
    /// Items only A has.
    pub unpaired_a: usize,
    /// Items only B has.
    pub unpaired_b: usize,
}

/// One row of the leaderboard: a system and its value of every metric over all its items.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LeaderRow {
    /// System name.
    pub system: String,
    /// The output folder it came from.
    pub run: String,
    /// One estimate per metric of [`Leaderboard::metrics`] (`None`: no item has the metric).
    pub values: Vec<Option<Estimate>>,
}

/// The leaderboard: metrics as columns, systems as rows (in the order given).
#[derive(Debug, Clone, PartialEq)]
pub struct Leaderboard {
    /// The columns.
    pub metrics: Vec<MetricSpec>,
    /// The rows.
    pub rows: Vec<LeaderRow>,
}

fn value_cell(kind: MetricKind, e: Option<Estimate>) -> Cell {
    match (kind, e) {
        (_, None) => Cell::Missing,
        (MetricKind::Binary, Some(e)) => Cell::RateCi(e),
        (MetricKind::Continuous, Some(e)) => Cell::NumberCi(e, 4),
    }
}

/// The leaderboard as a table: system, then each metric with its interval and n.
pub fn leaderboard_table(suite: &str, board: &Leaderboard) -> DataTable {
    let mut headers = vec!["system".to_string()];
    for m in &board.metrics {
        let unit = match m.kind {
            MetricKind::Binary => " %",
            MetricKind::Continuous => "",
        };
        headers.push(format!("{}{unit}", m.label));
        headers.push(format!("n ({})", m.label));
    }
    let mut t = DataTable::new(
        &format!("{suite}: every system on all of its items (95% bootstrap intervals)"),
        &headers,
    );
    for r in &board.rows {
        let mut row = vec![Cell::Text(r.system.clone())];
        for (m, v) in board.metrics.iter().zip(&r.values) {
            row.push(value_cell(m.kind, *v));
            row.push(v.map_or(Cell::Missing, |e| Cell::Count(e.n as u64)));
        }
        t.push(row);
    }
    t
}

fn p_text(p: f64) -> String {
    if p == 0.0 {
        "0".into()
    } else if p < 1e-4 {
        format!("{p:.2e}")
    } else {
        format!("{p:.4}")
    }
}

/// The pairwise comparisons as a table.
pub fn pairwise_table(
    suite: &str,
    metrics: &[MetricSpec],
    comparisons: &[Comparison],
) -> DataTable {
    let mut t = DataTable::new(
        &format!(
            "{suite}: pairwise comparisons on paired items (diff = A - B, paired-bootstrap 95% interval; p two-sided, Holm over all rows)"
        ),
        &[
            "metric", "A", "B", "value A", "value B", "A - B", "p", "p (Holm)", "test", "paired", "A only",
            "B only", "unpaired A/B",
        ],
    );
    for c in comparisons {
        let kind = metrics
            .iter()
            .find(|m| m.name == c.metric)
            .map_or(MetricKind::Binary, |m| m.kind);
        let value = |v: Option<f64>| match (kind, v) {
            (_, None) => Cell::Missing,
            (MetricKind::Binary, Some(x)) => Cell::Rate(x),
            (MetricKind::Continuous, Some(x)) => Cell::Number(x, 4),
        };
        let diff = c.diff.map(|d| Estimate {
            value: d.value,
            n: c.n_paired,
            ci_low: d.ci_low,
            ci_high: d.ci_high,
        });
        let test = if c.test.starts_with("exact McNemar") {
            "McNemar"
        } else {
            "sign test"
        };
        t.push(vec![
            Cell::Text(c.metric.clone()),
            Cell::Text(c.a.clone()),
            Cell::Text(c.b.clone()),
            value(c.a_value),
            value(c.b_value),
            value_cell(kind, diff),
            Cell::Text(p_text(c.p_value)),
            Cell::Text(c.p_holm.map_or("-".into(), p_text)),
            Cell::Text(test.into()),
            Cell::Count(c.n_paired as u64),
            Cell::Count(c.a_only),
            Cell::Count(c.b_only),
            Cell::Text(format!("{}/{}", c.unpaired_a, c.unpaired_b)),
        ]);
    }
    t
}

/// report.md of a comparison.
pub fn report(
    doc: &MetricsDoc,
    board: &Leaderboard,
    comparisons: &[Comparison],
    resamples: usize,
) -> String {
    let suite = &doc.suite;
    let mut s = format!("# Comparison of {} systems ({suite})\n\n", board.rows.len());
    s.push_str("## Leaderboard\n\n");
    s.push_str(&leaderboard_table(suite, board).markdown());
    s.push_str("\nEach system on all of its own items; intervals: 95% bootstrap. Rates in %.\n\n");
    s.push_str("## Systems\n\n");
    for r in &board.rows {
        s.push_str(&format!("- {}: {}\n", r.system, r.run));
    }
    s.push_str("\n## Pairwise comparisons\n\n");
    s.push_str(&pairwise_table(suite, &board.metrics, comparisons).markdown());
    s.push_str(&format!(
        "\nItems are paired by their ids; A and B are the means over the paired items only, \
         A - B has a paired-bootstrap 95% interval ({resamples} resamples). Binary metrics: \
         exact McNemar test on the discordant pairs (A only: right for A and wrong for B). \
         Continuous metrics: exact sign test (A only: A higher). p (Holm): adjusted over all {} \
         comparisons. Unpaired: items only one system has, left out of the comparison.\n",
        comparisons.len()
    ));
    s
}

/// tables.tex of a comparison: the leaderboard and the pairwise table.
pub fn tables_tex(suite: &str, board: &Leaderboard, comparisons: &[Comparison]) -> String {
    let lead = leaderboard_table(suite, board);
    let pair = pairwise_table(suite, &board.metrics, comparisons);
    latex_document("scorekit compare", &[&lead, &pair])
}

/// leaderboard.svg: every system's rates (the binary metrics, such as IFSM beside the judge's
/// ceiling or TS / FoT / O) with their 95% intervals, one band per system.
pub fn leaderboard_chart(suite: &str, board: &Leaderboard) -> String {
    let rates: Vec<usize> = board
        .metrics
        .iter()
        .enumerate()
        .filter(|(_, m)| m.kind == MetricKind::Binary)
        .map(|(i, _)| i)
        .collect();
    let series: Vec<&str> = rates.iter().map(|&i| board.metrics[i].label).collect();
    let rows: Vec<ChartRow> = board
        .rows
        .iter()
        .map(|r| ChartRow {
            name: r.system.clone(),
            values: rates.iter().map(|&i| r.values[i]).collect(),
            reference: None,
        })
        .collect();
    interval_chart(
        &format!("{suite}: systems compared (%)"),
        &series,
        &rows,
        "",
    )
}
