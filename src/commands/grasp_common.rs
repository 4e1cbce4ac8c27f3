//! What `scorekit grasp` does alike for one results file and for several (`grasp_models`):
//! resolve the test, read and check a results file (scene names, rows), score it, and the
//! settings and headline numbers of metrics.json.

use crate::cli::{GraspArgs, GraspTest};
use scorekit_core::error::{Error, InputError, Result};
use scorekit_io::{read_jsonl, read_text, CsvStream, Record};
use scorekit_report::MetricsDoc;
use scorekit_suites::grasp::names::SceneStatus;
use scorekit_suites::grasp::{self, Row, RowIssue, Summary, SummaryOptions, TestKind};
use scorekit_suites::settings::GraspSettings;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The file upstream writes beside `results.csv`; its `test_name` selects the scorer.
const CONFIG_NAME: &str = "test_config.yaml";

/// Columns the scorer needs; `prompt` and `video_file` are optional (video_file pairs P/IP rows).
const REQUIRED: [&str; 3] = ["scene", "gt", "response"];

/// What the scene check of one file did, kept small: counts, and the lines to show.
#[derive(Debug, Default)]
pub(super) struct NameNotes {
    /// `old -> new` -> rows mapped from an old upstream name.
    renamed: BTreeMap<String, usize>,
    /// The file line of the first mapped row.
    first_renamed: Option<usize>,
    /// Rows with a scene the test does not know, and the lines of the first five.
    unknown: usize,
    unknown_lines: Vec<usize>,
}

/// One stderr line for mapped old scene names and one for unknown scenes kept as groups.
pub(super) fn warn_names(file: &Path, notes: &NameNotes) {
    let at = |line: usize| format!("{}:{line}", file.display());
    if let Some(first) = notes.first_renamed {
        let v: Vec<String> = notes
            .renamed
            .iter()
            .map(|(k, n)| format!("{k} ({n} rows)"))
            .collect();
        eprintln!(
            "warning: old upstream scene names mapped to the current ones: {} (first at {}; renamed_from in items.jsonl)",
            v.join(", "),
            at(first)
        );
    }
    if notes.unknown > 0 {
        let shown: Vec<String> = notes.unknown_lines.iter().map(|&l| at(l)).collect();
        eprintln!(
            "warning: {} row(s) have a scene the test does not know, kept as their own group(s) (--allow-unknown-scenes): {}{}",
            notes.unknown,
            shown.join(", "),
            if notes.unknown > 5 { ", ..." } else { "" }
        );
    }
}

fn from_flag(t: GraspTest) -> TestKind {
    match t {
        GraspTest::Level1Binary => TestKind::Level1Binary,
        GraspTest::Level1Open => TestKind::Level1Open,
        GraspTest::Level2 => TestKind::Level2,
        GraspTest::Level2Text => TestKind::Level2Text,
    }
}

/// `--test`, else `test_name` of the `test_config.yaml` beside the responses, else a usage error.
pub(super) fn resolve_test(flag: Option<GraspTest>, responses: &Path) -> Result<ResolvedTest> {
    let dir = match responses.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let config_path = dir.join(CONFIG_NAME);
    let has_config = config_path.is_file();
    if let Some(flag) = flag {
        let kind = from_flag(flag);
        // The flag wins; a config that agrees still tells the mode (cot, oneshot).
        let cfg = if has_config {
            read_config(&config_path).ok()
        } else {
            None
        };
        let agrees = matches!(&cfg, Some((Some(c), _)) if *c == kind);
        if let Some((Some(c), _)) = &cfg {
            if !agrees {
                eprintln!(
                    "warning: --test {} overrides test_name {} of {}",
                    kind.name(),
                    c.name(),
                    config_path.display()
                );
            }
        }
        return Ok(ResolvedTest {
            kind,
            source: "--test".into(),
            mode: cfg.filter(|_| agrees).and_then(|(_, m)| m),
            config: agrees.then_some(config_path),
        });
    }
    if !has_config {
        return Err(Error::usage(format!(
            "cannot tell the test type of {}: pass --test {} or put upstream's {CONFIG_NAME} beside it",
            responses.display(),
            test_names().replace(", ", "|")
        )));
    }
    match read_config(&config_path)? {
        (Some(kind), mode) => Ok(ResolvedTest {
            kind,
            source: config_path.display().to_string(),
            config: Some(config_path),
            mode,
        }),
        (None, _) => Err(InputError::file(
            &config_path,
            format!("no test_name; expected one of {}", test_names()),
        )
        .into()),
    }
}

fn test_names() -> String {
    TestKind::ALL
        .iter()
        .map(|k| k.name())
        .collect::<Vec<_>>()
        .join(", ")
}

