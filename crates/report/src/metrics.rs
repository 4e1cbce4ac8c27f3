//! metrics.json: the machine-readable result of a scoring command, per the output contract.

use scorekit_core::error::{Error, InputError, Result};
use scorekit_core::shard::Shard;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// An input file and the sha256 of its bytes.
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
pub struct InputFile {
    /// The path as given on the command line.
    pub path: String,
    /// Lowercase hex sha256 of the file's bytes.
    pub sha256: String,
}

impl InputFile {
    /// Hash a file named on the command line.
    pub fn hash(path: &Path) -> std::io::Result<Self> {
        Ok(InputFile {
            path: path.display().to_string(),
            sha256: sha256_file(path)?,
        })
    }
}

/// A model used by the run: id, the exact revision, and the sha256 of its weights.
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
pub struct ModelRef {
    /// Hub repo id, manifest name or local folder.
    pub id: String,
    /// The commit hash the files came from ("local" for a folder outside any cache).
    pub revision: String,
    /// sha256 of the weight file.
    pub sha256: String,
}

/// A pinned dataset the inputs came from (`scorekit data`): the name as resolved
/// (`possible-stories:test`), the upstream repository and commit, and each file's sha256.
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
pub struct DatasetRef {
    /// `NAME:PART`.
    pub name: String,
    /// GitHub `owner/name` of the upstream repository.
    pub repo: String,
    /// The commit the files are pinned at.
    pub commit: String,
    /// Each file: its upstream path and sha256.
    pub files: Vec<InputFile>,
}

/// Which scorekit binary wrote a metrics.json (`binary`): the build and whether the CPU build
/// handed it the command (`--device auto|cuda` on a node with the NVIDIA driver).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BinaryInfo {
    /// The executable's file name (`scorekit`, `scorekit-cuda`).
    pub name: String,
    /// The build: `cpu`, `cuda` or `metal`.
    pub build: String,
    /// True where the CPU build handed this command to this binary.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub handed_over: bool,
}

static BINARY: OnceLock<BinaryInfo> = OnceLock::new();

/// Record, once per process, which binary is running: every [`MetricsDoc::new`] after this
/// carries it as `binary` (the binary's `main` calls it; library users that never do write no
/// `binary`). A second call keeps the first value.
pub fn set_binary(info: BinaryInfo) {
    let _ = BINARY.set(info);
}

/// The whole metrics.json document.
#[derive(Debug, Clone, Serialize, serde::Deserialize)]
pub struct MetricsDoc {
    /// Suite name (`grasp`, `mint`, `muse`, `story`).
    pub suite: String,
    /// Version of scorekit that wrote the file.
    pub scorekit_version: String,
    /// The binary that wrote the file ([`set_binary`]); absent in files of older versions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub binary: Option<BinaryInfo>,
    /// Every input file with its hash.
    pub inputs: Vec<InputFile>,
    /// Every model used, with its revision.
    pub models: Vec<ModelRef>,
    /// Datasets named instead of files (absent when every input was a path).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub datasets: Vec<DatasetRef>,
    /// Settings that change the numbers: [`RunSettings`] beside the suite's own typed settings,
    /// kept as one JSON object (keys sorted) and reached only through [`MetricsDoc::set_settings`],
    /// [`MetricsDoc::run_settings`] and [`MetricsDoc::suite_settings`], so that no code reads a
    /// setting by a string key.
    settings: Map<String, Value>,
    /// Headline metrics.
    pub metrics: Map<String, Value>,
    /// Per-group metrics.
    pub groups: Map<String, Value>,
    /// The metrics.json this document was read from (named in errors); not written.
    #[serde(skip)]
    pub source: Option<PathBuf>,
}

/// The settings every scoring run records beside its suite's own: the bootstrap, its seed and
/// the shard (or, after `scorekit merge`, how many shards were merged).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunSettings {
    /// Bootstrap resamples of the confidence intervals.
    pub bootstrap: usize,
    /// Seed of the bootstrap.
    pub seed: u64,
    /// `I/N` of a `--shard` run; absent for the whole input.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shard: Option<String>,
    /// How many shards `scorekit merge` put together; absent for a single run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub merged_shards: Option<u32>,
}

impl RunSettings {
    /// The keys of [`RunSettings`] in the settings object (every other key is the suite's).
    const KEYS: [&'static str; 4] = ["bootstrap", "seed", "shard", "merged_shards"];

    /// A run of the whole input (no shard) with these bootstrap settings.
    pub fn new(bootstrap: usize, seed: u64, shard: Shard) -> Self {
        RunSettings {
            bootstrap,
            seed,
            shard: (shard.count > 1).then(|| shard.to_string()),
            merged_shards: None,
        }
    }
}

impl MetricsDoc {
    /// An empty document for a suite, stamped with this version of scorekit.
    pub fn new(suite: &str) -> Self {
        MetricsDoc {
            suite: suite.to_string(),
            scorekit_version: env!("CARGO_PKG_VERSION").to_string(),
            binary: BINARY.get().cloned(),
            inputs: Vec::new(),
            models: Vec::new(),
            datasets: Vec::new(),
            settings: Map::new(),
            metrics: Map::new(),
            groups: Map::new(),
            source: None,
        }
    }

