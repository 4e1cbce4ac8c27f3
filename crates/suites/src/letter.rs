//! The letter judge's protocol, as nii-cl/possible-stories' run_llm.py (commit 3f8c525) asks
//! Flan-T5: a zero-shot prompt naming the options (A)–(D), and the pick read from the generated
//! text as the first character among `A B C D` (none: wrong). Plain functions over text; the
//! model that answers lives in the runtime.
//!
//! Beyond the authors, [`rotations`] and [`majority`] give the cyclic option orders: the judge
//! asked once per rotation of the options, each answer mapped back to its option, the majority
//! taken, so that a judge's preference for a position cannot decide a verdict alone.

/// The instruction run_llm.py puts before every prompt.
pub const INSTRUCTION: &str =
    "Read the given passage and answer the multiple choice question about it.\n";

/// The option letters, in order.
pub const LETTERS: &str = "ABCD";

/// run_llm.py's `multiple_choice_to_prompt(passage, question, options, answer)`: the passage,
/// the question, the options as `(A) ... (B) ...`, then `Answer:` (with the answer and a newline
/// for a demonstration). Options beyond four are dropped, as `zip("ABCD", options)` drops them.
pub fn question_block(passage: &str, question: &str, options: &[&str], answer: &str) -> String {
    let opts: Vec<String> = LETTERS
        .chars()
        .zip(options)
        .map(|(l, o)| format!("({l}) {o}"))
        .collect();
    let mut out = format!(
        "Passage: {passage}\nQuestion: {question}\nOptions: {}\n",
        opts.join(" ")
    );
    // `if answer:` — an empty answer leaves the prompt open.
    if answer.is_empty() {
        out.push_str("Answer:");
    } else {
        out.push_str(&format!("Answer: {answer}\n"));
    }
    out
}

/// The zero-shot prompt: the instruction, an empty demonstration block, a newline, the question
/// (`instruction + few_shot_prompt + "\n" + ex_prompt` with no demonstrations).
pub fn zero_shot_prompt(passage: &str, question: &str, options: &[&str]) -> String {
    prompt("", passage, question, options)
}

/// The prompt with a demonstrations block (see [`shots_block`]; empty for zero-shot):
/// `instruction + few_shot_prompt + "\n" + ex_prompt`.
pub fn prompt(shots: &str, passage: &str, question: &str, options: &[&str]) -> String {
    format!(
        "{INSTRUCTION}{shots}\n{}",
        question_block(passage, question, options, "")
    )
}

/// How a demonstration's answer is written (`--shot-answers`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum ShotAnswers {
    /// The gold option's letter, `Answer: B` (what the prompt asks for; the default).
    Letters,
    /// run_llm.py's bug, reproduced: `Answer: {gold_label}` prints the integer, and a label of 0
    /// (falsy in `if answer:`) leaves `Answer:` open with no newline. Its 3-shot 81.4% was
    /// measured with these.
    Integers,
}

/// The demonstrations of a k-shot prompt: each question with its answer, joined by newlines, as
/// run_llm.py's `"\n".join(multiple_choice_to_prompt(..., ex[gold_label]) ...)`.
pub fn shots_block(demos: &[&crate::story::Question], answers: ShotAnswers) -> String {
    demos
        .iter()
        .map(|q| {
            let answer = match answers {
                ShotAnswers::Letters => LETTERS
                    .chars()
                    .nth(q.gold)
                    .map(String::from)
                    .unwrap_or_default(),
                ShotAnswers::Integers if q.gold == 0 => String::new(),
                ShotAnswers::Integers => q.gold.to_string(),
            };
            let options: Vec<&str> = q.options.iter().map(String::as_str).collect();
            question_block(&q.document, &q.question, &options, &answer)
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// run_llm.py's demonstrations: `random.seed(seed)` then `random.sample(train, k)`, as indices
/// into `train` in the order drawn. `None` when `k` exceeds the training questions.
pub fn sample_shots(train: usize, k: usize, seed: u64) -> Option<Vec<usize>> {
    crate::pyrandom::PyRandom::seed(seed).sample(train, k)
}

/// The option a generated answer picks: the first character of the text among `A B C D`
/// (`None` when there is none: run_llm.py's "E", always wrong).
pub fn pick(answer: &str) -> Option<usize> {
    answer.chars().find_map(|c| LETTERS.find(c))
}

/// The option orders asked under `--option-orders cyclic`: rotation `r` shows option
/// `(j + r) % n` at position `j`. Rotation 0 is the dataset's order.
pub fn rotations<'a>(options: &[&'a str]) -> Vec<Vec<&'a str>> {
    let n = options.len();
    (0..n)
        .map(|r| (0..n).map(|j| options[(j + r) % n]).collect())
        .collect()
}

