//! What a page says of a run besides its items, taken from metrics.json and report.md as they
//! are: every estimate (value, 95% interval, n, method) per scope, the other numbers, the
//! settings, inputs with sha256, datasets, models, and report.md's warnings.

use serde::Serialize;
use serde_json::{Map, Value};

/// A value with its interval, wherever metrics.json has one (`{value, n, ci_low, ci_high}`, or
/// `{value, ci: [lo, hi]}` of the corrected and headline IFSM).
#[derive(Debug, Clone, Serialize)]
pub struct EstimateRow {
    /// `overall`, or the group's name.
    pub scope: String,
    /// The path of the metric inside its scope (`success_rate.micro`).
    pub metric: String,
    /// The value as metrics.json writes it (`null` where there is none).
    pub value: Value,
    /// The value as shown.
    pub shown: String,
    /// The interval as shown (empty without one).
    pub interval: String,
    /// Items behind it, where metrics.json says.
    pub n: Option<u64>,
    /// How it was estimated, where metrics.json says (`raw`, `dataset`, `ppi`, ...).
    pub method: Option<String>,
    /// `%` (a rate shown in percent) or `` (shown as the number).
    pub unit: &'static str,
}

/// Any other value of metrics (counts, notes), as text.
#[derive(Debug, Clone, Serialize)]
pub struct FactRow {
    /// `overall` or the group.
    pub scope: String,
    /// Path of the key.
    pub key: String,
    /// The value's JSON (strings without quotes), shortened past 400 characters.
    pub value: String,
}

/// One key of a flattened object: path and value text.
#[derive(Debug, Clone, Serialize)]
pub struct KeyValue {
    /// Dotted path.
    pub key: String,
    /// The value (strings as they are, the rest as JSON).
    pub value: String,
}

/// Metrics whose values are not rates: shown as numbers, not percents.
fn is_rate(metric: &str) -> bool {
    let m = metric.to_ascii_lowercase();
    !(m.contains("dissim")
        || m.contains("slope")
        || m.contains("pct")
        || m.ends_with("mean")
        || m == "j"
        || m.ends_with(".j"))
}

/// A number as a page shows it: a rate in percent with one decimal, anything else with three.
pub fn shown(v: f64, rate: bool) -> String {
    if rate {
        format!("{:.1}", v * 100.0)
    } else {
        format!("{v:.3}")
    }
}

/// Every estimate and every other value of `metrics` (scope `overall`) and of each group.
pub fn metric_rows(doc: &Value) -> (Vec<EstimateRow>, Vec<FactRow>) {
    let mut est = Vec::new();
    let mut facts = Vec::new();
    if let Some(m) = doc["metrics"].as_object() {
        walk("overall", "", m, 0, &mut est, &mut facts);
    }
    if let Some(groups) = doc["groups"].as_object() {
        for (g, v) in groups {
            if let Some(m) = v.as_object() {
                walk(g, "", m, 0, &mut est, &mut facts);
            }
        }
    }
    (est, facts)
}

fn walk(
    scope: &str,
    prefix: &str,
    obj: &Map<String, Value>,
    depth: usize,
    est: &mut Vec<EstimateRow>,
    facts: &mut Vec<FactRow>,
) {
    for (k, v) in obj {
        let path = if prefix.is_empty() {
            k.clone()
        } else {
            format!("{prefix}.{k}")
        };
        let parsed = v.as_object().and_then(estimate);
        match (v, parsed) {
            (Value::Object(o), Some(parsed)) => {
                est.push(estimate_row(scope, &path, o, parsed));
                // What else the estimate carries (J, q0, the counts) is shown beside it.
                let rest: Map<String, Value> = o
                    .iter()
                    .filter(|(k, _)| !ESTIMATE_KEYS.contains(&k.as_str()))
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect();
                walk(scope, &path, &rest, depth + 1, est, facts);
            }
            (Value::Object(o), None) if depth < 4 => walk(scope, &path, o, depth + 1, est, facts),
            (Value::Array(a), _)
                if a.iter().all(Value::is_object) && !a.is_empty() && depth < 4 =>
            {
                // MINT's table2/table3: one object per agent, named by its keys.
                for (i, x) in a.iter().enumerate() {
                    let o = x.as_object().expect("checked");
                    let name = ["agent", "system", "name"]
                        .iter()
                        .find_map(|n| o.get(*n).and_then(Value::as_str))
                        .map(str::to_string)
                        .unwrap_or_else(|| i.to_string());
                    let name = match o.get("feedback_setting").and_then(Value::as_str) {
                        Some(s) => format!("{name} ({s})"),
                        None => name,
                    };
                    walk(scope, &format!("{path}[{name}]"), o, depth + 1, est, facts);
                }
            }
            _ => facts.push(FactRow {
                scope: scope.to_string(),
                key: path,
                value: short(&text(v)),
            }),
        }
    }
}

/// The keys an estimate row shows.
const ESTIMATE_KEYS: [&str; 6] = ["value", "n", "ci_low", "ci_high", "ci", "method"];

/// An estimate's value (`None`: `null`) and interval (`None`: none).
type Found = (Option<f64>, Option<(f64, f64)>);

