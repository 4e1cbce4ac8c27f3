//! Planner outputs in four formats (HuggingGPT, ControlLLM, scorekit, PDDL), parsed into one
//! plan shape.
//!
//! Two kinds of failure: a line that is not a JSON object or has no integer `idx` is bad input
//! (an [`InputError`], exit 2); a planner response that cannot be read as a plan (no list of
//! steps, a cycle, a dependency on an unknown step, an empty plan, ...) is the planner's failure,
//! kept in [`Plan::error`] and scored 0.

use super::flow::find_cycle;
pub use super::node::Node;
use regex::Regex;
use scorekit_core::error::InputError;
use scorekit_io::{type_name, Record};
use serde_json::{Map, Value};
use std::collections::BTreeSet;
use std::sync::OnceLock;

/// A plan format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PlanFormat {
    /// `[{task, id, dep, args}]`, edges from `dep` and `<GENERATED>-k` references.
    Hugginggpt,
    /// `<Solution>[{description, task, id, dep, args, returns}]</Solution>`.
    Controlllm,
    /// `{"idx", "tasks": [{"id", "task", "dep"}], "outputs": [{"modality", "path"}]}`.
    Scorekit,
    /// `{"idx", "pddl": "<plan>"}`: a classical planner's plan over MuSE's PDDL domains.
    Pddl,
}

impl PlanFormat {
    /// The name used on the command line and in items.jsonl.
    pub fn name(self) -> &'static str {
        match self {
            PlanFormat::Hugginggpt => "hugginggpt",
            PlanFormat::Controlllm => "controlllm",
            PlanFormat::Scorekit => "scorekit",
            PlanFormat::Pddl => "pddl",
        }
    }
}

/// One planner's plan for one query.
#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    /// Query index.
    pub idx: i64,
    /// 1-based line in the plans file.
    pub line: usize,
    /// 1-based position among the plans file's records.
    pub row: usize,
    /// The format the line was read as (`None` when auto-detection found no plan at all).
    pub format: Option<PlanFormat>,
    /// The steps, in the plan's order (empty when the plan could not be read).
    pub nodes: Vec<Node>,
    /// Final outputs the run recorded (scorekit format), as modalities; `None` when not given.
    pub outputs: Option<Vec<String>>,
    /// Why the planner's response could not be read as a plan (the query then scores 0).
    pub error: Option<String>,
}

fn solution_re() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| Regex::new(r"(?s)<Solution>(.*)</Solution>").expect("valid regex"))
}

fn generated_re() -> &'static Regex {
    // `<GENERATED-0>` is the malformed spelling of HuggingGPT's own few-shot demos.
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| Regex::new(r"<GENERATED>-(\d+)|<GENERATED-(\d+)>").expect("valid regex"))
}

/// String fields that may hold a planner's raw response.
const RESPONSE_FIELDS: [&str; 3] = ["response", "solution", "tasks"];

/// Which format a plan line is in: a `pddl` field means PDDL; a `<Solution>` block or
/// `returns`/`description` steps mean ControlLLM; `args` steps or a raw response string (in
/// `tasks` or `response`) mean HuggingGPT; otherwise scorekit. An error here is the planner's
/// (no plan in any known shape).
pub fn detect(rec: &Record) -> Result<PlanFormat, InputError> {
    let obj = rec.object()?;
    if obj.contains_key("pddl") {
        return Ok(PlanFormat::Pddl);
    }
    for f in RESPONSE_FIELDS {
        if let Some(Value::String(s)) = obj.get(f) {
            if s.contains("<Solution>") {
                return Ok(PlanFormat::Controlllm);
            }
        }
    }
    match obj.get("tasks") {
        Some(Value::String(_)) => Ok(PlanFormat::Hugginggpt),
        None if matches!(obj.get("response"), Some(Value::String(_))) => {
            Ok(PlanFormat::Hugginggpt)
        }
        Some(Value::Array(a)) => {
            let has = |k: &str| a.iter().any(|t| t.get(k).is_some());
            Ok(if has("returns") || has("description") {
                PlanFormat::Controlllm
            } else if has("args") {
                PlanFormat::Hugginggpt
            } else {
                PlanFormat::Scorekit
            })
        }
        Some(v) => Err(rec.field_error(
            "tasks",
            format!("expected a list of steps or a planner response string, found {}", type_name(v)),
        )),
        None => Err(rec.field_error(
            "tasks",
            "missing (expected a list of steps, a HuggingGPT response string, or a ControlLLM <Solution> in \"response\")",
        )),
    }
}

