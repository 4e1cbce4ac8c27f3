//! Benchmark data on tap: dataset names (`possible-stories:test`) resolved to checked files in a
//! local cache, pulled from the pinned upstream commit, a mirror, or a local copy.
//!
//! A name is `NAME[:PART]`: NAME a manifest in `data/manifests/` (or `SCOREKIT_DATA_MANIFESTS`),
//! PART one of its parts (NAME alone: the manifest's default part; `NAME:all`: every file).
//! Files come from `https://raw.githubusercontent.com/{owner}/{repo}/{commit}/{path}`
//! (`SCOREKIT_DATA_ENDPOINT` replaces the base for a mirror) or from `--from DIR`, a copy of
//! the upstream repository; every file is checked (size, sha256 or git blob id) before a rename
//! puts it in the cache. `--offline` and `HF_HUB_OFFLINE=1` never touch the network.

pub mod cache;
pub mod check;
mod fetch;
pub mod manifest;
pub mod testdata;

use manifest::{DataFile, DataManifest, Part};
use scorekit_core::error::{Error, InputError, Result};
use scorekit_report::{DatasetRef, InputFile};
use std::path::{Path, PathBuf};

pub use fetch::{endpoint, ENDPOINT_ENV, UPSTREAM};

/// How a dataset may be found.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Options {
    /// Never touch the network (also when `HF_HUB_OFFLINE=1`).
    pub offline: bool,
    /// No progress bars.
    pub quiet: bool,
}

impl Options {
    /// Whether the network is off limits: the flag, or `HF_HUB_OFFLINE`.
    pub fn is_offline(&self) -> bool {
        self.offline || scorekit_core::net::offline_from_env()
    }
}

/// Where missing files come from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    /// The upstream raw-file endpoint or the mirror in `SCOREKIT_DATA_ENDPOINT`.
    Network,
    /// A local copy of the upstream repository, by upstream path.
    From(PathBuf),
}

/// A dataset name with its manifest and part.
#[derive(Debug, Clone)]
pub struct Selection {
    /// The manifest.
    pub manifest: DataManifest,
    /// The selected part.
    pub part: Part,
}

impl Selection {
    /// `NAME:PART` with the part spelled out.
    pub fn spec(&self) -> String {
        format!("{}:{}", self.manifest.name, self.part.name)
    }

    /// The files of the part.
    pub fn files(&self) -> Vec<&DataFile> {
        self.manifest.files_of(&self.part)
    }

    /// The cache folder of the dataset's commit.
    pub fn dir(&self) -> PathBuf {
        cache::commit_dir(&cache::root(), &self.manifest.name, &self.manifest.commit)
    }

    /// The part's files that are not in the cache (absent, or of the wrong size).
    pub fn missing(&self) -> Vec<&DataFile> {
        let dir = self.dir();
        self.files()
            .into_iter()
            .filter(|f| !present(&dir, f))
            .collect()
    }
}

fn present(dir: &Path, f: &DataFile) -> bool {
    match std::fs::metadata(dir.join(&f.path)) {
        Ok(md) => md.is_file() && f.size.is_none_or(|s| s == md.len()),
        Err(_) => false,
    }
}

/// Whether an argument looks like a dataset name rather than a path: `NAME` or `NAME:PART`,
/// NAME made of letters, digits, `-` and `_` (PART may also have dots).
fn looks_like_name(s: &str) -> bool {
    let word = |w: &str, dots: bool| {
        !w.is_empty()
            && w.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_' || (dots && b == b'.'))
    };
    match s.split_once(':') {
        Some((name, part)) => word(name, false) && word(part, true),
        None => word(s, false),
    }
}

/// Parse `NAME[:PART]`; an unknown name or part is a usage error (exit 2) listing the known ones.
pub fn select(spec: &str) -> Result<Selection> {
    let (name, part) = match spec.split_once(':') {
        Some((n, p)) => (n, Some(p)),
        None => (spec, None),
    };
    if !looks_like_name(name) {
        return Err(Error::usage(format!(
            "{spec:?}: not a dataset name: expected NAME[:PART] ({})",
            manifest::names().join(", ")
        )));
    }
    let Some(m) = manifest::find(name)? else {
        return Err(Error::usage(format!(
            "{spec}: unknown dataset {name:?}; known: {} (`scorekit data list`)",
            manifest::names().join(", ")
        )));
    };
    let part_name = part.unwrap_or(&m.default).to_string();
    let Some(p) = m.part(&part_name) else {
        return Err(Error::usage(format!(
            "{spec}: {name} has no part {part_name:?}; its parts: {}",
            m.part_names().join(", ")
        )));
    };
    Ok(Selection {
        manifest: m,
        part: p,
    })
}

