//! bench.json's schema: the sentence lists, the cells and the document of one grid (also written
//! by `scripts/bench/peers.py`), and the per-batch latency percentiles of a cell.

use serde::{Deserialize, Serialize};

/// One measured sentence list of a grid (the corpus, or the synthetic sentences of one length).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CorpusRef {
    /// `corpus` or `synthetic-N`: what cells name in their `corpus` field.
    pub label: String,
    /// Where the sentences came from (a file, or `synthetic`).
    pub source: String,
    /// File of the sentences in the output folder (`{"text"}` lines), when one was written.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
    /// Sentences.
    pub sentences: usize,
    /// sha256 of the sentences joined by "\n" with a final "\n" (see [`corpus_sha256`]).
    pub sha256: String,
}

/// The sha256 that identifies a sentence list across tools: the sentences, each followed by "\n".
pub fn corpus_sha256(sentences: &[String]) -> String {
    use sha2::{Digest, Sha256};
    let mut h = Sha256::new();
    for s in sentences {
        h.update(s.as_bytes());
        h.update(b"\n");
    }
    scorekit_report::hex(&h.finalize())
}

/// Per-batch latency percentiles (nearest rank), milliseconds.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, Default)]
pub struct Latency {
    /// Median.
    pub p50: f64,
    /// 90th percentile.
    pub p90: f64,
    /// 99th percentile.
    pub p99: f64,
    /// Batches measured (every batch of every timed repeat).
    pub n: usize,
}

/// The `p`-th percentile (0 < p <= 100) of `xs` by nearest rank: the smallest value with at
/// least p% of the values at or below it; `None` for no values.
pub fn percentile(xs: &[f64], p: f64) -> Option<f64> {
    if xs.is_empty() {
        return None;
    }
    let mut v: Vec<f64> = xs.to_vec();
    v.sort_by(|a, b| a.total_cmp(b));
    let rank = ((p / 100.0) * v.len() as f64).ceil() as usize;
    Some(v[rank.clamp(1, v.len()) - 1])
}

impl Latency {
    /// Percentiles of per-batch times in seconds.
    pub fn of_seconds(times_s: &[f64]) -> Latency {
        let ms: Vec<f64> = times_s.iter().map(|t| t * 1e3).collect();
        let p = |q| percentile(&ms, q).unwrap_or(f64::NAN);
        Latency {
            p50: p(50.0),
            p90: p(90.0),
            p99: p(99.0),
            n: ms.len(),
        }
    }
}