/// `test_name` and `mode` of an upstream test config: flat `key: value` lines, so no YAML crate.
fn read_config(path: &Path) -> Result<(Option<TestKind>, Option<String>)> {
    let text = read_text(path)?;
    let (mut kind, mut mode) = (None, None);
    for (line, l) in text.lines() {
        let Some((key, value)) = l.split_once(':') else {
            continue;
        };
        let value = value.split(" #").next().unwrap_or("").trim();
        let value = value.trim_matches(|c| c == '"' || c == '\'');
        match key.trim() {
            "test_name" => {
                kind = Some(TestKind::from_name(value).ok_or_else(|| {
                    InputError::field(
                        path,
                        line,
                        "test_name",
                        format!("unknown test {value:?}; expected one of {}", test_names()),
                    )
                })?)
            }
            "mode" => mode = Some(value.to_string()),
            _ => {}
        }
    }
    Ok((kind, mode))
}

/// Read the rows (CSV, or JSONL by extension or by a leading `{`) and the file line of each.
/// Turns a row's issue into an error naming `file`, its line and the field.
pub(super) fn locator<'a>(file: &'a Path, lines: &'a [usize]) -> impl Fn(RowIssue) -> Error + 'a {
    move |issue: RowIssue| {
        let line = lines.get(issue.row.wrapping_sub(1)).copied().unwrap_or(0);
        InputError::field(file, line, issue.field, issue.message).into()
    }
}

/// Read one results file, check its scene names (old names mapped, a typo refused: it would
/// split a group) and score it: the rows (only when `keep_rows`: `--semantic` re-reads the
/// responses), the file line of every row, and the items. [`score_rows`] collected.
pub(super) fn read_and_score(
    file: &Path,
    kind: TestKind,
    allow_unknown_scenes: bool,
    keep_rows: bool,
) -> Result<(Vec<Row>, Vec<usize>, Vec<grasp::Item>)> {
    let (mut rows, mut lines, mut items) = (Vec::new(), Vec::new(), Vec::new());
    let notes = score_rows(file, kind, allow_unknown_scenes, &mut |row, item, line| {
        lines.push(line);
        items.push(item);
        if keep_rows {
            rows.push(row);
        }
        Ok(())
    })?;
    warn_names(file, &notes);
    Ok((rows, lines, items))
}

/// Read one results file row by row, check each row's scene against the test's names and
/// score it as it is read, handing `sink` the row, its item and its file line, in file order.
/// A CSV file is streamed, so nothing here grows with the file but the notes' counts. Returns
/// what the scene check did, for [`warn_names`]; a file with no data row is an input error.
pub(super) fn score_rows(
    file: &Path,
    kind: TestKind,
    allow_unknown_scenes: bool,
    sink: &mut dyn FnMut(Row, grasp::Item, usize) -> Result<()>,
) -> Result<NameNotes> {
    let names = grasp::names::SceneNames::new(kind, allow_unknown_scenes);
    let mut scorer = grasp::Scorer::new(kind);
    let mut notes = NameNotes::default();
    let mut any = false;
    for_each_row(file, &mut |mut row: Row, line: usize| -> Result<()> {
        any = true;
        let located = |issue: RowIssue| -> Error {
            InputError::field(file, line, issue.field, issue.message).into()
        };
        let status = names.check(&mut row).map_err(located)?;
        let mut item = scorer.score(&row).map_err(located)?;
        match status {
            SceneStatus::Known => {}
            SceneStatus::Renamed(old) => {
                *notes
                    .renamed
                    .entry(format!("{old} -> {}", row.scene))
                    .or_default() += 1;
                notes.first_renamed.get_or_insert(line);
                item.renamed_from = Some(old);
            }
            SceneStatus::Unknown => {
                notes.unknown += 1;
                if notes.unknown_lines.len() < 5 {
                    notes.unknown_lines.push(line);
                }
                item.unknown_scene = true;
            }
        }
        sink(row, item, line)
    })?;
    if !any {
        return Err(InputError::file(file, "no data rows to score").into());
    }
    Ok(notes)
}

/// Hand every data row of a results file (CSV, or JSONL by extension or by a leading `{`) to
/// `take`, with its file line, in file order; CSV one record at a time.
fn for_each_row(path: &Path, take: &mut dyn FnMut(Row, usize) -> Result<()>) -> Result<()> {
    if is_jsonl(path)? {
        for record in read_jsonl(path)? {
            let row = jsonl_row(&record)?;
            take(row, record.line)?;
        }
        return Ok(());
    }
    let mut csv = CsvStream::open(path, &REQUIRED)?;
    let col = |name: &str| csv.column(name);
    let (scene, gt, response) = (col("scene"), col("gt"), col("response"));
    let video = col("video_file");
    while let Some(mut rec) = csv.next_record()? {
        let mut cell = |i: Option<usize>| i.map(|i| std::mem::take(&mut rec.fields[i]));
        let row = Row {
            row: rec.row,
            scene: cell(scene).unwrap_or_default(),
            gt: cell(gt).unwrap_or_default(),
            response: cell(response).unwrap_or_default(),
            video_file: cell(video),
        };
        take(row, rec.line)?;
    }
    Ok(())
}

