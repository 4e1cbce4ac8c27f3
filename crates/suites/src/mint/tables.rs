//! The paper's tables, computed from items: SR per configuration and task type, Table 2
//! (SR_1..SR_5, Δtools, R²), Table 3 (Δfeedback), invalid actions, `\_` and `[PYTHON]`. The
//! writers of tables.md, tables.tex, sr.csv and sr_curves.svg are in `report/`.

use super::layout::{expected, ConfigKey, TASK_TYPES};
use super::Item;
pub use scorekit_report::mint::{round2, Stat, Table2Row, Table3Row, TYPES};
use scorekit_report::mint::{ConfigTable, Tables};
use std::collections::BTreeMap;

/// Count one trajectory (`ok`: its verdict) in `stat` (the streaming aggregate counts with
/// it too; `Stat` itself lives in `report`, which cannot see [`Item`]).
pub fn add(stat: &mut Stat, it: &Item, ok: bool) {
    stat.n += 1;
    stat.success += ok as usize;
    stat.invalid += it.invalid_actions;
    stat.turns += it.turns;
    stat.underscore += it.escaped_underscore as usize;
    stat.python += it.python_tag as usize;
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
        add(c.by_type.entry(it.task_type.clone()).or_default(), it, ok);
        add(c.by_type.entry("micro".into()).or_default(), it, ok);
        add(c.by_task.entry(it.task.clone()).or_default(), it, ok);
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

/// The typed summary the report writers render (tables.md, tables.tex, sr.csv, sr_curves.svg).
pub fn summary(stats: &[ConfigStats]) -> Tables {
    let table = |c: &ConfigStats| ConfigTable {
        label: c.key.label(),
        agent: c.key.agent.clone(),
        feedback_model: c.key.feedback_model.clone(),
        feedback_setting: c.key.feedback_setting.clone(),
        k: c.key.k,
        by_type: c.by_type.clone(),
        by_task: c.by_task.clone(),
    };
    Tables {
        table2: table2(stats),
        table3: table3(stats),
        k5: k5_no_feedback(stats).into_iter().map(table).collect(),
        complete: stats.iter().filter(|c| c.complete()).map(table).collect(),
        tasks: TASK_TYPES
            .iter()
            .flat_map(|(_, t, _)| t.iter().map(|k| k.to_string()))
            .collect(),
        incomplete: stats
            .iter()
            .filter(|c| !c.complete())
            .map(|c| (c.key.label(), c.missing.clone()))
            .collect(),
    }
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
}
