//! Possible Stories story endings: IFSM from an MRC judge's choices, the judge's ceiling on the
//! human options, and Dissimilarity between endings of the same story.
//!
//! Plain functions over plain data. The judge's scores and the embeddings come in as numbers; the
//! per-item verdicts keep everything a merge of shards needs to recompute every metric exactly:
//! the judge's pick on the gold options and on the options with the generated ending, and the
//! dissimilarity of every pair the item belongs to. Pairs never cross stories, so a shard that
//! holds whole stories (shard key = passage id) computes all of its pairs itself.
//!
//! Here: the records (questions, generations and their checks), the verdicts, Dissimilarity and
//! the metrics of a group. Beside it, the suite's pipeline in the shape every suite has:
//! - [`checks`]: the input warnings and `--require-complete`;
//! - [`plan`]: chunks of whole stories, de-duplicated model inputs;
//! - [`pipeline`]: the run's entry: inputs read and checked before any model loads, then the
//!   calibration, the scoring and the label sample with the models lent;
//! - [`scoring`]: a run's scoring through the models the binary lends (`models::LentModels`);
//! - [`calibration`]: the judge's calibration in the IFSM frame, its cache and the human labels;
//! - [`estimates`]: PPI++ per model and the calibrations' agreement;
//! - [`outputs`]: metrics.json, report.md and the files, for a run and for `merge`;
//! - [`suite`]: the `Suite` implementation.

pub mod calibration;
pub mod checks;
pub mod estimates;
pub mod outputs;
pub mod pipeline;
pub mod plan;
pub mod scoring;
pub mod suite;
pub mod texts;

use scorekit_core::error::InputError;
use scorekit_io::Record;
use scorekit_report::bootstrap_mean;
pub use scorekit_report::story::{Counts, Coverage, GroupMetrics};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet, HashMap};

/// Per story item: 1 when the judge saw the ending, 0 for an empty one (no metric of its own).
pub const JUDGED: &str = "ifsm_judged";

/// Per labelled story item: its human label (1 = follows; no metric of its own), for the
/// prediction-powered difference.
pub const HUMAN: &str = "ifsm_human";

/// Number of options per question.
pub const OPTIONS: usize = 4;

/// Chance level of a judge picking the gold slot among 4 options.
pub const CHANCE: f64 = 0.25;

/// Group name of generations without a `model` field.
pub const DEFAULT_GROUP: &str = "default";

/// One Possible Stories question.
#[derive(Debug, Clone, PartialEq)]
pub struct Question {
    /// `question_id` from the dataset.
    pub id: String,
    /// 1-based position of the question among the dataset's records.
    pub row: usize,
    /// The story: text of `question_id` before the first `_` (as [PS] run.py groups).
    pub passage_id: String,
    /// The question, e.g. "Which is the worst possible outcome?".
    pub question: String,
    /// The first four sentences of the story.
    pub document: String,
    /// The four endings.
    pub options: Vec<String>,
    /// Index of the correct option.
    pub gold: usize,
}

impl Question {
    /// The judge's input for option text `option`: (document, question + " " + option), as the
    /// dataset's authors trained their judges.
    pub fn pair(&self, option: &str) -> (String, String) {
        (
            self.document.clone(),
            format!("{} {}", self.question, option),
        )
    }

    /// The (document, question + option) pairs of the human options, in option order (what the
    /// judge is trained and evaluated on).
    pub fn gold_pairs(&self) -> Vec<(String, String)> {
        self.options.iter().map(|o| self.pair(o)).collect()
    }
}

/// Parse dataset records (dev.jsonl / test.jsonl). Malformed records are input errors.
pub fn parse_questions(records: &[Record]) -> Result<Vec<Question>, InputError> {
    let mut seen: HashMap<String, usize> = HashMap::new();
    let mut out = Vec::with_capacity(records.len());
    for r in records {
        let id = r.str("question_id")?.to_string();
        if id.is_empty() {
            return Err(r.field_error("question_id", "empty"));
        }
        if let Some(line) = seen.insert(id.clone(), r.line) {
            return Err(r.field_error(
                "question_id",
                format!("{id:?} appears twice in the dataset (first on line {line})"),
            ));
        }
        let options = r.array("options")?;
        if options.len() != OPTIONS {
            return Err(r.field_error(
                "options",
                format!("expected {OPTIONS} options, found {}", options.len()),
            ));
        }
        let options = options
            .iter()
            .enumerate()
            .map(|(i, o)| {
                o.as_str().map(str::to_string).ok_or_else(|| {
                    r.field_error(
                        "options",
                        format!(
                            "option {i}: expected a string, found {}",
                            scorekit_io::type_name(o)
                        ),
                    )
                })
            })
            .collect::<Result<Vec<_>, _>>()?;
        let gold = r.i64("gold_label")?;
        if !(0..OPTIONS as i64).contains(&gold) {
            return Err(r.field_error("gold_label", format!("expected 0 to 3, found {gold}")));
        }
        let passage_id = id.split('_').next().unwrap_or(&id).to_string();
        out.push(Question {
            row: r.row,
            passage_id,
            question: r.str("question")?.to_string(),
            document: r.str("document")?.to_string(),
            options,
            gold: gold as usize,
            id,
        });
    }
    Ok(out)
}

