//! The charts of a run's page, drawn from its metrics.json by the one chart module
//! ([`crate::svg`]): story's forest plot of raw and judge-corrected IFSM per model and its
//! Dissimilarity, GRASP's accuracy per test and scene, MINT's SR_k curves per agent and its
//! feedback gains, MuSE's TS / FoT / O per system, a judge's accuracy and its picks per letter.

use crate::mint::Table2Row;
use crate::svg::{interval_chart, sr_curves, ChartRow};
use crate::Estimate;
use serde_json::{Map, Value};

/// A chart of the page: its caption and its SVG.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Chart {
    /// What it shows.
    pub caption: String,
    /// Inline SVG (every text in it escaped by [`crate::svg::esc`]).
    pub svg: String,
}

/// The charts of one run.
pub fn run_charts(doc: &Value) -> Vec<Chart> {
    let groups = doc["groups"].as_object().cloned().unwrap_or_default();
    let metrics = doc["metrics"].as_object().cloned().unwrap_or_default();
    match doc["suite"].as_str().unwrap_or("") {
        "story" => story(&groups),
        "grasp" => grasp(&metrics, &groups),
        "muse" => muse(&metrics, &groups),
        "mint" => mint(&metrics),
        "judge-eval" => judge_eval(&metrics),
        _ => Vec::new(),
    }
}

/// `{value, n, ci_low, ci_high}` or `{value, ci: [lo, hi]}` as an estimate (no interval: a
/// point; `null` value: none).
pub fn estimate(v: Option<&Value>) -> Option<Estimate> {
    let v = v?.as_object()?;
    let value = v.get("value")?.as_f64()?;
    let (lo, hi) = match (v.get("ci_low"), v.get("ci_high"), v.get("ci")) {
        (Some(lo), Some(hi), _) => (lo.as_f64()?, hi.as_f64()?),
        (_, _, Some(Value::Array(c))) if c.len() == 2 => (c[0].as_f64()?, c[1].as_f64()?),
        _ => (value, value),
    };
    Some(Estimate {
        value,
        n: v.get("n").and_then(Value::as_u64).unwrap_or(0) as usize,
        ci_low: lo,
        ci_high: hi,
    })
}

/// One chart of `series` (name, path in a group) over `rows` (name, group), or none when no
/// row has a value.
fn chart(
    caption: &str,
    series: &[(&str, &[&str])],
    rows: &[(String, &Map<String, Value>)],
    reference: Option<(&str, &str)>,
) -> Option<Chart> {
    let get = |g: &Map<String, Value>, path: &[&str]| {
        let mut v = g.get(path[0]);
        for p in &path[1..] {
            v = v.and_then(|x| x.get(p));
        }
        estimate(v)
    };
    let used: Vec<&(&str, &[&str])> = series
        .iter()
        .filter(|(_, p)| rows.iter().any(|(_, g)| get(g, p).is_some()))
        .collect();
    if used.is_empty() {
        return None;
    }
    let chart_rows: Vec<ChartRow> = rows
        .iter()
        .map(|(name, g)| ChartRow {
            name: name.clone(),
            values: used.iter().map(|(_, p)| get(g, p)).collect(),
            reference: reference.and_then(|(key, _)| g.get(key).and_then(Value::as_f64)),
        })
        .collect();
    let names: Vec<&str> = used.iter().map(|(n, _)| *n).collect();
    Some(Chart {
        caption: caption.to_string(),
        svg: interval_chart(
            caption,
            &names,
            &chart_rows,
            reference.map_or("", |(_, label)| label),
        ),
    })
}

fn story(groups: &Map<String, Value>) -> Vec<Chart> {
    let rows: Vec<(String, &Map<String, Value>)> = groups
        .iter()
        .filter_map(|(k, v)| Some((k.clone(), v.as_object()?)))
        .collect();
    let ifsm: [(&str, &[&str]); 5] = [
        ("IFSM (raw)", &["ifsm"]),
        (
            "corrected (dataset calibration)",
            &["ifsm_corrected", "dataset"],
        ),
        ("corrected (human labels)", &["ifsm_corrected", "human"]),
        ("PPI++ (labels of the model)", &["ifsm_ppi"]),
        ("headline", &["ifsm_headline"]),
    ];
    let dis: [(&str, &[&str]); 2] = [
        ("micro (pairs)", &["dissimilarity_micro"]),
        ("macro (stories)", &["dissimilarity_macro"]),
    ];
    [
        chart(
            "IFSM per model: raw and judge-corrected, 95% intervals",
            &ifsm,
            &rows,
            Some(("chance", "chance")),
        ),
        chart("Dissimilarity per model (1 − cos)", &dis, &rows, None),
    ]
    .into_iter()
    .flatten()
    .collect()
}

