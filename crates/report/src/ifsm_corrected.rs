//! The judge-corrected IFSM as metrics.json holds it and report.md shows it: per group, one
//! estimate per calibration (the dataset's, human labels'), each with the judge's sensitivity q1,
//! specificity q0 and resolution J = q0 + q1 − 1 it rests on. The estimator itself is the
//! suites crate's (`ifsm_correction`); this module only carries and renders its results.

use super::{percent, Estimate, Table};
use serde::{Deserialize, Serialize};

/// The judge's resolution J = q0 + q1 − 1 (unsmoothed) with its 95% Agresti–Caffo interval.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Resolution {
    /// J = q0 + q1 − 1 (Youden's index of the judge).
    #[serde(rename = "J")]
    pub j: f64,
    /// q̃0 + q̃1 − 1 ∓ z·se (Agresti–Caffo), unclipped (it may leave [−1, 1] on a small calibration).
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

/// Which bound of [0, 1] an estimate was clipped to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Clipped {
    /// Below 0: the judge picks less often than its false-positive rate predicts.
    Low,
    /// Above 1.
    High,
}

/// The judge-corrected IFSM of one group for one calibration.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CorrectedIfsm {
    /// The estimate of the true share that follows (`null` when the judge is uninformative),
    /// over all endings (empty ones count as not following).
    pub value: Option<f64>,
    /// Its 95% interval [low, high] (`null` when the judge is uninformative).
    pub ci: Option<[f64; 2]>,
    /// The estimate before clipping to [0, 1] (scaled by the judged share as `value` is).
    #[serde(default)]
    pub unclipped: Option<f64>,
    /// `"low"` or `"high"` when the estimate left [0, 1] and was clipped, else null.
    #[serde(default)]
    pub clipped: Option<Clipped>,
    /// Endings the judge saw (non-empty): the correction applies to their pick rate.
    #[serde(default)]
    pub n_judged: usize,
    /// Empty endings: known not to follow, outside the correction.
    #[serde(default)]
    pub n_empty: usize,
    /// Whether J's 95% interval stays above 0.
    pub informative: bool,
    /// J = q0 + q1 − 1, the factor by which the judge compresses differences between models.
    #[serde(rename = "J")]
    pub j: f64,
    /// J's 95% Agresti–Caffo interval (one success and one failure added a side).
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

/// The prediction-powered IFSM of one model (PPI++, Angelopoulos et al. 2023) from human labels
/// of a uniform sample of its judged endings, scaled by its judged share (metrics.json
/// `ifsm_ppi`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PpiIfsm {
    /// The estimate over all endings (empty ones count as not following).
    pub value: f64,
    /// Its 95% interval (normal, as ppi-python's `ppi_mean_ci`), scaled as the value.
    pub ci: [f64; 2],
    /// The power-tuning weight λ in [0, 1] (0: the labels alone; 1: plain PPI).
    pub lambda: f64,
    /// Judged endings with a human label.
    pub n_labeled: usize,
    /// Judged endings without one.
    pub n_unlabeled: usize,
    /// Empty endings (known not to follow).
    pub n_empty: usize,
}

/// The one number a group is reported by, and how it was obtained (metrics.json
/// `ifsm_headline`): the first available of `ppi` (human labels of this model), `labels` (Lee
/// et al. with the pooled human calibration), `dataset` (Lee et al. with the dataset
/// calibration; assumes the judge errs on model endings as on human-written ones) and `raw`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Headline {
    /// `ppi`, `labels`, `dataset` or `raw`.
    pub method: String,
    /// The estimate.
    pub value: f64,
    /// Its 95% interval, when the method gives one.
    pub ci: Option<[f64; 2]>,
}

impl Headline {
    /// The first available estimate of `raw`, `corrected` and `ppi`, in the order above.
    pub fn choose(
        raw: Option<&Estimate>,
        corrected: Option<&IfsmCorrected>,
        ppi: Option<&PpiIfsm>,
    ) -> Option<Headline> {
        let of = |method: &str, value: f64, ci: Option<[f64; 2]>| Headline {
            method: method.to_string(),
            value,
            ci,
        };
        if let Some(p) = ppi {
            return Some(of("ppi", p.value, Some(p.ci)));
        }
        let lee = |c: Option<&CorrectedIfsm>| c.and_then(|c| c.value.map(|v| (v, c.ci)));
        if let Some((v, ci)) = lee(corrected.and_then(|c| c.human.as_ref())) {
            return Some(of("labels", v, ci));
        }
        if let Some((v, ci)) = lee(corrected.and_then(|c| c.dataset.as_ref())) {
            return Some(of("dataset", v, ci));
        }
        raw.map(|e| of("raw", e.value, Some([e.ci_low, e.ci_high])))
    }

