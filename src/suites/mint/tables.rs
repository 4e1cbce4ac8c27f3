//! The paper's tables, computed from items: SR per configuration and task type (sr.csv),
//! Table 2 (SR_1..SR_5, Δtools, R²), Table 3 (Δfeedback), invalid actions, `\_` and `[PYTHON]`.

use super::layout::{expected, ConfigKey, TASK_TYPES};
use super::Item;
use crate::report::Table;
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
    /// Count one trajectory with its verdict.
    pub fn add(&mut self, it: &Item, ok: bool) {
        self.n += 1;
        self.success += ok as usize;
        self.invalid += it.invalid_actions;
        self.turns += it.turns;
        self.underscore += it.escaped_underscore as usize;
        self.python += it.python_tag as usize;
    }

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

/// Per-configuration statistics.
#[derive(Debug, Clone)]
pub struct ConfigStats {
    /// The configuration.
    pub key: ConfigKey,
    /// By task type, plus `micro` over all instances.
    pub by_type: BTreeMap<String, Stat>,
    /// By task.
    pub by_task: BTreeMap<String, Stat>,
    /// What is missing for completeness (empty when complete).
    pub missing: Vec<String>,
}

impl ConfigStats {
    /// Complete: 316 reasoning, 134 decision-making, 136 code-generation instances.
    pub fn complete(&self) -> bool {
        self.missing.is_empty()
    }

    /// Percent SR of a type, rounded to 2 decimals as the notebook does before differences.
    pub fn pct(&self, t: &str) -> Option<f64> {
        self.by_type.get(t).map(|s| round2(s.rate() * 100.0))
    }
}

/// Round to 2 decimals.
pub fn round2(x: f64) -> f64 {
    (x * 100.0).round() / 100.0
}

/// Aggregate non-duplicate items per configuration, in configuration order.
pub fn config_stats(items: &[Item], use_recheck: bool) -> Vec<ConfigStats> {
    let mut map: BTreeMap<ConfigKey, ConfigStats> = BTreeMap::new();
    for it in items.iter().filter(|i| !i.duplicate) {
        let ok = it.verdict(use_recheck);
        let c = map.entry(it.config.clone()).or_insert_with(|| ConfigStats {
            key: it.config.clone(),
            by_type: BTreeMap::new(),
            by_task: BTreeMap::new(),
            missing: Vec::new(),
        });
        c.by_type
            .entry(it.task_type.clone())
            .or_default()
            .add(it, ok);
        c.by_type.entry("micro".into()).or_default().add(it, ok);
        c.by_task.entry(it.task.clone()).or_default().add(it, ok);
    }
    for c in map.values_mut() {
        fill_missing(c);
    }
    map.into_values().collect()
}

/// Say what a configuration lacks for completeness (`c.missing`), from its counts.
pub fn fill_missing(c: &mut ConfigStats) {
    c.missing.clear();
    for (t, tasks, want) in TASK_TYPES {
        let got = c.by_type.get(t).map_or(0, |s| s.n);
        if got != want {
            let absent: Vec<&str> = tasks
                .iter()
                .copied()
                .filter(|k| !c.by_task.contains_key(*k))
                .collect();
            let mut m = format!("{t}: {got} of {} instances", expected(t));
            if !absent.is_empty() {
                m.push_str(&format!(" (no {} file)", absent.join(", ")));
            }
            c.missing.push(m);
        }
    }
}