/// A dataset part whose files are all in the cache, checked on their way in.
#[derive(Debug, Clone)]
pub struct Resolved {
    /// `NAME:PART`.
    pub spec: String,
    /// GitHub `owner/name`.
    pub repo: String,
    /// The pinned commit.
    pub commit: String,
    /// The cache folder of the commit.
    pub dir: PathBuf,
    /// What a scoring command reads: the part's file, or the folder above its files.
    pub path: PathBuf,
    /// Every file of the part.
    pub files: Vec<ResolvedFile>,
    /// How many files this call fetched.
    pub fetched: usize,
}

/// One file of a resolved part.
#[derive(Debug, Clone)]
pub struct ResolvedFile {
    /// Path in the upstream repository.
    pub upstream: String,
    /// Where it lies in the cache.
    pub local: PathBuf,
    /// Its sha256 (pinned by the manifest, or recorded at its verified pull).
    pub sha256: String,
}

impl Resolved {
    /// What metrics.json records: the name, the commit and every file's sha256.
    pub fn record(&self) -> DatasetRef {
        DatasetRef {
            name: self.spec.clone(),
            repo: self.repo.clone(),
            commit: self.commit.clone(),
            files: self
                .files
                .iter()
                .map(|f| InputFile {
                    path: f.upstream.clone(),
                    sha256: f.sha256.clone(),
                })
                .collect(),
        }
    }
}

/// Make a dataset part available: files already cached are used as they are, missing ones
/// come from `source` (unless offline, which names the first missing file and the command that
/// would fetch it).
pub fn resolve(spec: &str, source: &Source, opts: &Options) -> Result<Resolved> {
    let sel = select(spec)?;
    let dir = sel.dir();
    let missing = sel.missing();
    let fetched = missing.len();
    if !missing.is_empty() {
        if let Source::From(from) = source {
            fetch::from_dir(&sel, &missing, from, opts)?;
        } else if opts.is_offline() {
            return Err(offline_error(&sel, missing[0]));
        } else {
            fetch::from_network(&sel, &missing, opts)?;
        }
    }
    let records = cache::records(&dir);
    let mut files = Vec::new();
    let mut new_records = Vec::new();
    for f in sel.files() {
        let local = dir.join(&f.path);
        let sha256 = match f.sha256.clone().or_else(|| records.get(&f.path).cloned()) {
            Some(s) => s,
            // Only a checked file is ever renamed into the cache, but its record can be lost
            // (a pull killed between the rename and the record): check it again and record it.
            None => {
                let d = check::digests(&local)
                    .map_err(|e| InputError::file(&local, format!("cannot read: {e}")))?;
                if let Some(why) = check::mismatch(f, &d, None) {
                    return Err(corrupt(&sel, &local, &why));
                }
                new_records.push((f.path.clone(), d.sha256.clone()));
                d.sha256
            }
        };
        files.push(ResolvedFile {
            upstream: f.path.clone(),
            local,
            sha256,
        });
    }
    // Best effort: a cache on read-only media still resolves, it just checks again next time.
    let _ = cache::record(&dir, &new_records);
    Ok(Resolved {
        spec: sel.spec(),
        repo: sel.manifest.repo.clone(),
        commit: sel.manifest.commit.clone(),
        path: if sel.part.path.is_empty() {
            dir.clone()
        } else {
            dir.join(&sel.part.path)
        },
        dir,
        files,
        fetched,
    })
}

/// The error for a cached file that breaks its pins (exit 2, the file named).
fn corrupt(sel: &Selection, local: &Path, why: &str) -> Error {
    Error::Input(InputError::file(
        local,
        format!(
            "corrupt ({why}); delete it and run `scorekit data pull {}`",
            sel.spec()
        ),
    ))
}

fn offline_error(sel: &Selection, first: &DataFile) -> Error {
    let spec = sel.spec();
    let m = &sel.manifest;
    Error::Input(InputError::file(
        sel.dir().join(&first.path),
        format!(
            "offline (--offline or HF_HUB_OFFLINE=1): {spec} needs {} ({} of its {} files missing from the cache {}); \
             run `scorekit data pull {spec}` where the network is reachable, or \
             `scorekit data pull {spec} --from DIR` with a copy of {}@{}, or point {} at a copied cache",
            first.path,
            sel.missing().len(),
            sel.files().len(),
            cache::root().display(),
            m.repo,
            &m.commit[..7],
            cache::CACHE_ENV,
        ),
    ))
}

/// A benchmark-file argument of a scoring command, resolved.
#[derive(Debug, Clone)]
pub struct InputArg {
    /// The file or folder to read.
    pub path: PathBuf,
    /// The dataset it came from, when the argument was a dataset name.
    pub dataset: Option<Resolved>,
}

