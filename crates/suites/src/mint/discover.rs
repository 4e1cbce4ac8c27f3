//! The first step of `scorekit mint`: walk the outputs folder in name order and sort what is
//! there into results.jsonl files of the upstream layout (each with its configuration and task),
//! results.jsonl files that do not fit the layout, and other files.

use crate::mint::layout::{parse_path, ConfigKey, FileKey};
use scorekit_core::error::{InputError, Result};
use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

/// One results.jsonl of the run.
pub struct Source {
    /// Where it is.
    pub path: PathBuf,
    /// How items and messages name it.
    pub name: String,
    /// Its configuration and task.
    pub key: FileKey,
    /// No later file has the same configuration and task (duplicate ids can be forgotten).
    pub last_of_key: bool,
}

/// What a walk of the outputs folder found, each list in path order.
#[derive(Debug, Default)]
pub struct Found {
    /// results.jsonl files that fit the layout, with their configuration and task.
    pub files: Vec<(PathBuf, FileKey)>,
    /// results.jsonl files that do not, with why.
    pub misfits: Vec<(PathBuf, String)>,
    /// Every other file.
    pub stray: Vec<PathBuf>,
}

impl Found {
    /// Keep only the files listed in `part` (a pinned dataset's part: the cache folder may hold
    /// other parts of the dataset too).
    pub fn keep_part(&mut self, part: &[PathBuf]) {
        let part: HashSet<&Path> = part.iter().map(PathBuf::as_path).collect();
        self.files.retain(|(p, _)| part.contains(p.as_path()));
        self.misfits.retain(|(p, _)| part.contains(p.as_path()));
        self.stray.retain(|p| part.contains(p.as_path()));
    }
}

/// Walk `root` in name order: results.jsonl files that fit the layout, those that do not (with
/// why), and any other files.
pub fn discover(root: &Path) -> Result<Found> {
    let mut found = Found::default();
    for entry in walkdir::WalkDir::new(root).sort_by_file_name() {
        let entry = entry.map_err(|e| {
            InputError::file(e.path().unwrap_or(root), format!("cannot read folder: {e}"))
        })?;
        if !entry.file_type().is_file() {
            continue;
        }
        let path = entry.path().to_path_buf();
        if entry.file_name() != "results.jsonl" {
            found.stray.push(path);
            continue;
        }
        let rel = path.strip_prefix(root).unwrap_or(&path);
        match parse_path(rel) {
            Ok(k) => found.files.push((path, k)),
            Err(why) => found.misfits.push((path, why)),
        }
    }
    Ok(found)
}

/// The files with, for each, whether it is the last of its configuration and task.
pub fn sources(files: Vec<(PathBuf, FileKey)>) -> Vec<Source> {
    let mut last: HashMap<(ConfigKey, String, String), usize> = HashMap::new();
    for (i, (_, k)) in files.iter().enumerate() {
        last.insert((k.config.clone(), k.task_type.clone(), k.task.clone()), i);
    }
    files
        .into_iter()
        .enumerate()
        .map(|(i, (path, key))| {
            let last_of_key = last
                .get(&(key.config.clone(), key.task_type.clone(), key.task.clone()))
                .is_some_and(|&j| j == i);
            Source {
                name: path.display().to_string(),
                path,
                key,
                last_of_key,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    #[test]
    fn files_are_sorted_into_the_layout_misfits_and_strays() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path();
        let good = |task: &str| {
            let dir = root.join(format!("m/F=None/max5_p2+tool+cd/reasoning/{task}"));
            fs::create_dir_all(&dir).unwrap();
            fs::write(dir.join("results.jsonl"), "").unwrap();
            dir.join("results.jsonl")
        };
        let math = good("math");
        let gsm8k = good("gsm8k");
        fs::create_dir_all(root.join("odd")).unwrap();
        fs::write(root.join("odd/results.jsonl"), "").unwrap();
        fs::write(root.join("notes.txt"), "").unwrap();
        let mut found = discover(root).unwrap();
        let files: Vec<&PathBuf> = found.files.iter().map(|(p, _)| p).collect();
        assert_eq!(files, [&gsm8k, &math], "name order");
        assert_eq!(found.misfits.len(), 1);
        assert_eq!(found.stray, [root.join("notes.txt")]);
        let srcs = sources(found.files.clone());
        assert!(srcs.iter().all(|s| s.last_of_key));
        assert_eq!(srcs[0].name, gsm8k.display().to_string());

        found.keep_part(std::slice::from_ref(&math));
        assert_eq!(found.files.len(), 1);
        assert!(found.misfits.is_empty() && found.stray.is_empty());
    }
}
