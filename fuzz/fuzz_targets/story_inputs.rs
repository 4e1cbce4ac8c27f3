//! Possible Stories inputs: a dataset and a generations file (the bytes split at the first 0
//! byte) through the JSONL reader, the question and generation parsers, the status check, judge
//! verdicts, Dissimilarity pairs and the per-group metrics, with made-up model scores and vectors:
//! errors, never panics.
#![no_main]

use libfuzzer_sys::fuzz_target;
use scorekit::suites::story::{self, ItemResult, Status};
use std::cell::RefCell;

thread_local! {
    static DIR: RefCell<Option<tempfile::TempDir>> = const { RefCell::new(None) };
}

/// A made-up judge score and embedding, so that verdicts and pairs vary with the input.
fn score(t: &str) -> f32 {
    (t.len() % 7) as f32 - 3.0
}

fn vector(t: &str) -> Vec<f32> {
    let b = t.as_bytes();
    vec![
        b.len() as f32,
        b.first().copied().unwrap_or(0) as f32,
        b.last().copied().unwrap_or(0) as f32,
        1.0,
    ]
}

fuzz_target!(|data: &[u8]| {
    let (dataset, gens) = match data.iter().position(|&b| b == 0) {
        Some(i) => (&data[..i], &data[i + 1..]),
        None => (data, data),
    };
    DIR.with(|d| {
        let mut d = d.borrow_mut();
        let dir = d.get_or_insert_with(|| tempfile::tempdir().expect("tempdir"));
        let (pd, pg) = (dir.path().join("dataset.jsonl"), dir.path().join("gen.jsonl"));
        std::fs::write(&pd, dataset).expect("write");
        std::fs::write(&pg, gens).expect("write");
        let (Ok(rd), Ok(rg)) = (scorekit::input::read_jsonl(&pd), scorekit::input::read_jsonl(&pg))
        else {
            return;
        };
        let (Ok(qs), Ok(gs)) = (story::parse_questions(&rd), story::parse_generations(&rg)) else {
            return;
        };
        let checked = story::check(&qs, &gs);
        let scored: Vec<_> = checked
            .iter()
            .filter(|c| c.status == Status::Scored)
            .collect();
        let verdicts: Vec<_> = scored
            .iter()
            .map(|c| {
                let q = &qs[c.question.expect("scored")];
                for o in &q.options {
                    let _ = q.pair(o);
                }
                let gold: Vec<f32> = q.options.iter().map(|o| score(o)).collect();
                story::judge_verdict(&gold, q.gold, score(&gs[c.generation].ending))
            })
            .collect();
        let vectors: Vec<Vec<f32>> = scored
            .iter()
            .map(|c| vector(&gs[c.generation].ending))
            .collect();
        let items: Vec<(&str, &str, &[f32])> = scored
            .iter()
            .zip(&vectors)
            .map(|(c, v)| {
                let q = &qs[c.question.expect("scored")];
                (q.passage_id.as_str(), q.id.as_str(), v.as_slice())
            })
            .collect();
        let pairs = story::story_pairs(&items);
        let results: Vec<ItemResult> = scored
            .iter()
            .zip(&verdicts)
            .zip(&pairs)
            .map(|((c, v), p)| {
                let q = &qs[c.question.expect("scored")];
                ItemResult {
                    passage_id: &q.passage_id,
                    question_id: &q.id,
                    judge: Some(v),
                    follow: Some(v.follow),
                    empty: false,
                    pairs: Some(p),
                }
            })
            .collect();
        let _ = story::group_metrics(&results, 10, 1);
    });
});
