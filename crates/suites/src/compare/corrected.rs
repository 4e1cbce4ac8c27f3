//! Judge-corrected IFSM differences for `scorekit compare` on story runs: beside the paired test
//! of the judge's raw picks, A − B of the follow rates, Δp / J, where both systems were scored by
//! one judge with one calibration ([`corrected_difference`], docs/compare.md).
//!
//! A story run that ran a calibration records what identifies it in `settings.calibration`
//! (`dataset.key`: judge, dataset and protocol; `human.sha256`: the label file) and, per group,
//! `groups.<g>.ifsm_corrected.<frame>` with q0, m0, q1, m1: the counts, the same in every group
//! since the calibration does not depend on the model.

use super::{System, Values};
use crate::ifsm_correction::{corrected_difference_with_empty, entry_counts, CalibrationCounts};
use crate::settings::StorySettings;
use scorekit_core::error::{InputError, Result};
use scorekit_report::compare::{Comparison, CorrectedDifferences};
use scorekit_report::ifsm_corrected::IfsmCorrected;
use scorekit_report::MetricsDoc;
use std::path::PathBuf;

/// The metric the correction applies to.
pub const METRIC: &str = "ifsm";

/// A calibration frame of a story run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Frame {
    /// Built from the dataset's own options.
    Dataset,
    /// From a file of human labels.
    Human,
}

impl Frame {
    /// Both frames, in the order metrics.json lists them.
    pub const ALL: [Frame; 2] = [Frame::Dataset, Frame::Human];

    /// The key in metrics.json.
    pub fn name(self) -> &'static str {
        match self {
            Frame::Dataset => "dataset",
            Frame::Human => "human",
        }
    }
}

/// One frame's calibration as a run recorded it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FrameCalibration {
    /// What identifies it: the dataset calibration's key, the human label file's sha256.
    pub id: String,
    /// Its counts; `None` when no group has an entry (no positives or no negatives).
    pub counts: Option<CalibrationCounts>,
}

/// A run's calibrations, one per frame that ran (none for other suites or without one).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RunCalibration {
    /// The dataset frame.
    pub dataset: Option<FrameCalibration>,
    /// The human frame.
    pub human: Option<FrameCalibration>,
}

impl RunCalibration {
    /// The calibration of one frame.
    pub fn frame(&self, f: Frame) -> Option<&FrameCalibration> {
        match f {
            Frame::Dataset => self.dataset.as_ref(),
            Frame::Human => self.human.as_ref(),
        }
    }

    fn frame_mut(&mut self, f: Frame) -> &mut Option<FrameCalibration> {
        match f {
            Frame::Dataset => &mut self.dataset,
            Frame::Human => &mut self.human,
        }
    }
}

/// A story run's calibrations, read from its metrics.json. Errors name the file and the field:
/// an entry that does not parse, or groups that disagree on one calibration's counts.
pub fn story_calibration(doc: &MetricsDoc) -> Result<RunCalibration> {
    let file = doc
        .source
        .clone()
        .unwrap_or_else(|| PathBuf::from("metrics.json"));
    let recorded = doc.suite_settings::<StorySettings>()?.calibration;
    let Some(recorded) = recorded else {
        return Ok(RunCalibration::default());
    };
    let mut out = RunCalibration {
        dataset: recorded.dataset.map(|d| FrameCalibration {
            id: d.key,
            counts: None,
        }),
        human: recorded.human.map(|h| FrameCalibration {
            id: h.sha256,
            counts: None,
        }),
    };
    for (group, value) in &doc.groups {
        let Some(entries) = value.get("ifsm_corrected") else {
            continue;
        };
        let field = format!("groups.{group}.ifsm_corrected");
        let entries: IfsmCorrected =
            serde_json::from_value(entries.clone()).map_err(|e| InputError {
                field: Some(field.clone()),
                ..InputError::file(&file, format!("not a judge-corrected IFSM entry: {e}"))
            })?;
        for (frame, entry) in [
            (Frame::Dataset, entries.dataset),
            (Frame::Human, entries.human),
        ] {
            let (Some(entry), Some(cal)) = (entry, out.frame_mut(frame).as_mut()) else {
                continue;
            };
            let counts = entry_counts(&entry);
            match cal.counts {
                Some(c) if c != counts => {
                    return Err(InputError {
                        field: Some(format!("{field}.{}", frame.name())),
                        ..InputError::file(
                            &file,
                            format!(
                                "the groups disagree on the {} calibration ({c:?} vs {counts:?}); \
                                 one run has one calibration",
                                frame.name()
                            ),
                        )
                    }
                    .into())
                }
                _ => cal.counts = Some(counts),
            }
        }
    }
    Ok(out)
}

/// One run of the comparison: its label (named in the notes) and its calibrations.
pub struct RunInfo<'a> {
    /// `--labels` or the folder's name.
    pub label: &'a str,
    /// What [`story_calibration`] read (empty for other suites).
    pub calibration: &'a RunCalibration,
}

