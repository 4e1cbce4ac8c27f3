//! `scorekit story`'s pipeline: the dataset, the generations and the label files read and
//! checked, the shard and its coverage, all before any model loads ([`prepare`]); then, with
//! the models lent, the judge's calibration, the run (scoring through [`super::scoring`]) and
//! the label sample ([`Prepared::run`]).

use super::calibration::label_set::{self, HumanLabels, LabelSet};
use super::calibration::labelling;
use super::calibration::labels;
use super::calibration::memo::Memo;
use super::calibration::step::{self, CalibrationFlags, Step};
use super::calibration::summary::CalibrationSummary;
use super::checks;
use super::outputs::{missing_in_scope, set_scope, CALIBRATION_FILE};
use super::plan::LetterPlan;
use super::scoring::{self, Scoring};
use super::suite::Story;
use super::{Checked, Generation, Question};
use crate::models::{LentModels, Setup};
use crate::run::{Done, Run};
use crate::settings::StorySettings;
use scorekit_core::error::Result;
use scorekit_io::read_jsonl;
use scorekit_report::{DatasetRef, MetricsDoc, RunOptions};
use serde_json::json;
use std::collections::{BTreeMap, HashSet};
use std::path::PathBuf;

/// Files written beside the contract's (name, bytes).
type Files = Vec<(String, Vec<u8>)>;

/// `scorekit story`'s input, as the flags resolved it.
pub struct Input {
    /// The dataset file.
    pub dataset: PathBuf,
    /// The pinned dataset it came from, when named.
    pub dataset_record: Option<DatasetRef>,
    /// The generations file.
    pub generations: PathBuf,
    /// `--require-complete`.
    pub require_complete: bool,
    /// What to calibrate on (the label files too).
    pub calibration: CalibrationFlags,
    /// `--label-sample N`.
    pub label_sample: Option<usize>,
    /// The output flags.
    pub out: RunOptions,
}

/// The inputs read and checked, the shard taken: what waits for the models.
pub struct Prepared {
    questions: Vec<Question>,
    generations: Vec<Generation>,
    /// The shard's checked generations.
    checked: Vec<Checked>,
    /// The shard's questions (dataset indices).
    in_scope: Vec<usize>,
    /// Per group, the shard's questions without an ending.
    missing: BTreeMap<String, Vec<String>>,
    labels: Option<LabelSet>,
    human: HumanLabels,
}

/// Read and check everything the run needs from files, before any model loads: the questions,
/// the generations (unscored ones warned about), the label files (checked against both), the
/// shard's part and its coverage (warned about, refused with `--require-complete`).
pub fn prepare(input: &Input) -> Result<Prepared> {
    let questions = super::parse_questions(&read_jsonl(&input.dataset)?)?;
    let generations = super::parse_generations(&read_jsonl(&input.generations)?)?;
    let checked = super::check(&questions, &generations);
    warn(checks::unscored_warnings(
        &input.generations.display().to_string(),
        &generations,
        &checked,
    ));
    // The run's own sample, which labels carrying `sample` must be of (docs/story.md).
    let sample = match input.label_sample {
        Some(n) if !input.calibration.labels.is_empty() => Some(labels::run_sample(
            &generations,
            &questions,
            &checked,
            n,
            input.out.seed,
        )?),
        _ => None,
    };
    let labels = step::read_labels(
        &input.calibration.labels,
        &questions,
        Some((&generations, &checked, sample.as_ref())),
    )?;
    let human = labels.as_ref().map_or_else(HumanLabels::new, |set| {
        label_set::by_model(&set.labels, &questions)
    });
    let (checked, in_scope) =
        scoring::shard_part(&questions, &generations, checked, input.out.shard);
    let scope: Vec<&str> = in_scope.iter().map(|&i| questions[i].id.as_str()).collect();
    let missing = missing_in_scope(&scope, &checked, &generations);
    warn(checks::missing_warnings(&missing, scope.len()));
    if input.require_complete {
        checks::require_complete(&missing, scope.len())?;
    }
    let missing = missing
        .into_iter()
        .map(|(group, ids)| (group, ids.into_iter().map(String::from).collect()))
        .collect();
    Ok(Prepared {
        questions,
        generations,
        checked,
        in_scope,
        missing,
        labels,
        human,
    })
}

