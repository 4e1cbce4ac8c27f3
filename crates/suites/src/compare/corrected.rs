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
use scorekit_report::compare::{HeadlineDifference, HeadlineRow, PpiDifference};
use scorekit_report::ifsm_corrected::{Headline, IfsmCorrected, PpiIfsm};
use scorekit_report::MetricsDoc;
use serde_json::Value;
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

/// What a story run reports of one group beyond its items: its headline's method and its
/// prediction-powered estimate.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct GroupEstimates {
    /// `ifsm_headline`.
    pub headline: Option<Headline>,
    /// `ifsm_ppi`.
    pub ppi: Option<PpiIfsm>,
}

/// A run's calibrations, one per frame that ran (none for other suites or without one), and
/// its groups' estimates.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RunCalibration {
    /// The dataset frame.
    pub dataset: Option<FrameCalibration>,
    /// The human frame.
    pub human: Option<FrameCalibration>,
    /// Per group (as in metrics.json), its headline method and PPI estimate.
    pub groups: std::collections::BTreeMap<String, GroupEstimates>,
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
    let mut groups = std::collections::BTreeMap::new();
    for (group, value) in &doc.groups {
        let field = |key: &str| format!("groups.{group}.{key}");
        let parse = |key: &str| -> Result<Option<Value>> {
            Ok(value.get(key).filter(|v| !v.is_null()).cloned())
        };
        let headline = match parse("ifsm_headline")? {
            Some(v) => Some(
                serde_json::from_value::<Headline>(v).map_err(|e| InputError {
                    field: Some(field("ifsm_headline")),
                    ..InputError::file(&file, format!("not a headline entry: {e}"))
                })?,
            ),
            None => None,
        };
        let ppi = match parse("ifsm_ppi")? {
            Some(v) => Some(
                serde_json::from_value::<PpiIfsm>(v).map_err(|e| InputError {
                    field: Some(field("ifsm_ppi")),
                    ..InputError::file(&file, format!("not a PPI entry: {e}"))
                })?,
            ),
            None => None,
        };
        if headline.is_some() || ppi.is_some() {
            groups.insert(group.clone(), GroupEstimates { headline, ppi });
        }
    }
    let Some(recorded) = recorded else {
        return Ok(RunCalibration {
            groups,
            ..RunCalibration::default()
        });
    };
    let mut out = RunCalibration {
        groups,
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
    group_of: &[&str],
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
            ppi: None,
            headline: None,
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
        let (ga, gb) = (
            ra.calibration.groups.get(group_of[ia]),
            rb.calibration.groups.get(group_of[ib]),
        );
        corrected.ppi = paired_ppi(&systems[ia].1, &systems[ib].1).or_else(|| {
            unpaired_ppi(
                ga.and_then(|g| g.ppi.as_ref()),
                gb.and_then(|g| g.ppi.as_ref()),
            )
        });
        let methods = (
            ga.and_then(|g| g.headline.as_ref().map(|h| h.method.as_str())),
            gb.and_then(|g| g.headline.as_ref().map(|h| h.method.as_str())),
        );
        match methods {
            (Some(ma), Some(mb)) if ma == mb => {
                corrected.headline = Some(headline_difference(ma, c, &corrected));
            }
            (Some(ma), Some(mb)) => {
                let note = format!(
                    "No headline IFSM difference between {} and {}: their headlines use different \
                     methods ({ma} vs {mb}); compare them on a method both have (docs/story.md).",
                    c.a, c.b
                );
                if !notes.contains(&note) {
                    notes.push(note);
                }
            }
            _ => {}
        }
        let any = corrected.dataset.is_some()
            || corrected.human.is_some()
            || corrected.ppi.is_some()
            || corrected
                .headline
                .as_ref()
                .is_some_and(|h| h.method != "raw");
        if any {
            c.corrected = Some(corrected);
        }
    }
    notes
}