    /// Record the run's settings: the common [`RunSettings`] and the suite's own (a struct whose
    /// fields are keys of metrics.json's `settings`; it must not reuse a [`RunSettings`] key).
    pub fn set_settings<S: Serialize>(&mut self, run: &RunSettings, suite: &S) -> Result<()> {
        let mut map = object(serde_json::to_value(suite), "suite settings")?;
        if let Some(k) = RunSettings::KEYS.iter().find(|k| map.contains_key(**k)) {
            return Err(Error::Internal(anyhow::anyhow!(
                "suite settings reuse the run setting {k:?}"
            )));
        }
        map.extend(object(serde_json::to_value(run), "run settings")?);
        self.settings = map;
        Ok(())
    }

    /// Replace the common settings, keeping the suite's (`scorekit merge`: the shard becomes
    /// `merged_shards`).
    pub fn set_run_settings(&mut self, run: &RunSettings) -> Result<()> {
        for k in RunSettings::KEYS {
            self.settings.remove(k);
        }
        self.settings
            .extend(object(serde_json::to_value(run), "run settings")?);
        Ok(())
    }

    /// The common settings, read back typed: a missing or malformed one is an error naming
    /// metrics.json and the field.
    pub fn run_settings(&self) -> Result<RunSettings> {
        let run: Map<String, Value> = RunSettings::KEYS
            .iter()
            .filter_map(|k| self.settings.get(*k).map(|v| (k.to_string(), v.clone())))
            .collect();
        serde_json::from_value(Value::Object(run)).map_err(|e| self.settings_error(e))
    }

    /// The suite's own settings, read back typed: a missing key, an unknown key (a typo, or a
    /// setting of another version) or a wrong type is an error naming metrics.json and the
    /// field, never a silently different merge or report.
    pub fn suite_settings<S: DeserializeOwned>(&self) -> Result<S> {
        let own: Map<String, Value> = self
            .settings
            .iter()
            .filter(|(k, _)| !RunSettings::KEYS.contains(&k.as_str()))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        serde_json::from_value(Value::Object(own)).map_err(|e| self.settings_error(e))
    }

    /// The settings as written (for showing what differs between two runs; never for reading
    /// one setting).
    pub fn settings_json(&self) -> &Map<String, Value> {
        &self.settings
    }

    fn settings_error(&self, e: serde_json::Error) -> Error {
        let file = self
            .source
            .clone()
            .unwrap_or_else(|| PathBuf::from("metrics.json"));
        InputError {
            line: None,
            field: Some("settings".into()),
            ..InputError::file(file, e.to_string())
        }
        .into()
    }

    /// Record an input file (hashing it).
    pub fn add_input(&mut self, path: &Path) -> anyhow::Result<()> {
        let f = InputFile::hash(path)
            .map_err(|e| anyhow::anyhow!("cannot hash input {}: {e}", path.display()))?;
        self.inputs.push(f);
        Ok(())
    }

    /// What makes two runs the same run (all but the numbers): suite, version, inputs, models,
    /// settings. A resumed run must match the unfinished one; shards of one merge must match
    /// except for the `shard` setting.
    pub fn identity(&self) -> Value {
        let mut id = serde_json::json!({
            "suite": self.suite,
            "scorekit_version": self.scorekit_version,
            "inputs": self.inputs,
            "models": self.models,
            "settings": self.settings,
        });
        // Only when present, so runs that named no dataset keep the identity they always had.
        if !self.datasets.is_empty() {
            id["datasets"] = serde_json::json!(self.datasets);
        }
        id
    }

    /// Pretty JSON with a trailing newline.
    pub fn to_json(&self) -> String {
        let mut s = serde_json::to_string_pretty(self).expect("metrics serialise");
        s.push('\n');
        s
    }
}

/// A serialised settings struct as a JSON object.
fn object(v: serde_json::Result<Value>, what: &str) -> Result<Map<String, Value>> {
    match v {
        Ok(Value::Object(m)) => Ok(m),
        Ok(other) => Err(Error::Internal(anyhow::anyhow!(
            "{what} serialise to {other}, not an object"
        ))),
        Err(e) => Err(Error::Internal(anyhow::anyhow!(
            "{what} do not serialise: {e}"
        ))),
    }
}

/// sha256 of a file, streamed. A file this process hashed already is not read again while it
/// is unchanged ([`memo`]): a run hashes its inputs at its start, and report.html's texts check
/// them again at its end (GRASP's results file: 0.3 s of a million rows).
pub fn sha256_file(path: &Path) -> std::io::Result<String> {
    let started = std::time::SystemTime::now();
    let before = memo::Stamp::of(path)?;
    if let Some(h) = memo::get(path, &before) {
        return Ok(h);
    }
    let mut file = std::fs::File::open(path)?;
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let n = file.read(&mut buf)?;
        if n == 0 {
            break;
        }
        hasher.update(&buf[..n]);
    }
    let h = hex(&hasher.finalize());
    if memo::Stamp::of(path)? == before {
        memo::put(path, before, started, &h);
    }
    Ok(h)
}

