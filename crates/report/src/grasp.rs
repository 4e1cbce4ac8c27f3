//! GRASP: the typed summary of a run (test kind, per-test counts and accuracies, the optional
//! pairwise and semantic summaries) and its markdown writers (the stdout tables and report.md).
//! `suites::grasp` computes these from items and re-exports them.

use super::svg::{interval_chart, ChartRow};
use super::table::{Cell, DataTable};
use super::{percent, Estimate, Table};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::Path;

/// Which upstream test produced the responses; it selects the scorer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum TestKind {
    /// Level 1 yes/no questions (modes standard, cot, oneshot).
    Level1Binary,
    /// Level 1 open-ended questions.
    Level1Open,
    /// Level 2 (intuitive physics), one yes/no item per video.
    Level2,
    /// Level 2 with scene descriptions instead of videos.
    Level2Text,
}

impl TestKind {
    /// All kinds, in the order of the upstream configs.
    pub const ALL: [TestKind; 4] = [
        TestKind::Level1Binary,
        TestKind::Level1Open,
        TestKind::Level2,
        TestKind::Level2Text,
    ];

    /// The upstream `test_name`.
    pub fn name(self) -> &'static str {
        match self {
            TestKind::Level1Binary => "level1-binary",
            TestKind::Level1Open => "level1-open",
            TestKind::Level2 => "level2",
            TestKind::Level2Text => "level2-text",
        }
    }

    /// Parse an upstream `test_name`.
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|k| k.name() == name)
    }

    /// Whether the open-ended scorer applies (only `level1-open`); every other test is yes/no.
    pub fn is_open(self) -> bool {
        self == TestKind::Level1Open
    }

    /// Whether the gold label follows from the `P_`/`IP_` scene prefix.
    pub fn is_level2(self) -> bool {
        matches!(self, TestKind::Level2 | TestKind::Level2Text)
    }
}

/// Yes / No / ? counts of the rows with one gold label (binary tests).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct AnswerCounts {
    /// Rows.
    pub n: usize,
    /// Answered yes.
    pub yes: usize,
    /// Answered no.
    pub no: usize,
    /// Answered neither (counted wrong).
    pub invalid: usize,
}

/// correct / false / ? counts (open-ended tests), with their accuracy.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct VerdictCounts {
    /// Rows.
    pub n: usize,
    /// Only the gold label named.
    pub correct: usize,
    /// Only other labels named.
    #[serde(rename = "false")]
    pub wrong: usize,
    /// Both or no labels named (counted wrong).
    pub invalid: usize,
    /// correct / n (0 when n is 0).
    pub accuracy: f64,
}

/// The metrics of one binary test (paper: Yes / No / ? per gold label, Acc pos/neg/comb).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BinaryGroup {
    /// Acc(comb): correct over all rows of the test; invalid answers stay in the denominator.
    pub accuracy: Estimate,
    /// Acc(pos): answered yes among gold-yes rows (0 with n 0 when there are none, as upstream).
    pub acc_pos: Estimate,
    /// Acc(neg): answered no among gold-no rows (0 with n 0 when there are none, as upstream).
    pub acc_neg: Estimate,
    /// Rows.
    pub n: usize,
    /// Correct rows.
    pub correct: usize,
    /// Rows with no yes/no answer.
    pub invalid: usize,
    /// Answers of the gold-yes rows.
    pub pos: AnswerCounts,
    /// Answers of the gold-no rows.
    pub neg: AnswerCounts,
    /// Chance level of a yes/no question.
    pub chance: f64,
    /// Best score of a constant answer, max(|pos|, |neg|) / n: the real floor when unbalanced.
    pub constant_answer: f64,
    /// Rows whose gold label contradicts the `P_`/`IP_` prefix (Level 2).
    pub gt_mismatches: usize,
}

/// The metrics of one open-ended scene.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OpenGroup {
    /// Acc(comb): Σ correct / Σ rows over every label of the scene.
    pub accuracy: Estimate,
    /// Rows.
    pub n: usize,
    /// Correct rows.
    pub correct: usize,
    /// Rows naming only wrong labels.
    #[serde(rename = "false")]
    pub wrong: usize,
    /// Rows naming both or no labels.
    pub invalid: usize,
    /// 1/k for a scene of k labels: a model that always names one valid label.
    pub chance: f64,
    /// Counts per gold label, labels sorted.
    pub labels: BTreeMap<String, VerdictCounts>,
}

