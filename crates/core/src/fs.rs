//! Files written whole or not at all: a crash or a kill leaves the old file or the new one,
//! never half of one. Every layer that writes a result (the report's outputs, a trained judge's
//! folder) writes through here, so the rule is written once.

use anyhow::Context;
use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

use crate::error::Result;

/// Write `contents` to `path` atomically (write, fsync, rename).
pub fn atomic_write(path: &Path, contents: &[u8]) -> Result<()> {
    write_atomically(path, |tmp| {
        File::create(tmp)?.write_all(contents)?;
        Ok(())
    })
}

/// Write `path` atomically through `write`, which creates the file at the temporary path it is
/// given (beside `path`, so that the rename stays on one file system): for writers that take a
/// path rather than bytes (safetensors). The file is then fsynced and renamed into place.
pub fn write_atomically(
    path: &Path,
    write: impl FnOnce(&Path) -> anyhow::Result<()>,
) -> Result<()> {
    let tmp = temp_path(path);
    let run = || -> anyhow::Result<()> {
        write(&tmp)?;
        // Reopened for writing: Windows flushes only handles with write access.
        OpenOptions::new().write(true).open(&tmp)?.sync_all()?;
        fs::rename(&tmp, path)?;
        if let Some(dir) = path.parent() {
            // The rename is durable only once the folder entry is.
            if let Ok(d) = File::open(dir) {
                let _ = d.sync_all();
            }
        }
        Ok(())
    };
    let done = run();
    if done.is_err() {
        // A half-written temporary file is of no use to anyone.
        let _ = fs::remove_file(&tmp);
    }
    done.with_context(|| format!("cannot write {}", path.display()))?;
    Ok(())
}

/// `name.ext.tmp` beside `path`.
fn temp_path(path: &Path) -> PathBuf {
    path.with_extension(format!(
        "{}.tmp",
        path.extension().and_then(|e| e.to_str()).unwrap_or("")
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replaces_the_file_and_leaves_no_temporary_file() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("a.json");
        atomic_write(&p, b"old").unwrap();
        atomic_write(&p, b"new").unwrap();
        assert_eq!(fs::read(&p).unwrap(), b"new");
        assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 1);
    }

    #[test]
    fn a_failed_writer_keeps_the_old_file_and_removes_its_temporary_file() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("w.bin");
        atomic_write(&p, b"old").unwrap();
        let e = write_atomically(&p, |tmp| {
            fs::write(tmp, b"half")?;
            anyhow::bail!("writer failed")
        })
        .unwrap_err();
        assert!(format!("{e}").contains("w.bin"), "{e}");
        assert_eq!(fs::read(&p).unwrap(), b"old");
        assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 1);
    }
}
