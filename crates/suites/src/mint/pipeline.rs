//! `scorekit mint` from its settings to its finished outputs: find the results.jsonl files,
//! stream them (parsed, hashed and, if asked, re-checked on worker threads), aggregate and
//! stage items.jsonl as the files come in path order ([`crate::mint::passes`]), then write
//! sr.csv, tables.md/.tex, sr_curves.svg, metrics.json and report.md.
//!
//! Memory does not grow with the archive: a file is read one buffer at a time, at most 64
//! files per worker are in flight, and what the tables need is accumulated per configuration
//! ([`crate::mint::aggregate::Aggregate`]).

use crate::mint::checkers::Tolerance;
use crate::mint::discover::{discover, sources, Found};
use crate::mint::exec::{python_version, ExecConfig};
use crate::mint::outputs::{record_folder_facts, render};
use crate::mint::passes::{self, Intake, Plan};
use crate::mint::suite::Mint;
use crate::mint::timings::Timings;
use crate::mint::{shard_key, Item, Recheck};
use crate::run::{record, Done, Run};
use crate::settings::MintSettings;
use scorekit_core::error::{Error, InputError, Result};
use scorekit_report::{DatasetRef, MetricsDoc, RunOptions};
use scorekit_sandbox::Limits;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// What `scorekit mint` is asked to do, its flags resolved (the binary's `settings::mint`).
#[derive(Debug, Clone)]
pub struct Input {
    /// The folder searched for results.jsonl files (`--outputs`, a pinned dataset resolved).
    pub root: PathBuf,
    /// The pinned dataset `--outputs` named, if it named one.
    pub dataset: Option<PinnedPart>,
    /// Verdicts re-checked (`--recheck`, or implied by `--exec-code`).
    pub recheck: bool,
    /// The numeric tolerance of the re-check (`--tolerance`).
    pub tolerance: Tolerance,
    /// Code answers run in the sandbox (`--exec-code`).
    pub exec_code: bool,
    /// Seconds allowed per program (`--exec-timeout`).
    pub exec_timeout_s: u64,
    /// Address-space limit per program, in MiB (`--exec-memory`).
    pub exec_memory_mib: u64,
    /// Programs run at once (`--jobs`, default the number of cores).
    pub jobs: usize,
    /// Print the phases' times on stderr (`--timings`).
    pub timings: bool,
    /// Where and how the results are written.
    pub run: RunOptions,
}

/// A part of a pinned dataset (`scorekit data`): what metrics.json records of it, and its files
/// (the cache folder may hold other parts of the dataset too).
#[derive(Debug, Clone)]
pub struct PinnedPart {
    /// The dataset as metrics.json records it.
    pub record: DatasetRef,
    /// The part's files in the cache.
    pub files: Vec<PathBuf>,
}

/// Run `scorekit mint`: results written to `--out`, the phases' times printed with
/// `--timings`; returns the finished run for the command to print.
pub fn run(opts: &Input) -> Result<Done<Mint>> {
    let root = &opts.root;
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
    let mut found = discover(root)?;
    if let Some(d) = &opts.dataset {
        found.keep_part(&d.files);
    }
    timings.walk = started.elapsed();
    warn_found(root, &found)?;
    let sources = sources(std::mem::take(&mut found.files));
    let (recheck, settings) = verdict_rule(opts)?;
    let mut doc = MetricsDoc::new("mint");
    doc.datasets
        .extend(opts.dataset.as_ref().map(|d| d.record.clone()));
    record::<Mint>(&mut doc, &opts.run, &settings)?;
    let shard = opts.run.shard;
    let in_shard = |it: &Item| shard.contains_with(|| shard_key(it));
    let bar = scorekit_core::progress::bar(sources.len() as u64, "mint", opts.run.quiet);
    let tick = || bar.inc(1);
    let plan = Plan {
        sources: &sources,
        threads: timings.threads,
        in_shard: &in_shard,
        tick: &tick,
    };
    let mut intake = Intake::new(sources.len(), opts.recheck, &opts.run.out, timings)?;
    let run = if opts.recheck {
        passes::rechecked(&plan, &recheck, opts.jobs, &mut intake, &mut doc, &opts.run)?
    } else {
        passes::stored(&plan, &mut intake, &mut doc, &opts.run)?
    };
    bar.finish_and_clear();
    finish(opts, run, doc, intake, &found, started)
}

/// No results.jsonl is an error; files that do not fit the layout and other files are warned
/// about on stderr.
fn warn_found(root: &Path, found: &Found) -> Result<()> {
    if found.files.is_empty() {
        return Err(InputError::file(
            root,
            "no results.jsonl in the upstream layout under this folder",
        )
        .into());
    }
    for (p, why) in &found.misfits {
        eprintln!(
            "warning: {}: skipped, path does not fit the layout: {why}",
            p.display()
        );
    }
    if let Some(first) = found.stray.first() {
        eprintln!(
            "warning: {} other file(s) under {} ignored (first: {})",
            found.stray.len(),
            root.display(),
            first.display()
        );
    }
    Ok(())
}

