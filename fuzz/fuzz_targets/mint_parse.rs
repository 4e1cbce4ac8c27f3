//! MINT results.jsonl parsing (trajectories, action/proposal extraction, native re-checks of
//! reasoning answers) on arbitrary bytes, under every task folder.
#![no_main]

use libfuzzer_sys::fuzz_target;
use scorekit::suites::mint::checkers::Tolerance;
use scorekit::suites::mint::layout::parse_path;
use scorekit::suites::mint::{mark_duplicates, parse_file, Recheck};
use std::path::Path;

const TASKS: [&str; 8] = [
    "reasoning/gsm8k",
    "reasoning/hotpotqa",
    "reasoning/math",
    "reasoning/mmlu",
    "reasoning/theoremqa",
    "decision_making/alfworld",
    "code_generation/humaneval",
    "code_generation/mbpp",
];

fuzz_target!(|data: &[u8]| {
    let Some((&sel, rest)) = data.split_first() else {
        return;
    };
    let task = TASKS[sel as usize % TASKS.len()];
    let rel = format!("agent/F=None/max5_p1+tool+cd/{task}/results.jsonl");
    let key = parse_path(Path::new(&rel)).expect("valid layout");
    let recheck = Recheck {
        reasoning: Some(if sel & 0x80 == 0 {
            Tolerance::Head
        } else {
            Tolerance::Pre
        }),
        exec: None,
    };
    if let Ok(mut items) = parse_file(&rel, &key, rest.to_vec(), &recheck) {
        mark_duplicates(&mut items);
    }
});
