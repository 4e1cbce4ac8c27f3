//! The private temporary working folder of a program, removed afterwards even when the
//! program filled it or took away its permissions.

use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

static COUNTER: AtomicU64 = AtomicU64::new(0);

/// A fresh folder (mode 0700) under the system temporary folder, removed on drop.
pub struct WorkDir(PathBuf);

impl WorkDir {
    /// Make a fresh folder.
    pub fn new() -> std::io::Result<WorkDir> {
        let n = COUNTER.fetch_add(1, Ordering::Relaxed);
        let p = std::env::temp_dir().join(format!("scorekit-exec-{}-{n}", std::process::id()));
        std::fs::DirBuilder::new().mode(0o700).create(&p)?;
        Ok(WorkDir(p))
    }

    /// Its path.
    pub fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for WorkDir {
    fn drop(&mut self) {
        if std::fs::remove_dir_all(&self.0).is_ok() || !self.0.exists() {
            return;
        }
        // The program may have removed write or search permission from its folders.
        unlock(&self.0);
        if let Err(e) = std::fs::remove_dir_all(&self.0) {
            eprintln!(
                "warning: cannot remove the temporary folder {}: {e}",
                self.0.display()
            );
        }
    }
}

/// Remove the working folders a killed scorekit left behind: `scorekit-exec-<pid>-<n>` under
/// the temporary folder whose scorekit is gone.
pub fn remove_stale() {
    let tmp = std::env::temp_dir();
    let Ok(rd) = std::fs::read_dir(&tmp) else {
        return;
    };
    for e in rd.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let owner = name
            .strip_prefix("scorekit-exec-")
            .and_then(|r| r.split('-').next())
            .and_then(|p| p.parse::<u32>().ok());
        if let Some(pid) = owner {
            if !Path::new(&format!("/proc/{pid}")).exists() {
                drop(WorkDir(e.path()));
            }
        }
    }
}

/// Give the owner full access to `dir` and every folder below it (symlinks not followed).
fn unlock(dir: &Path) {
    if std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700)).is_err() {
        return;
    }
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        if e.file_type().is_ok_and(|t| t.is_dir()) {
            unlock(&e.path());
        }
    }
}
