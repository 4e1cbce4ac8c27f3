//! `scorekit bench` grids: the cell schema of bench.json (also written by
//! `scripts/bench/peers.py`), latency percentiles, and the files of `--out`: bench.csv, report.md
//! (the grid as tables, peers joined by their axes with ratio columns) and the SVG charts.

use crate::svg::{esc, COLOURS};
use crate::Table;
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
    crate::hex(&h.finalize())
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

/// The CSV columns of a cell, in order (bench.csv).
pub const CSV_COLUMNS: &[&str] = &[
    "engine",
    "corpus",
    "batch_tokens",
    "max_length",
    "dtype",
    "sentences",
    "real_tokens",
    "padded_tokens",
    "batches",
    "repeats",
    "sentences_per_s",
    "sentences_per_s_min",
    "sentences_per_s_max",
    "real_tokens_per_s",
    "real_tokens_per_s_min",
    "real_tokens_per_s_max",
    "padded_tokens_per_s",
    "latency_p50_ms",
    "latency_p90_ms",
    "latency_p99_ms",
    "tokenize_s",
    "model_s",
    "load_s",
    "first_batch_s",
    "peak_rss_bytes",
    "gflop_real",
    "gflop_padded",
    "peak_gflops",
    "real_token_utilisation",
    "padded_equivalent_gflops",
    "padded_equivalent_fraction",
];

fn opt(v: Option<f64>) -> String {
    v.map(|x| x.to_string()).unwrap_or_default()
}

/// bench.csv: one line per cell (the grid's, then the peers'), [`CSV_COLUMNS`].
pub fn csv(cells: &[&BenchCell]) -> anyhow::Result<String> {
    let mut w = csv::Writer::from_writer(Vec::new());
    w.write_record(CSV_COLUMNS)?;
    for c in cells {
        w.write_record([
            c.engine.clone(),
            c.corpus.clone(),
            c.batch_tokens.to_string(),
            c.max_length.to_string(),
            c.dtype.clone(),
            c.sentences.to_string(),
            c.real_tokens.to_string(),
            c.padded_tokens.to_string(),
            c.batches.to_string(),
            c.repeats_s.len().to_string(),
            c.sentences_per_s.to_string(),
            c.sentences_per_s_min.to_string(),
            c.sentences_per_s_max.to_string(),
            c.real_tokens_per_s.to_string(),
            c.real_tokens_per_s_min.to_string(),
            c.real_tokens_per_s_max.to_string(),
            c.padded_tokens_per_s.to_string(),
            c.latency_ms.p50.to_string(),
            c.latency_ms.p90.to_string(),
            c.latency_ms.p99.to_string(),
            c.tokenize_s.to_string(),
            c.model_s.to_string(),
            c.load_s.to_string(),
            c.first_batch_s.to_string(),
            c.peak_rss_bytes.to_string(),
            opt(c.gflop_real),
            opt(c.gflop_padded),
            opt(c.peak_gflops),
            opt(c.real_token_utilisation),
            opt(c.padded_equivalent_gflops),
            opt(c.padded_equivalent_fraction),
        ])?;
    }
    Ok(String::from_utf8(w.into_inner()?)?)
}

fn pct(v: Option<f64>) -> String {
    v.map(|x| format!("{:.0}%", 100.0 * x))
        .unwrap_or_else(|| "-".into())
}