/// One generated ending as read from the generations file.
#[derive(Debug, Clone, PartialEq)]
pub struct Generation {
    /// 1-based position among the file's records.
    pub row: usize,
    /// 1-based line in the file.
    pub line: usize,
    /// The question the ending answers.
    pub question_id: String,
    /// The generated ending.
    pub ending: String,
    /// The model that wrote it (one result group per model).
    pub model: Option<String>,
}

impl Generation {
    /// The result group: the model, or [`DEFAULT_GROUP`].
    pub fn group(&self) -> &str {
        self.model.as_deref().unwrap_or(DEFAULT_GROUP)
    }
}

/// Parse generation records. Wrong types are input errors (exit 2); an unknown question, a
/// duplicate or an empty ending is not, and is reported per item by [`check`] (an empty ending
/// is the model's answer and counts as Not-Follow).
pub fn parse_generations(records: &[Record]) -> Result<Vec<Generation>, InputError> {
    records
        .iter()
        .map(|r| {
            // `instruction` is optional but, when present, must be text like the rest.
            r.opt_str("instruction")?;
            Ok(Generation {
                row: r.row,
                line: r.line,
                question_id: r.str("question_id")?.to_string(),
                ending: r.str("ending")?.to_string(),
                model: r.opt_str("model")?.map(str::to_string),
            })
        })
        .collect()
}

/// Whether a generation is scored, and how.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// Scored.
    Scored,
    /// `question_id` is not in the dataset.
    UnknownQuestion,
    /// The same model already has an ending for this question (the first one is scored).
    Duplicate,
    /// The ending is empty or only whitespace: the model answered and did not follow the
    /// instruction. It counts in IFSM as Not-Follow (never sent to the judge) and stays out of
    /// the Dissimilarity pairs.
    EmptyEnding,
}

/// A generation matched against the dataset.
#[derive(Debug, Clone, PartialEq)]
pub struct Checked {
    /// Index into the generations.
    pub generation: usize,
    /// Index into the questions, when the id is known.
    pub question: Option<usize>,
    /// Whether it is scored.
    pub status: Status,
    /// For a duplicate: the row of the generation that is scored.
    pub duplicate_of_row: Option<usize>,
}

impl Status {
    /// Whether the generation is the model's answer to a dataset question (scored, or an empty
    /// ending scored as Not-Follow): what coverage counts.
    pub fn answers(self) -> bool {
        matches!(self, Status::Scored | Status::EmptyEnding)
    }
}

/// Match generations to questions; one ending per (model, question), the first in the file. An
/// empty first ending is that answer (Not-Follow); a later ending for the same question is a
/// duplicate whether or not the first was empty.
pub fn check(questions: &[Question], generations: &[Generation]) -> Vec<Checked> {
    let by_id: HashMap<&str, usize> = questions
        .iter()
        .enumerate()
        .map(|(i, q)| (q.id.as_str(), i))
        .collect();
    let mut first: HashMap<(&str, &str), usize> = HashMap::new();
    generations
        .iter()
        .enumerate()
        .map(|(gi, g)| {
            let question = by_id.get(g.question_id.as_str()).copied();
            let mut duplicate_of_row = None;
            let status = if question.is_none() {
                Status::UnknownQuestion
            } else if let Some(&row) = first.get(&(g.group(), g.question_id.as_str())) {
                duplicate_of_row = Some(row);
                Status::Duplicate
            } else {
                first.insert((g.group(), g.question_id.as_str()), g.row);
                if g.ending.trim().is_empty() {
                    Status::EmptyEnding
                } else {
                    Status::Scored
                }
            };
            Checked {
                generation: gi,
                question,
                status,
                duplicate_of_row,
            }
        })
        .collect()
}

