//! A grid: every combination of sentence list (the corpus, or synthetic sentences of each
//! `--synthetic` length), precision, `--max-length` and `--batch-tokens`, each cell timed by
//! the one loop ([`crate::measure`]); bench.json, and with `--out` the CSV, report.md, the
//! charts and the measured sentences; `--compare` joins a peers file by axes.

use crate::corpus::{synthetic_sentences, Input, Items, DEFAULT_SYNTHETIC_SENTENCES};
use crate::doc::{corpus_sha256, BenchCell, BenchDoc, CorpusRef};
use crate::measure::{measure, Timing};
use crate::peak::Peaks;
use crate::peers::{join_peers, read_peers, refuse, Joined};
use crate::settings::Settings;
use crate::subject;
use crate::variant::Variant;
use crate::{charts, table};
use scorekit_core::error::{Error, InputError, Result};
use scorekit_core::process::cpu_model_name;
use scorekit_runtime::{self as runtime, ResolvedModel, TextTokenizer};
use std::path::Path;

/// One cell to measure: indices into the sentence lists and the precisions, and two axes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct CellSpec {
    list: usize,
    variant: usize,
    max_length: Option<usize>,
    batch_tokens: usize,
}

/// Run the grid and return what to print: bench.json with `--json`, else report.md.
pub fn run(
    settings: &Settings,
    model: &ResolvedModel,
    input: Option<Input>,
    variants: &[Variant],
) -> Result<String> {
    let lists = sentence_lists(settings, model, input)?;
    let model_sha256 = weights_sha256(model)?;
    let refs: Vec<CorpusRef> = lists.iter().map(|(c, _)| c.clone()).collect();
    let peers = match &settings.compare {
        Some(path) => Some((path, read_peers(path, &model_sha256, &refs)?)),
        None => None,
    };
    let specs = cells(settings, &refs, variants.len())?;
    let device = &variants[0].device;
    let peaks = Peaks::new(device);
    let progress = scorekit_core::progress::bar(specs.len() as u64, "bench cells", settings.json);
    let mut cells = Vec::new();
    for spec in &specs {
        let (c, items) = &lists[spec.list];
        let variant = &variants[spec.variant];
        progress.set_message(format!("{} bt {}", c.label, spec.batch_tokens));
        let timing = Timing {
            batch_tokens: spec.batch_tokens,
            warmup: settings.warmup(),
            repeats: settings.repeats,
            keep_rows: false,
        };
        let load = || subject::load(model, items, variant, spec.max_length);
        let m = measure(load, timing)?;
        let peak = peaks.of(variant.dtype, variant.int8, &m.engine);
        cells.push(m.cell(&c.label, variant.label(), peak));
        progress.inc(1);
    }
    progress.finish_and_clear();
    let doc = BenchDoc {
        tool: format!("scorekit {}", env!("CARGO_PKG_VERSION")),
        model: settings.model.clone(),
        model_sha256,
        device: runtime::device_name(device),
        cpu: device.is_cpu().then(cpu_model_name).flatten(),
        gpu: (!device.is_cpu()).then(|| runtime::device_name(device)),
        threads: peaks.threads(),
        unit: if settings.judge { "pairs" } else { "sentences" }.into(),
        repeats: settings.repeats,
        warmup: settings.warmup(),
        corpora: refs
            .into_iter()
            .map(|c| CorpusRef {
                file: (!settings.judge).then(|| format!("{}.jsonl", c.label)),
                ..c
            })
            .collect(),
        cells,
    };
    let joined = match &peers {
        None => Vec::new(),
        Some((path, p)) => join_peers(&doc, p).map_err(|why| refuse(path, why))?,
    };
    let md = table::report_md(&doc, &joined);
    let json = serde_json::to_string_pretty(&doc)
        .map_err(|e| Error::Internal(anyhow::anyhow!("bench.json: {e}")))?;
    if let Some(dir) = &settings.out {
        write_out(dir, &doc, &joined, &json, &md, &lists)?;
    }
    Ok(if settings.json {
        format!("{json}\n")
    } else {
        md
    })
}

