//! MINT (Wang et al. 2023): success rates over multi-turn trajectories, Δtools, Δfeedback,
//! invalid actions and format artefacts, from upstream `results.jsonl` files; optional
//! re-checking of answers with native checkers (spec `../shared/specs/mint.md`).
//!
//! Everything downstream of parsing works on [`Item`]s, one per trajectory, so that a merge of
//! sharded runs recomputes every table exactly from items.jsonl. The whole pipeline of `scorekit
//! mint` lives here: [`discover`] walks the folder, [`scan`] reads the files, [`passes`] and
//! [`run`] run it, [`outputs`] renders, [`suite`] is its [`crate::suite::Suite`].

pub mod aggregate;
pub mod checkers;
pub mod discover;
pub mod exec;
mod item_json;
pub use item_json::ItemLines;
mod fastline;
use fastline::FastLine;
pub mod layout;
pub mod metrics;
pub mod outputs;
pub mod passes;
pub mod pipeline;
pub mod pyexpr;
pub mod pyfloat;
mod record;
pub mod scan;
pub mod suite;
pub mod tables;
pub mod theoremqa;
pub mod timings;

use checkers::Tolerance;
use layout::{ConfigKey, FileKey};
use scorekit_core::error::InputError;
use scorekit_io::{read_jsonl_str, Record, TextFile};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::HashSet;
use std::path::Path;

/// One trajectory, reduced to what the tables and the re-check need.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Item {
    /// The results.jsonl it came from.
    pub file: String,
    /// 1-based line in that file.
    pub line: usize,
    /// 1-based position among the file's records.
    pub row: usize,
    /// The configuration (from the path).
    #[serde(flatten)]
    pub config: ConfigKey,
    /// Task type folder.
    pub task_type: String,
    /// Task folder.
    pub task: String,
    /// `task.task_id` (strings as is, numbers in JSON form).
    pub task_id: String,
    /// Stored `state.success`.
    pub success: bool,
    /// Native re-check verdict, where computed.
    pub rechecked: Option<bool>,
    /// Why no re-check verdict was computed, or what it rests on.
    pub recheck_note: Option<String>,
    /// `state.agent_action_count.invalid_action`.
    pub invalid_actions: u64,
    /// `len(history) // 2`.
    pub turns: u64,
    /// Assistant text contains `\_`.
    pub escaped_underscore: bool,
    /// Assistant text contains `[PYTHON]`.
    pub python_tag: bool,
    /// `state.terminate_reason`.
    pub terminate_reason: Option<String>,
    /// A repeated (config, task, task_id): kept in items.jsonl, left out of every table.
    pub duplicate: bool,
}

impl Item {
    /// The verdict the tables use: the re-checked one when asked for and computed.
    pub fn verdict(&self, use_recheck: bool) -> bool {
        if use_recheck {
            self.rechecked.unwrap_or(self.success)
        } else {
            self.success
        }
    }
}

/// What to re-check and how.
#[derive(Debug, Clone, Default)]
pub struct Recheck {
    /// Re-score reasoning instances with this tolerance rule.
    pub reasoning: Option<Tolerance>,
    /// Run code answers.
    pub exec: Option<exec::ExecConfig>,
}

#[derive(Deserialize)]
struct Line {
    state: State,
    task: TaskRec,
}

#[derive(Deserialize)]
struct State {
    history: Vec<Msg>,
    success: bool,
    agent_action_count: Counts,
    #[serde(default)]
    terminate_reason: Option<String>,
}

#[derive(Deserialize)]
struct Msg {
    role: String,
    content: String,
}

#[derive(Deserialize)]
struct Counts {
    invalid_action: u64,
}

#[derive(Deserialize)]
struct TaskRec {
    task_id: Value,
    #[serde(default)]
    prompt: Option<String>,
    #[serde(default)]
    reference: Value,
}

