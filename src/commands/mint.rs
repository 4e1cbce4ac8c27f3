//! `scorekit mint`: find results.jsonl files, parse and (optionally) re-check them in parallel,
//! then write sr.csv, tables.md/.tex, sr_curves.svg, metrics.json, items.jsonl and report.md.

use crate::cli::MintArgs;
use crate::error::{Error, InputError, Result};
use crate::report::{bootstrap_mean, InputFile, MetricsDoc, OutputDir};
use crate::suites::mint::checkers::Tolerance;
use crate::suites::mint::exec::{python_version, ExecConfig};
use crate::suites::mint::layout::{parse_path, FileKey};
use crate::suites::mint::tables::{self, ConfigStats, TYPES};
use crate::suites::mint::{mark_duplicates, parse_file, svg, Item, Recheck};
use rayon::prelude::*;
use serde_json::{json, Map, Value};
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// One parsed file: its hash entry, its size in bytes, its items.
type Parsed = (InputFile, u64, Vec<Item>);

/// Run `scorekit mint`.
pub fn run(args: MintArgs) -> Result<()> {
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
    let out = OutputDir::prepare(&args.output.out, args.output.force)?;
    let started = Instant::now();

    let (files, misfits, stray) = discover(root)?;
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
    let exec = args.exec_code.then(|| ExecConfig {
        python: "python3".into(),
        timeout: Duration::from_secs(args.exec_timeout),
    });
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

    let bar = crate::progress::bar(files.len() as u64, "mint", args.output.quiet);
    let parsed: Vec<std::result::Result<Parsed, InputError>> = files
        .par_iter()
        .map(|(path, key)| {
            let name = path.display().to_string();
            let bytes = std::fs::read(path)
                .map_err(|e| InputError::file(path, format!("cannot read file: {e}")))?;
            let size = bytes.len() as u64;
            let sha = hex(&Sha256::digest(&bytes));
            let items = parse_file(&name, key, bytes, &recheck)?;
            bar.inc(1);
            Ok((
                InputFile {
                    path: name,
                    sha256: sha,
                },
                size,
                items,
            ))
        })
        .collect();
    bar.finish_and_clear();
    let mut doc = MetricsDoc::new("mint");
    let mut items: Vec<Item> = Vec::new();
    let mut bytes = 0u64;
    for r in parsed {
        let (input, size, mut its) = r?;
        doc.inputs.push(input);
        bytes += size;
        items.append(&mut its);
    }
    mark_duplicates(&mut items);
    let elapsed = started.elapsed().as_secs_f64();

    let use_recheck = recheck_on;
    let stats = tables::config_stats(&items, use_recheck);
    for c in stats.iter().filter(|c| !c.complete()) {
        eprintln!(
            "warning: {} is incomplete and left out of the tables: {}",
            c.key.label(),
            c.missing.join("; ")
        );
    }

    let settings = &mut doc.settings;
    settings.insert("recheck".into(), json!(recheck_on));
    settings.insert("tolerance".into(), json!(tolerance.name()));
    settings.insert("exec_code".into(), json!(args.exec_code));
    settings.insert("exec_timeout_s".into(), json!(args.exec_timeout));
    settings.insert("python".into(), json!(python));
    settings.insert(
        "verdict".into(),
        json!(if use_recheck {
            "rechecked where computed, else stored"
        } else {
            "stored"
        }),
    );
    settings.insert("bootstrap".into(), json!(args.output.bootstrap));
    settings.insert("seed".into(), json!(args.output.seed));

    let recheck_summary = recheck_report(&items);
    fill_metrics(&mut doc, &items, &stats, &args, &misfits, &stray);
    if recheck_on {
        doc.metrics
            .insert("recheck".into(), recheck_summary.0.clone());
    }

    let tables_md = tables::render_markdown(&stats);
    out.write("sr.csv", tables::sr_csv(&stats).as_bytes())?;
    out.write("tables.md", tables_md.as_bytes())?;
    out.write("tables.tex", tables::render_latex(&stats).as_bytes())?;
    out.write(
        "sr_curves.svg",
        svg::sr_curves(&tables::table2(&stats)).as_bytes(),
    )?;
    let mut w = out.items("items.jsonl")?;
    for it in &items {
        w.write(it)?;
    }
    w.finish()?;
    if recheck_on {
        out.write("recheck.csv", recheck_summary.2.as_bytes())?;
    }
    let mut report = tables_md.clone();
    if recheck_on {
        report.push('\n');
        report.push_str(&recheck_summary.1);
    }
    if !misfits.is_empty() || !stray.is_empty() {
        report.push_str("\n## Files not used\n\n");
        for (p, why) in &misfits {
            report.push_str(&format!(
                "- {} (does not fit the layout: {why})\n",
                p.display()
            ));
        }
        for p in &stray {
            report.push_str(&format!("- {} (not a results.jsonl)\n", p.display()));
        }
    }
    report.push_str(&format!(
        "\n{} trajectories from {} files ({:.1} MB) read and tabulated in {:.2} s.\n",
        items.len(),
        doc.inputs.len(),
        bytes as f64 / 1e6,
        elapsed
    ));
    out.write("report.md", report.as_bytes())?;
    out.write("metrics.json", doc.to_json().as_bytes())?;
    if args.output.json {
        print!("{}", doc.to_json());
    } else {
        print!("{report}");
    }
    Ok(())
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

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn fill_metrics(
    doc: &mut MetricsDoc,
    items: &[Item],
    stats: &[ConfigStats],
    args: &MintArgs,
    misfits: &[(PathBuf, String)],
    stray: &[PathBuf],
) {
    let use_recheck = args.recheck || args.exec_code;
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
    m.insert(
        "skipped_files".into(),
        Value::Array(
            misfits
                .iter()
                .map(|(p, why)| json!({"path": p.display().to_string(), "reason": why}))
                .collect(),
        ),
    );
    m.insert("other_files".into(), json!(stray.len()));

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
                if let Some(e) = bootstrap_mean(v, args.output.bootstrap, args.output.seed) {
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
    #[derive(Default)]
    struct T {
        checked: usize,
        differ: usize,
        gained: usize,
        lost: usize,
        unchecked: usize,
    }
    let mut per: BTreeMap<String, T> = BTreeMap::new();
    let mut csv = String::from("config,task,task_id,file,line,stored,rechecked,note\n");
    let mut md = String::from("## Re-check against the stored success flags\n\n");
    let mut rows = Vec::new();
    for it in items.iter().filter(|i| !i.duplicate) {
        let t = per.entry(it.task.clone()).or_default();
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
    let mut table = crate::report::Table::new(&[
        "task",
        "re-checked",
        "differ",
        "stored false → true",
        "stored true → false",
        "no verdict",
    ]);
    let mut json_per = Map::new();
    for (task, t) in &per {
        if t.checked + t.unchecked == 0 {
            continue;
        }
        table.row(&[
            task.clone(),
            t.checked.to_string(),
            t.differ.to_string(),
            t.gained.to_string(),
            t.lost.to_string(),
            t.unchecked.to_string(),
        ]);
        let ids: Vec<Value> = rows
            .iter()
            .filter(|i| &i.task == task && i.rechecked.is_some())
            .map(|i| json!({"config": i.config.label(), "task_id": i.task_id, "stored": i.success, "rechecked": i.rechecked}))
            .collect();
        json_per.insert(
            task.clone(),
            json!({"rechecked": t.checked, "differ": t.differ, "stored_false_rechecked_true": t.gained,
                   "stored_true_rechecked_false": t.lost, "no_verdict": t.unchecked, "differing": ids}),
        );
    }
    md.push_str(&table.render());
    if !rows.is_empty() {
        md.push_str("\nDiffering or unverifiable instances: see recheck.csv.\n");
    }
    for i in rows {
        csv.push_str(&format!(
            "{},{},{},{},{},{},{},{}\n",
            csv_q(&i.config.label()),
            i.task,
            csv_q(&i.task_id),
            csv_q(&i.file),
            i.line,
            i.success,
            i.rechecked.map_or("".into(), |b| b.to_string()),
            csv_q(i.recheck_note.as_deref().unwrap_or(""))
        ));
    }
    (Value::Object(json_per), md, csv)
}

fn csv_q(s: &str) -> String {
    if s.contains([',', '"', '\n']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}