/// One cell of a grid: one engine at one (corpus, batch_tokens, max_length, dtype).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BenchCell {
    /// What ran it: `scorekit (native)`, `scorekit (candle)`, `sentence-transformers`,
    /// `onnxruntime`.
    pub engine: String,
    /// Label of the sentence list ([`CorpusRef::label`]).
    pub corpus: String,
    /// Token budget of a batch, padding counted.
    pub batch_tokens: usize,
    /// Truncation length in effect.
    pub max_length: usize,
    /// `f32`, `f16`, `bf16` or `int8` (int8 products on f32 weights).
    pub dtype: String,
    /// Sentences (pairs for a judge) per pass.
    pub sentences: usize,
    /// Tokens after truncation, no padding.
    pub real_tokens: u64,
    /// Tokens the batches hold with padding (rows × longest row).
    pub padded_tokens: u64,
    /// Batches per pass.
    pub batches: usize,
    /// Seconds of each timed pass (tokenisation and model).
    pub repeats_s: Vec<f64>,
    /// Sentences per second, median over the repeats.
    pub sentences_per_s: f64,
    /// Slowest repeat's sentences per second.
    pub sentences_per_s_min: f64,
    /// Fastest repeat's sentences per second.
    pub sentences_per_s_max: f64,
    /// Real tokens per second, median over the repeats.
    pub real_tokens_per_s: f64,
    /// Slowest repeat's real tokens per second.
    pub real_tokens_per_s_min: f64,
    /// Fastest repeat's real tokens per second.
    pub real_tokens_per_s_max: f64,
    /// Padded tokens per second, median over the repeats.
    pub padded_tokens_per_s: f64,
    /// Per-batch latency of the model (tokenisation apart), over every batch of every repeat.
    pub latency_ms: Latency,
    /// Seconds to tokenise the whole pass, median over the repeats.
    pub tokenize_s: f64,
    /// Seconds of the model over the whole pass (the batches' sum), median over the repeats.
    pub model_s: f64,
    /// Seconds to load the model for this cell.
    pub load_s: f64,
    /// Load plus the first batch (the first 32 sentences), cold.
    pub first_batch_s: f64,
    /// Peak resident memory during the cell (VmHWM reset before it where Linux allows).
    pub peak_rss_bytes: u64,
    /// GFLOP of the real tokens' work per pass (each sentence unpadded).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gflop_real: Option<f64>,
    /// GFLOP of the padded batches' work per pass.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gflop_padded: Option<f64>,
    /// Measured peak GFLOP/s of this precision on this device, where one is measured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub peak_gflops: Option<f64>,
    /// Real-token utilisation: real tokens' GFLOP per model second over the peak.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub real_token_utilisation: Option<f64>,
    /// Padded-equivalent rate: padded GFLOP per model second.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub padded_equivalent_gflops: Option<f64>,
    /// The padded-equivalent rate over the peak (can pass 1 for an unpadded engine).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub padded_equivalent_fraction: Option<f64>,
}

impl BenchCell {
    /// The axes a cell is joined by: corpus, batch tokens, max length.
    pub fn key(&self) -> (&str, usize, usize) {
        (&self.corpus, self.batch_tokens, self.max_length)
    }
}

/// bench.json: a grid of one model on one device.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BenchDoc {
    /// What wrote the file: `scorekit X.Y.Z` or `peers.py`.
    pub tool: String,
    /// The model as named on the command line.
    pub model: String,
    /// sha256 of the model's weight file: the model's identity for `--compare`.
    pub model_sha256: String,
    /// `cpu`, `cuda:N`, `metal:N`.
    pub device: String,
    /// The CPU's model name, on the CPU.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu: Option<String>,
    /// The GPU's name (or device), on a GPU.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpu: Option<String>,
    /// Threads of the CPU pool.
    pub threads: usize,
    /// `sentences` (an embedder) or `pairs` (a judge): what `sentences` counts in the cells.
    pub unit: String,
    /// Timed repeats per cell.
    pub repeats: usize,
    /// Untimed warm-up batches per cell.
    pub warmup: usize,
    /// The sentence lists measured.
    pub corpora: Vec<CorpusRef>,
    /// The cells, in grid order.
    pub cells: Vec<BenchCell>,
}
#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_rank_percentiles() {
        let xs: Vec<f64> = (1..=100).map(f64::from).collect();
        assert_eq!(percentile(&xs, 50.0), Some(50.0));
        assert_eq!(percentile(&xs, 90.0), Some(90.0));
        assert_eq!(percentile(&xs, 99.0), Some(99.0));
        assert_eq!(percentile(&[3.0, 1.0, 2.0], 50.0), Some(2.0));
        assert_eq!(percentile(&[7.0], 99.0), Some(7.0));
        assert_eq!(percentile(&[], 50.0), None);
        let l = Latency::of_seconds(&[0.004, 0.001, 0.002, 0.010]);
        assert_eq!((l.p50, l.p90, l.p99, l.n), (2.0, 10.0, 10.0, 4));
    }

    #[test]
    fn corpus_sha_is_of_lines() {
        // `printf 'a\nb\n' | sha256sum`
        let want = "911169ddaaf146aff539f58c26c489af3b892dff0fe283c1c264c65ae5aa59a2";
        assert_eq!(corpus_sha256(&["a".into(), "b".into()]), want);
        assert_ne!(corpus_sha256(&["a".into(), "c".into()]), want);
    }
}