/// Index of the highest score; ties go to the lowest index (as `argmax` in torch and numpy).
pub fn argmax(scores: &[f32]) -> usize {
    let mut best = 0;
    for (i, &s) in scores.iter().enumerate() {
        if s > scores[best] {
            best = i;
        }
    }
    best
}

/// The judge's verdict on one generation. A scoring judge (multiple-choice, binary) fills the
/// scores; a letter judge (Flan-T5) the answers, and may pick no option (`null`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JudgeVerdict {
    /// Scores of the four options with the generated ending in the gold slot (scoring judges).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub judge_scores: Vec<f32>,
    /// The option the judge picks among those (`None`: a letter judge's answer named none).
    pub judge_pick: Option<usize>,
    /// Follow: the judge picks the generated ending.
    pub follow: bool,
    /// Scores of the four human options (scoring judges).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub judge_gold_scores: Vec<f32>,
    /// The option the judge picks among the human options.
    pub judge_gold_pick: Option<usize>,
    /// The judge answers the unmodified question correctly (the ceiling's item).
    pub judge_correct: bool,
    /// A letter judge's answer with the ending in the gold slot, as decoded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub judge_answer: Option<String>,
    /// A letter judge's answer on the human options.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub judge_gold_answer: Option<String>,
    /// A decoder judge's next-token logits of A, B, C, D with the ending in the gold slot
    /// (rotation 0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub letter_logits: Option<[f32; 4]>,
    /// A decoder judge's letter mass (the four letters' probability among all tokens) with the
    /// ending in the gold slot.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub letter_mass: Option<f32>,
    /// A decoder judge's letter logits on the human options.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gold_letter_logits: Option<[f32; 4]>,
    /// A decoder judge's letter mass on the human options.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gold_letter_mass: Option<f32>,
    /// A prompt of the verdict (the ending's or the human options', any rotation) was longer
    /// than the judge's context and lost its first tokens.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub truncated: bool,
    /// Under `--option-orders cyclic`: the verdict of every rotation of the options, reported
    /// apart from the reference protocol above (rotation 0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cyclic: Option<Box<CyclicVerdict>>,
}

/// A letter judge asked once per rotation of the options, each answer mapped back to its option
/// (`letter::rotations`, `letter::majority`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CyclicVerdict {
    /// Per rotation, the option picked with the ending in the gold slot.
    pub judge_picks: Vec<Option<usize>>,
    /// Their majority.
    pub judge_pick: Option<usize>,
    /// Follow: the majority picks the ending.
    pub follow: bool,
    /// Per rotation, the option picked among the human options.
    pub judge_gold_picks: Vec<Option<usize>>,
    /// Their majority.
    pub judge_gold_pick: Option<usize>,
    /// The majority answers the unmodified question correctly.
    pub judge_correct: bool,
    /// Share of the ending's rotations that agree with its majority.
    pub agreement: f64,
}

/// IFSM's protocol for one item: put the ending's score in the gold slot and take the argmax.
///
/// A multiple-choice judge scores each choice on its own, so the three other options keep the
/// scores they have among the human options.
pub fn judge_verdict(gold_scores: &[f32], gold: usize, ending_score: f32) -> JudgeVerdict {
    let mut scores = gold_scores.to_vec();
    scores[gold] = ending_score;
    let pick = argmax(&scores);
    let gold_pick = argmax(gold_scores);
    JudgeVerdict {
        judge_pick: Some(pick),
        follow: pick == gold,
        judge_scores: scores,
        judge_gold_pick: Some(gold_pick),
        judge_correct: gold_pick == gold,
        judge_gold_scores: gold_scores.to_vec(),
        judge_answer: None,
        judge_gold_answer: None,
        letter_logits: None,
        letter_mass: None,
        gold_letter_logits: None,
        gold_letter_mass: None,
        truncated: false,
        cyclic: None,
    }
}

/// The IFSM outcome of one item as items.jsonl holds it: the judge's full verdict, or Not-Follow
/// without the judge (an empty ending).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Outcome {
    /// The judge's verdict on a non-empty ending.
    Judged(JudgeVerdict),
    /// An empty ending: `follow` is false, the judge never saw it.
    NotJudged {
        /// Always false.
        follow: bool,
    },
}

impl Outcome {
    /// Not-Follow for an empty ending.
    pub const EMPTY: Outcome = Outcome::NotJudged { follow: false };

    /// Whether the item follows the instruction.
    pub fn follow(&self) -> bool {
        match self {
            Outcome::Judged(j) => j.follow,
            Outcome::NotJudged { follow } => *follow,
        }
    }

