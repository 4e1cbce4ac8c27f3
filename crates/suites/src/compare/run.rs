//! `scorekit compare` as a library call: read two or more finished runs of one suite on the same benchmark, turn
//! each result group into a system, and hand their per-item values to the paired tests of
//! `suites::compare` (and, for story runs sharing a judge calibration, IFSM's judge-corrected
//! difference, `suites::compare::corrected`); report/ renders the leaderboard and the tables.
//!
//! Runs must agree on everything the suite names as its benchmark
//! ([`Suite::dataset`](crate::suite::Suite::dataset): the dataset or queries file by
//! sha256, the test, the judge, the verdict rule); the first difference is a usage error (exit
//! 2) naming it and both runs.

use crate::compare::corrected::{self, RunInfo};
use crate::compare::{compare_all, leaderboard_values, System};
use crate::suite::{DatasetInput, Registered};
use scorekit_core::error::{Error, InputError, Result};
use scorekit_report::compare::{self as report, LeaderRow, Leaderboard};
use scorekit_report::{MetricsDoc, OutputDir, METRICS_FILE};
use serde_json::{json, Value};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// One run folder, read.
struct Run {
    dir: PathBuf,
    label: String,
    doc: MetricsDoc,
}

/// What `scorekit compare` is asked: the run folders, their names, where the comparison goes
/// and the bootstrap of its intervals.
#[derive(Debug, Clone)]
pub struct CompareOptions {
    /// The finished runs' output folders.
    pub runs: Vec<PathBuf>,
    /// A name per run (`--labels`); else each folder's name.
    pub labels: Option<Vec<String>>,
    /// Folder for the comparison's files.
    pub out: PathBuf,
    /// Overwrite a comparison already in `out`.
    pub force: bool,
    /// Bootstrap resamples of the intervals.
    pub bootstrap: usize,
    /// Seed of the bootstrap.
    pub seed: u64,
}

/// A comparison written: its metrics.json and report.md, and the folder they are in.
pub struct Compared {
    /// metrics.json as written.
    pub metrics_json: String,
    /// report.md as written.
    pub report_md: String,
    /// The output folder.
    pub dir: OutputDir,
}

/// A comparison computed, not yet written: its metrics.json, report.md, tables.tex and
/// leaderboard chart.
pub struct Comparison {
    /// metrics.json (`suite: "compare"`).
    pub metrics: Value,
    /// metrics.json as text.
    pub metrics_json: String,
    /// report.md.
    pub report_md: String,
    /// tables.tex.
    pub tables_tex: String,
    /// leaderboard.svg.
    pub chart_svg: String,
}

/// Compare the runs of `args` and write the comparison's files (report.html among them).
pub fn compare(args: &CompareOptions) -> Result<Compared> {
    let c = comparison(
        &args.runs,
        args.labels.as_deref(),
        args.bootstrap,
        args.seed,
    )?;
    let dir = OutputDir::prepare(&args.out, args.force)?;
    dir.write("tables.tex", c.tables_tex.as_bytes())?;
    dir.write("leaderboard.svg", c.chart_svg.as_bytes())?;
    dir.write("report.md", c.report_md.as_bytes())?;
    let title = format!(
        "scorekit compare: {}",
        c.metrics["compared_suite"].as_str().unwrap_or("")
    );
    let page = scorekit_report::html::compare_page(&title, Some(&c.metrics), None, &[])?;
    dir.write(scorekit_report::html::REPORT_HTML, page.as_bytes())?;
    dir.write(METRICS_FILE, c.metrics_json.as_bytes())?;
    Ok(Compared {
        metrics_json: c.metrics_json,
        report_md: c.report_md,
        dir,
    })
}

