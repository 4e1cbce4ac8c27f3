//! `scorekit merge` as a library call: combine the output folders of `--shard I/N` runs into
//! exactly the results of a single run.
//!
//! Each part's metrics.json carries its inputs (sha256), models (revisions), settings and shard.
//! Parts must agree on all of them except the shard; the shards must be `0/N` .. `N-1/N`, each
//! once. The items of all parts are put back into the single-run order and the suite's metrics
//! are recomputed from them by the same function the suite's command calls (its
//! [`Suite`](crate::suite::Suite) in the [`REGISTRY`](crate::registry::REGISTRY)), so numbers and
//! bootstrap intervals are bit-identical to a single run.

use scorekit_core::error::{Error, InputError, Result};
use scorekit_core::shard::Shard;
use scorekit_report::{MetricsDoc, OutputDir, Outputs, METRICS_FILE, RUN_FILE};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// One shard's output folder, read.
struct Part {
    dir: PathBuf,
    doc: MetricsDoc,
    shard: Shard,
}

/// A merge done: what it wrote and where.
pub struct Merged {
    /// The merged run's metrics.json, as written.
    pub doc: MetricsDoc,
    /// The outputs rebuilt from the items (the table is what the command prints).
    pub outputs: Outputs,
    /// How many shards were merged.
    pub shards: u32,
    /// The output folder.
    pub dir: OutputDir,
}

/// Merge the shard folders `parts` into `out` (refused where it holds results, unless `force`).
pub fn merge(parts: &[PathBuf], out: &Path, force: bool) -> Result<Merged> {
    if parts.is_empty() {
        return Err(Error::usage(
            "--parts: name the output folders of the shards to merge",
        ));
    }
    let parts = parts
        .iter()
        .map(|p| read_part(p))
        .collect::<Result<Vec<_>>>()?;
    let out_abs = std::path::absolute(out).unwrap_or_else(|_| out.to_path_buf());
    for p in &parts {
        if std::path::absolute(&p.dir).unwrap_or_else(|_| p.dir.clone()) == out_abs {
            return Err(Error::usage(format!(
                "--out {} is one of the --parts; choose another folder",
                out.display()
            )));
        }
    }
    let mut doc = check_parts(&parts)?;
    let count = parts[0].shard.count;
    let mut run = doc.run_settings()?;
    run.shard = None;
    run.merged_shards = Some(count);
    doc.set_run_settings(&run)?;

    let suite = crate::registry::find(&doc.suite).ok_or_else(|| {
        Error::usage(format!(
            "{}: suite {:?} cannot be merged by this version of scorekit",
            parts[0].dir.join(METRICS_FILE).display(),
            doc.suite
        ))
    })?;
    let docs: Vec<&MetricsDoc> = parts.iter().map(|p| &p.doc).collect();
    (suite.combine)(&mut doc, &docs)?;
    let dirs: Vec<PathBuf> = parts.iter().map(|p| p.dir.clone()).collect();
    let (items, outputs) = (suite.rebuild)(&mut doc, &dirs)?;
    let dir = OutputDir::prepare(out, force)?;
    let metrics_json = doc.to_json();
    dir.finish(&items, &outputs, &metrics_json)?;
    Ok(Merged {
        doc,
        outputs,
        shards: count,
        dir,
    })
}

/// metrics.json of a finished run in `dir` (merge and compare); `unfinished` says what to do
/// about a run that has not written it yet.
pub fn read_finished(dir: &Path, unfinished: &str) -> Result<MetricsDoc> {
    let metrics = dir.join(METRICS_FILE);
    if !metrics.is_file() {
        let why = if dir.join(RUN_FILE).is_file() {
            format!("an unfinished run (no metrics.json yet); {unfinished}")
        } else if dir.is_dir() {
            "no metrics.json: not the output folder of a scoring command".into()
        } else {
            "not a folder".into()
        };
        return Err(InputError::file(dir, why).into());
    }
    let text = std::fs::read_to_string(&metrics)
        .map_err(|e| InputError::file(&metrics, format!("cannot read: {e}")))?;
    let mut doc: MetricsDoc = serde_json::from_str(&text).map_err(|e| {
        InputError::line(
            &metrics,
            e.line(),
            format!("not a scorekit metrics.json: {e}"),
        )
    })?;
    doc.source = Some(metrics);
    Ok(doc)
}