/// report.md: the grid as a throughput table and a latency and resources table, then the peers
/// joined by axes with ratio columns (scorekit ÷ peer: above 1 means scorekit is faster).
pub fn report_md(grid: &BenchDoc, peers: &[Joined]) -> String {
    let u = &grid.unit;
    let mut s = format!(
        "# scorekit bench: {}\n\n{} on {}{} with {} threads; {} timed repeats and {} warm-up batches per cell.\n\n",
        grid.model,
        grid.tool,
        grid.device,
        grid.cpu
            .as_deref()
            .or(grid.gpu.as_deref())
            .map(|n| format!(" ({n})"))
            .unwrap_or_default(),
        grid.threads,
        grid.repeats,
        grid.warmup
    );
    for c in &grid.corpora {
        s.push_str(&format!(
            "- `{}`: {} {u} from {} (sha256 {})\n",
            c.label,
            c.sentences,
            c.source,
            &c.sha256[..c.sha256.len().min(12)]
        ));
    }
    s.push_str("\n## Throughput\n\n");
    let mut t = Table::new(&[
        "engine",
        "corpus",
        "batch tokens",
        "max length",
        "dtype",
        &format!("{u}/s (median [min, max])"),
        "real tokens/s",
        "padded tokens/s",
        "real-token utilisation",
        "padded-equivalent GFLOP/s",
    ]);
    for c in &grid.cells {
        t.row(&[
            c.engine.clone(),
            c.corpus.clone(),
            c.batch_tokens.to_string(),
            c.max_length.to_string(),
            c.dtype.clone(),
            format!(
                "{:.1} [{:.1}, {:.1}]",
                c.sentences_per_s, c.sentences_per_s_min, c.sentences_per_s_max
            ),
            format!("{:.0}", c.real_tokens_per_s),
            format!("{:.0}", c.padded_tokens_per_s),
            pct(c.real_token_utilisation),
            c.padded_equivalent_gflops
                .map(|g| format!("{g:.1}"))
                .unwrap_or_else(|| "-".into()),
        ]);
    }
    s.push_str(&t.render());
    s.push_str("\n## Latency and resources\n\n");
    let mut t = Table::new(&[
        "engine",
        "corpus",
        "batch tokens",
        "max length",
        "dtype",
        "batches",
        "p50 ms",
        "p90 ms",
        "p99 ms",
        "tokenise s",
        "model s",
        "first batch s",
        "peak RSS MiB",
    ]);
    for c in &grid.cells {
        t.row(&[
            c.engine.clone(),
            c.corpus.clone(),
            c.batch_tokens.to_string(),
            c.max_length.to_string(),
            c.dtype.clone(),
            c.batches.to_string(),
            format!("{:.1}", c.latency_ms.p50),
            format!("{:.1}", c.latency_ms.p90),
            format!("{:.1}", c.latency_ms.p99),
            format!("{:.3}", c.tokenize_s),
            format!("{:.3}", c.model_s),
            format!("{:.3}", c.first_batch_s),
            format!("{:.0}", c.peak_rss_bytes as f64 / (1024.0 * 1024.0)),
        ]);
    }
    s.push_str(&t.render());
    if !peers.is_empty() {
        s.push_str("\n## Peers\n\nEach peer row beside the scorekit cell of the same corpus, batch tokens and max length (same dtype, else f32); ratios are scorekit ÷ peer for rates and peer ÷ scorekit for latency, so above 1 means scorekit is faster.\n\n");
        let mut t = Table::new(&[
            "engine",
            "corpus",
            "batch tokens",
            "max length",
            "dtype",
            &format!("{u}/s"),
            "real tokens/s",
            "p50 ms",
            "p99 ms",
            "vs scorekit",
            &format!("{u}/s ratio"),
            "p50 ratio",
        ]);
        for j in peers {
            let (p, o) = (&j.peer, &grid.cells[j.ours]);
            t.row(&[
                p.engine.clone(),
                p.corpus.clone(),
                p.batch_tokens.to_string(),
                p.max_length.to_string(),
                p.dtype.clone(),
                format!("{:.1}", p.sentences_per_s),
                format!("{:.0}", p.real_tokens_per_s),
                format!("{:.1}", p.latency_ms.p50),
                format!("{:.1}", p.latency_ms.p99),
                format!("{} {}", o.engine, o.dtype),
                format!("{:.2}", o.sentences_per_s / p.sentences_per_s),
                format!("{:.2}", p.latency_ms.p50 / o.latency_ms.p50),
            ]);
        }
        s.push_str(&t.render());
    }
    s.push_str("\nReal-token utilisation: the FLOPs of the real tokens (each sentence unpadded) per second of model time, over the measured peak of the precision used (f32 FMA on the CPU; none is measured for other precisions or on a GPU: `-`). Padded-equivalent rate: the FLOPs of the padded batches per second of model time, the figure a padded engine would need to match; for an unpadded engine it can pass the peak.\n");
    s
}

/// A series of a chart: a name and its points.
type Series = (String, Vec<(f64, f64)>);

