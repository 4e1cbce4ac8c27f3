//! Per-item values of each suite's headline metrics, read from the suite's own items, by result
//! group: what `scorekit compare` pairs. Each function names the item id it pairs by.

use super::Values;
use crate::{grasp, mint, muse, story};
use scorekit_report::compare::{MetricKind, MetricSpec};
use std::collections::BTreeMap;

/// Per group (system), per metric name, the items' values by id.
pub type Observed = BTreeMap<String, BTreeMap<&'static str, Values>>;

/// Two items of one group claim the same id for a metric: their positions, for the error.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DuplicateId {
    /// The group.
    pub group: String,
    /// The id.
    pub id: String,
    /// The 1-based item line (in items.jsonl) of the second one.
    pub item: usize,
}

fn insert(
    out: &mut Observed,
    group: &str,
    metric: &'static str,
    id: String,
    value: f64,
    item: usize,
) -> Result<(), DuplicateId> {
    let values = out
        .entry(group.to_string())
        .or_default()
        .entry(metric)
        .or_default();
    if values.insert(id.clone(), value).is_some() {
        return Err(DuplicateId {
            group: group.to_string(),
            id,
            item,
        });
    }
    Ok(())
}

fn bit(b: bool) -> f64 {
    f64::from(u8::from(b))
}

/// Possible Stories: IFSM and the judge's ceiling per question, Dissimilarity per story.
pub const STORY: [MetricSpec; 3] = [
    MetricSpec {
        name: "ifsm",
        label: "IFSM",
        kind: MetricKind::Binary,
        compared: true,
    },
    MetricSpec {
        name: "judge_accuracy",
        label: "judge acc. (ceiling)",
        kind: MetricKind::Binary,
        compared: false,
    },
    MetricSpec {
        name: "dissimilarity_macro",
        label: "Dissimilarity",
        kind: MetricKind::Continuous,
        compared: true,
    },
];

/// Per story item: 1 when the judge saw the ending, 0 for an empty one (no metric of its own).
pub const JUDGED: &str = "ifsm_judged";

/// Per labelled story item: its human label (1 = follows; no metric of its own), for the
/// prediction-powered difference.
pub const HUMAN: &str = "ifsm_human";

/// Story items by model group. `ifsm` pairs by `question_id` (follow = 1; an empty ending of a
/// judged run is Not-Follow, 0, as the run counts it). `dissimilarity_macro` pairs by story
/// (`passage_id`): the story's mean over its pairs, each pair once.
pub fn story(items: &[story::Item]) -> Result<Observed, DuplicateId> {
    let mut out = Observed::new();
    let mut stories: BTreeMap<(&str, &str), Vec<f64>> = BTreeMap::new();
    for (i, it) in items.iter().enumerate() {
        let line = i + 1;
        // An empty ending is the model's answer and carries Not-Follow without a verdict: it
        // counts in IFSM, not in the judge's ceiling (as in the run's own metrics).
        let answered = matches!(
            it.status,
            story::Status::Scored | story::Status::EmptyEnding
        );
        if let (true, Some(outcome)) = (answered, &it.judge) {
            insert(
                &mut out,
                &it.group,
                "ifsm",
                it.question_id.clone(),
                bit(outcome.follow()),
                line,
            )?;
            // Not a compared metric: which endings the judge saw, so that the corrected
            // difference corrects only those (an empty ending is known not to follow).
            insert(
                &mut out,
                &it.group,
                JUDGED,
                it.question_id.clone(),
                bit(outcome.verdict().is_some()),
                line,
            )?;
            if let Some(h) = it.human_follows {
                insert(
                    &mut out,
                    &it.group,
                    HUMAN,
                    it.question_id.clone(),
                    bit(h),
                    line,
                )?;
            }
            if let Some(j) = outcome.verdict() {
                insert(
                    &mut out,
                    &it.group,
                    "judge_accuracy",
                    it.question_id.clone(),
                    bit(j.judge_correct),
                    line,
                )?;
            }
        }
        if let (story::Status::Scored, Some(p), Some(pairs)) =
            (it.status, &it.passage_id, &it.dissimilarity_pairs)
        {
            let entry = stories.entry((&it.group, p)).or_default();
            entry.extend(
                pairs
                    .iter()
                    .filter(|q| it.question_id < q.question_id)
                    .map(|q| q.dissimilarity),
            );
        }
    }
    for ((group, passage), values) in stories {
        if !values.is_empty() {
            let mean = values.iter().sum::<f64>() / values.len() as f64;
            out.entry(group.to_string())
                .or_default()
                .entry("dissimilarity_macro")
                .or_default()
                .insert(passage.to_string(), mean);
        }
    }
    Ok(out)
}

