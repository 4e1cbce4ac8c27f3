//! `scorekit grasp`: read upstream `results.csv` (or JSONL), score it with the GRASP suite, write
//! items.jsonl, metrics.json and report.md.

use crate::cli::{GraspArgs, GraspTest};
use crate::commands::model_runtime::ModelRuntime;
use scorekit_core::error::{Error, InputError, Result};
use scorekit_io::{read_csv, read_jsonl, read_text, Record};
use scorekit_report::{self as report, jsonl, MetricsDoc, OutputDir, Outputs};
use scorekit_suites::grasp::semantic::{self, Thresholds};
use scorekit_suites::grasp::{self, Row, RowIssue, Summary, SummaryOptions, TestKind};
use serde_json::{json, Value};
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

/// The file upstream writes beside `results.csv`; its `test_name` selects the scorer.
const CONFIG_NAME: &str = "test_config.yaml";

/// Columns the scorer needs; `prompt` and `video_file` are optional (video_file pairs P/IP rows).
const REQUIRED: [&str; 3] = ["scene", "gt", "response"];

/// Run `scorekit grasp`.
pub fn run(args: GraspArgs) -> Result<()> {
    if args.responses.len() > 1 || args.labels.is_some() {
        return super::grasp_models::run(args);
    }
    let test = resolve_test(args.test, &args.responses[0])?;
    if args.semantic && !test.kind.is_open() {
        return Err(Error::usage(format!(
            "--semantic re-reads open-ended answers (level1-open); the test here is {}",
            test.kind.name()
        )));
    }
    if args.pairwise && !test.kind.is_level2() {
        return Err(Error::usage(format!(
            "--pairwise pairs P_/IP_ videos of Level 2; the test here is {}",
            test.kind.name()
        )));
    }
    let file = &args.responses[0];
    let (rows, lines, items) = read_and_score(file, test.kind, args.allow_unknown_scenes)?;
    let located = locator(file, &lines);
    let out = &args.output;
    let opts = SummaryOptions {
        bootstrap: out.bootstrap,
        seed: out.seed,
        pairwise: args.pairwise,
    };
    let mut doc = MetricsDoc::new("grasp");
    doc.add_input(file)?;
    if let Some(cfg) = &test.config {
        doc.add_input(cfg)?;
    }
    doc.settings = settings(&test, &opts);
    if args.allow_unknown_scenes {
        doc.settings
            .insert("allow_unknown_scenes".into(), json!(true));
    }
    doc.set_shard(out.shard);
    // Rows are scored whole (pairs need their twins), then the shard keeps its own items.
    let mut items: Vec<grasp::Item> = items
        .into_iter()
        .filter(|i| out.shard.contains(&shard_key(i)))
        .collect();
    let mut extra_files = Vec::new();
    if args.semantic {
        extra_files.push(read_semantic(&args, &rows, &mut items, &mut doc)?);
    }
    drop(rows);
    let mut outputs = outputs_with(&mut doc, &mut items, &located)?;
    outputs.files.extend(extra_files);
    // Scoring takes well under a second: resuming an unfinished run is a rerun.
    let (dir, _) = OutputDir::resume(&out.out, out.force, &doc.identity())?;
    let metrics_json = doc.to_json();
    dir.finish(&jsonl(&items)?, &outputs, &metrics_json)?;

    let mismatches: Vec<usize> = items
        .iter()
        .filter(|i| i.gt_mismatch)
        .map(|i| i.row)
        .collect();
    if !mismatches.is_empty() {
        let rows = &mismatches;
        let shown: Vec<String> = rows.iter().take(10).map(|r| r.to_string()).collect();
        eprintln!(
            "warning: {} row(s) have a gt that contradicts the P_/IP_ scene prefix (rows {}{}); \
             scored with the given gt as upstream does. Results written before upstream 10ac5f2 \
             carry gt=no for every Level 2 row. All rows are listed in metrics.json.",
            rows.len(),
            shown.join(", "),
            if rows.len() > 10 { ", ..." } else { "" }
        );
    }
    dir.print_summary(out.json, &metrics_json, &outputs.table);
    Ok(())
}

