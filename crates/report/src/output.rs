//! The output folder: created if missing, never overwritten silently, files written atomically.

use anyhow::Context;
use scorekit_core::error::{Error, Result};
use serde_json::Value;
use std::fs::{self, File, OpenOptions};
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

/// Files every scoring command writes; their presence means "results live here".
const RESULT_FILES: [&str; 4] = ["metrics.json", "items.jsonl", "report.md", "report.html"];

/// The marker of a run in progress: the run's identity (suite, version, inputs, models,
/// settings, shard). Written before the first item, removed once metrics.json is in place.
pub const RUN_FILE: &str = "run.json";

/// Written last: its presence means the run finished.
pub const METRICS_FILE: &str = "metrics.json";

/// How a scoring run writes its results: the `--out` folder and what the output flags of every
/// scoring command decide (the CLI's `OutputArgs` turned into settings, read by the suites' run
/// loop without knowing the CLI).
#[derive(Debug, Clone)]
pub struct RunOptions {
    /// Folder for metrics.json, items.jsonl and report.md.
    pub out: PathBuf,
    /// Overwrite results already in `out`.
    pub force: bool,
    /// Print metrics.json on stdout instead of the human table.
    pub json: bool,
    /// No progress bars.
    pub quiet: bool,
    /// Bootstrap resamples for the 95% intervals (0: none).
    pub bootstrap: usize,
    /// Seed of the bootstrap.
    pub seed: u64,
    /// The shard of the items this run scores.
    pub shard: scorekit_core::shard::Shard,
}

impl RunOptions {
    /// The common settings every run records (bootstrap, seed, shard).
    pub fn run_settings(&self) -> crate::RunSettings {
        crate::RunSettings::new(self.bootstrap, self.seed, self.shard)
    }
}

/// A folder that receives a command's results.
#[derive(Debug, Clone)]
pub struct OutputDir {
    path: PathBuf,
}

impl OutputDir {
    /// Create `path` if missing. If it already holds results, refuse unless `force`.
    pub fn prepare(path: &Path, force: bool) -> Result<Self> {
        if path.exists() && !path.is_dir() {
            return Err(Error::usage(format!(
                "--out {}: exists and is not a folder",
                path.display()
            )));
        }
        let existing: Vec<&str> = RESULT_FILES
            .iter()
            .copied()
            .filter(|f| path.join(f).exists())
            .collect();
        if !existing.is_empty() && !force {
            return Err(Error::usage(format!(
                "--out {}: already holds results ({}); choose another folder or pass --force to overwrite",
                path.display(),
                existing.join(", ")
            )));
        }
        fs::create_dir_all(path)
            .with_context(|| format!("cannot create output folder {}", path.display()))?;
        Ok(OutputDir {
            path: path.to_path_buf(),
        })
    }

    /// The checks [`OutputDir::resume`] makes that need no run identity, made before any model
    /// loads so that a refused `--out` costs nothing: `path` is not a file, and a finished run
    /// there (metrics.json) needs `force`. Writes nothing.
    pub fn check(path: &Path, force: bool) -> Result<()> {
        if path.exists() && !path.is_dir() {
            return Err(Error::usage(format!(
                "--out {}: exists and is not a folder",
                path.display()
            )));
        }
        if !force && path.join(METRICS_FILE).exists() {
            return Err(Error::usage(format!(
                "--out {}: already holds results ({METRICS_FILE}); choose another folder or pass \
                 --force to overwrite",
                path.display()
            )));
        }
        Ok(())
    }

