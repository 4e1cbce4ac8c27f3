//! The output folder: created if missing, never overwritten silently, files written atomically.

use crate::error::{Error, Result};
use anyhow::Context;
use std::fs::{self, File};
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

/// Files every scoring command writes; their presence means "results live here".
const RESULT_FILES: [&str; 3] = ["metrics.json", "items.jsonl", "report.md"];

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

/// Write, fsync, rename: a crash leaves the old file or the new one, never half of one.
pub fn atomic_write(path: &Path, contents: &[u8]) -> Result<()> {
    let tmp = path.with_extension(format!(
        "{}.tmp",
        path.extension().and_then(|e| e.to_str()).unwrap_or("")
    ));
    let write = || -> std::io::Result<()> {
        let mut f = File::create(&tmp)?;
        f.write_all(contents)?;
        f.sync_all()?;
        fs::rename(&tmp, path)?;
        if let Some(dir) = path.parent() {
            // The rename is durable only once the folder entry is.
            if let Ok(d) = File::open(dir) {
                let _ = d.sync_all();
            }
        }
        Ok(())
    };
    write().with_context(|| format!("cannot write {}", path.display()))?;
    Ok(())
}

/// A JSON Lines writer that flushes whole lines, so a killed run leaves only complete lines.
pub struct ItemsWriter {
    path: PathBuf,
    out: BufWriter<File>,
}

impl ItemsWriter {
    /// Create (truncate) the file.
    pub fn create(path: &Path) -> Result<Self> {
        let f = File::create(path).with_context(|| format!("cannot create {}", path.display()))?;
        Ok(ItemsWriter {
            path: path.to_path_buf(),
            out: BufWriter::new(f),
        })
    }

    /// Append one item as a JSON line.
    pub fn write<T: serde::Serialize>(&mut self, item: &T) -> Result<()> {
        let mut line = serde_json::to_vec(item).context("cannot serialise item")?;
        line.push(b'\n');
        self.out
            .write_all(&line)
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
