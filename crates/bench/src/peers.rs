//! `--compare`: a peers file (`scripts/bench/peers.py`'s output, or another bench.json) read and
//! checked against the grid before anything is timed, then its cells joined to the grid's by
//! their axes.

use crate::doc::{BenchCell, BenchDoc, CorpusRef};
use scorekit_core::error::{Error, InputError, Result};
use std::path::Path;

/// Why a `--compare` file cannot be joined with a grid.
#[derive(Debug, Clone, PartialEq)]
pub struct Mismatch(pub String);

impl std::fmt::Display for Mismatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// One peer row joined to the scorekit cell of the same axes.
#[derive(Debug, Clone, PartialEq)]
pub struct Joined {
    /// The peer's cell.
    pub peer: BenchCell,
    /// Index into the grid's cells of the scorekit cell it is compared with: same axes and
    /// dtype, else same axes and f32.
    pub ours: usize,
}

/// Join the cells of `peers` to `grid` by (corpus, batch_tokens, max_length), refusing a file of
/// another model (weights sha256) or another corpus (a label whose sentences differ), and a file
/// none of whose cells shares axes with the grid.
pub fn join_peers(grid: &BenchDoc, peers: &BenchDoc) -> Result<Vec<Joined>, Mismatch> {
    if peers.model_sha256 != grid.model_sha256 {
        return Err(Mismatch(format!(
            "it measured another model: weights sha256 {} ({}), this grid's is {} ({})",
            peers.model_sha256, peers.model, grid.model_sha256, grid.model
        )));
    }
    if peers.unit != grid.unit {
        return Err(Mismatch(format!(
            "it counts {} and this grid counts {}",
            peers.unit, grid.unit
        )));
    }
    for c in &peers.corpora {
        if let Some(ours) = grid.corpora.iter().find(|o| o.label == c.label) {
            if ours.sha256 != c.sha256 {
                return Err(Mismatch(format!(
                    "it measured another corpus: {} has sha256 {} ({} sentences from {}), this grid's is {} ({} sentences from {})",
                    c.label, c.sha256, c.sentences, c.source, ours.sha256, ours.sentences, ours.source
                )));
            }
        }
    }
    let mut out = Vec::new();
    for p in &peers.cells {
        if !peers.corpora.iter().any(|c| c.label == p.corpus) {
            return Err(Mismatch(format!(
                "a cell names corpus {:?}, which the file's corpora do not list",
                p.corpus
            )));
        }
        let same_axes = |c: &&BenchCell| c.key() == p.key();
        let pick = grid
            .cells
            .iter()
            .position(|c| same_axes(&c) && c.dtype == p.dtype)
            .or_else(|| {
                grid.cells
                    .iter()
                    .position(|c| same_axes(&c) && c.dtype == "f32")
            });
        if let Some(ours) = pick {
            out.push(Joined {
                peer: p.clone(),
                ours,
            });
        }
    }
    if out.is_empty() && !peers.cells.is_empty() {
        return Err(Mismatch(
            "none of its cells has the axes (corpus, batch tokens, max length) of a cell of this grid"
                .into(),
        ));
    }
    Ok(out)
}
/// A `--compare` file that cannot be joined, as the error that names it.
pub fn refuse(path: &Path, why: impl std::fmt::Display) -> Error {
    InputError::file(path, format!("--compare: cannot join this file: {why}")).into()
}