/// Parse one results.jsonl (its bytes) into items; re-check where asked.
pub fn parse_file(
    name: &str,
    key: &FileKey,
    bytes: Vec<u8>,
    recheck: &Recheck,
) -> Result<Vec<Item>, InputError> {
    if bytes.iter().all(u8::is_ascii_whitespace) {
        // An empty file is a run that wrote nothing yet: zero instances, seen as incomplete.
        return Ok(Vec::new());
    }
    let text = utf8(name, bytes)?;
    let full = recheck.reasoning.is_some() || recheck.exec.is_some();
    text.lines()
        .enumerate()
        .map(|(i, (line, src))| {
            if !full {
                return parse_stored(name, key, line, i + 1, src);
            }
            let (mut item, pending) = parse_full(name, key, line, i + 1, src)?;
            apply_recheck(name, key, &mut item, &pending, recheck)?;
            Ok(item)
        })
        .collect()
}

/// Validate UTF-8 (naming the line of the first bad byte) and drop a byte-order mark.
fn utf8(name: &str, bytes: Vec<u8>) -> Result<TextFile, InputError> {
    let mut text = String::from_utf8(bytes).map_err(|e| {
        let valid = e.utf8_error().valid_up_to();
        let line = e.as_bytes()[..valid]
            .iter()
            .filter(|&&b| b == b'\n')
            .count()
            + 1;
        InputError::line(name, line, format!("not valid UTF-8 (byte offset {valid})"))
    })?;
    if text.starts_with('\u{feff}') {
        text.drain(..3);
    }
    Ok(TextFile {
        path: Path::new(name).to_path_buf(),
        text,
    })
}

/// Read one non-blank line for a run on the stored flags: only what the tables need is
/// read ([`fastline`] for the usual shape, else [`record`]); the item is the one
/// [`parse_full`] gives, without a re-check.
pub fn parse_stored(
    name: &str,
    key: &FileKey,
    line: usize,
    row: usize,
    src: &str,
) -> Result<Item, InputError> {
    if let Some(f) = fastline::parse(src) {
        return Ok(item(name, key, line, row, f));
    }
    // Anything unusual (and every error) is read by serde_json.
    let rec: record::StoredLine =
        serde_json::from_str(src).map_err(|e| diagnose(name, line, src, &e))?;
    let task_id = match rec.task.task_id {
        record::TaskId::Id(id) => id,
        record::TaskId::Other(found) => return Err(task_id_error(name, line, found)),
    };
    let state = rec.state;
    let facts = FastLine {
        task_id,
        success: state.success,
        invalid_actions: state.agent_action_count.invalid_action,
        history_len: state.history.len,
        escaped_underscore: state.history.escaped_underscore,
        python_tag: state.history.python_tag,
        terminate_reason: state.terminate_reason,
    };
    Ok(item(name, key, line, row, facts))
}

/// The item of one line from what a reader took from it (not re-checked).
fn item(name: &str, key: &FileKey, line: usize, row: usize, f: FastLine) -> Item {
    Item {
        file: name.to_string(),
        line,
        row,
        config: key.config.clone(),
        task_type: key.task_type.clone(),
        task: key.task.clone(),
        task_id: f.task_id,
        success: f.success,
        rechecked: None,
        recheck_note: None,
        invalid_actions: f.invalid_actions,
        turns: f.history_len / 2,
        escaped_underscore: f.escaped_underscore,
        python_tag: f.python_tag,
        terminate_reason: f.terminate_reason,
        duplicate: false,
    }
}

fn task_id_error(name: &str, line: usize, found: &str) -> InputError {
    InputError::field(
        name,
        line,
        "task.task_id",
        format!("expected a string or a number, found {found}"),
    )
}

/// What the re-check of one trajectory needs besides its item: the task and the proposals.
#[derive(Debug, PartialEq)]
pub struct Pending {
    prompt: Option<String>,
    reference: Value,
    answers: Vec<Option<String>>,
}