/// The option a pick of position `pick` means under rotation `r` of `n` options.
pub fn unrotate(pick: Option<usize>, r: usize, n: usize) -> Option<usize> {
    pick.map(|j| (j + r) % n)
}

/// The verdict of the cyclic orders: the option picked by the most rotations (`picks[r]` is
/// rotation `r`'s pick, already mapped back to options); a tie goes to the unrotated pick when
/// it is among the tied, else to the lowest option index. `None` when no rotation picked any
/// option. Also the share of rotations that agree with the verdict.
pub fn majority(picks: &[Option<usize>], n: usize) -> (Option<usize>, f64) {
    let mut counts = vec![0usize; n];
    for p in picks.iter().flatten() {
        if *p < n {
            counts[*p] += 1;
        }
    }
    let best = counts.iter().copied().max().unwrap_or(0);
    if best == 0 {
        let agree = picks.iter().filter(|p| p.is_none()).count();
        return (None, agree as f64 / picks.len().max(1) as f64);
    }
    let tied: Vec<usize> = (0..n).filter(|&i| counts[i] == best).collect();
    let verdict = match picks.first().copied().flatten() {
        Some(p) if tied.contains(&p) => p,
        _ => tied[0],
    };
    (Some(verdict), best as f64 / picks.len().max(1) as f64)
}

/// A letter judge's answers to every rotation of `n` options (`answers[r]` answers rotation
/// `r`): each answer's pick mapped back to its option, their [`majority`] and its agreement.
pub fn cyclic_picks(answers: &[&str]) -> (Vec<Option<usize>>, Option<usize>, f64) {
    let n = answers.len();
    let picks: Vec<Option<usize>> = answers
        .iter()
        .enumerate()
        .map(|(r, a)| unrotate(pick(a), r, n))
        .collect();
    let (verdict, agreement) = majority(&picks, n);
    (picks, verdict, agreement)
}

/// IFSM's protocol for a letter judge: the ending follows when the answer with the ending in the
/// gold slot picks the gold letter; the ceiling's item is the answer on the human options.
pub fn letter_verdict(
    gold_answer: &str,
    ending_answer: &str,
    gold: usize,
) -> crate::story::JudgeVerdict {
    let ending_pick = pick(ending_answer);
    let gold_pick = pick(gold_answer);
    crate::story::JudgeVerdict {
        judge_scores: Vec::new(),
        judge_pick: ending_pick,
        follow: ending_pick == Some(gold),
        judge_gold_scores: Vec::new(),
        judge_gold_pick: gold_pick,
        judge_correct: gold_pick == Some(gold),
        judge_answer: Some(ending_answer.to_string()),
        judge_gold_answer: Some(gold_answer.to_string()),
        letter_logits: None,
        letter_mass: None,
        gold_letter_logits: None,
        gold_letter_mass: None,
        truncated: false,
        cyclic: None,
    }
}

