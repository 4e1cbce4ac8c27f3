//! Native re-implementations of MINT's answer checkers for GSM8K, MATH, HotpotQA and MMLU
//! (spec §2.1, §3.1, §3.2), including their documented quirks, so that a re-check reproduces
//! the stored verdicts rather than an idealised grader.

use super::pyfloat::{py_float, py_isdigit, py_lower};
use crate::pystr::py_strip;
use regex::Regex;
use std::sync::OnceLock;

/// Which tolerance rule `ReasoningTask` uses (spec §3.1, §6.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum Tolerance {
    /// `|ref - ans| <= 0.05 * ref`: the checker that produced every stored flag and published
    /// number; a negative reference can never match a number.
    Pre,
    /// `|ref - ans| <= 0.05 * |ref|`: upstream HEAD.
    Head,
}

impl Tolerance {
    /// Name used in settings and reports.
    pub fn name(self) -> &'static str {
        match self {
            Tolerance::Pre => "pre",
            Tolerance::Head => "head",
        }
    }

    /// The tolerance called `name` ([`Tolerance::name`]).
    pub fn from_name(name: &str) -> Option<Self> {
        [Tolerance::Pre, Tolerance::Head]
            .into_iter()
            .find(|t| t.name() == name)
    }

    /// The numeric rule, for reports.
    pub fn rule(self) -> &'static str {
        match self {
            Tolerance::Pre => {
                "|ref - ans| <= 0.05 * ref (the checker behind the stored flags; a negative \
                 reference never matches)"
            }
            Tolerance::Head => "|ref - ans| <= 0.05 * |ref| (upstream HEAD)",
        }
    }
}

fn solution_re() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| Regex::new(r"(?s)<solution>(.*?)</solution>").expect("valid regex"))
}

/// The raw model output of an assistant message: upstream logs `"Assistant:\n" + output + "\n"`
/// unless the output already starts with `Assistant:`.
pub fn model_output(content: &str) -> &str {
    match content.strip_prefix("Assistant:\n") {
        Some(rest) => rest.strip_suffix('\n').unwrap_or(rest),
        None => content,
    }
}

/// The answers proposed in one model output (§2.1): `None` when the turn is not a proposal
/// (no `<solution>`), `Some(None)` for a malformed proposal, `Some(Some(answer))` otherwise.
pub fn proposal(output: &str) -> Option<Option<String>> {
    if !output.contains("<solution>") {
        return None;
    }
    let padded = format!("\n{output}\n");
    let parts: Vec<&str> = solution_re()
        .captures_iter(&padded)
        .map(|c| py_strip(c.get(1).map_or("", |m| m.as_str())))
        .collect();
    let joined = parts.join("\n");
    // Upstream tests the joined text for emptiness after stripping each part.
    Some((!joined.is_empty()).then_some(joined))
}

/// `ReasoningTask.success` (GSM8K, MATH, HotpotQA). `reference` is the raw reference string.
pub fn reasoning_success(reference: &str, solution: &str, tol: Tolerance) -> bool {
    let r = py_lower(py_strip(reference));
    let a = py_strip(&py_lower(solution)).to_string();
    match (py_float(&r), py_float(&a)) {
        (Some(fr), Some(fa)) => {
            let bound = match tol {
                Tolerance::Pre => 0.05 * fr,
                Tolerance::Head => 0.05 * fr.abs(),
            };
            // NaN anywhere makes the comparison false, as in Python.
            (fr - fa).abs() <= bound
        }
        _ => a.contains(r.as_str()),
    }
}

/// `MultipleChoiceTask.extract_options`: letter -> content, from the task prompt.
pub fn mmlu_options(prompt: &str) -> Vec<(String, String)> {
    let tail = prompt.rsplit("Options: ").next().unwrap_or(prompt);
    let mut options: Vec<(String, String)> = Vec::new();
    for piece in tail.split(" , ") {
        let piece = piece.trim_matches(|c| matches!(c, '[' | ']' | '\'' | ' '));
        let mut parts = piece.split(')');
        let letter = py_strip(&py_lower(parts.next().unwrap_or(""))).to_string();
        // `option[1]` raises IndexError when the piece has no ')': the task cannot be built.
        let Some(second) = parts.next() else {
            continue;
        };
        let content = py_strip(py_lower(second).trim_matches('.')).to_string();
        // dict.update: a repeated letter overwrites the earlier one but keeps its position.
        match options.iter_mut().find(|(l, _)| *l == letter) {
            Some(slot) => slot.1 = content,
            None => options.push((letter, content)),
        }
    }
    options
}

/// `MultipleChoiceTask.compare_w_digits`; `Err` where Python raises (an `isdigit` string that
/// `float` rejects, such as a superscript digit), which upstream counts as not a success.
fn mc_cmp(r: &str, a: &str) -> Result<bool, ()> {
    if py_isdigit(r) && py_isdigit(a) {
        let (fr, fa) = (py_float(r).ok_or(())?, py_float(a).ok_or(())?);
        Ok((fr - fa).abs() <= 0.05 * fr)
    } else {
        Ok(a.contains(r))
    }
}

/// `MultipleChoiceTask.success` with every quirk of spec §3.2.
pub fn mmlu_success(reference: &str, options: &[(String, String)], solution: &str) -> bool {
    mmlu_success_inner(reference, options, solution).unwrap_or(false)
}

