//! Training and evaluation questions of a multiple-choice judge, from Possible Stories lines
//! (`document`, `question`, `options`, `gold_label`) or RACE lines as the Hub's `race` dataset
//! writes them (`article`, `question`, `options`, `answer` "A".."D"), detected per line. Every
//! question becomes a [`story::Question`], so its pairs come from the one builder the story judge
//! scores with ([`story::Question::pair`]).

use crate::story::Question;
use anyhow::Context;
use scorekit_core::error::{Error, InputError};
use scorekit_io::read_jsonl;
use scorekit_io::{type_name, Record};
use scorekit_report::judge::QuestionFile;
use scorekit_report::sha256_file;
use std::path::PathBuf;

/// Questions of one file, and how many lines of each format it had.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Parsed {
    /// The questions in file order.
    pub questions: Vec<Question>,
    /// Possible Stories lines.
    pub possible_stories: usize,
    /// RACE lines.
    pub race: usize,
}

/// Parse every record of a file. `choices`: the number of options every question must have
/// (`None`: the first line's). The first bad line is an error naming file, line and field.
pub fn parse_file(records: &[Record], choices: Option<usize>) -> Result<Parsed, InputError> {
    let mut out = Parsed::default();
    let mut want = choices;
    for r in records {
        let obj = r.object()?;
        let race = obj.contains_key("article") || obj.contains_key("answer");
        let (document, label_field) = if race {
            (r.str("article")?, "answer")
        } else {
            (r.str("document")?, "gold_label")
        };
        let question = r.str("question")?.to_string();
        let options: Vec<String> = r
            .array("options")?
            .iter()
            .enumerate()
            .map(|(i, o)| {
                o.as_str().map(str::to_string).ok_or_else(|| {
                    r.field_error(
                        "options",
                        format!("option {i}: expected a string, found {}", type_name(o)),
                    )
                })
            })
            .collect::<Result<_, _>>()?;
        let n = *want.get_or_insert(options.len());
        if options.len() != n || n < 2 {
            return Err(r.field_error(
                "options",
                format!("{} options, but the first line has {n} (every question needs the same number, at least 2)", options.len()),
            ));
        }
        let gold = if race {
            let a = r.str("answer")?;
            let mut chars = a.chars();
            match (chars.next(), chars.next()) {
                (Some(c @ 'A'..='Z'), None) if ((c as u8 - b'A') as usize) < n => {
                    (c as u8 - b'A') as usize
                }
                _ => {
                    return Err(r.field_error(
                        "answer",
                        format!(
                            "{a:?} is not a letter of the {n} options (A..{})",
                            (b'A' + n as u8 - 1) as char
                        ),
                    ))
                }
            }
        } else {
            let g = r.i64("gold_label")?;
            if !(0..n as i64).contains(&g) {
                return Err(r.field_error(
                    label_field,
                    format!("{g} is outside the {n} options (0..{})", n - 1),
                ));
            }
            g as usize
        };
        let id = if race {
            r.opt_str("example_id")?
                .map_or_else(|| format!("line{}", r.line), str::to_string)
        } else {
            r.opt_str("question_id")?
                .map_or_else(|| format!("line{}", r.line), str::to_string)
        };
        // Consistency groups questions by passage: Possible Stories' id prefix before the first
        // `_`, a RACE article by its example id's file part (`high123.txt`).
        let passage_id = if race {
            id.split('-').next().unwrap_or(&id).to_string()
        } else {
            id.split('_').next().unwrap_or(&id).to_string()
        };
        if race {
            out.race += 1;
        } else {
            out.possible_stories += 1;
        }
        out.questions.push(Question {
            id,
            row: r.row,
            passage_id,
            question,
            document: document.to_string(),
            options,
            gold,
        });
    }
    Ok(out)
}

