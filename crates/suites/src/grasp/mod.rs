//! GRASP (Jassim et al. 2023): accuracy of yes/no and open-ended answers about simulated videos.
//!
//! Plain functions over plain data: [`score`] turns input rows into per-item verdicts
//! ([`Item`]), and [`summarize`] computes every metric from those items alone, so a merge of
//! sharded runs can recompute the same numbers from `items.jsonl`. No CLI and no file I/O in
//! this file: the pipeline around it is in its modules (reading a results file in `input`, the
//! run in `run`, metrics and reports in `outputs` and `table2`, the [`suite::Grasp`] suite).

pub mod input;
mod metrics;
pub mod names;
pub mod outputs;
pub mod pipeline;
pub mod rules;
pub mod semantic;
pub mod suite;
pub mod table2;
pub mod texts;

use rules::{binary_answer, binary_verdict, judge_open, open_labels, Answer, OpenError, Verdict};
pub use scorekit_report::grasp::{
    AnswerCounts, BinaryGroup, Group, OpenGroup, Pairwise, SceneRows, Summary, TestKind,
    VerdictCounts,
};
use scorekit_report::{bootstrap_mean, Estimate};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap};

/// One input row, with every cell as a plain string (never pandas' NaN).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Row {
    /// 1-based data row in the input file.
    pub row: usize,
    /// Test/scene name, e.g. `Color` or `P_Gravity`.
    pub scene: String,
    /// Gold label.
    pub gt: String,
    /// All responses joined with `<SEP>` (empty when the model gave none).
    pub response: String,
    /// Video paths joined with `,`, when the input has the column.
    pub video_file: Option<String>,
}

/// A row that cannot be scored: which row, which field, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RowIssue {
    /// 1-based data row.
    pub row: usize,
    /// The input field at fault.
    pub field: &'static str,
    /// What was wrong and what was expected.
    pub message: String,
}

/// What the scorer read from a response: a yes/no answer, or the open-ended labels it names.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Parsed {
    /// Binary tests.
    Answer(Answer),
    /// Open-ended tests: labels named (after the Direction exception), sorted.
    Labels(Vec<String>),
}

/// The verdict on one input row: one line of `items.jsonl`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Item {
    /// 1-based data row in the input file.
    pub row: usize,
    /// Scene as given.
    pub scene: String,
    /// The test the row belongs to: the scene after its last `_` (`P_Gravity` -> `Gravity`).
    pub test: String,
    /// Gold label as given (scored as given, also when it contradicts the scene prefix).
    pub gt: String,
    /// What the scorer read from the last turn.
    pub parsed: Parsed,
    /// correct, false or invalid.
    pub verdict: Verdict,
    /// The input's video paths, when it has them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub video_file: Option<String>,
    /// Level 2: the video index that pairs a `P_` row with its `IP_` row (`#k` for the k-th row
    /// of the scene when the input has no video path, as in `level2-text`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pair_index: Option<String>,
    /// Level 2: the gold label contradicts the `P_`/`IP_` prefix (results of upstream before
    /// 10ac5f2 have `gt=no` everywhere).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub gt_mismatch: bool,
    /// `--semantic`: the embedding reading of a strict-invalid answer that names no label
    /// (its verdict counts only in the separate semantic accuracy). Boxed: most items have
    /// none, and inline it made every item 120 bytes larger (GRASP holds its items: 1M rows).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub semantic: Option<Box<semantic::SemanticVerdict>>,
    /// The scene's old upstream name, as the input gave it (`scene` is the current name).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub renamed_from: Option<String>,
    /// The test does not know the scene (kept as its own group by `--allow-unknown-scenes`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub unknown_scene: bool,
    /// The model (its `--labels` name) when several response files are scored in one run;
    /// `row` is then the row in that model's file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
}

/// Rows per scene: what the test's config expects (upstream's default video count) and how
/// many came, for every known scene and every other scene among the items.
pub fn scene_rows(test: TestKind, items: &[Item]) -> Vec<SceneRows> {
    let mut came: BTreeMap<String, usize> = BTreeMap::new();
    for i in items {
        *count_of(&mut came, &i.scene) += 1;
    }
    scene_rows_from(test, &came)
}

