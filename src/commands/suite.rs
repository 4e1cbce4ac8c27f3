//! The suites as `scorekit merge` and `scorekit compare` see them: a name, an item type (one line
//! of items.jsonl, defined in the suite's module), the one function that rebuilds metrics and
//! reports from items, shared with the suite's own command, and for `compare` the headline
//! metrics per item and what makes two runs score the same benchmark. [`REGISTRY`] lists every
//! suite; add a new one there.

use scorekit_core::error::{InputError, Result};
use scorekit_report::{jsonl, MetricsDoc, Outputs};
use scorekit_suites as suites;
use scorekit_suites::compare::corrected::{self, RunCalibration};
use scorekit_suites::compare::observe::{self, DuplicateId, Observed};
use scorekit_suites::compare::MetricSpec;
use scorekit_suites::settings::{GraspSettings, MintSettings, MuseSettings, StorySettings};
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::Value;
use std::path::{Path, PathBuf};

/// One part of what a run was scored against (a benchmark file, a scoring setting): two runs
/// compare only where all of these agree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BenchmarkInput {
    /// What it is (`dataset`, `queries`, `setting test`, ...).
    pub what: String,
    /// What must be equal (a sha256, a setting's JSON).
    pub key: String,
    /// How to show it in a message (path and sha256, or the setting).
    pub shown: String,
}

/// A scoring suite whose sharded runs can be merged.
pub trait Suite {
    /// The `suite` field of its metrics.json.
    const NAME: &'static str;
    /// How its messages name its items (`MINT items`).
    const TITLE: &'static str;
    /// One line of its items.jsonl.
    type Item: Serialize + DeserializeOwned;
    /// Its own settings in metrics.json (beside [`scorekit_report::RunSettings`]).
    type Settings: Serialize + DeserializeOwned;
    /// What identifies an item within a run (a resumed run skips the finished ones).
    type Key: std::hash::Hash + Eq;
    /// The key of an item.
    fn key(item: &Self::Item) -> Self::Key;
    /// Put `items` in the single-run order, fill `doc.metrics` and `doc.groups` from them with
    /// the settings in `doc`, and render the report, the stdout table and the other files.
    fn outputs(doc: &mut MetricsDoc, items: &mut [Self::Item]) -> Result<Outputs>;
    /// Before `outputs` in a merge: fold into `doc` (the first part's) what the parts'
    /// metrics.json know and their items do not (e.g. story's coverage scope). Nothing by default.
    fn combine(_doc: &mut MetricsDoc, _parts: &[&MetricsDoc]) -> Result<()> {
        Ok(())
    }
    /// In a merge: the suite's own files of the part folders, merged (e.g. story's
    /// calibration.jsonl). None by default.
    fn part_files(_parts: &[PathBuf]) -> Result<Vec<(String, Vec<u8>)>> {
        Ok(Vec::new())
    }
    /// The headline metrics `compare` reads per item (the leaderboard's columns).
    const METRICS: &'static [MetricSpec];
    /// Per result group, the per-item values of [`Suite::METRICS`] (`compare`).
    fn observe(
        doc: &MetricsDoc,
        items: &[Self::Item],
    ) -> std::result::Result<Observed, DuplicateId>;
    /// What the run was scored against: runs that differ here are not compared.
    fn benchmark(doc: &MetricsDoc) -> Result<Vec<BenchmarkInput>>;
    /// The judge calibrations the run recorded, which `compare` uses to correct a difference
    /// for the judge's errors. None by default.
    fn calibration(_doc: &MetricsDoc) -> Result<RunCalibration> {
        Ok(RunCalibration::default())
    }
}

/// The `i`-th input file of a run as a benchmark input called `what`.
fn input(doc: &MetricsDoc, i: usize, what: &str) -> BenchmarkInput {
    match doc.inputs.get(i) {
        Some(f) => BenchmarkInput {
            what: what.to_string(),
            key: f.sha256.clone(),
            shown: format!("{} (sha256 {})", f.path, f.sha256),
        },
        None => BenchmarkInput {
            what: what.to_string(),
            key: String::new(),
            shown: "none".into(),
        },
    }
}

/// One scoring setting as a benchmark input (an absent one compares as `null`).
fn setting<T: Serialize>(name: &str, value: &T) -> BenchmarkInput {
    let v = serde_json::to_value(value).unwrap_or(Value::Null);
    BenchmarkInput {
        what: format!("setting {name}"),
        key: v.to_string(),
        shown: v.to_string(),
    }
}

