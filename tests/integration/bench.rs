//! `scorekit bench` grids on the real all-MiniLM-L6-v2 (fixtures-cache/, from
//! scripts/setup-test-fixtures.sh): cells and their fields, token counts against the tokenizers
//! crate, synthetic lengths, the SVG charts, `--compare` joins and refusals, and axis values
//! refused before any model is loaded. Small corpora and one or two repeats: seconds in all.

use crate::common::{read_json, repo, scorekit, stderr, test_data, write};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Output;

fn minilm() -> PathBuf {
    let p = repo().join("fixtures-cache/all-MiniLM-L6-v2");
    assert!(
        p.is_dir(),
        "{} is missing: run scripts/setup-test-fixtures.sh first",
        p.display()
    );
    p
}

/// The first `n` endings of the real Possible Stories endings file, one a line.
fn endings(dir: &Path, n: usize) -> (PathBuf, Vec<String>) {
    let src = test_data("possible-stories:endings", "dataset/endings.jsonl");
    let mut out = Vec::new();
    for line in std::fs::read_to_string(src).unwrap().lines() {
        let v: Value = serde_json::from_str(line).unwrap();
        for e in v["endings"].as_array().unwrap() {
            let t = e["ending"].as_str().unwrap().trim().to_string();
            if !t.is_empty() && out.len() < n {
                out.push(t.replace('\n', " "));
            }
        }
    }
    assert_eq!(out.len(), n);
    (write(dir, "corpus.txt", out.join("\n") + "\n"), out)
}

fn bench(args: &[&str]) -> Output {
    scorekit()
        .args(["bench", "--offline", "--device", "cpu"])
        .args(args)
        .output()
        .unwrap()
}

fn tokens(texts: &[String], max_length: usize) -> Vec<usize> {
    let mut t = tokenizers::Tokenizer::from_file(minilm().join("tokenizer.json")).unwrap();
    t.with_padding(None);
    t.with_truncation(Some(tokenizers::TruncationParams {
        max_length,
        ..Default::default()
    }))
    .unwrap();
    texts
        .iter()
        .map(|s| t.encode(s.as_str(), true).unwrap().len())
        .collect()
}

/// A well-formedness check of XML (elements balanced and named alike, attributes quoted,
/// entities known), returning the root element's name and every element's name in order.
fn parse_xml(s: &str) -> Result<Vec<String>, String> {
    let mut stack: Vec<String> = Vec::new();
    let mut names = Vec::new();
    let mut rest = s.trim_start();
    let check_text = |t: &str| -> Result<(), String> {
        let mut r = t;
        while let Some(i) = r.find('&') {
            let end = r[i..].find(';').ok_or(format!("bare & in {t:?}"))?;
            let ent = &r[i + 1..i + end];
            if !["amp", "lt", "gt", "quot", "apos"].contains(&ent) && !ent.starts_with('#') {
                return Err(format!("unknown entity &{ent};"));
            }
            r = &r[i + end..];
        }
        Ok(())
    };
    while !rest.is_empty() {
        if let Some(after) = rest.strip_prefix('<') {
            let end = after.find('>').ok_or("unclosed tag")?;
            let tag = &after[..end];
            rest = &after[end + 1..];
            if let Some(name) = tag.strip_prefix('/') {
                let open = stack.pop().ok_or(format!("</{name}> closes nothing"))?;
                if open != name.trim() {
                    return Err(format!("<{open}> closed by </{name}>"));
                }
                continue;
            }
            let self_closing = tag.ends_with('/');
            let body = tag.trim_end_matches('/');
            let name: String = body.chars().take_while(|c| !c.is_whitespace()).collect();
            if name.is_empty() || stack.is_empty() && !names.is_empty() {
                return Err(format!("bad or second root element <{tag}>"));
            }
            // Attributes: name="value" pairs, values without < or a bare &.
            let mut attrs = body[name.len()..].trim();
            while !attrs.is_empty() {
                let eq = attrs
                    .find("=\"")
                    .ok_or(format!("unquoted attribute in <{tag}>"))?;
                let close = attrs[eq + 2..]
                    .find('"')
                    .ok_or(format!("unterminated attribute in <{tag}>"))?;
                let value = &attrs[eq + 2..eq + 2 + close];
                if value.contains('<') {
                    return Err(format!("< in an attribute of <{tag}>"));
                }
                check_text(value)?;
                attrs = attrs[eq + 2 + close + 1..].trim_start();
            }
            names.push(name.clone());
            if !self_closing {
                stack.push(name);
            }
        } else {
            let end = rest.find('<').unwrap_or(rest.len());
            check_text(&rest[..end])?;
            if stack.is_empty() && !rest[..end].trim().is_empty() {
                return Err("text outside the root".into());
            }
            rest = &rest[end..];
        }
    }
    if let Some(open) = stack.pop() {
        return Err(format!("<{open}> never closed"));
    }
    Ok(names)
}

