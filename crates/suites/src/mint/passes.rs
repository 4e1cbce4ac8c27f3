//! The two ways `scorekit mint` reads its files, both through the run loop's [`Run`]:
//!
//! - on the stored flags, one pass does everything: items go to a staged items.jsonl beside
//!   `--out` as the files come in, and `--out` is opened once the pass is through (an
//!   unfinished run there is simply redone: it costs one pass);
//! - with a re-check (slow: worth resuming), a first pass reads, hashes and checks every line
//!   before `--out` is touched, then `--out` is resumed and a second pass re-checks what is
//!   left, appending each finished item to items.jsonl as it is done.
//!
//! Either way the run's identity (inputs with their sha256, settings, shard) is known before
//! `--out` is opened, and bad input stops the run before `--out` is touched.

use crate::mint::aggregate::Aggregate;
use crate::mint::discover::Source;
use crate::mint::scan::{pass, Reading, Scanned};
use crate::mint::suite::Mint;
use crate::mint::timings::Timings;
use crate::mint::{Item, ItemLines, Recheck};
use crate::run::Run;
use crate::suite::Suite;
use scorekit_core::error::{Error, InputError, Result};
use scorekit_report::{InputFile, MetricsDoc, RunOptions, StagedFile};
use std::collections::HashMap;
use std::path::Path;
use std::time::Instant;

/// The files of a run and how the passes go through them.
pub struct Plan<'a> {
    /// The results.jsonl files, in path order.
    pub sources: &'a [Source],
    /// The worker threads that read them.
    pub threads: usize,
    /// Whether an item is in the run's shard.
    pub in_shard: &'a (dyn Fn(&Item) -> bool + Sync),
    /// Called once per file taken (the progress bar).
    pub tick: &'a dyn Fn(),
}

/// What a run builds from the files as they come in, in path order: the counts per
/// configuration, the staged items.jsonl, each file's sha256, the bytes read and the phases'
/// times.
pub struct Intake {
    /// The counts per configuration.
    pub agg: Aggregate,
    /// items.jsonl, staged beside `--out`.
    pub staged: StagedFile,
    lines: ItemLines,
    /// Each file's sha256, in path order.
    pub hashes: Vec<String>,
    /// The bytes read.
    pub bytes: u64,
    /// The phases' times (`--timings`).
    pub timings: Timings,
}

impl Intake {
    /// Ready for `files` files, items.jsonl staged near `out`; `rechecked`: the tables count
    /// the re-checked verdicts.
    pub fn new(files: usize, rechecked: bool, out: &Path, timings: Timings) -> Result<Self> {
        let agg = Aggregate::new(rechecked);
        let staged = StagedFile::create_near(out, "items.jsonl")?;
        Ok(Intake {
            agg,
            staged,
            lines: ItemLines::default(),
            hashes: vec![String::new(); files],
            bytes: 0,
            timings,
        })
    }

    /// Take one file's items in order: merged by line with the items an unfinished run
    /// already finished for that file, counted (duplicates marked), and written to the staged
    /// items.jsonl.
    fn take(&mut self, src: &Source, scanned: Scanned, done: Vec<Item>) -> Result<()> {
        let timings = &mut self.timings;
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
            self.agg.add(it);
        }
        if src.last_of_key {
            self.agg.release(&src.key);
        }
        let counted = Instant::now();
        timings.aggregate += counted - started;
        let out = self.staged.writer();
        for it in &items {
            self.lines
                .write(it, out)
                .map_err(|e| anyhow::anyhow!("cannot write items.jsonl: {e}"))?;
        }
        timings.write_items += counted.elapsed();
        Ok(())
    }
}

/// The run on the stored flags: one pass reads, counts and stages every item of the shard,
/// then `--out` is opened for the run `doc` describes (its inputs recorded here).
pub fn stored(
    plan: &Plan,
    intake: &mut Intake,
    doc: &mut MetricsDoc,
    out: &RunOptions,
) -> Result<Run<Mint>> {
    let started = Instant::now();
    pass(
        plan.sources,
        Reading::Stored,
        plan.threads,
        plan.in_shard,
        &|_| {},
        |i, scanned| {
            intake.hashes[i] = scanned.sha256.clone();
            intake.bytes += scanned.bytes;
            intake.take(&plan.sources[i], scanned, Vec::new())?;
            (plan.tick)();
            Ok(())
        },
    )?;
    intake.timings.pass = started.elapsed();
    doc.inputs = inputs(plan.sources, &intake.hashes);
    Run::redo(out, doc)
}

/// The re-check run: a first pass checks every line and hashes the files (the run's
/// identity), `--out` is resumed, and a second pass re-checks the items of the shard the
/// unfinished run had not finished (on `jobs` threads at least), appending each to
/// items.jsonl as it is done; every item, finished before or now, is counted and staged.
pub fn rechecked(
    plan: &Plan,
    recheck: &Recheck,
    jobs: usize,
    intake: &mut Intake,
    doc: &mut MetricsDoc,
    out: &RunOptions,
) -> Result<Run<Mint>> {
    let started = Instant::now();
    pass(
        plan.sources,
        Reading::Stored,
        plan.threads,
        &|_| false,
        &|_| {},
        |i, scanned| {
            intake.hashes[i] = scanned.sha256;
            intake.bytes += scanned.bytes;
            Ok(())
        },
    )?;
    intake.timings.validate = started.elapsed();
    doc.inputs = inputs(plan.sources, &intake.hashes);
    let mut run = Run::<Mint>::resume(out, doc)?;
    let mut done_by_file: HashMap<String, Vec<Item>> = HashMap::new();
    for it in run.take_finished() {
        done_by_file.entry(it.file.clone()).or_default().push(it);
    }
    let appender = run.appender()?;
    let keep = |it: &Item| (plan.in_shard)(it) && !run.is_finished(&Mint::key(it));
    // Programs wait on python: with --jobs above the core count, more threads than cores.
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(jobs.max(plan.threads))
        .build()
        .map_err(|e| Error::usage(format!("cannot start {jobs} threads: {e}")))?;
    let started = Instant::now();
    pass(
        plan.sources,
        Reading::Full(recheck, &pool),
        plan.threads,
        &keep,
        &|it| appender.append(it),
        |i, scanned| {
            let src = &plan.sources[i];
            if scanned.sha256 != intake.hashes[i] {
                return Err(InputError::file(
                    &src.path,
                    "changed while scorekit was reading it; run again",
                )
                .into());
            }
            let done = done_by_file.remove(&src.name).unwrap_or_default();
            intake.take(src, scanned, done)?;
            (plan.tick)();
            Ok(())
        },
    )?;
    intake.timings.pass = started.elapsed();
    appender.finish()?;
    if let Some(file) = done_by_file.keys().next() {
        return Err(Error::usage(format!(
            "--out {}: items.jsonl of the unfinished run has items of {file}, which is not among the inputs; pass --force to start over",
            out.out.display()
        )));
    }
    Ok(run)
}

/// The run's inputs: each file with its sha256.
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