    /// Prepare `path` for a run that can be resumed.
    ///
    /// - a folder with a finished run (metrics.json) is refused unless `force`, as
    ///   [`OutputDir::prepare`] does;
    /// - a folder with an unfinished run (run.json, no metrics.json) of the same `identity` is
    ///   resumed: the complete lines of items.jsonl are returned (a partial last line, left by
    ///   a kill in the middle of a write, is cut off the file) and new items are appended;
    /// - an unfinished run of another identity is refused (exit 2) naming what differs;
    /// - `force` starts over in every case.
    pub fn resume(path: &Path, force: bool, identity: &Value) -> Result<(Self, Vec<Value>)> {
        if path.exists() && !path.is_dir() {
            return Err(Error::usage(format!(
                "--out {}: exists and is not a folder",
                path.display()
            )));
        }
        let run_file = path.join(RUN_FILE);
        let unfinished = run_file.is_file() && !path.join(METRICS_FILE).exists();
        if force {
            for f in RESULT_FILES.iter().chain([&RUN_FILE]) {
                let p = path.join(f);
                if p.exists() {
                    fs::remove_file(&p)
                        .with_context(|| format!("cannot remove {}", p.display()))?;
                }
            }
        } else if unfinished {
            let text = fs::read_to_string(&run_file)
                .with_context(|| format!("cannot read {}", run_file.display()))?;
            let previous: Value = serde_json::from_str(&text).unwrap_or(Value::Null);
            let dir = OutputDir {
                path: path.to_path_buf(),
            };
            if &previous != identity && dir.complete_lines("items.jsonl")?.is_empty() {
                // Stopped before its first item (bad input, say): nothing to keep, start over.
                fs::remove_file(&run_file)
                    .with_context(|| format!("cannot remove {}", run_file.display()))?;
                let _ = fs::remove_file(dir.join("items.jsonl"));
                return OutputDir::resume(path, false, identity);
            }
            if &previous != identity {
                return Err(Error::usage(format!(
                    "--out {}: holds an unfinished run with different {}; pass --force to start over, or choose another folder",
                    path.display(),
                    differences(&previous, identity)
                )));
            }
            let done = dir.complete_lines("items.jsonl")?;
            return Ok((dir, done));
        }
        let dir = OutputDir::prepare(path, false)?;
        let mut text = serde_json::to_string_pretty(identity).context("cannot serialise run")?;
        text.push('\n');
        dir.write(RUN_FILE, text.as_bytes())?;
        Ok((dir, Vec::new()))
    }

