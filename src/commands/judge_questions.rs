//! The question files `judge train`, `judge eval` and a letter judge's demonstrations read
//! (Possible Stories or RACE lines), with what metrics.json records of each file.

use anyhow::Context;
use scorekit_core::error::{Error, Result};
use scorekit_io::read_jsonl;
use scorekit_report::sha256_file;
use scorekit_suites::judge_data::{self, Parsed};
use scorekit_suites::story::Question;
use std::path::PathBuf;

/// A question file as read: path, sha256 and per-format counts (what metrics.json and
/// training.json record of it).
pub use scorekit_report::judge::QuestionFile;

/// Read question files; every question must have `choices` options (None: the first line's).
pub fn read_questions(
    files: &[PathBuf],
    mut choices: Option<usize>,
) -> Result<(Vec<Question>, Vec<QuestionFile>)> {
    let mut all = Vec::new();
    let mut infos = Vec::new();
    for f in files {
        let Parsed {
            questions,
            possible_stories,
            race,
        } = judge_data::parse_file(&read_jsonl(f)?, choices)?;
        if questions.is_empty() {
            return Err(Error::usage(format!("{}: no questions", f.display())));
        }
        choices.get_or_insert(questions[0].options.len());
        infos.push(QuestionFile {
            path: f.display().to_string(),
            sha256: sha256_file(f).with_context(|| format!("cannot hash {}", f.display()))?,
            possible_stories,
            race,
        });
        all.extend(questions);
    }
    Ok((all, infos))
}