/// GRASP: accuracy.
pub const GRASP: [MetricSpec; 1] = [MetricSpec {
    name: "accuracy",
    label: "accuracy",
    kind: MetricKind::Binary,
    compared: true,
}];

/// GRASP items by model (one group for a single-file run, one per `model` when several files
/// were scored together): correct = 1. The id of a row is its scene, its video paths and its
/// gold label, with the occurrence count of that triple in file order (a Level 1 binary video is
/// asked twice, a true and a false statement; rows without video paths pair by their order
/// within the scene and label).
pub fn grasp(items: &[grasp::Item]) -> Result<Observed, DuplicateId> {
    let mut out = Observed::new();
    let mut seen: BTreeMap<(&str, String), usize> = BTreeMap::new();
    for (i, it) in items.iter().enumerate() {
        let group = it.model.as_deref().unwrap_or("");
        let base = format!(
            "{}|{}|{}",
            it.scene,
            it.video_file.as_deref().unwrap_or(""),
            it.gt
        );
        let k = seen.entry((group, base.clone())).or_default();
        *k += 1;
        let id = format!("{base}|#{k}");
        let correct = it.verdict == grasp::rules::Verdict::Correct;
        insert(&mut out, group, "accuracy", id, bit(correct), i + 1)?;
    }
    Ok(out)
}

/// MuSE: Task Selection, Flow of Thought, Final Output.
pub const MUSE: [MetricSpec; 3] = [
    MetricSpec {
        name: "TS",
        label: "TS",
        kind: MetricKind::Binary,
        compared: true,
    },
    MetricSpec {
        name: "FoT",
        label: "FoT",
        kind: MetricKind::Binary,
        compared: true,
    },
    MetricSpec {
        name: "O",
        label: "O",
        kind: MetricKind::Binary,
        compared: true,
    },
];

/// MuSE items of one run (one group): TS, FoT and O by query `idx` (a query without a plan
/// scores 0, as in the run; O is left out where verdicts were given but none for the query).
pub fn muse(items: &[muse::score::Item], group: &str) -> Result<Observed, DuplicateId> {
    let mut out = Observed::new();
    for (i, it) in items.iter().enumerate() {
        let id = it.idx.to_string();
        insert(&mut out, group, "TS", id.clone(), bit(it.ts), i + 1)?;
        insert(&mut out, group, "FoT", id.clone(), bit(it.fot), i + 1)?;
        if let Some(o) = it.o {
            insert(&mut out, group, "O", id, bit(o), i + 1)?;
        }
    }
    Ok(out)
}

/// MINT: success rate.
pub const MINT: [MetricSpec; 1] = [MetricSpec {
    name: "success_rate",
    label: "SR",
    kind: MetricKind::Binary,
    compared: true,
}];

/// MINT items by configuration: success (re-checked where the run re-checked) by task and
/// `task_id`. Duplicate trajectories are left out, as in the run's tables.
pub fn mint(items: &[mint::Item], rechecked: bool) -> Result<Observed, DuplicateId> {
    let mut out = Observed::new();
    for (i, it) in items.iter().enumerate() {
        if it.duplicate {
            continue;
        }
        let id = format!("{}/{}", it.task, it.task_id);
        insert(
            &mut out,
            &it.config.label(),
            "success_rate",
            id,
            bit(it.verdict(rechecked)),
            i + 1,
        )?;
    }
    Ok(out)
}
