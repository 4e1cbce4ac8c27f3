//! A run's calibration as metrics.json records it (`metrics.calibration`: the counts, which a
//! merge of shards adds up) and the corrected IFSM it gives each group.

use super::{counts, CalibrationItem, Kind, PROTOCOL};
use crate::ifsm_correction::{correct_with_empty, CalibrationCounts};
use crate::story::calibration::label_set::{LabelAgreement, LabelSet};
use crate::story::JudgedCounts;
use scorekit_core::error::{Error, Result};
use scorekit_report::ifsm_corrected::IfsmCorrected;
use scorekit_report::{Estimate, MetricsDoc};
use serde::{Deserialize, Serialize};

/// metrics.json key (under `metrics`) of the calibration summary.
pub const METRICS_KEY: &str = "calibration";

/// The dataset calibration of a run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DatasetCalibration {
    /// The protocol's version.
    pub protocol: String,
    /// Questions calibrated (the run's scope).
    pub questions: usize,
    /// Of those, questions whose story has no spare crowd ending: positives only.
    pub questions_without_filler: usize,
    /// The counts (reference protocol).
    pub counts: CalibrationCounts,
    /// The cyclic majority's counts (`--option-orders cyclic`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub counts_cyclic: Option<CalibrationCounts>,
}

/// The human-label calibration of a run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HumanCalibration {
    /// Labels of the run's scope (one per labelled ending, labellers combined).
    pub labels: usize,
    /// Label lines read, over all label files.
    #[serde(default)]
    pub label_lines: usize,
    /// Endings left out: their labellers split evenly.
    #[serde(default)]
    pub ties: usize,
    /// The labellers' agreement (two or more labellers).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agreement: Option<LabelAgreement>,
    /// The counts (reference protocol).
    pub counts: CalibrationCounts,
    /// The cyclic majority's counts (`--option-orders cyclic`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub counts_cyclic: Option<CalibrationCounts>,
}

/// What a run's calibrations counted.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CalibrationSummary {
    /// The dataset calibration, unless `--no-calibration`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dataset: Option<DatasetCalibration>,
    /// The human labels', with `--calibration-labels`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub human: Option<HumanCalibration>,
}

impl CalibrationSummary {
    /// The summary of calibration items: the dataset's (unless `None`) and the labels' with the
    /// label set they came from (its lines, ties and agreement are the whole files', not the
    /// scope's: every shard records the same).
    pub fn of(
        dataset: Option<&[CalibrationItem]>,
        labels: Option<(&[CalibrationItem], &LabelSet)>,
    ) -> Self {
        let dataset = dataset.map(|items| {
            let questions = items.iter().filter(|i| i.kind == Kind::Positive).count();
            // A question with a filler has negatives (one per other option), one without none:
            // counted by question, so any number of options counts right.
            let with_filler: std::collections::HashSet<&str> = items
                .iter()
                .filter(|i| i.kind == Kind::Negative)
                .map(|i| i.question_id.as_str())
                .collect();
            DatasetCalibration {
                protocol: PROTOCOL.to_string(),
                questions,
                questions_without_filler: questions.saturating_sub(with_filler.len()),
                counts: counts(items, false).unwrap_or_default(),
                counts_cyclic: counts(items, true),
            }
        });
        let human = labels.map(|(items, set)| HumanCalibration {
            labels: items.len(),
            label_lines: set.read,
            ties: set.ties,
            agreement: set.agreement.clone(),
            counts: counts(items, false).unwrap_or_default(),
            counts_cyclic: counts(items, true),
        });
        CalibrationSummary { dataset, human }
    }

    /// The judge's (q0, q1) by the dataset calibration, else by the labels' (for planning how
    /// many labels would settle it); `None` without a calibration of both sides.
    pub fn rates(&self) -> Option<(f64, f64)> {
        let counts = self
            .dataset
            .as_ref()
            .map(|d| d.counts)
            .or(self.human.as_ref().map(|h| h.counts))?;
        Some((counts.q0()?, counts.q1()?))
    }