    /// The complete JSON lines of a JSONL file of this folder; a partial or unreadable last
    /// line (a write cut by a kill) is cut off the file so that appending continues cleanly.
    fn complete_lines(&self, name: &str) -> Result<Vec<Value>> {
        let p = self.join(name);
        let bytes = match fs::read(&p) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(anyhow::anyhow!("cannot read {}: {e}", p.display()).into()),
        };
        let mut done = Vec::new();
        let mut keep = 0usize;
        for line in bytes.split_inclusive(|&b| b == b'\n') {
            if line.last() != Some(&b'\n') {
                break;
            }
            match serde_json::from_slice::<Value>(line) {
                Ok(v) => done.push(v),
                Err(_) => break,
            }
            keep += line.len();
        }
        if keep < bytes.len() {
            let f = OpenOptions::new()
                .write(true)
                .open(&p)
                .with_context(|| format!("cannot open {}", p.display()))?;
            f.set_len(keep as u64)
                .and_then(|_| f.sync_all())
                .with_context(|| format!("cannot truncate {}", p.display()))?;
        }
        Ok(done)
    }

    /// Append to items.jsonl (or another JSONL file), one flushed line per item.
    pub fn items_append(&self, name: &str) -> Result<ItemsWriter> {
        ItemsWriter::append(&self.join(name))
    }

    /// What a scoring command prints when done: metrics.json with `--json`, else the human
    /// table and where the results went.
    pub fn print_summary(&self, json: bool, metrics_json: &str, table: &str) {
        if json {
            print!("{metrics_json}");
        } else {
            print!("{table}");
            println!("\nwrote {}", self.path.display());
        }
    }

    /// Write the final files of a run: items.jsonl (whole, in the single-run order), the
    /// suite's other files, report.md, report.html, then metrics.json last, each atomically; then remove the
    /// run marker. A crash at any point leaves no metrics.json, or a complete one beside
    /// complete items and reports.
    pub fn finish(&self, items_jsonl: &[u8], outputs: &Outputs, metrics_json: &str) -> Result<()> {
        self.write("items.jsonl", items_jsonl)?;
        self.finish_rest(outputs, metrics_json)
    }

    /// [`OutputDir::finish`] with items.jsonl written beforehand, in the single-run order, to
    /// a staged file: it is moved into place (as atomically as [`atomic_write`]).
    pub fn finish_staged(
        &self,
        items: StagedFile,
        outputs: &Outputs,
        metrics_json: &str,
    ) -> Result<()> {
        items.persist(&self.join("items.jsonl"))?;
        self.finish_rest(outputs, metrics_json)
    }

    fn finish_rest(&self, outputs: &Outputs, metrics_json: &str) -> Result<()> {
        for (name, body) in &outputs.files {
            self.write(name, body)?;
        }
        self.write("report.md", outputs.report.as_bytes())?;
        // report.html: the page of the run, from the files just written (issue 52).
        crate::html::write_run_page(
            &self.path,
            metrics_json,
            &outputs.report,
            outputs.texts.clone(),
        )?;
        crate::html::timing::report();
        self.write(METRICS_FILE, metrics_json.as_bytes())?;
        let marker = self.join(RUN_FILE);
        if marker.exists() {
            fs::remove_file(&marker)
                .with_context(|| format!("cannot remove {}", marker.display()))?;
        }
        Ok(())
    }

    /// The folder.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Path of a file in the folder.
    pub fn join(&self, name: &str) -> PathBuf {
        self.path.join(name)
    }

    /// Write a whole file atomically.
    pub fn write(&self, name: &str, contents: &[u8]) -> Result<()> {
        atomic_write(&self.join(name), contents)
    }

    /// Start items.jsonl (or another JSONL file) from scratch.
    pub fn items(&self, name: &str) -> Result<ItemsWriter> {
        ItemsWriter::create(&self.join(name))
    }
}

/// Write, fsync, rename: a crash leaves the old file or the new one, never half of one (one
/// implementation for the whole workspace, in the bottom layer).
pub use scorekit_core::fs::atomic_write;

/// A file written through a buffer beside its final place and moved there once complete
/// (a large items.jsonl that is never held in memory). Removed if dropped before
/// [`StagedFile::persist`], so a run stopped by bad input leaves nothing behind.
pub struct StagedFile {
    path: PathBuf,
    out: Option<BufWriter<File>>,
}