/// The list of steps: a JSON list, or a JSON list inside a response string.
fn steps(rec: &Record, format: PlanFormat) -> Result<(Vec<Value>, &'static str), InputError> {
    let obj = rec.object()?;
    if format == PlanFormat::Controlllm {
        let mut response = None;
        for f in RESPONSE_FIELDS {
            if let Some(Value::String(s)) = obj.get(f) {
                response.get_or_insert(f);
                let Some(m) = solution_re().captures(s) else {
                    continue;
                };
                return parse_list(rec, f, m.get(1).expect("group").as_str()).map(|l| (l, f));
            }
        }
        if let (Some(f), None | Some(Value::String(_))) = (response, obj.get("tasks")) {
            return Err(rec.field_error(f, "no <Solution>…</Solution> block in the response"));
        }
    }
    match obj.get("tasks") {
        Some(Value::Array(a)) => Ok((a.clone(), "tasks")),
        Some(Value::String(s)) if format == PlanFormat::Hugginggpt => {
            parse_list(rec, "tasks", s).map(|l| (l, "tasks"))
        }
        None if format == PlanFormat::Hugginggpt
            && matches!(obj.get("response"), Some(Value::String(_))) =>
        {
            let s = obj.get("response").and_then(Value::as_str).unwrap_or("");
            parse_list(rec, "response", s).map(|l| (l, "response"))
        }
        Some(v) => Err(rec.field_error(
            "tasks",
            format!(
                "expected a list of steps for the {} format, found {}",
                format.name(),
                type_name(v)
            ),
        )),
        None => Err(rec.field_error("tasks", "missing")),
    }
}

/// Parse a JSON list from planner text, tolerating prose around it (first `[` to last `]`).
fn parse_list(rec: &Record, field: &str, s: &str) -> Result<Vec<Value>, InputError> {
    let attempt = serde_json::from_str::<Value>(s.trim()).ok().or_else(|| {
        let (a, b) = (s.find('[')?, s.rfind(']')?);
        serde_json::from_str::<Value>(s.get(a..=b)?).ok()
    });
    match attempt {
        Some(Value::Array(a)) => Ok(a),
        _ => Err(rec.field_error(
            field,
            "the planner response holds no parseable JSON list of steps",
        )),
    }
}

fn id_text(v: &Value) -> Option<String> {
    match v {
        Value::Number(n) if n.is_i64() => Some(n.to_string()),
        Value::String(s) if !s.is_empty() => Some(s.clone()),
        _ => None,
    }
}

/// Every string in a value, keys included (ControlLLM's prompt format puts values in keys).
fn strings<'a>(v: &'a Value, out: &mut Vec<&'a str>) {
    match v {
        Value::String(s) => out.push(s),
        Value::Array(a) => a.iter().for_each(|x| strings(x, out)),
        Value::Object(o) => o.iter().for_each(|(k, x)| {
            out.push(k);
            strings(x, out)
        }),
        _ => {}
    }
}

/// Declared output types of a ControlLLM step: `{"<GENERATED>-0": "image"}` or `[{"type": "image"}]`.
fn returns(v: Option<&Value>) -> Vec<String> {
    let mut out: Vec<String> = match v {
        Some(Value::Object(o)) => o
            .values()
            .filter_map(Value::as_str)
            .map(str::to_lowercase)
            .collect(),
        Some(Value::Array(a)) => a
            .iter()
            .filter_map(|r| r.get("type").and_then(Value::as_str))
            .map(str::to_lowercase)
            .collect(),
        _ => Vec::new(),
    };
    out.dedup();
    out
}

fn step(
    rec: &Record,
    field: &str,
    j: usize,
    s: &Map<String, Value>,
    format: PlanFormat,
) -> Result<Node, InputError> {
    let f = |k: &str| format!("{field}[{j}].{k}");
    let id = s
        .get("id")
        .and_then(id_text)
        .ok_or_else(|| rec.field_error(&f("id"), "expected an integer or a non-empty string"))?;
    let names: Vec<String> = match s.get("task") {
        Some(Value::String(t)) => vec![t.clone()],
        Some(Value::Array(a)) if !a.is_empty() && a.iter().all(Value::is_string) => a
            .iter()
            .filter_map(Value::as_str)
            .map(str::to_string)
            .collect(),
        _ => {
            return Err(rec.field_error(
                &f("task"),
                "expected a task name or a non-empty list of names",
            ))
        }
    };
    let mut deps = Vec::new();
    match s.get("dep") {
        None | Some(Value::Null) => {}
        Some(Value::Array(a)) => {
            for d in a {
                let d = id_text(d)
                    .ok_or_else(|| rec.field_error(&f("dep"), "expected a list of step ids"))?;
                // -1 is HuggingGPT's and ControlLLM's "no dependency".
                if d != "-1" || format == PlanFormat::Scorekit {
                    deps.push(d);
                }
            }
        }
        Some(v) => {
            return Err(rec.field_error(
                &f("dep"),
                format!("expected a list of step ids, found {}", type_name(v)),
            ))
        }
    }
    if format != PlanFormat::Scorekit {
        let mut all = Vec::new();
        if let Some(a) = s.get("args") {
            strings(a, &mut all);
        }
        for text in all {
            for c in generated_re().captures_iter(text) {
                let k = c.get(1).or_else(|| c.get(2)).expect("a group matched");
                deps.push(k.as_str().to_string());
            }
        }
    }
    let mut seen = BTreeSet::new();
    deps.retain(|d| seen.insert(d.clone()));
    Ok(Node {
        id,
        names,
        deps,
        returns: returns(s.get("returns")),
    })
}

