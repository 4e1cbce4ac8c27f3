//! `scorekit mint`: find results.jsonl files, parse and (optionally) re-check them in parallel,
//! then write sr.csv, tables.md/.tex, sr_curves.svg, metrics.json, items.jsonl and report.md.

use crate::cli::MintArgs;
use crate::error::{Error, InputError, Result};
use crate::report::mint::{RecheckRow, RecheckTask};
use crate::report::{self, bootstrap_mean, jsonl, InputFile, MetricsDoc, OutputDir, Outputs};
use crate::sandbox::Limits;
use crate::suites::mint::checkers::Tolerance;
use crate::suites::mint::exec::{python_version, ExecConfig};
use crate::suites::mint::layout::{parse_path, FileKey};
use crate::suites::mint::tables::{self, ConfigStats, TYPES};
use crate::suites::mint::{mark_duplicates, parse_file_with, Item, Recheck};
use rayon::prelude::*;
use serde_json::{json, Map, Value};
use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Run `scorekit mint`.
pub fn run(mut args: MintArgs) -> Result<()> {
    // `--outputs mint:gpt-3.5-turbo-0613` names pinned upstream data (scorekit data).
    let dataset = crate::data::resolve_arg(
        &args.outputs,
        &crate::data::Options {
            offline: args.offline,
            quiet: args.output.quiet,
        },
    )?;
    args.outputs = dataset.path.clone();
    let root = &args.outputs;
    if !root.is_dir() {
        return Err(Error::usage(format!(
            "--outputs {}: not a folder",
            root.display()
        )));
    }
    if args.exec_timeout == 0 {
        return Err(Error::usage("--exec-timeout must be at least 1 second"));
    }
    if args.jobs == Some(0) {
        return Err(Error::usage("--jobs must be at least 1"));
    }
    let started = Instant::now();

    let (mut files, mut misfits, mut stray) = discover(root)?;
    if let Some(d) = &dataset.dataset {
        // The cache folder may hold other parts of the dataset too: keep this part's files.
        let part: HashSet<&Path> = d.files.iter().map(|f| f.local.as_path()).collect();
        files.retain(|(p, _)| part.contains(p.as_path()));
        misfits.retain(|(p, _)| part.contains(p.as_path()));
        stray.retain(|p| part.contains(p.as_path()));
    }
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

    let tolerance = if args.tolerance == "pre" {
        Tolerance::Pre
    } else {
        Tolerance::Head
    };
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

    // Read and hash every file first: the run's identity (inputs, settings, shard) decides
    // whether an unfinished run in --out is resumed.
    let read: Vec<std::result::Result<(Vec<u8>, InputFile), InputError>> = files
        .par_iter()
        .map(|(path, _)| {
            let bytes = std::fs::read(path)
                .map_err(|e| InputError::file(path, format!("cannot read file: {e}")))?;
            let sha = crate::report::sha256_hex(&bytes);
            Ok((
                bytes,
                InputFile {
                    path: path.display().to_string(),
                    sha256: sha,
                },
            ))
        })
        .collect();
    let mut doc = MetricsDoc::new("mint");
    doc.datasets
        .extend(dataset.dataset.as_ref().map(|d| d.record()));
    let mut contents = Vec::with_capacity(read.len());
    let mut bytes = 0u64;
    for r in read {
        let (b, input) = r?;
        bytes += b.len() as u64;
        doc.inputs.push(input);
        contents.push(b);
    }
    // Bad input stops the run before --out is touched: a parse-only pass (no re-check).
    files
        .par_iter()
        .zip(&contents)
        .try_for_each(|((path, key), b)| {
            let name = path.display().to_string();
            parse_file_with(&name, key, b.clone(), &recheck, &|_| false, &|_| {}).map(|_| ())
        })?;
    let shard = args.output.shard;
    let settings = &mut doc.settings;
    settings.insert("recheck".into(), json!(recheck_on));
    settings.insert("tolerance".into(), json!(tolerance.name()));
    settings.insert("exec_code".into(), json!(args.exec_code));
    settings.insert("exec_timeout_s".into(), json!(args.exec_timeout));
    settings.insert("python".into(), json!(python));
    if args.exec_code {
        settings.insert("exec_memory_mib".into(), json!(args.exec_memory));
        settings.insert("exec_isolation".into(), json!(crate::sandbox::isolation()));
    }
    settings.insert(
        "verdict".into(),
        json!(if recheck_on {
            "rechecked where computed, else stored"
        } else {
            "stored"
        }),
    );
    settings.insert("bootstrap".into(), json!(args.output.bootstrap));
    settings.insert("seed".into(), json!(args.output.seed));
    doc.set_shard(shard);
    let (out, done) = OutputDir::resume(&args.output.out, args.output.force, &doc.identity())?;
    let mut items: Vec<Item> = done
        .into_iter()
        .map(serde_json::from_value)
        .collect::<std::result::Result<_, _>>()
        .map_err(|e| {
            Error::usage(format!(
                "--out {}: items.jsonl of the unfinished run is not MINT items ({e}); pass --force to start over",
                args.output.out.display()
            ))
        })?;
    let resumed = items.len();
    let done_keys: HashSet<(String, usize)> =
        items.iter().map(|i| (i.file.clone(), i.line)).collect();
    let keep = |it: &Item| -> bool {
        shard.contains(&shard_key(it)) && !done_keys.contains(&(it.file.clone(), it.line))
    };
    // Finished items are appended (one flushed line each) as they come, so a killed run
    // resumes without redoing them.
    let writer = Mutex::new(out.items_append("items.jsonl")?);
    let write_error: Mutex<Option<Error>> = Mutex::new(None);
    let finished = |it: &Item| {
        if let Err(e) = writer.lock().expect("writer").write(it) {
            write_error.lock().expect("error slot").get_or_insert(e);
        }
    };

    let bar = crate::progress::bar(files.len() as u64, "mint", args.output.quiet);
    // Programs wait on python: with --jobs above the core count, more threads than cores.
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(jobs.max(rayon::current_num_threads()))
        .build()
        .map_err(|e| Error::usage(format!("cannot start {jobs} threads: {e}")))?;
    let parsed: Vec<std::result::Result<Vec<Item>, InputError>> = pool.install(|| {
        files
            .par_iter()
            .zip(contents)
            .map(|((path, key), b)| {
                let name = path.display().to_string();
                let items = parse_file_with(&name, key, b, &recheck, &keep, &finished)?;
                bar.inc(1);
                Ok(items)
            })
            .collect()
    });
    bar.finish_and_clear();
    if let Some(e) = write_error.into_inner().expect("error slot") {
        return Err(e);
    }
    drop(writer);
    for r in parsed {
        items.append(&mut r?);
    }
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
    let mut outputs = outputs(&mut doc, &mut items)?;
    if shard.count == 1 {
        let stats = tables::config_stats(&items, recheck_on);
        for c in stats.iter().filter(|c| !c.complete()) {
            eprintln!(
                "warning: {} is incomplete and left out of the tables: {}",
                c.key.label(),
                c.missing.join("; ")
            );
        }
    }
    outputs.report.push_str(&format!(
        "\n{} trajectories from {} files ({:.1} MB) read and tabulated in {:.2} s{}.\n",
        items.len(),
        doc.inputs.len(),
        bytes as f64 / 1e6,
        elapsed,
        if resumed > 0 {
            format!(" ({resumed} taken over from the unfinished run)")
        } else {
            String::new()
        }
    ));
    let metrics_json = doc.to_json();
    out.finish(&jsonl(&items)?, &outputs, &metrics_json)?;
    if args.output.json {
        print!("{metrics_json}");
    } else {
        print!("{}", outputs.report);
    }
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
    for gap in &crate::sandbox::isolation().missing {
        eprintln!("warning: --exec-code isolation: {gap}");
    }
    Ok(cfg)
}

