//! `scorekit embed`: sentences in (JSONL `{"id", "text"}` or plain text, one per line), one
//! embedding per sentence out (`.npy`, `.safetensors` or `.jsonl`), plus `<output>.meta.json`
//! recording the model id, revision and weight sha256, the input's sha256 and the ids in order.

use crate::cli::EmbedArgs;
use crate::model_runtime::ModelRuntime;
use crate::settings::embed::EmbedFlags;
use scorekit_core::error::{Error, Result};
use scorekit_io::read_sentences;
use scorekit_report::{atomic_write, InputFile};
use scorekit_runtime::weights::f32_safetensors_header;
use scorekit_runtime::{self as runtime, Embedder, EMBEDDER_FILES};
use std::path::Path;

/// Output formats, by extension.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Format {
    Npy,
    Safetensors,
    Jsonl,
}

fn format_of(path: &Path) -> Result<Format> {
    match path
        .extension()
        .and_then(|e| e.to_str())
        .map(str::to_ascii_lowercase)
        .as_deref()
    {
        Some("npy") => Ok(Format::Npy),
        Some("safetensors") => Ok(Format::Safetensors),
        Some("jsonl") => Ok(Format::Jsonl),
        _ => Err(Error::usage(format!(
            "--output {}: the extension must be .npy, .safetensors or .jsonl",
            path.display()
        ))),
    }
}

fn safetensors_bytes(
    rows: &[Vec<f32>],
    dim: usize,
    meta: &serde_json::Map<String, serde_json::Value>,
) -> Vec<u8> {
    let bytes = rows.len() * dim * 4;
    // safetensors metadata values must be strings.
    let meta: serde_json::Map<String, serde_json::Value> = meta
        .iter()
        .map(|(k, v)| {
            let s = match v {
                serde_json::Value::String(s) => s.clone(),
                other => other.to_string(),
            };
            (k.clone(), serde_json::Value::String(s))
        })
        .collect();
    let shape = [rows.len(), dim];
    let mut out =
        f32_safetensors_header(&[("embeddings", &shape)], serde_json::Value::Object(meta));
    out.reserve(bytes);
    for r in rows {
        for x in r {
            out.extend_from_slice(&x.to_le_bytes());
        }
    }
    out
}

/// The path of the provenance file written beside an output.
pub fn meta_path(output: &Path) -> std::path::PathBuf {
    let mut s = output.as_os_str().to_os_string();
    s.push(".meta.json");
    s.into()
}

/// Refuse to overwrite any of `paths` (without `--force`).
fn refuse_existing(paths: &[&Path]) -> Result<()> {
    for p in paths {
        if p.exists() {
            return Err(Error::usage(format!(
                "{} exists; pass --force to overwrite it",
                p.display()
            )));
        }
    }
    Ok(())
}

/// The output file's bytes in `format`: the vectors with their ids (safetensors also carries
/// `meta`).
fn body(
    format: Format,
    ids: &[serde_json::Value],
    vectors: &[Vec<f32>],
    dim: usize,
    meta: &serde_json::Map<String, serde_json::Value>,
) -> Vec<u8> {
    match format {
        Format::Npy => scorekit_report::npy_bytes(vectors, dim),
        Format::Safetensors => {
            let mut m = meta.clone();
            m.insert("ids".into(), serde_json::Value::Array(ids.to_vec()));
            safetensors_bytes(vectors, dim, &m)
        }
        Format::Jsonl => {
            let mut s = String::new();
            for (id, v) in ids.iter().zip(vectors) {
                s.push_str(&serde_json::json!({"id": id, "embedding": v}).to_string());
                s.push('\n');
            }
            s.into_bytes()
        }
    }
}