    /// "54.0 [48.1, 60.2]".
    pub fn shown(&self) -> String {
        match self.ci {
            Some([lo, hi]) => format!("{} [{}, {}]", percent(self.value), percent(lo), percent(hi)),
            None => percent(self.value),
        }
    }
}

/// What each headline method means, for report.md.
pub fn method_note(method: &str) -> &'static str {
    match method {
        "ppi" => {
            "prediction-powered (PPI++) from human labels of this model's endings: valid when \
             the labelled endings are a uniform random sample of the model's judged endings"
        }
        "labels" => {
            "Lee et al.'s correction with the judge's error rates on human-labelled endings \
             (pooled over models): assumes the judge errs alike on every model's endings"
        }
        "dataset" => {
            "Lee et al.'s correction with the dataset calibration: **assumes the judge errs on \
             model endings as on human-written ones** (untested without labels)"
        }
        _ => "the judge's raw picks, not corrected for its errors",
    }
}

/// One rate of the judge on both calibrations, and Fisher's exact test that they are equal.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RateAgreement {
    /// On the dataset calibration (human-written endings).
    pub dataset: f64,
    /// Counted of the dataset calibration's items.
    pub dataset_counted: usize,
    /// The dataset calibration's items.
    pub dataset_items: usize,
    /// On the human-labelled endings.
    pub labels: f64,
    /// Counted of the labelled endings.
    pub labels_counted: usize,
    /// The labelled endings.
    pub labels_items: usize,
    /// Two-sided Fisher exact p-value of the 2×2 table (as `scipy.stats.fisher_exact`).
    pub fisher_p: f64,
}

/// The dataset calibration's q1 and q0 against the labels' (metrics.json
/// `calibration_agreement`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CalibrationAgreement {
    /// Sensitivity on both.
    pub q1: Option<RateAgreement>,
    /// Specificity on both.
    pub q0: Option<RateAgreement>,
}

impl CalibrationAgreement {
    /// Either rate differs at the 5% level.
    pub fn differs(&self) -> bool {
        [&self.q1, &self.q0]
            .into_iter()
            .flatten()
            .any(|r| r.fisher_p < 0.05)
    }
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
        Some(c) => corrected_value(c.value, c.ci, c.clipped, c.unclipped),
    }
}

