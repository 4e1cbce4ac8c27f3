//! The estimator against the Python transcription (tests/data/story/ifsm_correction_reference.json,
//! written by scripts/reference/ifsm_correction_reference.py), field by field, and the corrected
//! difference's properties.

use super::*;
use serde_json::Value;

const REFERENCE: &str = include_str!("../../../../tests/data/story/ifsm_correction_reference.json");

/// Every key and every value agree: numbers to 1e-12, the rest exactly. `at` names the field.
fn assert_close(got: &Value, want: &Value, at: &str) {
    match (got, want) {
        (Value::Number(g), Value::Number(w)) => {
            let (g, w) = (g.as_f64().unwrap(), w.as_f64().unwrap());
            assert!((g - w).abs() <= 1e-12, "{at}: {g} vs reference {w}");
        }
        (Value::Array(g), Value::Array(w)) => {
            assert_eq!(g.len(), w.len(), "{at}: length");
            for (i, (g, w)) in g.iter().zip(w).enumerate() {
                assert_close(g, w, &format!("{at}[{i}]"));
            }
        }
        (Value::Object(g), Value::Object(w)) => {
            let keys = |m: &serde_json::Map<String, Value>| m.keys().cloned().collect::<Vec<_>>();
            assert_eq!(keys(g), keys(w), "{at}: keys");
            for (k, w) in w {
                assert_close(&g[k], w, &format!("{at}.{k}"));
            }
        }
        _ => assert_eq!(got, want, "{at}"),
    }
}

fn reference() -> Value {
    serde_json::from_str(REFERENCE).expect("the reference fixture is JSON")
}