/// Run `scorekit embed`.
pub fn run(args: EmbedArgs) -> Result<()> {
    let args = crate::settings::embed::embed(args);
    let format = format_of(&args.output)?;
    let meta_file = meta_path(&args.output);
    if !args.force {
        refuse_existing(&[&args.output, &meta_file])?;
    }
    let (ids, texts) = shard_part(&args, read_sentences(&args.input)?)?;
    let rt = ModelRuntime::new(&args.runtime, args.quiet)?;
    let model = rt.resolve(&args.model, EMBEDDER_FILES)?;
    let embedder = Embedder::load(
        &model,
        &rt.device,
        rt.dtype,
        args.runtime.max_length,
        &rt.engine,
    )?;
    let model_ref = model.model_ref()?;
    let bar = scorekit_core::progress::bar(texts.len() as u64, "embed", args.quiet);
    let vectors = embedder.embed(&texts, args.runtime.batch_tokens, &bar)?;
    bar.finish_and_clear();
    let dim = embedder.dim();

    let mut meta = metadata(&args, &rt, &embedder, &model_ref, vectors.len())?;
    let body = body(format, &ids, &vectors, dim, &meta);
    atomic_write(&args.output, &body)?;
    meta.insert("ids".into(), serde_json::Value::Array(ids));
    let mut m = serde_json::to_string_pretty(&serde_json::Value::Object(meta)).expect("meta");
    m.push('\n');
    atomic_write(&meta_file, m.as_bytes())?;
    if !args.quiet {
        eprintln!(
            "embedded {} sentences ({} dims) with {}@{} -> {}",
            vectors.len(),
            dim,
            model_ref.id,
            model_ref.revision,
            args.output.display()
        );
    }
    Ok(())
}

/// `--shard I/N`: this shard's sentences, by their id (ids and order kept in the outputs).
fn shard_part(
    args: &EmbedFlags,
    (ids, texts): (Vec<serde_json::Value>, Vec<String>),
) -> Result<(Vec<serde_json::Value>, Vec<String>)> {
    let (ids, texts): (Vec<serde_json::Value>, Vec<String>) = ids
        .into_iter()
        .zip(texts)
        .filter(|(id, _)| match id {
            serde_json::Value::String(s) => args.shard.contains(s),
            other => args.shard.contains(&other.to_string()),
        })
        .unzip();
    if texts.is_empty() {
        return Err(Error::usage(format!(
            "--shard {}: no sentence of {} falls in this shard; use fewer shards",
            args.shard,
            args.input.display()
        )));
    }
    Ok((ids, texts))
}

/// What `<output>.meta.json` records (the ids are added last).
fn metadata(
    args: &EmbedFlags,
    rt: &ModelRuntime,
    embedder: &Embedder,
    model_ref: &scorekit_report::ModelRef,
    count: usize,
) -> Result<serde_json::Map<String, serde_json::Value>> {
    let mut meta = serde_json::Map::new();
    meta.insert("scorekit_version".into(), env!("CARGO_PKG_VERSION").into());
    meta.insert(
        "model".into(),
        serde_json::to_value(model_ref).expect("model ref"),
    );
    let input = InputFile::hash(&args.input)
        .map_err(|e| anyhow::anyhow!("cannot hash {}: {e}", args.input.display()))?;
    meta.insert("input".into(), serde_json::to_value(&input).expect("input"));
    meta.insert("count".into(), count.into());
    meta.insert("dim".into(), embedder.dim().into());
    meta.insert("normalized".into(), embedder.normalizes().into());
    meta.insert(
        "max_length".into(),
        embedder.tokenizer().max_length().into(),
    );
    meta.insert(
        "dtype".into(),
        format!("{:?}", rt.dtype).to_lowercase().into(),
    );
    meta.insert("engine".into(), embedder.engine().into());
    meta.insert("device".into(), runtime::device_name(&rt.device).into());
    if rt.tf32 {
        meta.insert("tf32".into(), true.into());
    }
    if args.shard.count > 1 {
        meta.insert("shard".into(), args.shard.to_string().into());
    }
    Ok(meta)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn output_extension_decides_format() {
        assert_eq!(format_of(Path::new("x.NPY")).unwrap(), Format::Npy);
        assert_eq!(format_of(Path::new("x.csv")).unwrap_err().exit_code(), 2);
    }
}
