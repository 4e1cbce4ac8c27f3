//! `scorekit grasp --semantic`: open-ended answers that the strict rule marks invalid because
//! they name no label ("reddish", "spherical", "it rolls towards the camera") are mapped to the
//! scene's labels by sentence-embedding similarity against label descriptions, with a minimum
//! similarity and a margin over the runner-up label. The result is a separate **semantic
//! accuracy** beside the paper's strict accuracy, which it never replaces.
//!
//! Plain functions over plain data: the caller embeds the texts ([`description_texts`] and the
//! answers) and passes cosine similarities; [`decide`] makes the per-item verdict, stored in the
//! item, and [`summarize`] computes every semantic number from items alone (so `scorekit merge`
//! recomputes them exactly).

use super::rules::{last_turn, open_labels, Verdict, OPEN_CHOICES};
use super::Item;
pub use scorekit_report::grasp::{RereadRow, SemanticGroup, SemanticSummary, Thresholds};
use scorekit_report::{bootstrap_mean, Estimate};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeMap;

/// Label descriptions shipped in the binary: `{scene: {label: [description, ...]}}`.
pub const LABEL_DESCRIPTIONS: &str = include_str!("../../../../data/grasp/label_descriptions.json");

/// Chosen on the hand-written cases of `tests/semantic.rs` with all-MiniLM-L6-v2 (docs/semantic.md).
pub const DEFAULT_THRESHOLDS: Thresholds = Thresholds {
    min_similarity: 0.5,
    margin: 0.08,
};

/// The semantic reading of one item the strict rule left invalid with no label named.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SemanticVerdict {
    /// The last turn that was embedded.
    pub answer: String,
    /// The accepted label; `None` when the best label is below the similarity or the margin.
    pub label: Option<String>,
    /// The most similar label.
    pub best: String,
    /// Its cosine similarity (rounded to 4 decimals; decisions use the rounded values).
    pub similarity: f64,
    /// The second most similar label.
    pub runner_up: String,
    /// Its similarity.
    pub runner_up_similarity: f64,
    /// The verdict under semantic matching: correct / false for an accepted label, else invalid.
    pub verdict: Verdict,
}

// Similarities are finite cosines rounded to 4 decimals (never NaN), so equality is total;
// `Item` derives `Eq`.
impl Eq for SemanticVerdict {}

/// Round a similarity to 4 decimals: what items.jsonl shows is what was compared.
pub fn round4(x: f64) -> f64 {
    (x * 1e4).round() / 1e4
}

/// The descriptions, flattened: `(scene, label, text)` in file order, for every scene and label
/// of the open-ended table. Panics only if the shipped file is broken (a unit test checks it).
pub fn description_texts() -> Vec<(String, String, String)> {
    let doc: BTreeMap<String, Value> =
        serde_json::from_str(LABEL_DESCRIPTIONS).expect("data/grasp/label_descriptions.json");
    let mut out = Vec::new();
    for (scene, labels) in OPEN_CHOICES {
        let entry = doc.get(*scene).and_then(Value::as_object);
        for (label, _) in labels.iter() {
            let texts = entry
                .and_then(|e| e.get(*label))
                .and_then(Value::as_array)
                .unwrap_or_else(|| panic!("label_descriptions.json lacks {scene}/{label}"));
            for t in texts {
                let t = t.as_str().expect("descriptions are strings");
                out.push((scene.to_string(), label.to_string(), t.to_string()));
            }
        }
    }
    out
}

/// Whether an item gets a semantic reading: strict verdict invalid and no label named (an
/// answer naming several labels stays invalid: similarity cannot arbitrate "not red but blue").
pub fn eligible(item: &Item) -> bool {
    item.verdict == Verdict::Invalid
        && matches!(&item.parsed, super::Parsed::Labels(l) if l.is_empty())
        && open_labels(&item.scene).is_some()
}

/// Decide one answer from the similarity of each label of its scene (any order, each label
/// once; at least two labels).
pub fn decide(answer: &str, gt: &str, sims: &[(String, f64)], th: Thresholds) -> SemanticVerdict {
    let mut ranked: Vec<(String, f64)> =
        sims.iter().map(|(l, s)| (l.clone(), round4(*s))).collect();
    // Highest first; ties by label name, so the order never depends on the input order.
    ranked.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    let (best, s1) = ranked.first().cloned().unwrap_or_default();
    let (second, s2) = ranked.get(1).cloned().unwrap_or_default();
    let accepted = s1 >= th.min_similarity && round4(s1 - s2) >= th.margin;
    let label = accepted.then(|| best.clone());
    let verdict = match &label {
        Some(l) if l == gt => Verdict::Correct,
        Some(_) => Verdict::False,
        None => Verdict::Invalid,
    };
    SemanticVerdict {
        answer: answer.to_string(),
        label,
        best,
        similarity: s1,
        runner_up: second,
        runner_up_similarity: s2,
        verdict,
    }
}

