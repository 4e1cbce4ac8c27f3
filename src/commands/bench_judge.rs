//! `scorekit bench --judge`: score the (passage, question + option) pairs of a Possible Stories
//! dataset with an MRC judge, as `scorekit story` does, and report pairs/s, tokens/s, GFLOP/s
//! against the measured peak, peak RSS and load time. `scripts/bench/judge_compare.py` runs the
//! same pairs through PyTorch for ratios (BENCHMARKS.md).

use crate::cli::BenchArgs;
use crate::commands::bench_common::{check_model_limits, PeakKind, DEFAULT_DATASET};
use crate::commands::model_runtime::ModelRuntime;
use scorekit_core::error::Result;
use scorekit_core::process::peak_rss_bytes;
use scorekit_io::read_jsonl;
use scorekit_report::median;
use scorekit_runtime::judge::Judge;
use scorekit_runtime::judge::JUDGE_FILES;
use scorekit_runtime::models::bert::forward_flops as bert_flops;
use scorekit_suites::story;
use std::path::Path;
use std::time::Instant;

/// Run `scorekit bench --judge MODEL`.
pub fn run(args: &BenchArgs, judge_spec: &str) -> Result<()> {
    let margs = args.runtime.first();
    let input = scorekit_data::resolve_arg(
        args.input.as_deref().unwrap_or(Path::new(DEFAULT_DATASET)),
        &scorekit_data::Options {
            offline: margs.offline,
            quiet: args.json,
        },
    )?
    .path;
    let mut questions = story::parse_questions(&read_jsonl(&input)?)?;
    if let Some(n) = args.limit {
        questions.truncate(n.max(1));
    }
    let pairs: Vec<(String, String)> = questions
        .iter()
        .flat_map(|q| q.options.iter().map(move |o| q.pair(o)))
        .collect();
    let rt = ModelRuntime::new(&margs, true)?;
    let dtype = rt.dtype;
    check_model_limits(args, &rt, judge_spec)?;
    let t_load = Instant::now();
    let model = rt.resolve(judge_spec, JUDGE_FILES)?;
    let judge = Judge::load(
        &model.dir,
        &rt.device,
        dtype,
        rt.max_length,
        None,
        &rt.engine,
    )?;
    let load_s = t_load.elapsed().as_secs_f64();
    let hidden = scorekit_core::progress::bar(0, "bench", true);
    let batch_tokens = margs.batch_tokens;
    // Time to the first batch: one question's four choices, as a first request would be.
    let t_first = Instant::now();
    judge.score(&pairs[..pairs.len().min(4)], batch_tokens, &hidden)?;
    let first_batch_s = load_s + t_first.elapsed().as_secs_f64();

    let (layers, hidden_size, inter) = judge.dims();
    let lengths: Vec<usize> = judge.encode(&pairs)?.iter().map(|t| t.len()).collect();
    let real_tokens: usize = lengths.iter().sum();
    // The work of the encoder on the real tokens (no padding), one sequence at a time.
    let flops: f64 = lengths
        .iter()
        .map(|&s| bert_flops(layers, hidden_size, inter, 1, s))
        .sum();

    let mut times = Vec::new();
    let mut last = Vec::new();
    for _ in 0..args.repeats {
        let t = Instant::now();
        last = judge.score(&pairs, batch_tokens, &hidden)?;
        times.push(t.elapsed().as_secs_f64());
    }
    let med = median(&mut times.clone());
    let peak_rss = peak_rss_bytes().unwrap_or(0);
    let threads = rayon::current_num_threads();
    // The yardstick of the precision the judge computes in (f32 FMAs, bf16 tiles), or none.
    let peak = PeakKind::of(&rt.device, dtype, margs.quantize, judge.engine())
        .and_then(|kind| kind.measure(threads));
    if let Some(path) = &args.save {
        let rows: Vec<Vec<f32>> = last.iter().map(|&s| vec![s]).collect();
        scorekit_report::atomic_write(path, &scorekit_report::npy_bytes(&rows, 1))?;
    }
    let gflops = flops / med / 1e9;
    let out = serde_json::json!({
        "judge": judge_spec,
        "engine": judge.engine(),
        "arch": judge.arch(),
        "dataset": input.display().to_string(),
        "questions": questions.len(),
        "pairs": pairs.len(),
        "real_tokens": real_tokens,
        "max_length": judge.max_length(),
        "batch_tokens": batch_tokens,
        "dtype": format!("{dtype:?}").to_lowercase(),
        "int8": margs.quantize,
        "tf32": margs.tf32,
        "threads": threads,
        "repeats_s": times,
        "median_s": med,
        "pairs_per_s": pairs.len() as f64 / med,
        "real_tokens_per_s": real_tokens as f64 / med,
        "gflop_real": flops / 1e9,
        "gflops": gflops,
        "peak_gflops": peak.map(|p| p.gflops),
        "peak_isa": peak.map(|p| p.isa),
        // The judge runs on the real tokens only, so its utilisation is the real tokens' work.
        "real_token_utilisation": peak.map(|p| gflops / p.gflops),
        "peak_fraction": peak.map(|p| gflops / p.gflops),
        "load_s": load_s,
        "first_batch_s": first_batch_s,
        "peak_rss_bytes": peak_rss,
    });
    if args.json {
        println!("{out}");
        return Ok(());
    }
    println!("scorekit bench --judge {judge_spec} ({})", judge.engine());
    println!(
        "dataset         {} questions, {} pairs from {}; {} real tokens",
        questions.len(),
        pairs.len(),
        input.display(),
        real_tokens
    );
    println!(
        "time            median {med:.3} s over {} repeats ({threads} threads)",
        args.repeats
    );
    println!(
        "pairs/s         {:.2}; tokens/s {:.0}",
        pairs.len() as f64 / med,
        real_tokens as f64 / med
    );
    match peak {
        Some(peak) => println!(
            "utilisation     {gflops:.1} GFLOP/s on the real tokens' work = {:.0}% of the measured peak {:.1} GFLOP/s ({} loop, {} threads)",
            100.0 * gflops / peak.gflops,
            peak.gflops,
            peak.isa,
            peak.threads
        ),
        None => println!(
            "utilisation     {gflops:.1} GFLOP/s on the real tokens' work (no peak is measured for this precision here)"
        ),
    }
    println!(
        "peak RSS        {:.0} MiB",
        peak_rss as f64 / (1024.0 * 1024.0)
    );
    println!("load            {load_s:.3} s; load to first batch {first_batch_s:.3} s");
    Ok(())
}
