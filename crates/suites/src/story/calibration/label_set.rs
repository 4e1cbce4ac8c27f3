//! The human labels of a run, from one or more label files: checked against the run's own
//! generations (a label that names a model must label that model's ending), then combined across
//! labellers (one verdict per ending, by majority) with their agreement.
//!
//! A label naming a `model` is a draw from that model's judged endings: the per-model
//! prediction-powered estimate (`ppi`) rests on it, so a label whose ending is not the model's
//! would silently estimate something else. Hence the checks, before any model loads.

use super::labels::{Label, RunSample};
use crate::stats::kappa::{cohen_kappa, fleiss_kappa};
use crate::story::{Checked, Generation, Question, Status};
use scorekit_core::error::InputError;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet, HashMap};

/// How far the labellers agree, on the endings they labelled in common.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LabelAgreement {
    /// The labellers, sorted.
    pub labellers: Vec<String>,
    /// "Cohen's kappa" (two labellers) or "Fleiss' kappa" (three or more).
    pub method: String,
    /// κ (`null` when it is undefined: no common ending, or chance agreement of 1).
    pub kappa: Option<f64>,
    /// Endings it is computed on: labelled by both (Cohen) or by every labeller (Fleiss).
    pub items: usize,
}

/// The labels of a run, combined.
#[derive(Debug, Clone, PartialEq)]
pub struct LabelSet {
    /// One label per labelled ending (its first line), `follows` the labellers' majority.
    pub labels: Vec<Label>,
    /// Label lines read, over all files.
    pub read: usize,
    /// Endings left out because their labellers split evenly.
    pub ties: usize,
    /// The labellers' agreement, when there are two or more.
    pub agreement: Option<LabelAgreement>,
}

/// What identifies a labelled ending: its model (if named), its question, the ending as the
/// judge reads it (surrounding whitespace aside).
type Key = (Option<String>, usize, String);

/// Per labeller, the answer and where it was first given (file:line).
type Answers = BTreeMap<String, (bool, String)>;

fn key(l: &Label) -> Key {
    (l.model.clone(), l.question, l.ending.trim().to_string())
}

/// Every label that names a `model` checked against the run's generations: the model is one of
/// the run's, and the ending is the model's scored ending for that question. `checked` is the
/// whole run's (before any shard is taken).
pub fn check_models(
    labels: &[Label],
    questions: &[Question],
    generations: &[Generation],
    checked: &[Checked],
) -> Result<(), InputError> {
    let models: BTreeSet<&str> = generations
        .iter()
        .filter_map(|g| g.model.as_deref())
        .collect();
    let mut endings: HashMap<(&str, usize), &str> = HashMap::new();
    for c in checked.iter().filter(|c| c.status == Status::Scored) {
        let g = &generations[c.generation];
        if let (Some(m), Some(q)) = (g.model.as_deref(), c.question) {
            endings.insert((m, q), g.ending.as_str());
        }
    }
    let error = |l: &Label, field: &str, message: String| InputError {
        line: Some(l.line),
        field: Some(field.to_string()),
        ..InputError::file(&l.file, message)
    };
    for l in labels {
        let Some(model) = l.model.as_deref() else {
            continue;
        };
        if !models.contains(model) {
            let list: Vec<&str> = models.iter().copied().take(8).collect();
            return Err(error(
                l,
                "model",
                format!(
                    "{model:?} is not a model of the run's generations (its models: {})",
                    if list.is_empty() {
                        "none: the generations name no model".to_string()
                    } else {
                        list.join(", ")
                    }
                ),
            ));
        }
        let qid = &questions[l.question].id;
        match endings.get(&(model, l.question)) {
            None => {
                return Err(error(
                    l,
                    "question_id",
                    format!("model {model:?} has no scored ending for question {qid:?}"),
                ))
            }
            Some(e) if e.trim() != l.ending.trim() => {
                let start: String = e.trim().chars().take(60).collect();
                return Err(error(
                    l,
                    "ending",
                    format!(
                        "not model {model:?}'s ending for question {qid:?} (its ending begins \
                         {start:?}): a label of another text would not describe this model"
                    ),
                ));
            }
            Some(_) => {}
        }
    }
    Ok(())
}