impl StagedFile {
    /// Create a hidden temporary file in the first existing folder among `dir` and its
    /// parents (the folder itself may not exist yet), so that the final move stays on one
    /// file system.
    pub fn create_near(dir: &Path, name: &str) -> Result<Self> {
        let base = dir
            .ancestors()
            .find(|d| d.is_dir())
            .filter(|d| !d.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        sweep_stale(base, name);
        let path = base.join(format!(".{name}.{}.staged", std::process::id()));
        let f = File::create(&path).with_context(|| format!("cannot create {}", path.display()))?;
        Ok(StagedFile {
            path,
            out: Some(BufWriter::with_capacity(1 << 20, f)),
        })
    }

    /// Append bytes.
    pub fn write_all(&mut self, bytes: &[u8]) -> Result<()> {
        self.out
            .as_mut()
            .expect("open until persisted")
            .write_all(bytes)
            .with_context(|| format!("cannot write {}", self.path.display()))?;
        Ok(())
    }

    /// The buffered writer, to serialise into.
    pub fn writer(&mut self) -> &mut BufWriter<File> {
        self.out.as_mut().expect("open until persisted")
    }

    /// Flush, fsync and move to `dest` (copying where a rename cannot cross file systems).
    pub fn persist(mut self, dest: &Path) -> Result<()> {
        let out = self.out.take().expect("open until persisted");
        let f = out
            .into_inner()
            .map_err(|e| anyhow::anyhow!("cannot write {}: {}", self.path.display(), e.error()))?;
        f.sync_all()
            .with_context(|| format!("cannot write {}", self.path.display()))?;
        drop(f);
        if fs::rename(&self.path, dest).is_err() {
            fs::copy(&self.path, dest)
                .and_then(|_| File::open(dest)?.sync_all())
                .with_context(|| format!("cannot write {}", dest.display()))?;
            let _ = fs::remove_file(&self.path);
        }
        if let Some(d) = dest.parent().and_then(|d| File::open(d).ok()) {
            let _ = d.sync_all();
        }
        self.path = PathBuf::new();
        Ok(())
    }
}

/// Remove staged files that killed runs left behind (their process is gone), where the
/// system says which processes live (`/proc`).
fn sweep_stale(dir: &Path, name: &str) {
    if !Path::new("/proc/self").exists() {
        return;
    }
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    let prefix = format!(".{name}.");
    for e in entries.flatten() {
        let file = e.file_name();
        let Some(pid) = file
            .to_str()
            .and_then(|f| f.strip_prefix(&prefix))
            .and_then(|f| f.strip_suffix(".staged"))
            .and_then(|p| p.parse::<u32>().ok())
        else {
            continue;
        };
        if pid != std::process::id() && !Path::new("/proc").join(pid.to_string()).exists() {
            let _ = fs::remove_file(e.path());
        }
    }
}

impl Drop for StagedFile {
    fn drop(&mut self) {
        if !self.path.as_os_str().is_empty() {
            let _ = fs::remove_file(&self.path);
        }
    }
}

/// What a run writes and shows besides items.jsonl and metrics.json, computed from items by
/// the one function per suite that the command and `scorekit merge` both call.
#[derive(Debug, Clone, Default)]
pub struct Outputs {
    /// report.md.
    pub report: String,
    /// The human table for stdout.
    pub table: String,
    /// Other files of the suite (name in the output folder, contents).
    pub files: Vec<(String, Vec<u8>)>,
    /// The texts of the inputs the items point at, for report.html (story's passages,
    /// questions, options and endings); `None` where the suite has none or did not find them.
    pub texts: Option<Value>,
}

/// Top-level keys whose values differ between two run identities, for messages.
fn differences(a: &Value, b: &Value) -> String {
    let keys: Vec<String> = match (a.as_object(), b.as_object()) {
        (Some(a), Some(b)) => {
            let mut k: Vec<String> = a
                .keys()
                .chain(b.keys())
                .filter(|k| a.get(*k) != b.get(*k))
                .cloned()
                .collect();
            k.dedup();
            k
        }
        _ => vec!["identity (run.json unreadable)".into()],
    };
    keys.join(", ")
}

/// Items serialised as JSON Lines.
pub fn jsonl<T: serde::Serialize>(items: &[T]) -> Result<Vec<u8>> {
    let mut out = Vec::new();
    for it in items {
        serde_json::to_writer(&mut out, it).context("cannot serialise item")?;
        out.push(b'\n');
    }
    Ok(out)
}

/// A JSON Lines writer that flushes whole lines, so a killed run leaves only complete lines.
pub struct ItemsWriter {
    path: PathBuf,
    out: BufWriter<File>,
    /// Flush after every line (resumable runs).
    flush_lines: bool,
}

impl ItemsWriter {
    /// Open for appending; every line is written and flushed to the OS as a whole, so a kill
    /// loses at most the line being written (cut off on resume).
    pub fn append(path: &Path) -> Result<Self> {
        let f = OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .with_context(|| format!("cannot open {}", path.display()))?;
        Ok(ItemsWriter {
            path: path.to_path_buf(),
            out: BufWriter::with_capacity(1 << 16, f),
            flush_lines: true,
        })
    }

    /// Create (truncate) the file.
    pub fn create(path: &Path) -> Result<Self> {
        let f = File::create(path).with_context(|| format!("cannot create {}", path.display()))?;
        Ok(ItemsWriter {
            path: path.to_path_buf(),
            out: BufWriter::new(f),
            flush_lines: false,
        })
    }