/// Per-label similarity: the highest over the label's descriptions. `desc` is
/// [`description_texts`] and `desc_vecs` their embeddings; `answer_vec` the answer's.
pub fn label_similarities(
    scene: &str,
    desc: &[(String, String, String)],
    desc_vecs: &[Vec<f32>],
    answer_vec: &[f32],
) -> Vec<(String, f64)> {
    let mut best: BTreeMap<&str, f64> = BTreeMap::new();
    for ((s, label, _), v) in desc.iter().zip(desc_vecs) {
        if s != scene {
            continue;
        }
        let sim = crate::cosine(answer_vec, v) as f64;
        let e = best.entry(label.as_str()).or_insert(f64::NEG_INFINITY);
        if sim > *e {
            *e = sim;
        }
    }
    best.into_iter().map(|(l, s)| (l.to_string(), s)).collect()
}

/// The caller's model: embeds texts, one vector per text, in input order.
pub type EmbedFn<'a, E> = dyn FnMut(&[String]) -> Result<Vec<Vec<f32>>, E> + 'a;

/// Give every [`eligible`] item its semantic reading. `answer_of(row)` is the raw response of
/// the item's row; `embed` embeds texts in order (the caller's model). The descriptions are
/// embedded once, in one call, before the answers (each distinct answer once); their vectors are
/// returned so the caller can store them beside the results.
pub fn read_answers<E>(
    items: &mut [Item],
    answer_of: &dyn Fn(usize) -> String,
    th: Thresholds,
    embed: &mut EmbedFn<'_, E>,
) -> Result<Vec<Vec<f32>>, E> {
    let desc = description_texts();
    let texts: Vec<String> = desc.iter().map(|(_, _, t)| t.clone()).collect();
    let desc_vecs = embed(&texts)?;
    let mut answers: Vec<String> = Vec::new();
    let mut index: BTreeMap<String, usize> = BTreeMap::new();
    let mut which: Vec<(usize, usize)> = Vec::new();
    for (k, item) in items.iter().enumerate() {
        if !eligible(item) {
            continue;
        }
        let answer = last_turn(&answer_of(item.row)).trim().to_string();
        if answer.is_empty() {
            continue; // nothing to read: stays invalid
        }
        let next = answers.len();
        let a = *index.entry(answer.clone()).or_insert(next);
        if a == next {
            answers.push(answer);
        }
        which.push((k, a));
    }
    if !answers.is_empty() {
        let vecs = embed(&answers)?;
        for (k, a) in which {
            let item = &mut items[k];
            let sims = label_similarities(&item.scene, &desc, &desc_vecs, &vecs[a]);
            item.semantic = Some(Box::new(decide(&answers[a], &item.gt, &sims, th)));
        }
    }
    Ok(desc_vecs)
}

/// `semantic_descriptions.json` beside the results: the model, the sha256 of the shipped
/// descriptions, and every description with its embedding (what the answers were compared with).
pub fn descriptions_file(model: &Value, dtype: &str, desc_vecs: &[Vec<f32>]) -> Vec<u8> {
    let sha = descriptions_sha256();
    let rows: Vec<Value> = description_texts()
        .into_iter()
        .zip(desc_vecs)
        .map(|((scene, label, text), v)| {
            serde_json::json!({"scene": scene, "label": label, "text": text, "embedding": v})
        })
        .collect();
    let doc = serde_json::json!({
        "model": model,
        "dtype": dtype,
        "descriptions_sha256": sha,
        "descriptions": rows,
    });
    let mut out = serde_json::to_vec(&doc).expect("json");
    out.push(b'\n');
    out
}

/// sha256 of the shipped label descriptions (recorded in settings).
pub fn descriptions_sha256() -> String {
    scorekit_report::sha256_hex(LABEL_DESCRIPTIONS.as_bytes())
}

/// The verdict of an item under semantic matching (its strict verdict when it has no reading).
pub fn verdict_of(item: &Item) -> Verdict {
    item.semantic.as_ref().map_or(item.verdict, |s| s.verdict)
}

