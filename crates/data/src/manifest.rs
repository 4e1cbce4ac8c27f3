//! Dataset manifests (`data/manifests/*.toml`): the upstream repository, the pinned commit, every
//! file with its size and checksums, and the parts a dataset name can select.
//!
//! The shipped manifests are compiled in, so a bare binary knows its datasets. A folder named by
//! `SCOREKIT_DATA_MANIFESTS` adds manifests (or replaces a shipped one of the same name, to
//! re-pin it); those are user input and a bad one is an exit-2 error naming file, line and field.

use scorekit_core::error::{Error, InputError, Result};
use serde::Deserialize;
use std::path::{Path, PathBuf};

/// The manifests shipped with scorekit: (file name, TOML text).
const SHIPPED: &[(&str, &str)] = &[
    (
        "possible-stories.toml",
        include_str!("../../../data/manifests/possible-stories.toml"),
    ),
    (
        "grasp.toml",
        include_str!("../../../data/manifests/grasp.toml"),
    ),
    (
        "muse.toml",
        include_str!("../../../data/manifests/muse.toml"),
    ),
    (
        "mint.toml",
        include_str!("../../../data/manifests/mint.toml"),
    ),
];

/// The environment variable naming a folder of extra manifests.
pub const MANIFESTS_ENV: &str = "SCOREKIT_DATA_MANIFESTS";

/// The part every dataset has: all of its files, the repository root as its path.
pub const ALL: &str = "all";

/// One pinned dataset.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct DataManifest {
    /// Name on the command line (`possible-stories`).
    pub name: String,
    /// GitHub `owner/name` of the upstream repository.
    pub repo: String,
    /// The commit every file is pinned at (40 hex digits).
    pub commit: String,
    /// What the dataset is.
    #[serde(default)]
    pub description: Option<String>,
    /// Licence notes, as upstream states them (or does not).
    pub licence: String,
    /// The part that NAME alone selects.
    pub default: String,
    /// Every file of the dataset.
    pub files: Vec<DataFile>,
    /// Named selections of files.
    #[serde(default)]
    pub parts: Vec<Part>,
}

/// A file of a dataset, by its path in the upstream repository.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct DataFile {
    /// Path inside the repository (`dataset/test.jsonl`).
    pub path: String,
    /// Size in bytes, when known.
    #[serde(default)]
    pub size: Option<u64>,
    /// Lowercase hex sha256, when the bytes were available to pin it.
    #[serde(default)]
    pub sha256: Option<String>,
    /// Git blob id (sha1 of `blob <size>\0` + bytes) from the upstream tree.
    #[serde(default)]
    pub git_blob: Option<String>,
}

/// A named selection of a dataset's files (`possible-stories:test`).
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Part {
    /// Name after the colon.
    pub name: String,
    /// What the part holds.
    #[serde(default)]
    pub description: Option<String>,
    /// What a scoring command gets: one of the part's files, or a folder above all of them
    /// (`""` for the repository root).
    pub path: String,
    /// Files and folder prefixes (ending in `/`) of the part.
    pub include: Vec<String>,
}

impl DataManifest {
    /// The part called `name` (`all` included), if any.
    pub fn part(&self, name: &str) -> Option<Part> {
        if name == ALL {
            return Some(Part {
                name: ALL.into(),
                description: Some("every file of the dataset".into()),
                path: String::new(),
                include: vec![String::new()],
            });
        }
        self.parts.iter().find(|p| p.name == name).cloned()
    }

    /// Names of the parts, `all` last.
    pub fn part_names(&self) -> Vec<String> {
        let mut v: Vec<String> = self.parts.iter().map(|p| p.name.clone()).collect();
        v.push(ALL.into());
        v
    }

    /// The files a part selects, in manifest order.
    pub fn files_of(&self, part: &Part) -> Vec<&DataFile> {
        self.files
            .iter()
            .filter(|f| part.include.iter().any(|i| includes(i, &f.path)))
            .collect()
    }

    /// The URL of a file under a raw-file endpoint (`https://raw.githubusercontent.com`).
    pub fn url(&self, endpoint: &str, file: &DataFile) -> String {
        format!(
            "{}/{}/{}/{}",
            endpoint.trim_end_matches('/'),
            self.repo,
            self.commit,
            file.path
        )
    }
}

/// Whether an `include` entry selects a path: the path itself, or a folder prefix ending in `/`
/// (the empty prefix selects everything).
fn includes(entry: &str, path: &str) -> bool {
    entry == path || ((entry.is_empty() || entry.ends_with('/')) && path.starts_with(entry))
}

