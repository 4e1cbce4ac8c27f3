//! The data cache: `<root>/<dataset>/<commit>/<upstream path>`, plus scorekit's own records in
//! `<root>/<dataset>/<commit>/.scorekit/` (the sha256 of every verified file, and temporary files
//! of transfers in progress). A file appears at its final path only after it was checked, by a
//! rename, so the cache never holds half a file.

use anyhow::Context;
use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// The environment variable that names the cache root.
pub const CACHE_ENV: &str = "SCOREKIT_DATA";

/// The cache root: `$SCOREKIT_DATA`, else `$XDG_CACHE_HOME/scorekit/data`, else
/// `~/.cache/scorekit/data`.
pub fn root() -> PathBuf {
    let var = |k: &str| {
        std::env::var_os(k)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    if let Some(p) = var(CACHE_ENV) {
        return p;
    }
    if let Some(x) = var("XDG_CACHE_HOME") {
        return x.join("scorekit").join("data");
    }
    var("HOME")
        .unwrap_or_else(|| PathBuf::from("."))
        .join(".cache")
        .join("scorekit")
        .join("data")
}

/// The folder of one dataset at one commit.
pub fn commit_dir(root: &Path, name: &str, commit: &str) -> PathBuf {
    root.join(name).join(commit)
}

fn records_path(dir: &Path) -> PathBuf {
    dir.join(".scorekit").join("SHA256SUMS")
}

/// The sha256 of every file verified into `dir`, by upstream path (`sha256sum -c` format, so
/// `cd DIR && sha256sum -c .scorekit/SHA256SUMS` checks a cache without scorekit).
pub fn records(dir: &Path) -> BTreeMap<String, String> {
    let text = std::fs::read_to_string(records_path(dir)).unwrap_or_default();
    text.lines()
        .filter_map(|l| {
            let (sha, path) = l.split_once("  ")?;
            (sha.len() == 64).then(|| (path.to_string(), sha.to_string()))
        })
        .collect()
}

/// Add records (replacing older ones of the same paths), written atomically.
pub fn record(dir: &Path, new: &[(String, String)]) -> anyhow::Result<()> {
    if new.is_empty() {
        return Ok(());
    }
    let mut all = records(dir);
    for (path, sha) in new {
        all.insert(path.clone(), sha.clone());
    }
    let text: String = all.iter().map(|(p, s)| format!("{s}  {p}\n")).collect();
    let target = records_path(dir);
    let tmp = temp_path(dir, "SHA256SUMS");
    write_new(&tmp, text.as_bytes())?;
    std::fs::rename(&tmp, &target).with_context(|| format!("cannot write {}", target.display()))?;
    Ok(())
}

fn write_new(path: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    let mut f =
        std::fs::File::create(path).with_context(|| format!("cannot create {}", path.display()))?;
    f.write_all(bytes)
        .and_then(|_| f.sync_all())
        .with_context(|| format!("cannot write {}", path.display()))
}

/// A fresh temporary path in `dir/.scorekit/tmp/` (same file system as the cache, so the final
/// rename is atomic); unique per process and call.
pub fn temp_path(dir: &Path, label: &str) -> PathBuf {
    static N: AtomicU64 = AtomicU64::new(0);
    let tmp = dir.join(".scorekit").join("tmp");
    let _ = std::fs::create_dir_all(&tmp);
    let safe: String = label
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '.' {
                c
            } else {
                '_'
            }
        })
        .collect();
    tmp.join(format!(
        "{}-{}-{}.partial",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed),
        safe
    ))
}

/// Move a checked temporary file to its place in the cache.
pub fn install(tmp: &Path, target: &Path) -> anyhow::Result<()> {
    if let Some(parent) = target.parent() {
        std::fs::create_dir_all(parent)
            .with_context(|| format!("cannot create {}", parent.display()))?;
    }
    std::fs::rename(tmp, target)
        .with_context(|| format!("cannot move {} to {}", tmp.display(), target.display()))
}

/// A temporary file that is removed unless it was installed: an error or a panic between the
/// first byte and the rename leaves nothing behind.
pub struct TempFile {
    /// Where the bytes go.
    pub path: PathBuf,
    keep: bool,
}

impl TempFile {
    /// A new temporary file for `label` under `dir`.
    pub fn new(dir: &Path, label: &str) -> Self {
        TempFile {
            path: temp_path(dir, label),
            keep: false,
        }
    }

    /// Move it to `target` (it is then no longer removed).
    pub fn install(mut self, target: &Path) -> anyhow::Result<()> {
        install(&self.path, target)?;
        self.keep = true;
        Ok(())
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        if !self.keep {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_round_trip_in_sha256sum_format() {
        let t = tempfile::tempdir().unwrap();
        let a = "a".repeat(64);
        let b = "b".repeat(64);
        record(t.path(), &[("x/one.txt".into(), a.clone())]).unwrap();
        record(t.path(), &[("two.txt".into(), b.clone())]).unwrap();
        let r = records(t.path());
        assert_eq!(r.get("x/one.txt"), Some(&a));
        assert_eq!(r.get("two.txt"), Some(&b));
        let text = std::fs::read_to_string(t.path().join(".scorekit/SHA256SUMS")).unwrap();
        assert_eq!(text, format!("{b}  two.txt\n{a}  x/one.txt\n"));
        // No temporary file is left once the records are written.
        let tmp = t.path().join(".scorekit/tmp");
        assert_eq!(std::fs::read_dir(tmp).unwrap().count(), 0);
    }

    #[test]
    fn temp_files_vanish_unless_installed() {
        let t = tempfile::tempdir().unwrap();
        let f = TempFile::new(t.path(), "a/b.txt");
        std::fs::write(&f.path, b"half").unwrap();
        let p = f.path.clone();
        drop(f);
        assert!(!p.exists());
        let f = TempFile::new(t.path(), "a/b.txt");
        std::fs::write(&f.path, b"whole").unwrap();
        let target = t.path().join("a/b.txt");
        f.install(&target).unwrap();
        assert_eq!(std::fs::read(&target).unwrap(), b"whole");
    }
}