    /// The judge's verdict, when the judge saw the item.
    pub fn verdict(&self) -> Option<&JudgeVerdict> {
        match self {
            Outcome::Judged(j) => Some(j),
            Outcome::NotJudged { .. } => None,
        }
    }
}

/// One pair of endings of the same story and their dissimilarity.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PairValue {
    /// The other question of the pair.
    pub question_id: String,
    /// 1 − cos between the two endings' embeddings.
    pub dissimilarity: f64,
}

/// 1 − cosine similarity, in f64 (0 for identical directions; a zero vector counts as orthogonal).
pub fn dissimilarity(a: &[f32], b: &[f32]) -> f64 {
    let (mut dot, mut na, mut nb) = (0f64, 0f64, 0f64);
    for (&x, &y) in a.iter().zip(b) {
        let (x, y) = (f64::from(x), f64::from(y));
        dot += x * y;
        na += x * x;
        nb += y * y;
    }
    if na == 0.0 || nb == 0.0 {
        return 1.0;
    }
    // Rounding can put the cosine of identical vectors a hair above 1; keep the distance in [0, 2].
    1.0 - (dot / (na.sqrt() * nb.sqrt())).clamp(-1.0, 1.0)
}

/// For scored items of one group, given as (passage id, question id, embedding): every item's
/// pairs with the other items of its story (each pair appears on both of its items).
pub fn story_pairs(items: &[(&str, &str, &[f32])]) -> Vec<Vec<PairValue>> {
    let mut by_story: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
    for (i, (p, _, _)) in items.iter().enumerate() {
        by_story.entry(p).or_default().push(i);
    }
    let mut out = vec![Vec::new(); items.len()];
    for members in by_story.values() {
        for (k, &i) in members.iter().enumerate() {
            for &j in &members[k + 1..] {
                let d = dissimilarity(items[i].2, items[j].2);
                out[i].push(PairValue {
                    question_id: items[j].1.to_string(),
                    dissimilarity: d,
                });
                out[j].push(PairValue {
                    question_id: items[i].1.to_string(),
                    dissimilarity: d,
                });
            }
        }
    }
    out
}

/// What metrics need of one item: its story, its verdict, its pairs.
#[derive(Debug, Clone, PartialEq)]
pub struct ItemResult<'a> {
    /// Passage (story) id.
    pub passage_id: &'a str,
    /// Question id (to count each pair once).
    pub question_id: &'a str,
    /// The judge's verdict, unless the judge was skipped or the ending is empty.
    pub judge: Option<&'a JudgeVerdict>,
    /// Follow or not, for IFSM: the judge's verdict, or false for an empty ending; `None` when
    /// the judge was skipped.
    pub follow: Option<bool>,
    /// The ending is empty (in IFSM as Not-Follow, out of Dissimilarity and the judge's ceiling).
    pub empty: bool,
    /// The item's pairs, unless the embedder was skipped or the ending is empty.
    pub pairs: Option<&'a [PairValue]>,
}

/// One line of items.jsonl: a generation, its status and what the models said about it (read
/// back by `scorekit merge`).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Item {
    /// 1-based position of the generation in its file.
    pub row: usize,
    /// Line of the generation in its file.
    pub line: usize,
    /// `question_id` of the generation.
    pub question_id: String,
    /// The story, when the question is known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub passage_id: Option<String>,
    /// `model` of the generation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// Result group (the model, or [`DEFAULT_GROUP`]).
    pub group: String,
    /// Whether it was scored.
    pub status: Status,
    /// For a duplicate: the row of the generation that is scored.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duplicate_of_row: Option<usize>,
    /// The gold option, when the question is known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gold_label: Option<usize>,
    /// The judge's verdict, unless the judge was skipped or the item is not scored; for an
    /// empty ending (with the judge) only `follow: false`.
    #[serde(flatten, default, skip_serializing_if = "Option::is_none")]
    pub judge: Option<Outcome>,
    /// Dissimilarity pairs, unless the embedder was skipped or the item is not scored.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dissimilarity_pairs: Option<Vec<PairValue>>,
    /// Mean of those pairs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dissimilarity_mean: Option<f64>,
    /// The other option of its question whose text the ending is (surrounding whitespace aside):
    /// the judge scores the two alike, so the pick between them is a tie.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ending_is_option: Option<usize>,
    /// The human label of this ending (`--calibration-labels` naming its model; the labellers'
    /// majority): the labelled sample of the model's prediction-powered IFSM.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub human_follows: Option<bool>,
}