/// Every manifest: the shipped ones, replaced or extended by `SCOREKIT_DATA_MANIFESTS`.
pub fn all() -> Result<Vec<DataManifest>> {
    let mut out = Vec::new();
    for (file, text) in SHIPPED {
        out.push(parse_shipped(file, text)?);
    }
    for m in extra()? {
        match out.iter_mut().find(|x| x.name == m.name) {
            Some(slot) => *slot = m,
            None => out.push(m),
        }
    }
    Ok(out)
}

/// The manifest of dataset `name`, if there is one. Only that manifest is parsed.
pub fn find(name: &str) -> Result<Option<DataManifest>> {
    let file = format!("{name}.toml");
    if let Some(dir) = extra_dir() {
        let p = dir.join(&file);
        if p.is_file() {
            return parse_file(&p).map(Some);
        }
        if !dir.is_dir() {
            return Err(bad_dir(&dir));
        }
    }
    match SHIPPED.iter().find(|(f, _)| *f == file) {
        Some((f, text)) => parse_shipped(f, text).map(Some),
        None => Ok(None),
    }
}

/// Names of every known dataset, for messages.
pub fn names() -> Vec<String> {
    let mut v: Vec<String> = SHIPPED
        .iter()
        .map(|(f, _)| f.trim_end_matches(".toml").to_string())
        .collect();
    if let Some(dir) = extra_dir() {
        for p in toml_files(&dir).unwrap_or_default() {
            if let Some(stem) = p.file_stem().and_then(|s| s.to_str()) {
                if !v.iter().any(|n| n == stem) {
                    v.push(stem.to_string());
                }
            }
        }
    }
    v
}

fn extra_dir() -> Option<PathBuf> {
    std::env::var_os(MANIFESTS_ENV)
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
}

fn bad_dir(dir: &Path) -> Error {
    Error::Input(InputError::file(
        dir,
        format!("{MANIFESTS_ENV} names this, which is not a folder of *.toml manifests"),
    ))
}

fn toml_files(dir: &Path) -> std::io::Result<Vec<PathBuf>> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "toml") && p.is_file())
        .collect();
    v.sort();
    Ok(v)
}

fn extra() -> Result<Vec<DataManifest>> {
    let Some(dir) = extra_dir() else {
        return Ok(Vec::new());
    };
    let files = toml_files(&dir).map_err(|_| bad_dir(&dir))?;
    files.iter().map(|p| parse_file(p)).collect()
}

fn parse_file(path: &Path) -> Result<DataManifest> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| InputError::file(path, format!("cannot read manifest: {e}")))?;
    parse(path, &text).map_err(Error::Input)
}

/// A shipped manifest that does not parse is a bug of scorekit, not the user's input.
fn parse_shipped(file: &str, text: &str) -> Result<DataManifest> {
    parse(Path::new(&format!("data/manifests/{file}")), text)
        .map_err(|e| Error::Internal(anyhow::anyhow!("shipped manifest is broken: {e}")))
}

/// Parse and check a manifest; errors name the file, the line and the field.
pub fn parse(path: &Path, text: &str) -> Result<DataManifest, InputError> {
    let m: DataManifest = toml::from_str(text).map_err(|e| {
        let line = e
            .span()
            .map(|s| text[..s.start.min(text.len())].matches('\n').count() + 1);
        let msg = e.message().to_string();
        match line {
            Some(l) => InputError::line(path, l, format!("not a valid data manifest: {msg}")),
            None => InputError::file(path, format!("not a valid data manifest: {msg}")),
        }
    })?;
    check(path, text, &m)?;
    Ok(m)
}

/// 1-based line of the first occurrence of `needle` (1 when absent).
fn line_of(text: &str, needle: &str) -> usize {
    text.find(needle)
        .map(|i| text[..i].matches('\n').count() + 1)
        .unwrap_or(1)
}

