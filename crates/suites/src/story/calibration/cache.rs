//! Finished dataset calibrations kept between runs. The calibration depends on the judge, the
//! dataset and the protocol, not on the models scored, so a run with another model, another
//! shard, a resumed run and `judge eval` take the questions already calibrated from here.
//!
//! Layout: `<root>/<key>/items.jsonl` (calibration items, a question's items appended together
//! in one write as each chunk finishes) and `<root>/<key>/key.json` (what the key hashes, for a
//! person). Root: `$SCOREKIT_CALIBRATION_CACHE`, else `$XDG_CACHE_HOME/scorekit/calibration`,
//! else `~/.cache/scorekit/calibration`. Concurrent runs (a job array) append whole lines; a
//! torn last line of a killed run is ignored, and of a question found twice the last complete
//! set is taken (`--recalibrate` appends fresh sets without deleting what other runs may be
//! reading or appending).

use super::CalibrationItem;
use scorekit_core::error::{Error, Result};
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::fs::{self, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

/// The calibration cache's root folder (see the module docs).
pub fn default_root() -> Option<PathBuf> {
    let env = |k: &str| {
        std::env::var_os(k)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    // Beside the benchmark data when its cache is moved (`SCOREKIT_DATA`, the data crate's
    // `CACHE_ENV`): a cluster that puts the data on shared storage gets the calibrations there
    // too, not in a small home folder.
    env("SCOREKIT_CALIBRATION_CACHE")
        .or_else(|| env("SCOREKIT_DATA").map(|d| d.join("calibration")))
        .or_else(|| env("XDG_CACHE_HOME").map(|d| d.join("scorekit/calibration")))
        .or_else(|| env("HOME").map(|d| d.join(".cache/scorekit/calibration")))
}

/// The key of a calibration: the sha256 of the canonical JSON of what decides its answers.
pub fn key(identity: &serde_json::Value) -> String {
    hex(&Sha256::digest(identity.to_string().as_bytes()))
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// One calibration's folder in the cache.
pub struct CalibrationCache {
    dir: PathBuf,
}

impl CalibrationCache {
    /// The folder of calibration `key` under `root` (created, with `key.json`, on first write).
    pub fn open(root: &Path, key: &str, identity: &serde_json::Value) -> Result<Self> {
        let dir = root.join(key);
        fs::create_dir_all(&dir).map_err(|e| io(&dir, "create", e))?;
        let described = dir.join("key.json");
        if !described.exists() {
            let text = serde_json::to_string_pretty(identity).unwrap_or_default();
            fs::write(&described, text).map_err(|e| io(&described, "write", e))?;
        }
        Ok(CalibrationCache { dir })
    }

    /// The cached sets of items, by question id: every run of contiguous lines of one question
    /// that parses, in file order (the caller takes the last complete one).
    pub fn load(&self) -> Result<HashMap<String, Vec<Vec<CalibrationItem>>>> {
        let path = self.items_path();
        let text = match fs::read_to_string(&path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(HashMap::new()),
            Err(e) => return Err(io(&path, "read", e)),
        };
        let mut out: HashMap<String, Vec<Vec<CalibrationItem>>> = HashMap::new();
        let mut current: Option<(String, Vec<CalibrationItem>)> = None;
        let mut close = |set: Option<(String, Vec<CalibrationItem>)>| {
            if let Some((id, items)) = set {
                out.entry(id).or_default().push(items);
            }
        };
        for line in text.split_inclusive('\n') {
            // A torn line (a killed run's last write) ends the set it interrupted.
            let item = line
                .strip_suffix('\n')
                .and_then(|l| serde_json::from_str::<CalibrationItem>(l).ok());
            match (item, &mut current) {
                (Some(item), Some((id, items))) if *id == item.question_id => items.push(item),
                (Some(item), _) => {
                    close(current.take());
                    current = Some((item.question_id.clone(), vec![item]));
                }
                (None, _) => close(current.take()),
            }
        }
        close(current);
        Ok(out)
    }

    /// Append newly calibrated questions' items (one write: whole lines only).
    pub fn append(&self, items: &[CalibrationItem]) -> Result<()> {
        if items.is_empty() {
            return Ok(());
        }
        let mut buf = Vec::new();
        for it in items {
            serde_json::to_writer(&mut buf, it)
                .map_err(|e| Error::Internal(anyhow::anyhow!("calibration item: {e}")))?;
            buf.push(b'\n');
        }
        let path = self.items_path();
        let mut f = OpenOptions::new()
            .create(true)
            .append(true)
            .read(true)
            .open(&path)
            .map_err(|e| io(&path, "open", e))?;
        // After a torn last line, start on a line of its own.
        if !ends_with_newline(&mut f).map_err(|e| io(&path, "read", e))? {
            buf.insert(0, b'\n');
        }
        f.write_all(&buf).map_err(|e| io(&path, "append to", e))
    }

    /// The folder, for messages.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn items_path(&self) -> PathBuf {
        self.dir.join("items.jsonl")
    }
}

/// Whether the file is empty or its last byte is a newline.
fn ends_with_newline(f: &mut fs::File) -> std::io::Result<bool> {
    use std::io::{Read, Seek, SeekFrom};
    if f.metadata()?.len() == 0 {
        return Ok(true);
    }
    f.seek(SeekFrom::End(-1))?;
    let mut last = [0u8; 1];
    f.read_exact(&mut last)?;
    Ok(last[0] == b'\n')
}

fn io(path: &Path, what: &str, e: std::io::Error) -> Error {
    Error::Internal(anyhow::anyhow!(
        "calibration cache: cannot {what} {}: {e}",
        path.display()
    ))
}
