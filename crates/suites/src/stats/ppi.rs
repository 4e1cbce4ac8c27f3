//! The prediction-powered mean with power tuning (PPI++, Angelopoulos et al. 2023, arXiv
//! 2311.01453): n gold labels `y` with the judge's predictions `yhat` on the same items, and the
//! judge's predictions `yhat_unlabeled` on N further items. The estimate
//! `mean(λ·Ŷᵤ) + mean(Y − λ·Ŷ)` is unbiased for every λ; λ is tuned to minimise its variance, so a
//! good judge narrows the interval and a useless one falls back to the classical mean of `y`.
//!
//! Computed as ppi-python 0.2.3's `ppi_mean_pointestimate` and `ppi_mean_ci(…, lam=None)` do for
//! 1-D data, operation by operation (`scripts/reference/ppi_reference.py` documents them):
//!
//! - θ₁ = mean(Ŷᵤ) + mean(Y − Ŷ); gᵢ = Yᵢ − θ₁, hᵢ = Ŷᵢ − θ₁, uⱼ = Ŷᵤⱼ − θ₁;
//! - cov = Σᵢ (1/n)·((gᵢ − ḡ)(hᵢ − h̄) + (hᵢ − h̄)(gᵢ − ḡ)), accumulated in order;
//! - var = `np.cov(h ++ u)` (ddof 1, pooled over the n + N predictions);
//! - λ = cov / (2·(1 + n/N)·var), clipped to [0, 1];
//! - value = mean(λ·Ŷᵤ) + mean(Y − λ·Ŷ);
//! - se = √((std₀(λ·Ŷᵤ)/√N)² + (std₀(Y − λ·Ŷ)/√n)²), interval value ∓ z·se.
//!
//! Means are numpy's pairwise sums divided by the count, so the results agree with ppi-python to
//! a few ulps (the pooled sum of squares is a BLAS dot product in numpy, whose order cannot be
//! mirrored). Where ppi-python gives NaN or raises, these functions define a value instead; the
//! deviations are listed on [`ppi_mean`] and [`ppi_mean_fixed`].

use serde::{Deserialize, Serialize};

/// One PPI++ estimate of a mean.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct PpiMean {
    /// The point estimate mean(λ·Ŷᵤ) + mean(Y − λ·Ŷ).
    pub value: f64,
    /// The normal interval value ∓ z·se.
    pub ci: [f64; 2],
    /// The λ used (tuned and clipped to [0, 1], or the caller's; 0 when it was forced to 0).
    pub lambda: f64,
    /// n: gold labels (and predictions on the same items).
    pub n_labeled: usize,
    /// N: predictions on unlabeled items.
    pub n_unlabeled: usize,
}

/// lam = None (power tuned). z given by the caller (`ifsm_correction::Z95` for 95%).
///
/// `None` when `y` is empty or `y` and `yhat` differ in length. Deliberate deviations from
/// ppi-python, which gives NaN or raises in these cases:
/// - all predictions (`yhat` and `yhat_unlabeled`) equal: λ = 0, the classical estimate (the
///   predictions carry no information; ppi-python divides 0 by 0);
/// - N = 0: λ = 0 and the imputed term is absent: value = mean(Y), se = std₀(Y)/√n
///   (ppi-python raises `ZeroDivisionError` at n/N);
/// - n = 1 is not a deviation: the sample covariance is 0, so λ = 0 and, as in ppi-python, the
///   interval has zero width at Y₁ (one label says nothing about spread; callers wanting an
///   honest interval need n ≥ 2).
pub fn ppi_mean(y: &[f64], yhat: &[f64], yhat_unlabeled: &[f64], z: f64) -> Option<PpiMean> {
    if !valid(y, yhat) {
        return None;
    }
    let lambda = tuned_lambda(y, yhat, yhat_unlabeled);
    ppi_mean_fixed(y, yhat, yhat_unlabeled, lambda, z)
}