fn is_hex(s: &str, len: usize) -> bool {
    s.len() == len
        && s.bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

fn is_name(s: &str) -> bool {
    !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
        && !s.starts_with('.')
}

/// A safe relative path: no root, no `.`/`..`/empty components, no backslashes, not under the
/// cache's own `.scorekit/` folder.
fn is_safe_path(p: &str) -> bool {
    !p.is_empty()
        && !p.contains('\\')
        && !p.starts_with(".scorekit/")
        && p.split('/')
            .all(|c| !c.is_empty() && c != "." && c != ".." && !c.contains(':'))
}

fn check(path: &Path, text: &str, m: &DataManifest) -> Result<(), InputError> {
    let err = |needle: &str, field: &str, msg: String| {
        InputError::field(path, line_of(text, needle), field, msg)
    };
    if !is_name(&m.name) || m.name.contains('.') {
        return Err(err(
            "name",
            "name",
            format!("{:?}: expected letters, digits, '-' or '_'", m.name),
        ));
    }
    if let Some(stem) = path.file_stem().and_then(|s| s.to_str()) {
        if stem != m.name {
            return Err(err(
                "name",
                "name",
                format!("{:?} differs from the file name: expected {stem:?}", m.name),
            ));
        }
    }
    let repo_ok = m
        .repo
        .split_once('/')
        .is_some_and(|(o, r)| is_name(o) && is_name(r));
    if !repo_ok {
        return Err(err(
            "repo",
            "repo",
            format!("{:?}: expected a GitHub owner/name", m.repo),
        ));
    }
    if !is_hex(&m.commit, 40) {
        return Err(err(
            "commit",
            "commit",
            format!(
                "{:?}: expected the full 40-digit lowercase commit hash",
                m.commit
            ),
        ));
    }
    if m.files.is_empty() {
        return Err(InputError::field(
            path,
            1,
            "files",
            "the manifest lists no files",
        ));
    }
    let mut seen = std::collections::HashSet::new();
    for f in &m.files {
        let needle = format!("\"{}\"", f.path);
        if !is_safe_path(&f.path) {
            return Err(err(
                &needle,
                "path",
                format!(
                    "{:?}: expected a relative path inside the repository (no '..', '.', '\\', ':' or leading '/')",
                    f.path
                ),
            ));
        }
        if !seen.insert(f.path.as_str()) {
            return Err(err(
                &needle,
                "path",
                format!("{:?} is listed twice", f.path),
            ));
        }
        if let Some(s) = &f.sha256 {
            if !is_hex(s, 64) {
                return Err(err(
                    s,
                    "sha256",
                    format!("{s:?} ({}): expected 64 lowercase hex digits", f.path),
                ));
            }
        }
        if let Some(b) = &f.git_blob {
            if !is_hex(b, 40) {
                return Err(err(
                    b,
                    "git_blob",
                    format!("{b:?} ({}): expected 40 lowercase hex digits", f.path),
                ));
            }
        }
        if f.sha256.is_none() && f.git_blob.is_none() {
            return Err(err(
                &needle,
                "sha256",
                format!(
                    "{}: neither sha256 nor git_blob: a file must be pinned by one of them",
                    f.path
                ),
            ));
        }
    }
    let mut names = std::collections::HashSet::new();
    for p in &m.parts {
        let needle = format!("name = \"{}\"", p.name);
        if !is_name(&p.name) || p.name == ALL {
            return Err(err(
                &needle,
                "parts.name",
                format!(
                    "{:?}: expected letters, digits, '.', '-' or '_', and not the reserved name `all`",
                    p.name
                ),
            ));
        }
        if !names.insert(p.name.as_str()) {
            return Err(err(
                &needle,
                "parts.name",
                format!("part {:?} is defined twice", p.name),
            ));
        }
        if p.include.is_empty() {
            return Err(err(
                &needle,
                "parts.include",
                format!("part {:?} includes nothing", p.name),
            ));
        }
        for i in &p.include {
            if !m.files.iter().any(|f| includes(i, &f.path)) {
                return Err(err(
                    &format!("\"{i}\""),
                    "parts.include",
                    format!("{i:?} (part {:?}) matches no file of the manifest", p.name),
                ));
            }
        }
        let files = m.files_of(p);
        let path_ok = p.path.is_empty()
            || files.iter().any(|f| f.path == p.path)
            || files
                .iter()
                .all(|f| f.path.starts_with(&format!("{}/", p.path)));
        if !path_ok {
            return Err(err(
                &needle,
                "parts.path",
                format!(
                    "{:?} (part {:?}) is neither one of the part's files nor a folder above all of them",
                    p.path, p.name
                ),
            ));
        }
    }
    if m.part(&m.default).is_none() {
        return Err(err(
            "default",
            "default",
            format!(
                "{:?} is not a part of the manifest ({})",
                m.default,
                m.part_names().join(", ")
            ),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shipped_manifests_parse_and_pin_every_file() {
        let all = all().unwrap();
        let names: Vec<&str> = all.iter().map(|m| m.name.as_str()).collect();
        assert_eq!(names, ["possible-stories", "grasp", "muse", "mint"]);
        let ps = find("possible-stories").unwrap().unwrap();
        let train = ps.files.iter().find(|f| f.path == "dataset/train.jsonl");
        assert_eq!(
            train.and_then(|f| f.git_blob.as_deref()),
            Some("08f4fd626a812043ea684f9ec455c81ed8ba0b17")
        );
        assert!(train.unwrap().sha256.is_none());
        assert!(ps.commit.starts_with("3f8c525"));
        let mint = find("mint").unwrap().unwrap();
        assert!(mint.commit.starts_with("3f7f12c"));
        let agent = mint.part("gpt-3.5-turbo-0613").unwrap();
        assert_eq!(mint.files_of(&agent).len(), 152);
        assert_eq!(mint.files_of(&mint.part("headline").unwrap()).len(), 56);
        let outputs = mint.files_of(&mint.part(ALL).unwrap());
        assert_eq!(
            outputs
                .iter()
                .filter(|f| f.path.starts_with("data/outputs/"))
                .count(),
            2490
        );
        assert!(find("nope").unwrap().is_none());
    }

    const GOOD: &str = r#"name = "tiny"
repo = "org/tiny"
commit = "0123456789abcdef0123456789abcdef01234567"
licence = "CC0"
default = "a"
files = [
  { path = "x/a.txt", size = 3, sha256 = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad" },
  { path = "x/b.txt", git_blob = "f2ba8f84ab5c1bce84a7b441cb1959cfc7093b7f" },
]
[[parts]]
name = "a"
path = "x/a.txt"
include = ["x/a.txt"]
"#;

    fn bad(from: &str, to: &str) -> InputError {
        let text = GOOD.replacen(from, to, 1);
        assert_ne!(text, GOOD, "{from}");
        parse(Path::new("tiny.toml"), &text).unwrap_err()
    }

    #[test]
    fn bad_manifests_name_line_and_field() {
        let m = parse(Path::new("tiny.toml"), GOOD).unwrap();
        assert_eq!(m.files_of(&m.part("a").unwrap()).len(), 1);
        assert_eq!(m.files_of(&m.part(ALL).unwrap()).len(), 2);
        assert_eq!(
            m.url("http://127.0.0.1:9/", &m.files[0]),
            "http://127.0.0.1:9/org/tiny/0123456789abcdef0123456789abcdef01234567/x/a.txt"
        );

        let e = bad("commit = \"0123", "commit = \"9123x");
        assert_eq!(
            (e.line, e.field.as_deref()),
            (Some(3), Some("commit")),
            "{e}"
        );
        let e = bad("sha256 = \"ba78", "sha256 = \"BA78");
        assert_eq!(
            (e.line, e.field.as_deref()),
            (Some(7), Some("sha256")),
            "{e}"
        );
        let e = bad("\"x/b.txt\"", "\"../b.txt\"");
        assert_eq!((e.line, e.field.as_deref()), (Some(8), Some("path")), "{e}");
        let e = bad(
            ", git_blob = \"f2ba8f84ab5c1bce84a7b441cb1959cfc7093b7f\"",
            "",
        );
        assert!(e.message.contains("neither sha256 nor git_blob"), "{e}");
        let e = bad("include = [\"x/a.txt\"]", "include = [\"y/\"]");
        assert_eq!(e.field.as_deref(), Some("parts.include"), "{e}");
        let e = bad("path = \"x/a.txt\"\n", "path = \"x/b.txt\"\n");
        assert_eq!(e.field.as_deref(), Some("parts.path"), "{e}");
        let e = bad("default = \"a\"", "default = \"nope\"");
        assert!(e.message.contains("a, all"), "{e}");
        let e = bad("name = \"a\"", "name = \"all\"");
        assert_eq!(e.field.as_deref(), Some("parts.name"), "{e}");
        let e = bad("licence = \"CC0\"\n", "");
        assert!(e.message.contains("licence"), "{e}");
        let e = bad("repo = \"org/tiny\"", "repo = \"org/tiny\"\nmirror = 1");
        assert!(e.message.contains("mirror"), "{e}");
        assert_eq!(e.line, Some(3), "{e}");
        let e = parse(Path::new("other.toml"), GOOD).unwrap_err();
        assert!(e.message.contains("file name"), "{e}");
    }
}
