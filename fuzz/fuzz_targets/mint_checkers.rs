//! MINT answer checkers: `<solution>` extraction, GSM8K/MATH/HotpotQA, MMLU options, TheoremQA
//! normalisation and expression evaluation, Python float parsing. Input: reference, 0 byte,
//! solution.
#![no_main]

use libfuzzer_sys::fuzz_target;
use scorekit::suites::mint::checkers::{
    mmlu_options, mmlu_success, model_output, proposal, reasoning_success, Tolerance,
};
use scorekit::suites::mint::pyfloat::py_float;
use scorekit::suites::mint::pyexpr::eval;
use scorekit::suites::mint::theoremqa::{normalise, theoremqa_success};

fuzz_target!(|data: &[u8]| {
    let Ok(s) = std::str::from_utf8(data) else {
        return;
    };
    let (reference, solution) = s.split_once('\0').unwrap_or((s, s));
    let _ = proposal(model_output(solution));
    let _ = reasoning_success(reference, solution, Tolerance::Head);
    let _ = reasoning_success(reference, solution, Tolerance::Pre);
    let opts = mmlu_options(reference);
    let _ = mmlu_success(reference, &opts, solution);
    let _ = py_float(solution);
    let _ = eval(&normalise(solution));
    let refs = [
        serde_json::from_str::<serde_json::Value>(reference).unwrap_or(serde_json::Value::Null),
        serde_json::json!(reference),
    ];
    for r in &refs {
        let _ = theoremqa_success(r, solution);
    }
});
