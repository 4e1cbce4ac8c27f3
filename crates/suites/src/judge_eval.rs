//! `scorekit judge eval`'s scoring: a judge's verdict per question (items.jsonl) from a scoring
//! judge's scores or a letter judge's answers (every rotation of the options under
//! `--option-orders cyclic`), and the typed metrics.json over them: accuracy, consistency per
//! passage, the pick distribution and the cyclic majority apart. The model steps are the
//! caller's; everything here is plain data.

use crate::judge_data::pick_distribution;
use crate::letter;
use crate::story::{argmax, Question};
use scorekit_report::bootstrap_mean;
use scorekit_report::judge::{
    Bootstrap, EvalCalibration, EvalCyclic, EvalLetter, EvalMetrics, QuestionFile,
};
use scorekit_report::ModelRef;
use serde::Serialize;
use std::collections::BTreeMap;

/// The suite name metrics.json records.
pub const SUITE: &str = "judge-eval";

/// One line of items.jsonl.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct EvalItem {
    /// 1-based line of the question in the dataset.
    pub line: usize,
    /// `question_id`.
    pub question_id: String,
    /// The passage (question_id before the first '_').
    pub passage_id: String,
    /// The right option.
    pub gold: usize,
    /// The option picked (`null`: a letter judge's answer named none).
    pub pick: Option<usize>,
    /// `pick == gold`.
    pub correct: bool,
    /// A scoring judge's score per option.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub scores: Vec<f32>,
    /// A letter judge's answer, decoded with special tokens kept.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub answer: Option<String>,
    /// Under `--option-orders cyclic`: the verdict of every rotation of the options.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cyclic: Option<CyclicVerdict>,
}

impl EvalItem {
    /// The item of question `i` (0-based) with `pick`.
    fn new(i: usize, q: &Question, pick: Option<usize>) -> Self {
        EvalItem {
            line: i + 1,
            question_id: q.id.clone(),
            passage_id: q.passage_id.clone(),
            gold: q.gold,
            pick,
            correct: pick == Some(q.gold),
            scores: Vec::new(),
            answer: None,
            cyclic: None,
        }
    }
}

/// A letter judge's answers under every rotation of the options (`--option-orders cyclic`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CyclicVerdict {
    /// Per rotation r (0 = the dataset's order): the option its answer picks, mapped back.
    pub picks: Vec<Option<usize>>,
    /// Per rotation: the answer text.
    pub answers: Vec<String>,
    /// The majority pick (ties: rotation 0's pick when tied, else the lowest option).
    pub pick: Option<usize>,
    /// `pick == gold`.
    pub correct: bool,
    /// Share of rotations whose pick is the majority's.
    pub agreement: f64,
}

/// Every question's pairs end to end, in the order [`scored_items`] reads the scores.
pub fn pairs(questions: &[Question]) -> Vec<(String, String)> {
    questions.iter().flat_map(Question::gold_pairs).collect()
}

/// A scoring judge's items: `scores` holds one score per pair of [`pairs`]; the pick is the
/// highest (the first on ties). Refused when the judge returned another number of scores.
pub fn scored_items(questions: &[Question], scores: &[f32]) -> anyhow::Result<Vec<EvalItem>> {
    let want: usize = questions.iter().map(|q| q.options.len()).sum();
    anyhow::ensure!(
        scores.len() == want,
        "the judge returned {} scores for {want} pairs",
        scores.len()
    );
    let mut rest = scores;
    let mut items = Vec::with_capacity(questions.len());
    for (i, q) in questions.iter().enumerate() {
        let (s, tail) = rest.split_at(q.options.len());
        rest = tail;
        let mut it = EvalItem::new(i, q, Some(argmax(s)));
        it.scores = s.to_vec();
        items.push(it);
    }
    Ok(items)
}

/// Rotations asked per question: 1 (the dataset's order), or every one under `cyclic`.
pub fn rotations(questions: &[Question], cyclic: bool) -> usize {
    if cyclic {
        questions.first().map_or(1, |q| q.options.len())
    } else {
        1
    }
}