fn grasp(metrics: &Map<String, Value>, groups: &Map<String, Value>) -> Vec<Chart> {
    let mut rows: Vec<(String, &Map<String, Value>)> = vec![("all".to_string(), metrics)];
    rows.extend(
        groups
            .iter()
            .filter_map(|(k, v)| Some((k.clone(), v.as_object()?))),
    );
    let series: [(&str, &[&str]); 4] = [
        ("accuracy", &["accuracy"]),
        ("accuracy (gold yes)", &["acc_pos"]),
        ("accuracy (gold no)", &["acc_neg"]),
        ("paired accuracy", &["paired_accuracy"]),
    ];
    chart(
        "GRASP: accuracy per test and scene, 95% intervals",
        &series,
        &rows,
        Some(("chance", "chance")),
    )
    .into_iter()
    .collect()
}

fn muse(metrics: &Map<String, Value>, groups: &Map<String, Value>) -> Vec<Chart> {
    let mut rows: Vec<(String, &Map<String, Value>)> = vec![("all".to_string(), metrics)];
    rows.extend(
        groups
            .iter()
            .filter(|(k, _)| !k.contains(':'))
            .filter_map(|(k, v)| Some((k.clone(), v.as_object()?))),
    );
    let series: [(&str, &[&str]); 3] = [("TS", &["TS"]), ("FoT", &["FoT"]), ("O", &["O"])];
    let mut charts: Vec<Chart> = chart(
        "MuSE: Task Selection, Flow of Thought, Final Output per system, 95% intervals",
        &series,
        &rows,
        None,
    )
    .into_iter()
    .collect();
    let domains: Vec<(String, &Map<String, Value>)> = groups
        .iter()
        .filter_map(|(k, v)| Some((k.strip_prefix("domain:")?.to_string(), v.as_object()?)))
        .collect();
    charts.extend(chart(
        "MuSE per domain: TS, FoT, O, 95% intervals",
        &series,
        &domains,
        None,
    ));
    charts
}

fn mint(metrics: &Map<String, Value>) -> Vec<Chart> {
    let mut charts = Vec::new();
    let table2: Vec<Table2Row> = metrics
        .get("table2")
        .and_then(Value::as_array)
        .map(|rows| {
            rows.iter()
                .map(|r| Table2Row {
                    agent: r["agent"].as_str().unwrap_or("").to_string(),
                    sr: std::array::from_fn(|k| {
                        r["sr_micro"][format!("sr_{}", k + 1)]
                            .as_f64()
                            .map(|v| v * 100.0)
                    }),
                    slope: r["delta_tools_pct_per_turn"].as_f64(),
                    r2: r["r2"].as_f64(),
                })
                .collect()
        })
        .unwrap_or_default();
    if !table2.is_empty() {
        charts.push(Chart {
            caption: "MINT: success rate SR_k per interaction budget k, per agent".into(),
            svg: sr_curves(&table2),
        });
    }
    // Δfeedback: SR_5 without and with feedback per task type, one row per comparison.
    let mut rows = Vec::new();
    for r in metrics
        .get("table3")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let name = format!(
            "{} + {} ({})",
            r["agent"].as_str().unwrap_or(""),
            r["feedback_model"].as_str().unwrap_or(""),
            r["feedback_setting"].as_str().unwrap_or("")
        );
        for kind in ["reasoning", "decision_making", "code_generation", "micro"] {
            let point = |v: &Value| {
                v.as_f64().map(|x| Estimate {
                    value: x,
                    n: 0,
                    ci_low: x,
                    ci_high: x,
                })
            };
            rows.push(ChartRow {
                name: format!("{name}: {kind}"),
                values: vec![point(&r["sr5_without"][kind]), point(&r["sr5_with"][kind])],
                reference: None,
            });
        }
    }
    if !rows.is_empty() {
        charts.push(Chart {
            caption: "MINT: SR_5 without and with language feedback (Δfeedback)".into(),
            svg: interval_chart(
                "MINT: SR_5 without and with language feedback (Δfeedback)",
                &["without feedback", "with feedback"],
                &rows,
                "",
            ),
        });
    }
    charts
}

