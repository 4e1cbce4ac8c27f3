//! `scorekit judge eval`'s pipeline: the questions (and label files) read and checked before any
//! model loads ([`prepare`]), then, with the judge lent, its calibration and the run
//! ([`Prepared::run`]): the shard's questions asked chunk by chunk, each chunk's items appended
//! as it finishes, so a killed run resumes where it stopped.

use super::suite::JudgeEval;
use super::{letter_prompts, pairs, rotations, scored_answer_items, scored_items, EvalItem, SUITE};
use crate::judge_data::read_questions;
use crate::models::{JudgeCard, LentModels, Setup};
use crate::run::{Done, Run};
use crate::settings::JudgeEvalSettings;
use crate::story::calibration::label_set::LabelSet;
use crate::story::calibration::step::{self, CalibrationFlags, Step};
use crate::story::outputs::CALIBRATION_FILE;
use crate::story::Question;
use scorekit_core::error::{Error, Result};
use scorekit_report::judge::{EvalLetter, QuestionFile};
use scorekit_report::{MetricsDoc, RunOptions};
use std::path::PathBuf;

/// Questions asked in one request to the judge: small enough that a killed run loses little,
/// large enough to fill the judge's batches.
const CHUNK: usize = 128;

/// `judge eval`'s input, as the flags resolved it.
pub struct Input {
    /// The question file.
    pub dataset: PathBuf,
    /// The judge as named (`--judge`).
    pub judge: String,
    /// What to calibrate on (the label files too).
    pub calibration: CalibrationFlags,
    /// The output flags.
    pub out: RunOptions,
}

/// The question file and the label files read and checked, waiting for the judge.
pub struct Prepared {
    questions: Vec<Question>,
    file: QuestionFile,
    labels: Option<LabelSet>,
}

/// Read the question file and the label files (bad input fails here, before any model loads).
pub fn prepare(input: &Input) -> Result<Prepared> {
    let (questions, mut files) = read_questions(std::slice::from_ref(&input.dataset), None)?;
    let labels = step::read_labels(&input.calibration.labels, &questions, None)?;
    Ok(Prepared {
        file: files.remove(0),
        questions,
        labels,
    })
}

impl Prepared {
    /// Calibrate and score with the lent judge under `setup`, through the run loop.
    pub fn run(
        self,
        input: &Input,
        setup: &Setup,
        judge: &mut dyn LentModels,
    ) -> Result<Done<JudgeEval>> {
        let card = judge
            .judge()
            .cloned()
            .ok_or_else(|| Error::Internal(anyhow::anyhow!("judge eval needs a lent judge")))?;
        let Prepared {
            questions,
            file,
            labels,
        } = self;
        let mut doc = MetricsDoc::new(SUITE);
        doc.add_input(&input.dataset)?;
        doc.models.push(card.model.clone());
        let scope: Vec<usize> = (0..questions.len())
            .filter(|&i| input.out.shard.contains(&questions[i].passage_id))
            .collect();
        let mut settings = settings(input, setup, &card, file, &questions);
        let mut files = Vec::new();
        if input.calibration.any() {
            let step = Step {
                questions: &questions,
                scope: scope.clone(),
                labels: labels.as_ref(),
                flags: &input.calibration,
                shots: &setup.shots,
                cyclic: setup.cyclic,
            };
            let outcome = step::run(&mut doc, step, judge)?;
            settings.calibration = Some(outcome.settings);
            outcome.summary.write(&mut doc);
            files.push((
                CALIBRATION_FILE.to_string(),
                scorekit_report::jsonl(&outcome.items)?,
            ));
        }
        let mut run = Run::<JudgeEval>::open(&input.out, &mut doc, &settings)?;
        // Chunks fixed by the scope alone, each asked whole: a resumed run asks a chunk with the
        // same batches as an uninterrupted one, so its scores are the same to the last bit.
        let todo: Vec<Vec<(usize, &Question)>> = scope
            .chunks(CHUNK)
            .filter(|chunk| chunk.iter().any(|&i| !run.is_finished(&(i + 1))))
            .map(|chunk| chunk.iter().map(|&i| (i, &questions[i])).collect())
            .collect();
        let ask = Ask {
            letter: card.is_letter(),
            shots: &setup.shots,
            rotations: rotations(&questions, setup.cyclic),
            cyclic: setup.cyclic,
        };
        judge.step("judge", todo.iter().map(|c| ask.inputs(c)).sum());
        for chunk in &todo {
            for item in ask.items(chunk, judge)? {
                if !run.is_finished(&item.line) {
                    run.append(item)?;
                }
            }
        }
        judge.step("judge", 0);
        run.finish(&mut doc, files)
    }
}

/// What the run records of the judge and the protocol (its calibration added once it ran).
fn settings(
    input: &Input,
    setup: &Setup,
    card: &JudgeCard,
    dataset: QuestionFile,
    questions: &[Question],
) -> JudgeEvalSettings {
    JudgeEvalSettings {
        judge: input.judge.clone(),
        judge_kind: card.kind_name().into(),
        judge_arch: card.arch.clone(),
        engine: card.engine.clone(),
        device: card.device.clone(),
        quantize: card.quantize.clone(),
        tf32: card.tf32,
        dataset,
        options: questions.first().map_or(0, |q| q.options.len()),
        letter: card.is_letter().then(|| EvalLetter {
            judge_prompt: setup.letter.prompt.clone(),
            judge_decoding: setup.letter.decoding.clone(),
            judge_pick: setup.letter.pick.clone(),
        }),
        cyclic: setup.cyclic,
        calibration: None,
    }
}

/// How the judge is asked: a scoring judge scores every option, a letter judge answers one
/// prompt per rotation.
struct Ask<'a> {
    letter: bool,
    shots: &'a str,
    rotations: usize,
    cyclic: bool,
}

impl Ask<'_> {
    /// The model inputs of `questions` (pairs or prompts), for the progress bar.
    fn inputs(&self, questions: &[(usize, &Question)]) -> usize {
        if self.letter {
            questions.len() * self.rotations
        } else {
            questions.iter().map(|(_, q)| q.options.len()).sum()
        }
    }

    /// The items of one chunk of questions.
    fn items(
        &self,
        chunk: &[(usize, &Question)],
        judge: &mut dyn LentModels,
    ) -> Result<Vec<EvalItem>> {
        let items = if self.letter {
            let prompts = letter_prompts(chunk, self.shots, self.rotations);
            let answers = judge.answer_scored(&prompts)?;
            scored_answer_items(chunk, &answers, self.rotations, self.cyclic)?
        } else {
            let scores = judge.score(&pairs(chunk))?;
            scored_items(chunk, &scores)?
        };
        Ok(items)
    }
}