/// Attach to every IFSM comparison the corrected difference under each calibration its two
/// systems share (the same id; `shared` says what one id with two sets of counts gives). `run_of[i]` is
/// the run `systems[i]` came from. Returns one line per pair of runs and frame that one of them
/// calibrated but the pair does not share, saying why, or that they share on two sizes; nothing
/// when no run carries a calibration.
pub fn attach(
    comparisons: &mut [Comparison],
    systems: &[System],
    run_of: &[usize],
    runs: &[RunInfo],
) -> Vec<String> {
    let mut notes = Vec::new();
    for c in comparisons.iter_mut().filter(|c| c.metric == METRIC) {
        let index = |name: &str| systems.iter().position(|(n, _)| n == name);
        let (Some(ia), Some(ib)) = (index(&c.a), index(&c.b)) else {
            continue;
        };
        let (ra, rb) = (&runs[run_of[ia]], &runs[run_of[ib]]);
        let diffs = paired_diffs(&systems[ia].1, &systems[ib].1);
        let share_diff = judged_share_diff(&systems[ia].1, &systems[ib].1);
        let mut corrected = CorrectedDifferences {
            dataset: None,
            human: None,
        };
        for frame in Frame::ALL {
            let note = match shared(ra, rb, frame) {
                Shared::Counts(counts, note) => {
                    let d = corrected_difference_with_empty(&diffs, share_diff, &counts);
                    match frame {
                        Frame::Dataset => corrected.dataset = d,
                        Frame::Human => corrected.human = d,
                    }
                    note
                }
                Shared::Neither => None,
                Shared::Not(why) => Some(format!(
                    "No judge-corrected IFSM difference between runs {} and {} under the {} \
                     calibration: {why}.",
                    ra.label,
                    rb.label,
                    frame.name()
                )),
            };
            if let Some(note) = note.filter(|n| !notes.contains(n)) {
                notes.push(note);
            }
        }
        if corrected.dataset.is_some() || corrected.human.is_some() {
            c.corrected = Some(corrected);
        }
    }
    notes
}

/// What two runs share in one frame.
enum Shared {
    /// Neither calibrated it: nothing to say.
    Neither,
    /// These counts, with a line to report when they are one of two.
    Counts(CalibrationCounts, Option<String>),
    /// One or both calibrated it, but not shared: why.
    Not(String),
}

/// The calibration two runs share in a frame. One id with two sizes is one judge, protocol and
/// dataset calibrated on two sets of questions (a run over part of the dataset; the cache gives
/// a question the same verdicts in both): the larger calibration is used and a line says so. One
/// id with two different counts of one size (a `--recalibrate` between the runs) is not shared.
fn shared(a: &RunInfo, b: &RunInfo, frame: Frame) -> Shared {
    let short = |id: &str| id.chars().take(12).collect::<String>();
    let size = |c: &CalibrationCounts| c.positives + c.negatives;
    match (a.calibration.frame(frame), b.calibration.frame(frame)) {
        (None, None) => Shared::Neither,
        (Some(_), None) => Shared::Not(format!("{} carries none", b.label)),
        (None, Some(_)) => Shared::Not(format!("{} carries none", a.label)),
        (Some(x), Some(y)) if x.id != y.id => Shared::Not(format!(
            "they were calibrated differently ({} vs {})",
            short(&x.id),
            short(&y.id)
        )),
        (Some(x), Some(y)) => match (x.counts, y.counts) {
            (Some(cx), Some(cy)) if cx == cy => Shared::Counts(cx, None),
            (Some(cx), Some(cy)) if size(&cx) != size(&cy) => {
                let (larger, label) = if size(&cx) > size(&cy) {
                    (cx, a.label)
                } else {
                    (cy, b.label)
                };
                let line = format!(
                    "Runs {} and {} share the {} calibration {} on different questions ({} vs {} \
                     items); the corrected difference uses {}'s, the larger.",
                    a.label,
                    b.label,
                    frame.name(),
                    short(&x.id),
                    size(&cx),
                    size(&cy),
                    label
                );
                Shared::Counts(larger, Some(line))
            }
            (Some(_), Some(_)) => Shared::Not(format!(
                "one calibration id ({}) with different counts on as many items (recalibrated \
                 between the runs?)",
                short(&x.id)
            )),
            _ => Shared::Not("the calibration lacks positives or negatives".into()),
        },
    }
}

/// s_A − s_B: the difference of the two systems' shares of judged (non-empty) endings on the
/// items both have for IFSM (0 for runs that recorded no judged flag).
fn judged_share_diff(
    a: &std::collections::BTreeMap<&'static str, Values>,
    b: &std::collections::BTreeMap<&'static str, Values>,
) -> f64 {
    let (Some(ia), Some(ib), Some(ja), Some(jb)) = (
        a.get(METRIC),
        b.get(METRIC),
        a.get(super::observe::JUDGED),
        b.get(super::observe::JUDGED),
    ) else {
        return 0.0;
    };
    let paired: Vec<&String> = ia.keys().filter(|id| ib.contains_key(*id)).collect();
    if paired.is_empty() {
        return 0.0;
    }
    let share = |j: &Values| {
        paired
            .iter()
            .map(|id| j.get(*id).copied().unwrap_or(1.0))
            .sum::<f64>()
            / paired.len() as f64
    };
    share(ja) - share(jb)
}

/// f_A − f_B of IFSM on the items both systems have (the pairing of [`super::compare`]).
fn paired_diffs(
    a: &std::collections::BTreeMap<&'static str, Values>,
    b: &std::collections::BTreeMap<&'static str, Values>,
) -> Vec<f64> {
    let (Some(a), Some(b)) = (a.get(METRIC), b.get(METRIC)) else {
        return Vec::new();
    };
    a.iter()
        .filter_map(|(id, va)| b.get(id).map(|vb| va - vb))
        .collect()
}

#[cfg(test)]
mod tests;
