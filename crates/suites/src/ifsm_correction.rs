//! PLACEHOLDER until the ifsm-estimator branch lands (Lee et al. 2025's estimate).
use serde::{Deserialize, Serialize};

/// Calibration counts in the IFSM frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct CalibrationCounts {
    /// m1.
    pub positives: usize,
    /// Positives picked.
    pub positives_counted: usize,
    /// m0.
    pub negatives: usize,
    /// Negatives not picked.
    pub negatives_counted: usize,
}

impl CalibrationCounts {
    /// q0.
    pub fn q0(&self) -> Option<f64> {
        (self.negatives > 0).then(|| self.negatives_counted as f64 / self.negatives as f64)
    }
    /// q1.
    pub fn q1(&self) -> Option<f64> {
        (self.positives > 0).then(|| self.positives_counted as f64 / self.positives as f64)
    }
    /// Sum.
    pub fn add(&mut self, o: &CalibrationCounts) {
        self.positives += o.positives;
        self.positives_counted += o.positives_counted;
        self.negatives += o.negatives;
        self.negatives_counted += o.negatives_counted;
    }
}

/// z.
pub const Z95: f64 = 1.959963984540054;

pub use scorekit_report::ifsm_corrected::CorrectedIfsm;

/// Correct.
pub fn correct(p: f64, n: usize, cal: &CalibrationCounts) -> Option<CorrectedIfsm> {
    let (q0, q1) = (cal.q0()?, cal.q1()?);
    if n == 0 {
        return None;
    }
    let (m0, m1, nf) = (cal.negatives as f64, cal.positives as f64, n as f64);
    let z = Z95;
    let j = q0 + q1 - 1.0;
    let se_j = (q0 * (1.0 - q0) / m0 + q1 * (1.0 - q1) / m1).sqrt();
    let j_ci = [j - z * se_j, j + z * se_j];
    let informative = j_ci[0] > 0.0;
    let clip = |x: f64| x.clamp(0.0, 1.0);
    let (mut value, mut ci) = (None, None);
    if informative {
        value = Some(clip((p + q0 - 1.0) / j));
        let pt = (nf * p + z * z / 2.0) / (nf + z * z);
        let q0t = (m0 * q0 + 1.0) / (m0 + 2.0);
        let q1t = (m1 * q1 + 1.0) / (m1 + 2.0);
        let (nt, m0t, m1t) = (nf + z * z, m0 + 2.0, m1 + 2.0);
        let th = (pt + q0t - 1.0) / (q0t + q1t - 1.0);
        let d =
            2.0 * z * z * (-(1.0 - th) * q0t * (1.0 - q0t) / m0t + th * q1t * (1.0 - q1t) / m1t);
        let se = (pt * (1.0 - pt) / nt
            + (1.0 - th).powi(2) * q0t * (1.0 - q0t) / m0t
            + th * th * q1t * (1.0 - q1t) / m1t)
            .sqrt()
            / (q0t + q1t - 1.0);
        ci = Some([clip(th + d - z * se), clip(th + d + z * se)]);
    }
    Some(CorrectedIfsm {
        value,
        ci,
        informative,
        j,
        j_ci,
        q0,
        m0: cal.negatives,
        q1,
        m1: cal.positives,
    })
}

/// Resolution.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Resolution {
    /// J.
    #[serde(rename = "J")]
    pub j: f64,
    /// J ci.
    #[serde(rename = "J_ci")]
    pub j_ci: [f64; 2],
    /// i.
    pub informative: bool,
    /// q0.
    pub q0: f64,
    /// q1.
    pub q1: f64,
    /// m0.
    pub m0: usize,
    /// m1.
    pub m1: usize,
}

/// Resolution.
pub fn judge_resolution(cal: &CalibrationCounts) -> Option<Resolution> {
    let c = correct(0.5, 1, cal)?;
    Some(Resolution {
        j: c.j,
        j_ci: c.j_ci,
        informative: c.informative,
        q0: c.q0,
        q1: c.q1,
        m0: c.m0,
        m1: c.m1,
    })
}
