//! MINT: the typed summary of a run's tables ([`Tables`]) and its writers: tables.md (the
//! paper's tables laid out as markdown), sr.csv, and the `--recheck` section and recheck.csv. tables.tex is in [`super::latex`],
//! sr_curves.svg in [`super::svg`].

use super::table::{Cell, DataTable};
use super::Table;
use std::collections::BTreeMap;

/// Column order of the paper's tables.
pub const TYPES: [&str; 4] = ["reasoning", "decision_making", "code_generation", "micro"];

/// Display names of [`TYPES`].
pub const TYPE_NAMES: [&str; 4] = ["Reasoning", "Decision-Making", "Code Generation", "Micro"];

/// Counts over a set of trajectories.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Stat {
    /// Trajectories.
    pub n: usize,
    /// Successes.
    pub success: usize,
    /// Sum of invalid actions.
    pub invalid: u64,
    /// Sum of turns.
    pub turns: u64,
    /// Trajectories with `\_`.
    pub underscore: usize,
    /// Trajectories with `[PYTHON]`.
    pub python: usize,
}

impl Stat {
    /// Success rate as a fraction.
    pub fn rate(&self) -> f64 {
        ratio(self.success as f64, self.n)
    }
}

fn ratio(x: f64, n: usize) -> f64 {
    if n == 0 {
        0.0
    } else {
        x / n as f64
    }
}

/// Round to 2 decimals.
pub fn round2(x: f64) -> f64 {
    (x * 100.0).round() / 100.0
}

/// One row of Table 2.
#[derive(Debug, Clone, PartialEq)]
pub struct Table2Row {
    /// The agent.
    pub agent: String,
    /// SR_1..SR_5 micro, percent rounded to 2 decimals (`None` where that run is absent).
    pub sr: [Option<f64>; 5],
    /// OLS slope of SR_k on k (needs two k).
    pub slope: Option<f64>,
    /// R² of that fit (needs two k and some variation).
    pub r2: Option<f64>,
}

/// One comparison of Table 3: an agent at k = 5 without and with feedback.
#[derive(Debug, Clone, PartialEq)]
pub struct Table3Row {
    /// The agent.
    pub agent: String,
    /// Feedback model.
    pub feedback_model: String,
    /// Feedback setting.
    pub feedback_setting: String,
    /// SR_5 without feedback per [`TYPES`] (percent, 2 decimals).
    pub without: [f64; 4],
    /// SR_5 with feedback.
    pub with: [f64; 4],
}

impl Table3Row {
    /// Δfeedback per [`TYPES`], from the rounded values.
    pub fn delta(&self) -> [f64; 4] {
        std::array::from_fn(|i| round2(self.with[i] - self.without[i]))
    }
}

/// Everything the MINT writers render, computed from the items by
/// `suites::mint::tables::summary`: the paper's tables, per-configuration counts and what is
/// incomplete.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Tables {
    /// Table 2, one row per agent.
    pub table2: Vec<Table2Row>,
    /// Table 3, one row per feedback comparison.
    pub table3: Vec<Table3Row>,
    /// Complete k = 5 no-feedback configurations (rows of the artefact tables).
    pub k5: Vec<ConfigTable>,
    /// Complete configurations, in configuration order.
    pub complete: Vec<ConfigTable>,
    /// Every task, in the column order of the per-task table.
    pub tasks: Vec<String>,
    /// Incomplete configurations: label and what is missing.
    pub incomplete: Vec<(String, Vec<String>)>,
}

/// One configuration's counts.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ConfigTable {
    /// The configuration's path fragment.
    pub label: String,
    /// The agent.
    pub agent: String,
    /// Feedback model (`None` without feedback).
    pub feedback_model: String,
    /// Feedback setting.
    pub feedback_setting: String,
    /// Turn budget k.
    pub k: u32,
    /// By task type, plus `micro` over all instances.
    pub by_type: BTreeMap<String, Stat>,
    /// By task.
    pub by_task: BTreeMap<String, Stat>,
}