/// The models of a run (judge, embedder) as one benchmark input: they are the measuring
/// instrument, so runs with different ones are not paired.
fn models(doc: &MetricsDoc) -> BenchmarkInput {
    let shown: Vec<String> = doc
        .models
        .iter()
        .map(|m| format!("{}@{} (sha256 {})", m.id, m.revision, m.sha256))
        .collect();
    BenchmarkInput {
        what: "models".into(),
        key: doc
            .models
            .iter()
            .map(|m| m.sha256.as_str())
            .collect::<Vec<_>>()
            .join(","),
        shown: if shown.is_empty() {
            "none".into()
        } else {
            shown.join(", ")
        },
    }
}

/// `scorekit grasp`.
pub struct Grasp;
/// `scorekit mint`.
pub struct Mint;
/// `scorekit muse`.
pub struct Muse;
/// `scorekit story`.
pub struct Story;

impl Suite for Grasp {
    const NAME: &'static str = "grasp";
    const TITLE: &'static str = "GRASP";
    type Item = suites::grasp::Item;
    type Settings = GraspSettings;
    /// A row of one model's file.
    type Key = (Option<String>, usize);
    fn key(item: &Self::Item) -> Self::Key {
        (item.model.clone(), item.row)
    }
    fn outputs(doc: &mut MetricsDoc, items: &mut [Self::Item]) -> Result<Outputs> {
        super::grasp::outputs(doc, items)
    }
    const METRICS: &'static [MetricSpec] = &observe::GRASP;
    fn observe(_: &MetricsDoc, items: &[Self::Item]) -> std::result::Result<Observed, DuplicateId> {
        observe::grasp(items)
    }
    /// The test (its rows and labels); the responses and the config beside them are the
    /// model's.
    fn benchmark(doc: &MetricsDoc) -> Result<Vec<BenchmarkInput>> {
        let s: Self::Settings = doc.suite_settings()?;
        Ok(vec![
            setting("test", &s.test),
            setting("scorer", &s.scorer),
            setting("semantic", &s.semantic),
        ])
    }
}

impl Suite for Mint {
    const NAME: &'static str = "mint";
    const TITLE: &'static str = "MINT";
    type Item = suites::mint::Item;
    type Settings = MintSettings;
    /// A line of a trajectory file.
    type Key = (String, usize);
    fn key(item: &Self::Item) -> Self::Key {
        (item.file.clone(), item.line)
    }
    fn outputs(doc: &mut MetricsDoc, items: &mut [Self::Item]) -> Result<Outputs> {
        super::mint::outputs(doc, items)
    }
    const METRICS: &'static [MetricSpec] = &observe::MINT;
    fn observe(
        doc: &MetricsDoc,
        items: &[Self::Item],
    ) -> std::result::Result<Observed, DuplicateId> {
        // A run whose settings do not read pairs as not rechecked: `benchmark` reports the
        // settings error before any pairing.
        let rechecked = doc
            .suite_settings::<Self::Settings>()
            .is_ok_and(|s| s.recheck);
        observe::mint(items, rechecked)
    }
    /// MINT's inputs are the trajectories themselves (model outputs); the instances are paired
    /// by task and id, and the verdict rule must agree.
    fn benchmark(doc: &MetricsDoc) -> Result<Vec<BenchmarkInput>> {
        let s: Self::Settings = doc.suite_settings()?;
        Ok(vec![
            setting("recheck", &s.recheck),
            setting("tolerance", &s.tolerance),
            setting("exec_code", &s.exec_code),
        ])
    }
}

impl Suite for Muse {
    const NAME: &'static str = "muse";
    const TITLE: &'static str = "MuSE";
    type Item = suites::muse::Item;
    type Settings = MuseSettings;
    /// The query's idx.
    type Key = i64;
    fn key(item: &Self::Item) -> Self::Key {
        item.idx
    }
    fn outputs(doc: &mut MetricsDoc, items: &mut [Self::Item]) -> Result<Outputs> {
        super::muse::outputs(doc, items)
    }
    const METRICS: &'static [MetricSpec] = &observe::MUSE;
    fn observe(_: &MetricsDoc, items: &[Self::Item]) -> std::result::Result<Observed, DuplicateId> {
        observe::muse(items, "")
    }
    /// queries.json (inputs[0]), the gold flow, the alias table and the scoring rules.
    fn benchmark(doc: &MetricsDoc) -> Result<Vec<BenchmarkInput>> {
        let s: Self::Settings = doc.suite_settings()?;
        Ok(vec![
            input(doc, 0, "queries"),
            setting("flow", &s.flow),
            setting("aliases", &s.aliases),
            setting("final_output", &s.final_output),
            setting("name_mapping", &s.name_mapping),
        ])
    }
}

