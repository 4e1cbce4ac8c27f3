//! `scorekit bench` as a grid: every combination of `--batch-tokens`, `--max-length`, `--dtype`
//! (and int8 with `--quantize`) on the corpus or on `--synthetic` sentences of fixed token
//! lengths, each cell with sentences/s and real tokens/s over repeats, per-batch latency
//! percentiles, tokenisation apart from model time, time to first batch, peak RSS and the two
//! utilisation figures; `--out` writes bench.json, bench.csv, report.md and the SVG charts
//! (rendered by `scorekit_report::bench`), `--compare` joins a peers file by axes. Every axis
//! value is checked before a model is loaded. BENCHMARKS.md and README.md say how to read it.

use crate::cli::{BenchArgs, DType as CliDType, Engine};
use crate::commands::bench_common::{
    check_model_limits, read_corpus, PeakKind, DEFAULT_CORPUS, DEFAULT_DATASET,
};
use crate::commands::model_runtime::{dtype_of, engine_options, ModelRuntime};
use candle_core::{DType, Device, Tensor};
use scorekit_core::error::{Error, InputError, Result};
use scorekit_core::process::{cpu_model_name, peak_rss_bytes, reset_peak_rss};
use scorekit_report::bench::{self as report, BenchCell, BenchDoc, CorpusRef, Latency};
use scorekit_report::median;
use scorekit_runtime::batching::plan_batches;
use scorekit_runtime::judge::{Judge, JUDGE_FILES};
use scorekit_runtime::models::bert::forward_flops as bert_flops;
use scorekit_runtime::{self as runtime, Embedder, ResolvedModel, TextTokenizer, Tokens};
use std::cell::OnceCell;
use std::path::Path;
use std::time::Instant;

/// Untimed batches before each cell's timed repeats when `--warmup` is not given.
pub const DEFAULT_WARMUP: usize = 2;
/// Synthetic sentences per length when `--limit` is not given.
pub const DEFAULT_SYNTHETIC_SENTENCES: usize = 256;
/// Sentences of the cold first batch (time to first batch).
const FIRST_BATCH: usize = 32;

/// Whether the arguments ask for a grid rather than the one-cell bench.
pub fn wanted(args: &BenchArgs) -> bool {
    !args.runtime.single()
        || args.out.is_some()
        || args.compare.is_some()
        || !args.synthetic.is_empty()
        || args.warmup.is_some()
}

/// One cell to measure.
#[derive(Debug, Clone)]
struct Spec {
    corpus: usize,
    dtype: Option<CliDType>,
    int8: bool,
    max_length: Option<usize>,
    batch_tokens: usize,
}

/// The CPU's measured peaks, GFLOP/s, of the precisions scorekit computes in: each measured
/// once, when the first cell that computes in it has been timed (so a grid measures only the
/// peaks its cells use, whichever engine `--amx` or the CPU picks for them).
struct Peaks {
    device: Device,
    threads: usize,
    f32: OnceCell<Option<f64>>,
    bf16_amx: OnceCell<Option<f64>>,
    bf16_dot: OnceCell<Option<f64>>,
}

