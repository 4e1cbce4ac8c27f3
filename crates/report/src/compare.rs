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

/// A − B of the prediction-powered IFSM (human labels of both systems' endings).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PpiDifference {
    /// `paired`: PPI++ on the per-question differences (both labelled on the same questions);
    /// `unpaired`: the difference of the two estimates with the sum of their variances.
    pub method: String,
    /// A − B.
    pub value: f64,
    /// 95% interval.
    pub ci: [f64; 2],
    /// The power-tuning weight (paired only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lambda: Option<f64>,
    /// Questions labelled for both (paired only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub n_labeled: Option<usize>,
    /// Paired questions without both labels (paired only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub n_unlabeled: Option<usize>,
}

/// A − B of the two systems' headline IFSM, when both headlines use one method.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HeadlineDifference {
    /// `ppi`, `labels`, `dataset` or `raw` (docs/story.md).
    pub method: String,
    /// A − B (`null` where that method gives none, such as an uninformative judge).
    pub value: Option<f64>,
    /// 95% interval.
    pub ci: Option<[f64; 2]>,
}

/// A system's headline IFSM (story runs), for the ranking.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HeadlineRow {
    /// The system.
    pub system: String,
    /// `ppi`, `labels`, `dataset` or `raw`.
    pub method: String,
    /// The estimate.
    pub value: f64,
    /// Its 95% interval.
    pub ci: Option<[f64; 2]>,
}

/// report.md's headline section: the systems by their headline IFSM, ranked when `ranked`
/// (every headline uses one method), else as given with the reason. Empty without rows.
pub fn headline_section(rows: &[HeadlineRow], ranked: bool) -> String {
    if rows.is_empty() {
        return String::new();
    }
    let mut t = super::Table::new(&["rank", "system", "headline IFSM %", "method"]);
    for (i, r) in rows.iter().enumerate() {
        let value = match r.ci {
            Some([lo, hi]) => format!(
                "{} [{}, {}]",
                super::percent(r.value),
                super::percent(lo),
                super::percent(hi)
            ),
            None => super::percent(r.value),
        };
        let rank = if ranked {
            (i + 1).to_string()
        } else {
            "-".into()
        };
        t.row(&[rank, r.system.clone(), value, r.method.clone()]);
    }
    let mut s = String::from("## Headline IFSM\n\n");
    s.push_str(&t.render());
    if ranked {
        s.push_str(&format!(
            "\nRanked by the estimate each run reports first, all by one method (`{}`; \
             docs/story.md, \"Three estimates\"); the pairwise tests of these values are in \
             \"Judge-corrected IFSM differences\" (headline rows).\n\n",
            rows[0].method
        ));
    } else {
        s.push_str(
            "\nNot ranked: the systems' headlines use different methods, whose values answer \
             different questions (docs/story.md, \"Three estimates\"); compare them on a method \
             they share.\n\n",
        );
    }
    s
}

/// The corrected differences of one IFSM comparison, one per calibration frame the two systems
/// share (a frame they do not share is absent).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CorrectedDifferences {
    /// Under the calibration built from the dataset's options.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dataset: Option<CorrectedDifference>,
    /// Under the calibration of the human labels.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub human: Option<CorrectedDifference>,
    /// Prediction-powered, when both systems have human labels.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ppi: Option<PpiDifference>,
    /// On the headline, when both systems' headlines share a method.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub headline: Option<HeadlineDifference>,
}

impl CorrectedDifferences {
    /// The present frames with their names, as metrics.json names them.
    pub fn frames(&self) -> impl Iterator<Item = (&'static str, &CorrectedDifference)> {
        [("dataset", &self.dataset), ("human", &self.human)]
            .into_iter()
            .filter_map(|(name, d)| d.as_ref().map(|d| (name, d)))
    }
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
    /// Story IFSM only: A − B corrected for the judge's errors, where the two systems share a
    /// judge calibration (absent otherwise, so other outputs keep their bytes).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub corrected: Option<CorrectedDifferences>,
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
    corrected_notes: &[String],
    headlines: (&[HeadlineRow], bool),
) -> String {
    let suite = &doc.suite;
    let mut s = format!("# Comparison of {} systems ({suite})\n\n", board.rows.len());
    s.push_str("## Leaderboard\n\n");
    s.push_str(&leaderboard_table(suite, board).markdown());
    s.push_str("\nEach system on all of its own items; intervals: 95% bootstrap. Rates in %.\n\n");
    s.push_str(&headline_section(headlines.0, headlines.1));
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
    s.push_str(&corrected_section(suite, comparisons, corrected_notes));
    s
}

