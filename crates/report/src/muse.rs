//! MuSE: the typed summary of a run (headline and group metrics, the failing queries, the task
//! names matched by embeddings) and its markdown writers (the stdout table and report.md).
//! `suites::muse` computes these from items and re-exports them.

use super::svg::{interval_chart, ChartRow};
use super::table::{Cell, DataTable};
use super::{percent, Estimate, Table};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// Headline metrics and per-group metrics, ready for metrics.json.
#[derive(Debug, Clone, PartialEq)]
pub struct Summary {
    /// TS, FoT, O with intervals, and counts.
    pub metrics: Map<String, Value>,
    /// `tasks:N`, `domain:D`, `modality:I->O`, `flow_confidence:C` -> {TS, FoT, O}.
    pub groups: Map<String, Value>,
}

/// One query that is not fully right, as report.md lists it.
#[derive(Debug, Clone, PartialEq)]
pub struct QueryRow {
    /// The query's idx.
    pub idx: i64,
    /// Task Selection.
    pub ts: bool,
    /// Flow of Thought.
    pub fot: bool,
    /// Final Output (`None`: not decided).
    pub o: Option<bool>,
    /// The query has no plan.
    pub missing_plan: bool,
    /// Why the planner's response is not a plan.
    pub plan_error: Option<String>,
    /// Gold tasks the plan lacks.
    pub missing_tasks: Vec<String>,
    /// Predicted tasks not in the gold set.
    pub extra_tasks: Vec<String>,
    /// Names neither MuSE's nor aliases.
    pub unknown_names: Vec<String>,
    /// Violated gold dependencies: (producer, consumer, `missing` or `reversed`).
    pub violated: Vec<(String, String, String)>,
}

/// Where a match is accepted.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Thresholds {
    /// The best task's similarity must be at least this.
    pub min_similarity: f64,
    /// ... and exceed the runner-up task's by at least this.
    pub margin: f64,
}

/// How one unknown name was matched.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NameMatch {
    /// The name as normalised for the alias table (lower case, `-` for `_` and spaces).
    pub name: String,
    /// The text that was embedded.
    pub text: String,
    /// The accepted MuSE task; `None` when below the similarity or the margin (stays unknown).
    pub task: Option<String>,
    /// The most similar task.
    pub best: String,
    /// Its cosine similarity (rounded to 4 decimals; decisions use the rounded values).
    pub similarity: f64,
    /// The second most similar task.
    pub runner_up: String,
    /// Its similarity.
    pub runner_up_similarity: f64,
}

/// One distinct name over all items, with the queries that use it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct NameUse {
    /// The match.
    #[serde(flatten)]
    pub matched: NameMatch,
    /// Query indices whose plan uses the name.
    pub queries: Vec<i64>,
}

fn cell(v: Option<&Value>) -> String {
    match v.and_then(|e| serde_json::from_value::<Estimate>(e.clone()).ok()) {
        Some(e) if e.ci_low != e.ci_high => {
            format!(
                "{} [{}, {}]",
                percent(e.value),
                percent(e.ci_low),
                percent(e.ci_high)
            )
        }
        Some(e) => percent(e.value),
        None => "n/a".into(),
    }
}

/// The human table: headline rows then every group.
pub fn table(s: &Summary) -> Table {
    let mut t = Table::new(&["group", "n", "TS %", "FoT %", "O %"]);
    let mut row = |name: &str, m: &Map<String, Value>| {
        let n = m.get("n").map(Value::to_string).unwrap_or_default();
        t.row(&[
            name.to_string(),
            n,
            cell(m.get("TS")),
            cell(m.get("FoT")),
            cell(m.get("O")),
        ]);
    };
    row("all", &s.metrics);
    for (k, v) in &s.groups {
        if let Value::Object(m) = v {
            row(k, m);
        }
    }
    t
}