/// [`scene_rows`] from the rows counted per scene ([`SceneCounts::rows`]).
pub fn scene_rows_from(test: TestKind, came: &BTreeMap<String, usize>) -> Vec<SceneRows> {
    let known = names::known_scenes(test);
    let mut out: Vec<SceneRows> = known
        .iter()
        .map(|(s, e)| SceneRows {
            scene: s.clone(),
            expected: Some(*e),
            rows: came.get(s.as_str()).copied().unwrap_or(0),
        })
        .collect();
    out.extend(
        came.iter()
            .filter(|(s, _)| !known.contains_key(s.as_str()))
            .map(|(s, n)| SceneRows {
                scene: s.to_string(),
                expected: None,
                rows: *n,
            }),
    );
    out
}

/// The group (test) of a scene: the part after its last `_`.
pub fn test_of(scene: &str) -> &str {
    scene.rsplit('_').next().unwrap_or(scene)
}

/// Level 2 gold label from the scene prefix: `P_` -> yes, `IP_` -> no, anything else `None`.
pub fn level2_gold(scene: &str) -> Option<bool> {
    match scene.split_once('_') {
        Some(("P", rest)) if !rest.is_empty() => Some(true),
        Some(("IP", rest)) if !rest.is_empty() => Some(false),
        _ => None,
    }
}

/// The video index of a row: the file stem of its last non-empty video path
/// (`data/videos/level2/P_Gravity/017.mp4` -> `017`), shared by a P video and its IP twin.
pub fn video_index(video_file: &str) -> Option<&str> {
    let path = video_file
        .rsplit(',')
        .map(str::trim)
        .find(|p| !p.is_empty())?;
    let name = path.rsplit(['/', '\\']).next().unwrap_or(path);
    let stem = match name.rfind('.') {
        Some(i) if i > 0 => &name[..i],
        _ => name,
    };
    (!stem.is_empty()).then_some(stem)
}

/// Score every row. Fails on the first row whose gold label or scene the test cannot score.
pub fn score(test: TestKind, rows: &[Row]) -> Result<Vec<Item>, RowIssue> {
    let mut scorer = Scorer::new(test);
    rows.iter().map(|r| scorer.score(r)).collect()
}

/// Scores rows one at a time, in file order, as they are read: [`score_row`] plus Level 2's
/// pair index (the video index, else the row's ordinal within its scene). [`score`] over a
/// whole file is this, row after row.
pub struct Scorer {
    test: TestKind,
    /// Rows seen per scene (Level 2 only).
    ordinal: HashMap<String, usize>,
}

impl Scorer {
    /// A scorer for `test`, before the first row.
    pub fn new(test: TestKind) -> Self {
        Scorer {
            test,
            ordinal: HashMap::new(),
        }
    }

    /// Score the next row of the file.
    pub fn score(&mut self, r: &Row) -> Result<Item, RowIssue> {
        let mut item = score_row(self.test, r)?;
        if self.test.is_level2() {
            let k = match self.ordinal.get_mut(r.scene.as_str()) {
                Some(k) => k,
                None => self.ordinal.entry(r.scene.clone()).or_default(),
            };
            *k += 1;
            item.pair_index = Some(match r.video_file.as_deref().and_then(video_index) {
                Some(ix) => ix.to_string(),
                None => format!("#{k}"),
            });
        }
        Ok(item)
    }
}

/// Score one row on its own (no pairing).
pub fn score_row(test: TestKind, r: &Row) -> Result<Item, RowIssue> {
    let issue = |field: &'static str, message: String| RowIssue {
        row: r.row,
        field,
        message,
    };
    let mut gt_mismatch = false;
    let (parsed, verdict) = if test.is_open() {
        let j = judge_open(&r.scene, &r.gt, &r.response).map_err(|e| match e {
            OpenError::UnknownScene => issue(
                "scene",
                format!(
                    "{:?} has no open-ended question; expected one of {}",
                    r.scene,
                    open_scene_names()
                ),
            ),
            OpenError::UnknownLabel => issue(
                "gt",
                format!(
                    "{:?} is not a label of {}; expected one of {}",
                    r.gt,
                    r.scene,
                    open_labels(&r.scene)
                        .unwrap_or_default()
                        .iter()
                        .map(|(l, _)| *l)
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            ),
        })?;
        let labels = j.found.iter().map(|l| l.to_string()).collect();
        (Parsed::Labels(labels), j.verdict)
    } else {
        let gold_yes = match r.gt.as_str() {
            "yes" => true,
            "no" => false,
            other => {
                return Err(issue(
                    "gt",
                    format!("{other:?} is not a gold label of a yes/no test; expected yes or no"),
                ))
            }
        };
        if test.is_level2() {
            let from_scene = level2_gold(&r.scene).ok_or_else(|| {
                issue(
                    "scene",
                    format!(
                        "{:?} is not a {} scene; expected P_<Test> or IP_<Test>",
                        r.scene,
                        test.name()
                    ),
                )
            })?;
            gt_mismatch = from_scene != gold_yes;
        }
        let answer = binary_answer(&r.response);
        (Parsed::Answer(answer), binary_verdict(answer, gold_yes))
    };
    Ok(Item {
        row: r.row,
        scene: r.scene.clone(),
        test: test_of(&r.scene).to_string(),
        gt: r.gt.clone(),
        parsed,
        verdict,
        video_file: r.video_file.clone(),
        pair_index: None,
        gt_mismatch,
        semantic: None,
        renamed_from: None,
        unknown_scene: false,
        model: None,
    })
}