/// Metrics of one test: binary or open-ended.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Group {
    /// Yes/no test.
    Binary(BinaryGroup),
    /// Open-ended scene.
    Open(OpenGroup),
}

impl Group {
    /// The group's accuracy (Acc(comb)).
    pub fn accuracy(&self) -> &Estimate {
        match self {
            Group::Binary(g) => &g.accuracy,
            Group::Open(g) => &g.accuracy,
        }
    }
}

/// Paired P/IP accuracy (MVPBench's `paired_accuracy`): NOT the GRASP paper's metric.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Pairwise {
    /// Share of (test, video index) pairs whose P and IP rows are both correct.
    pub paired_accuracy: Estimate,
    /// Complete pairs.
    pub pairs: usize,
    /// Pairs with both rows correct.
    pub both_correct: usize,
    /// Rows with no twin of the other prefix (scored in the paper metric, not here).
    pub unpaired_rows: Vec<usize>,
    /// Per test: paired accuracy.
    pub groups: BTreeMap<String, Estimate>,
}

/// Everything `scorekit grasp` reports, computed from the items alone.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    /// The test type scored.
    pub test: TestKind,
    /// Correct over all rows. For `level1-open` this is the combined open-ended accuracy,
    /// Σ correct / Σ rows (not upstream's printed `Acc (comb)`, see docs/grasp.md).
    pub accuracy: Estimate,
    /// Rows.
    pub n: usize,
    /// Correct rows.
    pub correct: usize,
    /// Valid but wrong answers.
    #[serde(rename = "false")]
    pub wrong: usize,
    /// Rows with no usable answer.
    pub invalid: usize,
    /// Level 2: rows whose gold label contradicts the scene prefix, every one of them.
    pub gt_mismatch_rows: Vec<usize>,
    /// Per test, sorted by name.
    pub groups: BTreeMap<String, Group>,
    /// `--pairwise`: paired accuracy (not the paper's metric).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pairwise: Option<Pairwise>,
}

/// Where a semantic label is accepted.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Thresholds {
    /// The best label's similarity must be at least this.
    pub min_similarity: f64,
    /// ... and exceed the runner-up label's by at least this.
    pub margin: f64,
}

/// Semantic counts of a group of items.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SemanticGroup {
    /// Correct under semantic matching over all rows (invalid rows stay in the denominator).
    pub semantic_accuracy: Estimate,
    /// Rows.
    pub n: usize,
    /// Correct rows under semantic matching.
    pub correct: usize,
    /// Wrong rows under semantic matching.
    #[serde(rename = "false")]
    pub wrong: usize,
    /// Still invalid.
    pub invalid: usize,
    /// Strict-invalid rows that had a semantic reading (named no label, non-empty).
    pub eligible: usize,
    /// Rows whose verdict changed (invalid -> correct or false).
    pub changed: usize,
}

/// Everything `--semantic` reports, from items alone.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SemanticSummary {
    /// All rows.
    pub all: SemanticGroup,
    /// Per test (scene), sorted.
    pub groups: BTreeMap<String, SemanticGroup>,
    /// Rows whose verdict changed, in row order.
    pub changed_rows: Vec<usize>,
}

/// One answer the semantic reading looked at, as the report lists it.
#[derive(Debug, Clone, PartialEq)]
pub struct RereadRow {
    /// 1-based data row.
    pub row: usize,
    /// Scene as given.
    pub scene: String,
    /// Gold label.
    pub gt: String,
    /// The last turn that was embedded.
    pub answer: String,
    /// The most similar label.
    pub best: String,
    /// Similarity of `best`.
    pub similarity: f64,
    /// The runner-up label.
    pub runner_up: String,
    /// Similarity of `runner_up`.
    pub runner_up_similarity: f64,
    /// The semantic verdict: correct, false, or `None` (below the thresholds, still invalid).
    pub correct: Option<bool>,
    /// Whether the semantic verdict differs from the strict one.
    pub changed: bool,
}

fn ci(e: &Estimate) -> String {
    format!("[{}, {}]", percent(e.ci_low), percent(e.ci_high))
}