/// sr.csv: one row per complete configuration and task type.
pub fn sr_csv(tables: &Tables) -> String {
    let mut out =
        String::from("agent,feedback_model,feedback_setting,k,task_type,n,success_rate\n");
    for c in &tables.complete {
        for t in TYPES {
            if let Some(s) = c.by_type.get(t) {
                out.push_str(&format!(
                    "{},{},{},{},{},{},{}\n",
                    csv_field(&c.agent),
                    csv_field(&c.feedback_model),
                    csv_field(&c.feedback_setting),
                    c.k,
                    t,
                    s.n,
                    s.rate()
                ));
            }
        }
    }
    out
}

fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

pub(super) fn opt(v: Option<f64>, f: impl Fn(f64) -> String) -> String {
    v.map_or_else(|| "n/a".to_string(), f)
}

/// Invalid-action cell: mean invalid actions / mean turns, and whether it is bold (> 20 %).
pub fn invalid_cell(s: &Stat) -> (String, bool) {
    let inv = ratio(s.invalid as f64, s.n);
    let turns = ratio(s.turns as f64, s.n);
    (format!("{inv:.2} / {turns:.2}"), inv / (turns + 1e-6) > 0.2)
}

/// Share (percent) of trajectories with an artefact, and whether it is bold (≥ 2 %).
pub(super) fn artefact_cell(count: usize, n: usize) -> (String, bool) {
    let pct = round2(ratio(count as f64 * 100.0, n));
    (format!("{pct:.2}"), pct >= 2.0)
}

pub(super) fn signed(x: f64) -> String {
    format!("{x:+.1}")
}

/// Table 2 (SR_1..SR_5 micro, Δtools, R²), for tables.md and tables.tex.
pub fn table2(tables: &Tables) -> DataTable {
    let mut t = DataTable::new(
        "Table 2: SR_k (micro, %) and Delta tools",
        &["Model", "k=1", "k=2", "k=3", "k=4", "k=5", "Δtools", "R²"],
    );
    t.latex_headers = Some(
        [
            "Model",
            "$k=1$",
            "$k=2$",
            "$k=3$",
            "$k=4$",
            "$k=5$",
            "$\\Delta_{\\text{tools}}$",
            "$R^2$",
        ]
        .map(String::from)
        .to_vec(),
    );
    for r in &tables.table2 {
        let mut cells = vec![Cell::Text(r.agent.clone())];
        cells.extend(
            r.sr.iter()
                .map(|v| Cell::Text(opt(*v, |x| format!("{x:.1}")))),
        );
        cells.push(Cell::Text(opt(r.slope, signed)));
        cells.push(Cell::Text(opt(r.r2, |x| format!("{x:.2}"))));
        t.push(cells);
    }
    t
}

/// Table 3 (SR_5 without and with feedback, Δfeedback), for tables.md and tables.tex.
pub fn table3(tables: &Tables) -> DataTable {
    let mut hdr = vec!["Model", "Feedback"];
    hdr.extend(TYPE_NAMES);
    let mut t = DataTable::new(
        "Table 3: SR_5 (%) without and with feedback, Delta feedback",
        &hdr,
    );
    t.left = 2;
    for r in &tables.table3 {
        let label = format!("{} ({})", r.feedback_model, r.feedback_setting);
        let row = |name: Cell, v: [f64; 4], f: &dyn Fn(f64) -> String| {
            let mut cells = vec![Cell::Text(r.agent.clone()), name];
            cells.extend(v.iter().map(|x| Cell::Text(f(*x))));
            cells
        };
        let one = |x: f64| format!("{x:.1}");
        t.push(row(Cell::Text("no feedback".into()), r.without, &one));
        t.push(row(Cell::Text(format!("w/ {label}")), r.with, &one));
        let delta = Cell::Tex {
            text: "Δfeedback".into(),
            tex: "$\\Delta_{\\text{feedback}}$".into(),
        };
        t.push(row(delta, r.delta(), &signed));
    }
    t
}

