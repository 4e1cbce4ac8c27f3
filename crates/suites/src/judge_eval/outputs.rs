//! `judge eval`'s metrics.json, report.md and table, computed from its items by the one function
//! a run and `scorekit merge` both call: accuracy, consistency per passage, the pick
//! distribution, the cyclic majority apart, and the judge's resolution from its calibration.

use super::{CyclicVerdict, EvalItem, SUITE};
use crate::ifsm_correction::judge_resolution;
use crate::judge_data::pick_distribution;
use crate::settings::{CalibrationSettings, JudgeEvalSettings};
use crate::story::calibration::summary::{CalibrationSummary, METRICS_KEY as SUMMARY_KEY};
use scorekit_core::error::{Error, Result};
use scorekit_report::judge::{
    eval_report, eval_table, Bootstrap, EvalCalibration, EvalCyclic, EvalLetter, EvalMetrics,
    QuestionFile,
};
use scorekit_report::{bootstrap_mean, MetricsDoc, ModelRef, Outputs};
use serde_json::{Map, Value};
use std::collections::BTreeMap;

/// metrics.json key (under `metrics`) of a decoder judge's items whose prompt was cut to the
/// judge's context (story and `judge eval` alike).
pub const TRUNCATED_ITEMS: &str = "truncated_items";

/// The judge's calibration as `judge eval` reports it.
pub type Calibration = EvalCalibration<CalibrationSettings, CalibrationSummary>;

/// Put `items` in the dataset's order, fill `doc.metrics` from them (the calibration's summary
/// is there already), and render report.md and the table.
pub fn outputs(doc: &mut MetricsDoc, items: &mut [EvalItem]) -> Result<Outputs> {
    items.sort_by_key(|it| it.line);
    let settings: JudgeEvalSettings = doc.suite_settings()?;
    let run = doc.run_settings()?;
    let judge = doc.models.first().cloned().ok_or_else(|| {
        Error::Internal(anyhow::anyhow!("judge eval's metrics.json names no judge"))
    })?;
    let calibration = match &settings.calibration {
        Some(s) => CalibrationSummary::read(doc)?.map(|summary| Calibration {
            dataset: summary
                .dataset
                .as_ref()
                .and_then(|d| judge_resolution(&d.counts)),
            human: summary
                .human
                .as_ref()
                .and_then(|h| judge_resolution(&h.counts)),
            settings: s.clone(),
            inputs: doc.inputs.iter().skip(1).cloned().collect(),
            datasets: doc.datasets.clone(),
            summary,
        }),
        None => None,
    };
    let record = EvalRecord {
        judge,
        judge_kind: settings.judge_kind.clone(),
        engine: settings.engine.clone(),
        dataset: settings.dataset.clone(),
        options: settings.options,
        bootstrap: Bootstrap {
            resamples: run.bootstrap,
            seed: run.seed,
        },
        tf32: settings.tf32,
        letter: settings.letter.clone(),
    };
    let m = metrics(record, items, calibration);
    write_metrics(doc, &m)?;
    if items.iter().any(|it| it.letter_logits.is_some()) {
        let cut = items.iter().filter(|it| it.truncated).count();
        doc.metrics.insert(TRUNCATED_ITEMS.into(), cut.into());
    }
    Ok(Outputs {
        report: eval_report(&m),
        table: format!("{}\n", eval_table(&m)),
        files: Vec::new(),
        // The passages, questions and options report.html shows beside the items.
        texts: scorekit_report::html::timing::timed(
            scorekit_report::html::timing::Phase::Texts,
            || crate::story::texts::question_texts(doc),
        ),
    })
}

/// `doc.metrics` rebuilt, in one order whatever came before (a merge folds the calibration in
/// anew): the calibration's summary as the calibration wrote it, then the metrics of `m` that
/// are not settings, models or inputs, then the judge's resolution.
fn write_metrics(
    doc: &mut MetricsDoc,
    m: &EvalMetrics<CalibrationSettings, CalibrationSummary>,
) -> Result<()> {
    let Value::Object(all) = serde_json::to_value(m)
        .map_err(|e| Error::Internal(anyhow::anyhow!("judge eval's metrics: {e}")))?
    else {
        return Err(Error::Internal(anyhow::anyhow!(
            "judge eval's metrics are not an object"
        )));
    };
    let recorded_elsewhere = [
        "suite",
        "judge",
        "judge_kind",
        "engine",
        "dataset",
        "bootstrap",
        "tf32",
        "letter",
        "calibration",
    ];
    let mut metrics = Map::new();
    if let Some(summary) = doc.metrics.remove(SUMMARY_KEY) {
        metrics.insert(SUMMARY_KEY.into(), summary);
    }
    metrics.extend(
        all.into_iter()
            .filter(|(k, _)| !recorded_elsewhere.contains(&k.as_str())),
    );
    if let Some(c) = &m.calibration {
        let resolution = serde_json::json!({"dataset": c.dataset, "human": c.human});
        metrics.insert("judge_resolution".into(), resolution);
    }
    doc.metrics = metrics;
    Ok(())
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
    use crate::judge_eval::{answered_items, letter_prompts, rotations, scored_items};
    use crate::story::Question;

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
        let chunk: Vec<(usize, &Question)> = qs.iter().enumerate().collect();
        let items = scored_items(&chunk, &scores).unwrap();
        let picks: Vec<_> = items.iter().map(|i| i.pick).collect();
        assert_eq!(picks, [Some(1), Some(0), Some(0)]);
        assert_eq!(items[2].line, 3);
        assert!(scored_items(&chunk, &scores[..11]).is_err());
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
        let chunk: Vec<(usize, &Question)> = qs.iter().enumerate().collect();
        let prompts = letter_prompts(&chunk, "", rotations(&qs, true));
        assert_eq!(prompts.len(), 4);
        // Rotation r shows option (j + r) % 4 at letter j: the gold option 0 is at letter (4 - r) % 4.
        let answers: Vec<String> = ["A", "D", "C", "A"].map(String::from).to_vec();
        let items = answered_items(&chunk, &answers, 4, true).unwrap();
        assert_eq!(items[0].pick, Some(0));
        assert_eq!(items[0].answer.as_deref(), Some("A"));
        let c = items[0].cyclic.as_ref().unwrap();
        assert_eq!(c.pick, Some(0));
        assert!((c.agreement - 0.75).abs() < 1e-12);
        let m: EvalMetrics<(), ()> = metrics(record(), &items, None);
        assert!((m.cyclic.unwrap().agreement - 0.75).abs() < 1e-12);
        assert!(answered_items(&chunk, &answers[..3], 4, true).is_err());
    }
}