impl Peaks {
    /// The peak of a cell's precision ([`PeakKind::of`]).
    fn of(&self, dtype: DType, int8: bool, engine: &str) -> Option<f64> {
        let kind = PeakKind::of(&self.device, dtype, int8, engine)?;
        let cell = match kind {
            PeakKind::F32 => &self.f32,
            PeakKind::Bf16Amx => &self.bf16_amx,
            PeakKind::Bf16Dot => &self.bf16_dot,
        };
        *cell.get_or_init(|| kind.measure(self.threads).map(|p| p.gflops))
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

fn dtype_label(d: DType, int8: bool) -> String {
    if int8 {
        "int8".into()
    } else {
        format!("{d:?}").to_lowercase()
    }
}

/// Whether `device` computes in `dtype`: a 2×2 product, no model involved.
fn probe_dtype(device: &Device, dtype: DType) -> std::result::Result<(), String> {
    let run = || -> candle_core::Result<()> {
        let a = Tensor::ones((2, 2), dtype, device)?;
        let v = a.matmul(&a)?.to_dtype(DType::F32)?.to_vec2::<f32>()?;
        if v[0][0] != 2.0 {
            candle_core::bail!("2x2 product of ones gave {}", v[0][0]);
        }
        Ok(())
    };
    run().map_err(|e| e.to_string())
}

/// Checks that need no model: positive axes, dtypes the device computes in, `--quantize` where
/// the int8 kernels run.
pub fn check_axes(args: &BenchArgs, device: &Device) -> Result<()> {
    let r = &args.runtime;
    for &b in &r.batch_tokens {
        if b == 0 {
            return Err(Error::usage(
                "--batch-tokens 0: a batch budget must be at least 1 token",
            ));
        }
    }
    for &m in &r.max_length {
        if m < 2 {
            return Err(Error::usage(format!(
                "--max-length {m}: an input needs at least 2 tokens ([CLS] and [SEP])"
            )));
        }
    }
    for &n in &args.synthetic {
        if n < 3 {
            return Err(Error::usage(format!(
                "--synthetic {n}: a sentence needs at least 3 tokens ([CLS], a word, [SEP])"
            )));
        }
    }
    if args.judge.is_some() && !args.synthetic.is_empty() {
        return Err(Error::usage(
            "--synthetic measures an embedder; --judge reads (passage, question) pairs",
        ));
    }
    for d in &r.dtype {
        let dt = dtype_of(Some(*d)).unwrap_or(DType::F32);
        let name = dtype_label(dt, false);
        if let Err(why) = probe_dtype(device, dt) {
            return Err(Error::usage(format!(
                "--dtype {name}: {} cannot compute in it ({why})",
                runtime::device_name(device)
            )));
        }
        if r.engine == Engine::Native {
            let opts = engine_options(&r.cell(1, None, Some(*d), false));
            if let Err(why) = opts.native_dtype(dt) {
                return Err(Error::usage(format!(
                    "--dtype {name}: --engine native: {why}"
                )));
            }
        }
    }
    if r.quantize
        && !(device.is_cpu() && r.engine != Engine::Candle && runtime::kernels::int8_available())
    {
        return Err(Error::usage(
            "--quantize: this device has no int8 rows to add (scorekit's int8 products need the CPU with AVX-512 VNNI)",
        ));
    }
    Ok(())
}

/// Synthetic sentences of exactly `len` tokens as `tok` counts them (special tokens included),
/// from whole-word entries of the model's own vocabulary, so that no padding hides in a batch.
pub fn synthetic_sentences(tok: &TextTokenizer, len: usize, count: usize) -> Result<Vec<String>> {
    let specials = tok.encode_all(&[String::new()])?[0].len();
    if len <= specials {
        return Err(Error::usage(format!(
            "--synthetic {len}: the tokenizer adds {specials} special tokens to every sentence"
        )));
    }
    let mut vocab: Vec<(String, u32)> = tok
        .inner()
        .get_vocab(false)
        .into_iter()
        .filter(|(w, _)| (3..=10).contains(&w.len()) && w.bytes().all(|b| b.is_ascii_lowercase()))
        .collect();
    vocab.sort_by_key(|(_, id)| *id);
    let candidates: Vec<String> = vocab.into_iter().map(|(w, _)| w).take(4000).collect();
    let one = tok.encode_all(&candidates)?;
    let words: Vec<&str> = candidates
        .iter()
        .zip(&one)
        .filter(|(_, t)| t.len() == specials + 1)
        .map(|(w, _)| w.as_str())
        .collect();
    if words.len() < 16 {
        return Err(Error::usage(format!(
            "--synthetic: the model's vocabulary has too few whole lower-case words ({}) to build sentences from",
            words.len()
        )));
    }
    // A fixed linear congruential walk: the same sentences on every run and machine.
    let mut state: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = || {
        state = state
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (state >> 33) as usize
    };
    let sentences: Vec<String> = (0..count)
        .map(|_| {
            (0..len - specials)
                .map(|_| words[next() % words.len()])
                .collect::<Vec<_>>()
                .join(" ")
        })
        .collect();
    for (i, t) in tok.encode_all(&sentences)?.iter().enumerate() {
        if t.len() != len {
            return Err(Error::Internal(anyhow::anyhow!(
                "synthetic sentence {i} of length {len} tokenises to {} tokens",
                t.len()
            )));
        }
    }
    Ok(sentences)
}

/// The sha256 of a model's weight file (its identity in bench.json).
fn weights_sha256(model: &ResolvedModel) -> Result<String> {
    let path = model.weights_file()?;
    scorekit_report::sha256_file(&path)
        .map_err(|e| InputError::file(&path, format!("cannot read: {e}")).into())
}

/// Read a `--compare` file and check it is of this model and corpus before anything is timed.
fn read_compare(path: &Path) -> Result<BenchDoc> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| InputError::file(path, format!("cannot read: {e}")))?;
    serde_json::from_str(&text).map_err(|e| {
        InputError::file(
            path,
            format!("not a bench.json / peers.py file (model, model_sha256, corpora, cells): {e}"),
        )
        .into()
    })
}

