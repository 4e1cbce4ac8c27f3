//! The one timing loop of every cell, embedder or judge: load, the cold first batch, warm-up
//! batches, then timed repeats of a whole pass (tokenisation timed apart from each batch), and
//! what a cell reports from those timings.

use crate::doc::{BenchCell, Latency};
use crate::subject::{Rows, Subject};
use scorekit_core::error::Result;
use scorekit_core::process::{peak_rss_bytes, reset_peak_rss};
use scorekit_report::median;
use scorekit_runtime::batching::{plan_batches, BatchPlan};
use scorekit_runtime::kernels::peak::Peak;
use scorekit_runtime::models::bert::forward_flops as bert_flops;
use std::time::Instant;

/// How a cell is timed.
#[derive(Debug, Clone, Copy)]
pub struct Timing {
    /// Token budget of a batch, padding counted.
    pub batch_tokens: usize,
    /// Untimed batches before the repeats.
    pub warmup: usize,
    /// Timed passes.
    pub repeats: usize,
    /// Keep the last pass's outputs (`--save`).
    pub keep_rows: bool,
}

/// What timing one cell gave.
#[derive(Debug, Clone)]
pub struct Measured {
    /// The engine as it names itself.
    pub engine: String,
    /// The architecture, where the subject names one (a judge).
    pub arch: Option<String>,
    /// The truncation length in effect.
    pub max_length: usize,
    /// Token counts of the items.
    pub lengths: Vec<usize>,
    /// The batches of a pass.
    pub plan: Vec<BatchPlan>,
    /// Token budget of a batch.
    pub batch_tokens: usize,
    /// GFLOP of the real tokens' work per pass (each item unpadded).
    pub gflop_real: f64,
    /// GFLOP of the padded batches' work per pass.
    pub gflop_padded: f64,
    /// Seconds to load the model.
    pub load_s: f64,
    /// Load plus the cold first batch.
    pub first_batch_s: f64,
    /// Per pass: tokenising every item.
    pub tokenize_s: Vec<f64>,
    /// Per pass: the batches' sum.
    pub model_s: Vec<f64>,
    /// Per pass: the pass as a caller sees it (the model, plus tokenisation for an embedder).
    pub pass_s: Vec<f64>,
    /// Every batch of every pass.
    pub batch_s: Vec<f64>,
    /// Peak resident memory before the load (the process so far).
    pub rss_before_load_bytes: u64,
    /// Peak resident memory during the cell (reset before the load where Linux allows).
    pub peak_rss_bytes: u64,
    /// The last pass's outputs in item order, when kept.
    pub rows: Option<Rows>,
}

/// Time one cell: `load` is timed as the load, then the subject runs its passes.
pub fn measure<'a>(
    load: impl FnOnce() -> Result<Box<dyn Subject + 'a>>,
    timing: Timing,
) -> Result<Measured> {
    let bt = timing.batch_tokens;
    let rss_before_load_bytes = peak_rss_bytes().unwrap_or(0);
    reset_peak_rss();
    let t_load = Instant::now();
    let mut subject = load()?;
    let load_s = t_load.elapsed().as_secs_f64();
    let t_first = Instant::now();
    subject.first(bt)?;
    let first_batch_s = load_s + t_first.elapsed().as_secs_f64();

    let lengths = subject.lengths()?;
    let plan = plan_batches(&lengths, bt);
    subject.hold(&plan);
    for k in (0..plan.len())
        .cycle()
        .take(timing.warmup.min(plan.len() * 4))
    {
        subject.run(k, bt)?;
    }
    let (mut tokenize_s, mut model_s, mut pass_s, mut batch_s) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let mut rows = None;
    for repeat in 0..timing.repeats {
        let t = Instant::now();
        subject.tokenize()?;
        let tok = t.elapsed().as_secs_f64();
        let keep = timing.keep_rows && repeat + 1 == timing.repeats;
        let mut outs = Vec::new();
        let mut model = 0.0;
        for k in 0..plan.len() {
            let t = Instant::now();
            let out = subject.run(k, bt)?;
            let s = t.elapsed().as_secs_f64();
            batch_s.push(s);
            model += s;
            if keep {
                outs.push(out);
            }
        }
        tokenize_s.push(tok);
        model_s.push(model);
        pass_s.push(
            model
                + if subject.pass_adds_tokenize() {
                    tok
                } else {
                    0.0
                },
        );
        if keep {
            rows = Some(in_item_order(&plan, outs));
        }
    }
    let (gflop_real, gflop_padded) = gflop(subject.dims(), &lengths, &plan);
    Ok(Measured {
        engine: subject.engine().to_string(),
        arch: subject.arch().map(String::from),
        max_length: subject.max_length(),
        lengths,
        plan,
        batch_tokens: bt,
        gflop_real,
        gflop_padded,
        load_s,
        first_batch_s,
        tokenize_s,
        model_s,
        pass_s,
        batch_s,
        rss_before_load_bytes,
        peak_rss_bytes: peak_rss_bytes().unwrap_or(0),
        rows,
    })
}

