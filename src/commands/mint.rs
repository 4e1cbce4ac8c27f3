//! `scorekit mint`: find results.jsonl files, stream them (parsed, hashed and, if asked,
//! re-checked on worker threads), aggregate and write items.jsonl as the files come in path
//! order, then write sr.csv, tables.md/.tex, sr_curves.svg, metrics.json and report.md.
//!
//! Memory does not grow with the archive: a file is read one buffer at a time, at most 64
//! files per worker are in flight, and what the tables need is accumulated per configuration
//! ([`Aggregate`]).

use super::mint_scan::{pass, Reading, Scanned, Source};
use super::suite::Mint;
use crate::cli::MintArgs;
use scorekit_core::error::{Error, InputError, Result};
use scorekit_io::LANES;
use scorekit_report::mint::{RecheckRow, RecheckTask};
use scorekit_report::{
    self as report, InputFile, ItemsWriter, MetricsDoc, OutputDir, Outputs, RunSettings, StagedFile,
};
use scorekit_sandbox::Limits;
use scorekit_suites::mint::aggregate::{Aggregate, Totals};
use scorekit_suites::mint::checkers::Tolerance;
use scorekit_suites::mint::exec::{python_version, ExecConfig};
use scorekit_suites::mint::layout::{parse_path, ConfigKey, FileKey};
use scorekit_suites::mint::tables;
use scorekit_suites::mint::{metrics, shard_key, Item, ItemLines, Recheck};
use scorekit_suites::settings::MintSettings;
use scorekit_suites::suite::Suite;
use serde_json::{json, Map, Value};
use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Time per phase, for `--timings`. Read/parse and re-check add up the worker threads'
/// time; the others are wall time on the main thread.
#[derive(Debug, Default)]
pub struct Timings {
    walk: Duration,
    validate: Duration,
    parse: Duration,
    hash: Duration,
    recheck: Duration,
    aggregate: Duration,
    write_items: Duration,
    pass: Duration,
    bootstrap: Duration,
    write_files: Duration,
    threads: usize,
}

impl Timings {
    fn print(&self, total: Duration, bytes: u64, items: usize) {
        let s = |d: Duration| format!("{:8.3}", d.as_secs_f64());
        let mut t = scorekit_report::Table::new(&["phase", "seconds", "what"]);
        let threads = format!("summed over {} worker threads", self.threads);
        let rows: Vec<(&str, Duration, String)> = vec![
            ("walk", self.walk, "find the results.jsonl files".into()),
            (
                "validate",
                self.validate,
                "re-check runs only: read, hash and check every line before --out is touched"
                    .into(),
            ),
            ("parse", self.parse, format!("read, parse ({threads})")),
            (
                "hash",
                self.hash,
                format!("sha256 of every input, up to {LANES} files at a time ({threads})"),
            ),
            (
                "recheck",
                self.recheck,
                format!("native checkers ({threads})"),
            ),
            (
                "aggregate",
                self.aggregate,
                "duplicates, counts, verdicts per configuration".into(),
            ),
            (
                "write items",
                self.write_items,
                "serialise items.jsonl".into(),
            ),
            (
                "pass (wall)",
                self.pass,
                "the reading pass as a whole".into(),
            ),
            ("bootstrap", self.bootstrap, "95% intervals".into()),
            (
                "write",
                self.write_files,
                "tables, metrics.json, report.md, items.jsonl moved in place".into(),
            ),
            ("total (wall)", total, String::new()),
        ];
        for (name, d, what) in rows {
            t.row(&[name.to_string(), s(d), what]);
        }
        eprint!("{}", t.render());
        eprintln!(
            "{items} trajectories, {:.1} MB read; peak RSS {}",
            bytes as f64 / 1e6,
            scorekit_core::process::peak_rss_bytes().map_or("unknown".into(), |b| format!(
                "{:.1} MB",
                b as f64 / (1 << 20) as f64
            ))
        );
    }
}