fn refuse(path: &Path, why: impl std::fmt::Display) -> Error {
    InputError::file(path, format!("--compare: cannot join this file: {why}")).into()
}

/// What both the embedder and the judge grid compute per cell from their timings.
struct Timings {
    load_s: f64,
    first_batch_s: f64,
    lengths: Vec<usize>,
    batch_tokens: usize,
    tokenize_s: Vec<f64>,
    model_s: Vec<f64>,
    pass_s: Vec<f64>,
    batch_s: Vec<f64>,
    dims: (usize, usize, usize),
}

fn cell_of(
    t: Timings,
    engine: String,
    corpus: &str,
    max_length: usize,
    dtype: String,
    peak: Option<f64>,
) -> BenchCell {
    let n = t.lengths.len() as f64;
    let plan = plan_batches(&t.lengths, t.batch_tokens);
    let real: u64 = t.lengths.iter().map(|&l| l as u64).sum();
    let padded: u64 = plan
        .iter()
        .map(|b| (b.indices.len() * b.padded_len) as u64)
        .sum();
    let (layers, h, inter) = t.dims;
    let gflop_real: f64 = t
        .lengths
        .iter()
        .map(|&s| bert_flops(layers, h, inter, 1, s))
        .sum::<f64>()
        / 1e9;
    let gflop_padded: f64 = plan
        .iter()
        .map(|b| bert_flops(layers, h, inter, b.indices.len(), b.padded_len))
        .sum::<f64>()
        / 1e9;
    let med = median(&mut t.pass_s.clone());
    let (fast, slow) = (
        t.pass_s.iter().cloned().fold(f64::INFINITY, f64::min),
        t.pass_s.iter().cloned().fold(0.0f64, f64::max),
    );
    let model_s = median(&mut t.model_s.clone());
    let real_gflops = gflop_real / model_s;
    let padded_gflops = gflop_padded / model_s;
    BenchCell {
        engine,
        corpus: corpus.to_string(),
        batch_tokens: t.batch_tokens,
        max_length,
        dtype,
        sentences: t.lengths.len(),
        real_tokens: real,
        padded_tokens: padded,
        batches: plan.len(),
        repeats_s: t.pass_s.clone(),
        sentences_per_s: n / med,
        sentences_per_s_min: n / slow,
        sentences_per_s_max: n / fast,
        real_tokens_per_s: real as f64 / med,
        real_tokens_per_s_min: real as f64 / slow,
        real_tokens_per_s_max: real as f64 / fast,
        padded_tokens_per_s: padded as f64 / med,
        latency_ms: Latency::of_seconds(&t.batch_s),
        tokenize_s: median(&mut t.tokenize_s.clone()),
        model_s,
        load_s: t.load_s,
        first_batch_s: t.first_batch_s,
        peak_rss_bytes: peak_rss_bytes().unwrap_or(0),
        gflop_real: Some(gflop_real),
        gflop_padded: Some(gflop_padded),
        peak_gflops: peak,
        real_token_utilisation: peak.map(|p| real_gflops / p),
        padded_equivalent_gflops: Some(padded_gflops),
        padded_equivalent_fraction: peak.map(|p| padded_gflops / p),
    }
}

