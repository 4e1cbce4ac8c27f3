//! Metrics from per-query items only, so a merge of shards recomputes them exactly.

use super::score::Item;
pub use scorekit_report::muse::{QueryRow, Summary};
use scorekit_report::{bootstrap_mean, Estimate};
use serde_json::{json, Map, Value};
use std::collections::BTreeMap;

fn rate(
    items: &[&Item],
    f: impl Fn(&Item) -> Option<bool>,
    resamples: usize,
    seed: u64,
) -> Option<Estimate> {
    let v: Vec<f64> = items
        .iter()
        .filter_map(|i| f(i))
        .map(|b| f64::from(u8::from(b)))
        .collect();
    bootstrap_mean(&v, resamples, seed)
}

fn three(items: &[&Item], resamples: usize, seed: u64) -> Map<String, Value> {
    let mut m = Map::new();
    m.insert("n".into(), json!(items.len()));
    m.insert(
        "TS".into(),
        json!(rate(items, |i| Some(i.ts), resamples, seed)),
    );
    m.insert(
        "FoT".into(),
        json!(rate(items, |i| Some(i.fot), resamples, seed)),
    );
    m.insert("O".into(), json!(rate(items, |i| i.o, resamples, seed)));
    m
}

/// Compute the metrics of a run from its items.
pub fn summarize(items: &[Item], resamples: usize, seed: u64) -> Summary {
    let all: Vec<&Item> = items.iter().collect();
    let mut metrics = three(&all, resamples, seed);
    let multi: Vec<&Item> = all.iter().copied().filter(|i| i.n_tasks > 1).collect();
    metrics.insert(
        "FoT_multi_task".into(),
        json!(rate(&multi, |i| Some(i.fot), resamples, seed)),
    );
    let not_low: Vec<&Item> = all
        .iter()
        .copied()
        .filter(|i| i.flow_confidence.as_deref() != Some("low"))
        .collect();
    metrics.insert(
        "FoT_without_low_confidence_flow".into(),
        json!(rate(&not_low, |i| Some(i.fot), resamples, seed)),
    );
    let count = |f: &dyn Fn(&Item) -> bool| items.iter().filter(|i| f(i)).count();
    metrics.insert("n_missing_plans".into(), json!(count(&|i| i.missing_plan)));
    metrics.insert(
        "n_plan_errors".into(),
        json!(count(&|i| i.plan_error.is_some())),
    );
    metrics.insert(
        "n_with_unknown_names".into(),
        json!(count(&|i| !i.unknown_names.is_empty())),
    );
    // The over-selection pitfall: all gold tasks present plus extras, so O can pass while TS fails.
    metrics.insert(
        "n_over_selected".into(),
        json!(count(&|i| i.missing_tasks.is_empty()
            && !(i.extra_tasks.is_empty() && i.unknown_names.is_empty()))),
    );
    metrics.insert(
        "n_O_without_TS".into(),
        json!(count(&|i| i.o == Some(true) && !i.ts)),
    );
    metrics.insert(
        "n_output_type_corrected".into(),
        json!(count(&|i| i.output_type_corrected)),
    );
    let mut sources: BTreeMap<&str, usize> = BTreeMap::new();
    let mut formats: BTreeMap<&str, usize> = BTreeMap::new();
    for i in items {
        *sources.entry(&i.o_source).or_default() += 1;
        if let Some(f) = &i.format {
            *formats.entry(f).or_default() += 1;
        }
    }
    metrics.insert("O_source".into(), json!(sources));
    metrics.insert("plan_formats".into(), json!(formats));

    let mut keyed: BTreeMap<String, Vec<&Item>> = BTreeMap::new();
    for i in items {
        keyed
            .entry(format!("tasks:{}", i.n_tasks))
            .or_default()
            .push(i);
        for d in &i.domains {
            keyed.entry(format!("domain:{d}")).or_default().push(i);
        }
        keyed
            .entry(format!("modality:{}", i.modality))
            .or_default()
            .push(i);
        if let Some(c) = &i.flow_confidence {
            keyed
                .entry(format!("flow_confidence:{c}"))
                .or_default()
                .push(i);
        }
    }
    let groups = keyed
        .into_iter()
        .map(|(k, v)| (k, Value::Object(three(&v, resamples, seed))))
        .collect();
    Summary { metrics, groups }
}

/// The rows of report.md's "Queries not fully right" table: every query that fails TS, FoT or O.
pub fn failing_queries(items: &[Item]) -> Vec<QueryRow> {
    items
        .iter()
        .filter(|i| !(i.ts && i.fot && i.o != Some(false)))
        .map(|i| QueryRow {
            idx: i.idx,
            ts: i.ts,
            fot: i.fot,
            o: i.o,
            missing_plan: i.missing_plan,
            plan_error: i.plan_error.clone(),
            missing_tasks: i.missing_tasks.clone(),
            extra_tasks: i.extra_tasks.clone(),
            unknown_names: i.unknown_names.clone(),
            violated: i
                .violated_dependencies
                .iter()
                .map(|v| (v.from.clone(), v.to.clone(), v.kind.clone()))
                .collect(),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn item(idx: i64, n_tasks: usize, ts: bool, fot: bool, o: bool) -> Item {
        Item {
            row: Some(1),
            plan_line: Some(1),
            idx,
            n_tasks,
            domains: vec!["audio".into()],
            modality: "audio->text".into(),
            flow_confidence: (n_tasks > 1).then(|| "high".into()),
            gold_tasks: vec![],
            gold_edges: vec![],
            missing_plan: false,
            plan_error: None,
            format: Some("scorekit".into()),
            mapped: vec![],
            predicted_tasks: vec![],
            unknown_names: vec![],
            missing_tasks: vec![],
            extra_tasks: vec![],
            predicted_edges: vec![],
            violated_dependencies: vec![],
            final_outputs: vec![],
            requested_output: "text".into(),
            output_type_corrected: false,
            ts,
            fot,
            o: Some(o),
            o_rule: o,
            o_source: "rule".into(),
            name_matches: vec![],
        }
    }

    #[test]
    fn rates_and_groups_by_hand() {
        let items = vec![
            item(0, 1, true, true, true),
            item(30, 2, true, false, true),
            item(31, 2, false, false, true),
        ];
        let s = summarize(&items, 0, 0);
        let v = |m: &Map<String, Value>, k: &str| m[k]["value"].as_f64().unwrap();
        assert!((v(&s.metrics, "TS") - 2.0 / 3.0).abs() < 1e-12);
        assert!((v(&s.metrics, "FoT") - 1.0 / 3.0).abs() < 1e-12);
        assert_eq!(v(&s.metrics, "O"), 1.0);
        assert_eq!(s.metrics["n_O_without_TS"], json!(1));
        let two = s.groups["tasks:2"].as_object().unwrap();
        assert_eq!((v(two, "TS"), v(two, "FoT")), (0.5, 0.0));
        assert_eq!(s.groups["domain:audio"]["n"], json!(3));
        // Items round-trip through JSON (items.jsonl) to the same metrics: what a merge relies on.
        let back: Vec<Item> = items
            .iter()
            .map(|i| serde_json::from_str(&serde_json::to_string(i).unwrap()).unwrap())
            .collect();
        assert_eq!(summarize(&back, 200, 7), summarize(&items, 200, 7));
    }
}
