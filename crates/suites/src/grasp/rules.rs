//! The answer rules of the official GRASP scorer (`tools/compute_accuracy.py`), ported exactly:
//! last `<SEP>` turn, Python `str.split()` whitespace, ASCII punctuation removal, the open-ended
//! synonym table and its Direction phrase exception (spec §3, §4).

use crate::pystr::py_split;
use serde::{Deserialize, Serialize};

/// The literal that joins the turns of a conversation in `results.csv`.
pub const TURN_SEPARATOR: &str = "<SEP>";

/// A yes/no answer as the binary scorer reads it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Answer {
    /// The first token is exactly `yes`.
    Yes,
    /// The first token is exactly `no`.
    No,
    /// Anything else, an empty response included.
    Invalid,
}

/// The verdict on one row.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    /// The answer matches the gold label.
    Correct,
    /// A valid answer that does not match the gold label.
    False,
    /// No usable answer (binary: not yes/no; open: no label or several labels named).
    Invalid,
}

/// The last turn of a response: the last piece after splitting on the literal `<SEP>`.
pub fn last_turn(response: &str) -> &str {
    response.rsplit(TURN_SEPARATOR).next().unwrap_or(response)
}

/// Remove the 32 ASCII punctuation characters (Python `string.punctuation`) anywhere in a word;
/// non-ASCII punctuation such as curly quotes or the ellipsis stays, as upstream.
pub fn strip_ascii_punctuation(word: &str) -> String {
    word.chars().filter(|c| !c.is_ascii_punctuation()).collect()
}

/// The binary scorer's normalised token: first word of the last turn, lowercased, without ASCII
/// punctuation. `None` when the last turn has no word (upstream crashes there with `IndexError`).
pub fn binary_token(response: &str) -> Option<String> {
    py_split(last_turn(response))
        .next()
        .map(|tok| strip_ascii_punctuation(&tok.to_lowercase()))
}

/// Read a response as the binary scorer does.
pub fn binary_answer(response: &str) -> Answer {
    match binary_token(response).as_deref() {
        Some("yes") => Answer::Yes,
        Some("no") => Answer::No,
        _ => Answer::Invalid,
    }
}

/// Verdict of a binary answer against a gold `yes`/`no`. Invalid is never correct.
pub fn binary_verdict(answer: Answer, gold_yes: bool) -> Verdict {
    match (answer, gold_yes) {
        (Answer::Invalid, _) => Verdict::Invalid,
        (Answer::Yes, true) | (Answer::No, false) => Verdict::Correct,
        _ => Verdict::False,
    }
}

/// One open-ended label and the words that count as naming it.
pub type LabelWords = (&'static str, &'static [&'static str]);

/// `OPEN_CHOICES` of `tools/compute_accuracy.py` (with `square`, added in c04c24a), verbatim.
/// Scenes and labels are in sorted order, which is also the order of the report.
pub const OPEN_CHOICES: &[(&str, &[LabelWords])] = &[
    (
        "Color",
        &[
            ("black", &["black"]),
            ("blue", &["blue"]),
            ("green", &["green"]),
            ("red", &["red"]),
        ],
    ),
    (
        "Direction",
        &[
            (
                "backward",
                &["backward", "backwards", "down", "downward", "downwards"],
            ),
            (
                "forward",
                &["forward", "forwards", "up", "upward", "upwards"],
            ),
            ("left", &["left"]),
            ("right", &["right"]),
        ],
    ),
    (
        "RelationalPosition",
        &[("left", &["left"]), ("right", &["right"])],
    ),
    (
        "Shape",
        &[
            ("ball", &["ball", "sphere", "round"]),
            ("cube", &["cube", "box", "rectangular", "square"]),
        ],
    ),
];

/// The labels of an open-ended scene, or `None` for a scene without an open question.
pub fn open_labels(scene: &str) -> Option<&'static [LabelWords]> {
    OPEN_CHOICES
        .iter()
        .find(|(s, _)| *s == scene)
        .map(|(_, labels)| *labels)
}

/// Why an open-ended row cannot be scored (upstream: `KeyError`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OpenError {
    /// The scene has no open-ended question.
    UnknownScene,
    /// The gold label is not one of the scene's labels.
    UnknownLabel,
}