/// Measure one embedder cell: load, cold first batch, warm-up, timed repeats.
fn measure_embedder(
    args: &BenchArgs,
    model: &ResolvedModel,
    texts: &[String],
    label: &str,
    spec: &Spec,
    warmup: usize,
    peaks: &Peaks,
) -> Result<BenchCell> {
    let hidden = indicatif::ProgressBar::hidden();
    let margs = args
        .runtime
        .cell(spec.batch_tokens, spec.max_length, spec.dtype, spec.int8);
    let rt = ModelRuntime::new(&margs, true)?;
    reset_peak_rss();
    let t_load = Instant::now();
    let embedder = Embedder::load(model, &rt.device, rt.dtype, spec.max_length, &rt.engine)?;
    let load_s = t_load.elapsed().as_secs_f64();
    let first: Vec<String> = texts.iter().take(FIRST_BATCH).cloned().collect();
    let t_first = Instant::now();
    embedder.embed(&first, spec.batch_tokens, &hidden)?;
    let first_batch_s = load_s + t_first.elapsed().as_secs_f64();

    let tokens = embedder.tokenize(texts)?;
    let lengths: Vec<usize> = tokens.iter().map(Tokens::len).collect();
    let plan = plan_batches(&lengths, spec.batch_tokens);
    let batches: Vec<Vec<Tokens>> = plan
        .iter()
        .map(|b| b.indices.iter().map(|&i| tokens[i].clone()).collect())
        .collect();
    for b in batches.iter().cycle().take(warmup.min(batches.len() * 4)) {
        embedder.embed_tokens(b, spec.batch_tokens, &hidden)?;
    }
    let (mut tokenize_s, mut model_s, mut pass_s, mut batch_s) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for _ in 0..args.repeats {
        let t = Instant::now();
        let again = embedder.tokenize(texts)?;
        let tok = t.elapsed().as_secs_f64();
        drop(again);
        let mut model = 0.0;
        for b in &batches {
            let t = Instant::now();
            embedder.embed_tokens(b, spec.batch_tokens, &hidden)?;
            let s = t.elapsed().as_secs_f64();
            batch_s.push(s);
            model += s;
        }
        tokenize_s.push(tok);
        model_s.push(model);
        pass_s.push(tok + model);
    }
    let cfg = runtime::models::read_config(&model.file("config.json"), "bert")?
        .1
        .bert;
    let dtype = dtype_label(rt.dtype, spec.int8);
    let peak = peaks.of(rt.dtype, spec.int8, embedder.engine());
    Ok(cell_of(
        Timings {
            load_s,
            first_batch_s,
            lengths,
            batch_tokens: spec.batch_tokens,
            tokenize_s,
            model_s,
            pass_s,
            batch_s,
            dims: (
                cfg.num_hidden_layers,
                cfg.hidden_size,
                cfg.intermediate_size,
            ),
        },
        engine_name(embedder.engine()),
        label,
        embedder.tokenizer().max_length(),
        dtype,
        peak,
    ))
}

