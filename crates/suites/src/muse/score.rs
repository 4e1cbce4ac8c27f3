//! Per-query verdicts: TS, FoT and O for one plan against one query and its gold flow.

use super::aliases::{AliasTable, Mapped};
use super::flow::{FlowItem, Query};
use super::output_modality;
use super::plans::Plan;
use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;

/// A gold dependency the plan does not keep.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Violation {
    /// The gold producer.
    pub from: String,
    /// The gold consumer.
    pub to: String,
    /// `missing` (the consumer does not depend on the producer) or `reversed` (the producer
    /// depends on the consumer).
    pub kind: String,
}

/// One scored query: the line of items.jsonl. Metrics are computed from these alone.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Item {
    /// 1-based position of the plan among the plans file's records; `None` when the query has no plan.
    pub row: Option<usize>,
    /// Line of the plan in the plans file.
    pub plan_line: Option<usize>,
    /// Query index.
    pub idx: i64,
    /// Number of gold tasks (1, 2 or 3).
    pub n_tasks: usize,
    /// The query's domains.
    pub domains: Vec<String>,
    /// `input_type->output_type` as in queries.json.
    pub modality: String,
    /// Confidence of the gold flow (`high`, `medium`, `low`), `None` for one-task queries.
    pub flow_confidence: Option<String>,
    /// Gold tasks as listed.
    pub gold_tasks: Vec<String>,
    /// Gold dependencies `[src, dst]`.
    pub gold_edges: Vec<[String; 2]>,
    /// True when no plan was given for this query (scored 0).
    pub missing_plan: bool,
    /// Why the planner's response could not be read as a plan (scored 0: TS, FoT and the rule's
    /// O are false).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plan_error: Option<String>,
    /// Format the plan was read as.
    pub format: Option<String>,
    /// Every predicted task name, in plan order, with its MuSE mapping.
    pub mapped: Vec<Mapped>,
    /// The set of predicted MuSE tasks (duplicates collapse; unknown names excluded).
    pub predicted_tasks: Vec<String>,
    /// Predicted names that map to no MuSE task (they count as extra for TS).
    pub unknown_names: Vec<String>,
    /// Gold tasks the plan lacks.
    pub missing_tasks: Vec<String>,
    /// Predicted MuSE tasks not in the gold set.
    pub extra_tasks: Vec<String>,
    /// Direct predicted dependencies between MuSE tasks `[src, dst]`.
    pub predicted_edges: Vec<[String; 2]>,
    /// Gold dependencies the plan breaks (only where both tasks were predicted).
    pub violated_dependencies: Vec<Violation>,
    /// Modalities of the plan's final output (recorded outputs, else its sink steps).
    pub final_outputs: Vec<String>,
    /// The output modality the query asks for.
    pub requested_output: String,
    /// True when queries.json's output_type contradicts the gold tasks and the gold sinks' modality was used.
    pub output_type_corrected: bool,
    /// Task Selection.
    pub ts: bool,
    /// Flow of Thought.
    pub fot: bool,
    /// Final Output as scored (`None` when verdicts were given but none for this query).
    pub o: Option<bool>,
    /// Final Output by scorekit's modality rule, kept even when verdicts override it.
    pub o_rule: bool,
    /// `rule`, `verdict`, or `none` (verdicts given, none for this query).
    pub o_source: String,
    /// `--embedder`: how the plan's unknown task names were matched by embeddings (accepted
    /// ones are counted as their MuSE task in `mapped`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub name_matches: Vec<scorekit_report::muse::NameMatch>,
}

fn sorted(set: impl IntoIterator<Item = String>) -> Vec<String> {
    set.into_iter()
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect()
}

/// The modality the query asks for. MuSE has two queries whose output_type contradicts their
/// tasks (idx 13, 74): when no gold sink yields output_type and the sinks agree on one
/// modality, that modality is used and the item is flagged.
fn requested_output(q: &Query, flow: Option<&FlowItem>) -> (String, bool) {
    let sinks: BTreeSet<&str> = q
        .tasks
        .iter()
        .filter(|t| !flow.is_some_and(|f| f.edges.iter().any(|(a, _)| a == *t)))
        .filter_map(|t| output_modality(t))
        .collect();
    if sinks.contains(q.output_type.as_str()) || sinks.len() != 1 {
        (q.output_type.clone(), false)
    } else {
        (sinks.into_iter().next().expect("one").to_string(), true)
    }
}

