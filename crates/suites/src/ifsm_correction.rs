//! Judge-error correction of IFSM (Lee et al. 2025, "How to Correctly Report LLM-as-a-Judge
//! Evaluations", arXiv 2511.21140): the judge picks a generated ending that follows with
//! probability q1 (sensitivity) and leaves one that does not follow unpicked with probability
//! q0 (specificity), so the raw pick rate p has expectation (q0 + q1 − 1)·θ + (1 − q0). Both are
//! measured on calibration items (m1 positives, m0 negatives); this module inverts the relation,
//! with an interval that carries the test items' and the calibration's uncertainty.
//!
//! Plain functions over counts, no I/O; docs/story.md ("Judge-corrected IFSM") states the
//! formulas and `scripts/reference/ifsm_correction_reference.py` transcribes them independently
//! (the unit tests compare every field to 1e-12).

use serde::{Deserialize, Serialize};

pub use scorekit_report::compare::CorrectedDifference;
/// The judge-corrected IFSM of one group for one calibration, as metrics.json holds it (defined
/// beside its rendering in report/, which cannot depend on this crate).
pub use scorekit_report::ifsm_corrected::{Clipped, CorrectedIfsm};

/// z = Φ⁻¹(0.975), correctly rounded (defined beside the report's planning figures, which
/// cannot depend on this crate).
pub use scorekit_report::ifsm_corrected::Z95;

/// Calibration counts in the IFSM frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct CalibrationCounts {
    /// m1: calibration items whose ending follows.
    pub positives: usize,
    /// Of those, the ones the judge picked (the gold slot).
    pub positives_counted: usize,
    /// m0: calibration items whose ending does not follow.
    pub negatives: usize,
    /// Of those, the ones the judge left unpicked.
    pub negatives_counted: usize,
}

impl CalibrationCounts {
    /// Specificity q0 = negatives_counted / m0 (`None` without negatives).
    pub fn q0(&self) -> Option<f64> {
        share(self.negatives_counted, self.negatives)
    }

    /// Sensitivity q1 = positives_counted / m1 (`None` without positives).
    pub fn q1(&self) -> Option<f64> {
        share(self.positives_counted, self.positives)
    }

    /// Add another calibration's counts (pooling shards or frames of one judge).
    pub fn add(&mut self, other: &CalibrationCounts) {
        self.positives += other.positives;
        self.positives_counted += other.positives_counted;
        self.negatives += other.negatives;
        self.negatives_counted += other.negatives_counted;
    }
}

fn share(k: usize, m: usize) -> Option<f64> {
    (m > 0).then(|| k as f64 / m as f64)
}

/// The judge's resolution J = q0 + q1 − 1 (defined beside its rendering in report/, which
/// cannot depend on this crate).
pub use scorekit_report::ifsm_corrected::Resolution;

/// J = q0 + q1 − 1 with its Agresti–Caffo interval and whether it is informative (judge eval
/// uses this alone). `None` when the calibration lacks positives or negatives.
///
/// The interval adds one success and one failure to each side, as Lee et al. smooth q0 and q1
/// (q̃ = (x + 1)/(m + 2), se² = q̃0(1 − q̃0)/(m0 + 2) + q̃1(1 − q̃1)/(m1 + 2), interval
/// q̃0 + q̃1 − 1 ∓ z·se): the unsmoothed normal interval of a tiny calibration with q = 1 has
/// zero width (m0 = m1 = 1, q0 = q1 = 1 gave [1, 1], an "informative" judge on two items), the
/// smoothed one is [−0.42, 1.09]. `J` itself stays the unsmoothed q0 + q1 − 1.
pub fn judge_resolution(cal: &CalibrationCounts) -> Option<Resolution> {
    let (q0, q1) = (cal.q0()?, cal.q1()?);
    let (m0, m1) = (cal.negatives, cal.positives);
    let j = q0 + q1 - 1.0;
    let (s0, t0) = smoothed(cal.negatives_counted, m0);
    let (s1, t1) = smoothed(cal.positives_counted, m1);
    let centre = s0 + s1 - 1.0;
    let se = (s0 * (1.0 - s0) / t0 + s1 * (1.0 - s1) / t1).sqrt();
    let j_ci = [centre - Z95 * se, centre + Z95 * se];
    Some(Resolution {
        j,
        j_ci,
        // An interval reaching 0 admits a judge whose picks are independent of following:
        // dividing by J would then turn noise into an unbounded estimate (Fieller).
        informative: j_ci[0] > 0.0,
        q0,
        q1,
        m0,
        m1,
    })
}

