//! The judge-corrected IFSM as metrics.json holds it and report.md shows it: per group, one
//! estimate per calibration (the dataset's, human labels'), each with the judge's sensitivity q1,
//! specificity q0 and resolution J = q0 + q1 − 1 it rests on. The estimator itself is the
//! suites crate's (`ifsm_correction`); this module carries its results.

use serde::{Deserialize, Serialize};

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