/// One stderr line for mapped old scene names and one for unknown scenes kept as groups.
pub(super) fn warn_names(
    file: &Path,
    lines: &[usize],
    names: &grasp::names::SceneCheck,
    rows: &[Row],
) {
    let at = |row: usize| {
        format!(
            "{}:{}",
            file.display(),
            lines.get(row.wrapping_sub(1)).copied().unwrap_or(0)
        )
    };
    if !names.renamed.is_empty() {
        let mut pairs: BTreeMap<String, usize> = BTreeMap::new();
        for (row, old) in &names.renamed {
            let new = rows
                .iter()
                .find(|r| r.row == *row)
                .map_or("", |r| r.scene.as_str());
            *pairs.entry(format!("{old} -> {new}")).or_default() += 1;
        }
        let v: Vec<String> = pairs
            .iter()
            .map(|(k, n)| format!("{k} ({n} rows)"))
            .collect();
        eprintln!(
            "warning: old upstream scene names mapped to the current ones: {} (first at {}; renamed_from in items.jsonl)",
            v.join(", "),
            at(*names.renamed.keys().next().expect("non-empty"))
        );
    }
    if !names.unknown.is_empty() {
        let shown: Vec<String> = names.unknown.iter().take(5).map(|r| at(*r)).collect();
        eprintln!(
            "warning: {} row(s) have a scene the test does not know, kept as their own group(s) (--allow-unknown-scenes): {}{}",
            names.unknown.len(),
            shown.join(", "),
            if names.unknown.len() > 5 { ", ..." } else { "" }
        );
    }
}

/// The key `--shard` splits by: a Level 2 row goes with its P_/IP_ twin (test and video
/// index), other rows by scene and video (by scene and row where the input has no video).
pub fn shard_key(i: &grasp::Item) -> String {
    let key = shard_key_in_file(i);
    match &i.model {
        Some(m) => format!("{m}\u{1f}{key}"),
        None => key,
    }
}

fn shard_key_in_file(i: &grasp::Item) -> String {
    match (&i.pair_index, &i.video_file) {
        (Some(p), _) => format!("{}\u{1f}{p}", i.test),
        (None, Some(v)) => format!("{}\u{1f}{v}", i.scene),
        (None, None) => format!("{}\u{1f}#{}", i.scene, i.row),
    }
}

/// Metrics from items, the one place `scorekit grasp` and `scorekit merge` compute them: puts
/// the items in the single-run order (by row), fills `doc.metrics` and `doc.groups` from the
/// test, pairing, bootstrap and seed of `doc.settings`, and renders tables and report.
pub fn outputs(doc: &mut MetricsDoc, items: &mut [grasp::Item]) -> Result<Outputs> {
    let file = doc
        .inputs
        .first()
        .map(|i| i.path.clone())
        .unwrap_or_default();
    let located = |issue: RowIssue| -> Error {
        InputError::field(
            &file,
            0,
            issue.field,
            format!("row {}: {}", issue.row, issue.message),
        )
        .into()
    };
    outputs_with(doc, items, &located)
}