/// A corrected value as report.md writes it: "54.0% [48.1, 60.2]"; a clipped one as
/// "≥ 100% (unclipped 145%) [..]" so that it does not read as a result; "uninformative" when
/// the judge cannot measure it.
pub fn corrected_value(
    value: Option<f64>,
    ci: Option<[f64; 2]>,
    clipped: Option<Clipped>,
    unclipped: Option<f64>,
) -> String {
    let shown = |v: f64| match (clipped, unclipped) {
        (Some(Clipped::High), Some(u)) => format!("≥ {} (unclipped {})", percent(v), percent(u)),
        (Some(Clipped::Low), Some(u)) => format!("≤ {} (unclipped {})", percent(v), percent(u)),
        _ => percent(v),
    };
    match (value, ci) {
        (Some(v), Some([lo, hi])) => format!("{} [{}, {}]", shown(v), percent(lo), percent(hi)),
        // Informative, but the smoothed calibration is not (docs/story.md): no interval.
        (Some(v), None) => format!("{} (no interval)", shown(v)),
        (None, _) => "uninformative".into(),
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
         value is Lee et al. (2025)'s estimate clip((p + q0 − 1)/J) over the judged (non-empty) \
         endings, scaled by their share (an empty ending is known not to follow); its interval \
         carries the uncertainty of both the generations and the calibration (docs/story.md). \
         The dataset calibration puts human-written endings of the same questions in the gold \
         slot: its value assumes the judge errs on model endings as on those.\n\n",
    );
    // The calibration does not depend on the model: every row shares it.
    for (name, c) in first.sources() {
        s.push_str(&format!(
            "- {name} calibration: q1 = {}% ({} of {} positives), q0 = {}% ({} of {} \
             negatives), J = {:.3} [{:.3}, {:.3}] (Agresti–Caffo)\n",
            percent(c.q1),
            (c.q1 * c.m1 as f64).round(),
            c.m1,
            percent(c.q0),
            (c.q0 * c.m0 as f64).round(),
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
        s.push_str(&format!(
            "  - {}\n",
            LabelsNeeded::of(c.q0, c.q1).sentence()
        ));
    }
    s
}

/// z = Φ⁻¹(0.975), correctly rounded (1.95996398454005423552…; scipy's `norm.ppf(0.975)` is
/// one ulp below, which no reported digit can see): the one z of every 95% interval of the
/// judge-corrected and prediction-powered IFSM (here for the planning figures; the suites'
/// estimators re-export it).
pub const Z95: f64 = 1.959_963_984_540_054_3;

/// How many human labels would settle a judge, from its error rates q0, q1 (a planning figure:
/// the rates as measured taken for the truth, a balanced sample, θ = 0.5, the worst case for
/// an interval's width).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LabelsNeeded {
    /// Labelled endings (half following) that bring J's Agresti–Caffo interval above 0; `None`
    /// when J ≤ 0 (no number of labels shows a judge worse than chance to be informative).
    pub j_above_zero: Option<usize>,
    /// Labelled endings per model for a PPI++ estimate of ±5 points, the judge's verdicts on
    /// the model's other endings doing the rest.
    pub ppi_pm5: usize,
    /// The same with the labels alone.
    pub alone_pm5: usize,
}

impl LabelsNeeded {
    /// The figures for a judge of specificity `q0` and sensitivity `q1`.
    pub fn of(q0: f64, q1: f64) -> LabelsNeeded {
        let theta = 0.5;
        let j = q0 + q1 - 1.0;
        let lower = |m: usize| {
            // Half the labels positives, half negatives, counted at the measured rates.
            let half = m as f64 / 2.0;
            let s0 = (q0 * half + 1.0) / (half + 2.0);
            let s1 = (q1 * half + 1.0) / (half + 2.0);
            let se = (s0 * (1.0 - s0) / (half + 2.0) + s1 * (1.0 - s1) / (half + 2.0)).sqrt();
            s0 + s1 - 1.0 - Z95 * se
        };
        let j_above_zero = (j > 0.0).then(|| {
            // The lower bound grows with m: double, then halve the bracket.
            let (mut lo, mut hi) = (2usize, 2usize);
            while lower(hi) <= 0.0 && hi < 1 << 40 {
                lo = hi;
                hi *= 2;
            }
            while hi - lo > 2 {
                let mid = (lo + hi) / 2 / 2 * 2;
                if lower(mid) > 0.0 {
                    hi = mid;
                } else {
                    lo = mid;
                }
            }
            hi
        });
        let width = 0.05 / Z95;
        let var = theta * (1.0 - theta);
        // PPI++ with many unlabelled endings and λ tuned: Var = θ(1 − θ)(1 − ρ²)/n, ρ the
        // correlation of the label and the verdict: Cov = θ(1 − θ)·J, Var(verdict) = p(1 − p)
        // with p = J·θ + 1 − q0.
        let p = j * theta + 1.0 - q0;
        let rho2 = if j > 0.0 && p > 0.0 && p < 1.0 {
            (var * j * j / (p * (1.0 - p))).min(1.0)
        } else {
            0.0
        };
        LabelsNeeded {
            j_above_zero,
            ppi_pm5: (var * (1.0 - rho2) / (width * width)).ceil() as usize,
            alone_pm5: (var / (width * width)).ceil() as usize,
        }
    }

    /// One sentence for report.md and stderr.
    pub fn sentence(&self) -> String {
        let j = match self.j_above_zero {
            Some(m) => format!(
                "about {m} labelled endings (half of them following) would bring J's interval \
                 above 0"
            ),
            None => "no number of labels brings J's interval above 0 (J ≤ 0)".to_string(),
        };
        format!(
            "Labels needed, taking these rates for the truth: {j}; about {} labelled endings per \
             model give a PPI++ estimate of ±5 points ({} with the labels alone; θ = 0.5, the \
             widest case).",
            self.ppi_pm5, self.alone_pm5
        )
    }
}

/// report.md's first section: per model raw IFSM and the headline estimate with its method,
/// what each method used assumes, and, when the dataset calibration disagrees with the human
/// labels, the sentence that says which estimate to use. Empty when no group has a headline.
pub fn headline_section<'a>(
    rows: impl IntoIterator<Item = (&'a str, &'a Option<Estimate>, Option<&'a Headline>)>,
    agreement: Option<&CalibrationAgreement>,
) -> String {
    let rows: Vec<_> = rows
        .into_iter()
        .filter_map(|(name, raw, h)| h.map(|h| (name, raw, h)))
        .collect();
    if rows.is_empty() {
        return String::new();
    }
    let mut t = Table::new(&["model", "IFSM (raw) %", "headline %", "method"]);
    let mut methods: Vec<&str> = Vec::new();
    for (name, ifsm, h) in &rows {
        t.row(&[name.to_string(), raw(ifsm), h.shown(), h.method.clone()]);
        if !methods.contains(&h.method.as_str()) {
            methods.push(&h.method);
        }
    }
    let mut s = String::from("## IFSM: the headline per model\n\n");
    s.push_str(&t.render());
    s.push('\n');
    for m in methods {
        s.push_str(&format!("- `{m}`: {}.\n", method_note(m)));
    }
    if let Some(a) = agreement.filter(|a| a.differs()) {
        let part = |name: &str, r: &Option<RateAgreement>| {
            r.as_ref().filter(|r| r.fisher_p < 0.05).map(|r| {
                format!(
                    "{name} = {}% on the dataset calibration ({} of {}) vs {}% on the \
                     labelled endings ({} of {}), Fisher p = {:.2e}",
                    percent(r.dataset),
                    r.dataset_counted,
                    r.dataset_items,
                    percent(r.labels),
                    r.labels_counted,
                    r.labels_items,
                    r.fisher_p
                )
            })
        };
        let parts: Vec<String> = [part("q1", &a.q1), part("q0", &a.q0)]
            .into_iter()
            .flatten()
            .collect();
        s.push_str(&format!(
            "\n**The dataset calibration does not describe this judge on these endings** ({}): \
             use the `ppi` estimate (human labels of each model) or the `labels` \
             one, not `dataset`.\n",
            parts.join("; ")
        ));
    }
    s.push('\n');
    s
}

/// report.md's section on the prediction-powered IFSM: per labelled model, the estimate, λ and
/// the sample sizes. Empty without labels naming a model.
pub fn ppi_section<'a>(rows: impl IntoIterator<Item = (&'a str, Option<&'a PpiIfsm>)>) -> String {
    let rows: Vec<_> = rows
        .into_iter()
        .filter_map(|(name, p)| p.map(|p| (name, p)))
        .collect();
    if rows.is_empty() {
        return String::new();
    }
    let mut t = Table::new(&[
        "model",
        "IFSM (PPI++) %",
        "λ",
        "labelled",
        "unlabelled",
        "empty",
    ]);
    for (name, p) in &rows {
        t.row(&[
            name.to_string(),
            format!(
                "{} [{}, {}]",
                percent(p.value),
                percent(p.ci[0]),
                percent(p.ci[1])
            ),
            format!("{:.3}", p.lambda),
            p.n_labeled.to_string(),
            p.n_unlabeled.to_string(),
            p.n_empty.to_string(),
        ]);
    }
    let mut s = String::from("\n## Prediction-powered IFSM (human labels per model)\n\n");
    s.push_str(&t.render());
    s.push_str(
        "\nPPI++ (Angelopoulos et al. 2023, power-tuned, as ppi-python 0.2.3's `ppi_mean_ci`): \
         the judge's verdicts on all of a model's judged endings, rectified by the human labels of \
         a sample of them; λ weighs the judge (0: the labels alone). It assumes only that the \
         labelled endings are a uniform random sample of the model's judged endings \
         (`--label-sample` draws them so), not that the judge errs on them as on human-written \
         endings. Empty endings count as not following, outside the sample.\n",
    );
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_needed_follow_the_formulas() {
        // Labels alone: z²·0.25/0.05² = 384.1 → 385.
        let perfect = LabelsNeeded::of(1.0, 1.0);
        assert_eq!(perfect.alone_pm5, 385);
        // A perfect judge: ρ = 1, the judge does all the work.
        assert_eq!(perfect.ppi_pm5, 0);
        // J = 0.6 (q0 = 0.7, q1 = 0.9): p = 0.6; ρ² = 0.25·0.36/0.24 = 0.375.
        let good = LabelsNeeded::of(0.7, 0.9);
        assert_eq!(good.ppi_pm5, (384.1459 * 0.625_f64).ceil() as usize);
        // A weaker judge needs more labels to show J > 0, and none suffice at J ≤ 0.
        let weak = LabelsNeeded::of(0.55, 0.5);
        assert!(weak.j_above_zero.unwrap() > good.j_above_zero.unwrap());
        assert_eq!(LabelsNeeded::of(0.5, 0.5).j_above_zero, None);
        // The figure is the smallest even m whose Agresti–Caffo lower bound is above 0.
        let m = good.j_above_zero.unwrap();
        let lower = |m: f64| {
            let h = m / 2.0;
            let (s0, s1) = ((0.7 * h + 1.0) / (h + 2.0), (0.9 * h + 1.0) / (h + 2.0));
            s0 + s1 - 1.0 - Z95 * (s0 * (1.0 - s0) / (h + 2.0) + s1 * (1.0 - s1) / (h + 2.0)).sqrt()
        };
        assert!(lower(m as f64) > 0.0 && lower(m as f64 - 2.0) <= 0.0, "{m}");
        assert!(weak.sentence().contains("±5 points"));
    }
}