/// Measure one judge cell; a batch's latency includes tokenising its pairs (the judge scores
/// pairs of text), `tokenize_s` is the whole pass's tokenisation alone.
fn measure_judge(
    args: &BenchArgs,
    model: &ResolvedModel,
    pairs: &[(String, String)],
    label: &str,
    spec: &Spec,
    warmup: usize,
    peaks: &Peaks,
) -> Result<BenchCell> {
    let hidden = indicatif::ProgressBar::hidden();
    let margs = args
        .runtime
        .cell(spec.batch_tokens, spec.max_length, spec.dtype, spec.int8);
    let rt = ModelRuntime::new(&margs, true)?;
    reset_peak_rss();
    let t_load = Instant::now();
    let judge = Judge::load(
        &model.dir,
        &rt.device,
        rt.dtype,
        spec.max_length,
        None,
        &rt.engine,
    )?;
    let load_s = t_load.elapsed().as_secs_f64();
    let t_first = Instant::now();
    judge.score(&pairs[..pairs.len().min(4)], spec.batch_tokens, &hidden)?;
    let first_batch_s = load_s + t_first.elapsed().as_secs_f64();
    let lengths: Vec<usize> = judge.encode(pairs)?.iter().map(Tokens::len).collect();
    let plan = plan_batches(&lengths, spec.batch_tokens);
    let batches: Vec<Vec<(String, String)>> = plan
        .iter()
        .map(|b| b.indices.iter().map(|&i| pairs[i].clone()).collect())
        .collect();
    for b in batches.iter().cycle().take(warmup.min(batches.len() * 4)) {
        judge.score(b, spec.batch_tokens, &hidden)?;
    }
    let (mut tokenize_s, mut model_s, mut pass_s, mut batch_s) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for _ in 0..args.repeats {
        let t = Instant::now();
        drop(judge.encode(pairs)?);
        tokenize_s.push(t.elapsed().as_secs_f64());
        let mut total = 0.0;
        for b in &batches {
            let t = Instant::now();
            judge.score(b, spec.batch_tokens, &hidden)?;
            let s = t.elapsed().as_secs_f64();
            batch_s.push(s);
            total += s;
        }
        model_s.push(total);
        pass_s.push(total);
    }
    let dtype = dtype_label(rt.dtype, spec.int8);
    let peak = peaks.of(rt.dtype, spec.int8, judge.engine());
    Ok(cell_of(
        Timings {
            load_s,
            first_batch_s,
            lengths,
            batch_tokens: spec.batch_tokens,
            tokenize_s,
            model_s,
            pass_s,
            batch_s,
            dims: judge.dims(),
        },
        engine_name(judge.engine()),
        label,
        judge.max_length(),
        dtype,
        peak,
    ))
}