/// Run `scorekit mint`.
pub fn run(mut args: MintArgs) -> Result<()> {
    // `--outputs mint:gpt-3.5-turbo-0613` names pinned upstream data (scorekit data).
    let dataset = crate::settings::dataset(&args.outputs, args.offline, args.output.quiet)?;
    args.outputs = dataset.path.clone();
    let root = &args.outputs;
    if !root.is_dir() {
        return Err(Error::usage(format!(
            "--outputs {}: not a folder",
            root.display()
        )));
    }
    let started = Instant::now();
    let mut timings = Timings {
        threads: rayon::current_num_threads(),
        ..Timings::default()
    };

    let (mut files, mut misfits, mut stray) = discover(root)?;
    if let Some(d) = &dataset.dataset {
        // The cache folder may hold other parts of the dataset too: keep this part's files.
        let part: HashSet<&Path> = d.files.iter().map(|f| f.local.as_path()).collect();
        files.retain(|(p, _)| part.contains(p.as_path()));
        misfits.retain(|(p, _)| part.contains(p.as_path()));
        stray.retain(|p| part.contains(p.as_path()));
    }
    timings.walk = started.elapsed();
    if files.is_empty() {
        return Err(InputError::file(
            root,
            "no results.jsonl in the upstream layout under this folder",
        )
        .into());
    }
    for (p, why) in &misfits {
        eprintln!(
            "warning: {}: skipped, path does not fit the layout: {why}",
            p.display()
        );
    }
    if !stray.is_empty() {
        eprintln!(
            "warning: {} other file(s) under {} ignored (first: {})",
            stray.len(),
            root.display(),
            stray[0].display()
        );
    }
    let sources = sources(files);

    let tolerance = Tolerance::from(args.tolerance);
    let recheck_on = args.recheck || args.exec_code;
    let jobs = args.jobs.unwrap_or_else(|| {
        std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get)
    });
    let exec = match args.exec_code {
        true => Some(exec_config(&args, jobs)?),
        false => None,
    };
    let python = match &exec {
        Some(cfg) => Some(
            python_version(&cfg.python)
                .map_err(|e| Error::usage(format!("--exec-code needs {}: {e}", cfg.python)))?,
        ),
        None => None,
    };
    let recheck = Recheck {
        reasoning: recheck_on.then_some(tolerance),
        exec,
    };
    let shard = args.output.shard;
    let mut doc = MetricsDoc::new("mint");
    doc.datasets
        .extend(dataset.dataset.as_ref().map(|d| d.record()));
    let settings = MintSettings {
        recheck: recheck_on,
        tolerance: tolerance.name().to_string(),
        exec_code: args.exec_code,
        exec_timeout_s: args.exec_timeout,
        python,
        exec_memory_mib: args.exec_code.then_some(args.exec_memory),
        exec_isolation: if args.exec_code {
            Some(serde_json::to_value(scorekit_sandbox::isolation()).map_err(anyhow::Error::from)?)
        } else {
            None
        },
        verdict: if recheck_on {
            "rechecked where computed, else stored"
        } else {
            "stored"
        }
        .into(),
    };
    scorekit_suites::run::record::<Mint>(
        &mut doc,
        &crate::settings::run_options(&args.output),
        &settings,
    )?;
    let in_shard = |it: &Item| shard.count <= 1 || shard.contains(&shard_key(it));
    let threads = timings.threads;
    let bar = scorekit_core::progress::bar(sources.len() as u64, "mint", args.output.quiet);

    // The run's identity (inputs with their sha256, settings, shard) decides whether an
    // unfinished run in --out is resumed, and bad input must stop the run before --out is
    // touched. Without a re-check one pass does everything: items go to a staged file beside
    // --out, and --out is looked at once the pass is through (an unfinished run there is
    // simply redone, it costs one pass). With a re-check (slow: worth resuming) a first pass
    // reads, hashes and checks every line, then --out is resumed and a second pass re-checks
    // what is left, appending each finished item to items.jsonl as before.
    let mut hashes: Vec<String> = vec![String::new(); sources.len()];
    let mut bytes = 0u64;
    let mut agg = Aggregate::new(recheck_on);
    let mut staged = StagedFile::create_near(&args.output.out, "items.jsonl")?;
    let mut item_lines = ItemLines::default();
    let pass_started = Instant::now();
    let (out, resumed) = if !recheck_on {
        pass(
            &sources,
            Reading::Stored,
            threads,
            &in_shard,
            &|_| {},
            |i, scanned| {
                hashes[i] = scanned.sha256.clone();
                bytes += scanned.bytes;
                take(
                    &sources[i],
                    scanned,
                    Vec::new(),
                    &mut agg,
                    &mut staged,
                    &mut item_lines,
                    &mut timings,
                )?;
                bar.inc(1);
                Ok(())
            },
        )?;
        timings.pass = pass_started.elapsed();
        doc.inputs = inputs(&sources, &hashes);
        let (out, _) = OutputDir::resume(&args.output.out, args.output.force, &doc.identity())?;
        (out, 0)
    } else {
        pass(
            &sources,
            Reading::Stored,
            threads,
            &|_| false,
            &|_| {},
            |i, scanned| {
                hashes[i] = scanned.sha256;
                bytes += scanned.bytes;
                Ok(())
            },
        )?;
        timings.validate = pass_started.elapsed();
        doc.inputs = inputs(&sources, &hashes);
        let (out, done) = scorekit_suites::run::resume::<Mint>(
            &crate::settings::run_options(&args.output),
            &doc,
        )?;
        let resumed = done.len();
        let done_keys: HashSet<(String, usize)> = done.iter().map(Mint::key).collect();
        let mut done_by_file: HashMap<String, Vec<Item>> = HashMap::new();
        for it in done {
            done_by_file.entry(it.file.clone()).or_default().push(it);
        }
        let keep = |it: &Item| in_shard(it) && !done_keys.contains(&Mint::key(it));
        // Finished items are appended (one flushed line each, in the order they finish) as
        // they come, so a killed run resumes without redoing them.
        let writer = Mutex::new(out.items_append("items.jsonl")?);
        let write_error: Mutex<Option<Error>> = Mutex::new(None);
        let finished = |it: &Item| {
            if let Err(e) = writer.lock().expect("writer").write(it) {
                write_error.lock().expect("error slot").get_or_insert(e);
            }
        };
        // Programs wait on python: with --jobs above the core count, more threads than cores.
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(jobs.max(threads))
            .build()
            .map_err(|e| Error::usage(format!("cannot start {jobs} threads: {e}")))?;
        let pass_started = Instant::now();
        pass(
            &sources,
            Reading::Full(&recheck, &pool),
            threads,
            &keep,
            &finished,
            |i, scanned| {
                if scanned.sha256 != hashes[i] {
                    return Err(InputError::file(
                        &sources[i].path,
                        "changed while scorekit was reading it; run again",
                    )
                    .into());
                }
                let done = done_by_file.remove(&sources[i].name).unwrap_or_default();
                take(
                    &sources[i],
                    scanned,
                    done,
                    &mut agg,
                    &mut staged,
                    &mut item_lines,
                    &mut timings,
                )?;
                bar.inc(1);
                Ok(())
            },
        )?;
        timings.pass = pass_started.elapsed();
        if let Some(e) = write_error.into_inner().expect("error slot") {
            return Err(e);
        }
        ItemsWriter::finish(writer.into_inner().expect("writer"))?;
        if let Some(file) = done_by_file.keys().next() {
            return Err(Error::usage(format!(
                "--out {}: items.jsonl of the unfinished run has items of {file}, which is not among the inputs; pass --force to start over",
                args.output.out.display()
            )));
        }
        (out, resumed)
    };
    bar.finish_and_clear();
    let elapsed = started.elapsed().as_secs_f64();

    doc.metrics.insert(
        "skipped_files".into(),
        Value::Array(
            misfits
                .iter()
                .map(|(p, why)| json!({"path": p.display().to_string(), "reason": why}))
                .collect(),
        ),
    );
    doc.metrics.insert("other_files".into(), json!(stray.len()));
    doc.metrics.insert(
        "other_file_paths".into(),
        json!(stray
            .iter()
            .map(|p| p.display().to_string())
            .collect::<Vec<_>>()),
    );
    let totals = agg.finish();
    if shard.count == 1 {
        for c in totals.stats.iter().filter(|c| !c.complete()) {
            eprintln!(
                "warning: {} is incomplete and left out of the tables: {}",
                c.key.label(),
                c.missing.join("; ")
            );
        }
    }
    let trajectories = totals.trajectories;
    let mut outputs = render(&mut doc, totals, &mut timings)?;
    outputs.report.push_str(&format!(
        "\n{} trajectories from {} files ({:.1} MB) read and tabulated in {:.2} s{}.\n",
        trajectories,
        doc.inputs.len(),
        bytes as f64 / 1e6,
        elapsed,
        if resumed > 0 {
            format!(" ({resumed} taken over from the unfinished run)")
        } else {
            String::new()
        }
    ));
    let write_started = Instant::now();
    let metrics_json = doc.to_json();
    out.finish_staged(staged, &outputs, &metrics_json)?;
    timings.write_files = write_started.elapsed();
    if args.timings {
        timings.print(started.elapsed(), bytes, trajectories);
    }
    if args.output.json {
        print!("{metrics_json}");
    } else {
        print!("{}", outputs.report);
    }
    Ok(())
}

