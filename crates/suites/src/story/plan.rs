//! What `scorekit story` asks its models, chunk by chunk, and how their answers become verdicts
//! and Dissimilarity pairs: the scoring rules of the run, apart from the models that answer.
//!
//! Scored generations are cut into chunks of whole stories ([`story_chunks`]); each chunk's
//! model inputs are deduplicated ([`ChunkPlan::new`]): identical (question, option text) pairs
//! are scored once, so an ending equal to the gold option gets exactly the gold option's score,
//! and a letter judge's prompts likewise, per (question, ending, rotation).

use crate::letter;
use crate::models::ScoredAnswer;
use crate::story::{self, Checked, Generation, JudgeVerdict, PairValue, Question};
use std::collections::{BTreeMap, HashMap};

/// Scored generations per chunk: whole stories (all groups' endings of a story together, as
/// Dissimilarity's pairs need), in order of first appearance, closed once a chunk holds this
/// many generations. Small enough that a kill loses little, large enough to batch well.
pub const CHUNK_GENERATIONS: usize = 128;

/// Split scored generations into chunks of whole stories (see [`CHUNK_GENERATIONS`]).
pub fn story_chunks<'a>(questions: &[Question], scored: &[&'a Checked]) -> Vec<Vec<&'a Checked>> {
    let mut stories: Vec<&str> = Vec::new();
    let mut members: HashMap<&str, Vec<&'a Checked>> = HashMap::new();
    for &c in scored {
        let p = questions[c.question.expect("scored items have a question")]
            .passage_id
            .as_str();
        members
            .entry(p)
            .or_insert_with(|| {
                stories.push(p);
                Vec::new()
            })
            .push(c);
    }
    let mut chunks: Vec<Vec<&'a Checked>> = Vec::new();
    let mut current: Vec<&'a Checked> = Vec::new();
    for p in stories {
        current.append(members.get_mut(p).expect("listed story"));
        if current.len() >= CHUNK_GENERATIONS {
            chunks.push(std::mem::take(&mut current));
        }
    }
    if !current.is_empty() {
        chunks.push(current);
    }
    chunks
}

pub use crate::models::Models;

/// What a letter judge is asked per question: the demonstrations, and whether every rotation of
/// the options (`--option-orders cyclic`) or only the dataset's order (the reference protocol).
#[derive(Debug, Clone, Copy)]
pub struct LetterPlan<'a> {
    /// The demonstrations block ("" for zero-shot).
    pub shots: &'a str,
    /// Every rotation of the options.
    pub cyclic: bool,
}

/// The model inputs of one chunk, deduplicated: the judge's (passage, question + option)
/// pairs, the letter judge's prompts and the distinct endings to embed.
pub struct ChunkPlan<'a> {
    /// The chunk's generations.
    pub members: Vec<&'a Checked>,
    /// Distinct (document, question + option) pairs to score.
    pub judge_pairs: Vec<(String, String)>,
    /// Per member: indices into `judge_pairs` of the human options and of the ending.
    judge_slots: Vec<(Vec<usize>, usize)>,
    /// Distinct letter-judge prompts (human options; the ending in the gold slot).
    pub letter_prompts: Vec<String>,
    /// Per member: indices into `letter_prompts` of the human options' and the ending's
    /// prompts, one per rotation of the options.
    letter_slots: Vec<(Vec<usize>, Vec<usize>)>,
    /// Distinct endings to embed.
    pub texts: Vec<String>,
    /// Per member: index into `texts`.
    text_of: Vec<usize>,
}