/// What is re-checked and how, and the settings metrics.json records of it (with
/// `--exec-code`: the Python found and the sandbox's isolation).
fn verdict_rule(opts: &Input) -> Result<(Recheck, MintSettings)> {
    let exec = match opts.exec_code {
        true => Some(exec_config(opts)?),
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
        reasoning: opts.recheck.then_some(opts.tolerance),
        exec,
    };
    let exec_isolation = match opts.exec_code {
        true => {
            Some(serde_json::to_value(scorekit_sandbox::isolation()).map_err(anyhow::Error::from)?)
        }
        false => None,
    };
    let settings = MintSettings {
        recheck: opts.recheck,
        tolerance: opts.tolerance.name().to_string(),
        exec_code: opts.exec_code,
        exec_timeout_s: opts.exec_timeout_s,
        python,
        exec_memory_mib: opts.exec_code.then_some(opts.exec_memory_mib),
        exec_isolation,
        verdict: if opts.recheck {
            "rechecked where computed, else stored"
        } else {
            "stored"
        }
        .into(),
    };
    Ok((recheck, settings))
}

/// The `--exec-code` runner: limits from the settings; says on stderr which isolation is
/// missing.
fn exec_config(opts: &Input) -> Result<ExecConfig> {
    let limits = Limits {
        timeout: Duration::from_secs(opts.exec_timeout_s),
        memory_bytes: opts.exec_memory_mib.saturating_mul(1 << 20),
        ..Limits::default()
    };
    let cfg = ExecConfig::new("python3", limits, opts.jobs)
        .map_err(|e| Error::usage(format!("--exec-code needs python3: {e}")))?;
    for gap in &scorekit_sandbox::isolation().missing {
        eprintln!("warning: --exec-code isolation: {gap}");
    }
    Ok(cfg)
}

/// Tables, metrics and reports from the counts, everything written to `--out` (items.jsonl
/// moved in place from its staged file), the phases' times printed with `--timings`.
fn finish(
    opts: &Input,
    run: Run<Mint>,
    mut doc: MetricsDoc,
    intake: Intake,
    found: &Found,
    started: Instant,
) -> Result<Done<Mint>> {
    let elapsed = started.elapsed().as_secs_f64();
    record_folder_facts(&mut doc, &found.misfits, &found.stray);
    let Intake {
        agg,
        staged,
        bytes,
        mut timings,
        ..
    } = intake;
    let totals = agg.finish();
    if opts.run.shard.count == 1 {
        for c in totals.stats.iter().filter(|c| !c.complete()) {
            eprintln!(
                "warning: {} is incomplete and left out of the tables: {}",
                c.key.label(),
                c.missing.join("; ")
            );
        }
    }
    let trajectories = totals.trajectories;
    let resumed = run.resumed();
    let (mut outputs, bootstrap) = render(&mut doc, totals)?;
    timings.bootstrap = bootstrap;
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
    let done = run.finish_staged(&mut doc, staged, outputs)?;
    timings.write_files = write_started.elapsed();
    if opts.timings {
        timings.print(started.elapsed(), bytes, trajectories);
    }
    Ok(done)
}

#[cfg(test)]
mod tests {
    use super::*;
    use scorekit_core::shard::Shard;
    use std::fs;

    /// One trajectory line whose stored flag is `success` and whose answer is `answer`.
    fn line(id: u64, success: bool, answer: &str) -> String {
        serde_json::json!({
            "state": {"history": [
                {"role": "user", "content": "task"},
                {"role": "assistant", "content": format!("Assistant:\n<solution> {answer} </solution>\n")},
            ], "success": success, "agent_action_count": {"propose_solution": 1, "use_tool": 0, "invalid_action": 0},
            "terminate_reason": "task_success"},
            "task": {"task_id": id, "reference": "42", "prompt": "p", "task_name": "reasoning", "metadata": {}}
        })
        .to_string()
    }

    /// An outputs folder with one gsm8k file (the second answer's stored flag is wrong), a
    /// results.jsonl off the layout and a stray file.
    fn tree(root: &Path) -> PathBuf {
        let dir = root.join("m/F=None/max5_p2+tool+cd/reasoning/gsm8k");
        fs::create_dir_all(&dir).unwrap();
        let text = format!(
            "{}\n\n{}\n{}\n",
            line(1, true, "42"),
            line(2, false, "42"),
            line(3, false, "7")
        );
        fs::write(dir.join("results.jsonl"), text).unwrap();
        fs::create_dir_all(root.join("odd")).unwrap();
        fs::write(root.join("odd/results.jsonl"), line(9, true, "1")).unwrap();
        fs::write(root.join("notes.txt"), "hi").unwrap();
        dir.join("results.jsonl")
    }

    fn options(root: &Path, out: &Path, recheck: bool) -> Input {
        Input {
            root: root.to_path_buf(),
            dataset: None,
            recheck,
            tolerance: Tolerance::Head,
            exec_code: false,
            exec_timeout_s: 10,
            exec_memory_mib: 2048,
            jobs: 2,
            timings: false,
            run: RunOptions {
                out: out.to_path_buf(),
                force: false,
                json: false,
                quiet: true,
                bootstrap: 20,
                seed: 0,
                shard: Shard { index: 0, count: 1 },
            },
        }
    }