/// The key `--shard` splits by: configuration, task and task id, so that repeats of one
/// instance (marked duplicate, first kept) stay in one shard.
pub fn shard_key(i: &Item) -> String {
    format!(
        "{}\u{1f}{}\u{1f}{}\u{1f}{}",
        i.config.label(),
        i.task_type,
        i.task,
        i.task_id
    )
}

/// Metrics from items, the one place `scorekit mint` and `scorekit merge` compute them: puts
/// the items in the single-run order (files by path, then lines), marks duplicates, fills
/// `doc.metrics` (keeping the folder facts `skipped_files`, `other_files`, `other_file_paths`
/// already there) and `doc.groups` with the settings of `doc.settings`, and renders tables,
/// sr.csv, tables.tex, sr_curves.svg, recheck.csv and the report.
pub fn outputs(doc: &mut MetricsDoc, items: &mut [Item]) -> Result<Outputs> {
    items.sort_by(|a, b| {
        Path::new(&a.file)
            .cmp(Path::new(&b.file))
            .then(a.line.cmp(&b.line))
    });
    mark_duplicates(items);
    let flag = |k: &str| {
        doc.settings
            .get(k)
            .and_then(Value::as_bool)
            .unwrap_or(false)
    };
    let use_recheck = flag("recheck") || flag("exec_code");
    let bootstrap = doc.setting_u64("bootstrap")? as usize;
    let seed = doc.setting_u64("seed")?;
    let kept: Vec<(String, Value)> = ["skipped_files", "other_files", "other_file_paths"]
        .iter()
        .filter_map(|k| doc.metrics.get(*k).map(|v| (k.to_string(), v.clone())))
        .collect();
    doc.metrics.clear();
    doc.groups.clear();
    let stats = tables::config_stats(items, use_recheck);
    let recheck_summary = recheck_report(items);
    fill_metrics(doc, items, &stats, use_recheck, bootstrap, seed);
    for (k, v) in kept {
        doc.metrics.insert(k, v);
    }
    if use_recheck {
        doc.metrics
            .insert("recheck".into(), recheck_summary.0.clone());
    }
    let summary = tables::summary(&stats);
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

fn fill_metrics(
    doc: &mut MetricsDoc,
    items: &[Item],
    stats: &[ConfigStats],
    use_recheck: bool,
    bootstrap: usize,
    seed: u64,
) {
    let m = &mut doc.metrics;
    m.insert("trajectories".into(), json!(items.len()));
    m.insert(
        "duplicates".into(),
        json!(items.iter().filter(|i| i.duplicate).count()),
    );
    m.insert(
        "configs_complete".into(),
        json!(stats.iter().filter(|c| c.complete()).count()),
    );
    let incomplete: Vec<Value> = stats
        .iter()
        .filter(|c| !c.complete())
        .map(|c| json!({"config": c.key.label(), "missing": c.missing}))
        .collect();
    m.insert("configs_incomplete".into(), Value::Array(incomplete));
    let t2: Vec<Value> = tables::table2(stats)
        .iter()
        .map(|r| {
            let sr: Map<String, Value> = r
                .sr
                .iter()
                .enumerate()
                .map(|(i, v)| (format!("sr_{}", i + 1), json!(v.map(|x| x / 100.0))))
                .collect();
            json!({"agent": r.agent, "sr_micro": sr, "delta_tools_pct_per_turn": r.slope, "r2": r.r2})
        })
        .collect();
    m.insert("table2".into(), Value::Array(t2));
    let t3: Vec<Value> = tables::table3(stats)
        .iter()
        .map(|r| {
            let obj = |v: [f64; 4]| -> Map<String, Value> {
                TYPES
                    .iter()
                    .zip(v)
                    .map(|(t, x)| (t.to_string(), json!(x / 100.0)))
                    .collect()
            };
            json!({"agent": r.agent, "feedback_model": r.feedback_model,
                   "feedback_setting": r.feedback_setting, "sr5_without": obj(r.without),
                   "sr5_with": obj(r.with), "delta_feedback": obj(r.delta())})
        })
        .collect();
    m.insert("table3".into(), Value::Array(t3));

    // Groups: one per configuration, each type's SR with its bootstrap interval.
    let mut per_config: BTreeMap<String, BTreeMap<String, Vec<f64>>> = BTreeMap::new();
    for it in items.iter().filter(|i| !i.duplicate) {
        let g = per_config.entry(it.config.label()).or_default();
        let v = it.verdict(use_recheck) as u8 as f64;
        g.entry(it.task_type.clone()).or_default().push(v);
        g.entry("micro".into()).or_default().push(v);
        g.entry(format!("task:{}", it.task)).or_default().push(v);
    }
    for c in stats {
        let label = c.key.label();
        let mut g = Map::new();
        g.insert("complete".into(), json!(c.complete()));
        g.insert("missing".into(), json!(c.missing));
        if let Some(vals) = per_config.get(&label) {
            let mut sr = Map::new();
            for (k, v) in vals {
                if let Some(e) = bootstrap_mean(v, bootstrap, seed) {
                    sr.insert(k.clone(), json!(e));
                }
            }
            g.insert("success_rate".into(), Value::Object(sr));
        }
        let mut inv = Map::new();
        for (t, s) in &c.by_type {
            inv.insert(
                t.clone(),
                json!({"invalid_actions_mean": s.invalid as f64 / s.n.max(1) as f64,
                       "turns_mean": s.turns as f64 / s.n.max(1) as f64,
                       "escaped_underscore_rate": s.underscore as f64 / s.n.max(1) as f64,
                       "python_tag_rate": s.python as f64 / s.n.max(1) as f64}),
            );
        }
        g.insert("behaviour".into(), Value::Object(inv));
        doc.groups.insert(label, Value::Object(g));
    }
}

/// Per task: re-checked, agreeing, differing, unverifiable, and the differing instances.
/// Returns (metrics value, markdown section, recheck.csv).
fn recheck_report(items: &[Item]) -> (Value, String, String) {
    let mut per: BTreeMap<String, RecheckTask> = BTreeMap::new();
    let mut rows = Vec::new();
    for it in items.iter().filter(|i| !i.duplicate) {
        let t = per.entry(it.task.clone()).or_insert_with(|| RecheckTask {
            task: it.task.clone(),
            ..RecheckTask::default()
        });
        match it.rechecked {
            Some(r) => {
                t.checked += 1;
                if r != it.success {
                    t.differ += 1;
                    if r {
                        t.gained += 1;
                    } else {
                        t.lost += 1;
                    }
                    rows.push(it);
                }
            }
            None if it.recheck_note.is_some() => {
                t.unchecked += 1;
                rows.push(it);
            }
            None => {}
        }
    }
    let tasks: Vec<RecheckTask> = per
        .into_values()
        .filter(|t| t.checked + t.unchecked > 0)
        .collect();
    let mut json_per = Map::new();
    for t in &tasks {
        let ids: Vec<Value> = rows
            .iter()
            .filter(|i| i.task == t.task && i.rechecked.is_some())
            .map(|i| json!({"config": i.config.label(), "task_id": i.task_id, "stored": i.success, "rechecked": i.rechecked}))
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
            config: i.config.label(),
            task: i.task.clone(),
            task_id: i.task_id.clone(),
            file: i.file.clone(),
            line: i.line,
            stored: i.success,
            rechecked: i.rechecked,
            note: i.recheck_note.clone().unwrap_or_default(),
        })
        .collect();
    (
        Value::Object(json_per),
        report::mint::recheck_markdown(&tasks, !csv_rows.is_empty()),
        report::mint::recheck_csv(&csv_rows),
    )
}
