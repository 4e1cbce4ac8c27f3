//! The one way a command gets its models: device and dtype from `--device`/`--dtype`, the
//! engine options from `--engine`, `--amx` and `--quantize`, resolution (folder → HF cache →
//! Hub, `--offline`), and a sentence embedder loaded and named on stderr. Every model-running
//! command goes through here, so a flag means the same thing in every command.

use crate::cli::{Amx, DType as CliDType, ModelArgs};
use candle_core::{DType, Device};
use runtime::EMBEDDER_FILES;
use scorekit_core::error::{Error, Result};
use scorekit_core::progress::bar;
use scorekit_report::ModelRef;
use scorekit_runtime::{
    self as runtime, Embedder, EngineChoice, EngineOptions, ResolveOptions, ResolvedModel,
};

/// Device, dtype and resolution options of one command, from its [`ModelArgs`].
#[derive(Debug, Clone)]
pub struct ModelRuntime {
    /// `--device`.
    pub device: Device,
    /// `--dtype`, else f32 on the CPU and f16 on a GPU.
    pub dtype: DType,
    /// `--offline` and whether downloads show progress.
    pub opts: ResolveOptions,
    /// `--batch-tokens`.
    pub batch_tokens: usize,
    /// `--max-length`.
    pub max_length: Option<usize>,
    /// No progress bars.
    pub quiet: bool,
    /// `--quantize`: int8 products in scorekit's CPU encoder.
    pub quantize: bool,
    /// `--tf32`: TF32 products for f32 on CUDA (recorded as `tf32` in the settings).
    pub tf32: bool,
    /// `--engine`, `--amx` and `--quantize`.
    pub engine: EngineOptions,
}

/// The engine options of `--engine`, `--amx` and `--quantize`.
pub fn engine_options(args: &ModelArgs) -> EngineOptions {
    EngineOptions {
        engine: args.engine,
        amx: args.amx == Amx::Auto,
        int8: args.quantize,
    }
}

/// candle's float type of `--dtype`.
pub fn dtype_of(dtype: Option<CliDType>) -> Option<DType> {
    dtype.map(|d| match d {
        CliDType::F32 => DType::F32,
        CliDType::F16 => DType::F16,
        CliDType::Bf16 => DType::BF16,
    })
}

/// Which models a run may load, as far as `--quantize` is concerned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Int8Models {
    /// Encoders only (embedders, MRC judges), as `scorekit bench` measures.
    Encoders,
    /// A T5 letter judge among them, whose decoder keeps bf16 weights beside int8 products.
    WithLetterJudge,
}

/// The one rule of `--quantize` (int8 products), as the runtime implements it: they run in
/// scorekit's CPU kernels (AVX-512 VNNI; not `--engine candle`, not a GPU) on f32 activations,
/// for every model (`EngineOptions::native_dtype` refuses bf16 with int8 for an encoder).
/// `--dtype bf16` goes with it for a T5 letter judge alone: its encoder's products stay int8 on
/// f32 and bf16 sets the decoder's weights (`runtime::engine::seq2seq_engine`; how flan-t5-xxl
/// fits in 24 GiB, docs/judge.md). f16 never.
pub fn check_quantize(
    device: &Device,
    dtype: DType,
    engine: EngineChoice,
    models: Int8Models,
) -> Result<()> {
    if !(device.is_cpu() && engine != EngineChoice::Candle && runtime::kernels::int8_available()) {
        return Err(Error::usage(
            "--quantize needs the CPU with AVX-512 VNNI and scorekit's kernels (not --engine candle): it quantises their products",
        ));
    }
    match (dtype, models) {
        (DType::F32, _) | (DType::BF16, Int8Models::WithLetterJudge) => Ok(()),
        (DType::BF16, Int8Models::Encoders) => Err(Error::usage(
            "--quantize needs f32 for an encoder, not --dtype bf16: its int8 products take f32 activations (bf16 goes with --quantize only for a T5 letter judge's decoder)",
        )),
        _ => Err(Error::usage(format!(
            "--quantize needs f32 (bf16 only for a T5 letter judge), not --dtype {}: int8 products take f32 activations",
            format!("{dtype:?}").to_lowercase()
        ))),
    }
}

impl ModelRuntime {
    /// Open the device of `args`; a malformed `--device` is a usage error. `--quantize` is
    /// held to [`check_quantize`] for any model (a T5 letter judge included).
    pub fn new(args: &ModelArgs, quiet: bool) -> Result<Self> {
        Self::for_models(args, quiet, Int8Models::WithLetterJudge)
    }

