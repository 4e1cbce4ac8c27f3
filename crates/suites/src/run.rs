//! The run loop every scoring suite (story, grasp, muse, mint) goes through, written once: the
//! settings recorded, `--out` opened (an unfinished run of the same identity continued, its
//! finished items read back typed), items appended as they are scored, the suite's metrics and
//! reports computed from the items, the files written and the summary printed. A suite's pipeline
//! supplies only what is its own: reading and checking its inputs, scoring, and its [`Suite`]
//! (item type, settings, key, outputs).

use crate::suite::Suite;
use scorekit_core::error::{Error, Result};
use scorekit_report::{ItemsWriter, MetricsDoc, OutputDir, Outputs, RunOptions, StagedFile};
use std::collections::HashSet;
use std::marker::PhantomData;
use std::sync::{Mutex, PoisonError};

/// Record `settings` beside the common ones of `out` (bootstrap, seed, shard) in `doc`.
pub fn record<S: Suite>(
    doc: &mut MetricsDoc,
    out: &RunOptions,
    settings: &S::Settings,
) -> Result<()> {
    doc.set_settings(&out.run_settings(), settings)
}

/// Open `--out` for the run `doc` describes (its inputs, models and settings recorded: they are
/// its identity): an unfinished run of the same identity there is continued and its finished
/// items are returned, parsed as the suite's items.
pub fn resume<S: Suite>(out: &RunOptions, doc: &MetricsDoc) -> Result<(OutputDir, Vec<S::Item>)> {
    let (dir, done) = OutputDir::resume(&out.out, out.force, &doc.identity())?;
    let items = done
        .into_iter()
        .map(serde_json::from_value)
        .collect::<std::result::Result<Vec<S::Item>, _>>()
        .map_err(|e| {
            Error::usage(format!(
                "--out {}: items.jsonl of the unfinished run is not {} items ({e}); pass --force to start over",
                out.out.display(),
                S::TITLE
            ))
        })?;
    Ok((dir, items))
}

/// A scoring run in progress: `--out` open, the finished items of an unfinished run taken over,
/// new items kept (and, for a slow suite, appended to items.jsonl as each is scored).
pub struct Run<S: Suite> {
    dir: OutputDir,
    /// `--json`: print metrics.json rather than the table.
    json: bool,
    finished: HashSet<S::Key>,
    resumed: usize,
    items: Vec<S::Item>,
    writer: Option<ItemsWriter>,
}

impl<S: Suite> Run<S> {
    /// Record `settings` in `doc` and open `--out` (see [`resume`]).
    pub fn open(out: &RunOptions, doc: &mut MetricsDoc, settings: &S::Settings) -> Result<Self> {
        record::<S>(doc, out, settings)?;
        Self::resume(out, doc)
    }

    /// Open `--out` for a run whose settings `doc` holds already ([`record`]; see [`resume`]).
    pub fn resume(out: &RunOptions, doc: &MetricsDoc) -> Result<Self> {
        let (dir, items) = resume::<S>(out, doc)?;
        Ok(Run {
            finished: items.iter().map(S::key).collect(),
            resumed: items.len(),
            items,
            dir,
            json: out.json,
            writer: None,
        })
    }

    /// Open `--out` for a run that reads every item again and writes its items.jsonl staged
    /// ([`Run::finish_staged`]): an unfinished run of the same identity is redone (cheaper than
    /// reading back its items), one of another identity refused as by [`resume`].
    pub fn redo(out: &RunOptions, doc: &MetricsDoc) -> Result<Self> {
        let (dir, _) = OutputDir::resume(&out.out, out.force, &doc.identity())?;
        Ok(Run {
            dir,
            json: out.json,
            finished: HashSet::new(),
            resumed: 0,
            items: Vec::new(),
            writer: None,
        })
    }

    /// Hand the finished items of the unfinished run taken over to a suite that writes its
    /// items.jsonl staged and puts them there itself; [`Run::is_finished`] and [`Run::resumed`]
    /// still know them. Call it before any item is appended: it takes every item held.
    pub fn take_finished(&mut self) -> Vec<S::Item> {
        std::mem::take(&mut self.items)
    }

    /// items.jsonl opened for items finished on several threads at once, each appended as one
    /// flushed line as soon as it is done and not kept (see [`Appender`]).
    pub fn appender(&self) -> Result<Appender<S>> {
        Ok(Appender {
            writer: Mutex::new(self.dir.items_append("items.jsonl")?),
            error: Mutex::new(None),
            suite: PhantomData,
        })
    }

    /// Whether the item of this key was finished by the unfinished run taken over.
    pub fn is_finished(&self, key: &S::Key) -> bool {
        self.finished.contains(key)
    }

    /// How many items the unfinished run had finished.
    pub fn resumed(&self) -> usize {
        self.resumed
    }

    /// A newly scored item, appended to items.jsonl at once (one flushed line): a killed run
    /// loses at most the item in flight. For suites whose scoring is slow enough to resume.
    pub fn append(&mut self, item: S::Item) -> Result<()> {
        let writer = match &mut self.writer {
            Some(w) => w,
            None => self.writer.insert(self.dir.items_append("items.jsonl")?),
        };
        writer.write(&item)?;
        self.items.push(item);
        Ok(())
    }

