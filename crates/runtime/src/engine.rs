//! The one place an engine is chosen: [`load_encoder`] (encoders) and [`seq2seq_engine`] (T5
//! letter judges) pick scorekit's native kernels (`scorekit-native`) or candle's layers
//! (`scorekit-models`) from [`EngineOptions`], the architecture and the device, by one rule
//! ([`use_native`]); nothing else in the runtime decides.

use candle_core::{DType, Device};
use scorekit_core::error::{Error, Result, Setting};
use scorekit_encoder::Encoder;
use scorekit_models::{Architecture, ModelConfig};
use std::path::Path;

/// Which implementation runs the encoder (`--engine`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum EngineChoice {
    /// scorekit's kernels where they apply (x86-64 CPU with AVX-512F; f32, or bf16 on AMX-BF16
    /// tiles or AVX512-BF16; a BERT-layout model with erf-GELU), else candle's layers.
    #[default]
    Auto,
    /// scorekit's kernels; an error where they cannot run the model here.
    Native,
    /// candle's layers everywhere.
    Candle,
}

/// How encoders are run, from the command line (`--engine`, `--quantize`, `--amx`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EngineOptions {
    /// Which implementation.
    pub engine: EngineChoice,
    /// Use AMX tiles for the native engine's products where the CPU has them.
    pub amx: bool,
    /// int8 products in the native engine (VNNI, or AMX-INT8 tiles when `amx`).
    pub int8: bool,
}

impl Default for EngineOptions {
    fn default() -> Self {
        EngineOptions {
            engine: EngineChoice::Auto,
            amx: true,
            int8: false,
        }
    }
}

impl EngineOptions {
    /// Whether the native kernels compute in `dtype` here with these options: f32 always; bf16
    /// on AMX-BF16 tiles (AMX allowed and granted) or with AVX512-BF16, not with int8; nothing
    /// else.
    pub fn native_dtype(&self, dtype: DType) -> std::result::Result<(), String> {
        match dtype {
            DType::F32 => Ok(()),
            DType::BF16 if self.int8 => Err("int8 products take f32 activations, not bf16".into()),
            DType::BF16
                if !(self.amx && scorekit_kernels::amx_available()
                    || scorekit_kernels::bf16dot_available()) =>
            {
                Err(
                    "scorekit's kernels compute bf16 products on AMX-BF16 tiles or with \
                     AVX512-BF16, and this CPU has neither (or AMX was turned off)"
                        .into(),
                )
            }
            DType::BF16 => Ok(()),
            _ => Err(format!(
                "scorekit's kernels run in f32 or bf16, not {dtype:?}"
            )),
        }
    }

    /// Whether the native kernels run here: on `device` in `dtype`, with int8 when asked
    /// (`Ok(())`), else why not.
    pub fn native_runs_here(
        &self,
        device: &Device,
        dtype: DType,
    ) -> std::result::Result<(), String> {
        if !scorekit_kernels::kernels_available() {
            return Err("this CPU has no AVX-512F (x86-64) for scorekit's kernels".into());
        }
        if !device.is_cpu() {
            return Err("scorekit's kernels run on the CPU".into());
        }
        self.native_dtype(dtype)?;
        if self.int8 && !scorekit_kernels::int8_available() {
            return Err("int8 products need AVX-512 VNNI".into());
        }
        Ok(())
    }

    /// Whether the native kernels could run a model of `cfg` on `device` in `dtype` with these
    /// options (`Ok(())`), else why not.
    pub fn native_fits(
        &self,
        cfg: &ModelConfig,
        device: &Device,
        dtype: DType,
    ) -> std::result::Result<(), String> {
        self.native_runs_here(device, dtype)?;
        if cfg.native.is_none() {
            return Err(format!(
                "scorekit's kernels do not run {} models",
                cfg.model_type
            ));
        }
        if !cfg.erf_gelu {
            return Err("scorekit's kernels run erf-GELU models only".into());
        }
        Ok(())
    }
}

/// The rule of both choices: `--engine candle` never, `native` where the kernels fit here (else
/// exit 2 saying why), `auto` where they fit.
fn use_native(
    opts: &EngineOptions,
    fits: impl FnOnce() -> std::result::Result<(), String>,
) -> Result<bool> {
    Ok(match opts.engine {
        EngineChoice::Candle => false,
        EngineChoice::Auto => fits().is_ok(),
        EngineChoice::Native => {
            fits().map_err(|why| Error::setting(Setting::Engine, Some("native".into()), why))?;
            true
        }
    })
}

