//! Paired comparison of systems scored on the same benchmark items (`scorekit compare`).
//!
//! Plain functions over plain data: each system is a map from item id to a per-item value of a
//! metric (0/1 for binary metrics, a number for continuous ones). Two systems are compared on the
//! items both have; the items one system lacks are counted, never silently dropped.
//!
//! - the difference is A − B of the means over the paired items, with a percentile-bootstrap 95%
//!   interval over resampled *pairs* (the bootstrap of the per-item differences, by
//!   [`bootstrap_mean`], so it shares the seeded generator and the numpy-style percentile);
//! - binary metrics: the exact McNemar test, a two-sided binomial test on the discordant pairs
//!   (`a_only` items right for A only, `b_only` right for B only) with p = 1/2;
//! - continuous metrics: the two-sided exact sign test, the same binomial on the items where A is
//!   higher (`a_only`) and where B is higher (`b_only`), ties left out;
//! - [`holm`] adjusts the p-values of all comparisons of a run for multiple testing;
//! - [`corrected::attach`] adds, for story runs sharing a judge calibration, IFSM's difference
//!   corrected for the judge's errors.

pub mod corrected;
pub mod observe;
pub mod run;

use scorekit_report::bootstrap_mean;
pub use scorekit_report::compare::{Comparison, Diff, MetricKind, MetricSpec};
use scorekit_report::Estimate;
use std::collections::BTreeMap;

/// Name of the test used for binary metrics, as written into metrics.json.
pub const MCNEMAR: &str = "exact McNemar (two-sided binomial on discordant pairs)";
/// Name of the test used for continuous metrics, as written into metrics.json.
pub const SIGN_TEST: &str = "exact sign test (two-sided binomial on non-zero differences)";

/// One system's per-item values of one metric, by item id.
pub type Values = BTreeMap<String, f64>;