/// The files with, for each, whether it is the last of its configuration and task.
fn sources(files: Vec<(PathBuf, FileKey)>) -> Vec<Source> {
    let mut last: HashMap<(ConfigKey, String, String), usize> = HashMap::new();
    for (i, (_, k)) in files.iter().enumerate() {
        last.insert((k.config.clone(), k.task_type.clone(), k.task.clone()), i);
    }
    files
        .into_iter()
        .enumerate()
        .map(|(i, (path, key))| {
            let last_of_key =
                last[&(key.config.clone(), key.task_type.clone(), key.task.clone())] == i;
            Source {
                name: path.display().to_string(),
                path,
                key,
                last_of_key,
            }
        })
        .collect()
}

fn inputs(sources: &[Source], hashes: &[String]) -> Vec<InputFile> {
    sources
        .iter()
        .zip(hashes)
        .map(|(s, h)| InputFile {
            path: s.name.clone(),
            sha256: h.clone(),
        })
        .collect()
}

/// Take one file's items in order: merged by line with the items an unfinished run already
/// finished for that file, counted (duplicates marked), and written to the staged
/// items.jsonl.
fn take(
    src: &Source,
    scanned: Scanned,
    done: Vec<Item>,
    agg: &mut Aggregate,
    staged: &mut StagedFile,
    lines: &mut ItemLines,
    timings: &mut Timings,
) -> Result<()> {
    timings.parse += scanned.parse;
    timings.hash += scanned.hash;
    timings.recheck += scanned.recheck;
    let started = Instant::now();
    let mut items = scanned.items;
    if !done.is_empty() {
        items.extend(done);
        items.sort_by_key(|i| i.line);
    }
    for it in items.iter_mut() {
        agg.add(it);
    }
    if src.last_of_key {
        agg.release(&src.key);
    }
    let counted = Instant::now();
    timings.aggregate += counted - started;
    let out = staged.writer();
    for it in &items {
        lines
            .write(it, out)
            .map_err(|e| anyhow::anyhow!("cannot write items.jsonl: {e}"))?;
    }
    timings.write_items += counted.elapsed();
    Ok(())
}