fn group(items: &[&Item], bootstrap: usize, seed: u64) -> SemanticGroup {
    let verdicts: Vec<Verdict> = items.iter().map(|i| verdict_of(i)).collect();
    let hits: Vec<f64> = verdicts
        .iter()
        .map(|v| if *v == Verdict::Correct { 1.0 } else { 0.0 })
        .collect();
    let count = |v: Verdict| verdicts.iter().filter(|x| **x == v).count();
    SemanticGroup {
        semantic_accuracy: bootstrap_mean(&hits, bootstrap, seed).unwrap_or(Estimate {
            value: 0.0,
            n: 0,
            ci_low: 0.0,
            ci_high: 0.0,
        }),
        n: items.len(),
        correct: count(Verdict::Correct),
        wrong: count(Verdict::False),
        invalid: count(Verdict::Invalid),
        eligible: items.iter().filter(|i| i.semantic.is_some()).count(),
        changed: items.iter().filter(|i| verdict_of(i) != i.verdict).count(),
    }
}

/// Semantic accuracy overall and per test, and the changed rows; items in row order.
pub fn summarize(items: &[Item], bootstrap: usize, seed: u64) -> SemanticSummary {
    let all: Vec<&Item> = items.iter().collect();
    let mut by_test: BTreeMap<&str, Vec<&Item>> = BTreeMap::new();
    for it in items {
        by_test.entry(it.test.as_str()).or_default().push(it);
    }
    SemanticSummary {
        all: group(&all, bootstrap, seed),
        groups: by_test
            .into_iter()
            .map(|(t, v)| (t.to_string(), group(&v, bootstrap, seed)))
            .collect(),
        changed_rows: items
            .iter()
            .filter(|i| verdict_of(i) != i.verdict)
            .map(|i| i.row)
            .collect(),
    }
}

/// What goes into metrics.json `metrics.semantic` (beside, never instead of, `accuracy`).
pub fn metrics_value(s: &SemanticSummary, th: Option<Thresholds>) -> Value {
    serde_json::json!({
        "note": "NOT the GRASP paper's metric: strict-invalid answers that name no label are \
                 mapped to the scene's labels by sentence-embedding similarity (--semantic); \
                 the paper's strict accuracy is metrics.accuracy",
        "semantic_accuracy": s.all.semantic_accuracy,
        "n": s.all.n,
        "correct": s.all.correct,
        "false": s.all.wrong,
        "invalid": s.all.invalid,
        "eligible": s.all.eligible,
        "changed": s.all.changed,
        "changed_rows": s.changed_rows,
        "thresholds": th,
    })
}

/// The rows of the re-read table of report.md: every item with a semantic reading.
pub fn reread_rows(items: &[Item]) -> Vec<RereadRow> {
    items
        .iter()
        .filter_map(|i| {
            let sv = i.semantic.as_ref()?;
            Some(RereadRow {
                row: i.row,
                scene: i.scene.clone(),
                gt: i.gt.clone(),
                answer: sv.answer.clone(),
                best: sv.best.clone(),
                similarity: sv.similarity,
                runner_up: sv.runner_up.clone(),
                runner_up_similarity: sv.runner_up_similarity,
                correct: match sv.verdict {
                    Verdict::Correct => Some(true),
                    Verdict::False => Some(false),
                    Verdict::Invalid => None,
                },
                changed: verdict_of(i) != i.verdict,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sims(v: &[(&str, f64)]) -> Vec<(String, f64)> {
        v.iter().map(|(l, s)| (l.to_string(), *s)).collect()
    }

    #[test]
    fn descriptions_cover_every_open_label() {
        let d = description_texts();
        for (scene, labels) in OPEN_CHOICES {
            for (label, _) in labels.iter() {
                assert!(
                    d.iter().any(|(s, l, _)| s == scene && l == label),
                    "{scene}/{label}"
                );
            }
        }
    }

    #[test]
    fn decide_needs_similarity_and_margin() {
        let th = Thresholds {
            min_similarity: 0.5,
            margin: 0.1,
        };
        let v = decide("reddish", "red", &sims(&[("blue", 0.4), ("red", 0.7)]), th);
        assert_eq!(
            (v.label.as_deref(), v.verdict),
            (Some("red"), Verdict::Correct)
        );
        assert_eq!(
            (v.runner_up.as_str(), v.runner_up_similarity),
            ("blue", 0.4)
        );
        let v = decide("x", "blue", &sims(&[("blue", 0.4), ("red", 0.7)]), th);
        assert_eq!(v.verdict, Verdict::False);
        // Too close: stays invalid; below the minimum: stays invalid.
        let v = decide("x", "red", &sims(&[("blue", 0.65), ("red", 0.7)]), th);
        assert_eq!((v.label, v.verdict), (None, Verdict::Invalid));
        let v = decide("x", "red", &sims(&[("blue", 0.1), ("red", 0.45)]), th);
        assert_eq!(v.verdict, Verdict::Invalid);
        // Exactly at the thresholds counts (rounded values compared).
        let v = decide("x", "red", &sims(&[("blue", 0.4), ("red", 0.50000001)]), th);
        assert_eq!(v.verdict, Verdict::Correct);
    }
}