/// Compare the finished runs in `dirs` (named by `labels`, else by their folders' names) with
/// `bootstrap` resamples seeded by `seed`: what `scorekit compare` writes, and `scorekit view`
/// shows above several runs.
pub fn comparison(
    dirs: &[PathBuf],
    labels: Option<&[String]>,
    bootstrap: usize,
    seed: u64,
) -> Result<Comparison> {
    if dirs.is_empty() {
        return Err(Error::usage(
            "--runs: name the output folders of the runs to compare",
        ));
    }
    let given_labels = labels.is_some();
    let labels = run_labels(dirs, labels)?;
    let runs = dirs
        .iter()
        .zip(labels)
        .map(|(dir, label)| {
            Ok(Run {
                dir: dir.clone(),
                label,
                doc: read_doc(dir)?,
            })
        })
        .collect::<Result<Vec<_>>>()?;
    let suite = check_runs(&runs)?;

    let mut systems: Vec<System> = Vec::new();
    let mut origin: Vec<(String, String)> = Vec::new();
    let mut run_of: Vec<usize> = Vec::new();
    for (ri, r) in runs.iter().enumerate() {
        let observed = (suite.observe)(&r.doc, &r.dir)?;
        if observed.is_empty() {
            return Err(
                InputError::file(r.dir.join("items.jsonl"), "no scored item to compare").into(),
            );
        }
        let single = observed.len() == 1;
        for (group, values) in observed {
            let name = if single {
                r.label.clone()
            } else if given_labels {
                format!("{}/{group}", r.label)
            } else {
                group.clone()
            };
            let from = if single || group.is_empty() {
                r.dir.display().to_string()
            } else {
                format!("{} (group {group})", r.dir.display())
            };
            systems.push((name, values));
            origin.push((from, group));
            run_of.push(ri);
        }
    }
    let mut seen = BTreeSet::new();
    for (name, _) in &systems {
        if !seen.insert(name.as_str()) {
            return Err(Error::usage(format!(
                "two systems are called {name:?}; give each run its own name with --labels"
            )));
        }
    }
    if systems.len() < 2 {
        return Err(Error::usage(
            "compare needs at least two systems (runs or result groups)",
        ));
    }

    let mut comparisons = compare_all(&systems, suite.metrics, bootstrap, seed);
    let calibrations = runs
        .iter()
        .map(|r| (suite.calibration)(&r.doc))
        .collect::<Result<Vec<_>>>()?;
    let run_infos: Vec<RunInfo> = runs
        .iter()
        .zip(&calibrations)
        .map(|(r, c)| RunInfo {
            label: &r.label,
            calibration: c,
        })
        .collect();
    let group_of: Vec<&str> = origin.iter().map(|(_, g)| g.as_str()).collect();
    let corrected_notes =
        corrected::attach(&mut comparisons, &systems, &run_of, &group_of, &run_infos);
    let (headlines, ranked) = corrected::headline_rows(&systems, &run_of, &group_of, &run_infos);
    let board = Leaderboard {
        metrics: suite.metrics.to_vec(),
        rows: systems
            .iter()
            .zip(&origin)
            .map(|((name, values), (from, _))| LeaderRow {
                system: name.clone(),
                run: from.clone(),
                values: leaderboard_values(values, suite.metrics, bootstrap, seed),
            })
            .collect(),
    };

    let doc = &runs[0].doc;
    let leaderboard: Vec<serde_json::Value> = board
        .rows
        .iter()
        .map(|r| {
            let mut m = serde_json::Map::new();
            for (spec, v) in board.metrics.iter().zip(&r.values) {
                m.insert(spec.name.to_string(), json!(v));
            }
            json!({"system": r.system, "run": r.run, "metrics": m})
        })
        .collect();
    let benchmark: Vec<Value> = (suite.dataset)(doc)?
        .iter()
        .map(|b| json!({"what": b.what, "value": b.shown}))
        .collect();
    let mut metrics = json!({
        "suite": "compare",
        "scorekit_version": env!("CARGO_PKG_VERSION"),
        "compared_suite": suite.name,
        "runs": runs.iter().map(|r| json!({
            "dir": r.dir.display().to_string(),
            "label": r.label,
            "scorekit_version": r.doc.scorekit_version,
            "inputs": r.doc.inputs,
        })).collect::<Vec<_>>(),
        "benchmark": benchmark,
        "settings": {"bootstrap": bootstrap, "seed": seed, "holm_over": comparisons.len()},
        "leaderboard": leaderboard,
        "comparisons": comparisons,
    });
    if !headlines.is_empty() {
        metrics["headline_ranking"] = json!({"ranked": ranked, "systems": headlines});
    }
    let mut metrics_json = serde_json::to_string_pretty(&metrics)
        .map_err(|e| Error::Internal(anyhow::anyhow!("cannot serialise metrics: {e}")))?;
    metrics_json.push('\n');
    let report_md = report::report(
        doc,
        &board,
        &comparisons,
        bootstrap,
        &corrected_notes,
        (&headlines, ranked),
    );
    Ok(Comparison {
        tables_tex: report::tables_tex(suite.name, &board, &comparisons),
        chart_svg: report::leaderboard_chart(suite.name, &board),
        metrics,
        metrics_json,
        report_md,
    })
}

/// One label per run: `labels` (`--labels`), else each folder's name.
fn run_labels(dirs: &[PathBuf], labels: Option<&[String]>) -> Result<Vec<String>> {
    match labels {
        Some(l) if l.len() != dirs.len() => Err(Error::usage(format!(
            "--labels names {} run(s) but --runs gives {}",
            l.len(),
            dirs.len()
        ))),
        Some(l) => Ok(l.iter().map(|s| s.trim().to_string()).collect()),
        None => Ok(dirs
            .iter()
            .map(|d| {
                d.file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_else(|| d.display().to_string())
            })
            .collect()),
    }
}

/// metrics.json of a finished run.
fn read_doc(dir: &Path) -> Result<MetricsDoc> {
    crate::merge::read_finished(dir, "finish it before comparing")
}

/// All runs are of one registered suite and agree on its benchmark inputs.
fn check_runs(runs: &[Run]) -> Result<&'static Registered> {
    let first = &runs[0];
    let suite = crate::registry::find(&first.doc.suite).ok_or_else(|| {
        Error::usage(format!(
            "{}: suite {:?} cannot be compared by this version of scorekit",
            first.dir.join(METRICS_FILE).display(),
            first.doc.suite
        ))
    })?;
    for r in runs {
        if let Some(shard) = r.doc.run_settings()?.shard {
            return Err(Error::usage(format!(
                "{} is one shard ({}) of a run: combine the shards with `scorekit merge` and \
                 compare the merged folder",
                r.dir.display(),
                serde_json::Value::String(shard)
            )));
        }
    }
    let bench: Vec<DatasetInput> = (suite.dataset)(&first.doc)?;
    for r in &runs[1..] {
        if r.doc.suite != first.doc.suite {
            return Err(Error::usage(format!(
                "{} and {} are runs of different suites ({} vs {}); compare runs of one suite",
                first.dir.display(),
                r.dir.display(),
                first.doc.suite,
                r.doc.suite
            )));
        }
        for (a, b) in bench.iter().zip((suite.dataset)(&r.doc)?) {
            if a.key != b.key {
                return Err(Error::usage(format!(
                    "{} and {} were scored on different benchmark inputs: {} differs ({} vs {})",
                    first.dir.display(),
                    r.dir.display(),
                    a.what,
                    a.shown,
                    b.shown
                )));
            }
        }
    }
    Ok(suite)
}