/// A system: its name and, per metric name, its per-item values.
pub type System = (String, BTreeMap<&'static str, Values>);

/// Every pair of systems (in the order given: the earlier one is A) on every compared metric,
/// pair by pair and metric by metric, with p-values Holm-adjusted over all of them.
pub fn compare_all(
    systems: &[System],
    metrics: &[MetricSpec],
    resamples: usize,
    seed: u64,
) -> Vec<Comparison> {
    let empty = Values::new();
    let mut out = Vec::new();
    for (i, (a_name, a)) in systems.iter().enumerate() {
        for (b_name, b) in &systems[i + 1..] {
            for m in metrics.iter().filter(|m| m.compared) {
                let (va, vb) = (a.get(m.name), b.get(m.name));
                if va.is_none() && vb.is_none() {
                    // Neither system has the metric (a story run without the judge, say).
                    continue;
                }
                out.push(compare_pair(
                    m.name,
                    m.kind,
                    a_name,
                    va.unwrap_or(&empty),
                    b_name,
                    vb.unwrap_or(&empty),
                    resamples,
                    seed,
                ));
            }
        }
    }
    adjust_holm(&mut out);
    out
}

/// A system's value of each metric over all of its own items, with a 95% bootstrap interval
/// (`None` where it has no item for the metric).
pub fn leaderboard_values(
    values: &BTreeMap<&'static str, Values>,
    metrics: &[MetricSpec],
    resamples: usize,
    seed: u64,
) -> Vec<Option<Estimate>> {
    metrics
        .iter()
        .map(|m| {
            let v: Vec<f64> = values
                .get(m.name)
                .map(|v| v.values().copied().collect())
                .unwrap_or_default();
            bootstrap_mean(&v, resamples, seed)
        })
        .collect()
}

/// Compare systems `a` and `b` on one metric. `resamples` and `seed` drive the bootstrap of the
/// difference; the same seed gives the same interval, and swapping A and B negates it.
#[allow(clippy::too_many_arguments)] // the names and the two value maps are the comparison
pub fn compare_pair(
    metric: &str,
    kind: MetricKind,
    a_name: &str,
    a: &Values,
    b_name: &str,
    b: &Values,
    resamples: usize,
    seed: u64,
) -> Comparison {
    let mut diffs = Vec::new();
    let (mut sum_a, mut sum_b) = (0.0, 0.0);
    let (mut a_only, mut b_only) = (0u64, 0u64);
    for (id, &va) in a {
        let Some(&vb) = b.get(id) else { continue };
        sum_a += va;
        sum_b += vb;
        diffs.push(va - vb);
        if va > vb {
            a_only += 1;
        } else if vb > va {
            b_only += 1;
        }
    }
    let n = diffs.len();
    let unpaired_a = a.keys().filter(|k| !b.contains_key(*k)).count();
    let unpaired_b = b.keys().filter(|k| !a.contains_key(*k)).count();
    let (a_value, b_value, diff) = match bootstrap_mean(&diffs, resamples, seed) {
        Some(e) => (
            Some(sum_a / n as f64),
            Some(sum_b / n as f64),
            Some(Diff {
                value: (sum_a - sum_b) / n as f64,
                ci_low: e.ci_low,
                ci_high: e.ci_high,
            }),
        ),
        None => (None, None, None),
    };
    Comparison {
        metric: metric.to_string(),
        a: a_name.to_string(),
        b: b_name.to_string(),
        a_value,
        b_value,
        diff,
        p_value: binomial_two_sided(a_only, b_only),
        p_holm: None,
        test: match kind {
            MetricKind::Binary => MCNEMAR,
            MetricKind::Continuous => SIGN_TEST,
        }
        .to_string(),
        n_paired: n,
        a_only,
        b_only,
        unpaired_a,
        unpaired_b,
        // Only story's IFSM under a shared calibration has one (corrected::attach).
        corrected: None,
    }
}

/// Two-sided exact binomial test of `k` successes against `m` failures with p = 1/2:
/// min(1, 2 · P(X ≤ min(k, m))) for X ~ Binomial(k + m, 1/2), which is what scipy's
/// `binomtest(k, k + m, 0.5)` gives (the distribution is symmetric). 1 when there is nothing to
/// test (no discordant pair).
pub fn binomial_two_sided(k: u64, m: u64) -> f64 {
    let n = k + m;
    if n == 0 {
        return 1.0;
    }
    let lo = k.min(m);
    if 2 * lo == n {
        return 1.0;
    }
    // log P(X = i) = log C(n, i) − n log 2, summed in log space so that large n does not
    // underflow 2^−n.
    let ln2n = n as f64 * std::f64::consts::LN_2;
    let mut ln_c = 0.0; // log C(n, 0)
    let mut terms = Vec::with_capacity(lo as usize + 1);
    for i in 0..=lo {
        if i > 0 {
            ln_c += ((n - i + 1) as f64).ln() - (i as f64).ln();
        }
        terms.push(ln_c - ln2n);
    }
    let max = terms.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let tail = max.exp() * terms.iter().map(|t| (t - max).exp()).sum::<f64>();
    (2.0 * tail).min(1.0)
}

/// Holm's step-down adjustment: the i-th smallest of m p-values becomes
/// max over j ≤ i of min(1, (m − j) · p_(j)), with j counted from 0. Order is kept.
pub fn holm(p: &[f64]) -> Vec<f64> {
    let m = p.len();
    let mut order: Vec<usize> = (0..m).collect();
    order.sort_by(|&i, &j| p[i].total_cmp(&p[j]).then(i.cmp(&j)));
    let mut out = vec![0.0; m];
    let mut running: f64 = 0.0;
    for (rank, &i) in order.iter().enumerate() {
        let adj = ((m - rank) as f64 * p[i]).min(1.0);
        running = running.max(adj);
        out[i] = running;
    }
    out
}

/// Fill `p_holm` of every comparison, adjusting over all of them together.
pub fn adjust_holm(comparisons: &mut [Comparison]) {
    let p: Vec<f64> = comparisons.iter().map(|c| c.p_value).collect();
    for (c, adj) in comparisons.iter_mut().zip(holm(&p)) {
        c.p_holm = Some(adj);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn values(v: &[(&str, f64)]) -> Values {
        v.iter().map(|(k, x)| (k.to_string(), *x)).collect()
    }

    #[test]
    fn binomial_matches_hand_computed_tails() {
        // n = 10, min = 2: P(X <= 2) = (1 + 10 + 45) / 1024; two-sided = 112 / 1024.
        assert!((binomial_two_sided(2, 8) - 112.0 / 1024.0).abs() < 1e-15);
        assert!((binomial_two_sided(8, 2) - 112.0 / 1024.0).abs() < 1e-15);
        // n = 1: P(X <= 0) = 1/2, doubled = 1.
        assert_eq!(binomial_two_sided(1, 0), 1.0);
        assert_eq!(binomial_two_sided(0, 0), 1.0);
        assert_eq!(binomial_two_sided(5, 5), 1.0);
        // n = 5, 0 vs 5: 2 / 32.
        assert!((binomial_two_sided(0, 5) - 0.0625).abs() < 1e-15);
        // Large n stays finite and tiny instead of underflowing to 0 / NaN.
        let p = binomial_two_sided(100, 1900);
        assert!(p.is_finite() && p < 1e-100);
        let p = binomial_two_sided(990, 1010);
        assert!(p > 0.5 && p < 1.0, "{p}");
    }

    #[test]
    fn holm_is_step_down_and_monotone() {
        let adj = holm(&[0.01, 0.04, 0.03, 0.5]);
        // sorted: 0.01*4 = 0.04, 0.03*3 = 0.09, 0.04*2 = 0.08 -> max 0.09, 0.5*1 = 0.5.
        let want = [0.04, 0.09, 0.09, 0.5];
        for (a, w) in adj.iter().zip(want) {
            assert!((a - w).abs() < 1e-12, "{adj:?}");
        }
        assert_eq!(holm(&[0.9, 0.8]), vec![1.0, 1.0]);
        assert!(holm(&[]).is_empty());
    }

    #[test]
    fn pairs_by_id_counts_discordant_and_unpaired() {
        let a = values(&[
            ("q1", 1.0),
            ("q2", 0.0),
            ("q3", 1.0),
            ("q4", 1.0),
            ("x", 1.0),
        ]);
        let b = values(&[
            ("q1", 0.0),
            ("q2", 1.0),
            ("q3", 1.0),
            ("q4", 0.0),
            ("y", 0.0),
        ]);
        let c = compare_pair("acc", MetricKind::Binary, "A", &a, "B", &b, 200, 1);
        assert_eq!(c.n_paired, 4);
        assert_eq!((c.a_only, c.b_only), (2, 1));
        assert_eq!((c.unpaired_a, c.unpaired_b), (1, 1));
        assert_eq!(c.a_value, Some(0.75));
        assert_eq!(c.b_value, Some(0.5));
        assert_eq!(c.diff.unwrap().value, 0.25);
        assert_eq!(c.p_value, 1.0);
        assert_eq!(c.test, MCNEMAR);
    }

    #[test]
    fn swapping_a_and_b_negates_the_difference_and_keeps_p() {
        let a: Values = (0..60)
            .map(|i| (format!("{i}"), f64::from(i % 3 == 0)))
            .collect();
        let b: Values = (0..60)
            .map(|i| (format!("{i}"), f64::from(i % 2 == 0)))
            .collect();
        let ab = compare_pair("m", MetricKind::Binary, "A", &a, "B", &b, 500, 9);
        let ba = compare_pair("m", MetricKind::Binary, "B", &b, "A", &a, 500, 9);
        let (d, e) = (ab.diff.unwrap(), ba.diff.unwrap());
        assert_eq!(d.value, -e.value);
        assert!((d.ci_low + e.ci_high).abs() < 1e-12);
        assert!((d.ci_high + e.ci_low).abs() < 1e-12);
        assert_eq!(ab.p_value, ba.p_value);
        assert_eq!((ab.a_only, ab.b_only), (ba.b_only, ba.a_only));
    }

    #[test]
    fn continuous_metrics_use_the_sign_test_and_drop_ties() {
        let a = values(&[("s1", 0.5), ("s2", 0.4), ("s3", 0.3), ("s4", 0.2)]);
        let b = values(&[("s1", 0.1), ("s2", 0.1), ("s3", 0.1), ("s4", 0.2)]);
        let c = compare_pair("d", MetricKind::Continuous, "A", &a, "B", &b, 0, 0);
        assert_eq!((c.a_only, c.b_only, c.n_paired), (3, 0, 4));
        assert!((c.p_value - 0.25).abs() < 1e-15);
        assert_eq!(c.test, SIGN_TEST);
        let d = c.diff.unwrap();
        assert!((d.value - 0.225).abs() < 1e-12);
        // No resamples: the interval collapses to the difference.
        assert_eq!(d.ci_low, d.ci_high);
    }

    #[test]
    fn nothing_paired_gives_no_values() {
        let a = values(&[("a", 1.0)]);
        let b = values(&[("b", 1.0)]);
        let c = compare_pair("m", MetricKind::Binary, "A", &a, "B", &b, 100, 0);
        assert_eq!(c.n_paired, 0);
        assert!(c.diff.is_none() && c.a_value.is_none());
        assert_eq!(c.p_value, 1.0);
    }
}
