//! The precisions of a bench: which (dtype, int8) pairs its cells run in, and each one settled
//! by the command (device, dtype and engine options from its flags, through its model runtime)
//! and checked here before any model is loaded.

use candle_core::{DType, Device, Tensor};
use scorekit_core::error::{Error, Result};
use scorekit_runtime::{self as runtime, EngineChoice, EngineOptions};

/// The (dtype, int8) pairs of the cells, in grid order, from `--dtype` (`dtypes`, none: the
/// device's default) and `--quantize`. A grid adds int8 cells on f32 activations (an encoder's
/// int8 products take f32; `f32` is the caller's name for it) after the dtypes; a one-cell bench
/// is the first dtype, int8 with `--quantize`.
pub fn variants<D: Copy>(
    dtypes: &[D],
    f32: D,
    quantize: bool,
    grid: bool,
) -> Vec<(Option<D>, bool)> {
    if !grid {
        return vec![(dtypes.first().copied(), quantize)];
    }
    let mut out: Vec<(Option<D>, bool)> = if dtypes.is_empty() {
        vec![(None, false)]
    } else {
        dtypes.iter().map(|&d| (Some(d), false)).collect()
    };
    if quantize {
        out.push((Some(f32), true));
    }
    out
}

/// One precision, settled: what a cell of it loads its model with.
#[derive(Debug, Clone)]
pub struct Variant {
    /// The device (`--device`).
    pub device: Device,
    /// Weights and activations (`--dtype`, else the device's default).
    pub dtype: DType,
    /// int8 products (`--quantize`).
    pub int8: bool,
    /// `--engine`, `--amx` and int8.
    pub engine: EngineOptions,
}

impl Variant {
    /// The dtype as cells name it: `int8` for int8 products, else `f32`, `f16`, `bf16`.
    pub fn label(&self) -> String {
        if self.int8 {
            "int8".into()
        } else {
            dtype_name(self.dtype)
        }
    }

    /// Checks that need no model: the device computes in the dtype, and `--engine native`
    /// runs it here. (`--quantize` is the command's rule, checked as the variant is settled.)
    pub fn check(&self) -> Result<()> {
        let name = dtype_name(self.dtype);
        if let Err(why) = probe_dtype(&self.device, self.dtype) {
            return Err(Error::usage(format!(
                "--dtype {name}: {} cannot compute in it ({why})",
                runtime::device_name(&self.device)
            )));
        }
        if self.engine.engine == EngineChoice::Native {
            if let Err(why) = self.engine.native_dtype(self.dtype) {
                return Err(Error::usage(format!(
                    "--dtype {name}: --engine native: {why}"
                )));
            }
        }
        Ok(())
    }
}

/// A dtype as bench.json and the one-cell output write it: `f32`, `f16`, `bf16`.
pub fn dtype_name(dtype: DType) -> String {
    format!("{dtype:?}").to_lowercase()
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_grid_adds_int8_after_the_dtypes_and_one_cell_takes_the_first() {
        assert_eq!(
            variants(&["bf16"], "f32", true, true),
            [(Some("bf16"), false), (Some("f32"), true)]
        );
        assert_eq!(variants::<&str>(&[], "f32", false, true), [(None, false)]);
        assert_eq!(
            variants(&["f16"], "f32", true, false),
            [(Some("f16"), true)]
        );
        assert_eq!(variants::<&str>(&[], "f32", true, false), [(None, true)]);
    }
}
