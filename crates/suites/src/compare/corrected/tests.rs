//! Calibrations read from synthetic story metrics.json documents, and their attachment to the
//! IFSM comparisons of `compare_all`.

use super::*;
use crate::compare::compare_all;
use crate::ifsm_correction::{correct, corrected_difference};
use crate::story::suite::{self as observe, METRICS as STORY};
use scorekit_core::shard::Shard;
use scorekit_report::RunSettings;
use serde_json::{json, Value};
use std::collections::BTreeMap;

fn counts(k0: usize, m0: usize, k1: usize, m1: usize) -> CalibrationCounts {
    CalibrationCounts {
        positives: m1,
        positives_counted: k1,
        negatives: m0,
        negatives_counted: k0,
    }
}

/// A story metrics.json: `calibration` is `settings.calibration` (absent when `None`), and each
/// group gets `ifsm_corrected` for the frames given.
fn doc(
    calibration: Option<Value>,
    groups: &[&str],
    frames: &[(&str, CalibrationCounts)],
) -> MetricsDoc {
    let mut d = MetricsDoc::new("story");
    let mut settings = json!({"judge": "tiny", "device": "cpu"});
    if let Some(c) = calibration {
        settings["calibration"] = c;
    }
    d.set_settings(&RunSettings::new(100, 1, Shard::ALL), &settings)
        .unwrap();
    for g in groups {
        let mut corrected = serde_json::Map::new();
        for (frame, c) in frames {
            corrected.insert(frame.to_string(), json!(correct(0.5, 40, c).unwrap()));
        }
        d.groups.insert(
            g.to_string(),
            json!({"ifsm": {"value": 0.5}, "ifsm_corrected": corrected}),
        );
    }
    d
}

fn good() -> CalibrationCounts {
    counts(140, 200, 180, 200)
}

#[test]
fn a_run_without_calibration_has_none() {
    let d = doc(None, &["m1"], &[]);
    assert_eq!(story_calibration(&d).unwrap(), RunCalibration::default());
}

#[test]
fn ids_come_from_the_settings_and_counts_from_the_groups() {
    let human = counts(30, 40, 50, 60);
    let d = doc(
        Some(
            json!({"dataset": {"key": "ab12", "protocol": "x", "endings_sha256": "e"}, "human": {"path": "h.jsonl", "sha256": "ff00"}}),
        ),
        &["m1", "m2"],
        &[("dataset", good()), ("human", human)],
    );
    let c = story_calibration(&d).unwrap();
    assert_eq!(
        c.dataset,
        Some(FrameCalibration {
            id: "ab12".into(),
            counts: Some(good())
        })
    );
    assert_eq!(
        c.human,
        Some(FrameCalibration {
            id: "ff00".into(),
            counts: Some(human)
        })
    );
    // A calibration recorded without an entry (no positives or negatives) has no counts.
    let d = doc(
        Some(json!({"dataset": {"key": "ab12", "protocol": "x", "endings_sha256": "e"}})),
        &["m1"],
        &[],
    );
    assert_eq!(
        story_calibration(&d).unwrap().dataset,
        Some(FrameCalibration {
            id: "ab12".into(),
            counts: None
        })
    );
}

#[test]
fn groups_that_disagree_or_a_malformed_entry_are_errors_naming_the_field() {
    let mut d = doc(
        Some(json!({"dataset": {"key": "k", "protocol": "x", "endings_sha256": "e"}})),
        &["m1"],
        &[("dataset", good())],
    );
    let other = correct(0.5, 40, &counts(1, 200, 180, 200)).unwrap();
    d.groups
        .insert("m2".into(), json!({"ifsm_corrected": {"dataset": other}}));
    let e = story_calibration(&d).unwrap_err().to_string();
    assert!(
        e.contains("groups.m2.ifsm_corrected.dataset") && e.contains("disagree"),
        "{e}"
    );

    d.groups.insert(
        "m2".into(),
        json!({"ifsm_corrected": {"dataset": {"value": "high"}}}),
    );
    let e = story_calibration(&d).unwrap_err().to_string();
    assert!(
        e.contains("groups.m2.ifsm_corrected") && e.contains("not a judge-corrected"),
        "{e}"
    );
}

