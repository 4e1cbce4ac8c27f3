//! `scorekit muse --embedder`: task names that are neither MuSE names nor in the alias table
//! (planners invent names: "speech-to-text", "image-generation") are matched to MuSE's 18
//! tasks by sentence-embedding similarity against task descriptions. A match above the minimum
//! similarity and the margin over the runner-up task counts as that task; every match is
//! recorded in the items and listed in the report (and as a ready `--aliases` file) for the
//! user to confirm.
//!
//! Plain functions over plain data: the caller embeds [`description_texts`] and the
//! [`name_text`] of each unknown name, and passes similarities to [`decide`].

use super::aliases::{normalize, AliasTable};
use super::plans::Plan;
use super::score::Item;
use super::TASKS;
pub use scorekit_report::muse::{NameMatch, NameUse, Thresholds};
use serde_json::{json, Value};
use std::collections::{BTreeMap, BTreeSet};

/// Task descriptions shipped in the binary: `{task: [description, ...]}`.
pub const TASK_DESCRIPTIONS: &str = include_str!("../../../../data/muse/task_descriptions.json");

/// Chosen on the hand-written cases of `tests/semantic.rs` with all-MiniLM-L6-v2 (docs/semantic.md).
pub const DEFAULT_THRESHOLDS: Thresholds = Thresholds {
    min_similarity: 0.72,
    margin: 0.05,
};

fn round4(x: f64) -> f64 {
    (x * 1e4).round() / 1e4
}

/// `(task, text)` for every description, tasks in MuSE's order. Panics only if the shipped file
/// is broken (a unit test checks it).
pub fn description_texts() -> Vec<(String, String)> {
    let doc: BTreeMap<String, Value> =
        serde_json::from_str(TASK_DESCRIPTIONS).expect("data/muse/task_descriptions.json");
    let mut out = Vec::new();
    for (task, _, _) in TASKS {
        let texts = doc
            .get(task)
            .and_then(Value::as_array)
            .unwrap_or_else(|| panic!("task_descriptions.json lacks {task}"));
        for t in texts {
            out.push((task.to_string(), t.as_str().expect("strings").to_string()));
        }
    }
    out
}

