//! Model resolution: local folder → Hugging Face cache → download with hf-hub.
//!
//! MODEL is a local folder, a manifest name from `models/`, or a Hub repo id with an optional
//! `@revision`. The cache is the one Python's `huggingface_hub` uses
//! (`models--org--name/{refs,snapshots,blobs}` under `HF_HUB_CACHE` / `$HF_HOME/hub`), so models
//! downloaded by either side are shared. Downloads go through hf-hub 0.5 (blocking ureq client,
//! `HF_ENDPOINT` honoured, `.part` files resumed); `--offline` and `HF_HUB_OFFLINE=1` never touch
//! the network and name the file that is missing.

use crate::manifest::{self, Manifest};
use anyhow::Context;
use scorekit_core::error::{Error, InputError, Result};
use scorekit_models::weights;
use scorekit_report::ModelRef;
use std::collections::BTreeSet;
use std::io::IsTerminal;
use std::path::{Path, PathBuf};

/// How a model may be found.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ResolveOptions {
    /// Never touch the network (also when `HF_HUB_OFFLINE=1`).
    pub offline: bool,
    /// No download progress bars.
    pub quiet: bool,
}

impl ResolveOptions {
    /// Whether the network is off limits: the flag, or `HF_HUB_OFFLINE` set to a true value.
    pub fn is_offline(&self) -> bool {
        self.offline || env_offline()
    }
}

fn env_offline() -> bool {
    scorekit_core::net::offline_from_env()
}

/// A model whose files are on disk.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResolvedModel {
    /// MODEL as the user wrote it.
    pub spec: String,
    /// Hub repo id, or the folder for a local model outside any cache.
    pub id: String,
    /// Commit hash of the files, or `local` for a folder outside any cache.
    pub revision: String,
    /// The folder holding the files (a cache snapshot or the user's folder).
    pub dir: PathBuf,
}

/// Weight files in the order they are preferred.
pub const WEIGHT_FILES: &[&str] = &["model.safetensors", "pytorch_model.bin"];

/// A model's tokenizer and vocabulary files (whichever it has): what a download of a Hub id
/// fetches beside the weights, and what `judge train` copies into the trained folder.
pub const TOKENIZER_FILES: &[&str] = &[
    "tokenizer.json",
    "tokenizer_config.json",
    "special_tokens_map.json",
    "vocab.txt",
    "vocab.json",
    "merges.txt",
    "spm.model",
    "sentencepiece.bpe.model",
];

/// sentence-transformers' files. A download of a Hub id (no manifest) fetches these and
/// [`TOKENIZER_FILES`] where the repo has them, so that a pulled model works offline for the
/// embedder and the judges.
pub const SENTENCE_TRANSFORMERS_FILES: &[&str] = &[
    "modules.json",
    "sentence_bert_config.json",
    "config_sentence_transformers.json",
    "1_Pooling/config.json",
    "2_Dense/config.json",
    "2_Dense/model.safetensors|2_Dense/pytorch_model.bin",
];

impl ResolvedModel {
    /// Path of a file of the model (it may not exist).
    pub fn file(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }

    /// The first of `alternatives` (`a|b|c`) present in the folder.
    pub fn first_present(&self, alternatives: &str) -> Option<PathBuf> {
        alternatives
            .split('|')
            .map(|n| self.file(n))
            .find(|p| p.is_file())
    }

    /// The weight file (`model.safetensors`, else `pytorch_model.bin`).
    pub fn weights_file(&self) -> Result<PathBuf> {
        self.first_present(&WEIGHT_FILES.join("|")).ok_or_else(|| {
            Error::Input(InputError::file(
                &self.dir,
                "model folder has no weights: expected model.safetensors or pytorch_model.bin",
            ))
        })
    }

    /// id, revision and the sha256 of the weights, for metrics.json: of the weight file, or for
    /// weights sharded behind an index (large T5 judges), of the lines `<shard>  <sha256>\n` of
    /// its shards in the index's order (so every shard's bytes are covered). The files are those
    /// `models::shards::weight_files` finds, the ones the judges load.
    pub fn model_ref(&self) -> Result<ModelRef> {
        let hash = |f: &PathBuf| {
            scorekit_report::sha256_file(f).with_context(|| format!("cannot hash {}", f.display()))
        };
        let sha256 = match scorekit_models::shards::weight_files(&self.dir)?.files() {
            [one] => hash(one)?,
            shards => {
                let mut lines = String::new();
                for f in shards {
                    let name = f
                        .file_name()
                        .map(|n| n.to_string_lossy())
                        .unwrap_or_default();
                    lines.push_str(&format!("{name}  {}\n", hash(f)?));
                }
                scorekit_report::sha256_hex(lines.as_bytes())
            }
        };
        Ok(ModelRef {
            id: self.id.clone(),
            revision: self.revision.clone(),
            sha256,
        })
    }
}