/// `judge eval`: accuracy and consistency with their intervals (the dataset's option order, and
/// the majority over rotations under cyclic orders) beside chance; the share of picks per letter
/// against the share of gold answers per letter (a judge that favours a position shows here).
fn judge_eval(metrics: &Map<String, Value>) -> Vec<Chart> {
    let mut charts = Vec::new();
    let chance = metrics.get("chance").and_then(Value::as_f64);
    let cyclic = metrics.get("cyclic").and_then(Value::as_object);
    let mut rows = vec![("dataset order".to_string(), metrics)];
    rows.extend(cyclic.map(|c| ("majority over rotations".to_string(), c)));
    let rows: Vec<ChartRow> = rows
        .iter()
        .map(|(name, m)| ChartRow {
            name: name.clone(),
            values: vec![estimate(m.get("accuracy")), estimate(m.get("consistency"))],
            reference: chance,
        })
        .collect();
    if rows.iter().any(|r| r.values.iter().any(Option::is_some)) {
        let caption =
            "Judge: accuracy and consistency (every question of a passage right), 95% intervals";
        charts.push(Chart {
            caption: caption.into(),
            svg: interval_chart(
                caption,
                &["accuracy", "consistency"],
                &rows,
                "chance (accuracy)",
            ),
        });
    }
    let share = |v: Option<&Value>, key: &str, letter: &str| {
        v.and_then(|p| p.get(key))
            .and_then(|s| s.get(letter))
            .and_then(Value::as_f64)
            .map(|x| Estimate {
                value: x,
                n: 0,
                ci_low: x,
                ci_high: x,
            })
    };
    let picks = metrics.get("picks");
    let majority = cyclic.and_then(|c| c.get("picks"));
    let Some(letters) = picks
        .and_then(|p| p.get("share"))
        .and_then(Value::as_object)
    else {
        return charts;
    };
    let mut series = vec!["judge's picks", "gold answers"];
    if majority.is_some() {
        series.push("majority picks over rotations");
    }
    let rows: Vec<ChartRow> = letters
        .iter()
        // `none` (answers naming no option) only where there are some.
        .filter(|(l, v)| l.as_str() != "none" || v.as_f64().is_some_and(|x| x > 0.0))
        .map(|(l, _)| {
            let mut values = vec![share(picks, "share", l), share(picks, "gold_share", l)];
            if majority.is_some() {
                values.push(share(majority, "share", l));
            }
            ChartRow {
                name: l.clone(),
                values,
                reference: None,
            }
        })
        .collect();
    let caption = "Judge: share of picks per letter against the share of gold answers per letter";
    charts.push(Chart {
        caption: caption.into(),
        svg: interval_chart(caption, &series, &rows, ""),
    });
    charts
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn story_charts_draw_each_model_and_every_estimate_present() {
        let e = |v: f64| json!({"value": v, "n": 10, "ci_low": v - 0.1, "ci_high": v + 0.1});
        let doc = json!({"suite": "story", "metrics": {}, "groups": {
            "m<1>": {"ifsm": e(0.3), "chance": 0.25, "ifsm_headline": {"method": "raw", "value": 0.3, "ci": [0.2, 0.4]},
                     "dissimilarity_micro": e(0.5)},
            "m2": {"ifsm": e(0.6), "chance": 0.25, "ifsm_corrected": {"dataset": {"value": null, "ci": null}}}
        }});
        let charts = run_charts(&doc);
        assert_eq!(charts.len(), 2);
        // Raw for both, headline for one; legend dots for the two series.
        assert_eq!(charts[0].svg.matches("<circle").count(), 3 + 2);
        assert!(charts[0].svg.contains("m&lt;1&gt;"));
        assert!(charts[1].svg.contains("micro (pairs)"));
    }

    #[test]
    fn judge_eval_draws_accuracy_beside_chance_and_picks_per_letter() {
        let e = |v: f64| json!({"value": v, "n": 40, "ci_low": v - 0.1, "ci_high": v + 0.1});
        let picks = json!({"counts": {"A": 2, "B": 38, "none": 0},
            "share": {"A": 0.05, "B": 0.95, "none": 0.0}, "gold_share": {"A": 0.5, "B": 0.5}});
        let doc = json!({"suite": "judge-eval", "groups": {}, "metrics": {
            "chance": 0.25, "accuracy": e(0.325), "consistency": e(0.18), "picks": picks}});
        let charts = run_charts(&doc);
        assert_eq!(charts.len(), 2);
        // One row (no rotations): two estimates with whiskers and the chance mark.
        assert!(charts[0].svg.contains("dataset order") && !charts[0].svg.contains("majority"));
        assert!(charts[0].svg.contains("chance (accuracy)"));
        // Letters A and B, no `none` row (no answer named none); picks and gold per letter.
        let letters = &charts[1].svg;
        assert!(letters.contains(">A<") && letters.contains(">B<") && !letters.contains(">none<"));
        assert!(letters.contains("gold answers"));
        let mut cyclic = doc.clone();
        cyclic["metrics"]["cyclic"] =
            json!({"accuracy": e(0.4), "consistency": e(0.2), "picks": picks});
        let charts = run_charts(&cyclic);
        assert!(charts[0].svg.contains("majority over rotations"));
        assert!(charts[1].svg.contains("majority picks over rotations"));
    }

    #[test]
    fn mint_draws_the_curves_and_the_feedback_gain() {
        let doc = json!({"suite": "mint", "groups": {}, "metrics": {
            "table2": [{"agent": "a", "sr_micro": {"sr_1": 0.1, "sr_2": 0.2, "sr_3": null, "sr_4": null, "sr_5": 0.3}, "delta_tools_pct_per_turn": 5.0, "r2": 0.9}],
            "table3": [{"agent": "a", "feedback_model": "f", "feedback_setting": "s",
                        "sr5_without": {"reasoning": 0.1, "decision_making": 0.2, "code_generation": 0.3, "micro": 0.2},
                        "sr5_with": {"reasoning": 0.2, "decision_making": 0.3, "code_generation": 0.4, "micro": 0.3}}]}});
        let charts = run_charts(&doc);
        assert_eq!(charts.len(), 2);
        assert_eq!(charts[0].svg.matches("<polyline").count(), 1);
        assert!(charts[1].svg.contains("a + f (s): micro"));
    }
}