/// Two systems of 60 paired questions: A right on 30, B on 18 of them plus 6 of its own.
fn systems() -> Vec<System> {
    let ifsm = |f: &dyn Fn(usize) -> bool| -> Values {
        (0..60)
            .map(|i| (format!("q{i:02}"), f64::from(u8::from(f(i)))))
            .collect()
    };
    let a = ifsm(&|i| i < 30);
    let b = ifsm(&|i| i < 18 || (40..46).contains(&i));
    let mut sa = BTreeMap::new();
    sa.insert("ifsm", a);
    let mut sb = BTreeMap::new();
    sb.insert("ifsm", b);
    vec![("A".to_string(), sa), ("B".to_string(), sb)]
}

fn run(c: &RunCalibration, label: &'static str) -> (RunCalibration, &'static str) {
    (c.clone(), label)
}

fn attached(
    a: (RunCalibration, &str),
    b: (RunCalibration, &str),
) -> (Vec<Comparison>, Vec<String>) {
    attached_to(&systems(), (&a.0, a.1), (&b.0, b.1))
}

/// `systems` compared and attached, A from run `a`, B from run `b` (one group each, named "").
fn attached_to(
    systems: &[System],
    a: (&RunCalibration, &str),
    b: (&RunCalibration, &str),
) -> (Vec<Comparison>, Vec<String>) {
    let mut comparisons = compare_all(systems, &STORY, 50, 3);
    let runs = [
        RunInfo {
            label: a.1,
            calibration: a.0,
        },
        RunInfo {
            label: b.1,
            calibration: b.0,
        },
    ];
    let notes = attach(&mut comparisons, systems, &[0, 1], &["", ""], &runs);
    (comparisons, notes)
}

fn calibrated(key: &str, c: CalibrationCounts) -> RunCalibration {
    RunCalibration {
        dataset: Some(FrameCalibration {
            id: key.into(),
            counts: Some(c),
        }),
        human: None,
        groups: BTreeMap::new(),
    }
}

#[test]
fn a_shared_calibration_gives_the_corrected_difference() {
    let cal = calibrated("k1", good());
    let (comparisons, notes) = attached(run(&cal, "r1"), run(&cal, "r2"));
    assert!(notes.is_empty(), "{notes:?}");
    let ifsm = comparisons.iter().find(|c| c.metric == "ifsm").unwrap();
    let corrected = ifsm.corrected.as_ref().unwrap();
    assert!(corrected.human.is_none());
    let d = corrected.dataset.as_ref().unwrap();
    // 12 + 0 discordant for A, 6 for B of 60: Δp = 0.1 (12 − 6 = 6 of 60), J = 0.6.
    assert!((ifsm.diff.unwrap().value - 0.1).abs() < 1e-12);
    assert!((d.value.unwrap() - 0.1 / 0.6).abs() < 1e-12);
    let mut diffs = vec![1.0; 12];
    diffs.extend([-1.0; 6]);
    diffs.resize(60, 0.0);
    assert_eq!(Some(d), corrected_difference(&diffs, &good()).as_ref());
    // Only IFSM is corrected.
    assert!(comparisons
        .iter()
        .filter(|c| c.metric != "ifsm")
        .all(|c| c.corrected.is_none()));
    let v = serde_json::to_value(ifsm).unwrap();
    assert!(v["corrected"]["dataset"]["J"].is_number());
    assert!(v["corrected"].get("human").is_none());
}

#[test]
fn no_shared_calibration_writes_nothing_and_says_why() {
    let (comparisons, notes) = attached(
        run(&calibrated("k1", good()), "r1"),
        run(&calibrated("k2", good()), "r2"),
    );
    assert!(comparisons.iter().all(|c| c.corrected.is_none()));
    assert_eq!(notes.len(), 1);
    assert!(
        notes[0].contains("r1 and r2") && notes[0].contains("calibrated differently"),
        "{notes:?}"
    );

    let (comparisons, notes) = attached(
        run(&calibrated("k1", good()), "r1"),
        run(&RunCalibration::default(), "r2"),
    );
    assert!(comparisons.iter().all(|c| c.corrected.is_none()));
    assert!(notes[0].contains("r2 carries none"), "{notes:?}");

    // One key, other counts on as many items (recalibrated): not shared.
    let (comparisons, notes) = attached(
        run(&calibrated("k1", good()), "r1"),
        run(&calibrated("k1", counts(139, 200, 180, 200)), "r2"),
    );
    assert!(comparisons.iter().all(|c| c.corrected.is_none()));
    assert!(notes[0].contains("different counts"), "{notes:?}");
}