/// A letter judge's prompts: one per question and rotation (rotation 0 is the dataset's order).
pub fn letter_prompts(questions: &[Question], shots: &str, rotations: usize) -> Vec<String> {
    questions
        .iter()
        .flat_map(|q| {
            let options: Vec<&str> = q.options.iter().map(String::as_str).collect();
            letter::rotations(&options)
                .into_iter()
                .take(rotations)
                .map(|o| letter::prompt(shots, &q.document, &q.question, &o))
                .collect::<Vec<_>>()
        })
        .collect()
}

/// A letter judge's items from its `answers` to [`letter_prompts`] with `rotations` (see
/// [`rotations`]): rotation 0's pick is the item's; under `cyclic` the majority over the
/// rotations is recorded apart.
pub fn answered_items(
    questions: &[Question],
    answers: &[String],
    rotations: usize,
    cyclic: bool,
) -> anyhow::Result<Vec<EvalItem>> {
    anyhow::ensure!(
        rotations > 0 && answers.len() == questions.len() * rotations,
        "the judge returned {} answers for {} prompts",
        answers.len(),
        questions.len() * rotations
    );
    let mut items = Vec::with_capacity(questions.len());
    for (i, (q, group)) in questions.iter().zip(answers.chunks(rotations)).enumerate() {
        let mut it = EvalItem::new(i, q, letter::pick(&group[0]));
        it.answer = Some(group[0].clone());
        if cyclic {
            let texts: Vec<&str> = group.iter().map(String::as_str).collect();
            let (picks, pick, agreement) = letter::cyclic_picks(&texts);
            it.cyclic = Some(CyclicVerdict {
                answers: group.to_vec(),
                picks,
                pick,
                correct: pick == Some(q.gold),
                agreement,
            });
        }
        items.push(it);
    }
    Ok(items)
}

/// Per passage (question_id before the first '_'), 1 when `right` holds for every question of it.
fn passage_consistency(items: &[EvalItem], right: impl Fn(&EvalItem) -> bool) -> Vec<f64> {
    let mut passages: BTreeMap<&str, bool> = BTreeMap::new();
    for it in items {
        *passages.entry(&it.passage_id).or_insert(true) &= right(it);
    }
    passages.values().map(|&c| f64::from(u8::from(c))).collect()
}

/// 1 for true, 0 for false.
fn indicator(b: bool) -> f64 {
    f64::from(u8::from(b))
}

/// What metrics.json records besides the items: the judge, the data and the settings.
#[derive(Debug, Clone)]
pub struct EvalRecord {
    /// The judge.
    pub judge: ModelRef,
    /// `scoring` or `letter`.
    pub judge_kind: String,
    /// The engine that ran it.
    pub engine: String,
    /// The question file.
    pub dataset: QuestionFile,
    /// Options per question.
    pub options: usize,
    /// The bootstrap of the intervals.
    pub bootstrap: Bootstrap,
    /// TF32 products on CUDA.
    pub tf32: bool,
    /// A letter judge's protocol.
    pub letter: Option<EvalLetter>,
}