/// throughput.svg: real tokens/s against batch tokens (log scale), one line per (engine, dtype,
/// corpus, max length) series; every cell is a dot with a `<title>` naming it.
pub fn throughput_svg(cells: &[&BenchCell], unit: &str) -> String {
    let mut series: Vec<Series> = Vec::new();
    for c in cells {
        let name = format!("{} {} {} len {}", c.engine, c.dtype, c.corpus, c.max_length);
        let pt = (c.batch_tokens as f64, c.real_tokens_per_s);
        match series.iter_mut().find(|(n, _)| *n == name) {
            Some((_, pts)) => pts.push(pt),
            None => series.push((name, vec![pt])),
        }
    }
    for (_, pts) in &mut series {
        pts.sort_by(|a, b| a.0.total_cmp(&b.0));
    }
    let xs: Vec<f64> = cells.iter().map(|c| c.batch_tokens as f64).collect();
    let ymax = nice_ceiling(
        cells
            .iter()
            .map(|c| c.real_tokens_per_s)
            .fold(0.0f64, f64::max)
            .max(1.0)
            * 1.05,
    );
    let xmin = xs.iter().cloned().fold(f64::INFINITY, f64::min).max(1.0);
    let xmax = xs.iter().cloned().fold(0.0f64, f64::max).max(xmin * 2.0);
    let (left, right, top, bottom) = (80.0, 30.0, 40.0, 60.0 + 16.0 * series.len() as f64);
    let (w, ph) = (640.0, 320.0);
    let h = top + ph + bottom;
    let pw = w - left - right;
    let lx = |v: f64| {
        let (a, b) = (xmin.ln(), xmax.ln());
        left + if b > a { (v.ln() - a) / (b - a) } else { 0.5 } * pw
    };
    let ly = |v: f64| top + ph - (v / ymax) * ph;
    let mut s = svg_head(
        w,
        h,
        &format!("Real tokens/s against batch size (tokens), per precision; {unit} in titles"),
    );
    for k in 0..=5 {
        let v = ymax * k as f64 / 5.0;
        s.push_str(&format!(
            "<line x1=\"{left}\" x2=\"{:.1}\" y1=\"{y:.1}\" y2=\"{y:.1}\" stroke=\"#eee\"/><text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\">{}</text>\n",
            left + pw,
            left - 6.0,
            ly(v) + 4.0,
            tick(v),
            y = ly(v)
        ));
    }
    let mut ticks: Vec<f64> = xs.clone();
    ticks.sort_by(f64::total_cmp);
    ticks.dedup();
    for x in &ticks {
        s.push_str(&format!(
            "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{x}</text>\n",
            lx(*x),
            top + ph + 16.0
        ));
    }
    s.push_str(&format!(
        "<line x1=\"{left}\" x2=\"{:.1}\" y1=\"{:.1}\" y2=\"{:.1}\" stroke=\"#333\"/><text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\">batch tokens (log scale)</text>\n",
        left + pw,
        top + ph,
        top + ph,
        left + pw / 2.0,
        top + ph + 34.0
    ));
    for (k, (name, pts)) in series.iter().enumerate() {
        let c = COLOURS[k % COLOURS.len()];
        let path: Vec<String> = pts
            .iter()
            .map(|(x, y)| format!("{:.1},{:.1}", lx(*x), ly(*y)))
            .collect();
        s.push_str(&format!(
            "<polyline fill=\"none\" stroke=\"{c}\" stroke-width=\"2\" points=\"{}\"/>\n",
            path.join(" ")
        ));
        for (x, y) in pts {
            s.push_str(&format!(
                "<circle class=\"cell\" cx=\"{:.1}\" cy=\"{:.1}\" r=\"4\" fill=\"{c}\"><title>{}: batch tokens {x}, {y:.0} real tokens/s</title></circle>\n",
                lx(*x),
                ly(*y),
                esc(name)
            ));
        }
        let yy = top + ph + 56.0 + 16.0 * k as f64;
        s.push_str(&format!(
            "<circle cx=\"{left}\" cy=\"{:.1}\" r=\"4\" fill=\"{c}\"/><text x=\"{:.1}\" y=\"{yy:.1}\">{}</text>\n",
            yy - 4.0,
            left + 10.0,
            esc(name)
        ));
    }
    s.push_str("</svg>\n");
    s
}