/// The per-test table(s) as the paper lays them out (also printed on stdout).
pub fn tables(s: &Summary) -> String {
    let mut out = String::new();
    if s.test.is_open() {
        let mut t = Table::new(&[
            "Scene",
            "Label",
            "n",
            "Correct",
            "False",
            "?",
            "Acc",
            "Acc (comb)",
            "95% CI (comb)",
            "Chance",
        ]);
        for (scene, g) in &s.groups {
            let Group::Open(g) = g else { continue };
            for (label, c) in &g.labels {
                t.row(&[
                    scene.clone(),
                    label.clone(),
                    c.n.to_string(),
                    c.correct.to_string(),
                    c.wrong.to_string(),
                    c.invalid.to_string(),
                    // No row of this label: no accuracy (metrics.json keeps upstream's 0).
                    if c.n == 0 {
                        "n/a".into()
                    } else {
                        percent(c.accuracy)
                    },
                    String::new(),
                    String::new(),
                    String::new(),
                ]);
            }
            t.row(&[
                scene.clone(),
                "(comb)".into(),
                g.n.to_string(),
                g.correct.to_string(),
                g.wrong.to_string(),
                g.invalid.to_string(),
                String::new(),
                percent(g.accuracy.value),
                ci(&g.accuracy),
                percent(g.chance),
            ]);
        }
        t.row(&[
            "All".to_string(),
            "(comb)".into(),
            s.n.to_string(),
            s.correct.to_string(),
            s.wrong.to_string(),
            s.invalid.to_string(),
            String::new(),
            percent(s.accuracy.value),
            ci(&s.accuracy),
            String::new(),
        ]);
        out.push_str(&t.render());
    } else {
        // Upstream's layout: a (pos.) and a (neg.) row per test, Acc (comb) repeated on both.
        let mut t = Table::new(&[
            "Test",
            "Yes",
            "No",
            "?",
            "Acc",
            "Acc (comb)",
            "95% CI (comb)",
        ]);
        for (name, g) in &s.groups {
            let Group::Binary(g) = g else { continue };
            for (side, c, acc) in [("pos.", &g.pos, &g.acc_pos), ("neg.", &g.neg, &g.acc_neg)] {
                t.row(&[
                    format!("{name} ({side})"),
                    c.yes.to_string(),
                    c.no.to_string(),
                    c.invalid.to_string(),
                    // No row of this gold label: no accuracy (metrics.json keeps upstream's 0).
                    if acc.n == 0 {
                        "n/a".into()
                    } else {
                        percent(acc.value)
                    },
                    percent(g.accuracy.value),
                    ci(&g.accuracy),
                ]);
            }
        }
        let (yes, no) = s.groups.values().fold((0, 0), |(y, n), g| match g {
            Group::Binary(g) => (y + g.pos.yes + g.neg.yes, n + g.pos.no + g.neg.no),
            Group::Open(_) => (y, n),
        });
        t.row(&[
            format!("All ({} rows)", s.n),
            yes.to_string(),
            no.to_string(),
            s.invalid.to_string(),
            String::new(),
            percent(s.accuracy.value),
            ci(&s.accuracy),
        ]);
        out.push_str(&t.render());
    }
    if let Some(p) = &s.pairwise {
        out.push_str(
            "\nPaired accuracy (MVPBench-style, NOT the GRASP paper's metric: a P/IP pair of \
             the same test and video index counts only if both are right)\n\n",
        );
        let mut t = Table::new(&["Test", "Pairs", "Paired acc", "95% CI"]);
        for (name, e) in &p.groups {
            t.row(&[name.clone(), e.n.to_string(), percent(e.value), ci(e)]);
        }
        t.row(&[
            "All".to_string(),
            p.pairs.to_string(),
            percent(p.paired_accuracy.value),
            ci(&p.paired_accuracy),
        ]);
        out.push_str(&t.render());
        if !p.unpaired_rows.is_empty() {
            out.push_str(&format!(
                "\n{} row(s) without a P/IP twin are left out of the pairs (they count in the table above).\n",
                p.unpaired_rows.len()
            ));
        }
    }
    out
}