fn open_scene_names() -> String {
    rules::OPEN_CHOICES
        .iter()
        .map(|(s, _)| *s)
        .collect::<Vec<_>>()
        .join(", ")
}

/// How the summary is computed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SummaryOptions {
    /// Bootstrap resamples for the 95% intervals (0: intervals collapse to the value).
    pub bootstrap: usize,
    /// Bootstrap seed.
    pub seed: u64,
    /// Also compute the paired P/IP accuracy (Level 2 only; not the paper's metric).
    pub pairwise: bool,
}

/// A rate with interval; no values gives 0 with n 0, as upstream's `Acc` of an empty group.
fn rate(values: &[f64], opts: &SummaryOptions) -> Estimate {
    bootstrap_mean(values, opts.bootstrap, opts.seed).unwrap_or(Estimate {
        value: 0.0,
        n: 0,
        ci_low: 0.0,
        ci_high: 0.0,
    })
}

fn frac(a: usize, b: usize) -> f64 {
    if b == 0 {
        0.0
    } else {
        a as f64 / b as f64
    }
}

/// Compute every metric from the items. Fails only for `pairwise` on an ambiguous pair.
pub fn summarize(
    test: TestKind,
    items: &[Item],
    opts: &SummaryOptions,
) -> Result<Summary, RowIssue> {
    let mut tally = Tally::new(test, *opts);
    for it in items {
        tally.add(it, 0);
    }
    tally.finish().map(|(s, _)| s).map_err(|(issue, _)| issue)
}

/// Every metric of [`summarize`], gathered one item at a time in the single-run order, so a run
/// can score and write its items as it reads them: what it keeps is counts and one byte per
/// item and group (the bootstrap resamples outcomes by position), plus a slot per Level 2 pair
/// with `pairwise`. [`summarize`] is this over a slice.
pub struct Tally {
    test: TestKind,
    opts: SummaryOptions,
    counts: VerdictCounts,
    /// Hits (1) and misses (0) of every item, in order.
    all: Vec<u8>,
    groups: BTreeMap<String, GroupTally>,
    gt_mismatch_rows: Vec<usize>,
    pairs: Option<PairTally>,
    scenes: SceneCounts,
}

/// Rows per scene, and the renamed and unknown scenes, counted as items pass.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SceneCounts {
    /// Rows per scene (as scored: current names).
    pub rows: BTreeMap<String, usize>,
    /// `old -> new` -> rows, for scenes mapped from an old upstream name.
    pub renamed: BTreeMap<String, usize>,
    /// Scene -> rows, for scenes the test does not know (`--allow-unknown-scenes`).
    pub unknown: BTreeMap<String, usize>,
}

enum GroupTally {
    Binary {
        pos: AnswerCounts,
        neg: AnswerCounts,
        all: Vec<u8>,
        pos_hits: Vec<u8>,
        neg_hits: Vec<u8>,
        gt_mismatches: usize,
    },
    Open {
        labels: BTreeMap<String, VerdictCounts>,
        all: Vec<u8>,
    },
}

/// One side of a Level 2 pair as seen: its row and whether it was correct.
#[derive(Clone, Copy)]
struct PairSide {
    row: usize,
    correct: bool,
}

/// (test, video index) -> the P and IP rows seen; and the first index that came twice on one
/// side.
#[derive(Default)]
struct PairTally {
    slots: BTreeMap<(String, String), [Option<PairSide>; 2]>,
    duplicate: Option<(RowIssue, usize)>,
}

impl Tally {
    /// Nothing counted yet, for `test` with `opts` (`opts.pairwise` keeps the pair slots).
    pub fn new(test: TestKind, opts: SummaryOptions) -> Self {
        Tally {
            test,
            opts,
            counts: VerdictCounts::default(),
            all: Vec::new(),
            groups: BTreeMap::new(),
            gt_mismatch_rows: Vec::new(),
            pairs: opts.pairwise.then(PairTally::default),
            scenes: SceneCounts::default(),
        }
    }