/// The `--exec-code` runner: limits from the flags; says on stderr which isolation is missing.
fn exec_config(args: &MintArgs, jobs: usize) -> Result<ExecConfig> {
    let limits = Limits {
        timeout: Duration::from_secs(args.exec_timeout),
        memory_bytes: args.exec_memory.saturating_mul(1 << 20),
        ..Limits::default()
    };
    let cfg = ExecConfig::new("python3", limits, jobs)
        .map_err(|e| Error::usage(format!("--exec-code needs python3: {e}")))?;
    for gap in &scorekit_sandbox::isolation().missing {
        eprintln!("warning: --exec-code isolation: {gap}");
    }
    Ok(cfg)
}

/// Metrics from items, the one place `scorekit merge` computes them: puts the items in the
/// single-run order (files by path, then lines), marks duplicates, and renders as
/// [`render`] does for `scorekit mint`, which aggregates the same way while it reads.
pub fn outputs(doc: &mut MetricsDoc, items: &mut [Item]) -> Result<Outputs> {
    items.sort_by(|a, b| {
        Path::new(&a.file)
            .cmp(Path::new(&b.file))
            .then(a.line.cmp(&b.line))
    });
    let mut agg = Aggregate::new(use_recheck(doc)?);
    for it in items.iter_mut() {
        agg.add(it);
    }
    render(doc, agg.finish(), &mut Timings::default())
}