/// The text embedded for a task name: `-`, `_`, `/`, `.` and camelCase boundaries as spaces,
/// lower case (`speech-to-text` -> `speech to text`, `ImageGeneration` -> `image generation`).
pub fn name_text(raw: &str) -> String {
    let mut out = String::new();
    let mut prev_lower = false;
    for c in raw.trim().chars() {
        if matches!(c, '-' | '_' | '/' | '.' | ':') || c.is_whitespace() {
            out.push(' ');
            prev_lower = false;
            continue;
        }
        if c.is_uppercase() && prev_lower {
            out.push(' ');
        }
        prev_lower = c.is_lowercase() || c.is_ascii_digit();
        out.extend(c.to_lowercase());
    }
    out.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Every plan step name that the alias table cannot map, once per normalised form (the first
/// spelling seen, so that camelCase survives for [`name_text`]), sorted by normalised form.
pub fn unknown_names<'a>(
    plans: impl IntoIterator<Item = &'a Plan>,
    aliases: &AliasTable,
) -> Vec<String> {
    let mut out: BTreeMap<String, String> = BTreeMap::new();
    for p in plans {
        for node in &p.nodes {
            for n in &node.names {
                if aliases.candidates(n).is_none() && !n.trim().is_empty() {
                    out.entry(normalize(n)).or_insert_with(|| n.clone());
                }
            }
        }
    }
    out.into_values().collect()
}

/// Decide one name from the similarity of each task (each task once).
pub fn decide(name: &str, text: &str, sims: &[(String, f64)], th: Thresholds) -> NameMatch {
    let mut ranked: Vec<(String, f64)> =
        sims.iter().map(|(t, s)| (t.clone(), round4(*s))).collect();
    ranked.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    let (best, s1) = ranked.first().cloned().unwrap_or_default();
    let (second, s2) = ranked.get(1).cloned().unwrap_or_default();
    let accepted = s1 >= th.min_similarity && round4(s1 - s2) >= th.margin;
    NameMatch {
        name: name.to_string(),
        text: text.to_string(),
        task: accepted.then(|| best.clone()),
        best,
        similarity: s1,
        runner_up: second,
        runner_up_similarity: s2,
    }
}

/// Per-task similarity, the highest over the task's descriptions.
pub fn task_similarities(
    desc: &[(String, String)],
    desc_vecs: &[Vec<f32>],
    name_vec: &[f32],
) -> Vec<(String, f64)> {
    let mut best: BTreeMap<&str, f64> = BTreeMap::new();
    for ((task, _), v) in desc.iter().zip(desc_vecs) {
        let sim = crate::cosine(name_vec, v) as f64;
        let e = best.entry(task.as_str()).or_insert(f64::NEG_INFINITY);
        if sim > *e {
            *e = sim;
        }
    }
    best.into_iter().map(|(t, s)| (t.to_string(), s)).collect()
}

/// The caller's model: embeds texts, one vector per text, in input order.
pub type EmbedFn<'a, E> = dyn FnMut(&[String]) -> Result<Vec<Vec<f32>>, E> + 'a;

/// Match every name (as the plan spells it): embed the task descriptions once (one call), then the names (one call),
/// and decide each. `embed` is the caller's model. Returns the matches and the description
/// vectors (for the caller to store beside the results).
pub fn match_names<E>(
    names: &[String],
    th: Thresholds,
    embed: &mut EmbedFn<'_, E>,
) -> Result<(Vec<NameMatch>, Vec<Vec<f32>>), E> {
    let desc = description_texts();
    let texts: Vec<String> = desc.iter().map(|(_, t)| t.clone()).collect();
    let desc_vecs = embed(&texts)?;
    if names.is_empty() {
        return Ok((Vec::new(), desc_vecs));
    }
    let name_texts: Vec<String> = names.iter().map(|n| name_text(n)).collect();
    let vecs = embed(&name_texts)?;
    let matches = names
        .iter()
        .zip(&name_texts)
        .zip(&vecs)
        .map(|((n, t), v)| {
            decide(
                &normalize(n),
                t,
                &task_similarities(&desc, &desc_vecs, v),
                th,
            )
        })
        .collect();
    Ok((matches, desc_vecs))
}

/// sha256 of the shipped task descriptions (recorded in settings).
pub fn descriptions_sha256() -> String {
    scorekit_report::sha256_hex(TASK_DESCRIPTIONS.as_bytes())
}

/// `semantic_descriptions.json` beside the results: the model, the sha256 of the shipped
/// descriptions, and every description with its embedding.
pub fn descriptions_file(model: &Value, dtype: &str, desc_vecs: &[Vec<f32>]) -> Vec<u8> {
    let rows: Vec<Value> = description_texts()
        .into_iter()
        .zip(desc_vecs)
        .map(|((task, text), v)| json!({"task": task, "text": text, "embedding": v}))
        .collect();
    let doc = json!({
        "model": model,
        "dtype": dtype,
        "descriptions_sha256": descriptions_sha256(),
        "descriptions": rows,
    });
    let mut out = serde_json::to_vec(&doc).expect("json");
    out.push(b'\n');
    out
}

/// Add every accepted match to the alias table (as a plain alias: one MuSE task).
pub fn apply(aliases: &mut AliasTable, matches: &[NameMatch]) {
    for m in matches {
        if let Some(t) = &m.task {
            aliases.insert(&m.name, vec![t.clone()]);
        }
    }
}

/// Record on the item every match (accepted or not) of a name its plan uses.
pub fn annotate(item: &mut Item, matches: &BTreeMap<String, NameMatch>) {
    let mut seen = BTreeSet::new();
    item.name_matches = item
        .mapped
        .iter()
        .filter_map(|m| matches.get(&normalize(&m.raw)))
        .filter(|m| seen.insert(m.name.clone()))
        .cloned()
        .collect();
}

/// Distinct matched and unmatched names over the items (name order).
pub fn name_uses(items: &[Item]) -> (Vec<NameUse>, Vec<NameUse>) {
    let mut by_name: BTreeMap<&str, NameUse> = BTreeMap::new();
    for it in items {
        for m in &it.name_matches {
            by_name
                .entry(m.name.as_str())
                .or_insert_with(|| NameUse {
                    matched: m.clone(),
                    queries: Vec::new(),
                })
                .queries
                .push(it.idx);
        }
    }
    by_name
        .into_values()
        .partition(|u| u.matched.task.is_some())
}

/// metrics.json `metrics.embedding_matches`: what the embedder decided, for the user to confirm.
pub fn metrics_value(items: &[Item], th: Option<Thresholds>) -> Value {
    let (matched, unmatched) = name_uses(items);
    json!({
        "note": "task names matched to MuSE tasks by sentence-embedding similarity (--embedder); \
                 confirm them, then make them aliases (suggested_aliases.json)",
        "thresholds": th,
        "matched": matched,
        "unmatched": unmatched,
        "n_queries_with_matches": items.iter().filter(|i| i.name_matches.iter().any(|m| m.task.is_some())).count(),
    })
}

/// `suggested_aliases.json`: the accepted matches in the `--aliases` format.
pub fn suggested_aliases(items: &[Item]) -> String {
    let (matched, _) = name_uses(items);
    let mut obj = serde_json::Map::new();
    obj.insert(
        "_note".into(),
        json!("made by scorekit muse --embedder; check every entry, then pass with --aliases"),
    );
    for u in matched {
        obj.insert(u.matched.name.clone(), json!(u.matched.task));
    }
    serde_json::to_string_pretty(&Value::Object(obj)).expect("json") + "\n"
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn descriptions_cover_the_18_tasks() {
        let d = description_texts();
        for (task, _, _) in TASKS {
            assert!(d.iter().any(|(t, _)| t == task), "{task}");
        }
    }

    #[test]
    fn name_texts() {
        assert_eq!(name_text("speech-to-text"), "speech to text");
        assert_eq!(name_text("ImageGeneration"), "image generation");
        assert_eq!(name_text(" text_to_SPEECH "), "text to speech");
        assert_eq!(name_text("ocr/v2"), "ocr v2");
    }

    #[test]
    fn decide_needs_similarity_and_margin() {
        let th = Thresholds {
            min_similarity: 0.6,
            margin: 0.05,
        };
        let s = |v: &[(&str, f64)]| -> Vec<(String, f64)> {
            v.iter().map(|(a, b)| (a.to_string(), *b)).collect()
        };
        let m = decide(
            "a",
            "a",
            &s(&[("text-to-image", 0.8), ("image-captioning", 0.6)]),
            th,
        );
        assert_eq!(m.task.as_deref(), Some("text-to-image"));
        let m = decide(
            "a",
            "a",
            &s(&[("text-to-image", 0.8), ("image-captioning", 0.78)]),
            th,
        );
        assert_eq!(m.task, None);
        let m = decide(
            "a",
            "a",
            &s(&[("text-to-image", 0.5), ("image-captioning", 0.1)]),
            th,
        );
        assert_eq!((m.task, m.best.as_str()), (None, "text-to-image"));
    }
}