/// The warning for a run holding less than half of the rows its test expects (the scenes'
/// expected counts added up), with the counts; `None` otherwise.
pub fn short_run_warning(scenes: &[SceneRows]) -> Option<String> {
    let expected: usize = scenes.iter().filter_map(|s| s.expected).sum();
    let rows: usize = scenes
        .iter()
        .filter(|s| s.expected.is_some())
        .map(|s| s.rows)
        .sum();
    (expected > 0 && rows * 2 < expected).then(|| {
        format!(
            "the responses hold {rows} of the {expected} rows this test expects ({}%, at \
             upstream's default of 128 videos per scene folder): the accuracies are over the rows \
             present only (\"Rows per scene\" in report.md)",
            percent(rows as f64 / expected as f64)
        )
    })
}

/// Rows of one scene: expected by the test's config and present in the input.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SceneRows {
    /// Scene name (current upstream name).
    pub scene: String,
    /// Rows the test's config produces for it (upstream's default of 128 videos a folder);
    /// `None` for a scene the test does not know (`--allow-unknown-scenes`).
    pub expected: Option<usize>,
    /// Rows present.
    pub rows: usize,
}

/// report.md section: expected and present rows per scene, renamed and unknown scenes.
pub fn scenes_report(
    scenes: &[SceneRows],
    renamed: &BTreeMap<String, usize>,
    unknown: &BTreeMap<String, usize>,
) -> String {
    let mut r = String::from(
        "
## Rows per scene

Expected: rows the test's config produces with upstream's default of 128 videos per scene folder (not checked against the released videos).

",
    );
    let mut t = Table::new(&["scene", "expected", "rows"]);
    for s in scenes {
        t.row(&[
            s.scene.clone(),
            s.expected
                .map_or_else(|| "unknown scene".into(), |e| e.to_string()),
            s.rows.to_string(),
        ]);
    }
    r.push_str(&t.render());
    if !renamed.is_empty() {
        r.push_str(
            "
Old upstream scene names mapped to the current ones (rows): ",
        );
        let v: Vec<String> = renamed.iter().map(|(k, n)| format!("{k} ({n})")).collect();
        r.push_str(&v.join(", "));
        r.push_str(
            ".
",
        );
    }
    if !unknown.is_empty() {
        r.push_str(
            "
Scenes the test does not know, kept as their own groups (rows): ",
        );
        let v: Vec<String> = unknown.iter().map(|(k, n)| format!("{k} ({n})")).collect();
        r.push_str(&v.join(", "));
        r.push_str(
            ".
",
        );
    }
    r
}

/// report.md: what the scorer counts, the tables, and the rows whose gold contradicts their scene
/// prefix. `source`: where the test type came from; `mode`: the config's mode, if any.
pub fn report(s: &Summary, source: &str, mode: Option<&str>, file: &Path) -> String {
    let mut r = format!(
        "# GRASP {}\n\nResponses: `{}` ({} rows; test type from {}{}).\n\n",
        s.test.name(),
        file.display(),
        s.n,
        source,
        mode.map(|m| format!(", mode {m}")).unwrap_or_default()
    );
    if s.test.is_open() {
        r.push_str(
            "Open-ended scorer: Correct = only the gold label named, False = only other labels, \
             ? = both or none (counted wrong). Acc(comb) of a scene and of All = Σ correct / Σ rows \
             (upstream prints Σ correct over the scene / rows of the current label instead). \
             Percentages.\n\n",
        );
    } else {
        r.push_str(
            "Binary scorer: first word of the last turn must be yes or no; ? = anything else \
             (counted wrong). (pos.) = gold yes rows, (neg.) = gold no rows; Acc of a row = \
             its share answered right, Acc (comb) = correct / rows of the test. Percentages; \
             chance level 50%.\n\n",
        );
    }
    r.push_str(&tables(s));
    if !s.gt_mismatch_rows.is_empty() {
        let rows: Vec<String> = s.gt_mismatch_rows.iter().map(|r| r.to_string()).collect();
        r.push_str(&format!(
            "\n**Warning:** {} row(s) have a gt that contradicts the P_/IP_ scene prefix \
             (scored with the given gt, as upstream; results written before upstream 10ac5f2 \
             have gt=no everywhere): rows {}.\n",
            rows.len(),
            rows.join(", ")
        ));
    }
    r
}

