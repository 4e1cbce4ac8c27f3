//! Pinned model manifests (`models/*.toml`), compiled into the binary so that a bare
//! `scorekit` knows `labse` and the default judge without the source tree.

use scorekit_core::error::{Error, Result};
use serde::Deserialize;

/// The manifests shipped with scorekit: (file name, TOML text).
const SHIPPED: &[(&str, &str)] = &[
    ("labse.toml", include_str!("../../../models/labse.toml")),
    (
        "roberta-large-race.toml",
        include_str!("../../../models/roberta-large-race.toml"),
    ),
    (
        "flan-t5-small.toml",
        include_str!("../../../models/flan-t5-small.toml"),
    ),
    (
        "flan-t5-base.toml",
        include_str!("../../../models/flan-t5-base.toml"),
    ),
    (
        "flan-t5-large.toml",
        include_str!("../../../models/flan-t5-large.toml"),
    ),
    (
        "flan-t5-xl.toml",
        include_str!("../../../models/flan-t5-xl.toml"),
    ),
    (
        "flan-t5-xxl.toml",
        include_str!("../../../models/flan-t5-xxl.toml"),
    ),
    (
        "qwen2.5-0.5b-instruct.toml",
        include_str!("../../../models/qwen2.5-0.5b-instruct.toml"),
    ),
    (
        "qwen2.5-7b-instruct.toml",
        include_str!("../../../models/qwen2.5-7b-instruct.toml"),
    ),
    (
        "llama-3.1-8b-instruct.toml",
        include_str!("../../../models/llama-3.1-8b-instruct.toml"),
    ),
    (
        "gemma-2-9b-it.toml",
        include_str!("../../../models/gemma-2-9b-it.toml"),
    ),
];

/// One pinned model: where it lives on the Hub and what its files must be.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Manifest {
    /// Short name used on the command line (`labse`).
    pub name: String,
    /// Hub repo id (`sentence-transformers/LaBSE`).
    pub repo: String,
    /// Commit hash the files were pinned at; `None` when no public source gave one (then `main`).
    pub revision: Option<String>,
    /// What the model is for (`embedder`, `judge`).
    pub kind: String,
    /// A judge's kind as metrics.json names it (`multiple-choice`, `letter`, `decoder-letter`).
    #[serde(default)]
    pub judge_kind: Option<String>,
    /// The Hub asks for an accepted licence and a token (`HF_TOKEN`) before serving the files.
    #[serde(default)]
    pub gated: bool,
    /// Pooling of a sentence embedder (`cls`, `mean`), for the record; modules.json decides.
    #[serde(default)]
    pub pooling: Option<String>,
    /// Token limit the model was trained with.
    #[serde(default)]
    pub max_seq_length: Option<usize>,
    /// Licence of the weights.
    #[serde(default)]
    pub license: Option<String>,
    /// The files to fetch, with their sha256 where known.
    #[serde(default)]
    pub files: Vec<ManifestFile>,
}

/// A file of a pinned model.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ManifestFile {
    /// Path inside the repo (`2_Dense/model.safetensors`).
    pub name: String,
    /// Lowercase hex sha256, when a public source gave it.
    #[serde(default)]
    pub sha256: Option<String>,
    /// Size in bytes, when known.
    #[serde(default)]
    pub size: Option<u64>,
}

impl Manifest {
    /// The revision to ask the Hub for: the pinned commit, else `main`.
    pub fn revision_or_main(&self) -> &str {
        self.revision.as_deref().unwrap_or("main")
    }

    /// What the model is, for tables: `embedder`, `judge (decoder-letter)`, with `, gated`
    /// where the Hub needs a token.
    pub fn kind_label(&self) -> String {
        let mut label = match &self.judge_kind {
            Some(j) => format!("{} ({j})", self.kind),
            None => self.kind.clone(),
        };
        if self.gated {
            label.push_str(", gated: HF_TOKEN");
        }
        label
    }

    /// The manifest entry for a file, if listed.
    pub fn file(&self, name: &str) -> Option<&ManifestFile> {
        self.files.iter().find(|f| f.name == name)
    }
}

/// Every shipped manifest, parsed. A malformed shipped manifest is a bug of scorekit.
pub fn all() -> Result<Vec<Manifest>> {
    SHIPPED
        .iter()
        .map(|(file, text)| {
            toml::from_str::<Manifest>(text).map_err(|e| {
                Error::Internal(anyhow::anyhow!(
                    "models/{file} is not a valid manifest: {e}"
                ))
            })
        })
        .collect()
}

/// The shipped manifest with this name (case-insensitive), if any.
pub fn find(name: &str) -> Result<Option<Manifest>> {
    Ok(all()?
        .into_iter()
        .find(|m| m.name.eq_ignore_ascii_case(name)))
}

/// Names of the shipped manifests, for messages.
pub fn names() -> Vec<String> {
    all()
        .map(|v| v.into_iter().map(|m| m.name).collect())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shipped_manifests_parse_and_pin_real_hashes() {
        let all = all().unwrap();
        let labse = all.iter().find(|m| m.name == "labse").unwrap();
        assert_eq!(labse.repo, "sentence-transformers/LaBSE");
        assert_eq!(labse.max_seq_length, Some(256));
        for m in &all {
            if let Some(r) = &m.revision {
                assert!(
                    r.len() == 40 && r.bytes().all(|b| b.is_ascii_hexdigit()),
                    "{r}"
                );
            }
            for f in &m.files {
                if let Some(s) = &f.sha256 {
                    assert!(
                        s.len() == 64 && s.bytes().all(|b| b.is_ascii_hexdigit()),
                        "{s}"
                    );
                }
            }
        }
        assert!(find("LABSE").unwrap().is_some());
        assert!(find("nope").unwrap().is_none());
        // Every judge names its kind; the decoder judges are pinned, sharded behind an index
        // where the Hub shards them, and the gated ones say so.
        for m in all.iter().filter(|m| m.kind == "judge") {
            assert!(m.judge_kind.is_some(), "{}", m.name);
        }
        for (name, gated) in [
            ("qwen2.5-7b-instruct", false),
            ("llama-3.1-8b-instruct", true),
            ("gemma-2-9b-it", true),
        ] {
            let m = find(name).unwrap().unwrap();
            assert_eq!(m.judge_kind.as_deref(), Some("decoder-letter"));
            assert!(m.revision.is_some() && m.file("model.safetensors.index.json").is_some());
            assert_eq!(m.gated, gated, "{name}");
            assert_eq!(m.kind_label().contains("HF_TOKEN"), gated);
        }
    }
}