fn outputs_with(
    doc: &mut MetricsDoc,
    items: &mut [grasp::Item],
    located: &dyn Fn(RowIssue) -> Error,
) -> Result<Outputs> {
    if items.iter().any(|i| i.model.is_some()) {
        return super::grasp_models::outputs(doc, items);
    }
    items.sort_by_key(|i| i.row);
    let setting = |k: &str| {
        doc.settings
            .get(k)
            .and_then(Value::as_str)
            .map(str::to_string)
    };
    let kind = setting("test")
        .and_then(|t| TestKind::from_name(&t))
        .ok_or_else(|| {
            Error::Internal(anyhow::anyhow!("metrics.json settings lack a GRASP test"))
        })?;
    let test = ResolvedTest {
        kind,
        source: setting("test_source").unwrap_or_default(),
        config: None,
        mode: setting("mode"),
    };
    let opts = SummaryOptions {
        bootstrap: doc.setting_u64("bootstrap")? as usize,
        seed: doc.setting_u64("seed")?,
        pairwise: doc
            .settings
            .get("pairwise")
            .and_then(Value::as_bool)
            .unwrap_or(false),
    };
    let summary = grasp::summarize(kind, items, &opts).map_err(located)?;
    doc.metrics = headline(&summary);
    let semantic = (doc.settings.get("semantic") == Some(&Value::Bool(true)))
        .then(|| semantic::summarize(items, opts.bootstrap, opts.seed));
    doc.groups.clear();
    for (name, g) in &summary.groups {
        let mut v = serde_json::to_value(g).map_err(anyhow::Error::from)?;
        if let (Some(p), Some(obj)) = (&summary.pairwise, v.as_object_mut()) {
            if let Some(e) = p.groups.get(name) {
                obj.insert("paired_accuracy".into(), json!(e));
            }
        }
        if let (Some(s), Some(obj)) = (&semantic, v.as_object_mut()) {
            if let Some(g) = s.groups.get(name) {
                obj.insert("semantic_accuracy".into(), json!(g.semantic_accuracy));
                obj.insert("semantic".into(), json!(g));
            }
        }
        doc.groups.insert(name.clone(), v);
    }
    let file = doc
        .inputs
        .first()
        .map(|i| i.path.clone())
        .unwrap_or_default();
    let mut report = report::grasp::report(
        &summary,
        &test.source,
        test.mode.as_deref(),
        Path::new(&file),
    );
    // Rows per scene (expected by the test's config and present), renamed and unknown scenes.
    let scenes = grasp::scene_rows(kind, items);
    let mut renamed: BTreeMap<String, usize> = BTreeMap::new();
    let mut unknown: BTreeMap<String, usize> = BTreeMap::new();
    for i in items.iter() {
        if let Some(old) = &i.renamed_from {
            *renamed.entry(format!("{old} -> {}", i.scene)).or_default() += 1;
        }
        if i.unknown_scene {
            *unknown.entry(i.scene.clone()).or_default() += 1;
        }
    }
    let scene_map: serde_json::Map<String, Value> = scenes
        .iter()
        .map(|s| {
            (
                s.scene.clone(),
                json!({"expected": s.expected, "rows": s.rows}),
            )
        })
        .collect();
    doc.metrics
        .insert("scene_rows".into(), Value::Object(scene_map));
    doc.metrics.insert("renamed_scenes".into(), json!(renamed));
    doc.metrics.insert("unknown_scenes".into(), json!(unknown));
    report.push_str(&report::grasp::scenes_report(&scenes, &renamed, &unknown));
    let mut table = report::grasp::tables(&summary);
    if let Some(s) = &semantic {
        let th: Option<Thresholds> = doc
            .settings
            .get("semantic_thresholds")
            .and_then(|v| serde_json::from_value(v.clone()).ok());
        let strict: BTreeMap<String, f64> = summary
            .groups
            .iter()
            .map(|(k, g)| (k.clone(), g.accuracy().value))
            .collect();
        doc.metrics
            .insert("semantic_accuracy".into(), json!(s.all.semantic_accuracy));
        doc.metrics
            .insert("semantic".into(), semantic::metrics_value(s, th));
        report.push_str(&report::grasp::semantic_report(
            s,
            &semantic::reread_rows(items),
            &strict,
            summary.accuracy.value,
            th,
        ));
        table.push_str(&report::grasp::semantic_table(
            s,
            &strict,
            summary.accuracy.value,
        ));
    }
    let main = report::grasp::main_table(&summary);
    let mut files = report::table::table_files("GRASP table", &main);
    files.push((
        "accuracy.svg".to_string(),
        report::grasp::accuracy_chart(&summary).into_bytes(),
    ));
    Ok(Outputs {
        report,
        table,
        files,
    })
}

