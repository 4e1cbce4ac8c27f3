//! The judge-corrected IFSM as metrics.json holds it and report.md shows it: per group, one
//! estimate per calibration (the dataset's, human labels'), each with the judge's sensitivity q1,
//! specificity q0 and resolution J = q0 + q1 − 1 it rests on. The estimator itself is the
//! suites crate's (`ifsm_correction`); this module only carries and renders its results.

use super::{percent, Estimate, Table};
use serde::{Deserialize, Serialize};

/// The judge's resolution J = q0 + q1 − 1 with its unsmoothed 95% normal interval.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Resolution {
    /// J = q0 + q1 − 1 (Youden's index of the judge).
    #[serde(rename = "J")]
    pub j: f64,
    /// J ∓ z·se_J, unclipped (it may leave [−1, 1] when the calibration is small).
    #[serde(rename = "J_ci")]
    pub j_ci: [f64; 2],
    /// The interval stays above 0: the judge's picks carry information about following.
    pub informative: bool,
    /// Specificity.
    pub q0: f64,
    /// Sensitivity.
    pub q1: f64,
    /// Negatives of the calibration.
    pub m0: usize,
    /// Positives of the calibration.
    pub m1: usize,
}

/// The judge-corrected IFSM of one group for one calibration.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CorrectedIfsm {
    /// The estimate of the true share that follows (`null` when the judge is uninformative).
    pub value: Option<f64>,
    /// Its 95% interval [low, high] (`null` when the judge is uninformative).
    pub ci: Option<[f64; 2]>,
    /// Whether J's 95% interval stays above 0.
    pub informative: bool,
    /// J = q0 + q1 − 1, the factor by which the judge compresses differences between models.
    #[serde(rename = "J")]
    pub j: f64,
    /// J's 95% normal interval (unsmoothed).
    #[serde(rename = "J_ci")]
    pub j_ci: [f64; 2],
    /// Specificity: share of the negatives the judge does not pick.
    pub q0: f64,
    /// Negatives.
    pub m0: usize,
    /// Sensitivity: share of the positives the judge picks.
    pub q1: f64,
    /// Positives.
    pub m1: usize,
}

/// A group's corrected IFSM per calibration (metrics.json `ifsm_corrected`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct IfsmCorrected {
    /// From the dataset calibration (original options and distractor swaps).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dataset: Option<CorrectedIfsm>,
    /// From human labels (`--calibration-labels`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub human: Option<CorrectedIfsm>,
}

impl IfsmCorrected {
    /// Neither calibration ran.
    pub fn is_empty(&self) -> bool {
        self.dataset.is_none() && self.human.is_none()
    }

    /// The calibrations that ran, with their names.
    pub fn sources(&self) -> impl Iterator<Item = (&'static str, &CorrectedIfsm)> {
        [("dataset", &self.dataset), ("human labels", &self.human)]
            .into_iter()
            .filter_map(|(name, c)| c.as_ref().map(|c| (name, c)))
    }
}

fn value(c: Option<&CorrectedIfsm>) -> String {
    match c {
        None => "-".into(),
        Some(c) => match (c.value, c.ci) {
            (Some(v), Some([lo, hi])) => {
                format!("{} [{}, {}]", percent(v), percent(lo), percent(hi))
            }
            // Informative, but the smoothed calibration is not (docs/story.md): no interval.
            (Some(v), None) => format!("{} (no interval)", percent(v)),
            (None, _) => "uninformative".into(),
        },
    }
}

fn raw(e: &Option<Estimate>) -> String {
    e.map_or("-".into(), |e| {
        format!(
            "{} [{}, {}]",
            percent(e.value),
            percent(e.ci_low),
            percent(e.ci_high)
        )
    })
}

/// report.md's section on the judge-corrected IFSM: one row per model (raw IFSM beside each
/// corrected value), the judge's q0, q1 and J per calibration, and in words what an
/// uninformative judge means. Empty when no calibration ran.
pub fn section<'a>(
    rows: impl IntoIterator<Item = (&'a str, &'a Option<Estimate>, Option<&'a IfsmCorrected>)>,
    cyclic: bool,
) -> String {
    let rows: Vec<_> = rows
        .into_iter()
        .filter_map(|(name, ifsm, c)| c.filter(|c| !c.is_empty()).map(|c| (name, ifsm, c)))
        .collect();
    let Some((_, _, first)) = rows.first() else {
        return String::new();
    };
    let title = if cyclic {
        "Judge-corrected IFSM, cyclic option orders"
    } else {
        "Judge-corrected IFSM"
    };
    let mut s = format!("\n## {title}\n\n");
    let mut t = Table::new(&[
        "model",
        "IFSM (raw) %",
        "corrected, dataset calibration %",
        "corrected, human labels %",
    ]);
    for (name, ifsm, c) in &rows {
        t.row(&[
            name.to_string(),
            raw(ifsm),
            value(c.dataset.as_ref()),
            value(c.human.as_ref()),
        ]);
    }
    s.push_str(&t.render());
    s.push_str(
        "\nRaw IFSM mixes the model's skill with the judge's errors: p = J·θ + (1 − q0), where θ \
         is the true share of endings that follow, q1 the judge's sensitivity (picks an ending \
         that follows), q0 its specificity (leaves one that does not), and J = q0 + q1 − 1 the \
         factor by which the judge compresses every difference between models. The corrected \
         value is Lee et al. (2025)'s estimate clip((p + q0 − 1)/J), its interval carries the \
         uncertainty of both the generations and the calibration (docs/story.md).\n\n",
    );
    // The calibration does not depend on the model: every row shares it.
    for (name, c) in first.sources() {
        s.push_str(&format!(
            "- {name} calibration: q1 = {} of {} positives, q0 = {} of {} negatives, J = {:.3} \
             [{:.3}, {:.3}]\n",
            percent(c.q1),
            c.m1,
            percent(c.q0),
            c.m0,
            c.j,
            c.j_ci[0],
            c.j_ci[1]
        ));
        if !c.informative {
            s.push_str(&format!(
                "  - **This judge cannot measure IFSM on this dataset** ({name} calibration): \
                 the 95% interval of J reaches 0, so its picks are not shown to depend on \
                 whether an ending follows the instruction, and no corrected value is given. \
                 Use a judge with a higher accuracy on the human options (`scorekit judge eval` \
                 reports J).\n"
            ));
        }
    }
    s
}
