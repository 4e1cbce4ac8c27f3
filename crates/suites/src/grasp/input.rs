//! A GRASP run's inputs: the flags resolved ([`Input`]), the test type of a results file
//! (`--test`, else upstream's `test_config.yaml` beside it), the flags that depend on it, and a
//! results file read, its scene names checked and its rows scored.

use super::names::{SceneNames, SceneStatus};
use super::{Item, Row, RowIssue, Scorer, TestKind};
use crate::settings::GraspSettings;
use scorekit_core::error::{Error, InputError, Result};
use scorekit_io::{read_jsonl, read_text, CsvStream, Record};
use scorekit_report::RunOptions;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The file upstream writes beside `results.csv`; its `test_name` selects the scorer.
const CONFIG_NAME: &str = "test_config.yaml";

/// Columns the scorer needs; `prompt` and `video_file` are optional (video_file pairs P/IP rows).
const REQUIRED: [&str; 3] = ["scene", "gt", "response"];

/// `scorekit grasp`'s flags, resolved: what a run reads and how it scores. The model flags stay
/// with the binary, which loads the `--semantic` embedder over its runtime.
#[derive(Debug, Clone)]
pub struct Input {
    /// The results files (`--responses`); several are laid out as the paper's Table 2.
    pub responses: Vec<PathBuf>,
    /// The models' names of the files, in order (`--labels`).
    pub labels: Option<Vec<String>>,
    /// The test type (`--test`); without it, each file's `test_config.yaml` tells.
    pub test: Option<TestKind>,
    /// MVPBench-style paired accuracy (`--pairwise`, Level 2).
    pub pairwise: bool,
    /// Answers naming no label re-read by embeddings (`--semantic`, level1-open).
    pub semantic: bool,
    /// Scenes the test does not know kept as their own groups (`--allow-unknown-scenes`).
    pub allow_unknown_scenes: bool,
    /// The embedder as named (`--embedder`), recorded by a `--semantic` run.
    pub embedder: String,
    /// The output flags.
    pub out: RunOptions,
}

impl Input {
    /// Whether the run lays several results files out as Table 2 (several files, or `--labels`).
    pub fn is_table2(&self) -> bool {
        self.responses.len() > 1 || self.labels.is_some()
    }

    /// The flags that depend on the test type, checked in this one place for a run of one
    /// results file and of several, before any file is scored.
    pub(super) fn check(&self, kind: TestKind) -> Result<()> {
        if self.semantic && self.is_table2() {
            return Err(Error::usage(
                "--semantic scores one --responses file at a time; run it per model",
            ));
        }
        if self.semantic && !kind.is_open() {
            return Err(Error::usage(format!(
                "--semantic re-reads open-ended answers (level1-open); the test here is {}",
                kind.name()
            )));
        }
        if self.pairwise && !kind.is_level2() {
            return Err(Error::usage(format!(
                "--pairwise pairs P_/IP_ videos of Level 2; the test here is {}",
                kind.name()
            )));
        }
        Ok(())
    }
}

/// The test type and where it came from.
pub(super) struct ResolvedTest {
    pub(super) kind: TestKind,
    /// `--test` or the config path.
    pub(super) source: String,
    /// The config file, when one was read.
    pub(super) config: Option<PathBuf>,
    /// `mode` of the config (level1-binary: standard, cot, oneshot).
    pub(super) mode: Option<String>,
}

