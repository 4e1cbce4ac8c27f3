//! The text files of `--out`: bench.csv (one line a cell) and report.md (the grid as tables,
//! peers joined by their axes with ratio columns).

use crate::doc::{BenchCell, BenchDoc};
use crate::peers::Joined;
use scorekit_report::Table;

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
    s.push_str(&throughput_table(grid));
    s.push_str("\n## Latency and resources\n\n");
    s.push_str(&latency_table(grid));
    if !peers.is_empty() {
        s.push_str("\n## Peers\n\nEach peer row beside the scorekit cell of the same corpus, batch tokens and max length (same dtype, else f32); ratios are scorekit ÷ peer for rates and peer ÷ scorekit for latency, so above 1 means scorekit is faster.\n\n");
        s.push_str(&peers_table(grid, peers));
    }
    s.push_str("\nReal-token utilisation: the FLOPs of the real tokens (each sentence unpadded) per second of model time, over the measured peak of the precision used (f32 FMA on the CPU; none is measured for other precisions or on a GPU: `-`). Padded-equivalent rate: the FLOPs of the padded batches per second of model time, the figure a padded engine would need to match; for an unpadded engine it can pass the peak.\n");
    s
}

/// The throughput table of report.md: one row a cell.
fn throughput_table(grid: &BenchDoc) -> String {
    let u = &grid.unit;
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
    t.render()
}

/// The latency and resources table of report.md: one row a cell.
fn latency_table(grid: &BenchDoc) -> String {
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
    t.render()
}

/// The peers table of report.md: each peer row beside its scorekit cell, with ratio columns.
fn peers_table(grid: &BenchDoc, peers: &[Joined]) -> String {
    let u = &grid.unit;
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
    t.render()
}