    /// Count the next item of the single-run order; `line` is its file line (0 where unknown),
    /// named by a pairing issue.
    pub fn add(&mut self, it: &Item, line: usize) {
        let h = u8::from(it.verdict == Verdict::Correct);
        self.counts.n += 1;
        match it.verdict {
            Verdict::Correct => self.counts.correct += 1,
            Verdict::False => self.counts.wrong += 1,
            Verdict::Invalid => self.counts.invalid += 1,
        }
        self.all.push(h);
        if it.gt_mismatch {
            self.gt_mismatch_rows.push(it.row);
        }
        let open = self.test.is_open();
        let group = match self.groups.get_mut(it.test.as_str()) {
            Some(g) => g,
            None => self.groups.entry(it.test.clone()).or_insert(if open {
                GroupTally::Open {
                    labels: BTreeMap::new(),
                    all: Vec::new(),
                }
            } else {
                GroupTally::Binary {
                    pos: AnswerCounts::default(),
                    neg: AnswerCounts::default(),
                    all: Vec::new(),
                    pos_hits: Vec::new(),
                    neg_hits: Vec::new(),
                    gt_mismatches: 0,
                }
            }),
        };
        match group {
            GroupTally::Binary {
                pos,
                neg,
                all,
                pos_hits,
                neg_hits,
                gt_mismatches,
            } => {
                let (counts, hits) = if it.gt == "yes" {
                    (pos, pos_hits)
                } else {
                    (neg, neg_hits)
                };
                counts.n += 1;
                match it.parsed {
                    Parsed::Answer(Answer::Yes) => counts.yes += 1,
                    Parsed::Answer(Answer::No) => counts.no += 1,
                    _ => counts.invalid += 1,
                }
                hits.push(h);
                all.push(h);
                *gt_mismatches += usize::from(it.gt_mismatch);
            }
            GroupTally::Open { labels, all } => {
                let c = match labels.get_mut(it.gt.as_str()) {
                    Some(c) => c,
                    None => labels.entry(it.gt.clone()).or_default(),
                };
                c.n += 1;
                match it.verdict {
                    Verdict::Correct => c.correct += 1,
                    Verdict::False => c.wrong += 1,
                    Verdict::Invalid => c.invalid += 1,
                }
                all.push(h);
            }
        }
        if let Some(pairs) = &mut self.pairs {
            pairs.add(it, line);
        }
        let scenes = &mut self.scenes;
        *count_of(&mut scenes.rows, &it.scene) += 1;
        if let Some(old) = &it.renamed_from {
            *scenes
                .renamed
                .entry(format!("{old} -> {}", it.scene))
                .or_default() += 1;
        }
        if it.unknown_scene {
            *count_of(&mut scenes.unknown, &it.scene) += 1;
        }
    }

    /// The summary and the scene counts; a Level 2 index that came twice on one side (with
    /// `pairwise`) is an issue naming its row, and the file line it was added with.
    pub fn finish(self) -> Result<(Summary, SceneCounts), (RowIssue, usize)> {
        let opts = &self.opts;
        let groups = self
            .groups
            .into_iter()
            .map(|(name, g)| {
                let g = match g {
                    GroupTally::Binary {
                        pos,
                        neg,
                        all,
                        pos_hits,
                        neg_hits,
                        gt_mismatches,
                    } => Group::Binary(BinaryGroup {
                        accuracy: rate_of(&all, opts),
                        acc_pos: rate_of(&pos_hits, opts),
                        acc_neg: rate_of(&neg_hits, opts),
                        n: all.len(),
                        correct: pos.yes + neg.no,
                        invalid: pos.invalid + neg.invalid,
                        pos,
                        neg,
                        chance: 0.5,
                        constant_answer: frac(pos.n.max(neg.n), all.len()),
                        gt_mismatches,
                    }),
                    GroupTally::Open { mut labels, all } => {
                        for c in labels.values_mut() {
                            c.accuracy = frac(c.correct, c.n);
                        }
                        let sum =
                            |f: fn(&VerdictCounts) -> usize| labels.values().map(f).sum::<usize>();
                        Group::Open(OpenGroup {
                            accuracy: rate_of(&all, opts),
                            n: all.len(),
                            correct: sum(|c| c.correct),
                            wrong: sum(|c| c.wrong),
                            invalid: sum(|c| c.invalid),
                            chance: open_labels(&name).map_or(0.0, |l| 1.0 / l.len() as f64),
                            labels,
                        })
                    }
                };
                (name, g)
            })
            .collect();
        let pairwise = match self.pairs {
            Some(p) => Some(p.finish(opts)?),
            None => None,
        };
        let c = self.counts;
        Ok((
            Summary {
                test: self.test,
                accuracy: rate_of(&self.all, opts),
                n: c.n,
                correct: c.correct,
                wrong: c.wrong,
                invalid: c.invalid,
                gt_mismatch_rows: self.gt_mismatch_rows,
                groups,
                pairwise,
            },
            self.scenes,
        ))
    }
}

