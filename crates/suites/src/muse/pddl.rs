//! PDDL plans (Hive-style planners): a classical planner's output over MuSE's PDDL domains, read
//! into plan steps.
//!
//! A plan is one grounded action a line, `(action arg ...)`, as Fast Downward writes `sas_plan`:
//! `;` starts a comment (its `; cost = N (unit cost)` line included), blank lines are skipped,
//! and a `N:` or `step N:` prefix (FF-style numbering) is allowed. Names are read case-blind.
//!
//! Dependencies: MuSE's domains create no objects (every effect is a predicate over the action's
//! inputs), so a plan carries order, not data flow. Our reading (docs/muse.md):
//! - arguments beyond the action's declared parameters ([`ACTIONS`]) are the objects the step
//!   produces (a planner whose problem names its intermediate results writes them there);
//! - a step depends on every earlier step whose produced object it takes as an argument;
//! - a step that takes no produced object depends on the step before it (a sequential plan).

use super::node::Node;

/// The 28 actions of MuSE's 10 PDDL domains (`PDDL-domain-files/*.pddl` of
/// dgraux/Hive-ICLR-2025 @858763b): (domain, action, number of parameters). Checked against the
/// domain files by `tests/muse.rs`.
pub const ACTIONS: [(&str, &str, usize); 28] = [
    ("audio", "text_to_audio", 1),
    ("audio", "audio_to_audio", 1),
    ("audio", "audio_to_text", 1),
    ("image_generation", "text_to_image", 1),
    ("image_generation", "image_refinement", 2),
    ("image_to_image", "image_segmentation", 1),
    ("image_to_image", "estimate_depth_of_image", 1),
    ("image_to_text", "classify_image", 1),
    ("image_to_text", "detect_objects_in_image", 1),
    ("image_to_text", "caption_image", 1),
    ("image_to_text", "answer_question_based_on_image", 2),
    ("machine_translation", "get_translation", 3),
    ("machine_translation", "back_translation", 3),
    ("machine_translation", "translation_evaluation", 3),
    ("question_answering", "get_answer_when_context_is_given", 2),
    ("question_answering", "generate_answer_without_context", 1),
    (
        "question_answering",
        "get_answer_when_data_or_table_is_given",
        2,
    ),
    ("summarisation", "get_extractive_summarization", 1),
    ("summarisation", "get_abstractive_summarization", 1),
    ("summarisation", "get_instruction_based_summary", 2),
    ("summarisation", "summarization_evaluation", 3),
    ("text_classification", "classify_text", 2),
    ("text_classification", "find_sentiment", 1),
    ("text_classification", "classify_spam", 1),
    ("text_generation", "generate_or_write_text", 1),
    ("text_generation", "generate_or_write_code", 1),
    ("token_classification", "get_named_entities", 1),
    ("token_classification", "get_part_of_speech", 1),
];

/// Domain actions that map to no MuSE task (their comments describe none of the 18): they stay
/// unknown names, which count as extra tasks.
pub const UNMAPPED: [&str; 6] = [
    "audio_to_audio",
    "image_refinement",
    "image_segmentation",
    "translation_evaluation",
    "summarization_evaluation",
    "get_part_of_speech",
];

/// Number of declared parameters of a domain action (case-blind), `None` for other names.
pub fn arity(action: &str) -> Option<usize> {
    ACTIONS
        .iter()
        .find(|a| a.1.eq_ignore_ascii_case(action))
        .map(|a| a.2)
}

/// One grounded action of a plan text: its name and arguments, lower-cased.
fn action_of(line: &str) -> Option<(String, Vec<String>)> {
    let mut s = line.trim();
    // `12:` or `step 12:` numbering.
    if let Some((head, rest)) = s.split_once(':') {
        let head = head.trim();
        let head = head
            .strip_prefix("step")
            .or_else(|| head.strip_prefix("STEP"))
            .unwrap_or(head)
            .trim();
        if !head.is_empty() && head.chars().all(|c| c.is_ascii_digit()) {
            s = rest.trim();
        }
    }
    let inner = s.strip_prefix('(')?.strip_suffix(')')?;
    if inner.contains(['(', ')']) {
        return None;
    }
    let mut words = inner.split_whitespace().map(str::to_lowercase);
    let name = words.next()?;
    Some((name, words.collect()))
}

/// Read a plan text into steps with ids `0`, `1`, ... in plan order (see the module docs for the
/// dependencies). An error says which line of the plan is not an action, or that it has none.
pub fn read_plan(text: &str) -> Result<Vec<Node>, String> {
    let mut steps: Vec<(String, Vec<String>)> = Vec::new();
    for (k, raw) in text.lines().enumerate() {
        let line = raw.split(';').next().unwrap_or("").trim();
        if line.is_empty() {
            continue;
        }
        let step = action_of(line).ok_or_else(|| {
            format!(
                "line {} of the plan is not an action `(name arg ...)`: {:?}",
                k + 1,
                raw.trim()
            )
        })?;
        steps.push(step);
    }
    let produced: Vec<&[String]> = steps
        .iter()
        .map(|(name, args)| match arity(name) {
            Some(n) if args.len() > n => &args[n..],
            _ => &[][..],
        })
        .collect();
    Ok(steps
        .iter()
        .enumerate()
        .map(|(j, (name, args))| {
            let mut deps: Vec<String> = (0..j)
                .filter(|&i| produced[i].iter().any(|o| args.contains(o)))
                .map(|i| i.to_string())
                .collect();
            if deps.is_empty() && j > 0 {
                deps.push((j - 1).to_string());
            }
            Node {
                id: j.to_string(),
                names: vec![name.clone()],
                deps,
                returns: Vec::new(),
            }
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fast_downward_output_is_a_sequential_plan() {
        let plan =
            "(audio_to_text input_audio)\n(TEXT_TO_IMAGE INPUT_TEXT)\n; cost = 2 (unit cost)\n";
        let nodes = read_plan(plan).unwrap();
        assert_eq!(nodes.len(), 2);
        assert_eq!(nodes[0].names, ["audio_to_text"]);
        assert!(nodes[0].deps.is_empty());
        assert_eq!(nodes[1].names, ["text_to_image"]);
        assert_eq!(nodes[1].deps, ["0"]);
    }

    #[test]
    fn produced_objects_make_data_edges() {
        // Step 2 takes step 0's transcript (an argument beyond audio_to_text's one parameter),
        // not step 1's output: it depends on step 0 only.
        let plan = "0: (audio_to_text audio1 transcript)\n\
                    step 1: (get_translation en fr text2 french)\n\
                    (get_abstractive_summarization transcript) ; uses the transcript\n";
        let nodes = read_plan(plan).unwrap();
        assert_eq!(nodes[1].deps, ["0"]);
        assert_eq!(nodes[2].deps, ["0"]);
        let chained = read_plan("(a x y)\n(b y z)\n(c z)").unwrap();
        // Unknown actions have no declared parameters: nothing they take counts as produced.
        assert_eq!(chained[2].deps, ["1"]);
    }

    #[test]
    fn a_line_that_is_no_action_is_named() {
        let e = read_plan("(text_to_image t)\nI could not find a plan").unwrap_err();
        assert!(e.starts_with("line 2 of the plan"), "{e}");
        assert!(read_plan("; cost = 0\n\n").unwrap().is_empty());
        assert!(read_plan("((nested))").is_err());
    }
}
