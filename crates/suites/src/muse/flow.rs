//! MuSE queries and the gold flow annotation (dependencies between a query's tasks).

use super::is_task;
use regex::Regex;
use scorekit_core::error::InputError;
use scorekit_io::type_name;
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};

/// The reviewed flow annotation shipped with scorekit (default of `--flow`).
pub const REVIEWED_FLOW: &str = include_str!("../../../../data/muse/flow.reviewed.json");

/// One MuSE query: its gold task set and requested output.
#[derive(Debug, Clone, PartialEq)]
pub struct Query {
    /// `idx` of queries.json.
    pub idx: i64,
    /// Gold tasks, as listed (unordered).
    pub tasks: Vec<String>,
    /// Domains of the tasks.
    pub domains: Vec<String>,
    /// Input modalities, comma-joined as in the file.
    pub input_type: String,
    /// Requested output modality.
    pub output_type: String,
}

/// The gold flow of one multi-task query.
#[derive(Debug, Clone, PartialEq)]
pub struct FlowItem {
    /// Query index.
    pub idx: i64,
    /// `[src, dst]`: dst consumes the output of src.
    pub edges: Vec<(String, String)>,
    /// Tasks that run on the original input, in parallel with a chain.
    pub parallel_leaves: Vec<String>,
    /// `high`, `medium` or `low`.
    pub confidence: String,
}

/// 1-based line of the first occurrence of `needle` in `text`.
pub fn line_of(text: &str, needle: &str) -> Option<usize> {
    text.find(needle)
        .map(|p| text[..p].bytes().filter(|b| *b == b'\n').count() + 1)
}