/// [`letter_verdict`] on rotation 0 (the reference protocol), plus the majority of every
/// rotation: `gold_answers[r]` and `ending_answers[r]` answer the options rotated by `r`.
pub fn letter_verdict_cyclic(
    gold_answers: &[&str],
    ending_answers: &[&str],
    gold: usize,
) -> crate::story::JudgeVerdict {
    let mut v = letter_verdict(gold_answers[0], ending_answers[0], gold);
    let (judge_picks, judge_pick, agreement) = cyclic_picks(ending_answers);
    let (judge_gold_picks, judge_gold_pick, _) = cyclic_picks(gold_answers);
    v.cyclic = Some(Box::new(crate::story::CyclicVerdict {
        follow: judge_pick == Some(gold),
        judge_correct: judge_gold_pick == Some(gold),
        judge_picks,
        judge_pick,
        judge_gold_picks,
        judge_gold_pick,
        agreement,
    }));
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_prompt_is_run_llm_py_byte_for_byte() {
        let p = zero_shot_prompt("P.", "Q?", &["a", "b", "c", "d"]);
        assert_eq!(
            p,
            "Read the given passage and answer the multiple choice question about it.\n\n\
             Passage: P.\nQuestion: Q?\nOptions: (A) a (B) b (C) c (D) d\nAnswer:"
        );
        assert_eq!(
            question_block("P.", "Q?", &["a", "b"], "B"),
            "Passage: P.\nQuestion: Q?\nOptions: (A) a (B) b\nAnswer: B\n"
        );
    }

    fn q(gold: usize) -> crate::story::Question {
        crate::story::Question {
            id: format!("s_{gold}"),
            row: 1,
            passage_id: "s".into(),
            question: "Q?".into(),
            document: "P.".into(),
            options: vec!["a".into(), "b".into(), "c".into(), "d".into()],
            gold,
        }
    }

    #[test]
    fn k_shot_demonstrations_are_run_llm_py_s_with_letters_or_its_integers() {
        let (a, b) = (q(0), q(2));
        let letters = shots_block(&[&a, &b], ShotAnswers::Letters);
        assert_eq!(
            letters,
            "Passage: P.\nQuestion: Q?\nOptions: (A) a (B) b (C) c (D) d\nAnswer: A\n\n\
             Passage: P.\nQuestion: Q?\nOptions: (A) a (B) b (C) c (D) d\nAnswer: C\n"
        );
        // The bug: label 0 leaves the answer open, label 2 prints "2".
        let ints = shots_block(&[&a, &b], ShotAnswers::Integers);
        assert_eq!(
            ints,
            "Passage: P.\nQuestion: Q?\nOptions: (A) a (B) b (C) c (D) d\nAnswer:\n\
             Passage: P.\nQuestion: Q?\nOptions: (A) a (B) b (C) c (D) d\nAnswer: 2\n"
        );
        let p = prompt(&letters, "X.", "Y?", &["1", "2", "3", "4"]);
        assert!(p.starts_with(&format!("{INSTRUCTION}Passage: P.")));
        assert!(p.ends_with(
            "Answer: C\n\nPassage: X.\nQuestion: Y?\nOptions: (A) 1 (B) 2 (C) 3 (D) 4\nAnswer:"
        ));
        // random.seed(1234); random.sample(range(3404), 3) in CPython 3.11.
        assert_eq!(sample_shots(3404, 3, 1234), Some(vec![3187, 1805, 478]));
    }

    #[test]
    fn the_pick_is_the_first_capital_a_to_d() {
        assert_eq!(pick("<pad> B</s>"), Some(1));
        assert_eq!(pick("<pad> (D) then A</s>"), Some(3));
        // Lower case and other capitals do not count; nothing is "E", wrong.
        assert_eq!(pick("<pad> bad Eve</s>"), None);
        assert_eq!(pick(""), None);
    }

    #[test]
    fn rotations_map_back_and_the_majority_breaks_ties_by_the_unrotated_order() {
        let r = rotations(&["w", "x", "y", "z"]);
        assert_eq!(r[1], vec!["x", "y", "z", "w"]);
        // Position 0 of rotation 1 shows option 1.
        assert_eq!(unrotate(Some(0), 1, 4), Some(1));
        assert_eq!(unrotate(Some(3), 1, 4), Some(0));
        assert_eq!(
            majority(&[Some(2), Some(2), Some(1), None], 4),
            (Some(2), 0.5)
        );
        // A 2-2 tie goes to the unrotated answer.
        assert_eq!(
            majority(&[Some(1), Some(3), Some(3), Some(1)], 4),
            (Some(1), 0.5)
        );
        // Unrotated answer not among the tied: the lowest index.
        assert_eq!(
            majority(&[None, Some(3), Some(2), None], 4),
            (Some(2), 0.25)
        );
        assert_eq!(majority(&[None, None, None, None], 4), (None, 1.0));
    }
}