/// A table of the k = 5, no-feedback configurations by task type: `pick` 0 invalid actions /
/// turns (bold > 20 %), 1 escaped underscores, 2 `[PYTHON]` tags (% of instances, bold ≥ 2 %).
pub fn k5_table(tables: &Tables, pick: usize) -> DataTable {
    let caption = [
        "Invalid actions / turns (k = 5, no feedback)",
        "Escaped underscore (%, k = 5, no feedback)",
        "[PYTHON] tag (%, k = 5, no feedback)",
    ][pick.min(2)];
    let mut hdr = vec!["Model"];
    hdr.extend(TYPE_NAMES);
    let mut t = DataTable::new(caption, &hdr);
    for c in &tables.k5 {
        let mut cells = vec![Cell::Text(c.agent.clone())];
        cells.extend(TYPES.iter().map(|ty| {
            c.by_type.get(*ty).map_or(Cell::Text("n/a".into()), |s| {
                let (text, bold) = match pick {
                    0 => invalid_cell(s),
                    1 => artefact_cell(s.underscore, s.n),
                    _ => artefact_cell(s.python, s.n),
                };
                Cell::Styled { text, bold }
            })
        }));
        t.push(cells);
    }
    t
}

/// tables.md: every table, laid out like the paper's, plus per-task SR and incomplete configs.
pub fn markdown(tables: &Tables) -> String {
    let mut out = String::from("# MINT tables\n\n");
    out.push_str("## Table 2: success rate SR_k (micro, %) and Δtools\n\n");
    out.push_str(&table2(tables).markdown());
    out.push_str(
        "\nΔtools: OLS slope of SR_k on k over the k present; n/a with fewer than two k.\n\n",
    );

    out.push_str("## Table 3: SR_5 (%) without and with language feedback, Δfeedback\n\n");
    out.push_str(&table3(tables).markdown());

    out.push_str("\n## Invalid actions / turns per instance (k = 5, no feedback)\n\n");
    out.push_str(&k5_table(tables, 0).markdown());
    out.push_str("\nBold: invalid actions exceed 20 % of turns.\n");

    for (title, pick) in [
        (
            "Escaped underscore `\\_` (% of instances, k = 5, no feedback)",
            1,
        ),
        ("`[PYTHON]` tag (% of instances, k = 5, no feedback)", 2),
    ] {
        out.push_str(&format!("\n## {title}\n\n"));
        out.push_str(&k5_table(tables, pick).markdown());
        out.push_str("\nBold: at least 2 %.\n");
    }

    out.push_str("\n## SR per task (%, complete configurations)\n\n");
    let mut hdr = vec!["Configuration"];
    hdr.extend(tables.tasks.iter().map(String::as_str));
    let mut t = Table::new(&hdr);
    for c in &tables.complete {
        let mut cells = vec![c.label.clone()];
        cells.extend(tables.tasks.iter().map(|k| {
            c.by_task
                .get(k)
                .map_or("n/a".into(), |s| format!("{:.2}", round2(s.rate() * 100.0)))
        }));
        t.row(&cells);
    }
    out.push_str(&t.render());

    out.push_str("\n## Incomplete configurations (left out of every table above)\n\n");
    if tables.incomplete.is_empty() {
        out.push_str("None.\n");
    }
    for (label, missing) in &tables.incomplete {
        out.push_str(&format!("- {label}: {}\n", missing.join("; ")));
    }
    out
}

/// Re-check counts of one task (`scorekit mint --recheck`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RecheckTask {
    /// The task.
    pub task: String,
    /// Instances re-checked.
    pub checked: usize,
    /// Re-checked verdicts that differ from the stored flag.
    pub differ: usize,
    /// Stored false, re-checked true.
    pub gained: usize,
    /// Stored true, re-checked false.
    pub lost: usize,
    /// Instances with no verdict (a note says why).
    pub unchecked: usize,
}

/// One differing or unverifiable instance: a line of recheck.csv.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RecheckRow {
    /// Configuration label.
    pub config: String,
    /// The task.
    pub task: String,
    /// The instance id.
    pub task_id: String,
    /// results.jsonl it came from.
    pub file: String,
    /// Its line.
    pub line: usize,
    /// The stored success flag.
    pub stored: bool,
    /// The re-checked verdict, if any.
    pub rechecked: Option<bool>,
    /// Why there is no verdict, or empty.
    pub note: String,
}