impl<'a> ChunkPlan<'a> {
    /// Plan a chunk for the models present.
    pub fn new(
        members: Vec<&'a Checked>,
        questions: &'a [Question],
        generations: &'a [Generation],
        models: Models,
        letter: LetterPlan,
    ) -> Self {
        let mut prompt_index: HashMap<(usize, Option<&str>, usize), usize> = HashMap::new();
        let mut letter_prompts: Vec<String> = Vec::new();
        let mut letter_slots = Vec::new();
        let mut pair_index: HashMap<(usize, &str), usize> = HashMap::new();
        let mut judge_pairs: Vec<(String, String)> = Vec::new();
        let mut judge_slots = Vec::new();
        let mut text_index: HashMap<&str, usize> = HashMap::new();
        let mut texts: Vec<String> = Vec::new();
        let mut text_of = Vec::new();
        for c in &members {
            let qi = c.question.expect("scored items have a question");
            let ending = generations[c.generation].ending.as_str();
            if models.scoring_judge {
                let mut slot = |text: &'a str| -> usize {
                    *pair_index.entry((qi, text)).or_insert_with(|| {
                        judge_pairs.push(questions[qi].pair(text));
                        judge_pairs.len() - 1
                    })
                };
                let gold: Vec<usize> = questions[qi].options.iter().map(|o| slot(o)).collect();
                let own = slot(ending);
                judge_slots.push((gold, own));
            }
            if models.letter_judge {
                let q = &questions[qi];
                let mut prompts = |ending: Option<&'a str>| -> Vec<usize> {
                    // Every rotation of the question's options, or only the dataset's order.
                    let rotations = if letter.cyclic { q.options.len() } else { 1 };
                    (0..rotations)
                        .map(|r| {
                            *prompt_index.entry((qi, ending, r)).or_insert_with(|| {
                                letter_prompts.push(letter_prompt(q, ending, letter.shots, r));
                                letter_prompts.len() - 1
                            })
                        })
                        .collect()
                };
                letter_slots.push((prompts(None), prompts(Some(ending))));
            }
            if models.embedder {
                text_of.push(*text_index.entry(ending).or_insert_with(|| {
                    texts.push(ending.to_string());
                    texts.len() - 1
                }));
            }
        }
        ChunkPlan {
            members,
            judge_pairs,
            judge_slots,
            letter_prompts,
            letter_slots,
            texts,
            text_of,
        }
    }

    /// How many model inputs the chunk has (the progress bar's work).
    pub fn work(&self) -> usize {
        self.judge_pairs.len() + self.letter_prompts.len() + self.texts.len()
    }

    /// Verdicts per generation index from a scoring judge's score of each of
    /// [`ChunkPlan::judge_pairs`].
    pub fn scoring_verdicts(
        &self,
        questions: &[Question],
        scores: &[f32],
    ) -> HashMap<usize, JudgeVerdict> {
        self.members
            .iter()
            .zip(&self.judge_slots)
            .map(|(c, (gold, own))| {
                let qi = c.question.expect("scored");
                let gold_scores: Vec<f32> = gold.iter().map(|&i| scores[i]).collect();
                let v = story::judge_verdict(&gold_scores, questions[qi].gold, scores[*own]);
                (c.generation, v)
            })
            .collect()
    }

    /// Verdicts per generation index from a letter judge's answer to each of
    /// [`ChunkPlan::letter_prompts`] (with every rotation: the majority, reported apart); a
    /// decoder judge's letter logits and mass of rotation 0 go with them.
    pub fn letter_verdicts(
        &self,
        questions: &[Question],
        answers: &[ScoredAnswer],
    ) -> HashMap<usize, JudgeVerdict> {
        self.members
            .iter()
            .zip(&self.letter_slots)
            .map(|(c, (human_slots, own_slots))| {
                let (human, own) = (human_slots, own_slots);
                let qi = c.question.expect("scored");
                let text = |slots: &[usize]| -> Vec<&str> {
                    slots.iter().map(|&i| answers[i].text.as_str()).collect()
                };
                let (human_text, own_text) = (text(human), text(own));
                let gold = questions[qi].gold;
                let mut v = if human_text.len() == 1 {
                    letter::letter_verdict(human_text[0], own_text[0], gold)
                } else {
                    letter::letter_verdict_cyclic(&human_text, &own_text, gold)
                };
                let (ending, human) = (&answers[own[0]], &answers[human[0]]);
                v.letter_logits = ending.letter_logits;
                v.letter_mass = ending.letter_mass;
                v.gold_letter_logits = human.letter_logits;
                v.gold_letter_mass = human.letter_mass;
                v.truncated = own_slots
                    .iter()
                    .chain(human_slots)
                    .any(|&i| answers[i].truncated);
                (c.generation, v)
            })
            .collect()
    }

    /// Dissimilarity pairs per generation index, from the embedding of each of
    /// [`ChunkPlan::texts`]: pairs of endings of the same story, per group.
    pub fn pairs(
        &self,
        questions: &[Question],
        generations: &[Generation],
        vectors: &[Vec<f32>],
    ) -> HashMap<usize, Vec<PairValue>> {
        let mut by_group: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
        for (k, c) in self.members.iter().enumerate() {
            by_group
                .entry(generations[c.generation].group())
                .or_default()
                .push(k);
        }
        let mut out = HashMap::new();
        for members in by_group.values() {
            let items: Vec<(&str, &str, &[f32])> = members
                .iter()
                .map(|&k| {
                    let q = &questions[self.members[k].question.expect("scored")];
                    (
                        q.passage_id.as_str(),
                        q.id.as_str(),
                        vectors[self.text_of[k]].as_slice(),
                    )
                })
                .collect();
            for (&k, p) in members.iter().zip(story::story_pairs(&items)) {
                out.insert(self.members[k].generation, p);
            }
        }
        out
    }
}

/// The letter judge's prompt for question `q`: its human options, or `ending` in the gold slot,
/// rotated by `rotation` (0: the dataset's order), after the demonstrations `shots` ("" for
/// run_llm.py's zero-shot prompt).
pub fn letter_prompt(q: &Question, ending: Option<&str>, shots: &str, rotation: usize) -> String {
    let mut options: Vec<&str> = q.options.iter().map(String::as_str).collect();
    if let Some(e) = ending {
        options[q.gold] = e;
    }
    let options = &letter::rotations(&options)[rotation];
    letter::prompt(shots, &q.document, &q.question, options)
}