/// The value and interval of an estimate object, if it is one.
fn estimate(o: &Map<String, Value>) -> Option<Found> {
    let value = o.get("value")?;
    if !(value.is_number() || value.is_null()) {
        return None;
    }
    let ci = match (o.get("ci_low"), o.get("ci_high"), o.get("ci")) {
        (Some(lo), Some(hi), _) => Some((lo.as_f64()?, hi.as_f64()?)),
        (_, _, Some(Value::Array(c))) if c.len() == 2 => Some((c[0].as_f64()?, c[1].as_f64()?)),
        (_, _, Some(Value::Null)) => None,
        _ if o.contains_key("n") || o.contains_key("method") => None,
        _ => return None,
    };
    Some((value.as_f64(), ci))
}

fn estimate_row(
    scope: &str,
    path: &str,
    o: &Map<String, Value>,
    (value, ci): Found,
) -> EstimateRow {
    let rate = is_rate(path);
    EstimateRow {
        scope: scope.to_string(),
        metric: path.to_string(),
        value: o["value"].clone(),
        shown: value.map_or_else(|| "–".to_string(), |v| shown(v, rate)),
        interval: ci.map_or_else(String::new, |(lo, hi)| {
            format!("[{}, {}]", shown(lo, rate), shown(hi, rate))
        }),
        n: o.get("n").and_then(Value::as_u64),
        method: o.get("method").and_then(Value::as_str).map(str::to_string),
        unit: if rate { "%" } else { "" },
    }
}

/// A value as text: strings as they are, the rest as compact JSON.
pub fn text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

fn short(s: &str) -> String {
    if s.chars().count() > 400 {
        let mut t: String = s.chars().take(400).collect();
        t.push_str(" …");
        t
    } else {
        s.to_string()
    }
}

/// An object flattened to dotted keys (settings).
pub fn flatten(v: &Value) -> Vec<KeyValue> {
    let mut out = Vec::new();
    fn go(prefix: &str, v: &Value, out: &mut Vec<KeyValue>) {
        match v {
            Value::Object(o) if !o.is_empty() => {
                for (k, x) in o {
                    let p = if prefix.is_empty() {
                        k.clone()
                    } else {
                        format!("{prefix}.{k}")
                    };
                    go(&p, x, out);
                }
            }
            _ => out.push(KeyValue {
                key: prefix.to_string(),
                value: text(v),
            }),
        }
    }
    go("", v, &mut out);
    out
}

/// report.md's warnings: the items of a `## Warnings` section and every paragraph that starts
/// with `**Warning**:` (markdown emphasis dropped, the text as written).
pub fn warnings(report_md: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut in_section = false;
    for line in report_md.lines() {
        if let Some(h) = line.strip_prefix('#') {
            in_section = h
                .trim_start_matches('#')
                .trim()
                .to_lowercase()
                .starts_with("warning");
            continue;
        }
        if let Some(rest) = line.strip_prefix("**Warning**:") {
            out.push(format!("Warning: {}", rest.trim()));
        } else if in_section {
            if let Some(item) = line.strip_prefix("- ") {
                out.push(item.trim().to_string());
            } else if line.starts_with("  ") && !out.is_empty() {
                let last = out.last_mut().expect("checked");
                last.push(' ');
                last.push_str(line.trim());
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn estimates_are_found_at_any_depth_and_the_rest_are_facts() {
        let doc = json!({
            "metrics": {"n": 3, "accuracy": {"value": 0.5, "n": 4, "ci_low": 0.25, "ci_high": 0.75},
                        "pairwise": {"note": "x", "paired_accuracy": {"value": 0.1, "n": 2, "ci_low": 0.0, "ci_high": 0.2}}},
            "groups": {"m": {"ifsm_headline": {"method": "raw", "value": 0.2637, "ci": [0.2, 0.3]},
                             "ifsm_corrected": {"dataset": {"value": null, "ci": null, "J": 0.01}},
                             "dissimilarity_micro": {"value": 0.41234, "n": 9, "ci_low": 0.4, "ci_high": 0.42}}}
        });
        let (est, facts) = metric_rows(&doc);
        let names: Vec<_> = est
            .iter()
            .map(|e| format!("{}/{}", e.scope, e.metric))
            .collect();
        assert_eq!(
            names,
            [
                "overall/accuracy",
                "overall/pairwise.paired_accuracy",
                "m/ifsm_headline",
                "m/ifsm_corrected.dataset",
                "m/dissimilarity_micro"
            ]
        );
        assert_eq!(est[0].shown, "50.0");
        assert_eq!(est[0].interval, "[25.0, 75.0]");
        assert_eq!(est[2].method.as_deref(), Some("raw"));
        assert_eq!(est[3].shown, "–");
        assert_eq!(est[4].shown, "0.412");
        assert_eq!(est[4].unit, "");
        assert!(facts
            .iter()
            .any(|f| f.key == "pairwise.note" && f.value == "x"));
        assert!(facts.iter().any(|f| f.key == "ifsm_corrected.dataset.J"));
    }

    #[test]
    fn warnings_come_from_the_section_and_the_bold_paragraphs() {
        let md = "# T\n\n**Warning**: only 2 rows\n\n## Warnings\n\n- first\n  goes on\n- second\n\n## Other\n\n- not one\n";
        assert_eq!(
            warnings(md),
            ["Warning: only 2 rows", "first goes on", "second"]
        );
    }
}