    fn read(dir: &Path, name: &str) -> String {
        fs::read_to_string(dir.join(name)).unwrap()
    }

    /// The report without its last line (the run's time).
    fn report_tables(dir: &Path) -> String {
        let report = read(dir, "report.md");
        report[..report.rfind("\n\n").unwrap()].to_string()
    }

    #[test]
    fn a_stored_run_writes_every_output_and_records_the_folder() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("outputs");
        tree(&root);
        let out = tmp.path().join("out");
        let done = run(&options(&root, &out, false)).unwrap();
        assert!(done.items.is_empty(), "a staged run holds no items");
        for f in [
            "items.jsonl",
            "metrics.json",
            "report.md",
            "sr.csv",
            "tables.md",
            "tables.tex",
        ] {
            assert!(out.join(f).is_file(), "{f}");
        }
        assert!(!out.join("recheck.csv").exists());
        assert!(!out.join("run.json").exists());
        let items: Vec<Item> = read(&out, "items.jsonl")
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(items.iter().map(|i| i.line).collect::<Vec<_>>(), [1, 3, 4]);
        let m: serde_json::Value = serde_json::from_str(&done.metrics_json).unwrap();
        assert_eq!(m["metrics"]["other_files"], 1);
        assert_eq!(m["metrics"]["skipped_files"].as_array().unwrap().len(), 1);
        assert_eq!(m["inputs"].as_array().unwrap().len(), 1);
        assert!(done.outputs.report.contains("3 trajectories from 1 files"));
    }

    #[test]
    fn a_recheck_run_resumes_an_unfinished_one_to_the_same_results() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("outputs");
        tree(&root);
        let whole = tmp.path().join("whole");
        let done = run(&options(&root, &whole, true)).unwrap();
        let m: serde_json::Value = serde_json::from_str(&done.metrics_json).unwrap();
        assert_eq!(m["metrics"]["recheck_differ"], 1);
        assert!(whole.join("recheck.csv").is_file());

        // Killed after its first item: run.json holds the identity, items.jsonl one line and
        // half of the next.
        let part = tmp.path().join("part");
        fs::create_dir_all(&part).unwrap();
        let doc: MetricsDoc = serde_json::from_str(&done.metrics_json).unwrap();
        fs::write(
            part.join("run.json"),
            serde_json::to_string_pretty(&doc.identity()).unwrap(),
        )
        .unwrap();
        let first = read(&whole, "items.jsonl")
            .lines()
            .next()
            .unwrap()
            .to_string();
        fs::write(part.join("items.jsonl"), format!("{first}\n{{\"file\":")).unwrap();
        let resumed = run(&options(&root, &part, true)).unwrap();
        assert!(resumed
            .outputs
            .report
            .contains("(1 taken over from the unfinished run)"));
        for f in [
            "items.jsonl",
            "metrics.json",
            "recheck.csv",
            "sr.csv",
            "tables.md",
        ] {
            assert_eq!(read(&whole, f), read(&part, f), "{f}");
        }
        assert_eq!(report_tables(&whole), report_tables(&part));
    }

    #[test]
    fn an_unfinished_run_with_items_of_another_file_is_refused() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("outputs");
        tree(&root);
        let whole = tmp.path().join("whole");
        let done = run(&options(&root, &whole, true)).unwrap();
        let part = tmp.path().join("part");
        fs::create_dir_all(&part).unwrap();
        let doc: MetricsDoc = serde_json::from_str(&done.metrics_json).unwrap();
        fs::write(
            part.join("run.json"),
            serde_json::to_string(&doc.identity()).unwrap(),
        )
        .unwrap();
        let mut item: Item =
            serde_json::from_str(read(&whole, "items.jsonl").lines().next().unwrap()).unwrap();
        item.file = "elsewhere/results.jsonl".into();
        fs::write(
            part.join("items.jsonl"),
            format!("{}\n", serde_json::to_string(&item).unwrap()),
        )
        .unwrap();
        let e = run(&options(&root, &part, true)).err().unwrap().to_string();
        assert!(
            e.contains("items of elsewhere/results.jsonl, which is not among the inputs"),
            "{e}"
        );
    }

    #[test]
    fn a_missing_folder_and_a_folder_without_results_are_refused() {
        let tmp = tempfile::tempdir().unwrap();
        let out = tmp.path().join("out");
        let e = run(&options(&tmp.path().join("none"), &out, false))
            .err()
            .unwrap()
            .to_string();
        assert!(e.contains("none: not a folder"), "{e}");
        fs::write(tmp.path().join("notes.txt"), "hi").unwrap();
        let e = run(&options(tmp.path(), &out, false))
            .err()
            .unwrap()
            .to_string();
        assert!(e.contains("no results.jsonl in the upstream layout"), "{e}");
        assert!(!out.exists());
    }
}