/// The GFLOP of a pass: the real tokens' work (each item on its own tokens, what the unpadded
/// native engine runs) and the padded batches' (what a padded engine runs).
fn gflop(dims: (usize, usize, usize), lengths: &[usize], plan: &[BatchPlan]) -> (f64, f64) {
    let (layers, h, inter) = dims;
    let real: f64 = lengths
        .iter()
        .map(|&s| bert_flops(layers, h, inter, 1, s))
        .sum();
    let padded: f64 = plan
        .iter()
        .map(|b| bert_flops(layers, h, inter, b.indices.len(), b.padded_len))
        .sum();
    (real / 1e9, padded / 1e9)
}

/// A pass's batch outputs put back in item order.
fn in_item_order(plan: &[BatchPlan], outs: Vec<Rows>) -> Rows {
    let n: usize = plan.iter().map(|b| b.indices.len()).sum();
    let mut vectors = vec![Vec::new(); n];
    let mut scores = vec![0.0f32; n];
    let mut any_vectors = false;
    for (b, out) in plan.iter().zip(outs) {
        match out {
            Rows::Vectors(vs) => {
                any_vectors = true;
                for (&i, v) in b.indices.iter().zip(vs) {
                    vectors[i] = v;
                }
            }
            Rows::Scores(ss) => {
                for (&i, s) in b.indices.iter().zip(ss) {
                    scores[i] = s;
                }
            }
        }
    }
    if any_vectors {
        Rows::Vectors(vectors)
    } else {
        Rows::Scores(scores)
    }
}

impl Measured {
    /// Items per pass.
    pub fn items(&self) -> usize {
        self.lengths.len()
    }

    /// Real tokens per pass.
    pub fn real_tokens(&self) -> u64 {
        self.lengths.iter().map(|&l| l as u64).sum()
    }

    /// Padded tokens per pass (rows × longest row, per batch).
    pub fn padded_tokens(&self) -> u64 {
        self.plan
            .iter()
            .map(|b| (b.indices.len() * b.padded_len) as u64)
            .sum()
    }

    /// The median pass, seconds.
    pub fn median_s(&self) -> f64 {
        median(&mut self.pass_s.clone())
    }

    /// The cell of a grid: `engine` is the engine's bench.json name, `corpus` the sentence
    /// list's label, `dtype` the variant's label, `peak` the yardstick of its precision.
    pub fn cell(&self, corpus: &str, dtype: String, peak: Option<Peak>) -> BenchCell {
        let n = self.items() as f64;
        let (real, padded) = (self.real_tokens(), self.padded_tokens());
        let med = self.median_s();
        let fast = self.pass_s.iter().cloned().fold(f64::INFINITY, f64::min);
        let slow = self.pass_s.iter().cloned().fold(0.0f64, f64::max);
        let model_s = median(&mut self.model_s.clone());
        let real_gflops = self.gflop_real / model_s;
        let padded_gflops = self.gflop_padded / model_s;
        let peak = peak.map(|p| p.gflops);
        BenchCell {
            engine: engine_name(&self.engine),
            corpus: corpus.to_string(),
            batch_tokens: self.batch_tokens,
            max_length: self.max_length,
            dtype,
            sentences: self.items(),
            real_tokens: real,
            padded_tokens: padded,
            batches: self.plan.len(),
            repeats_s: self.pass_s.clone(),
            sentences_per_s: n / med,
            sentences_per_s_min: n / slow,
            sentences_per_s_max: n / fast,
            real_tokens_per_s: real as f64 / med,
            real_tokens_per_s_min: real as f64 / slow,
            real_tokens_per_s_max: real as f64 / fast,
            padded_tokens_per_s: padded as f64 / med,
            latency_ms: Latency::of_seconds(&self.batch_s),
            tokenize_s: median(&mut self.tokenize_s.clone()),
            model_s,
            load_s: self.load_s,
            first_batch_s: self.first_batch_s,
            peak_rss_bytes: self.peak_rss_bytes,
            gflop_real: Some(self.gflop_real),
            gflop_padded: Some(self.gflop_padded),
            peak_gflops: peak,
            real_token_utilisation: peak.map(|p| real_gflops / p),
            padded_equivalent_gflops: Some(padded_gflops),
            padded_equivalent_fraction: peak.map(|p| padded_gflops / p),
        }
    }
}

/// A cell's engine: the encoder's own name, prefixed with `scorekit` where it lacks it.
fn engine_name(encoder: &str) -> String {
    if encoder.starts_with("scorekit") {
        encoder.to_string()
    } else {
        format!("scorekit ({encoder})")
    }
}
