//! The benchmark files the tests read, for the tests of every crate of the workspace: a scorekit
//! data cache (the manifests' pins, the usual `<cache>/<dataset>/<commit>/<upstream path>` layout)
//! named by `SCOREKIT_TEST_DATA` (`.cargo/config.toml` points it at `target/test-data`).
//! `scripts/test-data.sh` fills it once per test run with the parts of `data/test-parts.txt`
//! (`scripts/test.sh` runs it before `cargo test`), from `../shared/data` laid out as a mirror
//! where that exists, else from the pinned upstream commits.
//!
//! Nothing here downloads: a test whose data is not there panics with the `scorekit data pull`
//! that fetches it, so it fails rather than passes without its data.

use crate::manifest;
use std::path::{Path, PathBuf};

/// The variable naming the test data cache.
pub const ENV: &str = "SCOREKIT_TEST_DATA";

/// `data/test-parts.txt`: the parts the harness pulls, one `NAME:PART` a line, `#` comments.
pub const PARTS_TXT: &str = include_str!("../../../data/test-parts.txt");

/// The parts the harness pulls into the test data cache.
pub fn parts() -> Vec<&'static str> {
    PARTS_TXT
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .collect()
}

/// The test data cache (`$SCOREKIT_TEST_DATA`); panics naming the way to set it when unset.
pub fn root() -> PathBuf {
    match std::env::var_os(ENV).filter(|v| !v.is_empty()) {
        Some(p) => PathBuf::from(p),
        None => panic!(
            "{ENV} is not set: the tests read benchmark files from the data cache it names. \
             Under cargo, .cargo/config.toml sets it to target/test-data, which \
             scripts/test-data.sh fills (scripts/test.sh runs it first); elsewhere export \
             {ENV}=DIR and run `SCOREKIT_DATA=DIR scorekit data pull NAME:PART` for the parts \
             of data/test-parts.txt"
        ),
    }
}

fn manifest_of(name: &str) -> manifest::DataManifest {
    match manifest::find(name) {
        Ok(Some(m)) => m,
        Ok(None) => panic!("test data: no dataset {name:?} in data/manifests"),
        Err(e) => panic!("test data: the manifests do not load: {e}"),
    }
}

/// A dataset's commit folder in the test data cache (its files by upstream path), checked for
/// nothing.
pub fn commit_dir(name: &str) -> PathBuf {
    let m = manifest_of(name);
    crate::cache::commit_dir(&root(), &m.name, &m.commit)
}

/// The path of upstream `rel` (a file or a folder) of the part `spec` (`muse:queries`) in the test
/// data cache, after checking that `spec` is one of [`parts`], that `rel` lies in it, and that
/// every file of the part is cached at its pinned size. A part that is not there panics with the
/// command that fetches it.
pub fn file(spec: &str, rel: &str) -> PathBuf {
    locate(&root(), spec, rel).unwrap_or_else(|e| panic!("{e}"))
}

/// [`file`] under the cache `root`: the path, or why the test cannot have it.
pub fn locate(root: &Path, spec: &str, rel: &str) -> Result<PathBuf, String> {
    let (name, part_name) = spec
        .split_once(':')
        .unwrap_or_else(|| panic!("test data: {spec:?} is not NAME:PART"));
    if !parts().contains(&spec) {
        return Err(format!(
            "test data: {spec} is not pulled by the harness: add it to data/test-parts.txt"
        ));
    }
    let m = manifest_of(name);
    let part = m
        .part(part_name)
        .unwrap_or_else(|| panic!("test data: {name} has no part {part_name:?}"));
    let files = m.files_of(&part);
    let rel = rel.trim_end_matches('/');
    if !files
        .iter()
        .any(|f| f.path == rel || rel.is_empty() || f.path.starts_with(&format!("{rel}/")))
    {
        return Err(format!(
            "test data: {rel} is not a file or folder of {spec}"
        ));
    }
    let dir = crate::cache::commit_dir(root, &m.name, &m.commit);
    let missing: Vec<&str> = files
        .iter()
        .filter(|f| !present(&dir, f))
        .map(|f| f.path.as_str())
        .collect();
    if let Some(first) = missing.first() {
        return Err(format!(
            "{spec}: {first} ({} of the part's {} files) missing from the test data cache {} \
             ({ENV}). Fetch it with `SCOREKIT_DATA={} scorekit data pull {spec}` (add \
             `--from DIR` for a copy of {}@{}), or run scripts/test-data.sh, which pulls every \
             part of data/test-parts.txt",
            missing.len(),
            files.len(),
            root.display(),
            root.display(),
            m.repo,
            &m.commit[..7.min(m.commit.len())],
        ));
    }
    Ok(dir.join(rel))
}

fn present(dir: &Path, f: &manifest::DataFile) -> bool {
    std::fs::metadata(dir.join(&f.path))
        .is_ok_and(|md| md.is_file() && f.size.is_none_or(|s| s == md.len()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_listed_parts_exist_and_are_pinned_by_sha256() {
        let ps = parts();
        assert_eq!(ps.len(), 9, "{ps:?}");
        for spec in ps {
            let s = crate::select(spec).unwrap();
            assert_eq!(s.spec(), spec);
            assert!(!s.files().is_empty(), "{spec}");
            // The harness may take them from the project's copy, which has exactly the files
            // pinned by sha256.
            for f in s.files() {
                assert!(f.sha256.is_some(), "{spec}: {} pinned by blob only", f.path);
            }
        }
    }

    #[test]
    fn a_part_missing_from_the_cache_names_the_pull_that_fetches_it() {
        let t = tempfile::tempdir().unwrap();
        let e = locate(t.path(), "muse:queries", "MuSE_Benchmark/queries.json").unwrap_err();
        let pull = format!(
            "`SCOREKIT_DATA={} scorekit data pull muse:queries`",
            t.path().display()
        );
        assert!(e.contains(&pull), "{e}");
        assert!(e.contains("2 of the part's 2 files"), "{e}");
        assert!(e.contains("dgraux/Hive-ICLR-2025@858763b"), "{e}");
        // One file of the right size is not the whole part.
        let m = manifest::find("muse").unwrap().unwrap();
        let dir = crate::cache::commit_dir(t.path(), "muse", &m.commit);
        let f = m
            .files
            .iter()
            .find(|f| f.path == "MuSE_Benchmark/queries.json")
            .unwrap();
        std::fs::create_dir_all(dir.join("MuSE_Benchmark")).unwrap();
        std::fs::write(dir.join(&f.path), vec![b' '; f.size.unwrap() as usize]).unwrap();
        let e = locate(t.path(), "muse:queries", "MuSE_Benchmark/queries.json").unwrap_err();
        assert!(e.contains("1 of the part's 2 files"), "{e}");
        // A path outside the part, or a part the harness does not pull, is the test's mistake.
        assert!(locate(t.path(), "muse:queries", "PDDL-domain-files")
            .unwrap_err()
            .contains("not a file or folder of muse:queries"));
    }
}