/// What MODEL names, before any file is looked at.
#[derive(Debug, Clone, PartialEq)]
pub enum ModelSpec {
    /// A folder on disk.
    Folder(PathBuf),
    /// A Hub repo at a revision, possibly pinned by a manifest.
    Hub {
        /// Repo id.
        id: String,
        /// Branch, tag or commit.
        revision: String,
        /// The manifest it came from.
        manifest: Option<Box<Manifest>>,
    },
}

/// Parse MODEL: an existing folder, a manifest name, or `org/name[@revision]`.
pub fn parse_spec(spec: &str) -> Result<ModelSpec> {
    let trimmed = spec.trim();
    if trimmed.is_empty() {
        return Err(Error::usage("empty model name"));
    }
    let path = Path::new(trimmed);
    if path.is_dir() {
        return Ok(ModelSpec::Folder(path.to_path_buf()));
    }
    let looks_like_path = trimmed.starts_with('.')
        || trimmed.starts_with('/')
        || trimmed.starts_with('~')
        || trimmed.contains('\\')
        || trimmed.matches('/').count() > 1;
    if looks_like_path {
        return Err(Error::Input(InputError::file(
            path,
            "model folder not found (MODEL is a folder, a manifest name or a Hub id org/name[@revision])",
        )));
    }
    let (id, rev) = match trimmed.split_once('@') {
        Some((i, r)) if !r.is_empty() => (i, Some(r.to_string())),
        Some(_) => return Err(Error::usage(format!("{spec}: empty revision after '@'"))),
        None => (trimmed, None),
    };
    if let Some(m) = manifest::find(id)? {
        let revision = rev.unwrap_or_else(|| m.revision_or_main().to_string());
        return Ok(ModelSpec::Hub {
            id: m.repo.clone(),
            revision,
            manifest: Some(Box::new(m)),
        });
    }
    if id.split('/').any(|p| p.is_empty()) || id.contains(char::is_whitespace) {
        return Err(Error::usage(format!(
            "{spec}: not a folder, a manifest ({}) or a Hub id org/name[@revision]",
            manifest::names().join(", ")
        )));
    }
    Ok(ModelSpec::Hub {
        id: id.to_string(),
        revision: rev.unwrap_or_else(|| "main".to_string()),
        manifest: None,
    })
}