/// Score one query. `verdict`: `None` without a verdicts file; `Some(v)` with one, where `v` is
/// this query's verdict if it has one.
pub fn score_query(
    q: &Query,
    flow: Option<&FlowItem>,
    plan: Option<&Plan>,
    aliases: &AliasTable,
    verdict: Option<Option<bool>>,
) -> Item {
    let gold_edges: Vec<[String; 2]> = flow
        .map(|f| {
            f.edges
                .iter()
                .map(|(a, b)| [a.clone(), b.clone()])
                .collect()
        })
        .unwrap_or_default();
    let (requested, corrected) = requested_output(q, flow);
    let mut item = Item {
        row: plan.map(|p| p.row),
        plan_line: plan.map(|p| p.line),
        idx: q.idx,
        n_tasks: q.tasks.len(),
        domains: q.domains.clone(),
        modality: format!("{}->{}", q.input_type, q.output_type),
        flow_confidence: flow.map(|f| f.confidence.clone()),
        gold_tasks: q.tasks.clone(),
        gold_edges,
        missing_plan: plan.is_none(),
        plan_error: plan.and_then(|p| p.error.clone()),
        format: plan.and_then(|p| p.format).map(|f| f.name().to_string()),
        mapped: Vec::new(),
        predicted_tasks: Vec::new(),
        unknown_names: Vec::new(),
        missing_tasks: q.tasks.clone(),
        extra_tasks: Vec::new(),
        predicted_edges: Vec::new(),
        violated_dependencies: Vec::new(),
        final_outputs: Vec::new(),
        requested_output: requested,
        output_type_corrected: corrected,
        ts: false,
        fot: false,
        o: None,
        o_rule: false,
        o_source: String::new(),
        name_matches: Vec::new(),
    };
    if let Some(plan) = plan.filter(|p| p.error.is_none()) {
        judge(&mut item, q, plan, aliases);
    }
    (item.o, item.o_source) = match verdict {
        None => (Some(item.o_rule), "rule".into()),
        Some(Some(v)) => (Some(v), "verdict".into()),
        Some(None) => (None, "none".into()),
    };
    item
}

fn judge(item: &mut Item, q: &Query, plan: &Plan, aliases: &AliasTable) {
    let names: Vec<Vec<String>> = plan.nodes.iter().map(|n| n.names.clone()).collect();
    let mapped = aliases.map_plan(&names, &q.tasks);
    let musenames: Vec<BTreeSet<String>> = mapped
        .iter()
        .map(|r| r.iter().filter_map(|m| m.muse.clone()).collect())
        .collect();
    let predicted: BTreeSet<String> = musenames.iter().flatten().cloned().collect();
    item.unknown_names = mapped
        .iter()
        .flatten()
        .filter(|m| m.muse.is_none())
        .map(|m| m.raw.clone())
        .collect();
    item.missing_tasks = q
        .tasks
        .iter()
        .filter(|t| !predicted.contains(*t))
        .cloned()
        .collect();
    item.extra_tasks = predicted
        .iter()
        .filter(|t| !q.tasks.contains(t))
        .cloned()
        .collect();
    item.mapped = mapped.into_iter().flatten().collect();
    item.predicted_tasks = predicted.iter().cloned().collect();
    // Set semantics: a repeated task is one task; an unknown name is a task MuSE did not ask for.
    item.ts = item.missing_tasks.is_empty()
        && item.extra_tasks.is_empty()
        && item.unknown_names.is_empty();

    let n = plan.nodes.len();
    let pos = |id: &String| {
        plan.nodes
            .iter()
            .position(|m| &m.id == id)
            .expect("checked ids")
    };
    let parents: Vec<Vec<usize>> = plan
        .nodes
        .iter()
        .map(|m| m.deps.iter().map(pos).collect())
        .collect();
    // reach[v] = the steps v depends on, directly or transitively (plans are small).
    let mut reach: Vec<BTreeSet<usize>> = vec![BTreeSet::new(); n];
    for (v, r) in reach.iter_mut().enumerate() {
        let mut stack = parents[v].clone();
        while let Some(u) = stack.pop() {
            if r.insert(u) {
                stack.extend(parents[u].iter().copied());
            }
        }
    }
    let depends = |b: &str, a: &str| {
        (0..n)
            .any(|v| musenames[v].contains(b) && reach[v].iter().any(|u| musenames[*u].contains(a)))
    };
    let mut edges = BTreeSet::new();
    for v in 0..n {
        for u in &parents[v] {
            for a in &musenames[*u] {
                for b in &musenames[v] {
                    edges.insert([a.clone(), b.clone()]);
                }
            }
        }
    }
    item.predicted_edges = edges.into_iter().collect();
    for [a, b] in &item.gold_edges {
        if !(predicted.contains(a) && predicted.contains(b)) {
            continue;
        }
        let kind = if depends(a, b) {
            "reversed"
        } else if !depends(b, a) {
            "missing"
        } else {
            continue;
        };
        item.violated_dependencies.push(Violation {
            from: a.clone(),
            to: b.clone(),
            kind: kind.into(),
        });
    }
    item.fot = item.ts && item.violated_dependencies.is_empty();

    item.final_outputs = match &plan.outputs {
        Some(o) if !o.is_empty() => sorted(o.iter().cloned()),
        _ => sorted(
            (0..n)
                .filter(|u| !parents.iter().any(|p| p.contains(u)))
                .flat_map(|u| {
                    let node = &plan.nodes[u];
                    if node.returns.is_empty() {
                        musenames[u]
                            .iter()
                            .filter_map(|t| output_modality(t))
                            .map(str::to_string)
                            .collect()
                    } else {
                        node.returns.clone()
                    }
                }),
        ),
    };
    item.o_rule =
        item.missing_tasks.is_empty() && item.final_outputs.contains(&item.requested_output);
}