/// Count one generation of `status` in a group's counts.
pub fn count(c: &mut Counts, status: Status) {
    c.generations += 1;
    match status {
        Status::Scored => c.scored += 1,
        Status::UnknownQuestion => c.unknown_question += 1,
        Status::Duplicate => c.duplicate += 1,
        Status::EmptyEnding => c.empty_ending += 1,
    }
}

/// A group's IFSM outcomes split by whether the judge saw the ending: what the judge-corrected
/// IFSM needs (only judged endings are corrected; empty ones are known not to follow).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct JudgedCounts {
    /// Endings the judge saw.
    pub judged: usize,
    /// Of those, the ones it picked (reference protocol).
    pub picked: usize,
    /// Of those, the ones the cyclic majority picked (`--option-orders cyclic`).
    pub picked_cyclic: usize,
    /// Empty endings (Not-Follow without the judge).
    pub empty: usize,
}

impl JudgedCounts {
    /// The pick rate among the judged endings (0 with none), of the reference protocol or of
    /// the cyclic majority.
    pub fn rate(&self, cyclic: bool) -> f64 {
        let picked = if cyclic {
            self.picked_cyclic
        } else {
            self.picked
        };
        if self.judged == 0 {
            0.0
        } else {
            picked as f64 / self.judged as f64
        }
    }
}

/// Per group, the IFSM items (answered, of a known question, with the judge) split into judged
/// and empty endings, counted as [`summarize`] counts them for IFSM.
pub fn judged_counts(items: &[Item]) -> BTreeMap<String, JudgedCounts> {
    let mut out: BTreeMap<String, JudgedCounts> = BTreeMap::new();
    for it in items {
        if !it.status.answers() || it.passage_id.is_none() {
            continue;
        }
        let Some(outcome) = &it.judge else { continue };
        let c = out.entry(it.group.clone()).or_default();
        match outcome.verdict() {
            Some(v) => {
                c.judged += 1;
                c.picked += usize::from(v.follow);
                c.picked_cyclic += usize::from(v.cyclic.as_ref().is_some_and(|c| c.follow));
            }
            None => c.empty += 1,
        }
    }
    out
}

/// Per group, judged endings that copy another option of their question and were not picked:
/// the judge scores the copy and the option alike, and the tie goes to the lowest slot (or to
/// rounding), so such endings are rarely picked.
pub fn option_copies(items: &[Item]) -> BTreeMap<String, usize> {
    let mut out = BTreeMap::new();
    for it in items.iter().filter(|i| i.status == Status::Scored) {
        let Some(v) = it.judge.as_ref().and_then(Outcome::verdict) else {
            continue;
        };
        if it.ending_is_option.is_some() && !v.follow {
            *out.entry(it.group.clone()).or_insert(0) += 1;
        }
    }
    out
}

/// Metrics and status counts per result group, from items alone (in row order): what `scorekit
/// story` and `scorekit merge` both report.
pub fn summarize(
    items: &[Item],
    resamples: usize,
    seed: u64,
) -> BTreeMap<String, (GroupMetrics, Counts)> {
    let mut group_items: BTreeMap<&str, Vec<ItemResult>> = BTreeMap::new();
    let mut counts: BTreeMap<&str, Counts> = BTreeMap::new();
    for it in items {
        count(counts.entry(&it.group).or_default(), it.status);
        if let (true, Some(p)) = (it.status.answers(), &it.passage_id) {
            let empty = it.status == Status::EmptyEnding;
            group_items.entry(&it.group).or_default().push(ItemResult {
                passage_id: p,
                question_id: &it.question_id,
                judge: it.judge.as_ref().and_then(Outcome::verdict),
                follow: it.judge.as_ref().map(Outcome::follow),
                empty,
                pairs: if empty {
                    None
                } else {
                    it.dissimilarity_pairs.as_deref()
                },
            });
        }
    }
    counts
        .into_iter()
        .map(|(name, c)| {
            let items = group_items.get(name).map(Vec::as_slice).unwrap_or(&[]);
            let m = group_metrics(items, resamples, seed);
            (name.to_string(), (m, c))
        })
        .collect()
}

