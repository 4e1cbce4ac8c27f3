//! `scorekit models pull|list|verify|path`: get models for offline use and check them.

use crate::cli::{ModelsAction, ModelsArgs};
use scorekit_core::error::Result;
use scorekit_runtime::hub::{self, ResolveOptions, ResolvedModel};
use scorekit_runtime::manifest;
use scorekit_runtime::model_cache::{self, verify_files};

/// Files every pulled model must have (weights in one file, or shards behind their index, which
/// brings them); tokenizer and sentence-transformers files come along when the repo has them,
/// manifest models get exactly their manifest's files.
pub const PULL_FILES: &[&str] = &[
    "config.json",
    "model.safetensors|pytorch_model.bin|model.safetensors.index.json|pytorch_model.bin.index.json",
];

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

fn list() -> Result<()> {
    let cache = hub::cache_dir();
    println!("cache: {}", cache.display());
    let mut table = scorekit_report::Table::new(&["model", "revision", "refs", "files", "size"]);
    let snapshots = model_cache::cached_snapshots(&cache);
    for s in &snapshots {
        table.row(&[
            s.id.clone(),
            s.commit.clone(),
            s.refs.join(","),
            s.files.to_string(),
            format!("{:.1} MB", s.bytes as f64 / 1e6),
        ]);
    }
    if snapshots.is_empty() {
        println!("(no models cached)");
    } else {
        print!("{}", table.render());
    }
    println!();
    let mut t = scorekit_report::Table::new(&["manifest", "kind", "repo", "revision", "cached"]);
    for m in manifest::all()? {
        let cached = model_cache::manifest_cached(&cache, &m);
        t.row(&[
            m.name.clone(),
            m.kind_label(),
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
