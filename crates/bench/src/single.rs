//! The one-cell bench: one cell of a grid, timed by the same loop, reported in its own format
//! (one JSON object with `--json`, else a few lines), with `--save` writing the last pass's
//! outputs. BENCHMARKS.md's scripts read these fields.

use crate::corpus::Input;
use crate::measure::{measure, Measured, Timing};
use crate::peak::Peaks;
use crate::settings::Settings;
use crate::subject::{self, Rows};
use crate::variant::{dtype_name, Variant};
use scorekit_core::error::Result;
use scorekit_runtime::kernels::peak::Peak;
use scorekit_runtime::{self as runtime, ResolvedModel};
use serde_json::{json, Value};
use std::fmt::Write;

/// What a one-cell report needs besides the timings.
struct Context<'a> {
    settings: &'a Settings,
    input: &'a Input,
    variant: &'a Variant,
    measured: &'a Measured,
    peak: Option<Peak>,
    threads: usize,
}

/// Measure the one cell and return what to print.
pub fn run(
    settings: &Settings,
    model: &ResolvedModel,
    input: &Input,
    variant: &Variant,
) -> Result<String> {
    let timing = Timing {
        batch_tokens: settings
            .batch_tokens
            .first()
            .copied()
            .unwrap_or(crate::settings::DEFAULT_BATCH_TOKENS),
        warmup: settings.warmup(),
        repeats: settings.repeats,
        keep_rows: settings.save.is_some(),
    };
    let max_length = settings.max_lengths.first().copied();
    let load = || subject::load(model, &input.items, variant, max_length);
    let measured = measure(load, timing)?;
    let peaks = Peaks::new(&variant.device);
    // The yardstick of the precision the model computes in (f32 FMAs, bf16 tiles), or none.
    let peak = peaks.of(variant.dtype, variant.int8, &measured.engine);
    if let (Some(path), Some(rows)) = (&settings.save, &measured.rows) {
        let body = match rows {
            Rows::Vectors(v) => scorekit_report::npy_bytes(v, v.first().map_or(0, Vec::len)),
            Rows::Scores(s) => {
                let rows: Vec<Vec<f32>> = s.iter().map(|&x| vec![x]).collect();
                scorekit_report::npy_bytes(&rows, 1)
            }
        };
        scorekit_report::atomic_write(path, &body)?;
    }
    let cx = Context {
        settings,
        input,
        variant,
        measured: &measured,
        peak,
        threads: peaks.threads(),
    };
    Ok(match (settings.judge, settings.json) {
        (false, true) => format!("{}\n", embedder_json(&cx, weights_bytes(model))),
        (false, false) => embedder_text(&cx, weights_bytes(model)),
        (true, true) => format!("{}\n", judge_json(&cx)),
        (true, false) => judge_text(&cx),
    })
}

/// Bytes of the model's weight file (0 where it cannot be read).
fn weights_bytes(model: &ResolvedModel) -> u64 {
    model
        .weights_file()
        .ok()
        .and_then(|p| std::fs::metadata(p).ok())
        .map_or(0, |m| m.len())
}

/// The embedder's JSON object.
fn embedder_json(cx: &Context, weights_bytes: u64) -> Value {
    let m = cx.measured;
    let (med, n) = (m.median_s(), m.items() as f64);
    let best = m.pass_s.iter().cloned().fold(f64::INFINITY, f64::min);
    let (gflops, gflops_real) = (m.gflop_padded / med, m.gflop_real / med);
    let peak = cx.peak;
    let peak_rss = m.peak_rss_bytes;
    json!({
        "model": cx.settings.model,
        "corpus": cx.input.source.display().to_string(),
        "sentences": m.items(),
        "real_tokens": m.real_tokens(),
        "padded_tokens": m.padded_tokens(),
        "batches": m.plan.len(),
        "batch_tokens": m.batch_tokens,
        "dtype": dtype_name(cx.variant.dtype),
        "int8": cx.variant.int8,
        "tf32": cx.settings.tf32,
        "encoder": m.engine,
        "device": runtime::device_name(&cx.variant.device),
        "threads": cx.threads,
        "repeats_s": m.pass_s,
        "median_s": med,
        "best_s": best,
        "sentences_per_s": n / med,
        "real_tokens_per_s": m.real_tokens() as f64 / med,
        "padded_tokens_per_s": m.padded_tokens() as f64 / med,
        "gflop_padded": m.gflop_padded,
        "gflops": gflops,
        "peak_gflops": peak.map(|p| p.gflops),
        "peak_isa": peak.map(|p| p.isa),
        "peak_fraction": peak.map(|p| gflops / p.gflops),
        "gflop_real": m.gflop_real,
        "gflops_real": gflops_real,
        "real_token_utilisation": peak.map(|p| gflops_real / p.gflops),
        "padded_equivalent_fraction": peak.map(|p| gflops / p.gflops),
        "load_s": m.load_s,
        "first_batch_s": m.first_batch_s,
        "peak_rss_bytes": peak_rss,
        "rss_before_load_bytes": m.rss_before_load_bytes,
        "weights_bytes": weights_bytes,
        "peak_rss_over_weights": if weights_bytes > 0 { peak_rss as f64 / weights_bytes as f64 } else { f64::NAN },
    })
}

/// Mebibytes, for the text reports.
fn mib(b: u64) -> f64 {
    b as f64 / (1024.0 * 1024.0)
}