fn calibrations(doc: &Value) -> Vec<CalibrationCounts> {
    doc["calibrations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| serde_json::from_value(c["counts"].clone()).unwrap())
        .collect()
}

#[test]
fn z_is_the_reference_quantile() {
    // Same double as the 60-digit computation of the reference (no tolerance).
    assert_eq!(reference()["z"].as_f64(), Some(Z95));
}

#[test]
fn judge_resolution_matches_the_reference() {
    let doc = reference();
    let cals = calibrations(&doc);
    assert!(cals.len() >= 10);
    for (i, (cal, c)) in cals
        .iter()
        .zip(doc["calibrations"].as_array().unwrap())
        .enumerate()
    {
        let got = serde_json::to_value(judge_resolution(cal)).unwrap();
        assert_close(&got, &c["resolution"], &format!("calibration {i}"));
    }
}

#[test]
fn correct_matches_the_reference_on_the_grid() {
    let doc = reference();
    let cals = calibrations(&doc);
    let cases = doc["cases"].as_array().unwrap();
    assert!(cases.len() > 100);
    let (mut informative, mut uninformative) = (0, 0);
    for (i, c) in cases.iter().enumerate() {
        let cal = &cals[c["cal"].as_u64().unwrap() as usize];
        let (p, n) = (c["p"].as_f64().unwrap(), c["n"].as_u64().unwrap() as usize);
        let got = correct(p, n, cal);
        match got.as_ref().map(|g| g.informative) {
            Some(true) => informative += 1,
            Some(false) => uninformative += 1,
            None => {}
        }
        let got = serde_json::to_value(got).unwrap();
        assert_close(
            &got,
            &c["correct"],
            &format!("case {i} (p {p}, n {n}, {cal:?})"),
        );
    }
    // The grid exercises both branches, not only one.
    assert!(
        informative > 50 && uninformative > 30,
        "{informative} / {uninformative}"
    );
}

#[test]
fn corrected_difference_matches_the_reference() {
    let doc = reference();
    let cals = calibrations(&doc);
    for (i, c) in doc["differences"].as_array().unwrap().iter().enumerate() {
        let cal = &cals[c["cal"].as_u64().unwrap() as usize];
        let [b, d, n] = ["b", "c", "n"].map(|k| c[k].as_u64().unwrap() as usize);
        let mut diffs = vec![1.0; b];
        diffs.extend(vec![-1.0; d]);
        diffs.resize(n, 0.0);
        let ds = c["judged_share_diff"].as_f64();
        let got = match ds {
            None => corrected_difference(&diffs, cal),
            Some(ds) => corrected_difference_with_empty(&diffs, ds, cal),
        };
        let got = serde_json::to_value(got).unwrap();
        assert_close(
            &got,
            &c["difference"],
            &format!("difference {i} ({b}/{d}/{n}, {cal:?})"),
        );
    }
}

fn good_judge() -> CalibrationCounts {
    CalibrationCounts {
        positives: 200,
        positives_counted: 180,
        negatives: 200,
        negatives_counted: 140,
    }
}

#[test]
fn counts_give_rates_add_up_and_come_back_from_the_entry() {
    let mut cal = good_judge();
    assert_eq!((cal.q0(), cal.q1()), (Some(0.7), Some(0.9)));
    assert_eq!(CalibrationCounts::default().q0(), None);
    cal.add(&CalibrationCounts {
        positives: 1,
        positives_counted: 0,
        negatives: 3,
        negatives_counted: 3,
    });
    assert_eq!(
        cal,
        CalibrationCounts {
            positives: 201,
            positives_counted: 180,
            negatives: 203,
            negatives_counted: 143,
        }
    );
    // q·m is recovered from the rounded division for every count of a calibration size.
    for m in [1usize, 3, 7, 49, 200, 999, 100_003] {
        for k in [0, 1, m / 3, m / 2, m - 1, m] {
            let cal = CalibrationCounts {
                positives: m,
                positives_counted: k,
                negatives: m,
                negatives_counted: m - k,
            };
            assert_eq!(entry_counts(&correct(0.5, 10, &cal).unwrap()), cal);
        }
    }
}

#[test]
fn correction_inverts_the_judge_model_and_serialises_with_capital_j() {
    // θ = 0.4 with q0 = 0.7, q1 = 0.9 gives p = 0.6·0.4 + 0.3 = 0.54.
    let c = correct(0.54, 1000, &good_judge()).unwrap();
    assert!((c.value.unwrap() - 0.4).abs() < 1e-12);
    let [lo, hi] = c.ci.unwrap();
    assert!(lo < 0.4 && 0.4 < hi, "{lo} {hi}");
    let v = serde_json::to_value(&c).unwrap();
    assert!(v.get("J").is_some() && v.get("J_ci").is_some() && v.get("j").is_none());
    let back: CorrectedIfsm = serde_json::from_value(v).unwrap();
    assert_eq!(back, c);
    assert!(correct(0.5, 0, &good_judge()).is_none());
    assert!(correct(1.5, 10, &good_judge()).is_none());
    assert!(correct(f64::NAN, 10, &good_judge()).is_none());
}

#[test]
fn difference_is_antisymmetric_and_zero_for_equal_systems() {
    let diffs: Vec<f64> = (0..90)
        .map(|i| f64::from(i % 3 == 0) - f64::from(i % 5 == 0))
        .collect();
    let negated: Vec<f64> = diffs.iter().map(|d| -d).collect();
    let (ab, ba) = (
        corrected_difference(&diffs, &good_judge()).unwrap(),
        corrected_difference(&negated, &good_judge()).unwrap(),
    );
    assert_eq!(ab.value.unwrap(), -ba.value.unwrap());
    let ([l1, h1], [l2, h2]) = (ab.ci.unwrap(), ba.ci.unwrap());
    assert!((l1 + h2).abs() < 1e-15 && (h1 + l2).abs() < 1e-15);
    // 30 vs 18 discordant of 90: Δp = 12/90, J = 0.6.
    assert!((ab.value.unwrap() - 12.0 / 90.0 / 0.6).abs() < 1e-12);
    assert!(l1 < ab.value.unwrap() && ab.value.unwrap() < h1);
    assert_eq!(ab.method, DIFFERENCE_METHOD);

    let tied = corrected_difference(&[0.0; 40], &good_judge()).unwrap();
    assert_eq!(tied.value, Some(0.0));
    let [lo, hi] = tied.ci.unwrap();
    // No discordant pair still leaves an interval of positive width around 0 (Agresti-Min).
    assert!(lo < 0.0 && hi > 0.0 && (lo + hi).abs() < 1e-15);
}

#[test]
fn difference_needs_an_informative_judge_and_binary_differences() {
    let coin = CalibrationCounts {
        positives: 50,
        positives_counted: 26,
        negatives: 50,
        negatives_counted: 25,
    };
    let d = corrected_difference(&[1.0, 0.0, -1.0, 1.0], &coin).unwrap();
    assert!(!d.informative && d.value.is_none() && d.ci.is_none());
    assert!(corrected_difference(&[], &good_judge()).is_none());
    assert!(corrected_difference(&[0.5], &good_judge()).is_none());
    assert!(corrected_difference(&[1.0], &CalibrationCounts::default()).is_none());
    // A larger calibration narrows the interval of the same items.
    let diffs: Vec<f64> = (0..300)
        .map(|i| f64::from(i % 4 == 0) - f64::from(i % 7 == 0))
        .collect();
    let small = corrected_difference(
        &diffs,
        &CalibrationCounts {
            positives: 20,
            positives_counted: 18,
            negatives: 20,
            negatives_counted: 14,
        },
    )
    .unwrap();
    let large = corrected_difference(&diffs, &good_judge()).unwrap();
    let width = |d: &CorrectedDifference| d.ci.map(|[l, h]| h - l).unwrap();
    assert!(width(&large) < width(&small));
}

#[test]
fn empty_endings_scale_the_judged_estimate_and_match_the_reference() {
    let doc = reference();
    let cals = calibrations(&doc);
    let cases = doc["empty"].as_array().unwrap();
    let (mut scaled, mut all_empty) = (0, 0);
    for (i, c) in cases.iter().enumerate() {
        let cal = &cals[c["cal"].as_u64().unwrap() as usize];
        let [picks, nj, ne] = ["picks", "n_judged", "n_empty"].map(|k| c[k].as_u64().unwrap());
        let p = if nj == 0 {
            0.0
        } else {
            picks as f64 / nj as f64
        };
        let got = correct_with_empty(p, nj as usize, ne as usize, cal);
        if let Some(g) = &got {
            if nj > 0 && ne > 0 && g.value.is_some() {
                scaled += 1;
                // (n_j / n)·θ_j: the empty endings shrink the judged estimate, never bias it.
                let alone = correct(p, nj as usize, cal).unwrap();
                let share = nj as f64 / (nj + ne) as f64;
                assert_eq!(g.value, alone.value.map(|v| share * v));
            }
            if nj == 0 {
                all_empty += 1;
                assert_eq!((g.value, g.ci), (Some(0.0), Some([0.0, 0.0])));
            }
        }
        let got = serde_json::to_value(got).unwrap();
        assert_close(&got, &c["correct"], &format!("empty case {i}"));
    }
    assert!(scaled > 10 && all_empty > 10, "{scaled} / {all_empty}");
}

#[test]
fn the_j_interval_is_agresti_caffo_and_a_clipped_estimate_says_so() {
    // m0 = m1 = 1 with q0 = q1 = 1: the unsmoothed interval was [1, 1] ("informative").
    let tiny = CalibrationCounts {
        positives: 1,
        positives_counted: 1,
        negatives: 1,
        negatives_counted: 1,
    };
    let r = judge_resolution(&tiny).unwrap();
    assert_eq!(r.j, 1.0);
    assert!((r.j_ci[0] + 0.4207).abs() < 1e-3 && (r.j_ci[1] - 1.0874).abs() < 1e-3);
    assert!(!r.informative);
    // A weak but informative judge (J = 0.06 on 5,000 a side) and p = 0.59: θ = 1.5, clipped.
    let weak = CalibrationCounts {
        positives: 5000,
        positives_counted: 2800,
        negatives: 5000,
        negatives_counted: 2500,
    };
    let c = correct(0.59, 1000, &weak).unwrap();
    assert!(c.informative);
    assert_eq!((c.value, c.clipped), (Some(1.0), Some(Clipped::High)));
    assert!((c.unclipped.unwrap() - 1.5).abs() < 1e-9);
    let shown =
        scorekit_report::ifsm_corrected::corrected_value(c.value, c.ci, c.clipped, c.unclipped);
    assert!(shown.starts_with("≥ 100.0 (unclipped 150.0)"), "{shown}");
}