/// latency.svg: per-batch p50, p90 and p99 per cell, one horizontal group of three bars per
/// cell; every cell is a `<g class="cell">` with a `<title>` naming it.
pub fn latency_svg(cells: &[&BenchCell]) -> String {
    let names: Vec<String> = cells
        .iter()
        .map(|c| {
            format!(
                "{} {} {} bt {} len {}",
                c.engine, c.dtype, c.corpus, c.batch_tokens, c.max_length
            )
        })
        .collect();
    let longest = names.iter().map(|n| n.chars().count()).max().unwrap_or(0);
    let left = (6.5 * longest as f64 + 20.0).max(120.0);
    let (right, top, bottom, band) = (60.0, 40.0, 60.0, 34.0);
    let pw = 420.0;
    let w = left + pw + right;
    let h = top + bottom + band * cells.len().max(1) as f64;
    let xmax = nice_ceiling(
        cells
            .iter()
            .map(|c| c.latency_ms.p99)
            .filter(|v| v.is_finite())
            .fold(0.0f64, f64::max)
            .max(1e-3)
            * 1.05,
    );
    let x = |v: f64| left + (v.max(0.0) / xmax) * pw;
    let mut s = svg_head(w, h, "Per-batch latency (ms): p50, p90, p99 per cell");
    let bottom_y = top + band * cells.len() as f64;
    for k in 0..=5 {
        let v = xmax * k as f64 / 5.0;
        s.push_str(&format!(
            "<line x1=\"{xx:.1}\" x2=\"{xx:.1}\" y1=\"{top}\" y2=\"{bottom_y:.1}\" stroke=\"#eee\"/><text x=\"{xx:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{}</text>\n",
            bottom_y + 16.0,
            tick(v),
            xx = x(v)
        ));
    }
    let labels = ["p50", "p90", "p99"];
    for (i, (c, name)) in cells.iter().zip(&names).enumerate() {
        let y0 = top + band * i as f64;
        s.push_str(&format!(
            "<g class=\"cell\"><title>{}: p50 {:.2} ms, p90 {:.2} ms, p99 {:.2} ms over {} batches</title>\n<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\">{}</text>\n",
            esc(name),
            c.latency_ms.p50,
            c.latency_ms.p90,
            c.latency_ms.p99,
            c.latency_ms.n,
            left - 8.0,
            y0 + band / 2.0 + 4.0,
            esc(name)
        ));
        for (k, v) in [c.latency_ms.p50, c.latency_ms.p90, c.latency_ms.p99]
            .iter()
            .enumerate()
        {
            s.push_str(&format!(
                "<rect x=\"{left}\" y=\"{:.1}\" width=\"{:.1}\" height=\"8\" fill=\"{}\"/>\n",
                y0 + 4.0 + 9.0 * k as f64,
                x(*v) - left,
                COLOURS[k]
            ));
        }
        s.push_str("</g>\n");
    }
    let ly = h - 14.0;
    for (k, l) in labels.iter().enumerate() {
        let lx = left + 60.0 * k as f64;
        s.push_str(&format!(
            "<rect x=\"{lx:.1}\" y=\"{:.1}\" width=\"10\" height=\"8\" fill=\"{}\"/><text x=\"{:.1}\" y=\"{ly:.1}\">{l}</text>\n",
            ly - 8.0,
            COLOURS[k],
            lx + 14.0
        ));
    }
    s.push_str("</svg>\n");
    s
}

/// The smallest of 1, 1.5, 2, 2.5, 3, 4, 5, 6, 8 × 10^k at or above `x` (x > 0): an axis end with round ticks
/// at fifths.
fn nice_ceiling(x: f64) -> f64 {
    let p = 10f64.powf(x.log10().floor());
    [1.0, 1.5, 2.0, 2.5, 3.0, 4.0, 5.0, 6.0, 8.0, 10.0]
        .iter()
        .map(|m| m * p)
        .find(|v| *v >= x)
        .unwrap_or(10.0 * p)
}

/// An axis label: no decimals from 10 up, else up to three significant ones.
fn tick(v: f64) -> String {
    if v >= 10.0 || v == 0.0 {
        format!("{v:.0}")
    } else {
        format!("{}", (v * 1000.0).round() / 1000.0)
    }
}

fn svg_head(w: f64, h: f64, title: &str) -> String {
    format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{w}\" height=\"{h}\" viewBox=\"0 0 {w} {h}\" font-family=\"sans-serif\" font-size=\"12\">\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n<text x=\"{:.1}\" y=\"20\" text-anchor=\"middle\">{}</text>\n",
        w / 2.0,
        esc(title)
    )
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
    fn axis_ends_are_round() {
        assert_eq!(nice_ceiling(2877.0), 3000.0);
        assert_eq!(nice_ceiling(2100.0), 2500.0);
        assert_eq!(nice_ceiling(0.7), 0.8);
        assert_eq!(nice_ceiling(1000.0), 1000.0);
        assert_eq!(tick(0.4), "0.4");
        assert_eq!(tick(600.0), "600");
    }

    #[test]
    fn corpus_sha_is_of_lines() {
        // `printf 'a\nb\n' | sha256sum`
        let want = "911169ddaaf146aff539f58c26c489af3b892dff0fe283c1c264c65ae5aa59a2";
        assert_eq!(corpus_sha256(&["a".into(), "b".into()]), want);
        assert_ne!(corpus_sha256(&["a".into(), "c".into()]), want);
    }

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