/// sr.csv: one row per complete configuration and task type.
pub fn sr_csv(stats: &[ConfigStats]) -> String {
    let mut out =
        String::from("agent,feedback_model,feedback_setting,k,task_type,n,success_rate\n");
    for c in stats.iter().filter(|c| c.complete()) {
        for t in TYPES {
            if let Some(s) = c.by_type.get(t) {
                out.push_str(&format!(
                    "{},{},{},{},{},{},{}\n",
                    csv_field(&c.key.agent),
                    csv_field(&c.key.feedback_model),
                    csv_field(&c.key.feedback_setting),
                    c.key.k,
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

/// Ordinary least squares of y on x: (slope, R²).
pub fn ols(points: &[(f64, f64)]) -> (Option<f64>, Option<f64>) {
    let n = points.len() as f64;
    if points.len() < 2 {
        return (None, None);
    }
    let mx = points.iter().map(|p| p.0).sum::<f64>() / n;
    let my = points.iter().map(|p| p.1).sum::<f64>() / n;
    let sxx: f64 = points.iter().map(|p| (p.0 - mx).powi(2)).sum();
    let sxy: f64 = points.iter().map(|p| (p.0 - mx) * (p.1 - my)).sum();
    let syy: f64 = points.iter().map(|p| (p.1 - my).powi(2)).sum();
    if sxx == 0.0 {
        return (None, None);
    }
    let slope = sxy / sxx;
    let r2 = (syy > 0.0).then(|| slope * sxy / syy);
    (Some(slope), r2)
}

/// Table 2 from complete no-feedback configurations.
pub fn table2(stats: &[ConfigStats]) -> Vec<Table2Row> {
    let mut rows: BTreeMap<String, [Option<f64>; 5]> = BTreeMap::new();
    for c in stats.iter().filter(|c| c.complete() && c.key.no_feedback()) {
        if (1..=5).contains(&c.key.k) {
            let slot = &mut rows.entry(c.key.agent.clone()).or_default()[c.key.k as usize - 1];
            slot.get_or_insert(c.pct("micro").unwrap_or(0.0));
        }
    }
    rows.into_iter()
        .map(|(agent, sr)| {
            let pts: Vec<(f64, f64)> = sr
                .iter()
                .enumerate()
                .filter_map(|(i, v)| v.map(|v| ((i + 1) as f64, v)))
                .collect();
            let (slope, r2) = ols(&pts);
            Table2Row {
                agent,
                sr,
                slope,
                r2,
            }
        })
        .collect()
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

/// Table 3: every complete k = 5 feedback configuration with a complete no-feedback twin.
pub fn table3(stats: &[ConfigStats]) -> Vec<Table3Row> {
    let base = |agent: &str| {
        stats
            .iter()
            .find(|c| c.complete() && c.key.no_feedback() && c.key.k == 5 && c.key.agent == agent)
    };
    stats
        .iter()
        .filter(|c| c.complete() && !c.key.no_feedback() && c.key.k == 5)
        .filter_map(|c| {
            let b = base(&c.key.agent)?;
            Some(Table3Row {
                agent: c.key.agent.clone(),
                feedback_model: c.key.feedback_model.clone(),
                feedback_setting: c.key.feedback_setting.clone(),
                without: TYPES.map(|t| b.pct(t).unwrap_or(0.0)),
                with: TYPES.map(|t| c.pct(t).unwrap_or(0.0)),
            })
        })
        .collect()
}

/// Complete k = 5 no-feedback configurations (rows of the artefact tables).
pub fn k5_no_feedback(stats: &[ConfigStats]) -> Vec<&ConfigStats> {
    stats
        .iter()
        .filter(|c| c.complete() && c.key.no_feedback() && c.key.k == 5)
        .collect()
}

fn opt(v: Option<f64>, f: impl Fn(f64) -> String) -> String {
    v.map_or_else(|| "n/a".to_string(), f)
}

/// Invalid-action cell: mean invalid actions / mean turns, and whether it is bold (> 20 %).
pub fn invalid_cell(s: &Stat) -> (String, bool) {
    let inv = ratio(s.invalid as f64, s.n);
    let turns = ratio(s.turns as f64, s.n);
    (format!("{inv:.2} / {turns:.2}"), inv / (turns + 1e-6) > 0.2)
}

/// Share (percent) of trajectories with an artefact, and whether it is bold (≥ 2 %).
fn artefact_cell(count: usize, n: usize) -> (String, bool) {
    let pct = round2(ratio(count as f64 * 100.0, n));
    (format!("{pct:.2}"), pct >= 2.0)
}

fn bold_md((s, b): (String, bool)) -> String {
    if b {
        format!("**{s}**")
    } else {
        s
    }
}

fn bold_tex((s, b): (String, bool)) -> String {
    if b {
        format!("\\textbf{{{s}}}")
    } else {
        s
    }
}

fn signed(x: f64) -> String {
    format!("{x:+.1}")
}

/// tables.md: every table, laid out like the paper's, plus per-task SR and incomplete configs.
pub fn render_markdown(stats: &[ConfigStats]) -> String {
    let mut out = String::from("# MINT tables\n\n");
    out.push_str("## Table 2: success rate SR_k (micro, %) and Δtools\n\n");
    let mut t = Table::new(&["Model", "k=1", "k=2", "k=3", "k=4", "k=5", "Δtools", "R²"]);
    for r in table2(stats) {
        let mut cells = vec![r.agent.clone()];
        cells.extend(r.sr.iter().map(|v| opt(*v, |x| format!("{x:.1}"))));
        cells.push(opt(r.slope, signed));
        cells.push(opt(r.r2, |x| format!("{x:.2}")));
        t.row(&cells);
    }
    out.push_str(&t.render());
    out.push_str(
        "\nΔtools: OLS slope of SR_k on k over the k present; n/a with fewer than two k.\n\n",
    );

    out.push_str("## Table 3: SR_5 (%) without and with language feedback, Δfeedback\n\n");
    let mut hdr = vec!["Model", "Feedback"];
    hdr.extend(TYPE_NAMES);
    let mut t = Table::new(&hdr);
    for r in table3(stats) {
        let label = format!("{} ({})", r.feedback_model, r.feedback_setting);
        let row = |name: &str, v: [f64; 4], f: &dyn Fn(f64) -> String| {
            let mut cells = vec![r.agent.clone(), name.to_string()];
            cells.extend(v.iter().map(|x| f(*x)));
            cells
        };
        t.row(&row("no feedback", r.without, &|x| format!("{x:.1}")));
        t.row(&row(&format!("w/ {label}"), r.with, &|x| format!("{x:.1}")));
        t.row(&row("Δfeedback", r.delta(), &signed));
    }
    out.push_str(&t.render());

    let k5 = k5_no_feedback(stats);
    out.push_str("\n## Invalid actions / turns per instance (k = 5, no feedback)\n\n");
    let mut hdr = vec!["Model"];
    hdr.extend(TYPE_NAMES);
    let mut t = Table::new(&hdr);
    for c in &k5 {
        let mut cells = vec![c.key.agent.clone()];
        cells.extend(TYPES.iter().map(|ty| {
            c.by_type
                .get(*ty)
                .map_or("n/a".into(), |s| bold_md(invalid_cell(s)))
        }));
        t.row(&cells);
    }
    out.push_str(&t.render());
    out.push_str("\nBold: invalid actions exceed 20 % of turns.\n");

    for (title, pick) in [
        (
            "Escaped underscore `\\_` (% of instances, k = 5, no feedback)",
            0,
        ),
        ("`[PYTHON]` tag (% of instances, k = 5, no feedback)", 1),
    ] {
        out.push_str(&format!("\n## {title}\n\n"));
        let mut t = Table::new(&hdr);
        for c in &k5 {
            let mut cells = vec![c.key.agent.clone()];
            cells.extend(TYPES.iter().map(|ty| {
                c.by_type.get(*ty).map_or("n/a".into(), |s| {
                    bold_md(artefact_cell(
                        if pick == 0 { s.underscore } else { s.python },
                        s.n,
                    ))
                })
            }));
            t.row(&cells);
        }
        out.push_str(&t.render());
        out.push_str("\nBold: at least 2 %.\n");
    }

    out.push_str("\n## SR per task (%, complete configurations)\n\n");
    let tasks: Vec<&str> = TASK_TYPES
        .iter()
        .flat_map(|(_, t, _)| t.iter().copied())
        .collect();
    let mut hdr = vec!["Configuration"];
    hdr.extend(tasks.iter().copied());
    let mut t = Table::new(&hdr);
    for c in stats.iter().filter(|c| c.complete()) {
        let mut cells = vec![c.key.label()];
        cells.extend(tasks.iter().map(|k| {
            c.by_task
                .get(*k)
                .map_or("n/a".into(), |s| format!("{:.2}", round2(s.rate() * 100.0)))
        }));
        t.row(&cells);
    }
    out.push_str(&t.render());

    let incomplete: Vec<&ConfigStats> = stats.iter().filter(|c| !c.complete()).collect();
    out.push_str("\n## Incomplete configurations (left out of every table above)\n\n");
    if incomplete.is_empty() {
        out.push_str("None.\n");
    }
    for c in incomplete {
        out.push_str(&format!("- {}: {}\n", c.key.label(), c.missing.join("; ")));
    }
    out
}

fn tex_escape(s: &str) -> String {
    s.replace('\\', "\\textbackslash{}")
        .replace('_', "\\_")
        .replace('%', "\\%")
        .replace('&', "\\&")
        .replace('#', "\\#")
}

/// tables.tex: the same tables as LaTeX tabulars.
pub fn render_latex(stats: &[ConfigStats]) -> String {
    let mut out = String::from("% MINT tables written by scorekit\n");
    out.push_str(
        "% Table 2: SR_k (micro, %) and Delta tools\n\\begin{tabular}{lrrrrrrr}\n\\toprule\n",
    );
    out.push_str("Model & $k=1$ & $k=2$ & $k=3$ & $k=4$ & $k=5$ & $\\Delta_{\\text{tools}}$ & $R^2$ \\\\\n\\midrule\n");
    for r in table2(stats) {
        let mut cells = vec![tex_escape(&r.agent)];
        cells.extend(r.sr.iter().map(|v| opt(*v, |x| format!("{x:.1}"))));
        cells.push(opt(r.slope, signed));
        cells.push(opt(r.r2, |x| format!("{x:.2}")));
        out.push_str(&format!("{} \\\\\n", cells.join(" & ")));
    }
    out.push_str("\\bottomrule\n\\end{tabular}\n\n");

    out.push_str("% Table 3: SR_5 (%) without and with feedback, Delta feedback\n\\begin{tabular}{llrrrr}\n\\toprule\n");
    out.push_str(&format!(
        "Model & Feedback & {} \\\\\n\\midrule\n",
        TYPE_NAMES.join(" & ")
    ));
    for r in table3(stats) {
        let a = tex_escape(&r.agent);
        let fmt = |v: [f64; 4]| v.map(|x| format!("{x:.1}")).join(" & ");
        out.push_str(&format!("{a} & no feedback & {} \\\\\n", fmt(r.without)));
        out.push_str(&format!(
            "{a} & w/ {} ({}) & {} \\\\\n",
            tex_escape(&r.feedback_model),
            tex_escape(&r.feedback_setting),
            fmt(r.with)
        ));
        out.push_str(&format!(
            "{a} & $\\Delta_{{\\text{{feedback}}}}$ & {} \\\\\n",
            r.delta().map(signed).join(" & ")
        ));
    }
    out.push_str("\\bottomrule\n\\end{tabular}\n\n");

    let k5 = k5_no_feedback(stats);
    for (title, pick) in [
        ("Invalid actions / turns (k = 5, no feedback)", 0),
        ("Escaped underscore (%, k = 5, no feedback)", 1),
        ("[PYTHON] tag (%, k = 5, no feedback)", 2),
    ] {
        out.push_str(&format!(
            "% {title}\n\\begin{{tabular}}{{lrrrr}}\n\\toprule\n"
        ));
        out.push_str(&format!(
            "Model & {} \\\\\n\\midrule\n",
            TYPE_NAMES.join(" & ")
        ));
        for c in &k5 {
            let cells: Vec<String> = TYPES
                .iter()
                .map(|ty| {
                    c.by_type.get(*ty).map_or("n/a".into(), |s| {
                        bold_tex(match pick {
                            0 => invalid_cell(s),
                            1 => artefact_cell(s.underscore, s.n),
                            _ => artefact_cell(s.python, s.n),
                        })
                    })
                })
                .collect();
            out.push_str(&format!(
                "{} & {} \\\\\n",
                tex_escape(&c.key.agent),
                cells.join(" & ")
            ));
        }
        out.push_str("\\bottomrule\n\\end{tabular}\n\n");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ols_reproduces_the_published_fit() {
        let pts: Vec<(f64, f64)> = [2.73, 16.89, 24.06, 31.74, 36.18]
            .iter()
            .enumerate()
            .map(|(i, y)| ((i + 1) as f64, *y))
            .collect();
        let (slope, r2) = ols(&pts);
        assert!((slope.unwrap() - 8.175).abs() < 1e-9);
        assert_eq!(format!("{:.2}", r2.unwrap()), "0.96");
        assert_eq!(ols(&pts[..1]), (None, None));
    }

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
}