/// Read one non-blank line in full, for a re-check: the item (not yet re-checked) and what
/// its re-check needs, every line by serde_json (every error with its field). serde_json
/// reads these lines, not [`fastline`], because it measured faster here than the
/// hand-written reader's re-check mode did (BENCHMARKS.md §8, "Line reading").
pub fn parse_full(
    name: &str,
    key: &FileKey,
    line: usize,
    row: usize,
    src: &str,
) -> Result<(Item, Pending), InputError> {
    let rec: Line = serde_json::from_str(src).map_err(|e| diagnose(name, line, src, &e))?;
    let task_id = match &rec.task.task_id {
        Value::String(s) => s.clone(),
        Value::Number(n) => n.to_string(),
        other => return Err(task_id_error(name, line, scorekit_io::type_name(other))),
    };
    let assistant = || rec.state.history.iter().filter(|m| m.role == "assistant");
    let facts = FastLine {
        task_id,
        success: rec.state.success,
        invalid_actions: rec.state.agent_action_count.invalid_action,
        history_len: rec.state.history.len() as u64,
        // Neither pattern contains a line break, so searching each message finds what a
        // search of the messages joined by line breaks finds.
        escaped_underscore: assistant().any(|m| m.content.contains("\\_")),
        python_tag: assistant().any(|m| m.content.contains("[PYTHON]")),
        terminate_reason: rec.state.terminate_reason.clone(),
    };
    let item = item(name, key, line, row, facts);
    let answers = assistant()
        .filter_map(|m| checkers::proposal(checkers::model_output(&m.content)))
        .collect();
    Ok((
        item,
        Pending {
            prompt: rec.task.prompt,
            reference: rec.task.reference,
            answers,
        },
    ))
}

/// Re-check one item as `recheck` asks, setting its verdict and note.
pub fn apply_recheck(
    name: &str,
    key: &FileKey,
    item: &mut Item,
    pending: &Pending,
    recheck: &Recheck,
) -> Result<(), InputError> {
    let (verdict, note) = recheck_item(key, pending, recheck)
        .map_err(|msg| InputError::field(name, item.line, "task.reference", msg))?;
    item.rechecked = verdict;
    item.recheck_note = note;
    Ok(())
}

/// The re-check verdict of one trajectory: true when any well-formed proposal passes the
/// task's checker (the episode stops at the first success).
fn recheck_item(
    key: &FileKey,
    task: &Pending,
    recheck: &Recheck,
) -> Result<(Option<bool>, Option<String>), String> {
    let wellformed = || task.answers.iter().flatten();
    match key.task.as_str() {
        "gsm8k" | "math" | "hotpotqa" => {
            let Some(tol) = recheck.reasoning else {
                return Ok((None, None));
            };
            let reference = py_str(&task.reference)?;
            Ok((
                Some(wellformed().any(|a| checkers::reasoning_success(&reference, a, tol))),
                None,
            ))
        }
        "mmlu" => {
            if recheck.reasoning.is_none() {
                return Ok((None, None));
            }
            let reference = py_str(&task.reference)?;
            let prompt = task
                .prompt
                .as_deref()
                .ok_or("task.prompt is missing (MMLU options)")?;
            let options = checkers::mmlu_options(prompt);
            Ok((
                Some(wellformed().any(|a| checkers::mmlu_success(&reference, &options, a))),
                None,
            ))
        }
        "theoremqa" => {
            if recheck.reasoning.is_none() {
                return Ok((None, None));
            }
            let mut unsupported = None;
            for a in wellformed() {
                match theoremqa::theoremqa_success(&task.reference, a) {
                    theoremqa::TqaVerdict::Decided(true) => return Ok((Some(true), None)),
                    theoremqa::TqaVerdict::Decided(false) => {}
                    theoremqa::TqaVerdict::Unsupported(why) => {
                        unsupported.get_or_insert(format!("unsupported expression: {why}"));
                    }
                }
            }
            Ok(match unsupported {
                Some(why) => (None, Some(why)),
                None => (Some(false), None),
            })
        }
        "humaneval" | "mbpp" => {
            let Some(cfg) = &recheck.exec else {
                return Ok((None, None));
            };
            let tests = py_str(&task.reference)?;
            let mut timed_out = false;
            for a in wellformed() {
                match exec::run_program(cfg, &format!("{a}\n{tests}")) {
                    Ok(exec::ExecOutcome::Passed) => return Ok((Some(true), None)),
                    Ok(exec::ExecOutcome::Failed) => {}
                    Ok(exec::ExecOutcome::TimedOut) => timed_out = true,
                    Err(e) => return Ok((None, Some(format!("cannot run {}: {e}", cfg.python)))),
                }
            }
            Ok((Some(false), timed_out.then(|| "timed out".to_string())))
        }
        _ => Ok((None, None)),
    }
}