fn mmlu_success_inner(
    reference: &str,
    options: &[(String, String)],
    solution: &str,
) -> Result<bool, ()> {
    let r = py_lower(py_strip(reference));
    let s = py_lower(solution);
    let s = py_strip(&s);
    // The letter loop returns on its first iteration: only `a` is ever detected.
    let answer = if s.contains("a)") || s.contains("a )") {
        "a"
    } else {
        s
    };
    if mc_cmp(&r, answer)? {
        return Ok(true);
    }
    let correct = &options.iter().find(|(l, _)| *l == r).ok_or(())?.1;
    let mut wrong: Vec<&str> = options.iter().map(|(_, c)| c.as_str()).collect();
    // Python's `for i in list: if cond: list.remove(i)`: removal shifts the list under the
    // iterator, so the element after a removed one is skipped.
    let mut p = 0;
    while p < wrong.len() {
        if correct.contains(wrong[p]) {
            let target = wrong[p];
            let first = wrong.iter().position(|w| *w == target).expect("present");
            wrong.remove(first);
        }
        p += 1;
    }
    for w in &wrong {
        if mc_cmp(w, answer)? || answer.contains(w) {
            return Ok(false);
        }
    }
    Ok(mc_cmp(correct, answer)? || answer.contains(correct.as_str()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use Tolerance::*;

    #[test]
    fn proposals_follow_the_action_parser() {
        assert_eq!(proposal("<execute>x</execute>"), None);
        assert_eq!(
            proposal("a <solution> 42 </solution>"),
            Some(Some("42".into()))
        );
        assert_eq!(
            proposal("<solution>1</solution> and <solution>\n2 </solution>"),
            Some(Some("1\n2".into()))
        );
        assert_eq!(proposal("<solution> 42"), Some(None));
        assert_eq!(proposal("<solution>  </solution>"), Some(None));
        // Non-greedy from the first opening tag, as Python's re.
        assert_eq!(
            proposal("<solution> x <solution> 6 </solution>"),
            Some(Some("x <solution> 6".into()))
        );
        assert_eq!(model_output("Assistant:\nhi\n"), "hi");
    }

    #[test]
    fn numbers_units_commas_percent() {
        assert!(reasoning_success("6", "6 miles per hour", Pre));
        assert!(reasoning_success("36", "136 apples", Pre));
        assert!(!reasoning_success("10.0", "10 square units", Pre));
        assert!(!reasoning_success("1000", "1,000", Pre));
        assert!(reasoning_success("1000", "1_000", Pre));
        assert!(reasoning_success("100", "104.9", Pre));
        assert!(!reasoning_success("100", "105.1", Pre));
        assert!(!reasoning_success("0.0", "0.001", Pre));
        assert!(reasoning_success("0.0", "-0", Pre));
        // Percentages are not floats: "50%" passes for 50 by substring, never for 0.5.
        assert!(reasoning_success("50", "50%", Pre));
        assert!(!reasoning_success("0.5", "50%", Pre));
        assert!(!reasoning_success("10", "nan", Head));
        assert!(reasoning_success("yes", "Yes, it is", Pre));
        assert!(reasoning_success("no", "I do not know", Pre));
    }

    #[test]
    fn fractions_and_latex_fall_back_to_substring() {
        assert!(!reasoning_success("0.5", "1/2", Pre));
        assert!(!reasoning_success("0.5", "\\frac{1}{2}", Pre));
        assert!(reasoning_success("2.0", "\\boxed{2.0}", Pre));
        assert!(!reasoning_success("2.0", "\\boxed{2}", Pre));
    }

    #[test]
    fn negative_answers_need_head_tolerance() {
        assert!(!reasoning_success("-108.0", "-108", Pre));
        assert!(reasoning_success("-108.0", "-108", Head));
        assert!(!reasoning_success("-108.0", "-120", Head));
        // A non-numeric answer still passes by substring under either rule.
        assert!(reasoning_success("-108.0", "x = -108.0", Pre));
    }

    fn opts() -> Vec<(String, String)> {
        mmlu_options("Q?\nOptions: A ) 6 , B ) 121 , C ) 18107 , D ) 54,320")
    }

    #[test]
    fn mmlu_options_parse() {
        let o = opts();
        assert_eq!(o[2], ("c".into(), "18107".into()));
        assert_eq!(o[3], ("d".into(), "54,320".into()));
        let o = mmlu_options("Options: A ) f(x) is odd. , B ) none");
        assert_eq!(o[0], ("a".into(), "f(x".into()));
    }

    #[test]
    fn mmlu_letters_and_leniency() {
        let o = opts();
        assert!(mmlu_success("c", &o, "C) 18107"));
        assert!(mmlu_success("c", &o, "C"));
        // Any answer containing the letter passes.
        assert!(mmlu_success("a", &o, "None of the above"));
        assert!(mmlu_success("c", &o, "I pick 6"));
        // `a)` is captured as the letter a.
        assert!(!mmlu_success("c", &o, "(a) 6"));
        assert!(mmlu_success("a", &o, "(a) 6"));
        // Content match: "18107" contains no c, no wrong option content.
        let o2 = mmlu_options("Options: A ) 6 , B ) 121 , C ) 18107 , D ) 5");
        assert!(mmlu_success("c", &o2, "18107"));
        // A wrong option's content in the answer fails it.
        assert!(!mmlu_success("b", &o2, "5"));
        // Missing reference letter raises upstream: not a success.
        assert!(!mmlu_success("e", &o2, "7"));
    }

    #[test]
    fn mmlu_prune_skips_after_removal() {
        // Options "1", "1", "x": correct "1". The first "1" is removed; the second (now at p=0)
        // is skipped; so "1" stays in the wrong list and an answer "1" fails.
        let o = vec![
            ("a".to_string(), "1".to_string()),
            ("b".to_string(), "1".to_string()),
            ("c".to_string(), "x".to_string()),
        ];
        assert!(!mmlu_success("b", &o, "9 1"));
    }
}