/// Metrics of one group from its answered items (scored and empty endings). Intervals: items
/// (IFSM, accuracy), stories (consistency, macro), pairs (micro). Empty endings count in IFSM's
/// n as Not-Follow and nowhere else.
pub fn group_metrics(items: &[ItemResult], resamples: usize, seed: u64) -> GroupMetrics {
    let mut stories: BTreeMap<&str, Vec<&ItemResult>> = BTreeMap::new();
    for it in items.iter().filter(|i| !i.empty) {
        stories.entry(it.passage_id).or_default().push(it);
    }
    let judged: Vec<&JudgeVerdict> = items.iter().filter_map(|i| i.judge).collect();
    let rate = |f: &dyn Fn(&JudgeVerdict) -> bool| {
        let v: Vec<f64> = judged.iter().map(|j| f64::from(u8::from(f(j)))).collect();
        bootstrap_mean(&v, resamples, seed)
    };
    let follows: Vec<f64> = items
        .iter()
        .filter_map(|i| i.follow)
        .map(|f| f64::from(u8::from(f)))
        .collect();
    let (mut ifsm, mut accuracy, mut consistency, mut chance) = (None, None, None, None);
    if !follows.is_empty() {
        ifsm = bootstrap_mean(&follows, resamples, seed);
        chance = Some(CHANCE);
    }
    if !judged.is_empty() {
        accuracy = rate(&|j| j.judge_correct);
        let per_story: Vec<f64> = stories
            .values()
            .filter(|m| m.iter().any(|i| i.judge.is_some()))
            .map(|m| {
                let all = m.iter().filter_map(|i| i.judge).all(|j| j.judge_correct);
                f64::from(u8::from(all))
            })
            .collect();
        consistency = bootstrap_mean(&per_story, resamples, seed);
    }
    // Cyclic option orders, reported apart (an empty ending is Not-Follow here too).
    let (mut ifsm_cyclic, mut accuracy_cyclic) = (None, None);
    if judged.iter().any(|j| j.cyclic.is_some()) {
        let follows: Vec<f64> = items
            .iter()
            .filter(|i| i.follow.is_some())
            .map(|i| {
                let f = i
                    .judge
                    .and_then(|j| j.cyclic.as_ref())
                    .is_some_and(|c| c.follow);
                f64::from(u8::from(f))
            })
            .collect();
        ifsm_cyclic = bootstrap_mean(&follows, resamples, seed);
        accuracy_cyclic = rate(&|j| j.cyclic.as_ref().is_some_and(|c| c.judge_correct));
    }
    let (mut micro, mut macro_, mut left_out) = (None, None, None);
    if items.iter().any(|i| i.pairs.is_some()) {
        left_out = Some(items.iter().filter(|i| i.empty).count());
        let mut all_pairs = Vec::new();
        let mut story_means = Vec::new();
        for members in stories.values() {
            // Each pair is stored on both items; keep it on the item with the smaller question id.
            let values: Vec<f64> = members
                .iter()
                .flat_map(|i| {
                    i.pairs
                        .unwrap_or(&[])
                        .iter()
                        .filter(|p| i.question_id < p.question_id.as_str())
                        .map(|p| p.dissimilarity)
                })
                .collect();
            if !values.is_empty() {
                story_means.push(values.iter().sum::<f64>() / values.len() as f64);
            }
            all_pairs.extend(values);
        }
        micro = bootstrap_mean(&all_pairs, resamples, seed);
        macro_ = bootstrap_mean(&story_means, resamples, seed);
    }
    GroupMetrics {
        items: items.iter().filter(|i| !i.empty).count(),
        stories: stories.len(),
        ifsm,
        judge_accuracy: accuracy,
        judge_consistency: consistency,
        chance,
        dissimilarity_micro: micro,
        dissimilarity_macro: macro_,
        dissimilarity_left_out: left_out,
        ifsm_cyclic,
        judge_accuracy_cyclic: accuracy_cyclic,
        ifsm_corrected: None,
        ifsm_cyclic_corrected: None,
        ifsm_ppi: None,
        ifsm_cyclic_ppi: None,
        ifsm_headline: None,
    }
}

/// How many ids of missing questions metrics.json and messages list.
pub const MISSING_IDS_LISTED: usize = 10;

/// Per group, the dataset questions in `scope` (the run's questions: the whole dataset, or a
/// shard's) without any answer among `answers` (group, question id), sorted by id; every group
/// in `groups` gets an entry.
pub fn missing_questions<'a>(
    scope: &[&'a str],
    answers: &[(&str, &str)],
    groups: &BTreeSet<&str>,
) -> BTreeMap<String, Vec<&'a str>> {
    let mut answered: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
    for (g, q) in answers {
        answered.entry(g).or_default().insert(q);
    }
    let mut sorted: Vec<&str> = scope.to_vec();
    sorted.sort_unstable();
    sorted.dedup();
    groups
        .iter()
        .map(|g| {
            let have = answered.get(g);
            let missing = sorted
                .iter()
                .copied()
                .filter(|q| !have.is_some_and(|h| h.contains(q)))
                .collect();
            (g.to_string(), missing)
        })
        .collect()
}