/// metrics.json of `items` (the headline numbers rotation 0's; the cyclic majority apart when
/// the items carry one), with the judge's `calibration` when one ran.
pub fn metrics<S, C>(
    record: EvalRecord,
    items: &[EvalItem],
    calibration: Option<EvalCalibration<S, C>>,
) -> EvalMetrics<S, C> {
    let Bootstrap { resamples, seed } = record.bootstrap;
    let correct: Vec<f64> = items.iter().map(|i| indicator(i.correct)).collect();
    let consistent = passage_consistency(items, |it| it.correct);
    let picks: Vec<Option<usize>> = items.iter().map(|i| i.pick).collect();
    let golds: Vec<usize> = items.iter().map(|i| i.gold).collect();
    let cyclic: Vec<&CyclicVerdict> = items.iter().filter_map(|i| i.cyclic.as_ref()).collect();
    let cyclic = (!cyclic.is_empty()).then(|| {
        let right: Vec<f64> = cyclic.iter().map(|c| indicator(c.correct)).collect();
        let consistent =
            passage_consistency(items, |it| it.cyclic.as_ref().is_some_and(|c| c.correct));
        let majority: Vec<Option<usize>> = cyclic.iter().map(|c| c.pick).collect();
        EvalCyclic {
            definition: "each question asked once per rotation of its options; each answer mapped back to its option; the majority pick (ties: the unrotated pick when tied, else the lowest option)".into(),
            accuracy: bootstrap_mean(&right, resamples, seed),
            consistency: bootstrap_mean(&consistent, resamples, seed),
            agreement: cyclic.iter().map(|c| c.agreement).sum::<f64>() / cyclic.len() as f64,
            picks: pick_distribution(&majority, &golds, record.options),
        }
    });
    EvalMetrics {
        suite: SUITE.into(),
        judge: record.judge,
        judge_kind: record.judge_kind,
        engine: record.engine,
        dataset: record.dataset,
        questions: items.len(),
        passages: consistent.len(),
        chance: 1.0 / record.options as f64,
        accuracy: bootstrap_mean(&correct, resamples, seed),
        consistency: bootstrap_mean(&consistent, resamples, seed),
        consistency_definition: "share of passages (question_id before the first '_') with every question answered right".into(),
        bootstrap: record.bootstrap,
        picks: pick_distribution(&picks, &golds, record.options),
        tf32: record.tf32,
        letter: record.letter,
        cyclic,
        calibration,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn question(id: &str, gold: usize) -> Question {
        Question {
            id: id.into(),
            row: 1,
            passage_id: id.split('_').next().unwrap_or(id).into(),
            question: "Q?".into(),
            document: "D.".into(),
            options: ["a", "b", "c", "d"].map(String::from).to_vec(),
            gold,
        }
    }

    fn record() -> EvalRecord {
        EvalRecord {
            judge: ModelRef {
                id: "j".into(),
                revision: "local".into(),
                sha256: "0".into(),
            },
            judge_kind: "scoring".into(),
            engine: "e".into(),
            dataset: QuestionFile {
                path: "d.jsonl".into(),
                sha256: "1".into(),
                possible_stories: 3,
                race: 0,
            },
            options: 4,
            bootstrap: Bootstrap {
                resamples: 10,
                seed: 1,
            },
            tf32: false,
            letter: None,
        }
    }

    #[test]
    fn scores_pick_the_highest_option_and_a_short_score_list_is_refused() {
        let qs = [
            question("p1_0", 1),
            question("p1_1", 2),
            question("p2_0", 0),
        ];
        let mut scores = vec![0.0f32; 12];
        scores[1] = 1.0; // q0 picks 1: right
        scores[4] = 1.0; // q1 picks 0: wrong
        scores[8] = 1.0; // q2 picks 0: right
        let items = scored_items(&qs, &scores).unwrap();
        let picks: Vec<_> = items.iter().map(|i| i.pick).collect();
        assert_eq!(picks, [Some(1), Some(0), Some(0)]);
        assert_eq!(items[2].line, 3);
        assert!(scored_items(&qs, &scores[..11]).is_err());
        let m: EvalMetrics<(), ()> = metrics(record(), &items, None);
        assert_eq!((m.questions, m.passages), (3, 2));
        assert!((m.accuracy.unwrap().value - 2.0 / 3.0).abs() < 1e-12);
        // p1 has a wrong answer, p2 none.
        assert!((m.consistency.unwrap().value - 0.5).abs() < 1e-12);
        assert!(m.cyclic.is_none());
        let json = serde_json::to_value(&m).unwrap();
        assert!(json.get("tf32").is_none() && json.get("calibration").is_none());
    }

    #[test]
    fn letter_answers_record_rotation_zero_and_the_cyclic_majority_apart() {
        let qs = [question("p1_0", 0)];
        let prompts = letter_prompts(&qs, "", rotations(&qs, true));
        assert_eq!(prompts.len(), 4);
        // Rotation r shows option (j + r) % 4 at letter j: the gold option 0 is at letter (4 - r) % 4.
        let answers: Vec<String> = ["A", "D", "C", "A"].map(String::from).to_vec();
        let items = answered_items(&qs, &answers, 4, true).unwrap();
        assert_eq!(items[0].pick, Some(0));
        assert_eq!(items[0].answer.as_deref(), Some("A"));
        let c = items[0].cyclic.as_ref().unwrap();
        assert_eq!(c.pick, Some(0));
        assert!((c.agreement - 0.75).abs() < 1e-12);
        let m: EvalMetrics<(), ()> = metrics(record(), &items, None);
        assert!((m.cyclic.unwrap().agreement - 0.75).abs() < 1e-12);
        assert!(answered_items(&qs, &answers[..3], 4, true).is_err());
    }
}
