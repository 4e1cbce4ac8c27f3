//! `scorekit models pull|list|verify|path`: get models for offline use and check them.

use crate::cli::{ModelsAction, ModelsArgs};
use scorekit_core::error::{Error, InputError, Result};
use scorekit_runtime::hub::{self, ResolveOptions, ResolvedModel};
use scorekit_runtime::{manifest, weights};
use std::path::{Path, PathBuf};

/// Files every pulled model must have; tokenizer and sentence-transformers files come along
/// when the repo has them, manifest models get exactly their manifest's files.
pub const PULL_FILES: &[&str] = &["config.json", "model.safetensors|pytorch_model.bin"];

/// Run `scorekit models`.
pub fn run(args: ModelsArgs) -> Result<()> {
    match args.action {
        ModelsAction::Pull { model, quiet } => {
            let m = hub::resolve(
                &model,
                PULL_FILES,
                &ResolveOptions {
                    offline: false,
                    quiet,
                },
            )?;
            let report = verify_files(&m)?;
            if !quiet {
                eprintln!("{} @ {}: {} files verified", m.id, m.revision, report.len());
            }
            println!("{}", m.dir.display());
            Ok(())
        }
        ModelsAction::List => list(),
        ModelsAction::Verify { model } => {
            let m = resolve_offline(&model)?;
            for line in verify_files(&m)? {
                println!("{line}");
            }
            println!("{} @ {}: OK", m.id, m.revision);
            Ok(())
        }
        ModelsAction::Path { model } => {
            let m = resolve_offline(&model)?;
            println!("{}", m.dir.display());
            if m.dir.components().any(|c| c.as_os_str() == "snapshots") {
                eprintln!(
                    "(cache files are symlinks into blobs/: copy with `cp -rL {} DEST` and pass DEST as MODEL)",
                    m.dir.display()
                );
            }
            Ok(())
        }
    }
}

fn resolve_offline(model: &str) -> Result<ResolvedModel> {
    hub::resolve(
        model,
        PULL_FILES,
        &ResolveOptions {
            offline: true,
            quiet: true,
        },
    )
}

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

fn dir_size(dir: &Path) -> u64 {
    files_under(dir)
        .iter()
        .filter_map(|r| std::fs::metadata(dir.join(r)).ok())
        .map(|m| m.len())
        .sum()
}

fn list() -> Result<()> {
    let cache = hub::cache_dir();
    println!("cache: {}", cache.display());
    let mut table = scorekit_report::Table::new(&["model", "revision", "refs", "files", "size"]);
    let mut entries: Vec<_> = std::fs::read_dir(&cache)
        .map(|rd| rd.filter_map(|e| e.ok()).collect())
        .unwrap_or_default();
    entries.sort_by_key(|e| e.file_name());
    let mut any = false;
    for e in entries {
        let name = e.file_name().to_string_lossy().into_owned();
        let Some(repo) = name.strip_prefix("models--") else {
            continue;
        };
        let id = repo.replacen("--", "/", 1);
        let refs_dir = e.path().join("refs");
        let mut refs: Vec<(String, String)> = files_under(&refs_dir)
            .into_iter()
            .filter_map(|r| {
                let c = std::fs::read_to_string(refs_dir.join(&r)).ok()?;
                Some((r.to_string_lossy().into_owned(), c.trim().to_string()))
            })
            .collect();
        refs.sort();
        let snaps = e.path().join("snapshots");
        let mut snaps: Vec<_> = std::fs::read_dir(&snaps)
            .map(|rd| rd.filter_map(|x| x.ok()).collect())
            .unwrap_or_default();
        snaps.sort_by_key(|s| s.file_name());
        for s in snaps {
            let commit = s.file_name().to_string_lossy().into_owned();
            let names: Vec<&str> = refs
                .iter()
                .filter(|(_, c)| *c == commit)
                .map(|(r, _)| r.as_str())
                .collect();
            let size = dir_size(&s.path());
            table.row(&[
                id.clone(),
                commit.clone(),
                names.join(","),
                files_under(&s.path()).len().to_string(),
                format!("{:.1} MB", size as f64 / 1e6),
            ]);
            any = true;
        }
    }
    if any {
        print!("{}", table.render());
    } else {
        println!("(no models cached)");
    }
    println!();
    let mut t = scorekit_report::Table::new(&["manifest", "repo", "revision", "cached"]);
    for m in manifest::all()? {
        let rev = m.revision_or_main().to_string();
        let cached = hub::cached_snapshot(&cache, &m.repo, &rev)
            .map(|(_, d)| m.files.iter().all(|f| d.join(&f.name).is_file()))
            .unwrap_or(false);
        t.row(&[
            m.name.clone(),
            m.repo.clone(),
            m.revision
                .clone()
                .unwrap_or_else(|| "main (not pinned)".into()),
            if cached { "yes".into() } else { "no".into() },
        ]);
    }
    print!("{}", t.render());
    Ok(())
}
