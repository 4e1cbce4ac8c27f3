//! The model cache checked and listed (`scorekit models verify|list`): every file of a model
//! against its manifest or its blob's LFS name, and the snapshots the Hugging Face cache holds.

use crate::hub::{self, ResolvedModel};
use crate::{manifest, weights};
use scorekit_core::error::{Error, InputError, Result};
use std::path::{Path, PathBuf};

/// Every regular file under `dir`, relative, sorted.
fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = walkdir::WalkDir::new(dir)
        .follow_links(true)
        .into_iter()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_type().is_file())
        .filter_map(|e| e.path().strip_prefix(dir).ok().map(Path::to_path_buf))
        .collect();
    out.sort();
    out
}

/// Check every file of a model: sha256 against the manifest (or the blob's LFS name), and
/// safetensors headers against the file sizes. Returns one line per file; the first bad file
/// is an error naming it.
pub fn verify_files(m: &ResolvedModel) -> Result<Vec<String>> {
    let man = match hub::parse_spec(&m.spec)? {
        hub::ModelSpec::Hub {
            manifest: Some(man),
            ..
        } => Some(*man),
        _ => None,
    };
    let mut lines = Vec::new();
    if let Some(man) = &man {
        for f in &man.files {
            if !m.file(&f.name).is_file() {
                return Err(Error::Input(InputError::file(
                    m.file(&f.name),
                    "listed in the manifest but missing",
                )));
            }
        }
    }
    for rel in files_under(&m.dir) {
        let name = rel.to_string_lossy().replace('\\', "/");
        let path = m.dir.join(&rel);
        let entry = man.as_ref().and_then(|x| x.file(&name));
        if let Some(size) = entry.and_then(|e| e.size) {
            let got = std::fs::metadata(&path).map(|md| md.len()).unwrap_or(0);
            if got != size {
                return Err(Error::Input(InputError::file(
                    &path,
                    format!("{got} bytes, the manifest says {size}"),
                )));
            }
        }
        if name.ends_with(".safetensors") {
            weights::check_safetensors(&path)?;
        }
        let status = match hub::expected_sha256(&path, entry.and_then(|e| e.sha256.as_deref())) {
            Some(expected) => {
                let got = scorekit_report::sha256_file(&path)
                    .map_err(|e| anyhow::anyhow!("cannot hash {}: {e}", path.display()))?;
                if got != expected {
                    return Err(Error::Input(InputError::file(
                        &path,
                        format!("corrupt: sha256 {got}, expected {expected}; delete it and run `scorekit models pull`"),
                    )));
                }
                format!("ok      {name}  sha256 {got}")
            }
            None => format!(
                "ok      {name}  (sha256 unknown: checked for presence{})",
                if name.ends_with(".safetensors") {
                    " and header"
                } else {
                    ""
                }
            ),
        };
        lines.push(status);
    }
    Ok(lines)
}

/// Bytes of every file under `dir`.
fn dir_size(dir: &Path) -> u64 {
    files_under(dir)
        .iter()
        .filter_map(|r| std::fs::metadata(dir.join(r)).ok())
        .map(|m| m.len())
        .sum()
}

/// One snapshot in the Hugging Face cache.
#[derive(Debug, Clone, PartialEq)]
pub struct CachedSnapshot {
    /// The repo id.
    pub id: String,
    /// The snapshot's commit.
    pub commit: String,
    /// The refs (branches, tags) pointing at it.
    pub refs: Vec<String>,
    /// Its files.
    pub files: usize,
    /// Their bytes.
    pub bytes: u64,
}

/// Entries of a folder, sorted by name (none when it cannot be read).
fn sorted_entries(dir: &Path) -> Vec<std::fs::DirEntry> {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .map(|rd| rd.filter_map(|e| e.ok()).collect())
        .unwrap_or_default();
    entries.sort_by_key(|e| e.file_name());
    entries
}

/// The refs of a cached repo folder: (ref name, commit).
fn refs_of(repo_dir: &Path) -> Vec<(String, String)> {
    let refs_dir = repo_dir.join("refs");
    let mut refs: Vec<(String, String)> = files_under(&refs_dir)
        .into_iter()
        .filter_map(|r| {
            let c = std::fs::read_to_string(refs_dir.join(&r)).ok()?;
            Some((r.to_string_lossy().into_owned(), c.trim().to_string()))
        })
        .collect();
    refs.sort();
    refs
}

/// Every model snapshot in the cache folder `cache`, by repo and commit.
pub fn cached_snapshots(cache: &Path) -> Vec<CachedSnapshot> {
    let mut out = Vec::new();
    for e in sorted_entries(cache) {
        let name = e.file_name().to_string_lossy().into_owned();
        let Some(repo) = name.strip_prefix("models--") else {
            continue;
        };
        let id = repo.replacen("--", "/", 1);
        let refs = refs_of(&e.path());
        for s in sorted_entries(&e.path().join("snapshots")) {
            let commit = s.file_name().to_string_lossy().into_owned();
            out.push(CachedSnapshot {
                id: id.clone(),
                refs: refs
                    .iter()
                    .filter(|(_, c)| *c == commit)
                    .map(|(r, _)| r.clone())
                    .collect(),
                files: files_under(&s.path()).len(),
                bytes: dir_size(&s.path()),
                commit,
            });
        }
    }
    out
}

/// Whether every file of manifest `m` is in the cache folder `cache`.
pub fn manifest_cached(cache: &Path, m: &manifest::Manifest) -> bool {
    let rev = m.revision_or_main().to_string();
    hub::cached_snapshot(cache, &m.repo, &rev)
        .map(|(_, d)| m.files.iter().all(|f| d.join(&f.name).is_file()))
        .unwrap_or(false)
}