fn use_recheck(doc: &MetricsDoc) -> Result<bool> {
    Ok(doc.suite_settings::<MintSettings>()?.rechecked())
}

/// Fill `doc.metrics` (keeping the folder facts `skipped_files`, `other_files`,
/// `other_file_paths` already there) and `doc.groups` with the settings of `doc.settings`,
/// and render tables, sr.csv, tables.tex, sr_curves.svg, recheck.csv and the report.
pub fn render(doc: &mut MetricsDoc, totals: Totals, timings: &mut Timings) -> Result<Outputs> {
    let settings: MintSettings = doc.suite_settings()?;
    let use_recheck = settings.rechecked();
    let RunSettings {
        bootstrap, seed, ..
    } = doc.run_settings()?;
    let kept: Vec<(String, Value)> = ["skipped_files", "other_files", "other_file_paths"]
        .iter()
        .filter_map(|k| doc.metrics.get(*k).map(|v| (k.to_string(), v.clone())))
        .collect();
    doc.metrics.clear();
    doc.groups.clear();
    let stats = &totals.stats;
    let tolerance = Tolerance::from_name(&settings.tolerance);
    let recheck_summary = recheck_report(&totals, tolerance);
    let started = Instant::now();
    metrics::fill(&mut doc.metrics, &mut doc.groups, &totals, bootstrap, seed);
    timings.bootstrap = started.elapsed();
    for (k, v) in kept {
        doc.metrics.insert(k, v);
    }
    if use_recheck {
        doc.metrics
            .insert("recheck".into(), recheck_summary.0.clone());
        // Which tolerance the numeric answers were re-checked with, and how many re-checked
        // verdicts differ from the stored flags (per task in `recheck.<task>.differ`).
        if let Some(t) = tolerance {
            doc.metrics.insert(
                "recheck_tolerance".into(),
                json!({"name": t.name(), "rule": t.rule()}),
            );
        }
        let differ: usize = totals.recheck.values().map(|t| t.differ).sum();
        doc.metrics.insert("recheck_differ".into(), json!(differ));
    }
    let summary = tables::summary(stats);
    let tables_md = report::mint::markdown(&summary);
    let mut files = vec![
        (
            "sr.csv".to_string(),
            report::mint::sr_csv(&summary).into_bytes(),
        ),
        ("tables.md".to_string(), tables_md.clone().into_bytes()),
        (
            "tables.tex".to_string(),
            report::latex::mint_tables(&summary).into_bytes(),
        ),
        (
            "sr_curves.svg".to_string(),
            report::svg::sr_curves(&summary.table2).into_bytes(),
        ),
    ];
    if use_recheck {
        files.push(("recheck.csv".to_string(), recheck_summary.2.into_bytes()));
    }
    let mut report = tables_md;
    if use_recheck {
        report.push('\n');
        report.push_str(&recheck_summary.1);
    }
    let skipped = doc
        .metrics
        .get("skipped_files")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let stray = doc
        .metrics
        .get("other_file_paths")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let skipped: Vec<(&str, &str)> = skipped
        .iter()
        .map(|s| {
            (
                s["path"].as_str().unwrap_or(""),
                s["reason"].as_str().unwrap_or(""),
            )
        })
        .collect();
    let stray: Vec<&str> = stray.iter().map(|p| p.as_str().unwrap_or("")).collect();
    report.push_str(&report::mint::files_not_used(&skipped, &stray));
    Ok(Outputs {
        table: report.clone(),
        report,
        files,
    })
}