/// Coverage of each group from its items and the scope: `questions` dataset questions in the
/// run, `missing_ids[group]` the first ids of its missing ones (sorted; computed where the
/// dataset is at hand). Answered = distinct known questions with a scored or empty ending.
pub fn coverage(
    items: &[Item],
    questions: usize,
    missing_ids: &BTreeMap<String, Vec<String>>,
) -> BTreeMap<String, Coverage> {
    let mut answered: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
    for it in items {
        let e = answered.entry(&it.group).or_default();
        if it.status.answers() {
            e.insert(&it.question_id);
        }
    }
    answered
        .into_iter()
        .map(|(g, qs)| {
            let answered = qs.len();
            let c = Coverage {
                questions,
                answered,
                missing: questions.saturating_sub(answered),
                coverage: (questions > 0).then(|| answered as f64 / questions as f64),
                missing_ids: missing_ids
                    .get(g)
                    .map(|v| v.iter().take(MISSING_IDS_LISTED).cloned().collect())
                    .unwrap_or_default(),
            };
            (g.to_string(), c)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn rec(line: usize, v: serde_json::Value) -> Record {
        Record {
            file: "gen.jsonl".into(),
            line,
            row: line,
            value: v,
        }
    }

    fn question(id: &str, gold: usize) -> Question {
        Question {
            id: id.into(),
            row: 1,
            passage_id: id.split('_').next().unwrap().into(),
            question: "Which?".into(),
            document: "Doc.".into(),
            options: vec!["a".into(), "b".into(), "c".into(), "d".into()],
            gold,
        }
    }

    #[test]
    fn dataset_records_are_checked_field_by_field() {
        let good = json!({"question_id": "p1_a_0", "question": "Q?", "document": "D.",
                          "options": ["a", "b", "c", "d"], "gold_label": 2});
        let q = parse_questions(&[rec(1, good.clone())]).unwrap();
        assert_eq!(q[0].passage_id, "p1");
        assert_eq!(q[0].gold, 2);
        assert_eq!(q[0].pair("c"), ("D.".to_string(), "Q? c".to_string()));
        let mut bad = good.clone();
        bad["gold_label"] = json!(4);
        let e = parse_questions(&[rec(3, bad)]).unwrap_err().to_string();
        assert_eq!(
            e,
            "gen.jsonl:3: field \"gold_label\": expected 0 to 3, found 4"
        );
        let mut bad = good.clone();
        bad["options"] = json!(["a", "b", "c"]);
        assert!(parse_questions(&[rec(1, bad)])
            .unwrap_err()
            .to_string()
            .contains("expected 4 options"));
        let e = parse_questions(&[rec(1, good.clone()), rec(2, good)]).unwrap_err();
        assert!(
            e.to_string()
                .starts_with("gen.jsonl:2: field \"question_id\""),
            "{e}"
        );
    }

    #[test]
    fn bad_types_in_generations_are_input_errors() {
        let e = parse_generations(&[rec(5, json!({"question_id": "q", "ending": 3}))]).unwrap_err();
        assert_eq!(
            e.to_string(),
            "gen.jsonl:5: field \"ending\": expected a string, found a number"
        );
        let e = parse_generations(&[rec(2, json!({"ending": "x"}))]).unwrap_err();
        assert_eq!(
            e.to_string(),
            "gen.jsonl:2: field \"question_id\": missing (keys found: ending)"
        );
        let e = parse_generations(&[rec(
            2,
            json!({"question_id": "q", "ending": "x", "model": 1}),
        )])
        .unwrap_err();
        assert!(e.to_string().contains("field \"model\""));
    }

    #[test]
    fn unknown_duplicate_and_empty_are_reported_per_item() {
        let qs = vec![question("p1_x_0", 0), question("p1_x_1", 1)];
        let g = |row, q: &str, e: &str, m: Option<&str>| Generation {
            row,
            line: row,
            question_id: q.into(),
            ending: e.into(),
            model: m.map(Into::into),
        };
        let gens = vec![
            g(1, "p1_x_0", "end", None),
            g(2, "p1_x_0", "again", None),
            g(3, "p1_x_0", "other model", Some("m2")),
            g(4, "nope", "x", None),
            g(5, "p1_x_1", "  ", None),
        ];
        let c = check(&qs, &gens);
        let status: Vec<Status> = c.iter().map(|c| c.status).collect();
        assert_eq!(
            status,
            vec![
                Status::Scored,
                Status::Duplicate,
                Status::Scored,
                Status::UnknownQuestion,
                Status::EmptyEnding
            ]
        );
        assert_eq!(c[1].duplicate_of_row, Some(1));
        assert_eq!(c[3].question, None);
    }

    #[test]
    fn verdict_swaps_the_ending_into_the_gold_slot() {
        let gold = [0.1, 0.9, 0.3, 0.2];
        let v = judge_verdict(&gold, 1, 0.95);
        assert!(v.follow && v.judge_correct);
        assert_eq!(v.judge_scores, vec![0.1, 0.95, 0.3, 0.2]);
        let v = judge_verdict(&gold, 1, 0.25);
        assert_eq!((v.judge_pick, v.follow), (Some(2), false));
        // The gold option as the ending reproduces the judge's own answer.
        let v = judge_verdict(&gold, 2, gold[2]);
        assert_eq!(v.follow, v.judge_correct);
        // Ties go to the lower index.
        assert_eq!(argmax(&[0.5, 0.7, 0.7, 0.1]), 1);
    }

    #[test]
    fn dissimilarity_pairs_stay_within_a_story() {
        let a = [1.0f32, 0.0];
        let b = [0.0f32, 2.0];
        let c = [1.0f32, 1.0];
        let items: Vec<(&str, &str, &[f32])> = vec![
            ("p1", "p1_q0", &a),
            ("p1", "p1_q1", &b),
            ("p2", "p2_q0", &a),
            ("p1", "p1_q2", &c),
            ("p2", "p2_q1", &a),
            ("p3", "p3_q0", &b),
        ];
        let pairs = story_pairs(&items);
        assert_eq!(pairs[0].len(), 2);
        assert_eq!(pairs[5].len(), 0);
        assert!((pairs[0][0].dissimilarity - 1.0).abs() < 1e-12);
        assert!(pairs[2][0].dissimilarity.abs() < 1e-12);
        let v = [0.1f32, 0.7, -0.3];
        assert!(dissimilarity(&v, &v) >= 0.0);
        let results: Vec<ItemResult> = items
            .iter()
            .zip(&pairs)
            .map(|((p, q, _), pv)| ItemResult {
                passage_id: p,
                question_id: q,
                judge: None,
                follow: None,
                empty: false,
                pairs: Some(pv),
            })
            .collect();
        let m = group_metrics(&results, 0, 0);
        let d = 1.0 - 1.0 / 2f64.sqrt();
        // p1: pairs (a,b)=1, (a,c)=d, (b,c)=d; p2: (a,a)=0.
        let micro = m.dissimilarity_micro.unwrap();
        assert_eq!(micro.n, 4);
        assert!((micro.value - (1.0 + 2.0 * d) / 4.0).abs() < 1e-12);
        let macro_ = m.dissimilarity_macro.unwrap();
        assert_eq!(macro_.n, 2);
        assert!((macro_.value - ((1.0 + 2.0 * d) / 3.0 + 0.0) / 2.0).abs() < 1e-12);
        assert_eq!(m.stories, 3);
        assert!(m.ifsm.is_none());
    }

    #[test]
    fn ifsm_ceiling_and_consistency() {
        let v = [
            judge_verdict(&[1.0, 0.0, 0.0, 0.0], 0, 2.0),
            judge_verdict(&[1.0, 0.0, 0.0, 0.0], 1, 0.5),
            judge_verdict(&[0.0, 0.0, 1.0, 0.0], 2, -1.0),
        ];
        let items: Vec<ItemResult> = [("p1", "p1_0"), ("p1", "p1_1"), ("p2", "p2_0")]
            .iter()
            .zip(&v)
            .map(|((p, q), j)| ItemResult {
                passage_id: p,
                question_id: q,
                judge: Some(j),
                follow: Some(j.follow),
                empty: false,
                pairs: None,
            })
            .collect();
        let m = group_metrics(&items, 100, 1);
        assert!((m.ifsm.unwrap().value - 1.0 / 3.0).abs() < 1e-12);
        assert!((m.judge_accuracy.unwrap().value - 2.0 / 3.0).abs() < 1e-12);
        // p1 has a wrong answer, p2 is all correct.
        let c = m.judge_consistency.unwrap();
        assert_eq!((c.n, c.value), (2, 0.5));
        assert_eq!(m.chance, Some(0.25));
        assert!(m.dissimilarity_micro.is_none());
    }
}
