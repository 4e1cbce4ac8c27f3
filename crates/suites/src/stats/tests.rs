//! Every case of tests/data/story/ppi_reference.json (written by
//! scripts/reference/ppi_reference.py from ppi-python 0.2.3, scipy and statsmodels) against the
//! functions here: absolute 1e-9, relative 1e-9 for p-values below 1e-6.

use super::fisher::fisher_exact_two_sided;
use super::kappa::{cohen_kappa, fleiss_kappa};
use super::ppi::{ppi_mean, ppi_mean_fixed, tuned_lambda};
use serde_json::Value;

const REFERENCE: &str = include_str!("../../../../tests/data/story/ppi_reference.json");

/// scipy's `norm.ppf(0.975)`, which the fixture's intervals use (one ulp below Φ⁻¹(0.975)).
const Z_SCIPY: f64 = 1.959_963_984_540_054;

const TOL: f64 = 1e-9;

fn reference() -> Value {
    serde_json::from_str(REFERENCE).expect("the reference fixture is JSON")
}

fn cases<'a>(doc: &'a Value, key: &str) -> &'a [Value] {
    let cases = doc[key].as_array().map_or(&[][..], Vec::as_slice);
    assert!(!cases.is_empty(), "no {key} cases in the fixture");
    cases
}

fn floats(v: &Value) -> Vec<f64> {
    v.as_array()
        .expect("an array of numbers")
        .iter()
        .map(|x| x.as_f64().expect("a number"))
        .collect()
}

fn num(v: &Value) -> f64 {
    v.as_f64().expect("a number")
}

/// |got − want| ≤ 1e-9; returns the difference for the summary.
fn check(got: f64, want: f64, at: &str) -> f64 {
    let diff = (got - want).abs();
    assert!(
        diff <= TOL,
        "{at}: {got} vs reference {want} (diff {diff:e})"
    );
    diff
}

#[test]
fn alpha_is_five_percent() {
    // The intervals below use Z_SCIPY, i.e. alpha = 0.05.
    assert_eq!(reference()["alpha"].as_f64(), Some(0.05));
}

#[test]
fn ppi_mean_matches_ppi_python() {
    let doc = reference();
    let (mut d_value, mut d_ci, mut d_lambda) = (0.0f64, 0.0f64, 0.0f64);
    let all = [cases(&doc, "ppi_mean"), cases(&doc, "ppi_mean_real_valued")].concat();
    for c in &all {
        let name = c["name"].as_str().unwrap_or("?");
        let (y, yhat, u) = (
            floats(&c["y"]),
            floats(&c["yhat"]),
            floats(&c["yhat_unlabeled"]),
        );
        let est = match c["lam"].as_f64() {
            None => {
                d_lambda =
                    d_lambda.max(check(tuned_lambda(&y, &yhat, &u), num(&c["lambda"]), name));
                ppi_mean(&y, &yhat, &u, Z_SCIPY)
            }
            Some(lam) => ppi_mean_fixed(&y, &yhat, &u, lam, Z_SCIPY),
        }
        .unwrap_or_else(|| panic!("{name}: no estimate"));
        d_lambda = d_lambda.max(check(
            est.lambda,
            num(&c["lambda"]),
            &format!("{name}.lambda"),
        ));
        d_value = d_value.max(check(est.value, num(&c["value"]), &format!("{name}.value")));
        let ci = floats(&c["ci"]);
        for (i, (g, w)) in est.ci.iter().zip(&ci).enumerate() {
            d_ci = d_ci.max(check(*g, *w, &format!("{name}.ci[{i}]")));
        }
        assert_eq!(
            (est.n_labeled, est.n_unlabeled),
            (y.len(), u.len()),
            "{name}"
        );
    }
    eprintln!(
        "ppi: {} cases, max |diff| value {d_value:e}, ci {d_ci:e}, lambda {d_lambda:e}",
        all.len()
    );
}

#[test]
fn fisher_matches_scipy() {
    let doc = reference();
    let mut d_p = 0.0f64;
    let mut d_rel = 0.0f64;
    for c in cases(&doc, "fisher") {
        let t = &c["table"];
        let cell = |i: usize, j: usize| t[i][j].as_u64().expect("a count");
        let table = [[cell(0, 0), cell(0, 1)], [cell(1, 0), cell(1, 1)]];
        let (got, want) = (fisher_exact_two_sided(table), num(&c["p"]));
        let diff = (got - want).abs();
        if want < 1e-6 {
            let rel = diff / want;
            assert!(
                rel <= TOL,
                "{table:?}: {got} vs scipy {want} (relative {rel:e})"
            );
            d_rel = d_rel.max(rel);
        } else {
            d_p = d_p.max(check(got, want, &format!("{table:?}")));
        }
    }
    eprintln!("fisher: max |diff| {d_p:e}, max relative diff (p < 1e-6) {d_rel:e}");
}

#[test]
fn cohen_kappa_matches_statsmodels() {
    let doc = reference();
    let mut d = 0.0f64;
    for c in cases(&doc, "cohen_kappa") {
        let name = c["name"].as_str().unwrap_or("?");
        let rating = |v: &Value| v.as_u64().expect("a 0/1 rating") == 1;
        let (a, b) = (c["a"].as_array().expect("a"), c["b"].as_array().expect("b"));
        let pairs: Vec<(bool, bool)> = a
            .iter()
            .zip(b)
            .map(|(x, y)| (rating(x), rating(y)))
            .collect();
        let got = cohen_kappa(&pairs).unwrap_or_else(|| panic!("{name}: no kappa"));
        d = d.max(check(got, num(&c["kappa"]), name));
    }
    eprintln!("cohen: max |diff| {d:e}");
}

#[test]
fn fleiss_kappa_matches_statsmodels() {
    let doc = reference();
    let mut d = 0.0f64;
    for c in cases(&doc, "fleiss_kappa") {
        let name = c["name"].as_str().unwrap_or("?");
        let counts: Vec<[u64; 2]> = c["counts"]
            .as_array()
            .expect("rows")
            .iter()
            .map(|r| {
                [
                    r[0].as_u64().expect("a count"),
                    r[1].as_u64().expect("a count"),
                ]
            })
            .collect();
        assert!(counts
            .iter()
            .all(|r| r[0] + r[1] == c["raters"].as_u64().unwrap_or(0)));
        let got = fleiss_kappa(&counts).unwrap_or_else(|| panic!("{name}: no kappa"));
        d = d.max(check(got, num(&c["kappa"]), name));
    }
    eprintln!("fleiss: max |diff| {d:e}");
}
