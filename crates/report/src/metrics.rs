//! metrics.json: the machine-readable result of a scoring command, per the output contract.

use serde::Serialize;
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};
use std::io::Read;
use std::path::Path;

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

/// The whole metrics.json document.
#[derive(Debug, Clone, Serialize, serde::Deserialize)]
pub struct MetricsDoc {
    /// Suite name (`grasp`, `mint`, `muse`, `story`).
    pub suite: String,
    /// Version of scorekit that wrote the file.
    pub scorekit_version: String,
    /// Every input file with its hash.
    pub inputs: Vec<InputFile>,
    /// Every model used, with its revision.
    pub models: Vec<ModelRef>,
    /// Datasets named instead of files (absent when every input was a path).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub datasets: Vec<DatasetRef>,
    /// Settings that change the numbers (test type, bootstrap resamples, seed, flags).
    pub settings: Map<String, Value>,
    /// Headline metrics.
    pub metrics: Map<String, Value>,
    /// Per-group metrics.
    pub groups: Map<String, Value>,
}

impl MetricsDoc {
    /// An empty document for a suite, stamped with this version of scorekit.
    pub fn new(suite: &str) -> Self {
        MetricsDoc {
            suite: suite.to_string(),
            scorekit_version: env!("CARGO_PKG_VERSION").to_string(),
            inputs: Vec::new(),
            models: Vec::new(),
            datasets: Vec::new(),
            settings: Map::new(),
            metrics: Map::new(),
            groups: Map::new(),
        }
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

    /// Record `--shard I/N` in the settings (nothing for the whole input).
    pub fn set_shard(&mut self, shard: scorekit_core::shard::Shard) {
        if shard.count > 1 {
            self.settings
                .insert("shard".into(), Value::String(shard.to_string()));
        }
    }

    /// A numeric setting (bootstrap resamples, seed), as the command recorded it.
    pub fn setting_u64(&self, key: &str) -> scorekit_core::error::Result<u64> {
        self.settings
            .get(key)
            .and_then(Value::as_u64)
            .ok_or_else(|| {
                scorekit_core::error::Error::Internal(anyhow::anyhow!(
                    "metrics.json settings lack the integer {key:?}"
                ))
            })
    }

    /// Pretty JSON with a trailing newline.
    pub fn to_json(&self) -> String {
        let mut s = serde_json::to_string_pretty(self).expect("metrics serialise");
        s.push('\n');
        s
    }
}

/// sha256 of a file, streamed.
pub fn sha256_file(path: &Path) -> std::io::Result<String> {
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
    Ok(hex(&hasher.finalize()))
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
