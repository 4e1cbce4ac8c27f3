//! GRASP answer normaliser: yes/no extraction and the open-ended label rule for every scene.
#![no_main]

use libfuzzer_sys::fuzz_target;
use scorekit::suites::grasp::rules::{
    binary_answer, binary_token, judge_open, last_turn, strip_ascii_punctuation, OPEN_CHOICES,
};
use scorekit::suites::pystr::py_split;

fuzz_target!(|data: &[u8]| {
    let Ok(s) = std::str::from_utf8(data) else {
        return;
    };
    let _ = binary_answer(s);
    let _ = binary_token(s);
    for w in py_split(last_turn(s)) {
        let _ = strip_ascii_punctuation(w);
    }
    let sel = data.first().copied().unwrap_or(0) as usize;
    let (scene, labels) = OPEN_CHOICES[sel % OPEN_CHOICES.len()];
    for (gold, _) in labels.iter() {
        let _ = judge_open(scene, gold, s);
    }
    let _ = judge_open(s, "left", s);
});
