//! MINT's line reader against the JSON crates that could replace it, on the same lines.
//!
//!   cargo run --release -- ARCHIVE [ROUNDS] [PASSES]
//!
//! ARCHIVE: a folder of MINT results.jsonl files (every `results.jsonl` below it is read into
//! memory first; the figures are parsing only, no I/O). Each round times every method once,
//! in turn (A B C … A B C …), each over every line PASSES times; MB/s counts the bytes of the
//! lines (without their line breaks) divided by the time of the pass: wall time, and this
//! thread's CPU time (CLOCK_THREAD_CPUTIME_ID, which a shared machine's other load does not
//! inflate). The median over rounds is printed with min and max.
//!
//! The work, per line: the facts `scorekit mint` keeps for its tables (task_id, success,
//! invalid actions, history length, the two assistant-content flags, terminate_reason).
//! - `fastline`: `fastline::parse`, and serde_json's `record::StoredLine` where it answers
//!   `None` (as `suites::mint::parse_stored` does; the count is printed);
//! - `serde_json`, `sonic-rs`, `simd-json`: the same `#[derive(Deserialize)]` / hand-written
//!   `Deserialize` types of suites' `mint/record.rs` (`StoredLine`: only those fields, the
//!   rest skipped but checked), driven by each crate's serde deserializer (simd-json on a copy
//!   of the line, which it parses in place, with reused buffers);
//! - `… Value`: each crate's generic document (`serde_json::Value`, `sonic_rs::Value`,
//!   simd-json's `BorrowedValue`), then the same facts read from it.
//!
//! Then the work of a re-check (`--recheck`): the facts, `task.prompt`, `task.reference` (as a
//! `serde_json::Value`) and the assistant messages' text, from the full record (`Line` of
//! suites' `mint/mod.rs`, copied here) read by serde_json (what `suites::mint::parse_full`
//! does), sonic-rs and simd-json. fastline has no re-check mode (removed: it measured slower
//! than serde_json there), so it has no row.
//!
//! Every method's values are checked equal to the first method's (fastline for the stored
//! flags, serde_json for the re-check) on every line before timing.

use std::hint::black_box;
use std::path::Path;
use std::time::Instant;

#[allow(dead_code)]
#[path = "../../../crates/suites/src/mint/fastline.rs"]
mod fastline;
#[allow(dead_code)]
#[path = "../../../crates/suites/src/mint/record.rs"]
mod record;

use fastline::FastLine;

struct Scratch {
    buf: Vec<u8>,
    simd: simd_json::Buffers,
}

fn stored_view(rec: record::StoredLine) -> Option<FastLine> {
    let record::TaskId::Id(task_id) = rec.task.task_id else {
        return None;
    };
    let h = rec.state.history;
    Some(FastLine {
        task_id,
        success: rec.state.success,
        invalid_actions: rec.state.agent_action_count.invalid_action,
        history_len: h.len,
        escaped_underscore: h.escaped_underscore,
        python_tag: h.python_tag,
        terminate_reason: rec.state.terminate_reason,
    })
}

fn by_fastline(l: &str, _: &mut Scratch) -> Option<FastLine> {
    fastline::parse(l).or_else(|| stored_view(serde_json::from_str(l).ok()?))
}

fn by_serde_json(l: &str, _: &mut Scratch) -> Option<FastLine> {
    stored_view(serde_json::from_str(l).ok()?)
}

fn by_sonic(l: &str, _: &mut Scratch) -> Option<FastLine> {
    stored_view(sonic_rs::from_str(l).ok()?)
}

fn by_simd(l: &str, s: &mut Scratch) -> Option<FastLine> {
    s.buf.clear();
    s.buf.extend_from_slice(l.as_bytes());
    stored_view(simd_json::serde::from_slice_with_buffers(&mut s.buf, &mut s.simd).ok()?)
}

/// The facts from a generic document, as `suites::mint::parse_full` reads them.
struct Doc<'a> {
    task_id: Option<String>,
    success: Option<bool>,
    invalid: Option<u64>,
    /// (role, content) of each message.
    history: Vec<(&'a str, &'a str)>,
    terminate_reason: Option<Option<String>>,
}