/// The hashes of files this process read, each with the file's stamp (size, inode, change
/// and modification times) when it was read. A hash is trusted again only while the stamp is
/// the same and both times were older than the hashing by more than the file system's clock
/// tick: a file written in the same tick as its hash could change without a new time (git's
/// "racy clean" files), so it is read again.
mod memo {
    use std::collections::HashMap;
    use std::path::{Path, PathBuf};
    use std::sync::{Mutex, OnceLock, PoisonError};
    use std::time::{Duration, SystemTime};

    /// Older than the hashing by this much: no later write can leave the same times.
    const SETTLED: Duration = Duration::from_secs(2);

    /// What changes when a file's bytes do.
    #[derive(Debug, Clone, PartialEq, Eq)]
    pub struct Stamp {
        len: u64,
        modified: Option<SystemTime>,
        /// Inode, device and change time (Unix; elsewhere nothing is trusted again).
        node: Option<(u64, u64, i64, i64)>,
    }

    impl Stamp {
        /// The stamp of `path` now.
        pub fn of(path: &Path) -> std::io::Result<Stamp> {
            let m = std::fs::metadata(path)?;
            #[cfg(unix)]
            let node = {
                use std::os::unix::fs::MetadataExt;
                Some((m.ino(), m.dev(), m.ctime(), m.ctime_nsec()))
            };
            #[cfg(not(unix))]
            let node = None;
            Ok(Stamp {
                len: m.len(),
                modified: m.modified().ok(),
                node,
            })
        }

        /// Both times older than `t` by [`SETTLED`].
        fn settled_before(&self, t: SystemTime) -> bool {
            let Some((_, _, secs, nanos)) = self.node else {
                return false;
            };
            let changed = if secs >= 0 {
                SystemTime::UNIX_EPOCH
                    + Duration::new(secs as u64, nanos.clamp(0, 999_999_999) as u32)
            } else {
                return false;
            };
            let old = |x: SystemTime| x + SETTLED < t;
            self.modified.is_some_and(old) && old(changed)
        }
    }

    type Memo = HashMap<PathBuf, (Stamp, SystemTime, String)>;

    fn memo() -> &'static Mutex<Memo> {
        static MEMO: OnceLock<Mutex<Memo>> = OnceLock::new();
        MEMO.get_or_init(Mutex::default)
    }

    /// The hash of `path` taken earlier, if its stamp is still `now` and was settled then.
    pub fn get(path: &Path, now: &Stamp) -> Option<String> {
        let memo = memo().lock().unwrap_or_else(PoisonError::into_inner);
        let (stamp, hashed, h) = memo.get(path)?;
        (stamp == now && stamp.settled_before(*hashed)).then(|| h.clone())
    }

    /// Keep the hash `h` of `path`, read from `started` on with `stamp` before and after.
    pub fn put(path: &Path, stamp: Stamp, started: SystemTime, h: &str) {
        let mut memo = memo().lock().unwrap_or_else(PoisonError::into_inner);
        memo.insert(path.to_path_buf(), (stamp, started, h.to_string()));
    }
}

/// Lowercase hex of bytes.
pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Lowercase hex sha256 of bytes in memory.
pub fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::{Digest, Sha256};
    hex(&Sha256::digest(bytes))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_hashed_before_is_read_again_unless_unchanged_and_settled() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("a.csv");
        std::fs::write(&p, "abc").unwrap();
        let first = sha256_file(&p).unwrap();
        // Rewritten at once with as many bytes: the same tick may leave the same times, so the
        // hash is taken again, never the memo's.
        std::fs::write(&p, "xyz").unwrap();
        let second = sha256_file(&p).unwrap();
        assert_ne!(first, second);
        assert_eq!(second, sha256_hex(b"xyz"));
        // A hash taken well after the file's last change is trusted while the stamp holds...
        let later = std::time::SystemTime::now() + std::time::Duration::from_secs(10);
        let stamp = memo::Stamp::of(&p).unwrap();
        memo::put(&p, stamp.clone(), later, "kept");
        if cfg!(unix) {
            assert_eq!(memo::get(&p, &stamp).as_deref(), Some("kept"));
            assert_eq!(sha256_file(&p).unwrap(), "kept");
        }
        // ...and not once the file changed.
        std::fs::write(&p, "xyzw").unwrap();
        assert_eq!(sha256_file(&p).unwrap(), sha256_hex(b"xyzw"));
    }

    #[test]
    fn sha256_of_known_content() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("abc");
        std::fs::write(&p, b"abc").unwrap();
        assert_eq!(
            sha256_file(&p).unwrap(),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }

    #[test]
    fn document_has_the_contract_fields() {
        let d = MetricsDoc::new("grasp");
        let v: Value = serde_json::from_str(&d.to_json()).unwrap();
        for k in [
            "suite",
            "scorekit_version",
            "inputs",
            "models",
            "metrics",
            "groups",
        ] {
            assert!(v.get(k).is_some(), "{k}");
        }
    }
}
