//! What a story run writes, from its items: metrics.json's metrics and groups (IFSM, the judge's
//! ceiling, the judge-corrected IFSM, Dissimilarity, coverage), report.md and the other files;
//! and what `scorekit merge` folds together from the parts (coverage scopes, calibration counts,
//! calibration.jsonl). The one place `scorekit story` and `scorekit merge` compute them.

use crate::settings::StorySettings;
use crate::story::calibration::summary::{self, CalibrationSummary};
use crate::story::calibration::CalibrationItem;
use crate::story::{self, Checked, Counts, Coverage, Generation, GroupMetrics, Item};
use scorekit_core::error::{InputError, Result};
use scorekit_report::ifsm_corrected::Headline;
use scorekit_report::{self as report, MetricsDoc, Outputs, RunSettings};
use serde_json::{json, Map, Value};
use std::collections::{BTreeMap, BTreeSet};

/// calibration.jsonl: one line per calibration item of the run.
pub const CALIBRATION_FILE: &str = "calibration.jsonl";

/// Metrics from items, the one place `scorekit story` and `scorekit merge` compute them: puts
/// the items in the single-run order (by row), counts statuses and computes IFSM, the ceiling,
/// Dissimilarity and coverage per group with the bootstrap and seed of `doc.settings` (keeping
/// `dataset_questions` and the coverage scope from `doc.metrics`, and each group's
/// `missing_ids` from `doc.groups`: see [`set_scope`]), and renders the table and report.
pub fn outputs(doc: &mut MetricsDoc, items: &mut [Item]) -> Result<Outputs> {
    items.sort_by_key(|i| i.row);
    let RunSettings {
        bootstrap, seed, ..
    } = doc.run_settings()?;
    let settings: StorySettings = doc.suite_settings()?;
    let count = |key: &str| doc.metrics.get(key).and_then(Value::as_u64);
    let dataset_questions = count("dataset_questions").unwrap_or(0) as usize;
    let scope = count(SCOPE_QUESTIONS).map_or(dataset_questions, |n| n as usize);
    let scope_first = ids_of(doc.metrics.get(SCOPE_FIRST_IDS));
    let listed: BTreeMap<String, Vec<String>> = doc
        .groups
        .iter()
        .map(|(g, v)| (g.clone(), ids_of(v.get("missing_ids"))))
        .collect();
    let calibration = CalibrationSummary::read(doc)?;
    let mut results = story::summarize(items, bootstrap, seed);
    let judged = story::judged_counts(items);
    let mut by_group: BTreeMap<&str, Vec<&Item>> = BTreeMap::new();
    for it in items.iter() {
        by_group.entry(&it.group).or_default().push(it);
    }
    for (name, (m, _)) in results.iter_mut() {
        if m.ifsm.is_none() {
            continue;
        }
        if let Some(c) = &calibration {
            let j = judged.get(name).copied().unwrap_or_default();
            m.ifsm_corrected = c.correct(m.ifsm.as_ref(), &j, false);
            m.ifsm_cyclic_corrected = c.correct(m.ifsm_cyclic.as_ref(), &j, true);
        }
        let group = by_group.get(name.as_str()).map_or(&[][..], Vec::as_slice);
        m.ifsm_ppi = story::estimates::ppi(group, false);
        if m.ifsm_cyclic.is_some() {
            m.ifsm_cyclic_ppi = story::estimates::ppi(group, true);
        }
        m.ifsm_headline = Headline::choose(
            m.ifsm.as_ref(),
            m.ifsm_corrected.as_ref(),
            m.ifsm_ppi.as_ref(),
        );
    }
    // A group the scope lists nothing for answered none of the scope's questions.
    let missing_ids: BTreeMap<String, Vec<String>> = results
        .keys()
        .map(|g| {
            let ids = listed
                .get(g)
                .cloned()
                .unwrap_or_else(|| scope_first.clone());
            (g.clone(), ids)
        })
        .collect();
    let coverage = story::coverage(items, scope, &missing_ids);
    doc.groups.clear();
    for (name, (m, c)) in &results {
        doc.groups
            .insert(name.to_string(), group_json(m, c, coverage.get(name)));
    }
    doc.metrics = headline(&results, &coverage, dataset_questions);
    let verdicts = items.iter().filter_map(|it| match &it.judge {
        Some(story::Outcome::Judged(v)) => Some(v),
        _ => None,
    });
    if verdicts.clone().any(|v| v.letter_logits.is_some()) {
        let cut = verdicts.filter(|v| v.truncated).count();
        doc.metrics.insert(
            crate::judge_eval::outputs::TRUNCATED_ITEMS.into(),
            json!(cut),
        );
    }
    doc.metrics.insert(SCOPE_QUESTIONS.into(), json!(scope));
    doc.metrics
        .insert(SCOPE_FIRST_IDS.into(), json!(scope_first));
    if let Some(c) = &calibration {
        c.write(doc);
        if let (Some(d), Some(h)) = (&c.dataset, &c.human) {
            if let Some(a) = story::estimates::calibration_agreement(&d.counts, &h.counts) {
                doc.metrics.insert(
                    AGREEMENT_KEY.into(),
                    serde_json::to_value(a)
                        .map_err(|e| scorekit_core::error::Error::Internal(e.into()))?,
                );
            }
        }
    }
    let table = report::story::table(&results, &coverage);
    let letter = settings.letter_protocol();
    let facts = report::story::StoryFacts {
        option_copies: story::option_copies(items),
        agreement: doc
            .metrics
            .get(AGREEMENT_KEY)
            .and_then(|v| serde_json::from_value(v.clone()).ok()),
        judge: settings.judge.clone(),
        embedder: settings.embedder.clone(),
    };
    let warnings = report::story::warnings(&results, &coverage, &facts);
    let report = report::story::report(
        doc,
        letter.as_ref(),
        &results,
        &coverage,
        &table,
        &warnings,
        &facts,
    );
    let table = report::story::terminal(&results, &table, &warnings);
    Ok(Outputs {
        report,
        table,
        files: story_files(&results),
        texts: scorekit_report::html::timing::timed(
            scorekit_report::html::timing::Phase::Texts,
            || super::texts::page_texts(doc),
        ),
    })
}