/// The stdout/report table: strict and semantic accuracy per test.
pub fn semantic_table(
    s: &SemanticSummary,
    strict: &BTreeMap<String, f64>,
    strict_all: f64,
) -> String {
    let mut t = Table::new(&[
        "Scene",
        "n",
        "Strict acc",
        "Semantic acc",
        "95% CI (semantic)",
        "Re-read",
        "Changed",
        "Still ?",
    ]);
    for (name, g) in &s.groups {
        t.row(&[
            name.clone(),
            g.n.to_string(),
            percent(strict.get(name).copied().unwrap_or(0.0)),
            percent(g.semantic_accuracy.value),
            ci(&g.semantic_accuracy),
            g.eligible.to_string(),
            g.changed.to_string(),
            g.invalid.to_string(),
        ]);
    }
    t.row(&[
        "All".into(),
        s.all.n.to_string(),
        percent(strict_all),
        percent(s.all.semantic_accuracy.value),
        ci(&s.all.semantic_accuracy),
        s.all.eligible.to_string(),
        s.all.changed.to_string(),
        s.all.invalid.to_string(),
    ]);
    format!(
        "\nSemantic accuracy (--semantic; NOT the paper's metric: answers naming no label \
         re-read by embedding similarity)\n\n{}",
        t.render()
    )
}

fn clip(s: &str, n: usize) -> String {
    let one_line = s.split_whitespace().collect::<Vec<_>>().join(" ");
    if one_line.chars().count() <= n {
        one_line
    } else {
        one_line.chars().take(n).collect::<String>() + "…"
    }
}

/// report.md section: the semantic table, the thresholds, and every re-read item (changed ones
/// first) with its answer, label and similarities, for a reader to check.
pub fn semantic_report(
    s: &SemanticSummary,
    reread: &[RereadRow],
    strict: &BTreeMap<String, f64>,
    strict_all: f64,
    th: Option<Thresholds>,
) -> String {
    let mut r = String::from("\n## Semantic accuracy (`--semantic`)\n");
    r.push_str(
        "\nNot the paper's metric. Answers that the strict rule marks invalid because they name \
         no label are embedded and compared with descriptions of the scene's labels \
         (`data/grasp/label_descriptions.json`); the best label is taken when its cosine \
         similarity is at least the minimum and beats the runner-up by the margin. Answers \
         naming several labels stay invalid. The strict accuracy above is unchanged.\n",
    );
    if let Some(th) = th {
        r.push_str(&format!(
            "\nMinimum similarity {}, margin {}.\n",
            th.min_similarity, th.margin
        ));
    }
    r.push_str(&semantic_table(s, strict, strict_all));
    if reread.is_empty() {
        r.push_str("\nNo answer needed a semantic reading.\n");
        return r;
    }
    r.push_str(&format!(
        "\n### Re-read answers ({} changed of {})\n\n",
        s.changed_rows.len(),
        reread.len()
    ));
    let mut t = Table::new(&[
        "Row",
        "Scene",
        "Gold",
        "Answer",
        "Best (sim)",
        "Runner-up (sim)",
        "Semantic verdict",
    ]);
    let mut ordered: Vec<&RereadRow> = reread.iter().collect();
    ordered.sort_by_key(|i| (!i.changed, i.row));
    for i in ordered {
        t.row(&[
            i.row.to_string(),
            i.scene.clone(),
            i.gt.clone(),
            clip(&i.answer, 60),
            format!("{} ({:.4})", i.best, i.similarity),
            format!("{} ({:.4})", i.runner_up, i.runner_up_similarity),
            match i.correct {
                Some(true) => "correct".into(),
                Some(false) => "false".into(),
                None => "invalid (below threshold)".into(),
            },
        ]);
    }
    r.push_str(&t.render());
    r
}