impl Doc<'_> {
    fn facts(self) -> Option<FastLine> {
        let assistant = || {
            self.history
                .iter()
                .filter(|(r, _)| *r == "assistant")
                .map(|(_, c)| c)
        };
        Some(FastLine {
            task_id: self.task_id.clone()?,
            success: self.success?,
            invalid_actions: self.invalid?,
            history_len: self.history.len() as u64,
            escaped_underscore: assistant().any(|c| c.contains("\\_")),
            python_tag: assistant().any(|c| c.contains("[PYTHON]")),
            terminate_reason: self.terminate_reason.clone()?,
        })
    }
}

fn by_serde_value(l: &str, _: &mut Scratch) -> Option<FastLine> {
    use serde_json::Value;
    let v: Value = serde_json::from_str(l).ok()?;
    let (state, task) = (v.get("state")?, v.get("task")?);
    let mut history = Vec::new();
    for m in state.get("history")?.as_array()? {
        history.push((m.get("role")?.as_str()?, m.get("content")?.as_str()?));
    }
    Doc {
        task_id: match task.get("task_id")? {
            Value::String(s) => Some(s.clone()),
            Value::Number(n) => Some(n.to_string()),
            _ => None,
        },
        success: state.get("success")?.as_bool(),
        invalid: state
            .get("agent_action_count")?
            .get("invalid_action")?
            .as_u64(),
        history,
        terminate_reason: match state.get("terminate_reason") {
            None | Some(Value::Null) => Some(None),
            Some(r) => r.as_str().map(|s| Some(s.to_string())),
        },
    }
    .facts()
}

fn by_sonic_value(l: &str, _: &mut Scratch) -> Option<FastLine> {
    use sonic_rs::{JsonContainerTrait, JsonValueTrait, Value};
    let v: Value = sonic_rs::from_str(l).ok()?;
    let (state, task) = (v.get("state")?, v.get("task")?);
    let mut history = Vec::new();
    for m in state.get("history")?.as_array()?.iter() {
        history.push((m.get("role")?.as_str()?, m.get("content")?.as_str()?));
    }
    let id = task.get("task_id")?;
    Doc {
        task_id: match (id.as_str(), id.as_u64(), id.as_i64(), id.as_f64()) {
            (Some(s), ..) => Some(s.to_string()),
            (_, Some(n), ..) => Some(n.to_string()),
            (_, _, Some(n), _) => Some(n.to_string()),
            (_, _, _, Some(x)) => serde_json::Number::from_f64(x).map(|n| n.to_string()),
            _ => None,
        },
        success: state.get("success")?.as_bool(),
        invalid: state
            .get("agent_action_count")?
            .get("invalid_action")?
            .as_u64(),
        history,
        terminate_reason: match state.get("terminate_reason") {
            None => Some(None),
            Some(r) if r.is_null() => Some(None),
            Some(r) => r.as_str().map(|s| Some(s.to_string())),
        },
    }
    .facts()
}

fn by_simd_value(l: &str, s: &mut Scratch) -> Option<FastLine> {
    use simd_json::prelude::*;
    s.buf.clear();
    s.buf.extend_from_slice(l.as_bytes());
    let v = simd_json::to_borrowed_value_with_buffers(&mut s.buf, &mut s.simd).ok()?;
    let (state, task) = (v.get("state")?, v.get("task")?);
    let mut history = Vec::new();
    for m in state.get("history")?.as_array()? {
        history.push((m.get("role")?.as_str()?, m.get("content")?.as_str()?));
    }
    let id = task.get("task_id")?;
    let facts = Doc {
        task_id: match (id.as_str(), id.as_u64(), id.as_i64(), id.as_f64()) {
            (Some(s), ..) => Some(s.to_string()),
            (_, Some(n), ..) => Some(n.to_string()),
            (_, _, Some(n), _) => Some(n.to_string()),
            (_, _, _, Some(x)) => serde_json::Number::from_f64(x).map(|n| n.to_string()),
            _ => None,
        },
        success: state.get("success")?.as_bool(),
        invalid: state
            .get("agent_action_count")?
            .get("invalid_action")?
            .as_u64(),
        history,
        terminate_reason: match state.get("terminate_reason") {
            None => Some(None),
            Some(r) if r.is_null() => Some(None),
            Some(r) => r.as_str().map(|s| Some(s.to_string())),
        },
    }
    .facts();
    facts
}