/// metrics.json key (under `metrics`) of the dataset calibration's rates against the labels'.
pub const AGREEMENT_KEY: &str = "calibration_agreement";

/// tables.tex and table.csv (the main table) and, when the judge ran, ifsm.svg.
fn story_files(
    results: &BTreeMap<String, (story::GroupMetrics, story::Counts)>,
) -> Vec<(String, Vec<u8>)> {
    let main = report::story::main_table(results);
    let mut files = report::table::table_files("Possible Stories table", &main);
    if let Some(svg) = report::story::ifsm_chart(results) {
        files.push(("ifsm.svg".to_string(), svg.into_bytes()));
    }
    files
}

fn group_json(m: &GroupMetrics, c: &Counts, cov: Option<&Coverage>) -> Value {
    let mut v = serde_json::to_value(m).expect("metrics serialise");
    if let (Some(obj), Value::Object(counts)) = (v.as_object_mut(), json!(c)) {
        obj.extend(counts);
    }
    if let (Some(obj), Some(Value::Object(cov))) = (v.as_object_mut(), cov.map(|c| json!(c))) {
        obj.extend(cov);
    }
    v
}

/// metrics.json key: dataset questions of the run (the shard's with `--shard`).
const SCOPE_QUESTIONS: &str = "questions_in_scope";

/// metrics.json key: the first ids (sorted) of those questions, so that `merge` can list the
/// missing questions of a group that had no generation at all in some shard.
const SCOPE_FIRST_IDS: &str = "scope_first_ids";

fn ids_of(v: Option<&Value>) -> Vec<String> {
    v.and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default()
}

/// Per group (every group with a generation in this run), the sorted missing question ids.
pub fn missing_in_scope<'a>(
    scope: &[&'a str],
    checked: &[Checked],
    generations: &[Generation],
) -> BTreeMap<String, Vec<&'a str>> {
    let groups: BTreeSet<&str> = checked
        .iter()
        .map(|c| generations[c.generation].group())
        .collect();
    let answers: Vec<(&str, &str)> = checked
        .iter()
        .filter(|c| c.status.answers())
        .map(|c| {
            let g = &generations[c.generation];
            (g.group(), g.question_id.as_str())
        })
        .collect();
    story::missing_questions(scope, &answers, &groups)
}

/// Record the coverage scope in `doc` for [`outputs`] (and, through metrics.json, for `merge`).
pub fn set_scope(doc: &mut MetricsDoc, scope: &[&str], missing: &BTreeMap<String, Vec<&str>>) {
    let mut sorted: Vec<&str> = scope.to_vec();
    sorted.sort_unstable();
    sorted.truncate(story::MISSING_IDS_LISTED);
    doc.metrics
        .insert(SCOPE_QUESTIONS.into(), json!(scope.len()));
    doc.metrics.insert(SCOPE_FIRST_IDS.into(), json!(sorted));
    for (g, ids) in missing {
        let first: Vec<&str> = ids
            .iter()
            .take(story::MISSING_IDS_LISTED)
            .copied()
            .collect();
        doc.groups
            .insert(g.clone(), json!({ "missing_ids": first }));
    }
}

