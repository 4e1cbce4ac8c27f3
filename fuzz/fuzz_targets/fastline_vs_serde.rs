//! MINT's hand-written line reader (`suites/src/mint/fastline.rs`) against serde_json, the
//! reader it stands in front of, on arbitrary lines.
//!
//! fastline only ever claims one thing: `Some` means "serde_json accepts this line and gives
//! these values"; `None` means "don't know" (the caller then reads the line with serde_json,
//! which decides and reports). So, for every line:
//!
//! 1. `fastline::parse(s) == Some(f)` ⇒ serde_json reads `s` as `record::StoredLine` (the
//!    stored-flags reader, what `suites::mint::parse_stored` falls back to) with a string or
//!    number `task_id`, and its facts equal `f`;
//! 2. (record.rs's own claim, checked on the way) `StoredLine` and the full record
//!    (`suites::mint::Line`, mirrored below: what `suites::mint::parse_full` reads with
//!    serde_json for a re-check) accept and reject the same lines, so a run with and without
//!    `--recheck` stops on the same bad line.
//!
//! fastline.rs and record.rs are compiled here from their sources (both are private to
//! scorekit-suites); `Line` is a copy of the private struct of `suites/src/mint/mod.rs`.
#![no_main]

use libfuzzer_sys::fuzz_target;
use serde::Deserialize;
use serde_json::Value;

#[allow(dead_code)]
#[path = "../../crates/suites/src/mint/fastline.rs"]
mod fastline;
#[allow(dead_code)]
#[path = "../../crates/suites/src/mint/record.rs"]
mod record;

use fastline::FastLine;

// The full record of `suites/src/mint/mod.rs` (`Line` and its parts), field for field; only
// which lines it accepts is checked here, so its fields are never read.
#[allow(dead_code)]
#[derive(Deserialize)]
struct Line {
    state: State,
    task: TaskRec,
}

#[allow(dead_code)]
#[derive(Deserialize)]
struct State {
    history: Vec<Msg>,
    success: bool,
    agent_action_count: Counts,
    #[serde(default)]
    terminate_reason: Option<String>,
}

#[allow(dead_code)]
#[derive(Deserialize)]
struct Msg {
    role: String,
    content: String,
}

#[allow(dead_code)]
#[derive(Deserialize)]
struct Counts {
    invalid_action: u64,
}

#[allow(dead_code)]
#[derive(Deserialize)]
struct TaskRec {
    task_id: Value,
    #[serde(default)]
    prompt: Option<String>,
    #[serde(default)]
    reference: Value,
}

/// What serde_json's stored-flags reading gives, in fastline's form (`None`: an error, or a
/// `task_id` that is neither string nor number, which the caller reports as an error).
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

fuzz_target!(|data: &[u8]| {
    // Lines reach the readers as &str (the line reader checks UTF-8 first).
    let s = match std::str::from_utf8(data) {
        Ok(s) => std::borrow::Cow::Borrowed(s),
        Err(_) => String::from_utf8_lossy(data),
    };
    let s: &str = &s;
    let fast = fastline::parse(s);
    let stored = serde_json::from_str::<record::StoredLine>(s);
    let full = serde_json::from_str::<Line>(s);
    assert_eq!(
        stored.is_ok(),
        full.is_ok(),
        "record::StoredLine and the full record disagree: {:?} / {:?} on {s:?}",
        stored.as_ref().err(),
        full.as_ref().err()
    );
    if let Some(f) = &fast {
        let want = stored.ok().and_then(stored_view);
        assert_eq!(Some(f), want.as_ref(), "fastline::parse on {s:?}");
    }
});
