//! `scorekit data list|pull|verify|path`: benchmark data from pinned upstream files, for offline use.

use crate::cli::{DataAction, DataArgs};
use scorekit_core::error::{Error, InputError, Result};
use scorekit_data::{self as data, cache, manifest, Options, Source};
use scorekit_report::Table;

/// Run `scorekit data`.
pub fn run(args: DataArgs) -> Result<()> {
    match args.action {
        DataAction::List => list(),
        DataAction::Pull {
            spec,
            from,
            offline,
            quiet,
        } => pull(&spec, from, Options { offline, quiet }),
        DataAction::Verify { spec } => verify(&spec),
        DataAction::Path { spec } => path(&spec),
    }
}

/// Bytes for people: kB below a megabyte, GB from a gigabyte.
fn megabytes(bytes: u64) -> String {
    let b = bytes as f64;
    if b >= 1e9 {
        format!("{:.2} GB", b / 1e9)
    } else if b >= 1e6 {
        format!("{:.1} MB", b / 1e6)
    } else {
        format!("{:.1} kB", b / 1e3)
    }
}

fn pull(spec: &str, from: Option<std::path::PathBuf>, opts: Options) -> Result<()> {
    let source = match &from {
        Some(dir) => Source::From(dir.clone()),
        None => Source::Network,
    };
    let r = data::resolve(spec, &source, &opts)?;
    let bytes: u64 = r
        .files
        .iter()
        .filter_map(|f| std::fs::metadata(&f.local).ok())
        .map(|m| m.len())
        .sum();
    if !opts.quiet {
        let origin = match &from {
            Some(dir) => format!("from {}", dir.display()),
            None => format!("from {}", data::endpoint().0),
        };
        eprintln!(
            "{} @ {}: {} files ({}) checked in the cache; {} fetched {origin}",
            r.spec,
            &r.commit[..7],
            r.files.len(),
            megabytes(bytes),
            r.fetched,
        );
    }
    println!("{}", r.path.display());
    Ok(())
}

fn verify(spec: &str) -> Result<()> {
    let (sel, lines) = data::verify(spec)?;
    if lines.is_empty() {
        return Err(Error::Input(InputError::file(
            sel.dir(),
            format!(
                "no file of {} is in the cache; run `scorekit data pull {}`",
                sel.manifest.name, spec
            ),
        )));
    }
    let mut bad = Vec::new();
    for l in &lines {
        match &l.status {
            Ok(what) => println!("ok      {}  {what}", l.path),
            Err(why) => {
                println!("BAD     {}  {why}", l.path);
                bad.push(l);
            }
        }
    }
    if let Some(first) = bad.first() {
        return Err(Error::Input(InputError::file(
            sel.dir().join(&first.path),
            format!(
                "{} of {} checked files failed; first: {}; delete the bad files and run `scorekit data pull {}`",
                bad.len(),
                lines.len(),
                first.status.as_ref().err().map_or("", String::as_str),
                sel.spec()
            ),
        )));
    }
    println!(
        "{} @ {}: {} files OK",
        if spec.contains(':') {
            sel.spec()
        } else {
            sel.manifest.name.clone()
        },
        &sel.manifest.commit[..7],
        lines.len()
    );
    Ok(())
}

fn path(spec: &str) -> Result<()> {
    let sel = data::select(spec)?;
    let missing = sel.missing();
    if let Some(first) = missing.first() {
        return Err(Error::Input(InputError::file(
            sel.dir().join(&first.path),
            format!(
                "not in the cache ({} of {} files of {} missing); run `scorekit data pull {}`",
                missing.len(),
                sel.files().len(),
                sel.spec(),
                sel.spec()
            ),
        )));
    }
    let r = data::resolve(
        spec,
        &Source::Network,
        &Options {
            offline: true,
            quiet: true,
        },
    )?;
    for f in &r.files {
        println!("{}", f.local.display());
    }
    Ok(())
}

fn list() -> Result<()> {
    let root = cache::root();
    let (endpoint, mirror) = data::endpoint();
    println!("cache: {}", root.display());
    println!(
        "downloads from: {endpoint}{}",
        if mirror {
            format!(" ({})", data::ENDPOINT_ENV)
        } else {
            String::new()
        }
    );
    for m in manifest::all()? {
        println!();
        println!(
            "{}: {} @ {} (NAME alone: {})",
            m.name, m.repo, m.commit, m.default
        );
        if let Some(d) = &m.description {
            println!("  {d}");
        }
        println!("  licence: {}", m.licence);
        let dir = cache::commit_dir(&root, &m.name, &m.commit);
        let mut t = Table::new(&["part", "files", "size", "cached", "what"]);
        for name in m.part_names() {
            let part = m.part(&name).expect("listed part exists");
            let files = m.files_of(&part);
            let known: u64 = files.iter().filter_map(|f| f.size).sum();
            let unknown = files.iter().filter(|f| f.size.is_none()).count();
            let cached = files.iter().filter(|f| dir.join(&f.path).is_file()).count();
            t.row(&[
                format!("{}:{}", m.name, name),
                files.len().to_string(),
                if unknown == files.len() {
                    "unknown".to_string()
                } else if unknown > 0 {
                    format!("{} + {unknown} of unknown size", megabytes(known))
                } else {
                    megabytes(known)
                },
                format!("{cached}/{}", files.len()),
                part.description.clone().unwrap_or_default(),
            ]);
        }
        print!("{}", t.render());
    }
    Ok(())
}
