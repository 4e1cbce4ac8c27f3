//! `scorekit bench`: flags -> settings -> each precision settled through [`ModelRuntime`] ->
//! the model resolved and the input read -> `scorekit_bench::run` -> print. What is measured
//! and how (the one timing loop, the grid, bench.json and its report) is `crates/bench`'s;
//! BENCHMARKS.md has the method, `scripts/bench/` the peers.

use crate::cli::{BenchArgs, BenchModelArgs, DType as CliDType};
use crate::model_runtime::{Int8Models, ModelRuntime};
use scorekit_bench::corpus::{read_corpus, DEFAULT_CORPUS, DEFAULT_DATASET};
use scorekit_bench::settings::DEFAULT_BATCH_TOKENS;
use scorekit_bench::{Input, Items, Settings, Variant};
use scorekit_core::error::Result;
use scorekit_runtime::judge::JUDGE_FILES;
use scorekit_runtime::ResolvedModel;
use std::path::Path;

/// Run `scorekit bench`.
pub fn run(args: BenchArgs) -> Result<()> {
    let settings = crate::settings::bench::bench(&args);
    settings.check()?;
    // Every precision settled and checked before a model is resolved or loaded.
    let variants = scorekit_bench::variants(
        &args.runtime.dtype,
        CliDType::F32,
        args.runtime.quantize,
        settings.grid,
    )
    .into_iter()
    .map(|(dtype, int8)| variant(&args.runtime, dtype, int8))
    .collect::<Result<Vec<_>>>()?;
    let model = resolve(&args.runtime, &settings)?;
    let input = match settings.synthetic.is_empty() {
        true => Some(read_input(&args, &settings)?),
        false => None,
    };
    print!(
        "{}",
        scorekit_bench::run(&settings, &model, input, &variants)?
    );
    Ok(())
}

/// One precision settled as every command settles its flags (device, dtype, engine,
/// `--quantize`'s rule for encoders, `--tf32`), then checked on the device.
fn variant(r: &BenchModelArgs, dtype: Option<CliDType>, int8: bool) -> Result<Variant> {
    let margs = r.cell(DEFAULT_BATCH_TOKENS, None, dtype, int8);
    let rt = ModelRuntime::for_models(&margs, true, Int8Models::Encoders)?;
    let v = Variant {
        device: rt.device,
        dtype: rt.dtype,
        int8,
        engine: rt.engine,
    };
    v.check()?;
    Ok(v)
}

/// Resolve the model: its config.json first, so that lengths above its limit are refused
/// before the weights are fetched or read.
fn resolve(r: &BenchModelArgs, settings: &Settings) -> Result<ResolvedModel> {
    let rt = ModelRuntime::new(&r.cell(DEFAULT_BATCH_TOKENS, None, None, false), true)?;
    let spec = &settings.model;
    if settings.needs_limits() {
        let config = rt.resolve(spec, &["config.json"])?;
        let (_, cfg) = scorekit_runtime::models::read_config(&config.file("config.json"), "bert")?;
        settings.check_limits(cfg.max_tokens)?;
    }
    if settings.judge {
        rt.resolve(spec, JUDGE_FILES)
    } else {
        rt.resolve_embedder(spec)
    }
}

/// Read `--input` (a dataset name through the data cache, or a path): a corpus's sentences, or
/// a Possible Stories dataset's (passage, question + option) pairs for a judge, cut by `--limit`.
fn read_input(args: &BenchArgs, settings: &Settings) -> Result<Input> {
    let default = if settings.judge {
        DEFAULT_DATASET
    } else {
        DEFAULT_CORPUS
    };
    let source = scorekit_data::resolve_arg(
        args.input.as_deref().unwrap_or(Path::new(default)),
        &scorekit_data::Options {
            offline: args.runtime.offline,
            quiet: args.json,
        },
    )?
    .path;
    let keep = settings.limit.map_or(usize::MAX, |n| n.max(1));
    if !settings.judge {
        let mut texts = read_corpus(&source)?;
        texts.truncate(keep);
        return Ok(Input {
            source,
            items: Items::Texts(texts),
            questions: 0,
        });
    }
    let mut questions =
        scorekit_suites::story::parse_questions(&scorekit_io::read_jsonl(&source)?)?;
    questions.truncate(keep);
    let pairs = questions
        .iter()
        .flat_map(|q| q.options.iter().map(move |o| q.pair(o)))
        .collect();
    Ok(Input {
        source,
        questions: questions.len(),
        items: Items::Pairs(pairs),
    })
}