    /// [`ModelRuntime::new`] for a command that loads only `models` (`--quantize`'s rule).
    pub fn for_models(args: &ModelArgs, quiet: bool, models: Int8Models) -> Result<Self> {
        let device = runtime::select_device(&args.device)?;
        let dtype = runtime::select_dtype(dtype_of(args.dtype), &device);
        if args.quantize {
            check_quantize(&device, dtype, args.engine, models)?;
        }
        if args.tf32 {
            if !device.is_cuda() || dtype != DType::F32 {
                return Err(scorekit_core::error::Error::usage(
                    "--tf32 is for f32 models on CUDA (TF32 is a tensor-core format of NVIDIA GPUs)",
                ));
            }
            // Process-wide in candle: every f32 product of this run, which is what the flag asks.
            candle_core::cuda::set_gemm_reduced_precision_f32(true);
        }
        Ok(ModelRuntime {
            device,
            dtype,
            opts: ResolveOptions {
                offline: args.offline,
                quiet,
            },
            batch_tokens: args.batch_tokens,
            max_length: args.max_length,
            quiet,
            quantize: args.quantize,
            tf32: args.tf32,
            engine: engine_options(args),
        })
    }

    /// The device, as runs record it.
    pub fn device_name(&self) -> String {
        runtime::device_name(&self.device)
    }

    /// `--quantize` as runs record it (see [`quantize_setting`]).
    pub fn quantize_setting(&self) -> Option<String> {
        quantize_setting(self.quantize)
    }

    /// Resolve a model spec needing `files` (entries may be alternatives `"a|b"`).
    pub fn resolve(&self, spec: &str, files: &[&str]) -> Result<ResolvedModel> {
        runtime::resolve(spec, files, &self.opts)
    }

    /// Resolve a sentence embedder (the files `scorekit embed` needs).
    pub fn resolve_embedder(&self, spec: &str) -> Result<ResolvedModel> {
        self.resolve(spec, EMBEDDER_FILES)
    }

    /// Load a resolved embedder on this device and dtype, print `embedder: id @ revision` on
    /// stderr, and return it with its reference for metrics.json.
    pub fn load_embedder(&self, model: &ResolvedModel) -> Result<(Embedder, ModelRef)> {
        let embedder = Embedder::load(
            model,
            &self.device,
            self.dtype,
            self.max_length,
            &self.engine,
        )?;
        let model_ref = model.model_ref()?;
        eprintln!("embedder: {} @ {}", model_ref.id, model_ref.revision);
        Ok((embedder, model_ref))
    }

    /// Resolve and load in one step.
    pub fn embedder(&self, spec: &str) -> Result<(Embedder, ModelRef)> {
        let model = self.resolve_embedder(spec)?;
        self.load_embedder(&model)
    }

    /// Embed texts in input order under `--batch-tokens`, with a progress bar labelled `label`.
    pub fn embed(
        &self,
        embedder: &Embedder,
        texts: &[String],
        label: &str,
    ) -> Result<Vec<Vec<f32>>> {
        let progress = bar(texts.len() as u64, label, self.quiet);
        let vecs = embedder.embed(texts, self.batch_tokens, &progress)?;
        progress.finish_and_clear();
        Ok(vecs)
    }
}

/// `--quantize` as a run's settings record it: only when on, so that default runs keep their
/// identity, and results of int8 and f32 encoders are never mixed by resume or merge.
pub fn quantize_setting(quantize: bool) -> Option<String> {
    quantize.then(|| "int8 encoder products".to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantize_takes_f32_and_bf16_only_beside_a_letter_judge() {
        let cpu = Device::Cpu;
        let ok = |dtype, engine, models| check_quantize(&cpu, dtype, engine, models).is_ok();
        assert!(!ok(DType::F32, EngineChoice::Candle, Int8Models::Encoders));
        assert!(!ok(
            DType::F16,
            EngineChoice::Auto,
            Int8Models::WithLetterJudge
        ));
        assert!(!ok(DType::BF16, EngineChoice::Auto, Int8Models::Encoders));
        let vnni = runtime::kernels::int8_available();
        assert_eq!(
            ok(DType::F32, EngineChoice::Auto, Int8Models::Encoders),
            vnni
        );
        assert_eq!(
            ok(
                DType::BF16,
                EngineChoice::Native,
                Int8Models::WithLetterJudge
            ),
            vnni
        );
        let why = check_quantize(&cpu, DType::F16, EngineChoice::Auto, Int8Models::Encoders);
        assert!(why.unwrap_err().to_string().contains("--quantize needs"));
    }
}