/// The count of `key` in `map`, allocating the key only the first time it is seen.
fn count_of<'m>(map: &'m mut BTreeMap<String, usize>, key: &str) -> &'m mut usize {
    if !map.contains_key(key) {
        map.insert(key.to_string(), 0);
    }
    map.get_mut(key).expect("inserted above")
}

/// [`rate`] of hits kept as bytes (0 or 1, converted exactly).
fn rate_of(hits: &[u8], opts: &SummaryOptions) -> Estimate {
    let values: Vec<f64> = hits.iter().map(|&h| f64::from(h)).collect();
    rate(&values, opts)
}

impl PairTally {
    /// Pair a `P_` row with the `IP_` row of the same test and video index; a (test, index,
    /// prefix) that occurs twice cannot be paired: the first such row is the issue.
    fn add(&mut self, it: &Item, line: usize) {
        let Some(index) = it.pair_index.as_deref() else {
            return;
        };
        let side = match level2_gold(&it.scene) {
            Some(true) => 0,
            Some(false) => 1,
            None => return,
        };
        if self.duplicate.is_some() {
            return;
        }
        let key = (it.test.clone(), index.to_string());
        let slot = &mut self.slots.entry(key).or_default()[side];
        if let Some(PairSide { row: first, .. }) = *slot {
            self.duplicate = Some((
                RowIssue {
                    row: it.row,
                    field: "video_file",
                    message: format!(
                        "--pairwise: {} video index {index} also on row {first}; cannot pair P and IP rows",
                        it.scene
                    ),
                },
                line,
            ));
            return;
        }
        *slot = Some(PairSide {
            row: it.row,
            correct: it.verdict == Verdict::Correct,
        });
    }

    /// A pair scores 1 only if both rows are correct.
    fn finish(self, opts: &SummaryOptions) -> Result<Pairwise, (RowIssue, usize)> {
        if let Some(d) = self.duplicate {
            return Err(d);
        }
        let mut unpaired_rows = Vec::new();
        let mut per_test: BTreeMap<&str, Vec<f64>> = BTreeMap::new();
        for ((test, _), slot) in &self.slots {
            match slot {
                [Some(p), Some(ip)] => {
                    per_test
                        .entry(test)
                        .or_default()
                        .push(if p.correct && ip.correct { 1.0 } else { 0.0 });
                }
                [Some(x), None] | [None, Some(x)] => unpaired_rows.push(x.row),
                [None, None] => {}
            }
        }
        unpaired_rows.sort_unstable();
        let all: Vec<f64> = per_test.values().flatten().copied().collect();
        Ok(Pairwise {
            paired_accuracy: rate(&all, opts),
            pairs: all.len(),
            both_correct: all.iter().filter(|&&x| x == 1.0).count(),
            unpaired_rows,
            groups: per_test
                .iter()
                .map(|(t, v)| (t.to_string(), rate(v, opts)))
                .collect(),
        })
    }
}

/// The key `--shard` splits by: a Level 2 row goes with its P_/IP_ twin (test and video
/// index), other rows by scene and video (by scene and row where the input has no video).
pub fn shard_key(i: &Item) -> String {
    let key = shard_key_in_file(i);
    match &i.model {
        Some(m) => format!("{m}\u{1f}{key}"),
        None => key,
    }
}