/// The judge-corrected IFSM differences as a table (`None` when no pair has one).
pub fn corrected_table(suite: &str, comparisons: &[Comparison]) -> Option<DataTable> {
    let mut t = DataTable::new(
        &format!(
            "{suite}: judge-corrected IFSM differences (A - B divided by the judge's J = q0 + q1 - 1, 95% delta-method interval)"
        ),
        &["A", "B", "calibration", "A - B raw %", "J", "A - B corrected %"],
    );
    for c in comparisons {
        let Some(corrected) = &c.corrected else {
            continue;
        };
        for (frame, d) in corrected.frames() {
            let value = match (d.value, d.ci) {
                (Some(v), Some([lo, hi])) => Cell::RateCi(Estimate {
                    value: v,
                    n: c.n_paired,
                    ci_low: lo,
                    ci_high: hi,
                }),
                (Some(v), None) => Cell::Rate(v),
                (None, _) => Cell::Text("uninformative judge".into()),
            };
            t.push(vec![
                Cell::Text(c.a.clone()),
                Cell::Text(c.b.clone()),
                Cell::Text(frame.into()),
                Cell::rate(c.diff.map(|d| d.value)),
                Cell::Number(d.j, 3),
                value,
            ]);
        }
        let interval = |v: f64, [lo, hi]: [f64; 2]| {
            Cell::RateCi(Estimate {
                value: v,
                n: c.n_paired,
                ci_low: lo,
                ci_high: hi,
            })
        };
        // A row without a J: the PPI difference and the headline's.
        let row = |what: String, value: Cell| {
            vec![
                Cell::Text(c.a.clone()),
                Cell::Text(c.b.clone()),
                Cell::Text(what),
                Cell::rate(c.diff.map(|d| d.value)),
                Cell::Missing,
                value,
            ]
        };
        if let Some(p) = &corrected.ppi {
            t.push(row(
                format!("PPI++ ({})", p.method),
                interval(p.value, p.ci),
            ));
        }
        if let Some(h) = &corrected.headline {
            let value = match (h.value, h.ci) {
                (Some(v), Some(ci)) => interval(v, ci),
                (Some(v), None) => Cell::Rate(v),
                (None, _) => Cell::Text("none".into()),
            };
            t.push(row(format!("headline ({})", h.method), value));
        }
    }
    (!t.rows.is_empty()).then_some(t)
}

/// report.md's section on the corrected differences: the table where a pair has one, and one
/// line per reason a pair has none. Empty when the runs carry no calibration at all.
fn corrected_section(suite: &str, comparisons: &[Comparison], notes: &[String]) -> String {
    let table = corrected_table(suite, comparisons);
    if table.is_none() && notes.is_empty() {
        return String::new();
    }
    let mut s = String::from("\n## Judge-corrected IFSM differences\n\n");
    if let Some(t) = table {
        s.push_str(&t.markdown());
        s.push_str(
            "\nThe raw IFSM difference counts the judge's picks; under the judge model both \
             systems' pick rates are (1 - q0) + J x their follow rate, so A - B of the follow \
             rates is the raw difference divided by J (q0 cancels). Interval: delta method over \
             the paired items (Agresti-Min) and the calibration (Lee et al.'s smoothed J); only \
             judged endings are corrected (an empty ending is known not to follow). \
             Uninformative judge: J's 95% interval reaches 0, and no value is given. PPI++ \
             (paired): prediction-powered on the per-question differences, from human labels of \
             both systems on the same questions; (unpaired): the two PPI++ estimates' difference \
             with the sum of their variances. Headline: the difference of the estimate each run \
             reports first (docs/story.md), when both use the same method.\n",
        );
    }
    for n in notes {
        s.push_str(&format!("\n{n}\n"));
    }
    s
}