/// Parse one plan line. `format` `None` means auto-detect. A line that is not a JSON object or
/// lacks an integer `idx` is an input error; a response that cannot be read as a plan (bad
/// structure, duplicate or unknown step ids, a dependency cycle, no steps) is returned as a plan
/// with [`Plan::error`] set, naming the field and what was wrong.
pub fn parse_plan(rec: &Record, format: Option<PlanFormat>) -> Result<Plan, InputError> {
    rec.object()?;
    let idx = rec.i64("idx")?;
    let mut plan = Plan {
        idx,
        line: rec.line,
        row: rec.row,
        format,
        nodes: Vec::new(),
        outputs: None,
        error: None,
    };
    let reason = |e: InputError| match e.field {
        Some(f) => format!("field {f:?}: {}", e.message),
        None => e.message,
    };
    let format = match format {
        Some(f) => f,
        None => match detect(rec) {
            Ok(f) => f,
            Err(e) => {
                plan.error = Some(reason(e));
                return Ok(plan);
            }
        },
    };
    plan.format = Some(format);
    match read_steps(rec, format) {
        Ok((nodes, outputs)) => {
            plan.nodes = nodes;
            plan.outputs = outputs;
        }
        Err(e) => plan.error = Some(reason(e)),
    }
    Ok(plan)
}

/// The steps and recorded outputs of a plan line in `format`, or why they cannot be read.
type Steps = (Vec<Node>, Option<Vec<String>>);