/// Resolve a scoring command's benchmark argument: an existing path is used as it is; otherwise
/// `NAME[:PART]` of a known dataset resolves through the cache (pulling what is missing unless
/// offline). Anything else is returned unchanged, for the command to report as a missing file.
pub fn resolve_arg(arg: &Path, opts: &Options) -> Result<InputArg> {
    let as_path = || InputArg {
        path: arg.to_path_buf(),
        dataset: None,
    };
    if arg.exists() {
        return Ok(as_path());
    }
    let Some(s) = arg.to_str() else {
        return Ok(as_path());
    };
    let known = s.split_once(':').map_or(s, |(n, _)| n).to_string();
    // `NAME:PART` is meant as a dataset even when NAME is unknown (say so); a bare word is a
    // dataset only when a manifest has that name, else it stays a (missing) file name.
    let is_dataset = looks_like_name(s) && (s.contains(':') || manifest::names().contains(&known));
    if !is_dataset {
        return Ok(as_path());
    }
    let r = resolve(s, &Source::Network, opts)?;
    if r.fetched > 0 && !opts.quiet {
        eprintln!(
            "{}: {} file(s) fetched into {}",
            r.spec,
            r.fetched,
            r.dir.display()
        );
    }
    Ok(InputArg {
        path: r.path.clone(),
        dataset: Some(r),
    })
}

/// One line per checked file of a dataset's cache.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VerifyLine {
    /// Upstream path.
    pub path: String,
    /// `ok` or what was wrong.
    pub status: std::result::Result<String, String>,
}

/// Re-check cached files: a part's files (all must be present), or with `NAME` alone every file
/// of the dataset that is in the cache. Records the sha256 of blob-pinned files it checks.
pub fn verify(spec: &str) -> Result<(Selection, Vec<VerifyLine>)> {
    let explicit = spec.contains(':');
    let mut sel = select(spec)?;
    if !explicit {
        sel.part = sel.manifest.part(manifest::ALL).expect("all exists");
    }
    let dir = sel.dir();
    let records = cache::records(&dir);
    let mut lines = Vec::new();
    let mut new_records = Vec::new();
    for f in sel.files() {
        let local = dir.join(&f.path);
        if !local.is_file() {
            if explicit {
                lines.push(VerifyLine {
                    path: f.path.clone(),
                    status: Err(format!("missing: run `scorekit data pull {}`", sel.spec())),
                });
            }
            continue;
        }
        let recorded = records.get(&f.path).map(String::as_str);
        let status = match check::digests(&local) {
            Err(e) => Err(format!("cannot read: {e}")),
            Ok(d) => match check::mismatch(f, &d, recorded) {
                Some(why) => Err(format!("corrupt ({why})")),
                None => {
                    if f.sha256.is_none() && recorded.is_none() {
                        new_records.push((f.path.clone(), d.sha256.clone()));
                    }
                    Ok(match &f.sha256 {
                        Some(s) => format!("sha256 {s}"),
                        None => format!("git blob {} (sha256 {})", d.git_blob, d.sha256),
                    })
                }
            },
        };
        lines.push(VerifyLine {
            path: f.path.clone(),
            status,
        });
    }
    // Best effort, as in `resolve`: verifying a read-only cache must not fail on the record.
    let _ = cache::record(&dir, &new_records);
    Ok((sel, lines))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_parts_and_their_errors() {
        let s = select("possible-stories").unwrap();
        assert_eq!(s.spec(), "possible-stories:test");
        assert_eq!(s.files().len(), 1);
        assert_eq!(select("mint:all").unwrap().files().len(), 2499);
        assert_eq!(
            select("muse:queries").unwrap().part.path,
            "MuSE_Benchmark/queries.json"
        );
        let e = select("possible-stories:nope").unwrap_err();
        assert_eq!(e.exit_code(), 2);
        assert!(
            e.to_string().contains("dev, test, endings, train, all"),
            "{e}"
        );
        let e = select("nope:x").unwrap_err();
        assert_eq!(e.exit_code(), 2);
        assert!(
            e.to_string()
                .contains("possible-stories, grasp, muse, mint"),
            "{e}"
        );
        assert_eq!(select("../x:y").unwrap_err().exit_code(), 2);
    }

    #[test]
    fn paths_stay_paths() {
        assert!(looks_like_name("possible-stories:test"));
        assert!(looks_like_name("mint:gpt-3.5-turbo-0613"));
        assert!(!looks_like_name("test.jsonl"));
        assert!(!looks_like_name("data/test.jsonl"));
        assert!(!looks_like_name("C:/data/test.jsonl"));
        let opts = Options {
            offline: true,
            quiet: true,
        };
        // A missing file that is no dataset name comes back unchanged for the command to report.
        let r = resolve_arg(Path::new("no-such-file.jsonl"), &opts).unwrap();
        assert!(r.dataset.is_none());
        let r = resolve_arg(Path::new("no-such-word"), &opts).unwrap();
        assert!(r.dataset.is_none());
        let e = resolve_arg(Path::new("possible-stories:nope"), &opts).unwrap_err();
        assert_eq!(e.exit_code(), 2);
    }
}