/// metrics.json of a finished shard, with its shard.
fn read_part(dir: &Path) -> Result<Part> {
    let doc = read_finished(dir, "rerun its command with the same --out to resume it")?;
    let metrics = dir.join(METRICS_FILE);
    let shard = match doc.run_settings()?.shard {
        None => Shard::ALL,
        Some(s) => s.parse().map_err(|_| {
            InputError::file(
                &metrics,
                format!("field \"settings.shard\": expected I/N, found {s:?}"),
            )
        })?,
    };
    Ok(Part {
        dir: dir.to_path_buf(),
        doc,
        shard,
    })
}

/// The parts are shards `0..N` of one run: same suite, version, inputs, models and settings,
/// every shard once. Returns the first part's document.
fn check_parts(parts: &[Part]) -> Result<MetricsDoc> {
    let first = &parts[0];
    let name = |p: &Part| p.dir.display().to_string();
    for p in &parts[1..] {
        let differ = |what: &str, a: String, b: String| -> Error {
            Error::usage(format!(
                "{} and {} are not shards of one run: different {what} ({a} vs {b})",
                name(first),
                name(p)
            ))
        };
        if p.doc.suite != first.doc.suite {
            return Err(differ(
                "suites",
                first.doc.suite.clone(),
                p.doc.suite.clone(),
            ));
        }
        if p.doc.scorekit_version != first.doc.scorekit_version {
            return Err(differ(
                "scorekit versions",
                first.doc.scorekit_version.clone(),
                p.doc.scorekit_version.clone(),
            ));
        }
        let hashes = |d: &MetricsDoc| -> Vec<String> {
            d.inputs
                .iter()
                .map(|i| format!("{} sha256 {}", i.path, i.sha256))
                .collect()
        };
        let (a, b) = (hashes(&first.doc), hashes(&p.doc));
        if a.len() != b.len()
            || first
                .doc
                .inputs
                .iter()
                .zip(&p.doc.inputs)
                .any(|(x, y)| x.sha256 != y.sha256)
        {
            return Err(differ("inputs", a.join(", "), b.join(", ")));
        }
        if p.doc.models != first.doc.models {
            let m = |d: &MetricsDoc| -> String {
                d.models
                    .iter()
                    .map(|m| format!("{}@{}", m.id, m.revision))
                    .collect::<Vec<_>>()
                    .join(", ")
            };
            return Err(differ("models", m(&first.doc), m(&p.doc)));
        }
        let mut sa = first.doc.settings_json().clone();
        let mut sb = p.doc.settings_json().clone();
        sa.remove("shard");
        sb.remove("shard");
        if sa != sb {
            let keys: Vec<String> = sa
                .keys()
                .chain(sb.keys())
                .filter(|k| sa.get(*k) != sb.get(*k))
                .cloned()
                .collect::<std::collections::BTreeSet<_>>()
                .into_iter()
                .map(|k| {
                    let show = |v: Option<&Value>| v.map_or("absent".into(), |v| v.to_string());
                    format!("{k}: {} vs {}", show(sa.get(&k)), show(sb.get(&k)))
                })
                .collect();
            return Err(Error::usage(format!(
                "{} and {} are not shards of one run: different settings ({})",
                name(first),
                name(p),
                keys.join("; ")
            )));
        }
    }
    let count = first.shard.count;
    if let Some(p) = parts.iter().find(|p| p.shard.count != count) {
        return Err(Error::usage(format!(
            "{} is shard {} but {} is shard {}: all parts must split the input the same way",
            name(first),
            first.shard,
            name(p),
            p.shard
        )));
    }
    let mut seen: BTreeMap<u32, &Part> = BTreeMap::new();
    for p in parts {
        if let Some(q) = seen.insert(p.shard.index, p) {
            return Err(Error::usage(format!(
                "duplicate shard {}: {} and {}",
                p.shard,
                name(q),
                name(p)
            )));
        }
    }
    let missing: Vec<String> = (0..count)
        .filter(|i| !seen.contains_key(i))
        .map(|i| format!("{i}/{count}"))
        .collect();
    if !missing.is_empty() {
        return Err(Error::usage(format!(
            "missing shard(s) {} of {count}; pass every shard's folder to --parts",
            missing.join(", ")
        )));
    }
    Ok(first.doc.clone())
}