/// Load the encoder of a model folder's weight file: the one place an engine is chosen.
///
/// `arch` and `cfg` come from the folder's config.json (`models::read_config`); `weights` is
/// model.safetensors or pytorch_model.bin, already checked against `cfg`.
pub fn load_encoder(
    arch: &dyn Architecture,
    cfg: &ModelConfig,
    weights: &Path,
    device: &Device,
    dtype: DType,
    opts: &EngineOptions,
) -> Result<Box<dyn Encoder>> {
    let native = use_native(opts, || opts.native_fits(cfg, device, dtype))?;
    if opts.int8 && !native {
        return Err(Error::setting(
            Setting::Quantize,
            None,
            "int8 products need scorekit's CPU engine (x86-64 with AVX-512 VNNI, f32, a BERT-layout model)",
        ));
    }
    if native {
        #[cfg(target_arch = "x86_64")]
        {
            let layout = cfg.native.as_ref().expect("checked by native_fits");
            let enc = scorekit_native::FastBert::load_with(
                weights,
                &cfg.bert,
                scorekit_native::Products {
                    int8: opts.int8,
                    amx: opts.amx,
                    bf16: dtype == DType::BF16,
                },
                layout,
            )
            .map_err(|e| scorekit_models::weights_error(weights, e))?;
            return Ok(Box::new(enc));
        }
    }
    let vb = scorekit_models::var_builder(weights, arch.candle_dtype(dtype), device)?;
    arch.load_candle(vb, cfg)
        .map_err(|e| scorekit_models::weights_error(weights, e))
}

/// Which implementation runs an encoder-decoder (letter) judge's encoder.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Seq2SeqEngine {
    /// candle's layers on the device, encoder and decoder.
    Candle,
    /// The encoder and the decoder's products on scorekit's kernels (f32, bf16 or int8
    /// products), the decoder's embeddings, norms and attention on candle's CPU layers in the
    /// judge's dtype.
    Native,
}

/// The engine of an encoder-decoder (letter) judge, chosen as [`load_encoder`] chooses an
/// encoder's: with `auto`, scorekit's kernels for the encoder where they run here (x86-64 CPU
/// with AVX-512F, f32 or bf16 products), else candle; `--quantize` needs the kernels. f16 is
/// refused because T5's activations overflow it (transformers clamps them; scorekit does not
/// pretend to). Unlike an encoder's, `--quantize` goes with `--dtype bf16` here (see below).
pub fn seq2seq_engine(
    opts: &EngineOptions,
    device: &Device,
    dtype: DType,
) -> Result<Seq2SeqEngine> {
    if dtype == DType::F16 {
        return Err(Error::setting(
            Setting::Dtype,
            Some("f16".into()),
            "T5's activations overflow f16; use f32 or bf16",
        ));
    }
    // With int8 the encoder's products are int8 on f32 activations whatever `dtype`, which then
    // sets the decoder's weights only: `--quantize --dtype bf16` is how flan-t5-xxl fits in
    // 24 GiB (docs/judge.md).
    Ok(if products_on_kernels(opts, device, dtype)? {
        Seq2SeqEngine::Native
    } else {
        Seq2SeqEngine::Candle
    })
}

/// Whether a judge's products run on scorekit's kernels (T5's encoder, a decoder-only judge):
/// with `auto` where the kernels run here for the products asked (`--quantize` makes them
/// int8 on f32 activations whatever `dtype`), else candle; `--quantize` needs the kernels.
pub fn products_on_kernels(opts: &EngineOptions, device: &Device, dtype: DType) -> Result<bool> {
    let products_dtype = if opts.int8 { DType::F32 } else { dtype };
    let native = use_native(opts, || opts.native_runs_here(device, products_dtype))?;
    if opts.int8 && !native {
        return Err(Error::setting(
            Setting::Quantize,
            None,
            "int8 products need scorekit's CPU kernels (x86-64 with AVX-512 VNNI, the CPU, not --engine candle)",
        ));
    }
    Ok(native)
}