/// The embedder's text report.
fn embedder_text(cx: &Context, weights_bytes: u64) -> String {
    let m = cx.measured;
    let (med, n) = (m.median_s(), m.items() as f64);
    let best = m.pass_s.iter().cloned().fold(f64::INFINITY, f64::min);
    let (real, padded) = (m.real_tokens(), m.padded_tokens());
    let (gflops, gflops_real) = (m.gflop_padded / med, m.gflop_real / med);
    let mut s = String::new();
    let _ = writeln!(s, "scorekit bench: {} ({})", cx.settings.model, m.engine);
    let _ = writeln!(
        s,
        "corpus          {} sentences from {}; {} batches under {} tokens",
        m.items(),
        cx.input.source.display(),
        m.plan.len(),
        m.batch_tokens
    );
    let _ = writeln!(
        s,
        "tokens          {} real, {} padded ({:.1}% padding)",
        real,
        padded,
        100.0 * (padded - real) as f64 / padded.max(1) as f64
    );
    let _ = writeln!(
        s,
        "time            median {:.3} s, best {:.3} s over {} repeats ({} threads)",
        med, best, cx.settings.repeats, cx.threads
    );
    let _ = writeln!(s, "sentences/s     {:.1}", n / med);
    let _ = writeln!(
        s,
        "tokens/s        {:.0} real, {:.0} padded",
        real as f64 / med,
        padded as f64 / med
    );
    match cx.peak {
        Some(peak) => {
            let _ = writeln!(
                s,
                "utilisation     {:.0}% of the measured peak {:.1} GFLOP/s ({} loop, {} threads): {:.1} GFLOP/s on the real tokens' work ({:.1} GFLOP per pass)",
                100.0 * gflops_real / peak.gflops,
                peak.gflops,
                peak.isa,
                peak.threads,
                gflops_real,
                m.gflop_real
            );
            let _ = writeln!(
                s,
                "padded-equiv.   {:.1} GFLOP/s = {:.0}% of the peak ({:.1} GFLOP of padded BERT work per pass: the rate a padded engine would need; for comparison with padded peers)",
                gflops,
                100.0 * gflops / peak.gflops,
                m.gflop_padded
            );
        }
        None => {
            let _ = writeln!(
                s,
                "utilisation     {gflops_real:.1} GFLOP/s on the real tokens' work, {gflops:.1} padded-equivalent (no peak is measured for this precision here)"
            );
        }
    }
    let _ = writeln!(
        s,
        "peak RSS        {:.0} MiB (VmHWM; weight file {:.0} MiB, ratio {:.2})",
        mib(m.peak_rss_bytes),
        mib(weights_bytes),
        m.peak_rss_bytes as f64 / weights_bytes.max(1) as f64
    );
    let _ = writeln!(
        s,
        "load            {:.3} s; load to first batch {:.3} s",
        m.load_s, m.first_batch_s
    );
    s
}

/// The judge's JSON object.
fn judge_json(cx: &Context) -> Value {
    let m = cx.measured;
    let med = m.median_s();
    let pairs = m.items();
    let gflops = m.gflop_real / med;
    let peak = cx.peak;
    json!({
        "judge": cx.settings.model,
        "engine": m.engine,
        "arch": m.arch,
        "dataset": cx.input.source.display().to_string(),
        "questions": cx.input.questions,
        "pairs": pairs,
        "real_tokens": m.real_tokens(),
        "max_length": m.max_length,
        "batch_tokens": m.batch_tokens,
        "dtype": dtype_name(cx.variant.dtype),
        "int8": cx.variant.int8,
        "tf32": cx.settings.tf32,
        "threads": cx.threads,
        "repeats_s": m.pass_s,
        "median_s": med,
        "pairs_per_s": pairs as f64 / med,
        "real_tokens_per_s": m.real_tokens() as f64 / med,
        "gflop_real": m.gflop_real,
        "gflops": gflops,
        "peak_gflops": peak.map(|p| p.gflops),
        "peak_isa": peak.map(|p| p.isa),
        // The judge runs on the real tokens only, so its utilisation is the real tokens' work.
        "real_token_utilisation": peak.map(|p| gflops / p.gflops),
        "peak_fraction": peak.map(|p| gflops / p.gflops),
        "load_s": m.load_s,
        "first_batch_s": m.first_batch_s,
        "peak_rss_bytes": m.peak_rss_bytes,
    })
}

/// The judge's text report.
fn judge_text(cx: &Context) -> String {
    let m = cx.measured;
    let med = m.median_s();
    let (pairs, real) = (m.items(), m.real_tokens());
    let gflops = m.gflop_real / med;
    let (load_s, first_batch_s, threads) = (m.load_s, m.first_batch_s, cx.threads);
    let mut s = String::new();
    let _ = writeln!(
        s,
        "scorekit bench --judge {} ({})",
        cx.settings.model, m.engine
    );
    let _ = writeln!(
        s,
        "dataset         {} questions, {} pairs from {}; {} real tokens",
        cx.input.questions,
        pairs,
        cx.input.source.display(),
        real
    );
    let _ = writeln!(
        s,
        "time            median {med:.3} s over {} repeats ({threads} threads)",
        cx.settings.repeats
    );
    let _ = writeln!(
        s,
        "pairs/s         {:.2}; tokens/s {:.0}",
        pairs as f64 / med,
        real as f64 / med
    );
    let _ = match cx.peak {
        Some(peak) => writeln!(
            s,
            "utilisation     {gflops:.1} GFLOP/s on the real tokens' work = {:.0}% of the measured peak {:.1} GFLOP/s ({} loop, {} threads)",
            100.0 * gflops / peak.gflops,
            peak.gflops,
            peak.isa,
            peak.threads
        ),
        None => writeln!(
            s,
            "utilisation     {gflops:.1} GFLOP/s on the real tokens' work (no peak is measured for this precision here)"
        ),
    };
    let _ = writeln!(s, "peak RSS        {:.0} MiB", mib(m.peak_rss_bytes));
    let _ = writeln!(
        s,
        "load            {load_s:.3} s; load to first batch {first_batch_s:.3} s"
    );
    s
}