impl ResolvedTest {
    /// The settings a run of this test records (no `--semantic` yet: `semantic` is false).
    pub(super) fn recorded(&self, pairwise: bool) -> GraspSettings {
        GraspSettings {
            test: self.kind.name().to_string(),
            test_source: self.source.clone(),
            mode: self.mode.clone(),
            scorer: if self.kind.is_open() {
                "open"
            } else {
                "binary"
            }
            .into(),
            pairwise,
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
}

/// `flag` (`--test`), else `test_name` of the `test_config.yaml` beside the responses, else a
/// usage error. A config that disagrees with the flag is named in a warning handed to `warn`.
pub(super) fn resolve_test(
    flag: Option<TestKind>,
    responses: &Path,
    warn: &mut dyn FnMut(String),
) -> Result<ResolvedTest> {
    let dir = match responses.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let config_path = dir.join(CONFIG_NAME);
    let has_config = config_path.is_file();
    if let Some(kind) = flag {
        // The flag wins; a config that agrees still tells the mode (cot, oneshot).
        let cfg = if has_config {
            read_config(&config_path).ok()
        } else {
            None
        };
        let agrees = matches!(&cfg, Some((Some(c), _)) if *c == kind);
        if let Some((Some(c), _)) = &cfg {
            if !agrees {
                warn(format!(
                    "warning: --test {} overrides test_name {} of {}",
                    kind.name(),
                    c.name(),
                    config_path.display()
                ));
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

impl NameNotes {
    /// One warning for mapped old scene names and one for unknown scenes kept as groups,
    /// handed to `warn`.
    pub(super) fn warn(&self, file: &Path, warn: &mut dyn FnMut(String)) {
        let at = |line: usize| format!("{}:{line}", file.display());
        if let Some(first) = self.first_renamed {
            let v: Vec<String> = self
                .renamed
                .iter()
                .map(|(k, n)| format!("{k} ({n} rows)"))
                .collect();
            warn(format!(
                "warning: old upstream scene names mapped to the current ones: {} (first at {}; renamed_from in items.jsonl)",
                v.join(", "),
                at(first)
            ));
        }
        if self.unknown > 0 {
            let shown: Vec<String> = self.unknown_lines.iter().map(|&l| at(l)).collect();
            warn(format!(
                "warning: {} row(s) have a scene the test does not know, kept as their own group(s) (--allow-unknown-scenes): {}{}",
                self.unknown,
                shown.join(", "),
                if self.unknown > 5 { ", ..." } else { "" }
            ));
        }
    }
}

/// Turns a row's issue into an error naming `file`, the row's line (from `lines`, the file line
/// of every row) and the field.
pub(super) fn locator<'a>(file: &'a Path, lines: &'a [usize]) -> impl Fn(RowIssue) -> Error + 'a {
    move |issue: RowIssue| {
        let line = lines.get(issue.row.wrapping_sub(1)).copied().unwrap_or(0);
        InputError::field(file, line, issue.field, issue.message).into()
    }
}

/// A results file read whole and scored ([`score_rows`] collected).
pub(super) struct Scored {
    /// The rows (only when asked: `--semantic` re-reads the responses).
    pub(super) rows: Vec<Row>,
    /// The file line of every row.
    pub(super) lines: Vec<usize>,
    /// The items, in file order.
    pub(super) items: Vec<Item>,
}

/// Read one results file, check its scene names (old names mapped, a typo refused: it would
/// split a group) and score it; the scene check's warnings go to `warn`.
pub(super) fn read_and_score(
    file: &Path,
    kind: TestKind,
    allow_unknown_scenes: bool,
    keep_rows: bool,
    warn: &mut dyn FnMut(String),
) -> Result<Scored> {
    let (mut rows, mut lines, mut items) = (Vec::new(), Vec::new(), Vec::new());
    let notes = score_rows(file, kind, allow_unknown_scenes, &mut |row, item, line| {
        lines.push(line);
        items.push(item);
        if keep_rows {
            rows.push(row);
        }
        Ok(())
    })?;
    notes.warn(file, warn);
    Ok(Scored { rows, lines, items })
}

/// Read one results file row by row, check each row's scene against the test's names and
/// score it as it is read, handing `sink` the row, its item and its file line, in file order.
/// A CSV file is streamed, so nothing here grows with the file but the notes' counts. Returns
/// what the scene check did ([`NameNotes::warn`]); a file with no data row is an input error.
pub(super) fn score_rows(
    file: &Path,
    kind: TestKind,
    allow_unknown_scenes: bool,
    sink: &mut dyn FnMut(Row, Item, usize) -> Result<()>,
) -> Result<NameNotes> {
    let names = SceneNames::new(kind, allow_unknown_scenes);
    let mut scorer = Scorer::new(kind);
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