impl Suite for Story {
    const NAME: &'static str = "story";
    const TITLE: &'static str = "story";
    type Item = suites::story::Item;
    type Settings = StorySettings;
    /// The generation's row.
    type Key = usize;
    fn key(item: &Self::Item) -> Self::Key {
        item.row
    }
    fn outputs(doc: &mut MetricsDoc, items: &mut [Self::Item]) -> Result<Outputs> {
        scorekit_suites::story_outputs::outputs(doc, items)
    }
    fn combine(doc: &mut MetricsDoc, parts: &[&MetricsDoc]) -> Result<()> {
        scorekit_suites::story_outputs::combine_scopes(doc, parts);
        scorekit_suites::story_outputs::combine_calibrations(doc, parts)
    }
    fn part_files(parts: &[PathBuf]) -> Result<Vec<(String, Vec<u8>)>> {
        scorekit_suites::story_outputs::merge_calibration_files(parts)
    }
    const METRICS: &'static [MetricSpec] = &observe::STORY;
    fn observe(_: &MetricsDoc, items: &[Self::Item]) -> std::result::Result<Observed, DuplicateId> {
        observe::story(items)
    }
    /// The dataset (inputs[0]) and the judge and embedder.
    fn benchmark(doc: &MetricsDoc) -> Result<Vec<BenchmarkInput>> {
        doc.suite_settings::<Self::Settings>()?;
        Ok(vec![input(doc, 0, "dataset"), models(doc)])
    }
    /// `settings.calibration` and the groups' `ifsm_corrected` entries.
    fn calibration(doc: &MetricsDoc) -> Result<RunCalibration> {
        corrected::story_calibration(doc)
    }
}

/// A merge's result: the merged items.jsonl and the rebuilt outputs.
pub type Rebuilt = (Vec<u8>, Outputs);

/// One registered suite, its item type erased: its name and how a merge rebuilds its results.
pub struct Registered {
    /// [`Suite::NAME`].
    pub name: &'static str,
    /// Read the items.jsonl of every part folder (in the order given), rebuild metrics and
    /// outputs from the items, and return the merged items.jsonl with the outputs.
    pub rebuild: fn(&mut MetricsDoc, &[PathBuf]) -> Result<Rebuilt>,
    /// [`Suite::combine`].
    pub combine: fn(&mut MetricsDoc, &[&MetricsDoc]) -> Result<()>,
    /// [`Suite::METRICS`].
    pub metrics: &'static [MetricSpec],
    /// Read one run's items.jsonl and return [`Suite::observe`] of it.
    pub observe: fn(&MetricsDoc, &Path) -> Result<Observed>,
    /// [`Suite::benchmark`].
    pub benchmark: fn(&MetricsDoc) -> Result<Vec<BenchmarkInput>>,
    /// [`Suite::calibration`].
    pub calibration: fn(&MetricsDoc) -> Result<RunCalibration>,
}

fn observe_run<S: Suite>(doc: &MetricsDoc, dir: &Path) -> Result<Observed> {
    let items = read_items::<S::Item>(&[dir.to_path_buf()])?;
    S::observe(doc, &items).map_err(|d| {
        InputError::line(
            dir.join("items.jsonl"),
            d.item,
            format!(
                "item id {:?} of group {:?} appears twice; compare pairs items by id",
                d.id, d.group
            ),
        )
        .into()
    })
}

fn rebuild<S: Suite>(doc: &mut MetricsDoc, parts: &[PathBuf]) -> Result<Rebuilt> {
    let mut items = read_items::<S::Item>(parts)?;
    let mut outputs = S::outputs(doc, &mut items)?;
    outputs.files.extend(S::part_files(parts)?);
    Ok((jsonl(&items)?, outputs))
}

/// Every part's items.jsonl, parsed as the suite's items (order: parts, then lines; the suite's
/// `outputs` puts them back into the single-run order).
fn read_items<T: DeserializeOwned>(parts: &[PathBuf]) -> Result<Vec<T>> {
    let mut items = Vec::new();
    for dir in parts {
        let path = dir.join("items.jsonl");
        let text = std::fs::read_to_string(&path)
            .map_err(|e| InputError::file(&path, format!("cannot read: {e}")))?;
        for (i, line) in text.lines().enumerate() {
            if line.trim().is_empty() {
                continue;
            }
            let item: T = serde_json::from_str(line).map_err(|e| {
                InputError::line(&path, i + 1, format!("not an item of this suite: {e}"))
            })?;
            items.push(item);
        }
    }
    Ok(items)
}

const fn registered<S: Suite>() -> Registered {
    Registered {
        name: S::NAME,
        rebuild: rebuild::<S>,
        combine: S::combine,
        metrics: S::METRICS,
        observe: observe_run::<S>,
        benchmark: S::benchmark,
        calibration: S::calibration,
    }
}

/// Every suite `scorekit merge` can merge.
pub static REGISTRY: [Registered; 4] = [
    registered::<Grasp>(),
    registered::<Mint>(),
    registered::<Muse>(),
    registered::<Story>(),
];

/// The registered suite called `name`.
pub fn find(name: &str) -> Option<&'static Registered> {
    REGISTRY.iter().find(|s| s.name == name)
}