fn is_jsonl(path: &Path) -> Result<bool> {
    match path.extension().and_then(|e| e.to_str()) {
        Some("jsonl" | "ndjson") => return Ok(true),
        Some("csv") => return Ok(false),
        _ => {}
    }
    use std::io::Read;
    let mut head = [0u8; 64];
    let n = std::fs::File::open(path)
        .and_then(|mut f| f.read(&mut head))
        .map_err(|e| InputError::file(path, format!("cannot read file: {e}")))?;
    let head = head[..n]
        .strip_prefix(b"\xef\xbb\xbf")
        .unwrap_or(&head[..n]);
    Ok(head.iter().find(|b| !b.is_ascii_whitespace()) == Some(&b'{'))
}

/// A JSONL record: `scene` and `gt` strings; `response` a string or null (no answer: invalid);
/// `video_file` optional.
fn jsonl_row(r: &Record) -> Result<Row, InputError> {
    r.require("response")?;
    Ok(Row {
        row: r.row,
        scene: r.str("scene")?.to_string(),
        gt: r.str("gt")?.to_string(),
        response: r.opt_str("response")?.unwrap_or_default().to_string(),
        video_file: r.opt_str("video_file")?.map(str::to_string),
    })
}

/// The flags that depend on the test type, checked in this one place for a run of one results
/// file and of several, before any file is scored.
pub(super) fn check_options(args: &GraspArgs, kind: TestKind) -> Result<()> {
    if args.semantic && (args.responses.len() > 1 || args.labels.is_some()) {
        return Err(Error::usage(
            "--semantic scores one --responses file at a time; run it per model",
        ));
    }
    if args.semantic && !kind.is_open() {
        return Err(Error::usage(format!(
            "--semantic re-reads open-ended answers (level1-open); the test here is {}",
            kind.name()
        )));
    }
    if args.pairwise && !kind.is_level2() {
        return Err(Error::usage(format!(
            "--pairwise pairs P_/IP_ videos of Level 2; the test here is {}",
            kind.name()
        )));
    }
    Ok(())
}

/// The settings of a run of `test` (no `--semantic` yet: [`GraspSettings::semantic`] is false).
pub(super) fn settings(test: &ResolvedTest, opts: &SummaryOptions) -> GraspSettings {
    GraspSettings {
        test: test.kind.name().to_string(),
        test_source: test.source.clone(),
        mode: test.mode.clone(),
        scorer: if test.kind.is_open() {
            "open"
        } else {
            "binary"
        }
        .into(),
        pairwise: opts.pairwise,
        semantic: false,
        allow_unknown_scenes: false,
        models: None,
        device: None,
        quantize: None,
        tf32: false,
        semantic_embedder: None,
        semantic_thresholds: None,
        semantic_descriptions: None,
        semantic_rule: None,
    }
}

/// The summary options a run recorded (its report and `scorekit merge` recompute with them).
pub(super) fn summary_options(doc: &MetricsDoc, s: &GraspSettings) -> Result<SummaryOptions> {
    let run = doc.run_settings()?;
    Ok(SummaryOptions {
        bootstrap: run.bootstrap,
        seed: run.seed,
        pairwise: s.pairwise,
    })
}

pub(super) fn headline(s: &Summary) -> serde_json::Map<String, Value> {
    let mut m = serde_json::Map::new();
    m.insert("accuracy".into(), json!(s.accuracy));
    m.insert("n".into(), json!(s.n));
    m.insert("correct".into(), json!(s.correct));
    m.insert("false".into(), json!(s.wrong));
    m.insert("invalid".into(), json!(s.invalid));
    if s.test.is_level2() {
        m.insert("gt_mismatches".into(), json!(s.gt_mismatch_rows.len()));
        m.insert("gt_mismatch_rows".into(), json!(s.gt_mismatch_rows));
    }
    if let Some(p) = &s.pairwise {
        m.insert(
            "pairwise".into(),
            json!({
                "note": "NOT the GRASP paper's metric: MVPBench-style paired accuracy; a P_/IP_ \
                         pair of the same test and video index scores 1 only if both rows are correct",
                "paired_accuracy": p.paired_accuracy,
                "pairs": p.pairs,
                "both_correct": p.both_correct,
                "unpaired_rows": p.unpaired_rows,
            }),
        );
    }
    m
}

/// The test type and where it came from.
pub(super) struct ResolvedTest {
    pub(super) kind: TestKind,
    /// `flag` or the config path.
    pub(super) source: String,
    /// The config file, when one was read.
    pub(super) config: Option<PathBuf>,
    /// `mode` of the config (level1-binary: standard, cot, oneshot).
    pub(super) mode: Option<String>,
}