/// The Hugging Face hub cache: `HF_HUB_CACHE`, `HUGGINGFACE_HUB_CACHE`, `$HF_HOME/hub`,
/// `$XDG_CACHE_HOME/huggingface/hub`, `~/.cache/huggingface/hub` (Python's order).
pub fn cache_dir() -> PathBuf {
    let var = |k: &str| {
        std::env::var_os(k)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    if let Some(p) = var("HF_HUB_CACHE").or_else(|| var("HUGGINGFACE_HUB_CACHE")) {
        return p;
    }
    if let Some(h) = var("HF_HOME") {
        return h.join("hub");
    }
    if let Some(x) = var("XDG_CACHE_HOME") {
        return x.join("huggingface").join("hub");
    }
    var("HOME")
        .unwrap_or_else(|| PathBuf::from("."))
        .join(".cache")
        .join("huggingface")
        .join("hub")
}

/// `models--org--name` under the cache.
pub fn repo_cache_dir(cache: &Path, id: &str) -> PathBuf {
    cache.join(format!("models--{}", id.replace('/', "--")))
}

fn is_commit(rev: &str) -> bool {
    rev.len() == 40 && rev.bytes().all(|b| b.is_ascii_hexdigit())
}

/// The snapshot folder of `id@revision` in the cache, with its commit, if the cache knows it.
pub fn cached_snapshot(cache: &Path, id: &str, revision: &str) -> Option<(String, PathBuf)> {
    let repo = repo_cache_dir(cache, id);
    let commit = if is_commit(revision) {
        revision.to_string()
    } else {
        std::fs::read_to_string(repo.join("refs").join(revision))
            .ok()?
            .trim()
            .to_string()
    };
    let dir = repo.join("snapshots").join(&commit);
    dir.is_dir().then_some((commit, dir))
}

/// Find a model's files, downloading what is missing unless offline.
///
/// `required_files` are paths inside the model; an entry `a|b` means "a, else b" (e.g.
/// `model.safetensors|pytorch_model.bin`). Hub models also get the manifest's files and the
/// sentence-transformers files the repo has. Safetensors headers are checked on every call, so a
/// truncated weight file is named before any scoring.
pub fn resolve(
    spec: &str,
    required_files: &[&str],
    opts: &ResolveOptions,
) -> Result<ResolvedModel> {
    let model = match parse_spec(spec)? {
        ModelSpec::Folder(dir) => resolve_folder(spec, &dir, required_files)?,
        ModelSpec::Hub {
            id,
            revision,
            manifest,
        } => resolve_hub(
            spec,
            &id,
            &revision,
            manifest.as_deref(),
            required_files,
            opts,
        )?,
    };
    for name in required_files {
        if let Some(p) = model.first_present(name) {
            if p.extension().is_some_and(|e| e == "safetensors") {
                weights::check_safetensors(&p)?;
            }
        }
    }
    Ok(model)
}

fn resolve_folder(spec: &str, dir: &Path, required: &[&str]) -> Result<ResolvedModel> {
    for name in required {
        if !name.split('|').any(|n| dir.join(n).is_file()) {
            return Err(Error::Input(InputError::file(
                dir.join(name.split('|').next().unwrap_or(name)),
                format!(
                    "missing from the model folder (needed: {})",
                    name.replace('|', " or ")
                ),
            )));
        }
    }
    // A folder inside a cache keeps its provenance: models--org--name/snapshots/<commit>.
    let abs = dir.canonicalize().unwrap_or_else(|_| dir.to_path_buf());
    let parts: Vec<String> = abs
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    let n = parts.len();
    if n >= 3 && parts[n - 2] == "snapshots" && is_commit(&parts[n - 1]) {
        if let Some(repo) = parts[n - 3].strip_prefix("models--") {
            return Ok(ResolvedModel {
                spec: spec.to_string(),
                id: repo.replacen("--", "/", 1),
                revision: parts[n - 1].clone(),
                dir: dir.to_path_buf(),
            });
        }
    }
    Ok(ResolvedModel {
        spec: spec.to_string(),
        id: spec.trim().to_string(),
        revision: "local".to_string(),
        dir: dir.to_path_buf(),
    })
}

/// Required file groups for a Hub model: the caller's, then the manifest's.
fn wanted_groups(manifest: Option<&Manifest>, required: &[&str]) -> Vec<String> {
    let mut seen = BTreeSet::new();
    let mut out = Vec::new();
    let from_manifest = manifest
        .map(|m| m.files.iter().map(|f| f.name.as_str()).collect::<Vec<_>>())
        .unwrap_or_default();
    for g in required.iter().copied().chain(from_manifest) {
        if seen.insert(g.to_string()) {
            out.push(g.to_string());
        }
    }
    out
}

fn group_present(dir: &Path, group: &str) -> bool {
    group.split('|').any(|n| dir.join(n).is_file())
}

fn resolve_hub(
    spec: &str,
    id: &str,
    revision: &str,
    manifest: Option<&Manifest>,
    required: &[&str],
    opts: &ResolveOptions,
) -> Result<ResolvedModel> {
    let cache = cache_dir();
    let wanted = wanted_groups(manifest, required);
    let cached = cached_snapshot(&cache, id, revision);
    if let Some((commit, dir)) = &cached {
        if wanted.iter().all(|g| group_present(dir, g)) {
            return Ok(ResolvedModel {
                spec: spec.to_string(),
                id: id.to_string(),
                revision: commit.clone(),
                dir: dir.clone(),
            });
        }
    }
    if opts.is_offline() {
        let (missing, place) = match &cached {
            Some((_, dir)) => {
                let g = wanted
                    .iter()
                    .find(|g| !group_present(dir, g))
                    .cloned()
                    .unwrap_or_default();
                (
                    dir.join(g.split('|').next().unwrap_or("")),
                    "is missing from the cached snapshot",
                )
            }
            None => (
                repo_cache_dir(&cache, id).join("snapshots"),
                "has no snapshot for this revision",
            ),
        };
        return Err(Error::Input(InputError::file(
            &missing,
            format!(
                "offline (--offline or HF_HUB_OFFLINE=1): {id}@{revision} {place}; \
                 run `scorekit models pull {spec}` where the network is reachable, or copy the \
                 folder `scorekit models path {spec}` prints there and pass it as MODEL"
            ),
        )));
    }
    download(spec, id, revision, manifest, &wanted, &cache, opts)
}

/// Retries within one call after an interrupted transfer; each resumes from the `.part` file.
const RETRIES: usize = 3;

fn download(
    spec: &str,
    id: &str,
    revision: &str,
    manifest: Option<&Manifest>,
    wanted: &[String],
    cache: &Path,
    opts: &ResolveOptions,
) -> Result<ResolvedModel> {
    use hf_hub::api::sync::ApiBuilder;
    use hf_hub::{Repo, RepoType};

    let endpoint = std::env::var("HF_ENDPOINT").unwrap_or_else(|_| "https://huggingface.co".into());
    let mut builder = ApiBuilder::from_env()
        .with_cache_dir(cache.to_path_buf())
        .with_progress(false)
        .with_retries(RETRIES);
    if let Ok(token) = std::env::var("HF_TOKEN") {
        if !token.trim().is_empty() {
            builder = builder.with_token(Some(token.trim().to_string()));
        }
    }
    let api = builder
        .build()
        .map_err(|e| anyhow::anyhow!("cannot set up the Hub client: {e}"))?;
    // Ask for the commit first so that every file comes from the same one even if the branch moves.
    let info = api
        .repo(Repo::with_revision(
            id.to_string(),
            RepoType::Model,
            revision.to_string(),
        ))
        .info()
        .map_err(|e| hub_error(e, &format!("{id}@{revision}"), &endpoint, manifest))?;
    let commit = info.sha.clone();
    let listed: BTreeSet<&str> = info.siblings.iter().map(|s| s.rfilename.as_str()).collect();
    let repo = api.repo(Repo::with_revision(
        id.to_string(),
        RepoType::Model,
        commit.clone(),
    ));
    let snapshot = repo_cache_dir(cache, id).join("snapshots").join(&commit);

    let mut files = Vec::new();
    for g in wanted {
        match g.split('|').find(|n| listed.contains(n)) {
            Some(n) => files.push(n.to_string()),
            None => {
                return Err(Error::Input(InputError::file(
                    format!("{endpoint}/{id}/tree/{commit}"),
                    format!("the repo has no {}", g.replace('|', " or ")),
                )))
            }
        }
    }
    if manifest.is_none() {
        for g in TOKENIZER_FILES.iter().chain(SENTENCE_TRANSFORMERS_FILES) {
            if let Some(n) = g.split('|').find(|n| listed.contains(n)) {
                if !files.iter().any(|f| f == n) {
                    files.push(n.to_string());
                }
            }
        }
    }
    let show = !opts.quiet && std::io::stderr().is_terminal();
    // A shard index brings its shards: they are appended as each index arrives.
    let mut next = 0;
    while next < files.len() {
        let name = files[next].clone();
        next += 1;
        if name.ends_with(".index.json") {
            let index = snapshot.join(&name);
            if !index.is_file() {
                fetch_file(&repo, &name, show, manifest, &endpoint, id, &commit)?;
            }
            for (shard, _) in scorekit_models::shards::shard_names(&index)? {
                if !files.contains(&shard) {
                    files.push(shard);
                }
            }
            continue;
        }
        if snapshot.join(&name).is_file() {
            continue;
        }
        fetch_file(&repo, &name, show, manifest, &endpoint, id, &commit)?;
    }
    if revision != commit {
        // Python's huggingface_hub writes refs/<branch>; hf-hub wrote refs/<commit> only.
        let refs = repo_cache_dir(cache, id).join("refs").join(revision);
        if let Some(parent) = refs.parent() {
            std::fs::create_dir_all(parent).context("cannot create refs folder")?;
        }
        std::fs::write(&refs, &commit)
            .with_context(|| format!("cannot write {}", refs.display()))?;
    }
    Ok(ResolvedModel {
        spec: spec.to_string(),
        id: id.to_string(),
        revision: commit,
        dir: snapshot,
    })
}

/// Download one file of the pinned commit into the cache and verify it.
fn fetch_file(
    repo: &hf_hub::api::sync::ApiRepo,
    name: &str,
    show: bool,
    manifest: Option<&Manifest>,
    endpoint: &str,
    id: &str,
    commit: &str,
) -> Result<()> {
    let got = if show {
        repo.download_with_progress(name, indicatif::ProgressBar::new(0))
    } else {
        repo.download_with_progress(name, ())
    };
    let path =
        got.map_err(|e| hub_error(e, &format!("{id}@{commit}/{name}"), endpoint, manifest))?;
    let expected = manifest
        .and_then(|m| m.file(name))
        .and_then(|f| f.sha256.clone());
    verify_download(&path, name, expected.as_deref())
}

/// The sha256 a cached file must have: the manifest's, else its blob's name when that is an LFS
/// sha256 (the Hub's etag of an LFS file is its sha256; small git files carry a sha1 instead).
pub fn expected_sha256(path: &Path, manifest_sha: Option<&str>) -> Option<String> {
    if let Some(s) = manifest_sha {
        return Some(s.to_ascii_lowercase());
    }
    let target = std::fs::read_link(path).ok()?;
    let name = target.file_name()?.to_str()?;
    (name.len() == 64 && name.bytes().all(|b| b.is_ascii_hexdigit()))
        .then(|| name.to_ascii_lowercase())
}

/// Check a freshly downloaded file; a corrupt one is removed so the next run fetches it again.
fn verify_download(path: &Path, name: &str, manifest_sha: Option<&str>) -> Result<()> {
    if let Some(expected) = expected_sha256(path, manifest_sha) {
        let got = scorekit_report::sha256_file(path)
            .with_context(|| format!("cannot hash {}", path.display()))?;
        if got != expected {
            let blob = std::fs::canonicalize(path).ok();
            let _ = std::fs::remove_file(path);
            if let Some(b) = blob {
                let _ = std::fs::remove_file(b);
            }
            return Err(Error::Internal(anyhow::anyhow!(
                "downloaded {name} is corrupt (sha256 {got}, expected {expected}); removed it, run again"
            )));
        }
    }
    if name.ends_with(".safetensors") {
        weights::check_safetensors(path)?;
    }
    Ok(())
}

/// The error of a failed Hub request, saying what to do; a gated manifest's 401/403 names the
/// licence to accept and the token to set.
fn hub_error(
    e: hf_hub::api::sync::ApiError,
    what: &str,
    endpoint: &str,
    manifest: Option<&Manifest>,
) -> Error {
    use hf_hub::api::sync::ApiError;
    if let ApiError::RequestError(re) = &e {
        // ureq is not a direct dependency; its status errors read "http status: N".
        let text = re.to_string();
        if let Some(code) = text
            .strip_prefix("http status: ")
            .and_then(|c| c.trim().parse::<u16>().ok())
        {
            let why = match (code, manifest.filter(|m| m.gated)) {
                (401 | 403, Some(m)) => format!(
                    "access denied: {} is gated: accept its licence on {endpoint}/{} with your \
                     Hub account, then set HF_TOKEN to a read token of that account",
                    m.repo, m.repo
                ),
                (401 | 403, None) => "access denied (gated or private repo: set HF_TOKEN)".into(),
                (404, _) => "not found (check the repo id, revision and file name)".into(),
                _ => "the Hub answered with an error".into(),
            };
            return Error::Usage(format!("{what}: HTTP {code} from {endpoint}: {why}"));
        }
    }
    Error::Internal(anyhow::anyhow!(
        "{what}: download from {endpoint} failed: {e} (a partial file is kept and resumed on the next run; \
         use --offline with a local folder on machines without network)"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_specs() {
        match parse_spec("labse").unwrap() {
            ModelSpec::Hub {
                id,
                revision,
                manifest,
            } => {
                assert_eq!(id, "sentence-transformers/LaBSE");
                assert!(is_commit(&revision));
                assert!(manifest.is_some());
            }
            other => panic!("{other:?}"),
        }
        match parse_spec("org/name@v1.0").unwrap() {
            ModelSpec::Hub {
                id,
                revision,
                manifest,
            } => {
                assert_eq!((id.as_str(), revision.as_str()), ("org/name", "v1.0"));
                assert!(manifest.is_none());
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(parse_spec("./no/such/dir").unwrap_err().exit_code(), 2);
        assert_eq!(parse_spec("org/").unwrap_err().exit_code(), 2);
        assert_eq!(parse_spec("org/x@").unwrap_err().exit_code(), 2);
    }

    #[test]
    fn finds_python_style_snapshots() {
        let t = tempfile::tempdir().unwrap();
        let repo = repo_cache_dir(t.path(), "org/m");
        let commit = "0123456789abcdef0123456789abcdef01234567";
        std::fs::create_dir_all(repo.join("snapshots").join(commit)).unwrap();
        std::fs::create_dir_all(repo.join("refs")).unwrap();
        std::fs::write(repo.join("refs/main"), commit).unwrap();
        let (c, d) = cached_snapshot(t.path(), "org/m", "main").unwrap();
        assert_eq!(c, commit);
        assert!(d.ends_with(commit));
        // A commit hash needs no ref file (Python writes none for commits).
        assert!(cached_snapshot(t.path(), "org/m", commit).is_some());
        assert!(cached_snapshot(t.path(), "org/m", "dev").is_none());
    }
}
