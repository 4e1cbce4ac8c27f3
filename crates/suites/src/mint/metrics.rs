//! MINT's metrics.json numbers from the aggregated trajectories: the one place `scorekit mint`
//! and `scorekit merge` compute them.

use super::aggregate::Totals;
use super::tables::{self, TYPES};
use rayon::prelude::*;
use scorekit_report::{Estimate, RateBootstrap};
use serde_json::{json, Map, Value};

/// Fill metrics.json's `metrics` (trajectories, duplicates, completeness, Table 2 and Table 3)
/// and `groups` (per configuration: each type's success rate with its bootstrap interval, and
/// the format-failure behaviour) from the aggregated `totals`.
pub fn fill(
    m: &mut Map<String, Value>,
    groups: &mut Map<String, Value>,
    totals: &Totals,
    bootstrap: usize,
    seed: u64,
) {
    let stats = &totals.stats;
    m.insert("trajectories".into(), json!(totals.trajectories));
    m.insert("duplicates".into(), json!(totals.duplicates));
    m.insert(
        "configs_complete".into(),
        json!(stats.iter().filter(|c| c.complete()).count()),
    );
    let incomplete: Vec<Value> = stats
        .iter()
        .filter(|c| !c.complete())
        .map(|c| json!({"config": c.key.label(), "missing": c.missing}))
        .collect();
    m.insert("configs_incomplete".into(), Value::Array(incomplete));
    let t2: Vec<Value> = tables::table2(stats)
        .iter()
        .map(|r| {
            let sr: Map<String, Value> = r
                .sr
                .iter()
                .enumerate()
                .map(|(i, v)| (format!("sr_{}", i + 1), json!(v.map(|x| x / 100.0))))
                .collect();
            json!({"agent": r.agent, "sr_micro": sr, "delta_tools_pct_per_turn": r.slope, "r2": r.r2})
        })
        .collect();
    m.insert("table2".into(), Value::Array(t2));
    let t3: Vec<Value> = tables::table3(stats)
        .iter()
        .map(|r| {
            let obj = |v: [f64; 4]| -> Map<String, Value> {
                TYPES
                    .iter()
                    .zip(v)
                    .map(|(t, x)| (t.to_string(), json!(x / 100.0)))
                    .collect()
            };
            json!({"agent": r.agent, "feedback_model": r.feedback_model,
                   "feedback_setting": r.feedback_setting, "sr5_without": obj(r.without),
                   "sr5_with": obj(r.with), "delta_feedback": obj(r.delta())})
        })
        .collect();
    m.insert("table3".into(), Value::Array(t3));

    // Groups: one per configuration, each type's SR with its bootstrap interval. The
    // intervals of all groups are computed first, spread over the threads a configuration
    // at a time (a group alone is too small to split well: 125 blocks of 8 resamples), then
    // put in place in order; each interval depends only on its group, seed and resamples.
    // Groups of the same size share their resamples' draws (`RateBootstrap`).
    let boot = RateBootstrap::new(bootstrap, seed);
    let intervals: Vec<Vec<(String, Option<Estimate>)>> = totals
        .verdicts
        .par_iter()
        .map(|verdicts| {
            verdicts
                .groups()
                .into_iter()
                .map(|(k, bits)| (k, boot.estimate(bits)))
                .collect()
        })
        .collect();
    for (c, intervals) in stats.iter().zip(intervals) {
        let label = c.key.label();
        let mut g = Map::new();
        g.insert("complete".into(), json!(c.complete()));
        g.insert("missing".into(), json!(c.missing));
        let mut sr = Map::new();
        for (k, e) in intervals.into_iter().filter_map(|(k, e)| Some((k, e?))) {
            sr.insert(k, json!(e));
        }
        g.insert("success_rate".into(), Value::Object(sr));
        let mut inv = Map::new();
        for (t, s) in &c.by_type {
            inv.insert(
                t.clone(),
                json!({"invalid_actions_mean": s.invalid as f64 / s.n.max(1) as f64,
                       "turns_mean": s.turns as f64 / s.n.max(1) as f64,
                       "escaped_underscore_rate": s.underscore as f64 / s.n.max(1) as f64,
                       "python_tag_rate": s.python as f64 / s.n.max(1) as f64}),
            );
        }
        g.insert("behaviour".into(), Value::Object(inv));
        groups.insert(label, Value::Object(g));
    }
}