/// Labels carrying a `sample` checked against the run's own sample (`run`: the to_label.jsonl
/// this run draws for its `--label-sample N` and `--seed`, `None` without `--label-sample`),
/// and given their models from it: a labelling page shows no model (nothing to bias the
/// labeller) and exports none, so the sample says whose ending each label is; an ending that
/// two models wrote alike is a label of each. A label naming a model keeps it, and it must be
/// one that wrote the ending. Labels without `sample` pass as they are.
pub fn check_sample(
    labels: Vec<Label>,
    questions: &[Question],
    run: Option<&RunSample>,
) -> Result<Vec<Label>, InputError> {
    let error = |l: &Label, field: &str, message: String| InputError {
        line: Some(l.line),
        field: Some(field.to_string()),
        ..InputError::file(&l.file, message)
    };
    let mut out = Vec::with_capacity(labels.len());
    for l in labels {
        let Some(sample) = l.sample.as_deref() else {
            out.push(l);
            continue;
        };
        let Some(run) = run else {
            return Err(error(
                &l,
                "sample",
                format!(
                    "labels of sample {sample}, and this run draws no sample to check them \
                     against: pass the --label-sample N and --seed S of the run that wrote that \
                     to_label.jsonl"
                ),
            ));
        };
        if sample != run.sha256 {
            return Err(error(
                &l,
                "sample",
                format!(
                    "{sample} is not this run's sample {} (the to_label.jsonl that \
                     --label-sample {} --seed {} draws from these generations): these labels \
                     were made on another sample, another seed or other generations",
                    run.sha256, run.n, run.seed
                ),
            ));
        }
        let qid = &questions[l.question].id;
        let Some(models) = run.endings.get(&(qid.clone(), l.ending.trim().to_string())) else {
            return Err(error(
                &l,
                "ending",
                format!("not an ending of the sample for question {qid:?}"),
            ));
        };
        match &l.model {
            Some(m) if !models.contains(&Some(m.clone())) => {
                return Err(error(
                    &l,
                    "model",
                    format!("{m:?} did not write this ending of the sample"),
                ))
            }
            Some(_) => out.push(l),
            None => out.extend(models.iter().map(|m| Label {
                model: m.clone(),
                ..l.clone()
            })),
        }
    }
    Ok(out)
}

/// The labels combined: one verdict per ending, the majority of its labellers (an even split
/// is left out and counted). One labeller giving one ending two different answers is an input
/// error naming the second line.
pub fn combine(labels: Vec<Label>) -> Result<LabelSet, InputError> {
    let read = labels.len();
    // Per ending, in order of first appearance: the labellers' answers.
    let mut order: Vec<Key> = Vec::new();
    let mut votes: HashMap<Key, (Label, Answers)> = HashMap::new();
    for l in labels {
        let k = key(&l);
        let at = format!("{}:{}", l.file, l.line);
        let entry = votes.entry(k.clone()).or_insert_with(|| {
            order.push(k);
            (l.clone(), BTreeMap::new())
        });
        match entry.1.get(&l.labeller) {
            Some((said, first)) if *said != l.follows => {
                return Err(InputError {
                    line: Some(l.line),
                    field: Some("follows".into()),
                    ..InputError::file(
                        &l.file,
                        format!(
                            "labeller {:?} labelled this ending {said} at {first}: one labeller, \
                             one answer per ending",
                            l.labeller
                        ),
                    )
                });
            }
            Some(_) => {}
            None => {
                entry.1.insert(l.labeller.clone(), (l.follows, at));
            }
        }
    }
    let mut out = Vec::new();
    let mut ties = 0;
    for k in &order {
        let (first, by) = &votes[k];
        let yes = by.values().filter(|(f, _)| *f).count();
        let no = by.len() - yes;
        if yes == no {
            ties += 1;
            continue;
        }
        let mut label = first.clone();
        label.follows = yes > no;
        out.push(label);
    }
    let answers: Vec<&BTreeMap<String, (bool, String)>> =
        order.iter().map(|k| &votes[k].1).collect();
    Ok(LabelSet {
        labels: out,
        read,
        ties,
        agreement: agreement(&answers),
    })
}