impl Prepared {
    /// The run with the lent `models` (a judge, an embedder, either or both): the judge's
    /// calibration (before the run opens: its settings are part of the run's identity; a
    /// resumed run takes its finished questions from the cache), the items scored through the
    /// run loop, and `--label-sample`'s file.
    pub fn run(
        self,
        input: &Input,
        setup: &Setup,
        models: &mut dyn LentModels,
    ) -> Result<Done<Story>> {
        let mut doc = MetricsDoc::new("story");
        doc.add_input(&input.dataset)?;
        doc.add_input(&input.generations)?;
        doc.datasets.extend(input.dataset_record.clone());
        let mut settings = StorySettings {
            device: setup.device.clone(),
            quantize: setup.quantize.clone(),
            tf32: setup.tf32,
            ..StorySettings::default()
        };
        if let Some(card) = models.judge() {
            doc.models.push(card.model.clone());
            settings.record_judge(card, setup.letter.clone(), setup.cyclic);
        }
        if let Some(card) = models.embedder() {
            doc.models.push(card.model.clone());
            settings.set_embedder(card.spec.clone(), card.engine.clone());
        }
        doc.metrics
            .insert("dataset_questions".into(), json!(self.questions.len()));
        let scope: Vec<&str> = self
            .in_scope
            .iter()
            .map(|&i| self.questions[i].id.as_str())
            .collect();
        let missing: BTreeMap<String, Vec<&str>> = self
            .missing
            .iter()
            .map(|(g, ids)| (g.clone(), ids.iter().map(String::as_str).collect()))
            .collect();
        set_scope(&mut doc, &scope, &missing);
        let (memo, files) = self.calibrate(&mut doc, &mut settings, input, setup, models)?;

        // Everything that decides the results is known now: an unfinished run of the same
        // identity in --out is continued, its finished items kept as they are.
        let mut run = Run::<Story>::open(&input.out, &mut doc, &settings)?;
        let scoring = Scoring {
            questions: &self.questions,
            generations: &self.generations,
            checked: &self.checked,
            letter: LetterPlan {
                shots: &setup.shots,
                cyclic: setup.cyclic,
            },
            memo: &memo,
            human: &self.human,
        };
        score(&mut run, &scoring, models)?;
        let done = run.finish(&mut doc, files)?;
        if let Some(n) = input.label_sample {
            self.write_label_sample(&input.out, &doc, &done.items, &scope, n)?;
        }
        Ok(done)
    }

    /// The judge's calibration, unless no judge is lent or `--no-calibration` without labels:
    /// the memo of the positives the items reuse, and calibration.jsonl.
    fn calibrate(
        &self,
        doc: &mut MetricsDoc,
        settings: &mut StorySettings,
        input: &Input,
        setup: &Setup,
        models: &mut dyn LentModels,
    ) -> Result<(Memo, Files)> {
        if models.judge().is_none() || !input.calibration.any() {
            return Ok((Memo::default(), Vec::new()));
        }
        let step = Step {
            questions: &self.questions,
            scope: self.in_scope.clone(),
            labels: self.labels.as_ref(),
            flags: &input.calibration,
            shots: &setup.shots,
            cyclic: setup.cyclic,
        };
        let outcome = step::run(doc, step, models)?;
        settings.calibration = Some(outcome.settings);
        outcome.summary.write(doc);
        // The positives asked what the items ask for the ceiling: they take it from here.
        let card = models.judge().cloned();
        let protocol = card
            .as_ref()
            .map(|c| step::protocol(c, &setup.shots, setup.cyclic));
        let memo = protocol.map_or_else(Memo::default, |p| {
            Memo::of(&outcome.items, &self.questions, p)
        });
        let files = vec![(
            CALIBRATION_FILE.to_string(),
            scorekit_report::jsonl(&outcome.items)?,
        )];
        Ok((memo, files))
    }

    /// `--label-sample N`: to_label.jsonl in `--out`, N questions of the run's scope drawn
    /// uniformly and every model's judged ending to them, shuffled, `follows` null; and, from
    /// the run's calibration in `doc`, how many labels would settle the judge.
    fn write_label_sample(
        &self,
        out: &RunOptions,
        doc: &MetricsDoc,
        items: &[super::Item],
        scope: &[&str],
        n: usize,
    ) -> Result<()> {
        let (text, drawn, endings) = labels::sample_file(
            items,
            &self.generations,
            &self.questions,
            scope,
            n,
            out.seed,
        )?;
        let path = out.out.join("to_label.jsonl");
        scorekit_report::atomic_write(&path, &text)?;
        eprintln!(
            "to_label.jsonl: {endings} ending(s) to label, every model's on {drawn} question(s) \
             drawn uniformly of {}, {}",
            scope.len(),
            path.display()
        );
        // Its labelling page; an empty sample (no judged ending drawn) has none.
        if endings > 0 {
            let page = out.out.join("to_label.html");
            labelling::write_page(&path, None, &page)?;
            eprintln!("to_label.html: its labelling page, {}", page.display());
        }
        if let Some((q0, q1)) = CalibrationSummary::read(doc)?.and_then(|c| c.rates()) {
            eprintln!(
                "{}",
                scorekit_report::ifsm_corrected::LabelsNeeded::of(q0, q1).sentence()
            );
        }
        Ok(())
    }
}

/// Score every unfinished item of `run` with the lent models, on one progress bar.
fn score(run: &mut Run<Story>, scoring: &Scoring, models: &mut dyn LentModels) -> Result<()> {
    let plans = scoring::plan(scoring, models.models(), |row| run.is_finished(&row));
    models.step("score", scoring::work(&plans));
    let finished: HashSet<usize> = scoring
        .generations
        .iter()
        .map(|g| g.row)
        .filter(|row| run.is_finished(row))
        .collect();
    scoring::score(
        scoring,
        &plans,
        models,
        |row| finished.contains(&row),
        |item| run.append(item),
    )?;
    models.step("score", 0);
    Ok(())
}

/// Print the warnings a check returned, one per line.
fn warn(lines: Vec<String>) {
    for line in lines {
        eprintln!("{line}");
    }
}
