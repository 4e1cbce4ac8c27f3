//! What the three modes of `scorekit bench` (one embedder: `bench`, a grid: `bench_grid`, a
//! judge: `bench_judge`) share: their default inputs, the corpus reader, the peak each precision
//! is measured against, and the length axes checked against the model's config.json. Here so
//! that the modes use it without importing one another.

use crate::cli::BenchArgs;
use crate::commands::model_runtime::ModelRuntime;
use scorekit_core::error::{Error, InputError, Result};
use scorekit_runtime as runtime;
use std::path::Path;

/// The corpus used when `--input` is not given: the real Possible Stories endings and passages,
/// from the data cache (`scorekit data`; pulled once where the network allows).
pub const DEFAULT_CORPUS: &str = "possible-stories:endings";

/// Read a corpus: Possible Stories endings records (`story` + `endings[].ending`: every ending,
/// then every passage), JSONL with `text`, or plain text (one sentence a line).
pub fn read_corpus(path: &Path) -> Result<Vec<String>> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| InputError::file(path, format!("cannot read: {e}")))?;
    let is_jsonl = matches!(
        path.extension().and_then(|e| e.to_str()),
        Some("jsonl") | Some("ndjson")
    );
    let mut out = Vec::new();
    if !is_jsonl {
        out.extend(
            text.lines()
                .filter(|l| !l.trim().is_empty())
                .map(String::from),
        );
    } else {
        let mut passages = Vec::new();
        for (i, line) in text.lines().enumerate() {
            if line.trim().is_empty() {
                continue;
            }
            let v: serde_json::Value = serde_json::from_str(line).map_err(|e| {
                InputError::file(path, format!("line {}: not valid JSON: {e}", i + 1))
            })?;
            if let Some(t) = v["text"].as_str() {
                out.push(t.to_string());
            } else if let Some(endings) = v["endings"].as_array() {
                for e in endings {
                    if let Some(t) = e["ending"].as_str() {
                        out.push(t.to_string());
                    }
                }
                if let Some(s) = v["story"].as_str() {
                    passages.push(s.to_string());
                }
            } else {
                return Err(InputError::file(
                    path,
                    format!(
                        "line {}: expected \"text\" or Possible Stories \"endings\"",
                        i + 1
                    ),
                )
                .into());
            }
        }
        out.extend(passages);
    }
    if out.is_empty() {
        return Err(InputError::file(path, "no sentences").into());
    }
    Ok(out)
}

/// Which measured peak is the yardstick of a precision's utilisation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PeakKind {
    /// The f32 FMA loop (`kernels::peak::measure`).
    F32,
    /// bf16 tile products (`kernels::amx_bf16_peak`).
    Bf16Amx,
    /// bf16 pair products in vector lanes (`kernels::bf16dot_peak`, `vdpbf16ps`).
    Bf16Dot,
}

impl PeakKind {
    /// On the CPU: f32 FMAs for f32, bf16 tile products for scorekit's bf16 AMX encoder,
    /// `vdpbf16ps` for its AVX512-BF16 one; none for int8, for candle's half types and on a GPU
    /// (nothing measures those).
    pub fn of(
        device: &candle_core::Device,
        dtype: candle_core::DType,
        int8: bool,
        engine: &str,
    ) -> Option<Self> {
        match dtype {
            _ if !device.is_cpu() || int8 => None,
            candle_core::DType::F32 => Some(PeakKind::F32),
            // The engine as it names itself (`FastBert::engine` in scorekit-native).
            candle_core::DType::BF16 if engine.contains("bf16 AMX") => Some(PeakKind::Bf16Amx),
            candle_core::DType::BF16 if engine.contains("AVX512-BF16") => Some(PeakKind::Bf16Dot),
            _ => None,
        }
    }

    /// Measure it on `threads` threads (about 0.6 s); `None` where the CPU cannot run it.
    pub fn measure(self, threads: usize) -> Option<runtime::kernels::peak::Peak> {
        match self {
            PeakKind::F32 => Some(runtime::kernels::peak::measure(threads, 0.6)),
            PeakKind::Bf16Amx => runtime::kernels::amx_bf16_peak(threads, 0.6),
            PeakKind::Bf16Dot => runtime::kernels::bf16dot_peak(threads, 0.6),
        }
    }
}

/// The dataset used when `--input` is not given: the Possible Stories dev split, from the data
/// cache (`scorekit data`).
pub const DEFAULT_DATASET: &str = "possible-stories:dev";

/// Axis values that need the model's config: lengths up to its position limit.
pub fn check_limits(args: &BenchArgs, max_tokens: usize, model: &str) -> Result<()> {
    for &m in &args.runtime.max_length {
        if m > max_tokens {
            return Err(Error::usage(format!(
                "--max-length {m}: above {model}'s limit of {max_tokens} tokens"
            )));
        }
    }
    for &n in &args.synthetic {
        if n > max_tokens {
            return Err(Error::usage(format!(
                "--synthetic {n}: above {model}'s limit of {max_tokens} tokens"
            )));
        }
    }
    Ok(())
}

/// Check the length axes against the model's config.json alone (resolved without the weights,
/// which are neither read nor checked yet).
pub fn check_model_limits(args: &BenchArgs, rt: &ModelRuntime, spec: &str) -> Result<()> {
    if args.runtime.max_length.is_empty() && args.synthetic.is_empty() {
        return Ok(());
    }
    let config = rt.resolve(spec, &["config.json"])?;
    let (_, cfg) = runtime::models::read_config(&config.file("config.json"), "bert")?;
    check_limits(args, cfg.max_tokens, spec)
}
