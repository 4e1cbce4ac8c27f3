//! The one place an engine is chosen: [`load_encoder`] (encoders) and [`seq2seq_engine`] (T5
//! letter judges) pick scorekit's native kernels (`scorekit-native`) or candle's layers
//! (`scorekit-models`) from [`EngineOptions`], the architecture and the device, by one rule
//! ([`use_native`]); nothing else in the runtime decides. Which products the kernels then run
//! is decided here too ([`kernel_products`]), bf16's by measuring the CPU ([`bf16_products`]).

use candle_core::{DType, Device};
use scorekit_core::error::{Error, Result, Setting};
use scorekit_encoder::Encoder;
use scorekit_models::{Architecture, ModelConfig};
use std::path::Path;

/// Which implementation runs the encoder (`--engine`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum EngineChoice {
    /// scorekit's kernels where they apply (x86-64 CPU with AVX-512F; f32 or bf16; a
    /// BERT-layout model with erf-GELU, T5's encoder, a decoder-only judge), else candle's
    /// layers.
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
    /// (on AMX-BF16 tiles, AVX512-BF16, or widened to f32: [`bf16_products`]), not with int8;
    /// nothing else.
    pub fn native_dtype(&self, dtype: DType) -> std::result::Result<(), String> {
        match dtype {
            DType::F32 => Ok(()),
            DType::BF16 if self.int8 => Err("int8 products take f32 activations, not bf16".into()),
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
                kernel_products(opts, dtype),
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

/// How `--dtype bf16` products run on scorekit's kernels on this CPU.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Bf16Products {
    /// AMX-BF16 tile products (AMX allowed and granted): far above the f32 FMA peak.
    Tiles,
    /// AVX512-BF16 (`vdpbf16ps`), whose measured peak is at least the f32 FMA peak (Zen 4).
    Dot {
        /// Measured bf16 pair-product peak, GFLOP/s.
        bf16_gflops: f64,
        /// Measured f32 FMA peak, GFLOP/s.
        f32_gflops: f64,
    },
    /// The weights kept in bf16 and multiplied widened to f32 with f32 FMAs: the CPU has no
    /// bf16 instructions, or they are slower than its f32 FMAs (an Intel Xeon guest with
    /// AVX512-BF16 and no AMX measured 171 against 350 GFLOP/s).
    Widened {
        /// Measured bf16 pair-product peak, GFLOP/s, where the CPU has AVX512-BF16.
        bf16_gflops: Option<f64>,
        /// Measured f32 FMA peak, GFLOP/s.
        f32_gflops: f64,
    },
}

impl Bf16Products {
    /// What runs, and why, for `doctor` and engine names.
    pub fn describe(&self) -> String {
        match self {
            Bf16Products::Tiles => "bf16 AMX tile products".into(),
            Bf16Products::Dot {
                bf16_gflops,
                f32_gflops,
            } => format!(
                "AVX512-BF16 products (measured {bf16_gflops:.0} GFLOP/s, f32 FMA {f32_gflops:.0})"
            ),
            Bf16Products::Widened {
                bf16_gflops: Some(b),
                f32_gflops,
            } => format!(
                "bf16 weights widened to f32 FMA products (AVX512-BF16 measured {b:.0} GFLOP/s, \
                 below f32 FMA's {f32_gflops:.0})"
            ),
            Bf16Products::Widened { f32_gflops, .. } => format!(
                "bf16 weights widened to f32 FMA products (no AVX512-BF16; f32 FMA {f32_gflops:.0} GFLOP/s)"
            ),
        }
    }
}

/// The rule "bf16 is never slower than f32": tiles where they run; else bf16 pair products only
/// where their measured peak (`dot`, GFLOP/s; `None` without AVX512-BF16) reaches the f32 FMA
/// peak, else the widened f32 products.
pub fn choose_bf16(tiles: bool, dot: Option<f64>, f32_peak: f64) -> Bf16Products {
    match dot {
        _ if tiles => Bf16Products::Tiles,
        Some(d) if d >= f32_peak => Bf16Products::Dot {
            bf16_gflops: d,
            f32_gflops: f32_peak,
        },
        _ => Bf16Products::Widened {
            bf16_gflops: dot,
            f32_gflops: f32_peak,
        },
    }
}

/// How bf16 products run here (`amx`: tiles allowed): tiles where granted, else by measuring
/// the AVX512-BF16 and f32 FMA peaks on every core for 0.1 s each, once per process.
pub fn bf16_products(amx: bool) -> Bf16Products {
    if amx && scorekit_kernels::amx_available() {
        return Bf16Products::Tiles;
    }
    static PEAKS: std::sync::OnceLock<(Option<f64>, f64)> = std::sync::OnceLock::new();
    let &(dot, f32_peak) = PEAKS.get_or_init(|| {
        let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
        (
            scorekit_kernels::bf16dot_peak(threads, 0.1).map(|p| p.gflops),
            scorekit_kernels::peak::measure(threads, 0.1).gflops,
        )
    });
    choose_bf16(false, dot, f32_peak)
}

/// The products scorekit's kernels run for `opts` and `dtype`: int8 with `--quantize`, bf16
/// with `--dtype bf16` (widened to f32 where [`bf16_products`] says so), else f32; AMX tiles
/// where allowed.
#[cfg(target_arch = "x86_64")]
pub fn kernel_products(opts: &EngineOptions, dtype: DType) -> scorekit_native::Products {
    let bf16 = dtype == DType::BF16 && !opts.int8;
    scorekit_native::Products {
        int8: opts.int8,
        amx: opts.amx,
        bf16,
        widen_bf16: bf16 && matches!(bf16_products(opts.amx), Bf16Products::Widened { .. }),
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bf16_is_never_chosen_slower_than_f32() {
        // Emerald Rapids guest without AMX: vdpbf16ps 171 against f32 FMA 350 GFLOP/s.
        assert_eq!(
            choose_bf16(false, Some(171.0), 350.0),
            Bf16Products::Widened {
                bf16_gflops: Some(171.0),
                f32_gflops: 350.0
            }
        );
        // Zen 4: bf16 pair products about twice the f32 peak.
        assert!(matches!(
            choose_bf16(false, Some(700.0), 350.0),
            Bf16Products::Dot { .. }
        ));
        // No AVX512-BF16 at all: widened; AMX tiles whatever the peaks.
        assert!(matches!(
            choose_bf16(false, None, 350.0),
            Bf16Products::Widened {
                bf16_gflops: None,
                ..
            }
        ));
        assert_eq!(choose_bf16(true, Some(1.0), 350.0), Bf16Products::Tiles);
        assert!(choose_bf16(false, Some(171.0), 350.0)
            .describe()
            .contains("below f32 FMA's 350"));
    }
}