    /// Scored items, kept for the end of the run: for suites that score in well under a second,
    /// whose unfinished run is simply scored again. Items the unfinished run finished are kept
    /// as it wrote them.
    pub fn extend(&mut self, mut items: Vec<S::Item>) {
        let finished = &self.finished;
        items.retain(|i| !finished.contains(&S::key(i)));
        if self.items.is_empty() {
            // Taken whole, not copied item by item into a growing vector: GRASP's 1M items
            // would be held twice at the peak.
            self.items = items;
        } else {
            self.items.append(&mut items);
        }
    }

    /// End the run with the suite's own outputs ([`Suite::outputs`]) and `files` beside them.
    pub fn finish(self, doc: &mut MetricsDoc, files: Vec<(String, Vec<u8>)>) -> Result<Done<S>> {
        self.finish_with(doc, files, S::outputs)
    }

    /// [`Run::finish`] with another way to the outputs (a single run's errors can name lines a
    /// merge no longer knows).
    pub fn finish_with(
        mut self,
        doc: &mut MetricsDoc,
        files: Vec<(String, Vec<u8>)>,
        outputs: impl FnOnce(&mut MetricsDoc, &mut [S::Item]) -> Result<Outputs>,
    ) -> Result<Done<S>> {
        if let Some(w) = self.writer.take() {
            ItemsWriter::finish(w)?;
        }
        let mut outputs = outputs(doc, &mut self.items)?;
        outputs.files.extend(files);
        let metrics_json = doc.to_json();
        // Serialised straight to a staged file, not into memory first: items.jsonl is the
        // largest thing a run writes (GRASP at 1M rows: ~300 MB).
        let mut staged = StagedFile::create_near(self.dir.path(), "items.jsonl")?;
        for item in &self.items {
            serde_json::to_writer(staged.writer(), item)
                .map_err(|e| Error::Internal(anyhow::anyhow!("cannot write items.jsonl: {e}")))?;
            staged.write_all(b"\n")?;
        }
        self.dir.finish_staged(staged, &outputs, &metrics_json)?;
        if self.resumed > 0 {
            eprintln!(
                "{}: {} item(s) taken over from the unfinished run",
                S::NAME,
                self.resumed
            );
        }
        Ok(Done {
            items: self.items,
            outputs,
            metrics_json,
            dir: self.dir,
            json: self.json,
        })
    }

    /// End a run whose items went to `staged` as they were scored (none is held) and whose
    /// `outputs` were computed from their counts: items.jsonl is `staged` as written. An
    /// unfinished run's finished items are not taken over: every item was scored again, unless
    /// the suite wrote them to `staged` itself ([`Run::take_finished`]).
    pub fn finish_staged(
        self,
        doc: &mut MetricsDoc,
        staged: StagedFile,
        outputs: Outputs,
    ) -> Result<Done<S>> {
        let metrics_json = doc.to_json();
        self.dir.finish_staged(staged, &outputs, &metrics_json)?;
        Ok(Done {
            items: Vec::new(),
            outputs,
            metrics_json,
            dir: self.dir,
            json: self.json,
        })
    }
}

/// items.jsonl of a run appended to by the threads that finish its items: one flushed line
/// per item, in the order they finish, so a killed run resumes without redoing them. A write
/// error does not stop the threads; the first one is returned by [`Appender::finish`].
pub struct Appender<S: Suite> {
    writer: Mutex<ItemsWriter>,
    error: Mutex<Option<Error>>,
    suite: PhantomData<fn(&S::Item)>,
}

impl<S: Suite> Appender<S> {
    /// Append a finished item (its write error kept for [`Appender::finish`]).
    pub fn append(&self, item: &S::Item) {
        // Poisoned only by a panic on another worker thread, which the pool passes on to the
        // run anyway: not a reason to panic here too.
        let mut writer = self.writer.lock().unwrap_or_else(PoisonError::into_inner);
        if let Err(e) = writer.write(item) {
            let mut slot = self.error.lock().unwrap_or_else(PoisonError::into_inner);
            slot.get_or_insert(e);
        }
    }

    /// The first write error, or items.jsonl flushed and synced.
    pub fn finish(self) -> Result<()> {
        let error = self
            .error
            .into_inner()
            .unwrap_or_else(PoisonError::into_inner);
        if let Some(e) = error {
            return Err(e);
        }
        ItemsWriter::finish(
            self.writer
                .into_inner()
                .unwrap_or_else(PoisonError::into_inner),
        )
    }
}

/// A finished run: its items in the single-run order and what it wrote.
pub struct Done<S: Suite> {
    /// The items, in the single-run order (none after [`Run::finish_staged`]).
    pub items: Vec<S::Item>,
    /// The outputs written.
    pub outputs: Outputs,
    /// metrics.json as written.
    pub metrics_json: String,
    dir: OutputDir,
    json: bool,
}

impl<S: Suite> Done<S> {
    /// Print what a scoring command prints when done: metrics.json with `--json`, else the
    /// human table and where the results went.
    pub fn print(&self) {
        self.dir
            .print_summary(self.json, &self.metrics_json, &self.outputs.table);
    }
}