/// What the open-ended scorer made of one response.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OpenJudgement {
    /// Labels named by the response (after the Direction phrase exception), sorted.
    pub found: Vec<&'static str>,
    /// correct: only the gold label named; false: only other labels; invalid: both or none.
    pub verdict: Verdict,
}

/// Score an open-ended response for `scene` with gold label `gold` (spec §4).
pub fn judge_open(scene: &str, gold: &str, response: &str) -> Result<OpenJudgement, OpenError> {
    let labels = open_labels(scene).ok_or(OpenError::UnknownScene)?;
    if !labels.iter().any(|(l, _)| *l == gold) {
        return Err(OpenError::UnknownLabel);
    }
    let resp = last_turn(response).to_lowercase();
    let words: Vec<String> = py_split(&resp).map(strip_ascii_punctuation).collect();
    let skipped = direction_exception(scene, gold, &resp);
    let found: Vec<&'static str> = labels
        .iter()
        .filter(|(label, _)| Some(*label) != skipped)
        .filter(|(_, accepted)| words.iter().any(|w| accepted.contains(&w.as_str())))
        .map(|(label, _)| *label)
        .collect();
    let has_true = found.contains(&gold);
    let has_wrong = found.iter().any(|l| *l != gold);
    let verdict = match (has_true, has_wrong) {
        (true, false) => Verdict::Correct,
        (false, true) => Verdict::False,
        _ => Verdict::Invalid,
    };
    Ok(OpenJudgement { found, verdict })
}

