//! `scorekit bench`: embed a real corpus with a sentence embedder and report sentences/s,
//! tokens/s (real and padded), GFLOP/s against the machine's measured f32 peak, peak RSS and
//! load time. The method is in BENCHMARKS.md; `scripts/bench/compare.sh` runs the same corpus
//! through sentence-transformers and ONNX Runtime for ratios.

use crate::cli::BenchArgs;
use crate::commands::bench_common::{check_model_limits, read_corpus, PeakKind, DEFAULT_CORPUS};
use crate::commands::bench_grid;
use crate::commands::model_runtime::ModelRuntime;
use scorekit_core::error::{Error, Result};
use scorekit_core::process::peak_rss_bytes;
use scorekit_report::median;
use scorekit_runtime::batching::plan_batches;
use scorekit_runtime::models::bert::forward_flops as bert_flops;
use scorekit_runtime::{self as runtime, Embedder};
use std::path::Path;
use std::time::Instant;

/// Run `scorekit bench`.
pub fn run(args: BenchArgs) -> Result<()> {
    if args.repeats == 0 {
        return Err(Error::usage("--repeats must be at least 1"));
    }
    if bench_grid::wanted(&args) {
        return bench_grid::run(&args);
    }
    // One cell, as before grids: the first value of each axis, checked as a grid's are.
    bench_grid::check_axes(&args, &runtime::select_device(&args.runtime.device)?)?;
    if let Some(judge) = &args.judge {
        return super::bench_judge::run(&args, judge);
    }
    let margs = args.runtime.first();
    // A dataset name (the default among them) resolves through the data cache; a path is a path.
    let input = scorekit_data::resolve_arg(
        args.input.as_deref().unwrap_or(Path::new(DEFAULT_CORPUS)),
        &scorekit_data::Options {
            offline: margs.offline,
            quiet: args.json,
        },
    )?
    .path;
    let mut texts = read_corpus(&input)?;
    if let Some(n) = args.limit {
        texts.truncate(n.max(1));
    }
    let rt = ModelRuntime::new(&margs, true)?;
    let (device, dtype) = (&rt.device, rt.dtype);
    let rss_before = peak_rss_bytes().unwrap_or(0);
    check_model_limits(&args, &rt, &args.model)?;
    let t_load = Instant::now();
    let model = rt.resolve_embedder(&args.model)?;
    let embedder = Embedder::load(&model, device, dtype, margs.max_length, &rt.engine)?;
    let load_s = t_load.elapsed().as_secs_f64();
    let hidden = scorekit_core::progress::bar(0, "bench", true);
    // Time to the first batch: the shortest 32 sentences, as a first request would be.
    let first: Vec<String> = texts.iter().take(32).cloned().collect();
    let t_first = Instant::now();
    embedder.embed(&first, margs.batch_tokens, &hidden)?;
    let first_batch_s = load_s + t_first.elapsed().as_secs_f64();

    let cfg = runtime::models::read_config(&model.file("config.json"), "bert")?
        .1
        .bert;
    let tokens = embedder.tokenize(&texts)?;
    let lengths: Vec<usize> = tokens.iter().map(|t| t.len()).collect();
    let plan = plan_batches(&lengths, margs.batch_tokens);
    let real_tokens: usize = lengths.iter().sum();
    let padded_tokens: usize = plan.iter().map(|b| b.indices.len() * b.padded_len).sum();
    let flops: f64 = plan
        .iter()
        .map(|b| {
            bert_flops(
                cfg.num_hidden_layers,
                cfg.hidden_size,
                cfg.intermediate_size,
                b.indices.len(),
                b.padded_len,
            )
        })
        .sum();
    // The work the engine really does: every sequence on its own tokens (what the unpadded
    // native engine runs; a padded engine does the padded work above).
    let flops_real: f64 = lengths
        .iter()
        .map(|&len| {
            bert_flops(
                cfg.num_hidden_layers,
                cfg.hidden_size,
                cfg.intermediate_size,
                1,
                len,
            )
        })
        .sum();

    // Warm-up on a slice, then the timed repeats over the whole corpus.
    let warm: Vec<String> = texts.iter().take(256).cloned().collect();
    embedder.embed(&warm, margs.batch_tokens, &hidden)?;
    let mut times = Vec::new();
    let mut last = Vec::new();
    for _ in 0..args.repeats {
        let t = Instant::now();
        last = embedder.embed(&texts, margs.batch_tokens, &hidden)?;
        times.push(t.elapsed().as_secs_f64());
    }
    let best = times.iter().cloned().fold(f64::INFINITY, f64::min);
    let med = median(&mut times.clone());
    let peak_rss = peak_rss_bytes().unwrap_or(0);
    let weights_bytes = model
        .weights_file()
        .ok()
        .and_then(|p| std::fs::metadata(p).ok())
        .map(|m| m.len())
        .unwrap_or(0);
    let threads = rayon::current_num_threads();
    let peak = PeakKind::of(device, dtype, margs.quantize, embedder.engine())
        .and_then(|k| k.measure(threads));
    if let Some(path) = &args.save {
        let body = scorekit_report::npy_bytes(&last, embedder.dim());
        scorekit_report::atomic_write(path, &body)?;
    }

    let n = texts.len() as f64;
    let gflops = flops / med / 1e9;
    let gflops_real = flops_real / med / 1e9;
    let out = serde_json::json!({
        "model": args.model,
        "corpus": input.display().to_string(),
        "sentences": texts.len(),
        "real_tokens": real_tokens,
        "padded_tokens": padded_tokens,
        "batches": plan.len(),
        "batch_tokens": margs.batch_tokens,
        "dtype": format!("{dtype:?}").to_lowercase(),
        "int8": margs.quantize,
        "tf32": margs.tf32,
        "encoder": embedder.engine(),
        "device": runtime::device_name(device),
        "threads": threads,
        "repeats_s": times,
        "median_s": med,
        "best_s": best,
        "sentences_per_s": n / med,
        "real_tokens_per_s": real_tokens as f64 / med,
        "padded_tokens_per_s": padded_tokens as f64 / med,
        "gflop_padded": flops / 1e9,
        "gflops": gflops,
        "peak_gflops": peak.map(|p| p.gflops),
        "peak_isa": peak.map(|p| p.isa),
        "peak_fraction": peak.map(|p| gflops / p.gflops),
        "gflop_real": flops_real / 1e9,
        "gflops_real": gflops_real,
        "real_token_utilisation": peak.map(|p| gflops_real / p.gflops),
        "padded_equivalent_fraction": peak.map(|p| gflops / p.gflops),
        "load_s": load_s,
        "first_batch_s": first_batch_s,
        "peak_rss_bytes": peak_rss,
        "rss_before_load_bytes": rss_before,
        "weights_bytes": weights_bytes,
        "peak_rss_over_weights": if weights_bytes > 0 { peak_rss as f64 / weights_bytes as f64 } else { f64::NAN },
    });
    if args.json {
        println!("{out}");
        return Ok(());
    }
    let mb = |b: u64| b as f64 / (1024.0 * 1024.0);
    println!(
        "scorekit bench: {} ({})",
        args.model,
        out["encoder"].as_str().unwrap_or("")
    );
    println!(
        "corpus          {} sentences from {}; {} batches under {} tokens",
        texts.len(),
        input.display(),
        plan.len(),
        margs.batch_tokens
    );
    println!(
        "tokens          {} real, {} padded ({:.1}% padding)",
        real_tokens,
        padded_tokens,
        100.0 * (padded_tokens - real_tokens) as f64 / padded_tokens.max(1) as f64
    );
    println!(
        "time            median {:.3} s, best {:.3} s over {} repeats ({} threads)",
        med, best, args.repeats, threads
    );
    println!("sentences/s     {:.1}", n / med);
    println!(
        "tokens/s        {:.0} real, {:.0} padded",
        real_tokens as f64 / med,
        padded_tokens as f64 / med
    );
    match peak {
        Some(peak) => {
            println!(
                "utilisation     {:.0}% of the measured peak {:.1} GFLOP/s ({} loop, {} threads): {:.1} GFLOP/s on the real tokens' work ({:.1} GFLOP per pass)",
                100.0 * gflops_real / peak.gflops,
                peak.gflops,
                peak.isa,
                peak.threads,
                gflops_real,
                flops_real / 1e9
            );
            println!(
                "padded-equiv.   {:.1} GFLOP/s = {:.0}% of the peak ({:.1} GFLOP of padded BERT work per pass: the rate a padded engine would need; for comparison with padded peers)",
                gflops,
                100.0 * gflops / peak.gflops,
                flops / 1e9
            );
        }
        None => println!(
            "utilisation     {gflops_real:.1} GFLOP/s on the real tokens' work, {gflops:.1} padded-equivalent (no peak is measured for this precision here)"
        ),
    }
    println!(
        "peak RSS        {:.0} MiB (VmHWM; weight file {:.0} MiB, ratio {:.2})",
        mb(peak_rss),
        mb(weights_bytes),
        peak_rss as f64 / weights_bytes.max(1) as f64
    );
    println!(
        "load            {:.3} s; load to first batch {:.3} s",
        load_s, first_batch_s
    );
    Ok(())
}