/// `scorekit merge`: the parts' scopes (disjoint shards) together: their question counts add
/// up, and a group's first missing ids are the first of the union of each part's list (the
/// part's first scope ids where the group had no generation in that part).
pub fn combine_scopes(doc: &mut MetricsDoc, parts: &[&MetricsDoc]) {
    let scope: u64 = parts
        .iter()
        .map(|p| {
            let n = |k: &str| p.metrics.get(k).and_then(Value::as_u64);
            n(SCOPE_QUESTIONS).or(n("dataset_questions")).unwrap_or(0)
        })
        .sum();
    let first = |ids: BTreeSet<String>| -> Vec<String> {
        ids.into_iter().take(story::MISSING_IDS_LISTED).collect()
    };
    let all_first: BTreeSet<String> = parts
        .iter()
        .flat_map(|p| ids_of(p.metrics.get(SCOPE_FIRST_IDS)))
        .collect();
    let groups: BTreeSet<&String> = parts.iter().flat_map(|p| p.groups.keys()).collect();
    let mut listed = Map::new();
    for g in groups {
        let ids: BTreeSet<String> = parts
            .iter()
            .flat_map(|p| match p.groups.get(g) {
                Some(v) => ids_of(v.get("missing_ids")),
                None => ids_of(p.metrics.get(SCOPE_FIRST_IDS)),
            })
            .collect();
        listed.insert(g.clone(), json!({ "missing_ids": first(ids) }));
    }
    doc.metrics.insert(SCOPE_QUESTIONS.into(), json!(scope));
    doc.metrics
        .insert(SCOPE_FIRST_IDS.into(), json!(first(all_first)));
    doc.groups = listed;
}

/// `scorekit merge`: the parts' calibration counts added up (their scopes are disjoint).
pub fn combine_calibrations(doc: &mut MetricsDoc, parts: &[&MetricsDoc]) -> Result<()> {
    let mut total: Option<CalibrationSummary> = None;
    for part in parts {
        if let Some(c) = CalibrationSummary::read(part)? {
            match &mut total {
                Some(t) => t.add(&c),
                None => total = Some(c),
            }
        }
    }
    doc.metrics.remove(summary::METRICS_KEY);
    if let Some(t) = total {
        t.write(doc);
    }
    Ok(())
}

/// `scorekit merge`: the parts' calibration.jsonl in the single-run order (none when no part
/// has one).
pub fn merge_calibration_files(parts: &[std::path::PathBuf]) -> Result<Vec<(String, Vec<u8>)>> {
    let mut items: Vec<CalibrationItem> = Vec::new();
    let mut any = false;
    for dir in parts {
        let path = dir.join(CALIBRATION_FILE);
        let text = match std::fs::read_to_string(&path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => return Err(InputError::file(&path, format!("cannot read: {e}")).into()),
        };
        any = true;
        for (i, line) in text
            .lines()
            .enumerate()
            .filter(|(_, l)| !l.trim().is_empty())
        {
            items.push(serde_json::from_str(line).map_err(|e| {
                InputError::line(&path, i + 1, format!("not a calibration item: {e}"))
            })?);
        }
    }
    items.sort_by_key(CalibrationItem::order_key);
    Ok(if any {
        vec![(
            CALIBRATION_FILE.to_string(),
            scorekit_report::jsonl(&items)?,
        )]
    } else {
        Vec::new()
    })
}

/// Headline metrics: the only group's metrics and coverage when there is one, plus counts over
/// all groups.
fn headline(
    results: &BTreeMap<String, (GroupMetrics, Counts)>,
    coverage: &BTreeMap<String, Coverage>,
    dataset_questions: usize,
) -> Map<String, Value> {
    let mut total = Counts::default();
    for (_, c) in results.values() {
        total.generations += c.generations;
        total.scored += c.scored;
        total.unknown_question += c.unknown_question;
        total.duplicate += c.duplicate;
        total.empty_ending += c.empty_ending;
    }
    let mut m = Map::new();
    if results.len() == 1 {
        if let Some((name, (g, _))) = results.iter().next() {
            if let Value::Object(o) = serde_json::to_value(g).expect("metrics serialise") {
                m.extend(o);
            }
            if let Some(Value::Object(o)) = coverage.get(name).map(|c| json!(c)) {
                m.extend(o);
            }
        }
    }
    if let Value::Object(o) = json!(total) {
        m.extend(o);
    }
    m.insert("groups".into(), json!(results.len()));
    m.insert("dataset_questions".into(), json!(dataset_questions));
    m
}