/// A fixed lambda (lam = 0 is the classical mean of Y; lam = 1 plain PPI).
///
/// Any finite λ is used as given (unbiased for every λ; ppi-python does not clip a given λ
/// either). `None` when `y` is empty or `y` and `yhat` differ in length. Deliberate deviation:
/// with N = 0 the λ is forced to 0 and the imputed term is absent (value = mean(Y),
/// se = std₀(Y)/√n, `lambda` reports 0), where ppi-python returns NaN (mean of an empty array);
/// without unlabeled predictions nothing can be imputed, and λ ≠ 0 would leave the rectifier
/// mean(Y − λ·Ŷ) biased. With n = 1 the rectifier's spread is 0, so se = λ·std₀(Ŷᵤ)/√N, as in
/// ppi-python.
pub fn ppi_mean_fixed(
    y: &[f64],
    yhat: &[f64],
    yhat_unlabeled: &[f64],
    lambda: f64,
    z: f64,
) -> Option<PpiMean> {
    if !valid(y, yhat) {
        return None;
    }
    let (n, big_n) = (y.len(), yhat_unlabeled.len());
    let lambda = if big_n == 0 { 0.0 } else { lambda };
    let rectifier: Vec<f64> = y.iter().zip(yhat).map(|(y, h)| y - lambda * h).collect();
    let (r_mean, r_std) = mean_std0(&rectifier);
    let r_se = r_std / (n as f64).sqrt();
    let (value, var) = if big_n == 0 {
        (r_mean, r_se.powi(2))
    } else {
        let imputed: Vec<f64> = yhat_unlabeled.iter().map(|h| lambda * h).collect();
        let (i_mean, i_std) = mean_std0(&imputed);
        let i_se = i_std / (big_n as f64).sqrt();
        (i_mean + r_mean, i_se.powi(2) + r_se.powi(2))
    };
    let se = var.sqrt();
    Some(PpiMean {
        value,
        ci: [value - z * se, value + z * se],
        lambda,
        n_labeled: n,
        n_unlabeled: big_n,
    })
}

/// The power-tuning λ of ppi-python (`_calc_lam_glm`, clipped to [0, 1]); 0 where it is undefined.
///
/// 0 (the classical estimate) when `y` is empty, `y` and `yhat` differ in length, N = 0, all
/// predictions are equal, or the ratio is not finite (non-finite inputs); ppi-python gives NaN
/// or raises there.
pub fn tuned_lambda(y: &[f64], yhat: &[f64], yhat_unlabeled: &[f64]) -> f64 {
    let (n, big_n) = (y.len(), yhat_unlabeled.len());
    if !valid(y, yhat) || big_n == 0 {
        return 0.0;
    }
    // Decided on the inputs, not on the computed variance: after subtracting θ₁ and centring, a
    // constant column can keep rounding residue, and ppi-python's λ would be residue / residue.
    let first = yhat[0];
    if yhat.iter().chain(yhat_unlabeled).all(|&h| h == first) {
        return 0.0;
    }
    let rectifier: Vec<f64> = y.iter().zip(yhat).map(|(y, h)| y - h).collect();
    let theta1 = mean(yhat_unlabeled) + mean(&rectifier);
    let grads: Vec<f64> = y.iter().map(|y| y - theta1).collect();
    let grads_hat: Vec<f64> = yhat.iter().map(|h| h - theta1).collect();
    let (g_mean, h_mean) = (mean(&grads), mean(&grads_hat));
    let inv_n = 1.0 / n as f64;
    let mut cov = 0.0;
    for (g, h) in grads.iter().zip(&grads_hat) {
        let (gc, hc) = (g - g_mean, h - h_mean);
        cov += inv_n * (gc * hc + hc * gc);
    }
    // np.cov of the pooled predictions: centred on their joint mean, sum of squares times
    // 1/(n + N − 1) (n + N ≥ 2 here).
    let pooled: Vec<f64> = grads_hat
        .iter()
        .copied()
        .chain(yhat_unlabeled.iter().map(|u| u - theta1))
        .collect();
    let p_mean = mean(&pooled);
    let squares: Vec<f64> = pooled.iter().map(|x| (x - p_mean) * (x - p_mean)).collect();
    let var = np_sum(&squares) * (1.0 / (pooled.len() - 1) as f64);
    let lambda = cov / (2.0 * (1.0 + n as f64 / big_n as f64) * var);
    if lambda.is_finite() {
        lambda.clamp(0.0, 1.0)
    } else {
        0.0
    }
}

/// Both slices describe the same n ≥ 1 labeled items.
fn valid(y: &[f64], yhat: &[f64]) -> bool {
    !y.is_empty() && y.len() == yhat.len()
}

/// numpy's `x.mean()`: the pairwise sum divided by the count (x non-empty).
fn mean(x: &[f64]) -> f64 {
    np_sum(x) / x.len() as f64
}

/// numpy's `x.mean()` and `x.std()` (ddof 0: √(mean of squared deviations)), x non-empty.
fn mean_std0(x: &[f64]) -> (f64, f64) {
    let m = mean(x);
    let squares: Vec<f64> = x.iter().map(|v| (v - m) * (v - m)).collect();
    (m, mean(&squares).sqrt())
}