/// "from right to left" describes a leftward roll, so for gold `left` the word `right` in such a
/// phrase is not a wrong answer (and vice versa). Tested on the lowercased text as written.
fn direction_exception(scene: &str, gold: &str, resp: &str) -> Option<&'static str> {
    if scene != "Direction" {
        return None;
    }
    match gold {
        "left" if resp.contains("right to left") || resp.contains("right to the left") => {
            Some("right")
        }
        "right" if resp.contains("left to right") || resp.contains("left to the right") => {
            Some("left")
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tok(s: &str) -> Option<String> {
        binary_token(s)
    }

    #[test]
    fn spec_examples_binary() {
        // Spec §4 illustrative cases.
        assert_eq!(binary_answer("(No) The ball is still."), Answer::No);
        assert_eq!(binary_answer("Certainly, yes."), Answer::Invalid);
    }

    #[test]
    fn only_the_last_turn_counts() {
        assert_eq!(binary_answer("No.<SEP>Yes"), Answer::Yes);
        assert_eq!(binary_answer("Let me think: yes<SEP>no"), Answer::No);
        // An empty last turn has no first token: invalid (upstream IndexError).
        assert_eq!(binary_answer("Yes<SEP>"), Answer::Invalid);
        assert_eq!(binary_answer("Yes<SEP>   \n"), Answer::Invalid);
        assert_eq!(last_turn("a<SEP>b<SEP>c"), "c");
        assert_eq!(last_turn("no separator"), "no separator");
        // A partial separator is not a separator.
        assert_eq!(binary_answer("No <SEP yes"), Answer::No);
    }

    #[test]
    fn first_token_is_lowercased_and_ascii_punctuation_goes_anywhere() {
        assert_eq!(tok("YES, it is"), Some("yes".into()));
        assert_eq!(binary_answer("**Yes**"), Answer::Yes);
        assert_eq!(binary_answer("\"no\""), Answer::No);
        assert_eq!(binary_answer("'Yes'."), Answer::Yes);
        assert_eq!(binary_answer("`no`"), Answer::No);
        assert_eq!(binary_answer("[Yes]"), Answer::Yes);
        assert_eq!(binary_answer("y.e.s"), Answer::Yes);
        // Hyphenated tokens lose the hyphen and become another word.
        assert_eq!(tok("yes-no question"), Some("yesno".into()));
        assert_eq!(binary_answer("yes-no question"), Answer::Invalid);
        assert_eq!(binary_answer("No-"), Answer::No);
        // Only the first token: "yes" later in the sentence does not count.
        assert_eq!(binary_answer("The answer is yes"), Answer::Invalid);
        assert_eq!(binary_answer("Yesterday"), Answer::Invalid);
        assert_eq!(binary_answer("Nope"), Answer::Invalid);
        assert_eq!(binary_answer("..."), Answer::Invalid);
    }

    #[test]
    fn non_ascii_punctuation_is_kept() {
        // Curly quotes, ellipsis, guillemets and fullwidth letters are not ASCII punctuation.
        assert_eq!(binary_answer("“Yes”"), Answer::Invalid);
        assert_eq!(binary_answer("Yes…"), Answer::Invalid);
        assert_eq!(binary_answer("«no»"), Answer::Invalid);
        assert_eq!(binary_answer("no。"), Answer::Invalid);
        assert_eq!(binary_answer("Ｙｅｓ"), Answer::Invalid);
        assert_eq!(tok("‘no’"), Some("‘no’".into()));
    }

    #[test]
    fn python_whitespace_splits_tokens() {
        // U+001F is whitespace for Python but not for Rust's char::is_whitespace.
        assert_eq!(binary_answer("\u{1f}yes\u{1f}it is"), Answer::Yes);
        assert_eq!(binary_answer("no\u{1c}way"), Answer::No);
        assert_eq!(
            binary_answer("\u{a0}\u{3000}Yes\u{2009}indeed"),
            Answer::Yes
        );
        assert_eq!(binary_answer("\r\n\tNo\r\n"), Answer::No);
        // Zero-width space is not whitespace for Python either.
        assert_eq!(binary_answer("yes\u{200b}"), Answer::Invalid);
    }

    #[test]
    fn empty_and_na_cells_are_invalid() {
        // Upstream's pandas turns these into NaN and crashes; here they are plain strings.
        for s in ["", " ", "NA", "NaN", "null", "None", "N/A", "nan", "<NA>"] {
            assert_eq!(binary_answer(s), Answer::Invalid, "{s:?}");
        }
    }

    #[test]
    fn binary_verdicts() {
        assert_eq!(binary_verdict(Answer::Yes, true), Verdict::Correct);
        assert_eq!(binary_verdict(Answer::No, false), Verdict::Correct);
        assert_eq!(binary_verdict(Answer::Yes, false), Verdict::False);
        assert_eq!(binary_verdict(Answer::No, true), Verdict::False);
        assert_eq!(binary_verdict(Answer::Invalid, true), Verdict::Invalid);
        assert_eq!(binary_verdict(Answer::Invalid, false), Verdict::Invalid);
    }

    fn open(scene: &str, gold: &str, resp: &str) -> (Vec<&'static str>, Verdict) {
        let j = judge_open(scene, gold, resp).unwrap();
        (j.found, j.verdict)
    }

    #[test]
    fn spec_examples_open() {
        assert_eq!(
            open("Color", "blue", "The object is blue."),
            (vec!["blue"], Verdict::Correct)
        );
        assert_eq!(
            open("Shape", "cube", "It looks like a box"),
            (vec!["cube"], Verdict::Correct)
        );
        assert_eq!(
            open("Direction", "left", "It travels from right to the left"),
            (vec!["left"], Verdict::Correct)
        );
    }

    #[test]
    fn open_synonyms_and_verdicts() {
        assert_eq!(
            open("Direction", "forward", "It rolls UPWARDS!").1,
            Verdict::Correct
        );
        assert_eq!(open("Direction", "backward", "down.").1, Verdict::Correct);
        assert_eq!(
            open("Direction", "forward", "The ball rolls downward"),
            (vec!["backward"], Verdict::False)
        );
        assert_eq!(open("Shape", "ball", "A round object").1, Verdict::Correct);
        assert_eq!(open("Shape", "cube", "a square").1, Verdict::Correct);
        assert_eq!(
            open("Shape", "ball", "A rectangular block").1,
            Verdict::False
        );
        // Both the true and a wrong label: invalid. Neither: invalid.
        assert_eq!(
            open("Color", "red", "Red or green?"),
            (vec!["green", "red"], Verdict::Invalid)
        );
        assert_eq!(
            open("Color", "red", "I cannot tell."),
            (vec![], Verdict::Invalid)
        );
        assert_eq!(open("Color", "red", "").1, Verdict::Invalid);
        // Last turn only.
        assert_eq!(open("Color", "red", "green<SEP>red").1, Verdict::Correct);
        assert_eq!(open("Color", "red", "red<SEP>").1, Verdict::Invalid);
    }

    #[test]
    fn open_matches_whole_words_never_substrings() {
        // "reddish", "blues", "boxes", "leftmost" and "upright" name nothing.
        assert_eq!(open("Color", "red", "reddish").1, Verdict::Invalid);
        assert_eq!(open("Color", "blue", "blues").1, Verdict::Invalid);
        assert_eq!(open("Shape", "cube", "boxes").1, Verdict::Invalid);
        assert_eq!(
            open("RelationalPosition", "left", "leftmost").1,
            Verdict::Invalid
        );
        assert_eq!(open("Direction", "forward", "upright").1, Verdict::Invalid);
        // Hyphenated words are joined, not split: "left-hand" -> "lefthand".
        assert_eq!(
            open("RelationalPosition", "left", "left-hand side").1,
            Verdict::Invalid
        );
    }

    #[test]
    fn open_quotes_and_markdown_around_the_answer() {
        assert_eq!(open("Color", "black", "**Black**").1, Verdict::Correct);
        assert_eq!(open("Color", "black", "\"black\".").1, Verdict::Correct);
        assert_eq!(open("Color", "black", "`black`").1, Verdict::Correct);
        assert_eq!(open("Color", "black", "(black)").1, Verdict::Correct);
        // Curly quotes stay attached, so the word is not "black".
        assert_eq!(open("Color", "black", "“black”").1, Verdict::Invalid);
        assert_eq!(open("Color", "black", "black…").1, Verdict::Invalid);
        // ASCII punctuation between words does not split them.
        assert_eq!(open("Color", "black", "black/white").1, Verdict::Invalid);
    }

    #[test]
    fn direction_phrase_exception() {
        // Gold left: "right" inside "right to left" is not checked.
        assert_eq!(
            open("Direction", "left", "From right to left.").1,
            Verdict::Correct
        );
        // The phrase must be there verbatim: punctuation or double spaces break it.
        assert_eq!(
            open("Direction", "left", "From right, to left.").1,
            Verdict::Invalid
        );
        assert_eq!(
            open("Direction", "left", "From right  to left.").1,
            Verdict::Invalid
        );
        // Case does not matter (the test runs on the lowercased text).
        assert_eq!(
            open("Direction", "left", "RIGHT TO LEFT").1,
            Verdict::Correct
        );
        // Gold right, phrase left to (the) right.
        assert_eq!(
            open("Direction", "right", "it moves left to the right").1,
            Verdict::Correct
        );
        // The exception only skips the opposite side, not other labels.
        assert_eq!(
            open("Direction", "left", "right to left and then up").1,
            Verdict::Invalid
        );
        // Gold right with "right to left": no exception, both named: invalid.
        assert_eq!(
            open("Direction", "right", "right to left").1,
            Verdict::Invalid
        );
        assert_eq!(open("Direction", "left", "to the right").1, Verdict::False);
        // Not for RelationalPosition.
        assert_eq!(
            open("RelationalPosition", "left", "right to left").1,
            Verdict::Invalid
        );
        // Substring test: "bright to left" contains "right to left" (upstream does the same).
        assert_eq!(
            open("Direction", "left", "bright to left").1,
            Verdict::Correct
        );
    }

    #[test]
    fn unknown_scene_or_label_is_an_error() {
        assert_eq!(
            judge_open("Movement", "moving", "it moves"),
            Err(OpenError::UnknownScene)
        );
        assert_eq!(
            judge_open("Color", "purple", "purple"),
            Err(OpenError::UnknownLabel)
        );
        // Labels are case-sensitive, as upstream's dictionary lookup.
        assert_eq!(
            judge_open("Color", "Red", "red"),
            Err(OpenError::UnknownLabel)
        );
    }

    #[test]
    fn the_table_is_the_upstream_table() {
        let words: usize = OPEN_CHOICES
            .iter()
            .flat_map(|(_, l)| l.iter())
            .map(|(_, w)| w.len())
            .sum();
        assert_eq!(words, 5 + 5 + 1 + 1 + 3 + 4 + 4 + 2);
        for (scene, labels) in OPEN_CHOICES {
            let names: Vec<_> = labels.iter().map(|(l, _)| *l).collect();
            let mut sorted = names.clone();
            sorted.sort();
            assert_eq!(names, sorted, "{scene}");
        }
    }
}
