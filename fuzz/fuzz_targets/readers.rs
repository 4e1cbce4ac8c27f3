//! The input readers (text, JSONL, JSON, CSV) on arbitrary bytes: errors, never panics.
#![no_main]

use libfuzzer_sys::fuzz_target;
use std::cell::RefCell;

thread_local! {
    static DIR: RefCell<Option<tempfile::TempDir>> = const { RefCell::new(None) };
}

fuzz_target!(|data: &[u8]| {
    DIR.with(|d| {
        let mut d = d.borrow_mut();
        let dir = d.get_or_insert_with(|| tempfile::tempdir().expect("tempdir"));
        let p = dir.path().join("input");
        std::fs::write(&p, data).expect("write");
        let _ = scorekit::input::read_text(&p);
        let _ = scorekit::input::read_jsonl(&p);
        let _ = scorekit::input::read_json(&p);
        if let Ok(t) = scorekit::input::read_csv(&p, &["scene", "gt", "response"]) {
            for r in &t.records {
                let _ = t.get(r, "scene");
            }
        }
    });
});
