//! MuSE: plan parsers (auto-detect and each format), queries, gold flow, alias tables.
#![no_main]

use libfuzzer_sys::fuzz_target;
use scorekit::input::Record;
use scorekit::suites::muse::{parse_flow, parse_plan, parse_queries, AliasTable, PlanFormat};
use std::sync::OnceLock;

fn queries() -> &'static Vec<scorekit::suites::muse::Query> {
    static Q: OnceLock<Vec<scorekit::suites::muse::Query>> = OnceLock::new();
    Q.get_or_init(|| {
        let text = r#"[{"idx": 0, "query": "Transcribe the audio and translate it.", "tasks": ["automatic-speech-recognition", "translation-xx-to-yy"], "domains": ["audio", "machine_translation"], "input_type": "audio", "output_type": "text"},
        {"idx": 1, "query": "Caption the image.", "tasks": ["image-captioning"], "domains": ["image_to_text"], "input_type": "image", "output_type": "text"}]"#;
        parse_queries("q.json", text).unwrap_or_default()
    })
}

fuzz_target!(|data: &[u8]| {
    let Ok(s) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(value) = serde_json::from_str::<serde_json::Value>(s) {
        let rec = Record {
            file: "plans.jsonl".into(),
            line: 1,
            row: 1,
            value,
        };
        for f in [
            None,
            Some(PlanFormat::Hugginggpt),
            Some(PlanFormat::Controlllm),
            Some(PlanFormat::Scorekit),
            Some(PlanFormat::Pddl),
        ] {
            let _ = parse_plan(&rec, f);
        }
    }
    let _ = scorekit::suites::muse::pddl::read_plan(s);
    let _ = parse_queries("q.json", s);
    let _ = parse_flow("flow.json", s, queries());
    let mut a = AliasTable::shipped();
    let _ = a.extend_from_str("aliases.json", s);
});