/// The calibration counts back from an entry's q0·m0 and q1·m1 (they are counts, so rounding
/// only removes the division's last-bit error): how `scorekit compare` reads a run's calibration.
pub fn entry_counts(entry: &CorrectedIfsm) -> CalibrationCounts {
    CalibrationCounts {
        positives: entry.m1,
        positives_counted: (entry.q1 * entry.m1 as f64).round() as usize,
        negatives: entry.m0,
        negatives_counted: (entry.q0 * entry.m0 as f64).round() as usize,
    }
}

fn clip(x: f64, low: f64, high: f64) -> f64 {
    x.max(low).min(high)
}

/// Laplace-smoothed rate and size, as Lee et al. smooth q0 and q1: (m·q + 1)/(m + 2), m + 2.
/// Without it a calibration with q = 1 would claim zero variance.
fn smoothed(k: usize, m: usize) -> (f64, f64) {
    let m = m as f64;
    ((k as f64 + 1.0) / (m + 2.0), m + 2.0)
}

/// Which bound of [0, 1] an estimate was clipped to (metrics.json `clipped`).
fn clipped(x: f64) -> Option<Clipped> {
    if x < 0.0 {
        Some(Clipped::Low)
    } else if x > 1.0 {
        Some(Clipped::High)
    } else {
        None
    }
}

/// An entry with the judge's resolution and the counts, before any estimate.
fn no_estimate(r: &Resolution, n_judged: usize, n_empty: usize) -> CorrectedIfsm {
    CorrectedIfsm {
        value: None,
        ci: None,
        unclipped: None,
        clipped: None,
        n_judged,
        n_empty,
        informative: r.informative,
        j: r.j,
        j_ci: r.j_ci,
        q0: r.q0,
        m0: r.m0,
        q1: r.q1,
        m1: r.m1,
    }
}

/// Lee et al.'s estimate for raw rate `p` over `n` judged items; None when the calibration
/// lacks positives or negatives (or n == 0, or `p` is not a rate in [0, 1]).
pub fn correct(p: f64, n: usize, cal: &CalibrationCounts) -> Option<CorrectedIfsm> {
    if n == 0 || !(0.0..=1.0).contains(&p) {
        return None;
    }
    let r = judge_resolution(cal)?;
    let mut out = no_estimate(&r, n, 0);
    if !r.informative {
        return Some(out);
    }
    let theta = (p + r.q0 - 1.0) / r.j;
    out.value = Some(clip(theta, 0.0, 1.0));
    out.unclipped = Some(theta);
    out.clipped = clipped(theta);
    out.ci = lee_interval(p, n, cal);
    Some(out)
}

/// The corrected IFSM over all endings of a group, `n_empty` of which are empty: Lee et al.'s
/// estimate θ_j of the pick rate `p_judged` among the `n_judged` judged endings, scaled by the
/// judged share s = n_j / n (value s·θ_j, interval s·(θ_j's interval)).
///
/// Raw IFSM counts an empty ending as not followed without asking the judge; correcting the
/// pooled rate would treat it as a judged "no", i.e. as a possible false rejection, and bias the
/// estimate by −e·(1 − q0)/J for a share e of empty endings. An empty ending is known not to
/// follow, so it adds no uncertainty: only the judged endings are corrected. With no judged
/// ending at all the rate is exactly 0.
pub fn correct_with_empty(
    p_judged: f64,
    n_judged: usize,
    n_empty: usize,
    cal: &CalibrationCounts,
) -> Option<CorrectedIfsm> {
    if n_judged == 0 {
        let r = judge_resolution(cal)?;
        if n_empty == 0 {
            return None;
        }
        return Some(CorrectedIfsm {
            value: Some(0.0),
            ci: Some([0.0, 0.0]),
            unclipped: Some(0.0),
            ..no_estimate(&r, 0, n_empty)
        });
    }
    let mut out = correct(p_judged, n_judged, cal)?;
    let share = n_judged as f64 / (n_judged + n_empty) as f64;
    out.n_empty = n_empty;
    out.value = out.value.map(|v| share * v);
    out.unclipped = out.unclipped.map(|v| share * v);
    out.ci = out.ci.map(|[lo, hi]| [share * lo, share * hi]);
    Some(out)
}