/// The sentence lists: the corpus (or the judge's pairs) as read, or one synthetic list per
/// `--synthetic` length from the model's own vocabulary.
fn sentence_lists(
    settings: &Settings,
    model: &ResolvedModel,
    input: Option<Input>,
) -> Result<Vec<(CorpusRef, Items)>> {
    if let Some(input) = input {
        let lines = input.items.lines();
        let corpus = CorpusRef {
            label: "corpus".into(),
            source: input.source.display().to_string(),
            file: None,
            sentences: lines.len(),
            sha256: corpus_sha256(&lines),
        };
        return Ok(vec![(corpus, input.items)]);
    }
    let (_, cfg) = runtime::models::read_config(&model.file("config.json"), "bert")?;
    let tok = TextTokenizer::load(
        &model.file("tokenizer.json"),
        cfg.max_tokens,
        Some(cfg.pad_id),
    )?;
    let count = settings.limit.unwrap_or(DEFAULT_SYNTHETIC_SENTENCES).max(1);
    let mut lists = Vec::new();
    for &n in &settings.synthetic {
        let s = synthetic_sentences(&tok, n, count)?;
        let corpus = CorpusRef {
            label: format!("synthetic-{n}"),
            source: format!("synthetic: {n} tokens a sentence from the model's vocabulary"),
            file: None,
            sentences: s.len(),
            sha256: corpus_sha256(&s),
        };
        lists.push((corpus, Items::Texts(s)));
    }
    Ok(lists)
}

/// The cells in grid order: sentence list, precision, max length, batch tokens. A synthetic
/// length above a truncation length would measure truncated copies, so that cell is left out;
/// without `--max-length`, synthetic sentences are truncated at their own length.
fn cells(settings: &Settings, lists: &[CorpusRef], variants: usize) -> Result<Vec<CellSpec>> {
    let lengths: Vec<Option<usize>> = if settings.max_lengths.is_empty() {
        vec![None]
    } else {
        settings.max_lengths.iter().copied().map(Some).collect()
    };
    let mut specs = Vec::new();
    for (list, c) in lists.iter().enumerate() {
        let synthetic_len = c
            .label
            .strip_prefix("synthetic-")
            .and_then(|n| n.parse::<usize>().ok());
        for variant in 0..variants {
            for &max_length in &lengths {
                let max_length = match (synthetic_len, max_length) {
                    (Some(n), Some(m)) if n > m => continue,
                    (Some(n), None) => Some(n),
                    (_, m) => m,
                };
                for &batch_tokens in &settings.batch_tokens {
                    specs.push(CellSpec {
                        list,
                        variant,
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
    Ok(specs)
}

/// The sha256 of a model's weight file (its identity in bench.json).
fn weights_sha256(model: &ResolvedModel) -> Result<String> {
    let path = model.weights_file()?;
    scorekit_report::sha256_file(&path)
        .map_err(|e| InputError::file(&path, format!("cannot read: {e}")).into())
}

/// The files of `--out`: bench.json, bench.csv, report.md, the two charts, and an embedder's
/// sentence lists (`{"text"}` lines, which scripts/bench/peers.py reads).
fn write_out(
    dir: &Path,
    doc: &BenchDoc,
    joined: &[Joined],
    json: &str,
    md: &str,
    lists: &[(CorpusRef, Items)],
) -> Result<()> {
    std::fs::create_dir_all(dir)
        .map_err(|e| InputError::file(dir, format!("cannot create: {e}")))?;
    let w = |name: &str, body: &[u8]| scorekit_report::atomic_write(&dir.join(name), body);
    let mut all: Vec<&BenchCell> = doc.cells.iter().collect();
    all.extend(joined.iter().map(|j| &j.peer));
    w("bench.json", format!("{json}\n").as_bytes())?;
    let csv = table::csv(&all).map_err(|e| Error::Internal(e.context("bench.csv")))?;
    w("bench.csv", csv.as_bytes())?;
    w("report.md", md.as_bytes())?;
    w(
        "throughput.svg",
        charts::throughput_svg(&all, &doc.unit).as_bytes(),
    )?;
    w("latency.svg", charts::latency_svg(&all).as_bytes())?;
    for ((_, items), r) in lists.iter().zip(&doc.corpora) {
        let (Items::Texts(texts), Some(name)) = (items, &r.file) else {
            continue;
        };
        let body: String = texts
            .iter()
            .map(|t| format!("{}\n", serde_json::json!({ "text": t })))
            .collect();
        w(name, body.as_bytes())?;
    }
    Ok(())
}