/// Cohen's κ for two labellers (on the endings both labelled), Fleiss' κ for more (on the
/// endings every one labelled); `None` with fewer than two labellers.
fn agreement(answers: &[&Answers]) -> Option<LabelAgreement> {
    let labellers: BTreeSet<&String> = answers.iter().flat_map(|a| a.keys()).collect();
    if labellers.len() < 2 {
        return None;
    }
    let names: Vec<String> = labellers.iter().map(|s| s.to_string()).collect();
    let complete: Vec<_> = answers
        .iter()
        .filter(|a| labellers.iter().all(|l| a.contains_key(*l)))
        .collect();
    let (method, kappa) = if names.len() == 2 {
        let pairs: Vec<(bool, bool)> = complete
            .iter()
            .map(|a| (a[&names[0]].0, a[&names[1]].0))
            .collect();
        ("Cohen's kappa", cohen_kappa(&pairs))
    } else {
        let counts: Vec<[u64; 2]> = complete
            .iter()
            .map(|a| {
                let yes = a.values().filter(|(f, _)| *f).count() as u64;
                [a.len() as u64 - yes, yes]
            })
            .collect();
        ("Fleiss' kappa", fleiss_kappa(&counts))
    };
    Some(LabelAgreement {
        labellers: names,
        method: method.to_string(),
        kappa,
        items: complete.len(),
    })
}

/// Human labels by model and question id: the PPI sample the story items carry.
pub type HumanLabels = BTreeMap<String, BTreeMap<String, bool>>;