/// Python `str()` of a reference value as upstream sees it.
fn py_str(v: &Value) -> Result<String, String> {
    match v {
        Value::String(s) => Ok(s.clone()),
        Value::Number(n) => Ok(match n.as_f64() {
            Some(f) if n.is_f64() && f.fract() == 0.0 && f.abs() < 1e16 => format!("{f:.1}"),
            _ => n.to_string(),
        }),
        Value::Bool(b) => Ok(if *b { "True" } else { "False" }.to_string()),
        other => Err(format!(
            "expected a string reference, found {}",
            scorekit_io::type_name(other)
        )),
    }
}

/// Turn a serde error on the typed record into a message naming the field, by re-reading the
/// line as untyped JSON (only on the error path, so the fast path stays typed).
fn diagnose(name: &str, line: usize, src: &str, e: &serde_json::Error) -> InputError {
    let file = TextFile {
        path: name.into(),
        text: src.to_string(),
    };
    let rec = match read_jsonl_str(&file) {
        Ok(mut v) if v.len() == 1 => v.remove(0),
        Ok(_) => return InputError::line(name, line, e.to_string()),
        Err(err) => return InputError::line(name, line, err.message),
    };
    let rec = Record { line, ..rec };
    let check = || -> Result<(), InputError> {
        rec.object()?;
        let state = sub(&rec, "state")?;
        sub(&rec, "task")?;
        state.bool("success").map_err(|x| prefix(x, "state."))?;
        let hist = state.array("history").map_err(|x| prefix(x, "state."))?;
        for (i, m) in hist.iter().enumerate() {
            let m = Record {
                value: m.clone(),
                ..rec.clone()
            };
            let f = format!("state.history[{i}].");
            m.str("role").map_err(|x| prefix(x, &f))?;
            m.str("content").map_err(|x| prefix(x, &f))?;
        }
        let counts = sub(&state, "agent_action_count").map_err(|x| prefix(x, "state."))?;
        counts
            .require("invalid_action")
            .map_err(|x| prefix(x, "state.agent_action_count."))?;
        if counts.value["invalid_action"].as_u64().is_none() {
            return Err(rec.field_error(
                "state.agent_action_count.invalid_action",
                "expected a non-negative integer",
            ));
        }
        Ok(())
    };
    match check() {
        Err(x) => x,
        Ok(()) => InputError::line(name, line, strip_position(e)),
    }
}

fn sub(rec: &Record, field: &str) -> Result<Record, InputError> {
    let v = rec.require(field)?;
    if !v.is_object() {
        return Err(rec.field_error(
            field,
            format!("expected an object, found {}", scorekit_io::type_name(v)),
        ));
    }
    Ok(Record {
        value: v.clone(),
        ..rec.clone()
    })
}

fn prefix(mut e: InputError, p: &str) -> InputError {
    e.field = e.field.map(|f| format!("{p}{f}"));
    e
}

fn strip_position(e: &serde_json::Error) -> String {
    let s = e.to_string();
    s.rfind(" at line ")
        .map_or(s.clone(), |i| s[..i].to_string())
}

/// Mark repeated (config, task type, task, task_id) as duplicates, keeping the first in the
/// order given (files sorted by path, lines in order), as the notebook's `drop_duplicates`.
pub fn mark_duplicates(items: &mut [Item]) {
    let mut seen: HashSet<(ConfigKey, String, String, String)> = HashSet::new();
    for it in items.iter_mut() {
        let key = (
            it.config.clone(),
            it.task_type.clone(),
            it.task.clone(),
            it.task_id.clone(),
        );
        it.duplicate = !seen.insert(key);
    }
}