/// `--semantic`: load the embedder, embed the label descriptions once and every answer that
/// names no label, and record the reading on each such item. Records the model and the
/// thresholds in `doc`; returns `semantic_descriptions.json` (the description embeddings).
fn read_semantic(
    args: &GraspArgs,
    rows: &[Row],
    items: &mut [grasp::Item],
    doc: &mut MetricsDoc,
) -> Result<(String, Vec<u8>)> {
    let rt = ModelRuntime::new(&args.model, args.output.quiet)?;
    let (embedder, model_ref) = rt.embedder(&args.embedder)?;
    let responses: HashMap<usize, &str> =
        rows.iter().map(|r| (r.row, r.response.as_str())).collect();
    let answer_of = |row: usize| responses.get(&row).copied().unwrap_or("").to_string();
    let th = semantic::DEFAULT_THRESHOLDS;
    let desc_vecs = semantic::read_answers(items, &answer_of, th, &mut |t: &[String]| {
        rt.embed(&embedder, t, "semantic")
    })?;
    let dtype = format!("{:?}", rt.dtype).to_lowercase();
    let file = semantic::descriptions_file(&json!(model_ref), &dtype, &desc_vecs);
    doc.models.push(model_ref);
    let s = &mut doc.settings;
    s.insert("semantic".into(), json!(true));
    rt.record(s);
    s.insert("semantic_embedder".into(), json!(args.embedder));
    s.insert("semantic_thresholds".into(), json!(th));
    s.insert(
        "semantic_descriptions".into(),
        json!(format!(
            "data/grasp/label_descriptions.json (built in), sha256 {}",
            semantic::descriptions_sha256()
        )),
    );
    s.insert(
        "semantic_rule".into(),
        json!(
            "strict-invalid answers naming no label: best label by cosine similarity of the \
               last turn to the label descriptions (max over a label's descriptions), taken when \
               similarity >= min_similarity and best - runner-up >= margin"
        ),
    );
    Ok(("semantic_descriptions.json".into(), file))
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

/// Read one results file, check its scene names against the test's (old names mapped, a typo
/// refused: it would split a group) and score it: the rows, their lines and the items.
pub(super) fn read_and_score(
    file: &Path,
    kind: TestKind,
    allow_unknown_scenes: bool,
) -> Result<(Vec<Row>, Vec<usize>, Vec<grasp::Item>)> {
    let (mut rows, lines) = read_rows(file)?;
    let (names, mut items) = {
        let located = locator(file, &lines);
        let names =
            grasp::names::check_scenes(kind, &mut rows, allow_unknown_scenes).map_err(&located)?;
        (names, grasp::score(kind, &rows).map_err(&located)?)
    };
    for it in &mut items {
        it.renamed_from = names.renamed.get(&it.row).cloned();
        it.unknown_scene = names.unknown.contains(&it.row);
    }
    warn_names(file, &lines, &names, &rows);
    Ok((rows, lines, items))
}

pub(super) fn read_rows(path: &Path) -> Result<(Vec<Row>, Vec<usize>)> {
    let (rows, lines) = if is_jsonl(path)? {
        let records = read_jsonl(path)?;
        let lines = records.iter().map(|r| r.line).collect();
        let rows = records
            .iter()
            .map(jsonl_row)
            .collect::<Result<Vec<_>, _>>()?;
        (rows, lines)
    } else {
        let table = read_csv(path, &REQUIRED)?;
        let col = |name: &str| table.column(name);
        let (scene, gt, response) = (col("scene"), col("gt"), col("response"));
        let video = col("video_file");
        let mut lines = Vec::with_capacity(table.records.len());
        let mut rows = Vec::with_capacity(table.records.len());
        for mut rec in table.records {
            let mut take = |i: Option<usize>| i.map(|i| std::mem::take(&mut rec.fields[i]));
            rows.push(Row {
                row: rec.row,
                scene: take(scene).unwrap_or_default(),
                gt: take(gt).unwrap_or_default(),
                response: take(response).unwrap_or_default(),
                video_file: take(video),
            });
            lines.push(rec.line);
        }
        (rows, lines)
    };
    if rows.is_empty() {
        return Err(InputError::file(path, "no data rows to score").into());
    }
    Ok((rows, lines))
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

pub(super) fn settings(
    test: &ResolvedTest,
    opts: &SummaryOptions,
) -> serde_json::Map<String, Value> {
    let mut s = serde_json::Map::new();
    s.insert("test".into(), json!(test.kind.name()));
    s.insert("test_source".into(), json!(test.source));
    if let Some(m) = &test.mode {
        s.insert("mode".into(), json!(m));
    }
    s.insert(
        "scorer".into(),
        json!(if test.kind.is_open() {
            "open"
        } else {
            "binary"
        }),
    );
    s.insert("bootstrap".into(), json!(opts.bootstrap));
    s.insert("seed".into(), json!(opts.seed));
    s.insert("pairwise".into(), json!(opts.pairwise));
    s.insert("semantic".into(), json!(false));
    s
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