type Method<T> = (&'static str, fn(&str, &mut Scratch) -> Option<T>);

const METHODS: [Method<FastLine>; 7] = [
    ("fastline", by_fastline),
    ("serde_json", by_serde_json),
    ("sonic-rs", by_sonic),
    ("simd-json", by_simd),
    ("serde_json Value", by_serde_value),
    ("sonic-rs Value", by_sonic_value),
    ("simd-json Value", by_simd_value),
];

// The full record of suites' `mint/mod.rs` (`Line`, private there), field for field: what a
// `--recheck` run reads for every line.
#[derive(serde::Deserialize)]
struct Line {
    state: State,
    task: TaskRec,
}

#[derive(serde::Deserialize)]
struct State {
    history: Vec<Msg>,
    success: bool,
    agent_action_count: Counts,
    #[serde(default)]
    terminate_reason: Option<String>,
}

#[derive(serde::Deserialize)]
struct Msg {
    role: String,
    content: String,
}

#[derive(serde::Deserialize)]
struct Counts {
    invalid_action: u64,
}

#[derive(serde::Deserialize)]
struct TaskRec {
    task_id: serde_json::Value,
    #[serde(default)]
    prompt: Option<String>,
    #[serde(default)]
    reference: serde_json::Value,
}

/// What a re-check needs from one line: the facts, the task's `prompt` and `reference`, and
/// the assistant messages' text.
#[derive(PartialEq)]
struct FullView {
    facts: FastLine,
    prompt: Option<String>,
    reference: serde_json::Value,
    assistant: Vec<String>,
}

fn full_view(rec: Line) -> Option<FullView> {
    use serde_json::Value;
    let task_id = match &rec.task.task_id {
        Value::String(s) => s.clone(),
        Value::Number(n) => n.to_string(),
        _ => return None,
    };
    let assistant: Vec<String> = rec
        .state
        .history
        .iter()
        .filter(|m| m.role == "assistant")
        .map(|m| m.content.clone())
        .collect();
    Some(FullView {
        facts: FastLine {
            task_id,
            success: rec.state.success,
            invalid_actions: rec.state.agent_action_count.invalid_action,
            history_len: rec.state.history.len() as u64,
            escaped_underscore: assistant.iter().any(|m| m.contains("\\_")),
            python_tag: assistant.iter().any(|m| m.contains("[PYTHON]")),
            terminate_reason: rec.state.terminate_reason,
        },
        prompt: rec.task.prompt,
        reference: rec.task.reference,
        assistant,
    })
}

const FULL: [Method<FullView>; 3] = [
    ("serde_json", |l, _| {
        full_view(serde_json::from_str(l).ok()?)
    }),
    ("sonic-rs", |l, _| full_view(sonic_rs::from_str(l).ok()?)),
    ("simd-json", |l, s| {
        s.buf.clear();
        s.buf.extend_from_slice(l.as_bytes());
        full_view(simd_json::serde::from_slice_with_buffers(&mut s.buf, &mut s.simd).ok()?)
    }),
];

fn collect(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            collect(&p, out);
        } else if p.file_name().is_some_and(|n| n == "results.jsonl") {
            out.push(p);
        }
    }
}