#[test]
fn one_key_on_two_sets_of_questions_uses_the_larger_calibration_and_says_so() {
    let part = counts(70, 100, 90, 100);
    let (comparisons, notes) = attached(
        run(&calibrated("k1", part), "r1"),
        run(&calibrated("k1", good()), "r2"),
    );
    let ifsm = comparisons.iter().find(|c| c.metric == "ifsm").unwrap();
    let d = ifsm.corrected.as_ref().unwrap().dataset.as_ref().unwrap();
    let mut diffs = vec![1.0; 12];
    diffs.extend([-1.0; 6]);
    diffs.resize(60, 0.0);
    assert_eq!(Some(d), corrected_difference(&diffs, &good()).as_ref());
    assert_eq!(notes.len(), 1);
    assert!(
        notes[0].contains("on different questions (200 vs 400 items)")
            && notes[0].contains("uses r2's, the larger")
            && !notes[0].contains("  "),
        "{notes:?}"
    );
}

#[test]
fn runs_without_any_calibration_keep_their_comparisons_as_they_were() {
    let systems = systems();
    let before = compare_all(&systems, &STORY, 50, 3);
    let (after, notes) = attached(
        run(&RunCalibration::default(), "r1"),
        run(&RunCalibration::default(), "r2"),
    );
    assert!(notes.is_empty());
    assert_eq!(before, after);
    let json = serde_json::to_string(&after).unwrap();
    assert!(!json.contains("corrected"));
}

#[test]
fn an_uninformative_judge_is_written_with_null_values() {
    let coin = calibrated("k", counts(25, 50, 26, 50));
    let (comparisons, notes) = attached(run(&coin, "r1"), run(&coin, "r1"));
    assert!(notes.is_empty());
    let d = comparisons[0]
        .corrected
        .as_ref()
        .unwrap()
        .dataset
        .clone()
        .unwrap();
    assert!(!d.informative && d.value.is_none() && d.ci.is_none());
}

/// `systems()` with human labels on the first 20 questions of both (A's labels agree with its
/// verdicts but on 3, B's on all) and an empty ending of B on question 59.
fn labelled_systems() -> Vec<System> {
    let mut s = systems();
    let label = |f: &dyn Fn(usize) -> bool| -> Values {
        (0..20)
            .map(|i| (format!("q{i:02}"), f64::from(u8::from(f(i)))))
            .collect()
    };
    s[0].1
        .insert(observe::HUMAN, label(&|i| (i < 30) != (i < 3)));
    s[1].1.insert(observe::HUMAN, label(&|i| i < 18));
    let judged: Values = (0..60)
        .map(|i| (format!("q{i:02}"), f64::from(u8::from(i != 59))))
        .collect();
    s[1].1.insert(observe::JUDGED, judged);
    s
}

fn headline_run(method: &str) -> RunCalibration {
    let mut groups = BTreeMap::new();
    groups.insert(
        String::new(),
        GroupEstimates {
            headline: Some(scorekit_report::ifsm_corrected::Headline {
                method: method.to_string(),
                value: 0.5,
                ci: Some([0.4, 0.6]),
            }),
            ppi: None,
        },
    );
    RunCalibration {
        groups,
        ..RunCalibration::default()
    }
}