    /// Append one item as a JSON line.
    pub fn write<T: serde::Serialize>(&mut self, item: &T) -> Result<()> {
        let mut line = serde_json::to_vec(item).context("cannot serialise item")?;
        line.push(b'\n');
        self.out
            .write_all(&line)
            .and_then(|_| {
                if self.flush_lines {
                    self.out.flush()
                } else {
                    Ok(())
                }
            })
            .with_context(|| format!("cannot write {}", self.path.display()))?;
        Ok(())
    }

    /// Flush and fsync.
    pub fn finish(mut self) -> Result<()> {
        self.out
            .flush()
            .and_then(|_| self.out.get_ref().sync_all())
            .with_context(|| format!("cannot write {}", self.path.display()))?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refuses_to_overwrite_results_without_force() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("new/nested");
        let o = OutputDir::prepare(&out, false).unwrap();
        o.write("metrics.json", b"{}").unwrap();
        let e = OutputDir::prepare(&out, false).unwrap_err();
        assert_eq!(e.exit_code(), 2);
        assert!(e.to_string().contains("--force"), "{e}");
        assert!(OutputDir::prepare(&out, true).is_ok());
        assert_eq!(fs::read(out.join("metrics.json")).unwrap(), b"{}");
        assert!(!out.join("metrics.json.tmp").exists());
    }

    #[test]
    fn resumes_an_unfinished_run_and_cuts_a_partial_line() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("run");
        let id = serde_json::json!({"suite": "x", "settings": {"seed": 0}});
        let (o, done) = OutputDir::resume(&out, false, &id).unwrap();
        assert!(done.is_empty());
        let mut w = o.items_append("items.jsonl").unwrap();
        w.write(&serde_json::json!({"row": 1})).unwrap();
        drop(w);
        // A kill in the middle of the second line.
        let mut f = OpenOptions::new()
            .append(true)
            .open(out.join("items.jsonl"))
            .unwrap();
        f.write_all(b"{\"row\": 2, \"verd").unwrap();
        drop(f);
        let other = serde_json::json!({"suite": "x", "settings": {"seed": 1}});
        // An unfinished run without items (stopped on bad input) is simply started over.
        let empty = dir.path().join("empty");
        OutputDir::resume(&empty, false, &id).unwrap();
        let (_, done) = OutputDir::resume(&empty, false, &other).unwrap();
        assert!(done.is_empty());
        let e = OutputDir::resume(&out, false, &other).unwrap_err();
        assert_eq!(e.exit_code(), 2);
        assert!(e.to_string().contains("settings"), "{e}");
        let (o, done) = OutputDir::resume(&out, false, &id).unwrap();
        assert_eq!(done, vec![serde_json::json!({"row": 1})]);
        assert_eq!(
            fs::read_to_string(out.join("items.jsonl")).unwrap(),
            "{\"row\":1}\n"
        );
        let outputs = Outputs {
            report: "# r\n".into(),
            ..Outputs::default()
        };
        o.finish(b"{\"row\":1}\n", &outputs, "{}\n").unwrap();
        assert!(!out.join(RUN_FILE).exists());
        // Finished: refused without --force, like prepare.
        assert_eq!(
            OutputDir::resume(&out, false, &id).unwrap_err().exit_code(),
            2
        );
        let (_, done) = OutputDir::resume(&out, true, &id).unwrap();
        assert!(done.is_empty());
        assert!(!out.join("metrics.json").exists());
    }

    #[test]
    fn items_are_written_as_lines() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("items.jsonl");
        let mut w = ItemsWriter::create(&p).unwrap();
        w.write(&serde_json::json!({"row": 1})).unwrap();
        w.write(&serde_json::json!({"row": 2})).unwrap();
        w.finish().unwrap();
        assert_eq!(fs::read_to_string(p).unwrap(), "{\"row\":1}\n{\"row\":2}\n");
    }
}