/// This thread's CPU time, in seconds.
fn thread_cpu() -> f64 {
    let mut t = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `t` is a valid timespec for clock_gettime to fill.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut t) };
    t.tv_sec as f64 + t.tv_nsec as f64 * 1e-9
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let archive = args
        .get(1)
        .expect("usage: json-peers ARCHIVE [ROUNDS] [PASSES]");
    let rounds: usize = args.get(2).map_or(7, |s| s.parse().unwrap());
    let passes: usize = args.get(3).map_or(3, |s| s.parse().unwrap());
    let mut files = Vec::new();
    collect(Path::new(archive), &mut files);
    let mut lines = Vec::new();
    for f in &files {
        let text = std::fs::read_to_string(f).unwrap();
        let text = text.strip_prefix('\u{feff}').unwrap_or(&text);
        lines.extend(
            text.split('\n')
                .filter(|l| !l.trim().is_empty())
                .map(str::to_string),
        );
    }
    let bytes: usize = lines.iter().map(String::len).sum();
    let mut scratch = Scratch {
        buf: Vec::new(),
        simd: simd_json::Buffers::default(),
    };
    let fallbacks = lines
        .iter()
        .filter(|l| fastline::parse(l).is_none())
        .count();
    println!(
        "{} files, {} lines, {:.1} MB; fastline left {fallbacks} lines to serde_json; \
         AVX-512 string scan: {}",
        files.len(),
        lines.len(),
        bytes as f64 / 1e6,
        scorekit_kernels::json_string::wide_available()
    );
    let ctx = Ctx {
        lines: &lines,
        bytes,
        rounds,
        passes,
    };
    println!("\nstored flags (`scorekit mint`): the facts of each line");
    ctx.run(&METHODS, &mut scratch);
    println!(
        "\nre-check (`scorekit mint --recheck`): the facts, prompt, reference, assistant texts"
    );
    ctx.run(&FULL, &mut scratch);
}

struct Ctx<'a> {
    lines: &'a [String],
    bytes: usize,
    rounds: usize,
    passes: usize,
}

impl Ctx<'_> {
    fn run<T: PartialEq>(&self, methods: &[Method<T>], scratch: &mut Scratch) {
        let (lines, bytes, rounds, passes) = (self.lines, self.bytes, self.rounds, self.passes);
        let first = methods[0].0;
        // Every method gives the first method's values on every line.
        let want: Vec<_> = lines.iter().map(|l| (methods[0].1)(l, scratch)).collect();
        let none = want.iter().filter(|w| w.is_none()).count();
        assert_eq!(none, 0, "{none} lines unread");
        for (name, m) in methods {
            let bad = lines
                .iter()
                .zip(&want)
                .filter(|(l, w)| m(l, scratch) != **w)
                .count();
            assert_eq!(bad, 0, "{name}: {bad} lines differ from {first}");
        }
        println!(
            "all {} methods agree with {first} on every line",
            methods.len()
        );
        let mut wall = vec![Vec::new(); methods.len()];
        let mut cpu = vec![Vec::new(); methods.len()];
        for _ in 0..rounds {
            for (k, (_, m)) in methods.iter().enumerate() {
                let (t, c) = (Instant::now(), thread_cpu());
                for _ in 0..passes {
                    for l in lines {
                        black_box(m(black_box(l), scratch));
                    }
                }
                let mb = (bytes * passes) as f64 / 1e6;
                cpu[k].push(mb / (thread_cpu() - c));
                wall[k].push(mb / t.elapsed().as_secs_f64());
            }
        }
        println!(
            "{rounds} rounds x {passes} passes; MB/s median (min-max), by CPU time then wall \
             time; {first}'s median / the method's"
        );
        let (first_cpu, first_wall) = (median(&mut cpu[0].clone()), median(&mut wall[0].clone()));
        for (k, (name, _)) in methods.iter().enumerate() {
            let (c, w) = (&mut cpu[k], &mut wall[k]);
            let (mc, mw) = (median(c), median(w));
            println!(
                "{name:<18} cpu {mc:7.1} ({:.1}-{:.1}) {:.2}x   wall {mw:7.1} ({:.1}-{:.1}) {:.2}x",
                c[0],
                c[c.len() - 1],
                first_cpu / mc,
                w[0],
                w[w.len() - 1],
                first_wall / mw
            );
        }
    }
}