/// The key `--shard` splits by: configuration, task and task id, so that repeats of one
/// instance (marked duplicate, first kept) stay in one shard.
pub fn shard_key(i: &Item) -> String {
    format!(
        "{}\u{1f}{}\u{1f}{}\u{1f}{}",
        i.config.label(),
        i.task_type,
        i.task,
        i.task_id
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn key(task_type: &str, task: &str) -> FileKey {
        layout::parse_path(Path::new(&format!(
            "m/F=None/max5_p2+tool+cd/{task_type}/{task}/results.jsonl"
        )))
        .unwrap()
    }

    fn line(success: bool, answer: &str, reference: &str) -> String {
        serde_json::json!({
            "state": {"history": [
                {"role": "user", "content": "task"},
                {"role": "assistant", "content": format!("Assistant:\n<solution> {answer} </solution>\n")},
            ], "success": success, "agent_action_count": {"propose_solution": 1, "use_tool": 0, "invalid_action": 0},
            "terminate_reason": "task_success"},
            "task": {"task_id": 7, "reference": reference, "prompt": "p", "task_name": "reasoning", "metadata": {}}
        })
        .to_string()
    }

    #[test]
    fn parses_and_rechecks() {
        let rc = Recheck {
            reasoning: Some(Tolerance::Pre),
            exec: None,
        };
        let text = format!(
            "{}\n{}\n",
            line(true, "42", "42"),
            line(false, "x \\_ y", "42")
        );
        let items = parse_file(
            "f.jsonl",
            &key("reasoning", "gsm8k"),
            text.into_bytes(),
            &rc,
        )
        .unwrap();
        assert_eq!(items.len(), 2);
        assert_eq!(items[0].rechecked, Some(true));
        assert_eq!(items[0].turns, 1);
        assert_eq!(items[0].task_id, "7");
        assert_eq!(items[1].rechecked, Some(false));
        assert!(items[1].escaped_underscore);
    }

    #[test]
    fn malformed_lines_name_file_line_and_field() {
        let rc = Recheck::default();
        let bad = line(true, "1", "1").replace("\"success\":true", "\"success\":\"yes\"");
        let text = format!("{}\n{bad}\n", line(true, "1", "1"));
        let e = parse_file(
            "f.jsonl",
            &key("reasoning", "gsm8k"),
            text.into_bytes(),
            &rc,
        )
        .unwrap_err();
        assert_eq!(
            e.to_string(),
            "f.jsonl:2: field \"state.success\": expected a boolean, found a string"
        );
        let e = parse_file(
            "f.jsonl",
            &key("reasoning", "gsm8k"),
            b"{\"state\": 1}\n".to_vec(),
            &rc,
        )
        .unwrap_err();
        assert_eq!(e.field.as_deref(), Some("state"));
        let e = parse_file(
            "f.jsonl",
            &key("reasoning", "gsm8k"),
            b"{oops\n".to_vec(),
            &rc,
        )
        .unwrap_err();
        assert!(e.to_string().starts_with("f.jsonl:1: invalid JSON"), "{e}");
    }

    /// Every results.jsonl of `mint:headline` (the test data cache), with its key and text.
    fn shared_files() -> Vec<(String, FileKey, String)> {
        let root = scorekit_data::testdata::file("mint:headline", "data/outputs");
        let mut out = Vec::new();
        for e in walkdir::WalkDir::new(&root).sort_by_file_name() {
            let e = e.unwrap();
            if e.file_name() == "results.jsonl" {
                let key = layout::parse_path(e.path().strip_prefix(&root).unwrap()).unwrap();
                let text = std::fs::read_to_string(e.path()).unwrap();
                out.push((e.path().display().to_string(), key, text));
            }
        }
        out
    }

    #[test]
    fn the_fast_reading_gives_the_full_readings_items_on_all_shared_files() {
        let files = shared_files();
        assert_eq!(files.len(), 56);
        let (mut n, mut underscore_elsewhere, mut numeric_ids) = (0, 0, 0);
        for (name, key, text) in &files {
            let file = TextFile {
                path: name.into(),
                text: text.clone(),
            };
            for (row, (line, src)) in file.lines().enumerate() {
                let fast = parse_stored(name, key, line, row + 1, src).unwrap();
                let (full, _) = parse_full(name, key, line, row + 1, src).unwrap();
                assert_eq!(fast, full, "{name}:{line}");
                n += 1;
                // `\_` outside the assistant's messages (prompts, observations) must not count.
                underscore_elsewhere +=
                    (src.contains("\\\\_") && !fast.escaped_underscore) as usize;
                numeric_ids += src.contains("\"task_id\": 1") as usize;
            }
        }
        assert_eq!(n, 4102);
        assert!(underscore_elsewhere > 0 && numeric_ids > 0);
    }

    #[test]
    fn the_fast_reading_rejects_exactly_what_the_full_reading_rejects() {
        let good = line(true, "1", "1");
        let cases = [
            ("\"success\":true", "\"success\":\"yes\""),
            ("\"role\":\"assistant\"", "\"role\":5"),
            (
                "\"role\":\"assistant\"",
                "\"role\":\"assistant\",\"role\":\"user\"",
            ),
            ("\"role\":\"assistant\",", ""),
            ("\"role\":\"user\",", ""),
            (
                "{\"role\":\"user\",\"content\":\"task\"}",
                "[\"user\",\"task\"]",
            ),
            (
                "{\"role\":\"user\",\"content\":\"task\"}",
                "[\"assistant\",\"a \\\\_\"]",
            ),
            ("{\"role\":\"user\",\"content\":\"task\"}", "[\"user\"]"),
            (
                "{\"role\":\"user\",\"content\":\"task\"}",
                "[\"user\",\"a\",\"b\"]",
            ),
            (
                "{\"role\":\"user\",\"content\":\"task\"}",
                "{\"content\":\"a \\\\_\",\"x\":1,\"role\":\"assistant\"}",
            ),
            ("\"content\":\"task\"", "\"content\":null"),
            (
                "\"content\":\"task\"",
                "\"content\":\"t\",\"content\":\"u\"",
            ),
            ("\"invalid_action\":0", "\"invalid_action\":-1"),
            ("\"invalid_action\":0", "\"invalid_action\":1.5"),
            ("\"invalid_action\":0", "\"invalid_action\":3"),
            ("\"task_id\":7", "\"task_id\":true"),
            ("\"task_id\":7", "\"task_id\":[1,{\"a\":null}]"),
            ("\"task_id\":7", "\"task_id\":{\"a\":1}"),
            ("\"task_id\":7", "\"task_id\":null"),
            ("\"task_id\":7", "\"task_id\":7.0"),
            ("\"task_id\":7", "\"task_id\":-7"),
            ("\"task_id\":7", "\"task_id\":\"a\\u00e9\""),
            ("\"task_id\":7,", ""),
            ("\"prompt\":\"p\"", "\"prompt\":5"),
            ("\"prompt\":\"p\"", "\"prompt\":null"),
            ("\"reference\":\"1\"", "\"reference\":1e400"),
            ("\"reference\":\"1\"", "\"reference\":\"\\ud800\""),
            (
                "\"reference\":\"1\"",
                "\"reference\":{\"a\":[1,2.5,true,null]}",
            ),
            (
                "\"terminate_reason\":\"task_success\"",
                "\"terminate_reason\":5",
            ),
            (
                "\"terminate_reason\":\"task_success\"",
                "\"terminate_reason\":null",
            ),
            ("\"history\":[", "\"history\":{\"a\":1},\"h\":["),
            ("{\"state\"", "{\"extra\":[1,2],\"state\""),
        ];
        let key = key("reasoning", "gsm8k");
        for (from, to) in cases {
            assert!(good.contains(from), "{from}");
            let src = good.replacen(from, to, 1);
            let fast = parse_stored("f.jsonl", &key, 3, 2, &src);
            let full = parse_full("f.jsonl", &key, 3, 2, &src).map(|(i, _)| i);
            assert_eq!(fast, full, "{src}");
            if to.contains("a \\\\_") {
                assert!(fast.unwrap().escaped_underscore, "{src}");
            }
        }
    }

    #[test]
    fn duplicates_keep_the_first() {
        let rc = Recheck::default();
        let text = format!("{}\n{}\n", line(true, "1", "1"), line(false, "1", "1"));
        let mut items = parse_file(
            "f.jsonl",
            &key("reasoning", "gsm8k"),
            text.into_bytes(),
            &rc,
        )
        .unwrap();
        mark_duplicates(&mut items);
        assert!(!items[0].duplicate && items[1].duplicate);
    }
}