/// report.md: the table, the counts, the definitions in one paragraph, and the failing queries.
pub fn report(s: &Summary, failing: &[QueryRow]) -> String {
    let m = &s.metrics;
    let g = |k: &str| m.get(k).map(Value::to_string).unwrap_or_default();
    let mut out = String::from("# MuSE plan scores\n\n");
    out.push_str(&table(s).render());
    out.push_str(&format!(
        "\nFoT over multi-task queries: {}; without low-confidence flows: {}.\n\n",
        cell(m.get("FoT_multi_task")),
        cell(m.get("FoT_without_low_confidence_flow"))
    ));
    out.push_str(&format!(
        "Queries without a plan (scored 0): {}. Plans that could not be read (planner errors, scored 0): {}. With unknown task names: {}. Over-selected (all gold tasks plus extras): {}. O without TS: {}. output_type corrected from the gold tasks: {}. O source: {}. Plan formats: {}.\n\n",
        g("n_missing_plans"), g("n_plan_errors"), g("n_with_unknown_names"), g("n_over_selected"), g("n_O_without_TS"),
        g("n_output_type_corrected"), g("O_source"), g("plan_formats")
    ));
    out.push_str(
        "TS = predicted task set equals the gold set after name mapping (unknown names count as extra). \
FoT = TS and every gold dependency holds, directly or transitively (one-task queries: FoT = TS). \
O = every gold task predicted and the final output has the requested modality, unless verdicts were given. \
Gold dependencies are scorekit's reviewed annotation, not upstream gold. See docs/muse.md.\n\n",
    );
    let mut t = Table::new(&[
        "idx", "TS", "FoT", "O", "missing", "extra", "unknown", "violated",
    ]);
    for i in failing {
        let b = |x: bool| if x { "1" } else { "0" };
        let viol: Vec<String> = i
            .violated
            .iter()
            .map(|(from, to, kind)| format!("{from}->{to} ({kind})"))
            .collect();
        t.row(&[
            i.idx.to_string(),
            b(i.ts).into(),
            b(i.fot).into(),
            i.o.map_or("n/a", b).into(),
            if i.missing_plan {
                "(no plan)".into()
            } else if let Some(e) = &i.plan_error {
                format!("(plan error: {e})")
            } else {
                i.missing_tasks.join(", ")
            },
            i.extra_tasks.join(", "),
            i.unknown_names.join(", "),
            viol.join("; "),
        ]);
    }
    if !failing.is_empty() {
        out.push_str("## Queries not fully right\n\n");
        out.push_str(&t.render());
    }
    out
}

/// report.md section listing every match, accepted first.
pub fn matches_report(
    matched: &[NameUse],
    unmatched: &[NameUse],
    th: Option<Thresholds>,
) -> String {
    let mut r = String::from("\n## Task names matched by embeddings (`--embedder`)\n\n");
    r.push_str(
        "Names that are neither MuSE names nor aliases were compared with descriptions of the 18 \
         tasks (`data/muse/task_descriptions.json`). An accepted match counts as that task in TS, \
         FoT and O. **Check each one**; `suggested_aliases.json` holds the accepted ones in the \
         `--aliases` format.\n",
    );
    if let Some(th) = th {
        r.push_str(&format!(
            "\nMinimum similarity {}, margin {}.\n",
            th.min_similarity, th.margin
        ));
    }
    if matched.is_empty() && unmatched.is_empty() {
        r.push_str("\nEvery task name was known; the embedder matched nothing.\n");
        return r;
    }
    let mut t = Table::new(&[
        "Name",
        "Matched to",
        "Best (sim)",
        "Runner-up (sim)",
        "Queries",
    ]);
    for u in matched.iter().chain(unmatched) {
        let m = &u.matched;
        let q: Vec<String> = u.queries.iter().map(|i| i.to_string()).collect();
        t.row(&[
            m.name.clone(),
            m.task
                .clone()
                .unwrap_or_else(|| "(unknown: below threshold)".into()),
            format!("{} ({:.4})", m.best, m.similarity),
            format!("{} ({:.4})", m.runner_up, m.runner_up_similarity),
            q.join(", "),
        ]);
    }
    r.push('\n');
    r.push_str(&t.render());
    r
}

fn estimate(v: Option<&Value>) -> Option<Estimate> {
    v.and_then(|e| serde_json::from_value::<Estimate>(e.clone()).ok())
}

/// The main table as the shared table model (tables.tex, table.csv): the headline row, then
/// every group, with n and TS / FoT / O.
pub fn main_table(s: &Summary) -> DataTable {
    let mut t = DataTable::new(
        "MuSE: Task Selection, Flow of Thought, Final Output (%, 95% bootstrap intervals)",
        &["group", "n", "TS", "FoT", "O"],
    );
    let mut row = |name: &str, m: &Map<String, Value>| {
        let n = m.get("n").and_then(Value::as_u64);
        t.push(vec![
            Cell::Text(name.to_string()),
            n.map_or(Cell::Missing, Cell::Count),
            Cell::rate_ci(estimate(m.get("TS"))),
            Cell::rate_ci(estimate(m.get("FoT"))),
            Cell::rate_ci(estimate(m.get("O"))),
        ]);
    };
    row("all", &s.metrics);
    for (k, v) in &s.groups {
        if let Value::Object(m) = v {
            row(k, m);
        }
    }
    t
}

/// scores.svg: TS, FoT and O with their intervals, over all queries and per number of gold
/// tasks (the `tasks:N` groups).
pub fn scores_chart(s: &Summary) -> String {
    let of = |m: &Map<String, Value>| -> Vec<Option<Estimate>> {
        ["TS", "FoT", "O"]
            .iter()
            .map(|k| estimate(m.get(*k)))
            .collect()
    };
    let mut rows = vec![ChartRow {
        name: "all queries".into(),
        values: of(&s.metrics),
        reference: None,
    }];
    for (k, v) in &s.groups {
        if let (Some(n), Value::Object(m)) = (k.strip_prefix("tasks:"), v) {
            rows.push(ChartRow {
                name: format!("{n}-task queries"),
                values: of(m),
                reference: None,
            });
        }
    }
    interval_chart(
        "MuSE: TS / FoT / O by number of tasks (%)",
        &["TS", "FoT", "O"],
        &rows,
        "",
    )
}