/// Run the grid.
pub fn run(args: &BenchArgs) -> Result<()> {
    if args.save.is_some() {
        return Err(Error::usage(
            "--save writes the vectors of a one-cell bench; leave it out of a grid (--out, lists, --synthetic, --warmup, --compare)",
        ));
    }
    let device = runtime::select_device(&args.runtime.device)?;
    check_axes(args, &device)?;
    let is_judge = args.judge.is_some();
    let model_spec = args.judge.clone().unwrap_or_else(|| args.model.clone());
    // Resolution reads files (or fetches them); nothing is loaded yet.
    let base = ModelRuntime::new(&args.runtime.cell(8192, None, None, false), true)?;
    check_model_limits(args, &base, &model_spec)?;
    let model = if is_judge {
        base.resolve(&model_spec, JUDGE_FILES)?
    } else {
        base.resolve_embedder(&model_spec)?
    };
    let (_, cfg) = runtime::models::read_config(&model.file("config.json"), "bert")?;

    // The sentence lists.
    let default = if is_judge {
        DEFAULT_DATASET
    } else {
        DEFAULT_CORPUS
    };
    let mut corpora: Vec<(CorpusRef, Vec<String>)> = Vec::new();
    let mut pairs: Vec<(String, String)> = Vec::new();
    if args.synthetic.is_empty() {
        let input = scorekit_data::resolve_arg(
            args.input.as_deref().unwrap_or(Path::new(default)),
            &scorekit_data::Options {
                offline: args.runtime.offline,
                quiet: args.json,
            },
        )?
        .path;
        let texts = if is_judge {
            let mut questions =
                scorekit_suites::story::parse_questions(&scorekit_io::read_jsonl(&input)?)?;
            if let Some(n) = args.limit {
                questions.truncate(n.max(1));
            }
            pairs = questions
                .iter()
                .flat_map(|q| q.options.iter().map(move |o| q.pair(o)))
                .collect();
            pairs.iter().map(|(a, b)| format!("{a}\t{b}")).collect()
        } else {
            let mut t = read_corpus(&input)?;
            if let Some(n) = args.limit {
                t.truncate(n.max(1));
            }
            t
        };
        corpora.push((
            CorpusRef {
                label: "corpus".into(),
                source: input.display().to_string(),
                file: None,
                sentences: texts.len(),
                sha256: report::corpus_sha256(&texts),
            },
            texts,
        ));
    } else {
        let tok = TextTokenizer::load(
            &model.file("tokenizer.json"),
            cfg.max_tokens,
            Some(cfg.pad_id),
        )?;
        for &n in &args.synthetic {
            let s = synthetic_sentences(
                &tok,
                n,
                args.limit.unwrap_or(DEFAULT_SYNTHETIC_SENTENCES).max(1),
            )?;
            corpora.push((
                CorpusRef {
                    label: format!("synthetic-{n}"),
                    source: format!("synthetic: {n} tokens a sentence from the model's vocabulary"),
                    file: None,
                    sentences: s.len(),
                    sha256: report::corpus_sha256(&s),
                },
                s,
            ));
        }
    }
    let model_sha256 = weights_sha256(&model)?;
    let peers = match &args.compare {
        None => None,
        Some(path) => {
            let doc = read_compare(path)?;
            if doc.model_sha256 != model_sha256 {
                return Err(refuse(
                    path,
                    format!(
                        "it measured another model (weights sha256 {}, {}; this one is {})",
                        doc.model_sha256, doc.model, model_sha256
                    ),
                ));
            }
            let shared = doc
                .corpora
                .iter()
                .filter(|c| corpora.iter().any(|(o, _)| o.label == c.label))
                .collect::<Vec<_>>();
            if shared.is_empty() {
                return Err(refuse(
                    path,
                    format!(
                    "it measured none of this grid's sentence lists (it has {}; this grid has {})",
                    doc.corpora.iter().map(|c| c.label.as_str()).collect::<Vec<_>>().join(", "),
                    corpora.iter().map(|(c, _)| c.label.as_str()).collect::<Vec<_>>().join(", ")
                ),
                ));
            }
            for c in shared {
                let (ours, _) = corpora
                    .iter()
                    .find(|(o, _)| o.label == c.label)
                    .expect("filtered above");
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
            Some((path.clone(), doc))
        }
    };

    // The cells, in grid order.
    let dtypes: Vec<Option<CliDType>> = if args.runtime.dtype.is_empty() {
        vec![None]
    } else {
        args.runtime.dtype.iter().copied().map(Some).collect()
    };
    let lengths: Vec<Option<usize>> = if args.runtime.max_length.is_empty() {
        vec![None]
    } else {
        args.runtime.max_length.iter().copied().map(Some).collect()
    };
    let mut variants: Vec<(Option<CliDType>, bool)> = dtypes.iter().map(|&d| (d, false)).collect();
    if args.runtime.quantize {
        variants.push((Some(CliDType::F32), true));
    }
    let mut specs = Vec::new();
    for (ci, (c, _)) in corpora.iter().enumerate() {
        let synthetic_len = c
            .label
            .strip_prefix("synthetic-")
            .and_then(|n| n.parse::<usize>().ok());
        for &(dtype, int8) in &variants {
            for &max_length in &lengths {
                // A synthetic length above a truncation length would measure truncated copies;
                // without --max-length, synthetic sentences are truncated at their own length.
                let max_length = match (synthetic_len, max_length) {
                    (Some(n), Some(m)) if n > m => continue,
                    (Some(n), None) => Some(n),
                    (_, m) => m,
                };
                for &batch_tokens in &args.runtime.batch_tokens {
                    specs.push(Spec {
                        corpus: ci,
                        dtype,
                        int8,
                        max_length,
                        batch_tokens,
                    });
                }
            }
        }
    }
    if specs.is_empty() {
        return Err(Error::usage(
            "--synthetic: every length is above every --max-length; no cell to measure",
        ));
    }
    let warmup = args.warmup.unwrap_or(DEFAULT_WARMUP);
    let peaks = Peaks {
        device: device.clone(),
        threads: rayon::current_num_threads(),
        f32: OnceCell::new(),
        bf16_amx: OnceCell::new(),
        bf16_dot: OnceCell::new(),
    };
    let progress = scorekit_core::progress::bar(specs.len() as u64, "bench cells", args.json);
    let mut cells = Vec::new();
    for spec in &specs {
        let (c, texts) = &corpora[spec.corpus];
        progress.set_message(format!("{} bt {}", c.label, spec.batch_tokens));
        let cell = if is_judge {
            measure_judge(args, &model, &pairs, &c.label, spec, warmup, &peaks)?
        } else {
            measure_embedder(args, &model, texts, &c.label, spec, warmup, &peaks)?
        };
        cells.push(cell);
        progress.inc(1);
    }
    progress.finish_and_clear();

    let doc = BenchDoc {
        tool: format!("scorekit {}", env!("CARGO_PKG_VERSION")),
        model: model_spec,
        model_sha256,
        device: runtime::device_name(&device),
        cpu: device.is_cpu().then(cpu_model_name).flatten(),
        gpu: (!device.is_cpu()).then(|| runtime::device_name(&device)),
        threads: peaks.threads,
        unit: if is_judge { "pairs" } else { "sentences" }.into(),
        repeats: args.repeats,
        warmup,
        corpora: corpora
            .iter()
            .map(|(c, _)| CorpusRef {
                file: (!is_judge).then(|| format!("{}.jsonl", c.label)),
                ..c.clone()
            })
            .collect(),
        cells,
    };
    let joined = match &peers {
        None => Vec::new(),
        Some((path, p)) => report::join_peers(&doc, p).map_err(|why| refuse(path, why))?,
    };
    let mut all: Vec<&BenchCell> = doc.cells.iter().collect();
    all.extend(joined.iter().map(|j| &j.peer));
    let md = report::report_md(&doc, &joined);
    let json = serde_json::to_string_pretty(&doc)
        .map_err(|e| Error::Internal(anyhow::anyhow!("bench.json: {e}")))?;
    if let Some(dir) = &args.out {
        std::fs::create_dir_all(dir)
            .map_err(|e| InputError::file(dir, format!("cannot create: {e}")))?;
        let w = |name: &str, body: &[u8]| scorekit_report::atomic_write(&dir.join(name), body);
        w("bench.json", format!("{json}\n").as_bytes())?;
        let csv = report::csv(&all).map_err(|e| Error::Internal(e.context("bench.csv")))?;
        w("bench.csv", csv.as_bytes())?;
        w("report.md", md.as_bytes())?;
        w(
            "throughput.svg",
            report::throughput_svg(&all, &doc.unit).as_bytes(),
        )?;
        w("latency.svg", report::latency_svg(&all).as_bytes())?;
        if !is_judge {
            for ((c, texts), r) in corpora.iter().zip(&doc.corpora) {
                let body: String = texts
                    .iter()
                    .map(|t| format!("{}\n", serde_json::json!({ "text": t })))
                    .collect();
                let name = r.file.clone().unwrap_or_else(|| c.label.clone());
                w(&name, body.as_bytes())?;
            }
        }
    }
    if args.json {
        println!("{json}");
    } else {
        print!("{md}");
    }
    Ok(())
}