/// Read question files; every question must have `choices` options (None: the first line's).
pub fn read_questions(
    files: &[PathBuf],
    mut choices: Option<usize>,
) -> scorekit_core::error::Result<(Vec<Question>, Vec<QuestionFile>)> {
    let mut all = Vec::new();
    let mut infos = Vec::new();
    for f in files {
        let Parsed {
            questions,
            possible_stories,
            race,
        } = parse_file(&read_jsonl(f)?, choices)?;
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

#[cfg(test)]
mod tests {
    use super::*;
    use scorekit_io::read_jsonl_str;
    use scorekit_io::TextFile;

    fn parse(text: &str) -> Result<Parsed, InputError> {
        let f = TextFile {
            path: "t.jsonl".into(),
            text: text.into(),
        };
        parse_file(&read_jsonl_str(&f).unwrap(), None)
    }

    #[test]
    fn both_formats_per_line() {
        let p = parse(concat!(
            r#"{"question_id":"s1_q","document":"D","question":"Q?","options":["a","b","c","d"],"gold_label":2}"#,
            "\n",
            r#"{"example_id":"high1.txt-0","article":"A","question":"Q _","options":["w","x","y","z"],"answer":"B"}"#,
            "\n"
        ))
        .unwrap();
        assert_eq!((p.possible_stories, p.race), (1, 1));
        assert_eq!(p.questions[0].gold, 2);
        assert_eq!(p.questions[1].gold, 1);
        assert_eq!(p.questions[1].pair("x"), ("A".into(), "Q _ x".into()));
        assert_eq!(p.questions[1].passage_id, "high1.txt");
    }

    #[test]
    fn bad_lines_name_line_and_field() {
        let e = parse(r#"{"article":"A","question":"Q","options":["w","x","y","z"],"answer":"E"}"#)
            .unwrap_err();
        assert_eq!(
            (e.line, e.field.as_deref()),
            (Some(1), Some("answer")),
            "{e}"
        );
        let e = parse(concat!(
            r#"{"document":"D","question":"Q","options":["a","b","c","d"],"gold_label":0}"#,
            "\n",
            r#"{"document":"D","question":"Q","options":["a","b","c"],"gold_label":0}"#
        ))
        .unwrap_err();
        assert_eq!(
            (e.line, e.field.as_deref()),
            (Some(2), Some("options")),
            "{e}"
        );
        let e = parse(r#"{"document":"D","options":["a","b"],"gold_label":0}"#).unwrap_err();
        assert_eq!(e.field.as_deref(), Some("question"), "{e}");
    }
}

/// How a judge's picks spread over the option positions (defined beside its rendering in
/// report/, which cannot depend on this crate).
pub use scorekit_report::judge::PickDistribution;

/// The pick distribution of `picks` against `golds` over `options` positions.
pub fn pick_distribution(
    picks: &[Option<usize>],
    golds: &[usize],
    options: usize,
) -> PickDistribution {
    let name = |i: usize| {
        char::from_u32(u32::from(b'A') + i as u32)
            .filter(|_| i < 26)
            .map_or_else(|| format!("option {i}"), String::from)
    };
    let n = picks.len().max(1) as f64;
    let mut counts = std::collections::BTreeMap::new();
    let mut gold_counts = std::collections::BTreeMap::new();
    for i in 0..options {
        counts.insert(name(i), 0usize);
        gold_counts.insert(name(i), 0usize);
    }
    counts.insert("none".to_string(), 0);
    for p in picks {
        *counts
            .entry(p.map_or("none".to_string(), name))
            .or_default() += 1;
    }
    for &g in golds {
        *gold_counts.entry(name(g)).or_default() += 1;
    }
    let share: std::collections::BTreeMap<String, f64> = counts
        .iter()
        .map(|(k, &c)| (k.clone(), c as f64 / n))
        .collect();
    let gold_share: std::collections::BTreeMap<String, f64> = gold_counts
        .iter()
        .map(|(k, &c)| (k.clone(), c as f64 / golds.len().max(1) as f64))
        .collect();
    let total_variation = 0.5
        * share
            .iter()
            .map(|(k, s)| (s - gold_share.get(k).copied().unwrap_or(0.0)).abs())
            .sum::<f64>();
    PickDistribution {
        counts,
        share,
        gold_share,
        total_variation,
    }
}

#[cfg(test)]
mod pick_tests {
    use super::*;

    #[test]
    fn a_judge_that_always_says_a_is_as_far_from_uniform_gold_as_it_can_be_made() {
        let golds = [0, 1, 2, 3];
        let d = pick_distribution(&[Some(0); 4], &golds, 4);
        assert_eq!(d.counts["A"], 4);
        assert_eq!(d.counts["none"], 0);
        assert!((d.total_variation - 0.75).abs() < 1e-12);
        let d = pick_distribution(&[Some(0), Some(1), Some(2), None], &golds, 4);
        assert_eq!((d.counts["D"], d.counts["none"]), (0, 1));
        assert!((d.total_variation - 0.25).abs() < 1e-12);
        let d = pick_distribution(&[Some(3), Some(2), Some(1), Some(0)], &golds, 4);
        assert_eq!(d.total_variation, 0.0);
    }
}