/// report.md section of `--recheck`: the tolerance used, and per task re-checked and differing
/// counts.
pub fn recheck_markdown(
    tasks: &[RecheckTask],
    tolerance: Option<(&str, &str)>,
    any_rows: bool,
) -> String {
    let mut md = String::from("## Re-check against the stored success flags\n\n");
    if let Some((name, rule)) = tolerance {
        md.push_str(&format!(
            "Numeric answers re-checked with tolerance `{name}`: {rule}.\n\n"
        ));
    }
    let differ: usize = tasks.iter().map(|t| t.differ).sum();
    md.push_str(&format!(
        "{differ} re-checked verdict(s) differ from the stored flags; per task:\n\n"
    ));
    let mut table = Table::new(&[
        "task",
        "re-checked",
        "differ",
        "stored false → true",
        "stored true → false",
        "no verdict",
    ]);
    for t in tasks {
        table.row(&[
            t.task.clone(),
            t.checked.to_string(),
            t.differ.to_string(),
            t.gained.to_string(),
            t.lost.to_string(),
            t.unchecked.to_string(),
        ]);
    }
    md.push_str(&table.render());
    if any_rows {
        md.push_str("\nDiffering or unverifiable instances: see recheck.csv.\n");
    }
    md
}

/// recheck.csv: every differing or unverifiable instance.
pub fn recheck_csv(rows: &[RecheckRow]) -> String {
    let mut csv = String::from("config,task,task_id,file,line,stored,rechecked,note\n");
    for r in rows {
        csv.push_str(&format!(
            "{},{},{},{},{},{},{},{}\n",
            csv_field(&r.config),
            r.task,
            csv_field(&r.task_id),
            csv_field(&r.file),
            r.line,
            r.stored,
            r.rechecked.map_or("".into(), |b| b.to_string()),
            csv_field(&r.note)
        ));
    }
    csv
}

/// report.md section naming the files under `--outputs` that were not read: (path, why it does
/// not fit the layout) and other files. Empty when there are none.
pub fn files_not_used(skipped: &[(&str, &str)], stray: &[&str]) -> String {
    let mut out = String::new();
    if skipped.is_empty() && stray.is_empty() {
        return out;
    }
    out.push_str("\n## Files not used\n\n");
    for (path, reason) in skipped {
        out.push_str(&format!("- {path} (does not fit the layout: {reason})\n"));
    }
    for p in stray {
        out.push_str(&format!("- {p} (not a results.jsonl)\n"));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn invalid_cell_bold_rule() {
        let s = Stat {
            n: 2,
            invalid: 2,
            turns: 8,
            ..Stat::default()
        };
        assert_eq!(invalid_cell(&s), ("1.00 / 4.00".into(), true));
    }

    #[test]
    fn unused_files_and_recheck_rows_are_listed_and_quoted() {
        assert_eq!(files_not_used(&[], &[]), "");
        assert_eq!(
            files_not_used(&[("a/results.jsonl", "no k=")], &["b/notes.txt"]),
            "\n## Files not used\n\n- a/results.jsonl (does not fit the layout: no k=)\n\
             - b/notes.txt (not a results.jsonl)\n"
        );
        let row = RecheckRow {
            config: "gpt/F=None/max5_p2+tool+cd".into(),
            task: "gsm8k".into(),
            task_id: "1,2".into(),
            file: "x/results.jsonl".into(),
            line: 7,
            stored: true,
            rechecked: None,
            note: "say \"hi\"".into(),
        };
        assert_eq!(
            recheck_csv(&[row]),
            "config,task,task_id,file,line,stored,rechecked,note\n\
             gpt/F=None/max5_p2+tool+cd,gsm8k,\"1,2\",x/results.jsonl,7,true,,\"say \"\"hi\"\"\"\n"
        );
    }
}