#[cfg(test)]
mod tests {
    use super::super::plans::{Node, PlanFormat};
    use super::*;

    fn query(idx: i64, tasks: &[&str], out: &str) -> Query {
        Query {
            idx,
            tasks: tasks.iter().map(|s| s.to_string()).collect(),
            domains: vec![],
            input_type: "text".into(),
            output_type: out.into(),
        }
    }

    fn plan(steps: &[(&str, &str, &[&str])]) -> Plan {
        Plan {
            idx: 0,
            line: 1,
            row: 1,
            format: Some(PlanFormat::Scorekit),
            nodes: steps
                .iter()
                .map(|(id, t, d)| Node {
                    id: id.to_string(),
                    names: vec![t.to_string()],
                    deps: d.iter().map(|s| s.to_string()).collect(),
                    returns: vec![],
                })
                .collect(),
            outputs: None,
            error: None,
        }
    }

    // idx 96: ASR -> translation -> abstract summary, output text.
    fn q96() -> (Query, FlowItem) {
        let q = query(
            96,
            &[
                "abstract-summarisation",
                "automatic-speech-recognition",
                "translation-xx-to-yy",
            ],
            "text",
        );
        let f = FlowItem {
            idx: 96,
            edges: vec![
                (
                    "automatic-speech-recognition".into(),
                    "translation-xx-to-yy".into(),
                ),
                (
                    "translation-xx-to-yy".into(),
                    "abstract-summarisation".into(),
                ),
            ],
            parallel_leaves: vec![],
            confidence: "high".into(),
        };
        (q, f)
    }

    #[test]
    fn gold_chain_scores_one_and_transitive_dependencies_hold() {
        let (q, f) = q96();
        let a = AliasTable::shipped();
        let p = plan(&[
            ("0", "automatic-speech-recognition", &[]),
            ("1", "translation", &["0"]),
            ("2", "summarization", &["1"]),
        ]);
        let it = score_query(&q, Some(&f), Some(&p), &a, None);
        assert!(it.ts && it.fot && it.o == Some(true), "{it:?}");
        // Summary depending on ASR directly and on translation: still consistent with the gold chain.
        let p = plan(&[
            ("0", "automatic-speech-recognition", &[]),
            ("1", "translation", &["0"]),
            ("2", "summarization", &["0", "1"]),
        ]);
        assert!(score_query(&q, Some(&f), Some(&p), &a, None).fot);
    }

    #[test]
    fn reversed_and_parallel_steps_break_fot_only() {
        let (q, f) = q96();
        let a = AliasTable::shipped();
        let p = plan(&[
            ("0", "automatic-speech-recognition", &[]),
            ("1", "abstract-summarisation", &["0"]),
            ("2", "translation-xx-to-yy", &["1"]),
        ]);
        let it = score_query(&q, Some(&f), Some(&p), &a, None);
        assert!(it.ts && !it.fot && it.o == Some(true));
        assert_eq!(it.violated_dependencies.len(), 1);
        assert_eq!(it.violated_dependencies[0].kind, "reversed");
        let p = plan(&[
            ("0", "automatic-speech-recognition", &[]),
            ("1", "translation-xx-to-yy", &[]),
            ("2", "abstract-summarisation", &["1"]),
        ]);
        let it = score_query(&q, Some(&f), Some(&p), &a, None);
        assert_eq!(it.violated_dependencies[0].kind, "missing");
        assert!(!it.fot);
    }

    #[test]
    fn output_type_defects_are_corrected_from_the_gold_sinks() {
        // idx 13: text-to-image with output_type audio.
        let q = query(13, &["text-to-image"], "audio");
        let it = score_query(
            &q,
            None,
            Some(&plan(&[("0", "text-to-image", &[])])),
            &AliasTable::shipped(),
            None,
        );
        assert_eq!(
            (it.requested_output.as_str(), it.output_type_corrected),
            ("image", true)
        );
        assert!(it.o_rule && it.fot && it.ts);
    }

    #[test]
    fn missing_plan_scores_zero_and_verdicts_override() {
        let (q, f) = q96();
        let it = score_query(&q, Some(&f), None, &AliasTable::shipped(), Some(Some(true)));
        assert!(it.missing_plan && !it.ts && !it.fot && !it.o_rule);
        assert_eq!((it.o, it.o_source.as_str()), (Some(true), "verdict"));
        let it = score_query(&q, Some(&f), None, &AliasTable::shipped(), Some(None));
        assert_eq!((it.o, it.o_source.as_str()), (None, "none"));
    }
}
