//! Chance-corrected agreement on yes/no ratings: Cohen's kappa for two raters on the same items
//! and Fleiss' kappa (1971) for m raters per item, as statsmodels' `cohens_kappa` (simple kappa)
//! and `fleiss_kappa(method="fleiss")` compute them. Raw agreement overstates raters who mostly
//! say the same frequent answer; kappa measures agreement beyond what their marginals predict.

/// Cohen's kappa (po − pe)/(1 − pe) of paired yes/no ratings; `None` without pairs or when pe = 1.
///
/// The 2x2 table `T[a][b]` counts the pairs (a, b); po = trace(T)/n and
/// pe = Σₖ (colₖ/n)·(rowₖ/n). pe = 1 means both raters gave one and the same answer to every
/// item: agreement is certain by chance and kappa is 0/0 (statsmodels gives NaN).
pub fn cohen_kappa(pairs: &[(bool, bool)]) -> Option<f64> {
    if pairs.is_empty() {
        return None;
    }
    let mut table = [[0u64; 2]; 2];
    for &(a, b) in pairs {
        table[usize::from(a)][usize::from(b)] += 1;
    }
    let nobs = pairs.len() as f64;
    let agree = (table[0][0] + table[1][1]) as f64;
    let row = |i: usize| (table[i][0] + table[i][1]) as f64 / nobs;
    let col = |j: usize| (table[0][j] + table[1][j]) as f64 / nobs;
    let pe = col(0) * row(0) + col(1) * row(1);
    if pe == 1.0 {
        return None;
    }
    Some((agree / nobs - pe) / (1.0 - pe))
}

/// Fleiss' kappa of items rated yes/no by the same number of raters, each row [n_no, n_yes].
///
/// Pᵢ = (Σⱼ cᵢⱼ² − m)/(m(m − 1)), P̄ = mean(Pᵢ), pⱼ = Σᵢ cᵢⱼ/(N·m), Pₑ = Σⱼ pⱼ²,
/// kappa = (P̄ − Pₑ)/(1 − Pₑ). `None` without rows, when the rows differ in total m (statsmodels
/// asserts they do not), when m < 2 (no pair of raters to agree), or when Pₑ = 1 (every rating
/// the same answer; statsmodels gives NaN).
pub fn fleiss_kappa(counts: &[[u64; 2]]) -> Option<f64> {
    let first = counts.first()?;
    // u128: row totals cannot overflow whatever the counts.
    let m = u128::from(first[0]) + u128::from(first[1]);
    if m < 2
        || counts
            .iter()
            .any(|r| u128::from(r[0]) + u128::from(r[1]) != m)
    {
        return None;
    }
    let items = counts.len() as f64;
    let m_f = m as f64;
    let total = items * m_f;
    let p_cat = |j: usize| counts.iter().map(|r| r[j] as f64).sum::<f64>() / total;
    let p_e = p_cat(0) * p_cat(0) + p_cat(1) * p_cat(1);
    if p_e == 1.0 {
        return None;
    }
    let p_bar = counts
        .iter()
        .map(|r| {
            // In floats, as statsmodels (exact below 2^26 ratings per cell).
            let (no, yes) = (r[0] as f64, r[1] as f64);
            (no * no + yes * yes - m_f) / (m_f * (m_f - 1.0))
        })
        .sum::<f64>()
        / items;
    Some((p_bar - p_e) / (1.0 - p_e))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pairs(a: &[u8], b: &[u8]) -> Vec<(bool, bool)> {
        a.iter().zip(b).map(|(&a, &b)| (a == 1, b == 1)).collect()
    }

    #[test]
    fn cohen_textbook_values() {
        // a = [1,0,1,1], b = [1,0,0,1]: po = 3/4, pe = (3/4)(1/2) + (1/4)(1/2) = 1/2, kappa 1/2.
        let k = cohen_kappa(&pairs(&[1, 0, 1, 1], &[1, 0, 0, 1])).unwrap();
        assert!((k - 0.5).abs() < 1e-15, "{k}");
        let perfect = pairs(&[1, 0, 0, 1, 1], &[1, 0, 0, 1, 1]);
        assert_eq!(cohen_kappa(&perfect), Some(1.0));
        let opposite = pairs(&[1, 0, 1, 0], &[0, 1, 0, 1]);
        assert_eq!(cohen_kappa(&opposite), Some(-1.0));
        // One rater always says yes: pe = pa, kappa = 0 whatever the other does.
        let k = cohen_kappa(&pairs(&[1, 1, 1, 0, 0, 1, 0, 1], &[1; 8])).unwrap();
        assert!(k.abs() < 1e-15, "{k}");
    }

    #[test]
    fn cohen_degenerate() {
        assert_eq!(cohen_kappa(&[]), None);
        assert_eq!(cohen_kappa(&[(true, true); 5]), None);
        assert_eq!(cohen_kappa(&[(false, false)]), None);
        // One pair that disagrees: pe = 0, kappa = (0 − 0)/1.
        assert_eq!(cohen_kappa(&[(true, false)]), Some(0.0));
    }

    #[test]
    fn fleiss_textbook_values() {
        // [[3,0],[2,1],[0,3]]: P = [1, 1/3, 1], P̄ = 7/9; p = (5/9, 4/9), Pe = 41/81;
        // kappa = (63/81 − 41/81)/(40/81) = 22/40.
        let k = fleiss_kappa(&[[3, 0], [2, 1], [0, 3]]).unwrap();
        assert!((k - 0.55).abs() < 1e-15, "{k}");
        assert_eq!(fleiss_kappa(&[[3, 0], [0, 3], [3, 0]]), Some(1.0));
        // Two raters: Fleiss' kappa is Scott's pi.
        let k = fleiss_kappa(&[[2, 0], [1, 1], [0, 2], [0, 2]]).unwrap();
        let (po, p_yes) = (0.75, 5.0 / 8.0);
        let pe = p_yes * p_yes + (1.0 - p_yes) * (1.0 - p_yes);
        assert!((k - (po - pe) / (1.0 - pe)).abs() < 1e-15, "{k}");
    }

    #[test]
    fn fleiss_degenerate() {
        assert_eq!(fleiss_kappa(&[]), None);
        assert_eq!(fleiss_kappa(&[[1, 0], [0, 1]]), None);
        assert_eq!(fleiss_kappa(&[[0, 0]]), None);
        assert_eq!(fleiss_kappa(&[[3, 0], [2, 2]]), None);
        assert_eq!(fleiss_kappa(&[[0, 3], [0, 3]]), None);
        assert!(fleiss_kappa(&[[u64::MAX, u64::MAX], [u64::MAX, u64::MAX]]).is_some());
    }
}