/// Steps 1–6 of Lee et al.'s interval (docs/story.md); `None` when the smoothed J̃ ≤ 0.
fn lee_interval(p: f64, n: usize, cal: &CalibrationCounts) -> Option<[f64; 2]> {
    let z2 = Z95 * Z95;
    let n = n as f64;
    let p = (n * p + z2 / 2.0) / (n + z2);
    let n = n + z2;
    let (q0, m0) = smoothed(cal.negatives_counted, cal.negatives);
    let (q1, m1) = smoothed(cal.positives_counted, cal.positives);
    let jt = q0 + q1 - 1.0;
    if jt <= 0.0 {
        // Only a lopsided calibration gets here (say q0 = 1 on m0 = 2, q1 small on a large m1):
        // the unsmoothed J's interval is tight, the smoothed one points the other way, and
        // the interval's division has no sign to trust.
        return None;
    }
    let th = (p + q0 - 1.0) / jt;
    let v0 = q0 * (1.0 - q0) / m0;
    let v1 = q1 * (1.0 - q1) / m1;
    let delta = 2.0 * z2 * (-(1.0 - th) * v0 + th * v1);
    let se = (p * (1.0 - p) / n + (1.0 - th).powi(2) * v0 + th.powi(2) * v1).sqrt() / jt;
    let centre = th + delta;
    Some([
        clip(centre - Z95 * se, 0.0, 1.0),
        clip(centre + Z95 * se, 0.0, 1.0),
    ])
}

/// Name of the corrected difference's interval, as written into metrics.json.
pub const DIFFERENCE_METHOD: &str =
    "delta method: Agresti-Min paired difference over Lee et al.'s smoothed J";

/// The judge-corrected difference Δθ = Δp / J of two systems scored by one judge with one
/// calibration, from the paired items' differences f_A − f_B ∈ {−1, 0, 1}.
///
/// Under the judge model E(p) = (1 − q0) + J·θ for both systems, so E(Δp) = J·Δθ: q0 cancels
/// and only J is needed. Subtracting two of Lee et al.'s intervals would ignore the pairing (the
/// systems answer the same questions) and count the shared calibration twice, so the interval is
/// a delta method on the ratio of two estimates treated as independent: Var(Δθ) ≈ Var(Δp)/J² +
/// Δθ²·Var(J)/J². They are not disjoint: the dataset calibration frames the very questions that
/// are scored (human endings in place of the model's), so Δp and J share the questions'
/// difficulty; the simulation of that design in `scripts/reference/ifsm_correction_reference.py
/// --coverage` still covers at 95% or above (docs/compare.md). The parts:
/// - Δp smoothed as Agresti & Min (2005) do for paired proportions (½ added to each cell of the
///   2×2 table: b̃ = b + ½, c̃ = c + ½, ñ = n + 2, Δp̃ = (b̃ − c̃)/ñ,
///   Var(Δp̃) = ((b̃ + c̃)/ñ − Δp̃²)/ñ), so that a run with no discordant pair does not claim
///   zero variance;
/// - J smoothed as Lee et al. smooth q0 and q1 (q̃ = (mq + 1)/(m + 2), m̃ = m + 2) for the same
///   reason: J̃ = q̃0 + q̃1 − 1, Var(J̃) = q̃0(1 − q̃0)/m̃0 + q̃1(1 − q̃1)/m̃1;
/// - se = √(Var(Δp̃) + (Δp̃/J̃)²·Var(J̃)) / J̃, interval clip₋₁¹(Δp̃/J̃ ∓ z·se) (`None` when
///   J̃ ≤ 0, the corner of [`CorrectedIfsm::ci`]).
///
/// A closed form rather than a bootstrap over both runs' items and the calibration's counts: a
/// bootstrap of a calibration with q = 1 resamples only 1s (no variance at all, the case the
/// smoothing exists for), resampled J near 0 makes percentile intervals of a ratio erratic, and
/// the closed form is deterministic and checkable against a transcription to 1e-12. Its Monte
/// Carlo coverage is about 95% (docs/compare.md). The value is the unsmoothed clip₋₁¹(Δp/J).
/// `None` without a paired item, with a difference outside {−1, 0, 1}, or without positives or
/// negatives; value and interval are `None` when the judge is uninformative (J's interval
/// reaches 0, where the ratio's confidence set is unbounded).
pub fn corrected_difference(diffs: &[f64], cal: &CalibrationCounts) -> Option<CorrectedDifference> {
    corrected_difference_with_empty(diffs, 0.0, cal)
}