/// Each system's headline (`systems[i]` from run `run_of[i]`, its group `group_of[i]`), ranked
/// by value when every system's headline uses one method, else in the order given.
pub fn headline_rows(
    systems: &[System],
    run_of: &[usize],
    group_of: &[&str],
    runs: &[RunInfo],
) -> (Vec<HeadlineRow>, bool) {
    let mut rows: Vec<HeadlineRow> = systems
        .iter()
        .enumerate()
        .filter_map(|(i, (name, _))| {
            let h = runs[run_of[i]]
                .calibration
                .groups
                .get(group_of[i])?
                .headline
                .as_ref()?;
            Some(HeadlineRow {
                system: name.clone(),
                method: h.method.clone(),
                value: h.value,
                ci: h.ci,
            })
        })
        .collect();
    let one_method = rows.windows(2).all(|w| w[0].method == w[1].method);
    if one_method {
        rows.sort_by(|a, b| b.value.total_cmp(&a.value));
    }
    let ranked = one_method && !rows.is_empty();
    (rows, ranked)
}

/// A − B on the headline's method: the PPI difference, Lee et al.'s under the labels' or the
/// dataset's calibration, or the raw paired difference.
fn headline_difference(
    method: &str,
    c: &Comparison,
    d: &CorrectedDifferences,
) -> HeadlineDifference {
    let lee = |x: &Option<scorekit_report::compare::CorrectedDifference>| {
        x.as_ref().map_or((None, None), |x| (x.value, x.ci))
    };
    let (value, ci) = match method {
        "ppi" => d
            .ppi
            .as_ref()
            .map_or((None, None), |p| (Some(p.value), Some(p.ci))),
        "labels" => lee(&d.human),
        "dataset" => lee(&d.dataset),
        _ => c.diff.map_or((None, None), |x| {
            (Some(x.value), Some([x.ci_low, x.ci_high]))
        }),
    };
    HeadlineDifference {
        method: method.to_string(),
        value,
        ci,
    }
}

/// PPI++ on the paired per-question differences: Y = y_A − y_B where both systems' endings to a
/// question are labelled (an empty ending counts as y = 0), Ŷ = f_A − f_B, the other paired
/// questions unlabelled. `None` when no question is labelled for both.
fn paired_ppi(
    a: &std::collections::BTreeMap<&'static str, Values>,
    b: &std::collections::BTreeMap<&'static str, Values>,
) -> Option<PpiDifference> {
    use crate::story::{HUMAN, JUDGED};
    let (fa, fb) = (a.get(METRIC)?, b.get(METRIC)?);
    let (ha, hb) = (a.get(HUMAN)?, b.get(HUMAN)?);
    let empty = Values::new();
    let (ja, jb) = (
        a.get(JUDGED).unwrap_or(&empty),
        b.get(JUDGED).unwrap_or(&empty),
    );
    // A label, or 0 for an empty ending (known not to follow).
    let label = |h: &Values, j: &Values, id: &str| match j.get(id) {
        Some(&0.0) => Some(0.0),
        _ => h.get(id).copied(),
    };
    let (mut y, mut yhat, mut unlabeled) = (Vec::new(), Vec::new(), Vec::new());
    for (id, va) in fa {
        let Some(vb) = fb.get(id) else { continue };
        let d = va - vb;
        // A question is in the labelled sample when at least one ending to it was labelled.
        let sampled = ha.contains_key(id) || hb.contains_key(id);
        match (sampled, label(ha, ja, id), label(hb, jb, id)) {
            (true, Some(la), Some(lb)) => {
                y.push(la - lb);
                yhat.push(d);
            }
            _ => unlabeled.push(d),
        }
    }
    let est = crate::stats::ppi::ppi_mean(&y, &yhat, &unlabeled, crate::ifsm_correction::Z95)?;
    Some(PpiDifference {
        method: "paired".into(),
        value: est.value,
        ci: est.ci,
        lambda: Some(est.lambda),
        n_labeled: Some(est.n_labeled),
        n_unlabeled: Some(est.n_unlabeled),
    })
}

/// The difference of two PPI++ estimates labelled on different questions: their variances
/// (from the intervals' half-widths) add up.
fn unpaired_ppi(a: Option<&PpiIfsm>, b: Option<&PpiIfsm>) -> Option<PpiDifference> {
    let (a, b) = (a?, b?);
    let z = crate::ifsm_correction::Z95;
    let se = |p: &PpiIfsm| (p.ci[1] - p.ci[0]) / (2.0 * z);
    let value = a.value - b.value;
    let half = z * (se(a).powi(2) + se(b).powi(2)).sqrt();
    Some(PpiDifference {
        method: "unpaired".into(),
        value,
        ci: [value - half, value + half],
        lambda: None,
        n_labeled: None,
        n_unlabeled: None,
    })
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
        a.get(crate::story::JUDGED),
        b.get(crate::story::JUDGED),
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
