//! The device and the float type: which accelerator runs the model and in which float type.

use candle_core::{DType, Device};
use scorekit_core::error::{Error, Result, Setting};

/// Parse a device spec (`cpu`, `cuda`, `cuda:N`, `metal`, `metal:N`, `auto`) and open the device.
///
/// A malformed spec is a usage error; a well-formed one that this build or machine cannot serve
/// (no CUDA feature, no GPU) is an internal error that says so.
pub fn select_device(spec: &str) -> Result<Device> {
    let spec = spec.trim().to_ascii_lowercase();
    let (kind, ordinal) = match spec.split_once(':') {
        Some((k, n)) => {
            let n: usize = n.parse().map_err(|_| {
                Error::setting(
                    Setting::Device,
                    Some(spec.clone()),
                    "the device number must be a non-negative integer (e.g. cuda:0)",
                )
            })?;
            (k.to_string(), Some(n))
        }
        None => (spec.clone(), None),
    };
    match (kind.as_str(), ordinal) {
        ("cpu", None) => Ok(Device::Cpu),
        ("cuda", n) => open(Device::new_cuda(n.unwrap_or(0)), &spec, "cuda"),
        ("metal", n) => open(Device::new_metal(n.unwrap_or(0)), &spec, "metal"),
        ("auto", None) => {
            // Prefer a GPU this build can drive; fall back to the CPU silently, as `auto` promises.
            if candle_core::utils::cuda_is_available() {
                if let Ok(d) = Device::new_cuda(0) {
                    return Ok(d);
                }
            }
            if candle_core::utils::metal_is_available() {
                if let Ok(d) = Device::new_metal(0) {
                    return Ok(d);
                }
            }
            Ok(Device::Cpu)
        }
        _ => Err(Error::setting(
            Setting::Device,
            Some(spec.clone()),
            "expected cpu, cuda, cuda:N, metal, metal:N or auto",
        )),
    }
}

fn open(dev: candle_core::Result<Device>, spec: &str, feature: &str) -> Result<Device> {
    dev.map_err(|e| {
        let built = match feature {
            "cuda" => candle_core::utils::cuda_is_available(),
            _ => candle_core::utils::metal_is_available(),
        };
        let hint = if built {
            String::new()
        } else {
            format!(" (this scorekit was built without the `{feature}` feature; rebuild with `--features {feature}` or use the cpu device)")
        };
        Error::Internal(anyhow::anyhow!("cannot open device {spec}: {e}{hint}"))
    })
}

/// The float type to run in: the one asked for, else f32 on the CPU and f16 on a GPU.
///
/// f32 on the CPU because candle's CPU kernels for half types are slower, not faster, there.
pub fn select_dtype(dtype: Option<DType>, device: &Device) -> DType {
    match dtype {
        Some(d) => d,
        None if device.is_cpu() => DType::F32,
        None => DType::F16,
    }
}

/// The device's name for metrics.json: `cpu`, `cuda:N` or `metal:N`.
pub fn device_name(device: &Device) -> String {
    match device.location() {
        candle_core::DeviceLocation::Cpu => "cpu".into(),
        candle_core::DeviceLocation::Cuda { gpu_id } => format!("cuda:{gpu_id}"),
        candle_core::DeviceLocation::Metal { gpu_id } => format!("metal:{gpu_id}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_specs() {
        assert!(select_device("cpu").unwrap().is_cpu());
        assert!(select_device(" CPU ").unwrap().is_cpu());
        assert!(select_device("auto").is_ok());
        for bad in ["gpu", "cuda:x", "cpu:1", "", "cuda:-1"] {
            let e = select_device(bad).unwrap_err();
            assert_eq!(e.exit_code(), 2, "{bad}: {e}");
        }
    }

    #[test]
    fn dtype_defaults_to_f32_on_cpu() {
        assert_eq!(select_dtype(None, &Device::Cpu), DType::F32);
        assert_eq!(select_dtype(Some(DType::BF16), &Device::Cpu), DType::BF16);
        assert_eq!(device_name(&Device::Cpu), "cpu");
    }
}