/// The combined labels that name a model, as the PPI sample: model → question id → follows.
pub fn by_model(labels: &[Label], questions: &[Question]) -> HumanLabels {
    let mut out = HumanLabels::new();
    for l in labels {
        if let Some(m) = &l.model {
            out.entry(m.clone())
                .or_default()
                .insert(questions[l.question].id.clone(), l.follows);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn label(file: &str, line: usize, q: usize, ending: &str, follows: bool, who: &str) -> Label {
        Label {
            file: file.into(),
            line,
            question: q,
            ending: ending.into(),
            follows,
            model: Some("m".into()),
            labeller: who.into(),
            sample: None,
        }
    }

    fn questions() -> Vec<Question> {
        ["q0", "q1"]
            .iter()
            .map(|id| Question {
                id: (*id).into(),
                row: 1,
                passage_id: (*id).into(),
                question: "Q".into(),
                document: "D".into(),
                options: vec!["a".into(), "b".into(), "c".into(), "d".into()],
                gold: 0,
            })
            .collect()
    }

    #[test]
    fn labels_of_the_runs_sample_take_their_models_from_it_and_others_are_refused() {
        let sha = "a".repeat(64);
        let mut endings = HashMap::new();
        // "e0" was written alike by two models; "e1" by m2 alone.
        endings.insert(
            ("q0".to_string(), "e0".to_string()),
            vec![Some("m1".to_string()), Some("m2".to_string())],
        );
        endings.insert(
            ("q1".to_string(), "e1".to_string()),
            vec![Some("m2".to_string())],
        );
        let run = RunSample {
            sha256: sha.clone(),
            n: 2,
            seed: 3,
            endings,
        };
        let of = |q: usize, ending: &str, model: Option<&str>, sample: Option<&str>| Label {
            model: model.map(str::to_string),
            sample: sample.map(str::to_string),
            ..label("x.jsonl", q + 1, q, ending, true, "ann")
        };
        let qs = questions();
        let got = check_sample(
            vec![
                of(0, " e0 ", None, Some(&sha)),
                of(1, "e1", Some("m2"), Some(&sha)),
                of(1, "free", Some("m9"), None),
            ],
            &qs,
            Some(&run),
        )
        .unwrap();
        let models: Vec<Option<&str>> = got.iter().map(|l| l.model.as_deref()).collect();
        assert_eq!(models, [Some("m1"), Some("m2"), Some("m2"), Some("m9")]);
        for (bad, field, run) in [
            (
                of(0, "e0", None, Some(&"b".repeat(64))),
                "sample",
                Some(&run),
            ),
            (of(0, "e0", None, Some(&sha)), "sample", None),
            (of(1, "not in it", None, Some(&sha)), "ending", Some(&run)),
            (of(1, "e1", Some("m1"), Some(&sha)), "model", Some(&run)),
        ] {
            let e = check_sample(vec![bad], &qs, run).unwrap_err().to_string();
            assert!(
                e.contains("x.jsonl:") && e.contains(&format!("field \"{field}\"")),
                "{e}"
            );
        }
    }

    #[test]
    fn labellers_combine_by_majority_and_ties_are_counted() {
        let labels = vec![
            label("a.jsonl", 1, 0, "e0", true, "ann"),
            label("a.jsonl", 2, 1, "e1", true, "ann"),
            label("b.jsonl", 1, 0, "e0 ", true, "bob"),
            label("b.jsonl", 2, 1, "e1", false, "bob"),
            label("c.jsonl", 1, 1, "e1", false, "cy"),
            label("c.jsonl", 2, 2, "e2", true, "cy"),
            label("b.jsonl", 3, 2, "e2", false, "bob"),
        ];
        let set = combine(labels).unwrap();
        assert_eq!(set.read, 7);
        let got: Vec<(usize, bool)> = set.labels.iter().map(|l| (l.question, l.follows)).collect();
        // e0: 2 yes; e1: 1 yes, 2 no; e2: 1 to 1, a tie.
        assert_eq!(got, vec![(0, true), (1, false)]);
        assert_eq!(set.ties, 1);
        let a = set.agreement.unwrap();
        assert_eq!(a.method, "Fleiss' kappa");
        assert_eq!(a.labellers, ["ann", "bob", "cy"]);
        // Only e1 was labelled by all three (yes, no, no): P = 1/3, Pe = 5/9, κ = −0.5.
        assert_eq!(a.items, 1);
        assert!((a.kappa.unwrap() + 0.5).abs() < 1e-12, "{a:?}");
    }

    #[test]
    fn one_labeller_answering_twice_differently_is_refused() {
        let labels = vec![
            label("a.jsonl", 1, 0, "e0", true, "ann"),
            label("a.jsonl", 5, 0, "e0", true, "ann"),
            label("a.jsonl", 9, 0, "e0", false, "ann"),
        ];
        let e = combine(labels).unwrap_err().to_string();
        assert!(
            e.contains("a.jsonl:9") && e.contains("follows") && e.contains("a.jsonl:1"),
            "{e}"
        );
    }

    #[test]
    fn two_labellers_get_cohens_kappa_on_their_common_endings() {
        let mut labels = Vec::new();
        // ann and bob agree on 0..6, disagree on 6..8; ann alone labels 8.
        for q in 0..8 {
            labels.push(label("a", q + 1, q, &format!("e{q}"), q % 2 == 0, "ann"));
            let b = if q < 6 { q % 2 == 0 } else { q % 2 != 0 };
            labels.push(label("b", q + 1, q, &format!("e{q}"), b, "bob"));
        }
        labels.push(label("a", 9, 8, "e8", true, "ann"));
        let a = combine(labels).unwrap().agreement.unwrap();
        assert_eq!((a.method.as_str(), a.items), ("Cohen's kappa", 8));
        // po = 6/8, pe = 1/2: κ = 0.5.
        assert!((a.kappa.unwrap() - 0.5).abs() < 1e-12, "{a:?}");
    }
}