/// Read a `--compare` file and check, before anything is timed, that it measured this model
/// (weights sha256) and at least one of the grid's sentence lists, with the same sentences.
pub fn read_peers(path: &Path, model_sha256: &str, corpora: &[CorpusRef]) -> Result<BenchDoc> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| InputError::file(path, format!("cannot read: {e}")))?;
    let doc: BenchDoc = serde_json::from_str(&text).map_err(|e| {
        InputError::file(
            path,
            format!("not a bench.json / peers.py file (model, model_sha256, corpora, cells): {e}"),
        )
    })?;
    if doc.model_sha256 != model_sha256 {
        return Err(refuse(
            path,
            format!(
                "it measured another model (weights sha256 {}, {}; this one is {})",
                doc.model_sha256, doc.model, model_sha256
            ),
        ));
    }
    let labels = |cs: &mut dyn Iterator<Item = &CorpusRef>| {
        cs.map(|c| c.label.as_str()).collect::<Vec<_>>().join(", ")
    };
    let mut shared = 0;
    for c in &doc.corpora {
        let Some(ours) = corpora.iter().find(|o| o.label == c.label) else {
            continue;
        };
        shared += 1;
        if ours.sha256 != c.sha256 {
            return Err(refuse(
                path,
                format!(
                    "it measured another corpus: its {} ({} sentences from {}) has sha256 {}, this grid's ({} sentences from {}) {}",
                    c.label, c.sentences, c.source, c.sha256, ours.sentences, ours.source, ours.sha256
                ),
            ));
        }
    }
    if shared == 0 {
        return Err(refuse(
            path,
            format!(
                "it measured none of this grid's sentence lists (it has {}; this grid has {})",
                labels(&mut doc.corpora.iter()),
                labels(&mut corpora.iter())
            ),
        ));
    }
    Ok(doc)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::doc::Latency;
    use crate::table::{csv, report_md};

    fn cell(engine: &str, bt: usize, dtype: &str, rate: f64) -> BenchCell {
        BenchCell {
            engine: engine.into(),
            corpus: "corpus".into(),
            batch_tokens: bt,
            max_length: 128,
            dtype: dtype.into(),
            sentences: 10,
            real_tokens: 100,
            padded_tokens: 120,
            batches: 2,
            repeats_s: vec![1.0],
            sentences_per_s: rate,
            sentences_per_s_min: rate,
            sentences_per_s_max: rate,
            real_tokens_per_s: 10.0 * rate,
            real_tokens_per_s_min: 10.0 * rate,
            real_tokens_per_s_max: 10.0 * rate,
            padded_tokens_per_s: 12.0 * rate,
            latency_ms: Latency {
                p50: 1.0,
                p90: 2.0,
                p99: 3.0,
                n: 2,
            },
            tokenize_s: 0.1,
            model_s: 0.9,
            load_s: 0.5,
            first_batch_s: 0.6,
            peak_rss_bytes: 1 << 20,
            gflop_real: None,
            gflop_padded: None,
            peak_gflops: None,
            real_token_utilisation: None,
            padded_equivalent_gflops: None,
            padded_equivalent_fraction: None,
        }
    }

    fn doc(tool: &str, cells: Vec<BenchCell>) -> BenchDoc {
        BenchDoc {
            tool: tool.into(),
            model: "m".into(),
            model_sha256: "aa".into(),
            device: "cpu".into(),
            cpu: None,
            gpu: None,
            threads: 2,
            unit: "sentences".into(),
            repeats: 1,
            warmup: 0,
            corpora: vec![CorpusRef {
                label: "corpus".into(),
                source: "x".into(),
                file: None,
                sentences: 10,
                sha256: "cc".into(),
            }],
            cells,
        }
    }

    #[test]
    fn peers_join_by_axes_same_dtype_else_f32() {
        let grid = doc(
            "scorekit",
            vec![
                cell("scorekit", 1024, "f32", 40.0),
                cell("scorekit", 1024, "int8", 80.0),
                cell("scorekit", 8192, "f32", 50.0),
            ],
        );
        let peers = doc(
            "peers.py",
            vec![
                cell("onnxruntime", 8192, "f32", 25.0),
                cell("sentence-transformers", 1024, "bf16", 20.0),
                cell("sentence-transformers", 4096, "f32", 20.0),
            ],
        );
        let j = join_peers(&grid, &peers).unwrap();
        let got: Vec<(&str, usize)> = j.iter().map(|j| (j.peer.engine.as_str(), j.ours)).collect();
        assert_eq!(got, vec![("onnxruntime", 2), ("sentence-transformers", 0)]);
        let md = report_md(&grid, &j);
        assert!(md.contains("| 2.00 "), "{md}");
        let all: Vec<&BenchCell> = grid.cells.iter().chain(j.iter().map(|j| &j.peer)).collect();
        assert_eq!(csv(&all).unwrap().lines().count(), 6);
    }

    #[test]
    fn peers_of_another_model_corpus_or_axes_are_refused() {
        let grid = doc("scorekit", vec![cell("scorekit", 1024, "f32", 40.0)]);
        let mut other = doc("peers.py", vec![cell("onnxruntime", 1024, "f32", 20.0)]);
        other.model_sha256 = "bb".into();
        assert!(join_peers(&grid, &other)
            .unwrap_err()
            .0
            .contains("another model"));
        let mut other = doc("peers.py", vec![cell("onnxruntime", 1024, "f32", 20.0)]);
        other.corpora[0].sha256 = "dd".into();
        assert!(join_peers(&grid, &other)
            .unwrap_err()
            .0
            .contains("another corpus"));
        let other = doc("peers.py", vec![cell("onnxruntime", 2048, "f32", 20.0)]);
        assert!(join_peers(&grid, &other)
            .unwrap_err()
            .0
            .contains("none of its cells"));
    }
}
