//! The estimates of IFSM that human labels make possible, beside Lee et al.'s correction
//! (`ifsm_correction`): the per-model prediction-powered estimate (PPI++), the test of the
//! dataset calibration's transfer to model endings, and the one headline a group is reported by.
//!
//! - **PPI++** ([`ppi`]): a model's human labels are a uniform random sample of its judged
//!   endings (`--label-sample` draws them so), Y the human label and Ŷ the judge's verdict; the
//!   power-tuned prediction-powered mean of Angelopoulos et al. (arXiv 2311.01453), exactly as
//!   ppi-python 0.2.3 computes it, estimates the share of its judged endings that follow, with no
//!   assumption on how the judge errs. Scaled by the judged share, as the correction is.
//! - **Transfer** ([`calibration_agreement`]): the judge's q1 and q0 on the dataset calibration
//!   (human-written endings) against the same rates on the human-labelled model endings, each
//!   with Fisher's exact test of the 2×2 table.

use crate::ifsm_correction::{CalibrationCounts, Z95};
use crate::stats::fisher::fisher_exact_two_sided;
use crate::stats::ppi::ppi_mean;
use crate::story::{Item, Outcome};
use scorekit_report::ifsm_corrected::PpiIfsm;
pub use scorekit_report::ifsm_corrected::{CalibrationAgreement, RateAgreement};

/// A group's PPI++ estimate of IFSM (`cyclic`: of the cyclic majority's verdicts) from its
/// `items`, those that carry a human label the labelled sample; `None` without a labelled
/// judged ending.
pub fn ppi(items: &[&Item], cyclic: bool) -> Option<PpiIfsm> {
    let (mut y, mut yhat, mut unlabeled) = (Vec::new(), Vec::new(), Vec::new());
    let mut empty = 0usize;
    for it in items {
        if !it.status.answers() || it.passage_id.is_none() {
            continue;
        }
        let Some(outcome) = &it.judge else { continue };
        let Some(v) = Outcome::verdict(outcome) else {
            empty += 1;
            continue;
        };
        let picked = if cyclic {
            v.cyclic.as_ref().is_some_and(|c| c.follow)
        } else {
            v.follow
        };
        let f = f64::from(u8::from(picked));
        match it.human_follows {
            Some(h) => {
                y.push(f64::from(u8::from(h)));
                yhat.push(f);
            }
            None => unlabeled.push(f),
        }
    }
    let est = ppi_mean(&y, &yhat, &unlabeled, Z95)?;
    let judged = y.len() + unlabeled.len();
    let share = judged as f64 / (judged + empty) as f64;
    Some(PpiIfsm {
        value: share * est.value,
        ci: [share * est.ci[0], share * est.ci[1]],
        lambda: est.lambda,
        n_labeled: y.len(),
        n_unlabeled: unlabeled.len(),
        n_empty: empty,
    })
}

/// Compare the two calibrations' rates; `None` when either lacks both sides' items entirely.
pub fn calibration_agreement(
    dataset: &CalibrationCounts,
    labels: &CalibrationCounts,
) -> Option<CalibrationAgreement> {
    let rate = |dk: usize, dm: usize, lk: usize, lm: usize| {
        (dm > 0 && lm > 0).then(|| RateAgreement {
            dataset: dk as f64 / dm as f64,
            dataset_counted: dk,
            dataset_items: dm,
            labels: lk as f64 / lm as f64,
            labels_counted: lk,
            labels_items: lm,
            fisher_p: fisher_exact_two_sided([
                [dk as u64, (dm - dk) as u64],
                [lk as u64, (lm - lk) as u64],
            ]),
        })
    };
    let out = CalibrationAgreement {
        q1: rate(
            dataset.positives_counted,
            dataset.positives,
            labels.positives_counted,
            labels.positives,
        ),
        q0: rate(
            dataset.negatives_counted,
            dataset.negatives,
            labels.negatives_counted,
            labels.negatives,
        ),
    };
    (out.q1.is_some() || out.q0.is_some()).then_some(out)
}