#[test]
fn parse_xml_rejects_broken_svg() {
    assert!(parse_xml("<svg><g><title>a &amp; b</title></g></svg>").is_ok());
    for bad in [
        "<svg><g></svg>",
        "<svg>a & b</svg>",
        "<svg x=1/>",
        "<svg/><svg/>",
        "<svg><t>x</u></svg>",
    ] {
        assert!(parse_xml(bad).is_err(), "{bad}");
    }
}

const FIELDS: &[&str] = &[
    "engine",
    "corpus",
    "batch_tokens",
    "max_length",
    "dtype",
    "sentences",
    "real_tokens",
    "padded_tokens",
    "batches",
    "repeats_s",
    "sentences_per_s",
    "sentences_per_s_min",
    "sentences_per_s_max",
    "real_tokens_per_s",
    "padded_tokens_per_s",
    "latency_ms",
    "tokenize_s",
    "model_s",
    "load_s",
    "first_batch_s",
    "peak_rss_bytes",
    "gflop_real",
    "gflop_padded",
    "padded_equivalent_gflops",
];

/// A 2×2 grid (batch tokens × max length) on 20 real endings: four cells in grid order, every
/// field, ordered percentiles, real tokens equal to the tokenizers crate's count, the CSV, the
/// report and two SVGs that parse and show every cell; then `--compare` joins a peers file by
/// axes and refuses one of another model or corpus before measuring.
#[test]
fn grid_writes_four_cells_charts_and_joins_peers() {
    let t = tempfile::tempdir().unwrap();
    let (corpus, texts) = endings(t.path(), 20);
    let out = t.path().join("grid");
    let model = minilm();
    let (m, c, o) = (
        model.to_str().unwrap(),
        corpus.to_str().unwrap(),
        out.to_str().unwrap(),
    );
    let axes = [
        "--batch-tokens",
        "256,2048",
        "--max-length",
        "12,128",
        "--repeats",
        "2",
        "--warmup",
        "1",
    ];
    let r = bench(&[&["--model", m, "--input", c, "--out", o][..], &axes[..]].concat());
    assert!(r.status.success(), "{}", stderr(&r));
    let doc = read_json(&out.join("bench.json"));
    assert_eq!(doc["device"], "cpu");
    assert_eq!(doc["unit"], "sentences");
    assert!(doc["threads"].as_u64().unwrap() >= 1);
    let cells = doc["cells"].as_array().unwrap();
    let got: Vec<(u64, u64)> = cells
        .iter()
        .map(|c| {
            (
                c["max_length"].as_u64().unwrap(),
                c["batch_tokens"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(got, vec![(12, 256), (12, 2048), (128, 256), (128, 2048)]);
    for cell in cells {
        for f in FIELDS {
            assert!(!cell[f].is_null(), "{f} missing in {cell}");
        }
        let lat = &cell["latency_ms"];
        let (p50, p90, p99) = (
            lat["p50"].as_f64().unwrap(),
            lat["p90"].as_f64().unwrap(),
            lat["p99"].as_f64().unwrap(),
        );
        assert!(0.0 < p50 && p50 <= p90 && p90 <= p99, "{lat}");
        let batches = cell["batches"].as_u64().unwrap();
        assert_eq!(lat["n"].as_u64().unwrap(), 2 * batches, "{cell}");
        assert_eq!(cell["repeats_s"].as_array().unwrap().len(), 2);
        assert_eq!(cell["sentences"], 20);
        let ml = cell["max_length"].as_u64().unwrap() as usize;
        let want: usize = tokens(&texts, ml).iter().sum();
        assert_eq!(
            cell["real_tokens"].as_u64().unwrap() as usize,
            want,
            "{cell}"
        );
        assert!(cell["padded_tokens"].as_u64().unwrap() as usize >= want);
        let (lo, med, hi) = (
            cell["sentences_per_s_min"].as_f64().unwrap(),
            cell["sentences_per_s"].as_f64().unwrap(),
            cell["sentences_per_s_max"].as_f64().unwrap(),
        );
        assert!(0.0 < lo && lo <= med && med <= hi, "{cell}");
        assert!(cell["tokenize_s"].as_f64().unwrap() > 0.0);
        assert!(cell["first_batch_s"].as_f64().unwrap() >= cell["load_s"].as_f64().unwrap());
        assert!(cell["peak_rss_bytes"].as_u64().unwrap() > 20 << 20);
    }
    // Truncation at 12 tokens makes the short cells' real tokens 12 at most a sentence.
    assert!(cells[0]["real_tokens"].as_u64().unwrap() <= 12 * 20);
    let csv = std::fs::read_to_string(out.join("bench.csv")).unwrap();
    assert_eq!(csv.lines().count(), 5, "{csv}");
    assert!(csv.starts_with("engine,corpus,batch_tokens,max_length,dtype,"));
    let md = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(
        md.contains("## Throughput") && md.contains("## Latency"),
        "{md}"
    );
    for (svg, marker) in [
        ("throughput.svg", "<circle class=\"cell\""),
        ("latency.svg", "<g class=\"cell\""),
    ] {
        let s = std::fs::read_to_string(out.join(svg)).unwrap();
        let names = parse_xml(&s).unwrap_or_else(|e| panic!("{svg}: {e}"));
        assert_eq!(names[0], "svg", "{svg}");
        assert!(s.contains("xmlns=\"http://www.w3.org/2000/svg\""));
        assert_eq!(s.matches(marker).count(), 4, "{svg}: one mark per cell");
    }
    let written: Vec<String> = std::fs::read_to_string(out.join("corpus.jsonl"))
        .unwrap()
        .lines()
        .map(|l| {
            serde_json::from_str::<Value>(l).unwrap()["text"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect();
    assert_eq!(written, texts);

    // A peers file in the same schema: one cell on the grid's axes, one on axes it lacks.
    let mut peers = doc.clone();
    peers["tool"] = "peers.py (test)".into();
    let mut st = cells[1].clone();
    st["engine"] = "sentence-transformers".into();
    st["sentences_per_s"] = (cells[1]["sentences_per_s"].as_f64().unwrap() / 4.0).into();
    let mut off = cells[1].clone();
    off["engine"] = "onnxruntime".into();
    off["batch_tokens"] = 999.into();
    peers["cells"] = Value::Array(vec![st, off]);
    let pfile = write(t.path(), "peers.json", peers.to_string());
    let one = [
        "--batch-tokens",
        "2048",
        "--max-length",
        "12",
        "--repeats",
        "1",
    ];
    let out2 = t.path().join("joined");
    let r = bench(
        &[
            &["--model", m, "--input", c, "--out", out2.to_str().unwrap()][..],
            &one[..],
            &["--compare", pfile.to_str().unwrap()][..],
        ]
        .concat(),
    );
    assert!(r.status.success(), "{}", stderr(&r));
    let md = std::fs::read_to_string(out2.join("report.md")).unwrap();
    let peer_rows: Vec<&str> = md
        .lines()
        .filter(|l| l.starts_with("| sentence-transformers") || l.starts_with("| onnxruntime"))
        .collect();
    assert_eq!(peer_rows.len(), 1, "{md}");
    assert!(
        peer_rows[0].contains("| 2048 ") && peer_rows[0].contains("| 12 "),
        "{md}"
    );
    let csv = std::fs::read_to_string(out2.join("bench.csv")).unwrap();
    assert_eq!(csv.lines().count(), 3, "{csv}");
    assert!(csv
        .lines()
        .any(|l| l.starts_with("sentence-transformers,corpus,2048,12,")));

    // Another model, another corpus: refused, exit 2, before a cell is measured.
    for (field, value, says) in [
        ("model_sha256", "0".repeat(64), "another model"),
        ("corpora", String::new(), "another corpus"),
    ] {
        let mut bad = peers.clone();
        if field == "corpora" {
            bad["corpora"][0]["sha256"] = "f".repeat(64).into();
        } else {
            bad[field] = value.into();
        }
        let f = write(t.path(), "bad.json", bad.to_string());
        let out3 = t.path().join("refused");
        let r = bench(
            &[
                &["--model", m, "--input", c, "--out", out3.to_str().unwrap()][..],
                &one[..],
                &["--compare", f.to_str().unwrap()][..],
            ]
            .concat(),
        );
        assert_eq!(r.status.code(), Some(2), "{}", stderr(&r));
        assert!(stderr(&r).contains(says), "{}", stderr(&r));
        assert!(!out3.exists(), "nothing written for a refused file");
    }
}

/// `--synthetic 8,20`: sentences of exactly 8 and 20 tokens by the tokenizers crate's count,
/// built from the model's vocabulary, so no batch holds padding.
#[test]
fn synthetic_sentences_have_the_asked_token_lengths() {
    let t = tempfile::tempdir().unwrap();
    let out = t.path().join("syn");
    let model = minilm();
    let r = bench(&[
        "--model",
        model.to_str().unwrap(),
        "--synthetic",
        "8,20",
        "--limit",
        "10",
        "--batch-tokens",
        "400",
        "--repeats",
        "1",
        "--warmup",
        "0",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(r.status.success(), "{}", stderr(&r));
    let doc = read_json(&out.join("bench.json"));
    let cells = doc["cells"].as_array().unwrap();
    assert_eq!(cells.len(), 2);
    for (cell, n) in cells.iter().zip([8usize, 20]) {
        assert_eq!(cell["corpus"], format!("synthetic-{n}"));
        assert_eq!(cell["real_tokens"].as_u64().unwrap() as usize, 10 * n);
        assert_eq!(cell["padded_tokens"], cell["real_tokens"], "{cell}");
        let texts: Vec<String> = std::fs::read_to_string(out.join(format!("synthetic-{n}.jsonl")))
            .unwrap()
            .lines()
            .map(|l| {
                serde_json::from_str::<Value>(l).unwrap()["text"]
                    .as_str()
                    .unwrap()
                    .to_string()
            })
            .collect();
        assert_eq!(texts.len(), 10);
        assert_eq!(tokens(&texts, 512), vec![n; 10], "{texts:?}");
        assert!(texts.windows(2).any(|w| w[0] != w[1]), "sentences vary");
    }
}

/// Axis values that make no sense are refused, exit 2, naming the flag and the value, before
/// any model is loaded: the model folder here has a corrupt weight file, so a load would fail
/// with another message.
#[test]
fn bad_axis_values_are_refused_before_loading() {
    let t = tempfile::tempdir().unwrap();
    let broken = t.path().join("broken");
    std::fs::create_dir(&broken).unwrap();
    for f in ["config.json", "tokenizer.json"] {
        std::fs::copy(minilm().join(f), broken.join(f)).unwrap();
    }
    write(&broken, "model.safetensors", "not safetensors");
    let corpus = write(t.path(), "c.txt", "one sentence\nanother one\n");
    let (m, c) = (broken.to_str().unwrap(), corpus.to_str().unwrap());
    let mut cases: Vec<(Vec<&str>, &str)> = vec![
        (vec!["--batch-tokens", "2048,0"], "--batch-tokens 0"),
        (vec!["--max-length", "128,100000"], "--max-length 100000"),
        (vec!["--max-length", "0"], "--max-length 0"),
        (vec!["--synthetic", "2"], "--synthetic 2"),
        (vec!["--synthetic", "32,9999"], "--synthetic 9999"),
        (vec!["--dtype", "f32,f64"], "f64"),
        (vec!["--repeats", "0"], "--repeats"),
        (vec!["--engine", "native", "--dtype", "f16"], "--dtype f16"),
    ];
    use scorekit::runtime::kernels::{amx_available, bf16dot_available};
    if !(amx_available() || bf16dot_available()) {
        cases.push((
            vec!["--engine", "native", "--dtype", "bf16"],
            "--dtype bf16",
        ));
    }
    if !scorekit::runtime::kernels::int8_available() {
        cases.push((vec!["--quantize", "--out", "x"], "--quantize"));
    }
    for (extra, says) in cases {
        let r = bench(&[&["--model", m, "--input", c][..], &extra[..]].concat());
        assert_eq!(r.status.code(), Some(2), "{extra:?}: {}", stderr(&r));
        assert!(stderr(&r).contains(says), "{extra:?}: {}", stderr(&r));
        assert!(
            !stderr(&r).contains("safetensors"),
            "{extra:?} loaded: {}",
            stderr(&r)
        );
    }
    // The same folder with sound axes does try to load, and fails on the weights.
    let r = bench(&["--model", m, "--input", c, "--batch-tokens", "64,128"]);
    assert_ne!(r.status.code(), Some(0));
    assert!(stderr(&r).contains("model.safetensors"), "{}", stderr(&r));
}

/// `--judge` grids count pairs: 3 dev questions × 4 options on a tiny BERT judge, two batch
/// budgets, two cells of 12 pairs with ordered percentiles.
#[test]
fn judge_grid_counts_pairs() {
    let t = tempfile::tempdir().unwrap();
    let judge = t.path().join("judge");
    crate::common::tiny_judge::build_judge("bert_mc", &judge, true);
    let dev = test_data("possible-stories:dev", "dataset/dev.jsonl");
    let out = t.path().join("jgrid");
    let r = bench(&[
        "--judge",
        judge.to_str().unwrap(),
        "--input",
        dev.to_str().unwrap(),
        "--limit",
        "3",
        "--batch-tokens",
        "128,4096",
        "--repeats",
        "2",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(r.status.success(), "{}", stderr(&r));
    let doc = read_json(&out.join("bench.json"));
    assert_eq!(doc["unit"], "pairs");
    let cells = doc["cells"].as_array().unwrap();
    assert_eq!(cells.len(), 2);
    for (cell, bt) in cells.iter().zip([128, 4096]) {
        assert_eq!(cell["batch_tokens"], bt);
        assert_eq!(cell["sentences"], 12, "{cell}");
        let l = &cell["latency_ms"];
        assert!(l["p50"].as_f64().unwrap() <= l["p90"].as_f64().unwrap());
        assert!(l["p90"].as_f64().unwrap() <= l["p99"].as_f64().unwrap());
        assert!(cell["sentences_per_s"].as_f64().unwrap() > 0.0);
    }
    assert!(cells[0]["batches"].as_u64() > cells[1]["batches"].as_u64());
    let md = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(md.contains("pairs/s"), "{md}");
}

/// A single-cell `--judge` run states its utilisation against the peak of the precision the
/// judge computes in: the f32 loop for f32, the bf16 tile loop for the bf16 AMX encoder and the
/// `vdpbf16ps` loop for the AVX512-BF16 one (not the f32 loop, which a bf16 pass can exceed),
/// none where nothing measures that precision.
#[test]
fn judge_bench_measures_against_its_own_precision_peak() {
    let t = tempfile::tempdir().unwrap();
    let judge = t.path().join("judge");
    crate::common::tiny_judge::build_judge("bert_mc", &judge, true);
    let dev = test_data("possible-stories:dev", "dataset/dev.jsonl");
    let run = |dtype: &str| {
        let r = bench(&[
            "--judge",
            judge.to_str().unwrap(),
            "--input",
            dev.to_str().unwrap(),
            "--limit",
            "2",
            "--repeats",
            "1",
            "--dtype",
            dtype,
            "--json",
        ]);
        assert!(r.status.success(), "{dtype}: {}", stderr(&r));
        serde_json::from_slice::<serde_json::Value>(&r.stdout).unwrap()
    };
    let f32_run = run("f32");
    assert_eq!(f32_run["pairs"], 8, "{f32_run}");
    let isa = f32_run["peak_isa"]
        .as_str()
        .unwrap_or_else(|| panic!("{f32_run}"));
    assert_ne!(isa, "amx-bf16", "{f32_run}");
    let util = f32_run["real_token_utilisation"].as_f64().unwrap();
    let expect = f32_run["gflops"].as_f64().unwrap() / f32_run["peak_gflops"].as_f64().unwrap();
    assert!((util - expect).abs() < 1e-12 && util > 0.0, "{f32_run}");
    let bf16 = run("bf16");
    let engine = bf16["engine"].as_str().unwrap();
    let measured = |isa: &str| {
        assert_eq!(bf16["peak_isa"], isa, "{bf16}");
        let util = bf16["real_token_utilisation"].as_f64().unwrap();
        let expect = bf16["gflops"].as_f64().unwrap() / bf16["peak_gflops"].as_f64().unwrap();
        assert!((util - expect).abs() < 1e-12 && util > 0.0, "{bf16}");
    };
    if engine.contains("bf16 AMX") {
        measured("amx-bf16");
    } else if engine.contains("AVX512-BF16") {
        measured("avx512-bf16");
    } else if engine.contains("widened to f32") {
        measured("avx512");
    } else {
        // candle's bf16: no probe measures it, so no figure is made up.
        assert!(bf16["peak_gflops"].is_null(), "{bf16}");
        assert!(bf16["real_token_utilisation"].is_null(), "{bf16}");
    }
}