fn shard_key_in_file(i: &Item) -> String {
    match (&i.pair_index, &i.video_file) {
        (Some(p), _) => format!("{}\u{1f}{p}", i.test),
        (None, Some(v)) => format!("{}\u{1f}{v}", i.scene),
        (None, None) => format!("{}\u{1f}#{}", i.scene, i.row),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(n: usize, scene: &str, gt: &str, response: &str, video: Option<&str>) -> Row {
        Row {
            row: n,
            scene: scene.into(),
            gt: gt.into(),
            response: response.into(),
            video_file: video.map(str::to_string),
        }
    }

    const NO_BOOT: SummaryOptions = SummaryOptions {
        bootstrap: 0,
        seed: 0,
        pairwise: false,
    };

    #[test]
    fn test_names_round_trip() {
        for k in TestKind::ALL {
            assert_eq!(TestKind::from_name(k.name()), Some(k));
        }
        assert_eq!(TestKind::from_name("level1_binary"), None);
        assert_eq!(
            serde_json::to_string(&TestKind::Level2Text).unwrap(),
            "\"level2-text\""
        );
    }

    #[test]
    fn groups_and_level2_gold() {
        assert_eq!(test_of("P_Gravity"), "Gravity");
        assert_eq!(test_of("IP_GravityInertia2"), "GravityInertia2");
        assert_eq!(test_of("Color"), "Color");
        assert_eq!(level2_gold("P_Gravity"), Some(true));
        assert_eq!(level2_gold("IP_SupportGravity"), Some(false));
        assert_eq!(level2_gold("Gravity"), None);
        assert_eq!(level2_gold("P_"), None);
        assert_eq!(level2_gold("p_Gravity"), None);
    }

    #[test]
    fn video_index_is_the_file_stem_of_the_last_video() {
        assert_eq!(
            video_index("data/videos/level2/P_Gravity/017.mp4"),
            Some("017")
        );
        // cot/oneshot: the second turn has no video and contributes an empty string.
        assert_eq!(
            video_index("data/videos/level1/ColorRed/003.mp4,"),
            Some("003")
        );
        assert_eq!(video_index(r"C:\v\IP_Gravity\005.mp4"), Some("005"));
        assert_eq!(video_index(""), None);
        assert_eq!(video_index(","), None);
    }

    #[test]
    fn binary_rows_and_bad_gold() {
        let rows = [
            row(1, "Color", "yes", "Yes.", None),
            row(2, "Color", "no", "yes", None),
            row(3, "Color", "no", "", None),
        ];
        let items = score(TestKind::Level1Binary, &rows).unwrap();
        let v: Vec<_> = items.iter().map(|i| i.verdict).collect();
        assert_eq!(v, [Verdict::Correct, Verdict::False, Verdict::Invalid]);
        assert_eq!(items[2].parsed, Parsed::Answer(Answer::Invalid));
        assert_eq!(items[0].pair_index, None);
        for bad in ["Yes", "true", "", "NA", " yes"] {
            let e =
                score_row(TestKind::Level1Binary, &row(7, "Color", bad, "yes", None)).unwrap_err();
            assert_eq!((e.row, e.field), (7, "gt"), "{bad:?}");
            assert!(e.message.contains("expected yes or no"), "{}", e.message);
        }
    }

    #[test]
    fn level2_checks_gold_against_prefix_but_scores_the_given_gold() {
        // Results from upstream before 10ac5f2: every gt is "no".
        let rows = [
            row(1, "P_Gravity", "no", "No", Some("v/P_Gravity/000.mp4")),
            row(2, "IP_Gravity", "no", "No", Some("v/IP_Gravity/000.mp4")),
        ];
        let items = score(TestKind::Level2, &rows).unwrap();
        assert!(items[0].gt_mismatch && !items[1].gt_mismatch);
        assert_eq!(items[0].verdict, Verdict::Correct);
        let s = summarize(TestKind::Level2, &items, &NO_BOOT).unwrap();
        assert_eq!(s.gt_mismatch_rows, [1]);
        assert_eq!(s.accuracy.value, 1.0);
        let Group::Binary(g) = &s.groups["Gravity"] else {
            panic!()
        };
        assert_eq!(g.gt_mismatches, 1);
        assert_eq!((g.pos.n, g.neg.n), (0, 2));
        assert_eq!(g.constant_answer, 1.0);
        // A scene without the prefix is not a Level 2 scene.
        let e = score_row(TestKind::Level2, &row(3, "Gravity", "yes", "yes", None)).unwrap_err();
        assert_eq!((e.row, e.field), (3, "scene"));
    }

    #[test]
    fn binary_metrics_as_the_paper_lays_them_out() {
        // Gravity: pos = [yes, no, ?], neg = [no, no, yes, ?] -> Acc(pos)=1/3, Acc(neg)=2/4,
        // Acc(comb)=3/7. Inertia: one correct P row.
        let rows = [
            row(1, "P_Gravity", "yes", "Yes", None),
            row(2, "P_Gravity", "yes", "No", None),
            row(3, "P_Gravity", "yes", "Maybe", None),
            row(4, "IP_Gravity", "no", "no", None),
            row(5, "IP_Gravity", "no", "NO!", None),
            row(6, "IP_Gravity", "no", "yes", None),
            row(7, "IP_Gravity", "no", "", None),
            row(8, "P_Inertia", "yes", "yes", None),
        ];
        let items = score(TestKind::Level2, &rows).unwrap();
        let s = summarize(TestKind::Level2, &items, &NO_BOOT).unwrap();
        assert_eq!(s.groups.keys().collect::<Vec<_>>(), ["Gravity", "Inertia"]);
        let Group::Binary(g) = &s.groups["Gravity"] else {
            panic!()
        };
        assert_eq!(
            g.pos,
            AnswerCounts {
                n: 3,
                yes: 1,
                no: 1,
                invalid: 1
            }
        );
        assert_eq!(
            g.neg,
            AnswerCounts {
                n: 4,
                yes: 1,
                no: 2,
                invalid: 1
            }
        );
        assert_eq!(g.acc_pos.value, 1.0 / 3.0);
        assert_eq!(g.acc_neg.value, 0.5);
        assert_eq!(g.accuracy.value, 3.0 / 7.0);
        assert_eq!((g.n, g.correct, g.invalid), (7, 3, 2));
        let Group::Binary(i) = &s.groups["Inertia"] else {
            panic!()
        };
        // No gold-no rows: Acc(neg) is 0 as upstream, with n 0 to tell it apart.
        assert_eq!((i.acc_neg.value, i.acc_neg.n), (0.0, 0));
        assert_eq!((s.n, s.correct, s.wrong, s.invalid), (8, 4, 2, 2));
        assert_eq!(s.accuracy.value, 0.5);
    }

    #[test]
    fn open_combined_accuracy_is_total_correct_over_total_rows() {
        // Direction: forward 3 rows (2 correct), left 1 row (1 correct) -> 3/4. Upstream would
        // print for label "left" 3 correct / 1 row = 300% (Σ correct over the current label).
        let rows = [
            row(1, "Direction", "forward", "Forward.", None),
            row(2, "Direction", "forward", "up", None),
            row(3, "Direction", "forward", "It rolls down", None),
            row(4, "Direction", "left", "From right to left", None),
            row(5, "Shape", "ball", "a sphere or a cube", None),
        ];
        let items = score(TestKind::Level1Open, &rows).unwrap();
        assert_eq!(
            items[4].parsed,
            Parsed::Labels(vec!["ball".into(), "cube".into()])
        );
        let s = summarize(TestKind::Level1Open, &items, &NO_BOOT).unwrap();
        let Group::Open(d) = &s.groups["Direction"] else {
            panic!()
        };
        assert_eq!(d.accuracy.value, 0.75);
        assert_eq!(d.chance, 0.25);
        assert_eq!(d.labels["forward"].correct, 2);
        assert_eq!(d.labels["forward"].wrong, 1);
        assert_eq!(d.labels["left"].accuracy, 1.0);
        let Group::Open(sh) = &s.groups["Shape"] else {
            panic!()
        };
        assert_eq!((sh.invalid, sh.chance), (1, 0.5));
        assert_eq!(s.accuracy.value, 3.0 / 5.0);
        assert_eq!((s.correct, s.wrong, s.invalid), (3, 1, 1));
    }

    #[test]
    fn open_rows_with_unknown_scene_or_label_name_the_field() {
        let e = score(
            TestKind::Level1Open,
            &[
                row(1, "Color", "red", "red", None),
                row(2, "Movement", "moving", "moving", None),
            ],
        )
        .unwrap_err();
        assert_eq!((e.row, e.field), (2, "scene"));
        let e =
            score_row(TestKind::Level1Open, &row(4, "Shape", "cylinder", "", None)).unwrap_err();
        assert_eq!((e.row, e.field), (4, "gt"));
        assert!(e.message.contains("ball, cube"), "{}", e.message);
    }

    #[test]
    fn pairwise_pairs_by_test_and_video_index() {
        let opts = SummaryOptions {
            pairwise: true,
            ..NO_BOOT
        };
        let rows = [
            row(1, "P_Gravity", "yes", "yes", Some("v/P_Gravity/000.mp4")),
            row(2, "P_Gravity", "yes", "yes", Some("v/P_Gravity/001.mp4")),
            row(3, "IP_Gravity", "no", "yes", Some("v/IP_Gravity/001.mp4")),
            row(4, "IP_Gravity", "no", "no", Some("v/IP_Gravity/000.mp4")),
            row(5, "P_Inertia", "yes", "yes", Some("v/P_Inertia/000.mp4")),
        ];
        let items = score(TestKind::Level2, &rows).unwrap();
        let s = summarize(TestKind::Level2, &items, &opts).unwrap();
        let p = s.pairwise.unwrap();
        assert_eq!((p.pairs, p.both_correct), (2, 1));
        assert_eq!(p.paired_accuracy.value, 0.5);
        assert_eq!(p.unpaired_rows, [5]);
        assert_eq!(p.groups["Gravity"].value, 0.5);
        // The paper metric is unchanged by pairing: 4 of 5 rows correct.
        assert_eq!(s.accuracy.value, 0.8);

        // Without video paths (level2-text) the k-th P row pairs with the k-th IP row.
        let text = [
            row(1, "P_Gravity", "yes", "yes", None),
            row(2, "IP_Gravity", "no", "no", None),
        ];
        let items = score(TestKind::Level2Text, &text).unwrap();
        assert_eq!(items[1].pair_index.as_deref(), Some("#1"));
        let s = summarize(TestKind::Level2Text, &items, &opts).unwrap();
        assert_eq!(s.pairwise.unwrap().both_correct, 1);

        // The same video twice cannot be paired.
        let dup = [
            row(1, "P_Gravity", "yes", "yes", Some("v/P_Gravity/000.mp4")),
            row(2, "P_Gravity", "yes", "no", Some("v/P_Gravity/000.mp4")),
        ];
        let items = score(TestKind::Level2, &dup).unwrap();
        let e = summarize(TestKind::Level2, &items, &opts).unwrap_err();
        assert_eq!((e.row, e.field), (2, "video_file"));
        assert!(e.message.contains("row 1"), "{}", e.message);
    }

    /// Fed one item at a time, the tally names the line a duplicate pair came with, and counts
    /// the scenes (renamed and unknown too) as `scene_rows` does from the items.
    #[test]
    fn tally_names_the_line_of_a_duplicate_and_counts_scenes() {
        let opts = SummaryOptions {
            pairwise: true,
            ..NO_BOOT
        };
        let dup = [
            row(1, "P_Gravity", "yes", "yes", Some("v/P_Gravity/000.mp4")),
            row(2, "P_Gravity", "yes", "no", Some("v/P_Gravity/000.mp4")),
        ];
        let mut tally = Tally::new(TestKind::Level2, opts);
        for (it, line) in score(TestKind::Level2, &dup).unwrap().iter().zip([7, 9]) {
            tally.add(it, line);
        }
        let Err((e, line)) = tally.finish() else {
            panic!("a duplicate pair is an issue")
        };
        assert_eq!((e.row, e.field, line), (2, "video_file", 9));

        let rows = [
            row(1, "P_Gravity", "yes", "yes", None),
            row(2, "P_Gravity", "yes", "no", None),
            row(3, "IP_Gravty", "no", "no", None),
        ];
        let mut items = score(TestKind::Level2, &rows).unwrap();
        items[1].renamed_from = Some("P_OldGravity".into());
        items[2].unknown_scene = true;
        let mut tally = Tally::new(TestKind::Level2, NO_BOOT);
        for it in &items {
            tally.add(it, 0);
        }
        let (summary, scenes) = tally.finish().ok().unwrap();
        assert_eq!(
            summary,
            summarize(TestKind::Level2, &items, &NO_BOOT).unwrap()
        );
        assert_eq!(
            scene_rows_from(TestKind::Level2, &scenes.rows),
            scene_rows(TestKind::Level2, &items)
        );
        assert_eq!(scenes.renamed["P_OldGravity -> P_Gravity"], 1);
        assert_eq!(scenes.unknown["IP_Gravty"], 1);
    }

    #[test]
    fn metrics_recompute_from_items_json() {
        // A merge reads items.jsonl back: the summary must come out identical.
        let rows = [
            row(1, "Color", "red", "Red", None),
            row(2, "Color", "blue", "green", None),
            row(3, "Shape", "cube", "box or ball", None),
        ];
        let opts = SummaryOptions {
            bootstrap: 200,
            seed: 9,
            pairwise: false,
        };
        let items = score(TestKind::Level1Open, &rows).unwrap();
        let text: String = items
            .iter()
            .map(|i| serde_json::to_string(i).unwrap() + "\n")
            .collect();
        let back: Vec<Item> = text
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(back, items);
        assert_eq!(
            summarize(TestKind::Level1Open, &back, &opts).unwrap(),
            summarize(TestKind::Level1Open, &items, &opts).unwrap()
        );
        let line: serde_json::Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
        assert_eq!(
            line,
            serde_json::json!({"row": 1, "scene": "Color", "test": "Color", "gt": "red",
                               "parsed": ["red"], "verdict": "correct"})
        );
    }
}