    /// The summary `doc` records (`None`: no calibration ran).
    pub fn read(doc: &MetricsDoc) -> Result<Option<Self>> {
        doc.metrics
            .get(METRICS_KEY)
            .map(|v| {
                serde_json::from_value(v.clone()).map_err(|e| {
                    Error::usage(format!(
                        "metrics.json: metrics.{METRICS_KEY} is not a calibration summary of this \
                         version of scorekit ({e})"
                    ))
                })
            })
            .transpose()
    }

    /// Record it in `doc.metrics`.
    pub fn write(&self, doc: &mut MetricsDoc) {
        let v = serde_json::to_value(self).expect("calibration summary serialises");
        doc.metrics.insert(METRICS_KEY.into(), v);
    }

    /// The parts of a sharded run together: their scopes are disjoint, so the counts add up.
    pub fn add(&mut self, other: &CalibrationSummary) {
        fn both(a: &mut Option<CalibrationCounts>, b: &Option<CalibrationCounts>) {
            match (a.as_mut(), b) {
                (Some(a), Some(b)) => a.add(b),
                _ => *a = None,
            }
        }
        match (&mut self.dataset, &other.dataset) {
            (Some(a), Some(b)) => {
                a.questions += b.questions;
                a.questions_without_filler += b.questions_without_filler;
                a.counts.add(&b.counts);
                both(&mut a.counts_cyclic, &b.counts_cyclic);
            }
            (a, b) => *a = a.take().or_else(|| b.clone()),
        }
        match (&mut self.human, &other.human) {
            (Some(a), Some(b)) => {
                a.labels += b.labels;
                a.counts.add(&b.counts);
                both(&mut a.counts_cyclic, &b.counts_cyclic);
            }
            (a, b) => *a = a.take().or_else(|| b.clone()),
        }
    }

    /// A group's IFSM (of the reference protocol, or with `cyclic` the cyclic majority's)
    /// corrected by each calibration: the judged endings' pick rate corrected, scaled by their
    /// share ([`correct_with_empty`]); `None` without IFSM or without a calibration that has
    /// both sides.
    pub fn correct(
        &self,
        ifsm: Option<&Estimate>,
        judged: &JudgedCounts,
        cyclic: bool,
    ) -> Option<IfsmCorrected> {
        ifsm?;
        let pick = |c: &CalibrationCounts, cc: &Option<CalibrationCounts>| {
            if cyclic {
                *cc
            } else {
                Some(*c)
            }
        };
        let by = |counts: Option<CalibrationCounts>| {
            counts.and_then(|c| {
                correct_with_empty(judged.rate(cyclic), judged.judged, judged.empty, &c)
            })
        };
        let out = IfsmCorrected {
            dataset: by(self
                .dataset
                .as_ref()
                .and_then(|d| pick(&d.counts, &d.counts_cyclic))),
            human: by(self
                .human
                .as_ref()
                .and_then(|h| pick(&h.counts, &h.counts_cyclic))),
        };
        (!out.is_empty()).then_some(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn item(question: &str, kind: Kind, slot: Option<usize>, counted: bool) -> CalibrationItem {
        CalibrationItem {
            question_id: question.into(),
            row: 1,
            kind,
            slot,
            label_line: None,
            follows: None,
            model: None,
            gold: 0,
            pick: Some(0),
            counted,
            cyclic_pick: None,
            cyclic_counted: None,
            scores: Vec::new(),
            answers: Vec::new(),
            letter_logits: Vec::new(),
            letter_mass: Vec::new(),
            truncated: Vec::new(),
        }
    }

    /// `judge eval` calibrates on datasets of any number of options: five options give four
    /// negatives a question, and the questions without a filler are still counted by question.
    #[test]
    fn questions_without_filler_are_counted_by_question_for_any_number_of_options() {
        let mut items = Vec::new();
        for q in ["a", "b", "c"] {
            items.push(item(q, Kind::Positive, None, true));
            for d in 1..5 {
                items.push(item(q, Kind::Negative, Some(d), true));
            }
        }
        items.push(item("d", Kind::Positive, None, true));
        let s = CalibrationSummary::of(Some(&items), None);
        let d = s.dataset.unwrap();
        assert_eq!(d.questions, 4);
        assert_eq!(d.questions_without_filler, 1);
    }
}