#[test]
fn labels_on_the_same_questions_give_the_paired_ppi_difference_and_the_headline() {
    let systems = labelled_systems();
    let (a, b) = (headline_run("ppi"), headline_run("ppi"));
    let (comparisons, notes) = attached_to(&systems, (&a, "a"), (&b, "b"));
    assert!(notes.is_empty(), "{notes:?}");
    let c = comparisons.iter().find(|c| c.metric == "ifsm").unwrap();
    let got = c.corrected.as_ref().unwrap();
    let ppi = got.ppi.as_ref().unwrap();
    assert_eq!(
        (ppi.method.as_str(), ppi.n_labeled, ppi.n_unlabeled),
        ("paired", Some(20), Some(40))
    );
    // Y = y_A − y_B on q00..q19, Ŷ = f_A − f_B on all 60, directly.
    let f = |s: &System, i: usize| s.1["ifsm"][&format!("q{i:02}")];
    let h = |s: &System, i: usize| s.1[observe::HUMAN][&format!("q{i:02}")];
    let y: Vec<f64> = (0..20)
        .map(|i| h(&systems[0], i) - h(&systems[1], i))
        .collect();
    let yhat: Vec<f64> = (0..20)
        .map(|i| f(&systems[0], i) - f(&systems[1], i))
        .collect();
    let unl: Vec<f64> = (20..60)
        .map(|i| f(&systems[0], i) - f(&systems[1], i))
        .collect();
    let want = crate::stats::ppi::ppi_mean(&y, &yhat, &unl, crate::ifsm_correction::Z95).unwrap();
    assert_eq!(
        (ppi.value, ppi.ci, ppi.lambda),
        (want.value, want.ci, Some(want.lambda))
    );
    let head = got.headline.as_ref().unwrap();
    assert_eq!(
        (head.method.as_str(), head.value, head.ci),
        ("ppi", Some(ppi.value), Some(ppi.ci))
    );
}

#[test]
fn headlines_of_different_methods_are_not_compared_and_a_note_says_why() {
    let (a, b) = (headline_run("ppi"), headline_run("dataset"));
    let (comparisons, notes) = attached_to(&systems(), (&a, "a"), (&b, "b"));
    assert!(
        notes
            .iter()
            .any(|n| n.contains("different methods (ppi vs dataset)")),
        "{notes:?}"
    );
    let c = comparisons.iter().find(|c| c.metric == "ifsm").unwrap();
    assert!(c.corrected.is_none());
}

#[test]
fn ppi_estimates_on_different_questions_differ_unpaired_with_their_variances_added() {
    let p = |value: f64, half: f64| PpiIfsm {
        value,
        ci: [value - half, value + half],
        lambda: 0.5,
        n_labeled: 30,
        n_unlabeled: 300,
        n_empty: 0,
    };
    let d = unpaired_ppi(Some(&p(0.6, 0.06)), Some(&p(0.5, 0.08))).unwrap();
    assert_eq!(d.method, "unpaired");
    assert!((d.value - 0.1).abs() < 1e-15);
    assert!((d.ci[1] - d.value - 0.1).abs() < 1e-12, "{d:?}");
    assert!(unpaired_ppi(None, Some(&p(0.5, 0.1))).is_none());
}

#[test]
fn headlines_rank_the_systems_only_when_they_share_a_method() {
    let systems = systems();
    let run = |method: &str, value: f64| {
        let mut r = headline_run(method);
        r.groups
            .get_mut("")
            .unwrap()
            .headline
            .as_mut()
            .unwrap()
            .value = value;
        r
    };
    let (a, b) = (run("dataset", 0.3), run("dataset", 0.6));
    let infos = [
        RunInfo {
            label: "a",
            calibration: &a,
        },
        RunInfo {
            label: "b",
            calibration: &b,
        },
    ];
    let (rows, ranked) = headline_rows(&systems, &[0, 1], &["", ""], &infos);
    assert!(ranked);
    assert_eq!((rows[0].system.as_str(), rows[0].value), ("B", 0.6));
    let c = run("ppi", 0.9);
    let infos = [
        RunInfo {
            label: "a",
            calibration: &a,
        },
        RunInfo {
            label: "c",
            calibration: &c,
        },
    ];
    let (rows, ranked) = headline_rows(&systems, &[0, 1], &["", ""], &infos);
    assert!(!ranked);
    assert_eq!(rows[0].system, "A", "as given");
}