/// tables.tex of a comparison: the leaderboard and the pairwise table.
pub fn tables_tex(suite: &str, board: &Leaderboard, comparisons: &[Comparison]) -> String {
    let lead = leaderboard_table(suite, board);
    let pair = pairwise_table(suite, &board.metrics, comparisons);
    match corrected_table(suite, comparisons) {
        Some(corrected) => latex_document("scorekit compare", &[&lead, &pair, &corrected]),
        None => latex_document("scorekit compare", &[&lead, &pair]),
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    fn comparison(metric: &str, corrected: Option<CorrectedDifferences>) -> Comparison {
        Comparison {
            metric: metric.into(),
            a: "A".into(),
            b: "B".into(),
            a_value: Some(0.5),
            b_value: Some(0.4),
            diff: Some(Diff {
                value: 0.1,
                ci_low: 0.0,
                ci_high: 0.2,
            }),
            p_value: 0.05,
            p_holm: Some(0.1),
            test: "exact McNemar".into(),
            n_paired: 60,
            a_only: 12,
            b_only: 6,
            unpaired_a: 0,
            unpaired_b: 0,
            corrected,
        }
    }

    fn corrected(value: Option<f64>) -> CorrectedDifference {
        CorrectedDifference {
            value,
            ci: value.map(|v| [v - 0.1, v + 0.1]),
            method: "delta".into(),
            informative: value.is_some(),
            j: 0.6,
        }
    }

    fn board() -> Leaderboard {
        Leaderboard {
            metrics: vec![MetricSpec {
                name: "ifsm",
                label: "IFSM",
                kind: MetricKind::Binary,
                compared: true,
            }],
            rows: Vec::new(),
        }
    }

    #[test]
    fn without_calibration_nothing_corrected_is_rendered_or_serialised() {
        let c = [comparison("ifsm", None)];
        let md = report(
            &MetricsDoc::new("story"),
            &board(),
            &c,
            100,
            &[],
            (&[], false),
        );
        assert!(!md.contains("Judge-corrected"));
        assert!(corrected_table("story", &c).is_none());
        assert!(!serde_json::to_string(&c[0]).unwrap().contains("corrected"));
        assert!(!tables_tex("story", &board(), &c).contains("judge-corrected"));
    }

    #[test]
    fn corrected_rows_show_each_shared_frame_and_notes_say_why_not() {
        let c = [comparison(
            "ifsm",
            Some(CorrectedDifferences {
                dataset: Some(corrected(Some(1.0 / 6.0))),
                human: Some(corrected(None)),
                ppi: Some(PpiDifference {
                    method: "paired".into(),
                    value: 0.12,
                    ci: [0.02, 0.22],
                    lambda: Some(0.5),
                    n_labeled: Some(40),
                    n_unlabeled: Some(60),
                }),
                headline: Some(HeadlineDifference {
                    method: "ppi".into(),
                    value: Some(0.12),
                    ci: Some([0.02, 0.22]),
                }),
            }),
        )];
        let md = report(
            &MetricsDoc::new("story"),
            &board(),
            &c,
            100,
            &[],
            (&[], false),
        );
        assert!(md.contains("## Judge-corrected IFSM differences"), "{md}");
        // The table pads its columns; compare with single spaces.
        let flat = md.split_whitespace().collect::<Vec<_>>().join(" ");
        for row in [
            "| A | B | dataset | 10.0 | 0.600 | 16.7 [6.7, 26.7] |",
            "| A | B | human | 10.0 | 0.600 | uninformative judge |",
            "| A | B | PPI++ (paired) | 10.0 | - | 12.0 [2.0, 22.0] |",
            "| A | B | headline (ppi) | 10.0 | - | 12.0 [2.0, 22.0] |",
        ] {
            assert!(flat.contains(row), "{md}");
        }
        assert!(tables_tex("story", &board(), &c).contains("judge-corrected"));

        let note = "No judge-corrected IFSM difference between runs r1 and r2: why.".to_string();
        let plain = [comparison("ifsm", None)];
        let md = report(
            &MetricsDoc::new("story"),
            &board(),
            &plain,
            100,
            std::slice::from_ref(&note),
            (&[], false),
        );
        assert!(md.ends_with(&format!("\n{note}\n")), "{md}");
    }
}

#[cfg(test)]
mod headline_tests {
    use super::*;

    #[test]
    fn the_headline_section_ranks_one_method_and_says_why_not_for_several() {
        let row = |system: &str, method: &str, value: f64| HeadlineRow {
            system: system.into(),
            method: method.into(),
            value,
            ci: Some([value - 0.05, value + 0.05]),
        };
        let ranked = headline_section(&[row("B", "ppi", 0.6), row("A", "ppi", 0.3)], true);
        let flat = ranked.split_whitespace().collect::<Vec<_>>().join(" ");
        assert!(
            flat.contains("| 1 | B | 60.0 [55.0, 65.0] | ppi |"),
            "{ranked}"
        );
        assert!(flat.contains("Ranked by the estimate"), "{ranked}");
        let mixed = headline_section(&[row("A", "ppi", 0.3), row("B", "raw", 0.6)], false);
        assert!(
            mixed.contains("Not ranked") && mixed.contains("| -"),
            "{mixed}"
        );
        assert!(headline_section(&[], false).is_empty());
    }
}