/// The main table as the shared table model (tables.tex, table.csv): one row per test with its
/// accuracy (Acc (comb)), chance level and, for yes/no tests, Acc on each gold label.
pub fn main_table(s: &Summary) -> DataTable {
    let mut t = DataTable::new(
        &format!(
            "GRASP {}: accuracy per test (%, 95% bootstrap intervals)",
            s.test.name()
        ),
        &[
            "test",
            "n",
            "accuracy",
            "chance",
            "acc (pos.)",
            "acc (neg.)",
            "invalid",
        ],
    );
    for (name, g) in &s.groups {
        let (pos, neg, invalid, chance, n) = match g {
            Group::Binary(b) => (
                Cell::RateCi(b.acc_pos),
                Cell::RateCi(b.acc_neg),
                b.invalid,
                b.chance,
                b.n,
            ),
            Group::Open(o) => (Cell::Missing, Cell::Missing, o.invalid, o.chance, o.n),
        };
        t.push(vec![
            Cell::Text(name.clone()),
            Cell::Count(n as u64),
            Cell::RateCi(*g.accuracy()),
            Cell::Rate(chance),
            pos,
            neg,
            Cell::Count(invalid as u64),
        ]);
    }
    t.push(vec![
        Cell::Text("all".into()),
        Cell::Count(s.n as u64),
        Cell::RateCi(s.accuracy),
        Cell::Missing,
        Cell::Missing,
        Cell::Missing,
        Cell::Count(s.invalid as u64),
    ]);
    t
}

/// accuracy.svg: accuracy per test with its interval, the test's chance level marked.
pub fn accuracy_chart(s: &Summary) -> String {
    let mut rows: Vec<ChartRow> = s
        .groups
        .iter()
        .map(|(name, g)| ChartRow {
            name: name.clone(),
            values: vec![Some(*g.accuracy())],
            reference: Some(match g {
                Group::Binary(b) => b.chance,
                Group::Open(o) => o.chance,
            }),
        })
        .collect();
    rows.push(ChartRow {
        name: "all".into(),
        values: vec![Some(s.accuracy)],
        reference: None,
    });
    interval_chart(
        &format!("GRASP {}: accuracy per test (%)", s.test.name()),
        &["accuracy"],
        &rows,
        "chance",
    )
}

/// The GRASP paper's Table 2 layout for several models scored on one test: one row per model,
/// one column per test (accuracy, %), then the model's accuracy over all rows.
pub fn table2(models: &[(String, Summary)]) -> DataTable {
    let tests: std::collections::BTreeSet<&String> =
        models.iter().flat_map(|(_, s)| s.groups.keys()).collect();
    let test = models.first().map_or("", |(_, s)| s.test.name());
    let mut headers = vec!["model".to_string()];
    headers.extend(tests.iter().map(|t| t.to_string()));
    headers.push("all".into());
    let mut t = DataTable::new(
        &format!("GRASP {test}: accuracy (%) per model and test (Table 2 layout)"),
        &headers,
    );
    for (name, s) in models {
        let mut row = vec![Cell::Text(name.clone())];
        row.extend(
            tests
                .iter()
                .map(|t| Cell::rate(s.groups.get(*t).map(|g| g.accuracy().value))),
        );
        row.push(Cell::Rate(s.accuracy.value));
        t.push(row);
    }
    let mut chance = vec![Cell::Text("chance".into())];
    chance.extend(tests.iter().map(|t| {
        let c = models.iter().find_map(|(_, s)| {
            s.groups.get(*t).map(|g| match g {
                Group::Binary(b) => b.chance,
                Group::Open(o) => o.chance,
            })
        });
        Cell::rate(c)
    }));
    t.push(chance);
    t
}

/// accuracy.svg for several models: one band per test, one dot per model, chance marked.
pub fn models_chart(models: &[(String, Summary)]) -> String {
    let tests: std::collections::BTreeSet<&String> =
        models.iter().flat_map(|(_, s)| s.groups.keys()).collect();
    let names: Vec<&str> = models.iter().map(|(n, _)| n.as_str()).collect();
    let rows: Vec<ChartRow> = tests
        .iter()
        .map(|t| ChartRow {
            name: t.to_string(),
            values: models
                .iter()
                .map(|(_, s)| s.groups.get(*t).map(|g| *g.accuracy()))
                .collect(),
            reference: models.iter().find_map(|(_, s)| {
                s.groups.get(*t).map(|g| match g {
                    Group::Binary(b) => b.chance,
                    Group::Open(o) => o.chance,
                })
            }),
        })
        .collect();
    let test = models.first().map_or("", |(_, s)| s.test.name());
    interval_chart(
        &format!("GRASP {test}: accuracy per test and model (%)"),
        &names,
        &rows,
        "chance",
    )
}