/// 1-based line of the `"idx": N` key of the object for query `idx` (JSON documents carry no
/// per-object lines, and MuSE's files put `idx` in every object).
fn idx_line(text: &str, idx: i64) -> Option<usize> {
    let re = Regex::new(&format!(r#""idx"\s*:\s*{idx}\b"#)).expect("valid regex");
    re.find(text)
        .map(|m| text[..m.start()].bytes().filter(|b| *b == b'\n').count() + 1)
}

/// Parse a JSON document, errors located by serde's line and column.
pub fn parse_json_text(file: &str, text: &str) -> Result<Value, InputError> {
    serde_json::from_str(text.trim_start_matches('\u{feff}')).map_err(|e| {
        InputError::line(
            file,
            e.line(),
            format!("invalid JSON at column {}: {e}", e.column()),
        )
    })
}

/// An error about object number `pos` of a list, located at its `idx` line when it has one.
fn at(
    file: &str,
    text: &str,
    idx: Option<i64>,
    pos: usize,
    field: &str,
    msg: String,
) -> InputError {
    match idx.and_then(|i| idx_line(text, i)) {
        Some(line) => InputError::field(file, line, field, msg),
        None => InputError::file(file, format!("item {pos}: field \"{field}\": {msg}")),
    }
}

fn string_list(v: Option<&Value>) -> Result<Vec<String>, String> {
    match v {
        Some(Value::Array(a)) => a
            .iter()
            .map(|x| {
                x.as_str()
                    .map(str::to_string)
                    .ok_or_else(|| format!("expected a list of strings, found {}", type_name(x)))
            })
            .collect(),
        Some(x) => Err(format!(
            "expected a list of strings, found {}",
            type_name(x)
        )),
        None => Err("missing".into()),
    }
}

/// Parse MuSE's queries.json (a list of objects with idx, tasks, domains, input_type, output_type).
pub fn parse_queries(file: &str, text: &str) -> Result<Vec<Query>, InputError> {
    let doc = parse_json_text(file, text)?;
    let list = doc
        .as_array()
        .ok_or_else(|| InputError::file(file, "expected a JSON list of queries"))?;
    let mut out: Vec<Query> = Vec::with_capacity(list.len());
    let mut seen = BTreeSet::new();
    for (pos, q) in list.iter().enumerate() {
        let idx = q.get("idx").and_then(Value::as_i64);
        let e = |field: &str, msg: String| at(file, text, idx, pos, field, msg);
        let idx = idx.ok_or_else(|| e("idx", "expected an integer".into()))?;
        if !seen.insert(idx) {
            return Err(e("idx", format!("duplicate idx {idx}")));
        }
        let tasks = string_list(q.get("tasks")).map_err(|m| e("tasks", m))?;
        if tasks.is_empty() {
            return Err(e("tasks", "expected at least one task".into()));
        }
        if let Some(t) = tasks.iter().find(|t| !is_task(t)) {
            return Err(e(
                "tasks",
                format!("{t:?} is not one of MuSE's 18 task names"),
            ));
        }
        let get_str = |f: &str| {
            q.get(f)
                .and_then(Value::as_str)
                .map(str::to_string)
                .ok_or_else(|| e(f, "expected a string".into()))
        };
        out.push(Query {
            idx,
            domains: string_list(q.get("domains")).map_err(|m| e("domains", m))?,
            input_type: get_str("input_type")?,
            output_type: get_str("output_type")?,
            tasks,
        });
    }
    Ok(out)
}

/// Parse and check a flow annotation against the queries: every multi-task query has exactly
/// one item, edges and leaves name that query's gold tasks, and the edges form no cycle.
pub fn parse_flow(
    file: &str,
    text: &str,
    queries: &[Query],
) -> Result<BTreeMap<i64, FlowItem>, InputError> {
    let doc = parse_json_text(file, text)?;
    let list = doc
        .get("items")
        .and_then(Value::as_array)
        .ok_or_else(|| InputError::file(file, "expected an object with an \"items\" list"))?;
    let by_idx: BTreeMap<i64, &Query> = queries.iter().map(|q| (q.idx, q)).collect();
    let mut out = BTreeMap::new();
    for (pos, it) in list.iter().enumerate() {
        let idx = it.get("idx").and_then(Value::as_i64);
        let e = |field: &str, msg: String| at(file, text, idx, pos, field, msg);
        let idx = idx.ok_or_else(|| e("idx", "expected an integer".into()))?;
        let q = by_idx
            .get(&idx)
            .ok_or_else(|| e("idx", format!("no query with idx {idx}")))?;
        if q.tasks.len() < 2 {
            return Err(e(
                "idx",
                format!("query {idx} has one task and takes no flow"),
            ));
        }
        if let Some(listed) = it.get("tasks_as_listed") {
            let listed = string_list(Some(listed)).map_err(|m| e("tasks_as_listed", m))?;
            if listed != q.tasks {
                return Err(e(
                    "tasks_as_listed",
                    format!("{listed:?} differs from the query's tasks {:?}", q.tasks),
                ));
            }
        }
        let gold = |t: &String, field: &str| {
            if q.tasks.contains(t) {
                Ok(())
            } else {
                Err(e(field, format!("{t:?} is not a task of query {idx}")))
            }
        };
        let mut edges = Vec::new();
        let raw_edges = it
            .get("inferred_edges")
            .and_then(Value::as_array)
            .ok_or_else(|| {
                e(
                    "inferred_edges",
                    "expected a list of [src, dst] pairs".into(),
                )
            })?;
        for pair in raw_edges {
            let p = string_list(Some(pair))
                .ok()
                .filter(|p| p.len() == 2)
                .ok_or_else(|| e("inferred_edges", "expected [src, dst] task names".into()))?;
            gold(&p[0], "inferred_edges")?;
            gold(&p[1], "inferred_edges")?;
            edges.push((p[0].clone(), p[1].clone()));
        }
        let parallel_leaves = match it.get("parallel_leaves") {
            None | Some(Value::Null) => Vec::new(),
            v => string_list(v).map_err(|m| e("parallel_leaves", m))?,
        };
        for t in &parallel_leaves {
            gold(t, "parallel_leaves")?;
        }
        if let Some(c) = find_cycle(&q.tasks, &edges) {
            return Err(e(
                "inferred_edges",
                format!("the edges form a cycle through {c:?}"),
            ));
        }
        let confidence = it
            .get("confidence")
            .and_then(Value::as_str)
            .filter(|c| ["high", "medium", "low"].contains(c))
            .ok_or_else(|| {
                e(
                    "confidence",
                    "expected \"high\", \"medium\" or \"low\"".into(),
                )
            })?
            .to_string();
        let item = FlowItem {
            idx,
            edges,
            parallel_leaves,
            confidence,
        };
        if out.insert(idx, item).is_some() {
            return Err(e("idx", format!("duplicate idx {idx}")));
        }
    }
    if let Some(q) = queries
        .iter()
        .find(|q| q.tasks.len() > 1 && !out.contains_key(&q.idx))
    {
        return Err(InputError::file(
            file,
            format!("no flow item for multi-task query idx {}", q.idx),
        ));
    }
    Ok(out)
}

/// A node on a cycle of `edges` over `nodes`, if there is one (Kahn's algorithm).
pub fn find_cycle<T: Ord + Clone>(nodes: &[T], edges: &[(T, T)]) -> Option<T> {
    let mut indeg: BTreeMap<&T, usize> = nodes.iter().map(|n| (n, 0)).collect();
    for (_, b) in edges {
        *indeg.entry(b).or_default() += 1;
    }
    let mut ready: Vec<&T> = indeg
        .iter()
        .filter(|(_, d)| **d == 0)
        .map(|(n, _)| *n)
        .collect();
    while let Some(n) = ready.pop() {
        for (a, b) in edges {
            if a == n {
                let d = indeg.get_mut(b).expect("counted");
                *d -= 1;
                if *d == 0 {
                    ready.push(b);
                }
            }
        }
        indeg.remove(n);
    }
    indeg.keys().next().map(|n| (*n).clone())
}

#[cfg(test)]
mod tests {
    use super::*;

    const QUERIES: &str = r#"[
 {"idx": 0, "tasks": ["text-to-audio"], "domains": ["audio"], "input_type": "text", "output_type": "audio"},
 {"idx": 1, "tasks": ["automatic-speech-recognition", "text-to-image"], "domains": ["audio", "image_generation"],
  "input_type": "audio", "output_type": "image"}
]"#;

    #[test]
    fn the_shipped_flow_covers_the_real_queries() {
        let path = scorekit_data::testdata::file("muse:queries", "MuSE_Benchmark/queries.json");
        let text = std::fs::read_to_string(path).unwrap();
        let qs = parse_queries("queries.json", &text).unwrap();
        assert_eq!(qs.len(), 100);
        let flow = parse_flow("flow", REVIEWED_FLOW, &qs).unwrap();
        assert_eq!(flow.len(), 75);
        assert_eq!(flow.values().map(|f| f.edges.len()).sum::<usize>(), 88);
        assert_eq!(flow[&86].parallel_leaves, ["translation-xx-to-yy"]);
    }

    #[test]
    fn flow_errors_name_the_line_of_the_item() {
        let qs = parse_queries("q.json", QUERIES).unwrap();
        let bad = "{\"items\": [\n {\"idx\": 1, \"confidence\": \"high\",\n  \"inferred_edges\": [[\"text-to-image\", \"automatic-speech-recognition\"], [\"automatic-speech-recognition\", \"text-to-image\"]]}\n]}";
        let e = parse_flow("f.json", bad, &qs).unwrap_err();
        assert_eq!(e.line, Some(2));
        assert!(e.to_string().contains("cycle"), "{e}");
        let missing = "{\"items\": []}";
        assert!(parse_flow("f.json", missing, &qs)
            .unwrap_err()
            .to_string()
            .contains("idx 1"));
        let unknown = "{\"items\": [\n{\"idx\": 1, \"confidence\": \"high\", \"inferred_edges\": [[\"text-to-image\", \"text-generation\"]]}]}";
        assert_eq!(
            parse_flow("f.json", unknown, &qs).unwrap_err().to_string(),
            "f.json:2: field \"inferred_edges\": \"text-generation\" is not a task of query 1"
        );
    }

    #[test]
    fn queries_reject_unknown_tasks() {
        let bad = QUERIES.replace("\"text-to-audio\"]", "\"tts\"]");
        let e = parse_queries("q.json", &bad).unwrap_err();
        assert_eq!(e.line, Some(2));
        assert_eq!(e.field.as_deref(), Some("tasks"));
    }
}