fn read_steps(rec: &Record, format: PlanFormat) -> Result<Steps, InputError> {
    let (nodes, field) = if format == PlanFormat::Pddl {
        let text = match rec.get("pddl")? {
            Some(Value::String(s)) => s,
            Some(v) => {
                return Err(rec.field_error(
                    "pddl",
                    format!("expected the plan as a string, found {}", type_name(v)),
                ))
            }
            None => return Err(rec.field_error("pddl", "missing")),
        };
        let nodes = super::pddl::read_plan(text).map_err(|e| rec.field_error("pddl", e))?;
        (nodes, "pddl")
    } else {
        let (list, field) = steps(rec, format)?;
        let mut nodes: Vec<Node> = Vec::with_capacity(list.len());
        for (j, s) in list.iter().enumerate() {
            let s = s.as_object().ok_or_else(|| {
                rec.field_error(
                    &format!("{field}[{j}]"),
                    format!("expected an object, found {}", type_name(s)),
                )
            })?;
            let node = step(rec, field, j, s, format)?;
            if nodes.iter().any(|n| n.id == node.id) {
                return Err(rec.field_error(
                    &format!("{field}[{j}].id"),
                    format!("duplicate step id {}", node.id),
                ));
            }
            nodes.push(node);
        }
        (nodes, field)
    };
    if nodes.is_empty() {
        return Err(rec.field_error(field, "the plan has no steps"));
    }
    for (j, n) in nodes.iter().enumerate() {
        if let Some(d) = n.deps.iter().find(|d| !nodes.iter().any(|m| &m.id == *d)) {
            return Err(rec.field_error(
                &format!("{field}[{j}].dep"),
                format!("step {} depends on unknown step id {d}", n.id),
            ));
        }
    }
    let ids: Vec<String> = nodes.iter().map(|n| n.id.clone()).collect();
    let edges: Vec<(String, String)> = nodes
        .iter()
        .flat_map(|n| n.deps.iter().map(|d| (d.clone(), n.id.clone())))
        .collect();
    if let Some(c) = find_cycle(&ids, &edges) {
        return Err(rec.field_error(
            field,
            format!("the dependencies form a cycle through step id {c}"),
        ));
    }
    let outputs = match rec.get("outputs")? {
        None => None,
        Some(Value::Array(a)) => Some(
            a.iter()
                .enumerate()
                .map(|(k, o)| {
                    o.get("modality")
                        .and_then(Value::as_str)
                        .map(str::to_lowercase)
                        .ok_or_else(|| {
                            rec.field_error(&format!("outputs[{k}].modality"), "expected a string")
                        })
                })
                .collect::<Result<Vec<_>, _>>()?,
        ),
        Some(v) => {
            return Err(rec.field_error(
                "outputs",
                format!("expected a list, found {}", type_name(v)),
            ))
        }
    };
    Ok((nodes, outputs))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn rec(v: Value) -> Record {
        Record {
            file: "plans.jsonl".into(),
            line: 4,
            row: 4,
            value: v,
        }
    }

    #[test]
    fn hugginggpt_edges_come_from_dep_and_generated_references() {
        let r = rec(json!({"idx": 33, "tasks": [
            {"task": "automatic-speech-recognition", "id": 0, "dep": [-1], "args": {"audio": "a.wav"}},
            {"task": "text-to-image", "id": 1, "dep": [-1], "args": {"text": "<GENERATED-0>"}}]}));
        assert_eq!(detect(&r).unwrap(), PlanFormat::Hugginggpt);
        let p = parse_plan(&r, None).unwrap();
        assert_eq!(p.nodes[1].deps, ["0"]);
        assert!(p.nodes[0].deps.is_empty());
    }

    #[test]
    fn controlllm_solution_in_a_response_string() {
        let text = r#"Sure. <Solution>[{"description": "d", "task": ["audio-perception"], "id": 0, "dep": [-1],
            "args": {"a.wav": "audio"}, "returns": {"<GENERATED>-0": "text"}},
            {"description": "e", "task": "image-generation", "id": 1, "dep": [0],
            "args": [{"type": "text", "value": "<GENERATED>-0"}], "returns": [{"type": "image", "value": "<GENERATED>-1"}]}]</Solution>"#;
        let r = rec(json!({"idx": 33, "response": text}));
        let p = parse_plan(&r, None).unwrap();
        assert_eq!(p.format, Some(PlanFormat::Controlllm));
        assert_eq!(p.nodes[1].deps, ["0"]);
        assert_eq!(p.nodes[1].returns, ["image"]);
    }

    /// The planner's error of a line (panics if the line is read as a plan).
    fn plan_error(v: Value) -> String {
        let p = parse_plan(&rec(v), None).unwrap();
        assert!(p.nodes.is_empty());
        p.error.expect("a plan error")
    }

    #[test]
    fn unreadable_plans_are_the_planners_errors_naming_the_field() {
        let e = plan_error(json!({"idx": 1, "tasks": [
            {"id": "a", "task": "text-generation", "dep": ["b"]},
            {"id": "b", "task": "translation-xx-to-yy", "dep": ["a"]}]}));
        assert!(
            e.starts_with("field \"tasks\": the dependencies form a cycle"),
            "{e}"
        );
        assert_eq!(
            plan_error(json!({"idx": 1, "tasks": [{"id": 0, "task": "x", "dep": [3]}]})),
            "field \"tasks[0].dep\": step 0 depends on unknown step id 3"
        );
        assert!(plan_error(
            json!({"idx": 1, "tasks": [{"id": 0, "task": "x"}, {"id": 0, "task": "y"}]})
        )
        .contains("duplicate step id 0"));
        assert!(
            plan_error(json!({"idx": 1, "tasks": "I cannot help with that"}))
                .contains("no parseable JSON list")
        );
        assert_eq!(
            plan_error(json!({"idx": 1, "tasks": []})),
            "field \"tasks\": the plan has no steps"
        );
        assert!(plan_error(json!({"idx": 1, "answer": "no idea"})).contains("\"tasks\": missing"));
        let p = parse_plan(
            &rec(json!({"idx": 1, "response": "Sorry."})),
            Some(PlanFormat::Controlllm),
        )
        .unwrap();
        assert_eq!(
            p.error.as_deref(),
            Some("field \"response\": no <Solution>…</Solution> block in the response")
        );
        // Bad input stays an input error: no idx, not an object.
        let noidx = rec(json!({"tasks": []}));
        assert!(parse_plan(&noidx, None)
            .unwrap_err()
            .to_string()
            .contains("\"idx\": missing"));
        assert!(parse_plan(&rec(json!([1, 2])), None).is_err());
    }

    #[test]
    fn a_raw_hugginggpt_response_under_response() {
        let text = r#"I will do it. [{"task": "automatic-speech-recognition", "id": 0, "dep": [-1],
            "args": {"audio": "a.wav"}}, {"task": "text-to-image", "id": 1, "dep": [0],
            "args": {"text": "<GENERATED>-0"}}] Done."#;
        let p = parse_plan(&rec(json!({"idx": 33, "response": text})), None).unwrap();
        assert_eq!(p.format, Some(PlanFormat::Hugginggpt));
        assert_eq!(p.error, None);
        assert_eq!(p.nodes[1].deps, ["0"]);
    }
}