/// Walk `root` in name order: results.jsonl files that fit the layout, those that do not (with
/// why), and any other files.
#[allow(clippy::type_complexity)]
fn discover(
    root: &Path,
) -> Result<(
    Vec<(PathBuf, FileKey)>,
    Vec<(PathBuf, String)>,
    Vec<PathBuf>,
)> {
    let mut files = Vec::new();
    let mut misfits = Vec::new();
    let mut stray = Vec::new();
    for entry in walkdir::WalkDir::new(root).sort_by_file_name() {
        let entry = entry.map_err(|e| {
            InputError::file(e.path().unwrap_or(root), format!("cannot read folder: {e}"))
        })?;
        if !entry.file_type().is_file() {
            continue;
        }
        let path = entry.path().to_path_buf();
        if entry.file_name() != "results.jsonl" {
            stray.push(path);
            continue;
        }
        let rel = path.strip_prefix(root).unwrap_or(&path);
        match parse_path(rel) {
            Ok(k) => files.push((path, k)),
            Err(why) => misfits.push((path, why)),
        }
    }
    Ok((files, misfits, stray))
}

/// Per task: re-checked, agreeing, differing, unverifiable, and the differing instances.
/// Returns (metrics value, markdown section, recheck.csv).
fn recheck_report(totals: &Totals, tolerance: Option<Tolerance>) -> (Value, String, String) {
    let rows = &totals.recheck_rows;
    let tasks: Vec<RecheckTask> = totals
        .recheck
        .iter()
        .filter(|(_, t)| t.checked + t.unchecked > 0)
        .map(|(task, t)| RecheckTask {
            task: task.clone(),
            checked: t.checked,
            differ: t.differ,
            gained: t.gained,
            lost: t.lost,
            unchecked: t.unchecked,
        })
        .collect();
    let mut json_per = Map::new();
    for t in &tasks {
        let ids: Vec<Value> = rows
            .iter()
            .filter(|i| i.task == t.task && i.rechecked.is_some())
            .map(|i| json!({"config": i.config, "task_id": i.task_id, "stored": i.stored, "rechecked": i.rechecked}))
            .collect();
        json_per.insert(
            t.task.clone(),
            json!({"rechecked": t.checked, "differ": t.differ, "stored_false_rechecked_true": t.gained,
                   "stored_true_rechecked_false": t.lost, "no_verdict": t.unchecked, "differing": ids}),
        );
    }
    let csv_rows: Vec<RecheckRow> = rows
        .iter()
        .map(|i| RecheckRow {
            config: i.config.clone(),
            task: i.task.clone(),
            task_id: i.task_id.clone(),
            file: i.file.clone(),
            line: i.line,
            stored: i.stored,
            rechecked: i.rechecked,
            note: i.note.clone().unwrap_or_default(),
        })
        .collect();
    (
        Value::Object(json_per),
        report::mint::recheck_markdown(
            &tasks,
            tolerance.map(|t| (t.name(), t.rule())),
            !csv_rows.is_empty(),
        ),
        report::mint::recheck_csv(&csv_rows),
    )
}