/// [`corrected_difference`] when the two systems' shares of judged (non-empty) endings differ
/// on the paired items by `judged_share_diff` = s_A − s_B. Each system's corrected rate is
/// s·θ_j (`correct_with_empty`): an empty ending is 0, a judged one (f + q0 − 1)/J on average,
/// so A − B is (Δp + (q0 − 1)·Δs)/J and q0 no longer cancels. The interval's delta method adds
/// q0's variance to the numerator and its covariance with J (J = q0 + q1 − 1):
/// Var(Δθ) ≈ (Var(Δp̃) + Δs²·Var(q̃0) − 2Δθ·Δs·Var(q̃0) + Δθ²·Var(J̃))/J̃², smoothed as above; with
/// Δs = 0 it is [`corrected_difference`]'s.
pub fn corrected_difference_with_empty(
    diffs: &[f64],
    judged_share_diff: f64,
    cal: &CalibrationCounts,
) -> Option<CorrectedDifference> {
    let (mut b, mut c) = (0usize, 0usize);
    for &d in diffs {
        if d == 1.0 {
            b += 1;
        } else if d == -1.0 {
            c += 1;
        } else if d != 0.0 {
            return None;
        }
    }
    if diffs.is_empty() || !judged_share_diff.is_finite() {
        return None;
    }
    let r = judge_resolution(cal)?;
    let mut out = CorrectedDifference {
        value: None,
        ci: None,
        method: DIFFERENCE_METHOD.to_string(),
        informative: r.informative,
        j: r.j,
    };
    if !r.informative {
        return Some(out);
    }
    let ds = judged_share_diff;
    let n = diffs.len() as f64;
    let dp = (b as f64 - c as f64) / n;
    out.value = Some(clip((dp + (r.q0 - 1.0) * ds) / r.j, -1.0, 1.0));

    let nt = n + 2.0;
    let (bt, ct) = (b as f64 + 0.5, c as f64 + 0.5);
    let dpt = (bt - ct) / nt;
    let var_dp = ((bt + ct) / nt - dpt * dpt) / nt;
    let (q0, m0) = smoothed(cal.negatives_counted, cal.negatives);
    let (q1, m1) = smoothed(cal.positives_counted, cal.positives);
    let jt = q0 + q1 - 1.0;
    if jt > 0.0 {
        let var_q0 = q0 * (1.0 - q0) / m0;
        let var_j = var_q0 + q1 * (1.0 - q1) / m1;
        let dth = (dpt + (q0 - 1.0) * ds) / jt;
        let var_num = var_dp + ds * ds * var_q0;
        let se = (var_num - 2.0 * dth * ds * var_q0 + dth * dth * var_j).sqrt() / jt;
        out.ci = Some([
            clip(dth - Z95 * se, -1.0, 1.0),
            clip(dth + Z95 * se, -1.0, 1.0),
        ]);
    }
    Some(out)
}

#[cfg(test)]
mod tests;