/// numpy's pairwise summation of a contiguous float64 array (`pairwise_sum_DOUBLE`): a plain
/// loop under 8 elements, eight interleaved accumulators up to 128, halves (at a multiple of 8)
/// above. Mirrored so that means agree with numpy's to the last bit rather than to n ulps.
fn np_sum(x: &[f64]) -> f64 {
    const BLOCK: usize = 128;
    let n = x.len();
    if n < 8 {
        x.iter().fold(0.0, |s, v| s + v)
    } else if n <= BLOCK {
        let mut r = [0.0; 8];
        r.copy_from_slice(&x[..8]);
        let whole = n - n % 8;
        for chunk in x[8..whole].chunks_exact(8) {
            for (acc, v) in r.iter_mut().zip(chunk) {
                *acc += v;
            }
        }
        let head = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
        x[whole..].iter().fold(head, |s, v| s + v)
    } else {
        let half = n / 2;
        let half = half - half % 8;
        np_sum(&x[..half]) + np_sum(&x[half..])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const Z: f64 = crate::ifsm_correction::Z95;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() <= 1e-12
    }

    #[test]
    fn rejects_empty_and_mismatched_labels() {
        assert_eq!(ppi_mean(&[], &[], &[1.0, 0.0], Z), None);
        assert_eq!(ppi_mean(&[1.0, 0.0], &[1.0], &[1.0, 0.0], Z), None);
        assert_eq!(ppi_mean_fixed(&[], &[], &[], 1.0, Z), None);
        assert_eq!(ppi_mean_fixed(&[1.0], &[1.0, 0.0], &[1.0], 0.5, Z), None);
        assert_eq!(tuned_lambda(&[], &[], &[1.0]), 0.0);
        assert_eq!(tuned_lambda(&[1.0, 0.0], &[1.0], &[1.0]), 0.0);
    }

    #[test]
    fn worked_example_of_the_reference_script() {
        // Cov_n(Y, Ŷ) = 0.04, pooled variance 15·0.6·0.4/14: λ = 0.08 / (2·1.5·0.2571428…).
        let y = [1.0, 0.0, 1.0, 1.0, 0.0];
        let yhat = [1.0, 0.0, 0.0, 1.0, 1.0];
        let u = [1.0, 1.0, 0.0, 1.0, 0.0, 0.0, 1.0, 1.0, 0.0, 1.0];
        let lam = 0.08 / (2.0 * 1.5 * (15.0 * 0.6 * 0.4 / 14.0));
        let est = ppi_mean(&y, &yhat, &u, Z).unwrap();
        assert!(close(est.lambda, lam), "{}", est.lambda);
        assert!(close(est.value, lam * 0.6 + (0.6 - lam * 0.6)));
        let rect: Vec<f64> = y.iter().zip(&yhat).map(|(a, b)| a - lam * b).collect();
        let rm = rect.iter().sum::<f64>() / 5.0;
        let rv = rect.iter().map(|r| (r - rm) * (r - rm)).sum::<f64>() / 5.0;
        let se = (lam * lam * 0.24 / 10.0 + rv / 5.0).sqrt();
        assert!(close(est.ci[0], est.value - Z * se) && close(est.ci[1], est.value + Z * se));
        assert_eq!((est.n_labeled, est.n_unlabeled), (5, 10));
    }

    #[test]
    fn all_equal_predictions_give_the_classical_mean() {
        let y = [1.0, 0.0, 1.0, 1.0];
        let est = ppi_mean(&y, &[1.0; 4], &[1.0; 3], Z).unwrap();
        assert_eq!(est.lambda, 0.0);
        assert_eq!(est.value, 0.75);
        let se = (0.75f64 * 0.25 / 4.0).sqrt();
        assert!(close(est.ci[0], 0.75 - Z * se) && close(est.ci[1], 0.75 + Z * se));
        // A constant that is not exactly representable after centring: still λ = 0, no residue.
        assert_eq!(tuned_lambda(&[0.3, 0.9, 0.1], &[0.1; 3], &[0.1; 7]), 0.0);
        // Fixed λ = 1 on the same data is fine in ppi-python too (its docstring's example).
        let fixed = ppi_mean_fixed(&y, &[1.0; 4], &[1.0; 3], 1.0, Z).unwrap();
        assert!(close(fixed.value, 0.75));
        // Rectifier Y − Ŷ = [0, −1, 0, 0]: std₀ √0.1875, se √0.1875/2 (ci[0] = 0.32565535…).
        let se = 0.1875f64.sqrt() / 2.0;
        assert!(close(fixed.ci[0], 0.75 - Z * se) && (fixed.ci[0] - 0.325_655_35).abs() < 1e-8);
    }

    #[test]
    fn constant_labeled_predictions_with_varying_unlabeled_give_lambda_zero() {
        // ppi-python: denominator > 0, covariance 0, λ = 0 (not degenerate).
        assert_eq!(tuned_lambda(&[1.0, 0.0, 1.0], &[1.0; 3], &[0.0, 1.0]), 0.0);
    }

    #[test]
    fn no_unlabeled_predictions_give_the_classical_mean() {
        let y = [1.0, 0.0, 1.0, 1.0];
        let yhat = [1.0, 0.0, 0.0, 1.0];
        for est in [
            ppi_mean(&y, &yhat, &[], Z).unwrap(),
            ppi_mean_fixed(&y, &yhat, &[], 0.37, Z).unwrap(),
        ] {
            assert_eq!(est.lambda, 0.0);
            assert_eq!(est.value, 0.75);
            let se = (0.75f64 * 0.25 / 4.0).sqrt();
            assert!(close(est.ci[1] - est.value, Z * se));
            assert_eq!((est.n_labeled, est.n_unlabeled), (4, 0));
        }
        // n = 1 and N = 0: a point, no NaN.
        let one = ppi_mean(&[0.5], &[1.0], &[], Z).unwrap();
        assert_eq!((one.value, one.ci, one.lambda), (0.5, [0.5, 0.5], 0.0));
    }

    #[test]
    fn one_label_gives_ppi_python_s_values() {
        // The reference script's examples: Y = [1], Ŷ = [1], U = [0, 1, 1, 0].
        let u = [0.0, 1.0, 1.0, 0.0];
        let tuned = ppi_mean(&[1.0], &[1.0], &u, Z).unwrap();
        assert_eq!(
            (tuned.value, tuned.ci, tuned.lambda),
            (1.0, [1.0, 1.0], 0.0)
        );
        let fixed = ppi_mean_fixed(&[1.0], &[1.0], &u, 1.0, Z).unwrap();
        assert!(close(fixed.value, 0.5));
        assert!(close(fixed.ci[0], 0.5 - Z * 0.25) && close(fixed.ci[1], 0.5 + Z * 0.25));
        // All judge values equal as well: λ = 0, still a point.
        let flat = ppi_mean(&[1.0], &[1.0], &[1.0; 4], Z).unwrap();
        assert_eq!((flat.value, flat.ci, flat.lambda), (1.0, [1.0, 1.0], 0.0));
    }

    #[test]
    fn lambda_is_clipped() {
        // Ŷ = 1 − Y: negative covariance, λ clips at 0.
        let y = [1.0, 0.0, 1.0, 0.0, 1.0];
        let anti: Vec<f64> = y.iter().map(|v| 1.0 - v).collect();
        assert_eq!(tuned_lambda(&y, &anti, &[0.0, 1.0, 1.0]), 0.0);
        // Perfect labeled agreement and nearly constant unlabeled predictions: the raw ratio
        // exceeds 1.
        let mut u = vec![1.0; 200];
        u[0] = 0.0;
        assert_eq!(tuned_lambda(&y, &y, &u), 1.0);
    }

    #[test]
    fn non_finite_inputs_do_not_panic() {
        let est = ppi_mean(&[f64::NAN, 1.0], &[1.0, 0.0], &[1.0, f64::INFINITY], Z).unwrap();
        assert_eq!(est.lambda, 0.0);
        assert!(est.value.is_nan());
    }

    #[test]
    fn pairwise_sum_matches_numpy_grouping() {
        // Exact small integers: any grouping gives the same sum; the lengths cross every branch.
        for n in [0, 1, 7, 8, 9, 16, 127, 128, 129, 1000, 4099] {
            let x: Vec<f64> = (0..n).map(|i| (i % 13) as f64).collect();
            let want: f64 = x.iter().sum();
            assert_eq!(np_sum(&x), want, "n = {n}");
        }
        // The grouping itself, on values where order shows: eight accumulators, then the rest.
        let x: Vec<f64> = (0..26)
            .map(|i| 0.1 * (i as f64) + 1e-3 / (i as f64 + 1.0))
            .collect();
        let mut r = [0.0; 8];
        for (i, v) in x[..24].iter().enumerate() {
            r[i % 8] += v;
        }
        let want =
            ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7])) + x[24] + x[25];
        assert_eq!(np_sum(&x).to_bits(), want.to_bits());
    }
}
