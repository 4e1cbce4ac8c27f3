//! The device and the float type: which accelerator runs the model and in which float type.

use candle_core::{DType, Device};
use scorekit_core::error::{Error, Result};

/// Which kind of device `--device` names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DeviceKind {
    /// A GPU this build can drive when one is present, else the CPU.
    Auto,
    /// The CPU.
    Cpu,
    /// An NVIDIA GPU (the `cuda` feature).
    Cuda,
    /// An Apple GPU (the `metal` feature).
    Metal,
}

/// A `--device` value, parsed once where the flag is read (`cpu`, `cuda`, `cuda:N`, `metal`,
/// `metal:N`, `auto`; case and surrounding blanks ignored).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DeviceSpec {
    /// The kind of device.
    pub kind: DeviceKind,
    /// The GPU's number when one was given (`cuda:1`); GPU 0 otherwise.
    pub ordinal: Option<usize>,
}

impl DeviceSpec {
    /// `--device auto`.
    pub const AUTO: DeviceSpec = DeviceSpec {
        kind: DeviceKind::Auto,
        ordinal: None,
    };
    /// `--device cpu`.
    pub const CPU: DeviceSpec = DeviceSpec {
        kind: DeviceKind::Cpu,
        ordinal: None,
    };
}

impl std::str::FromStr for DeviceSpec {
    type Err = String;

    /// A malformed spec is an error that says what is expected (clap shows it as a usage error).
    fn from_str(spec: &str) -> std::result::Result<Self, String> {
        let spec = spec.trim().to_ascii_lowercase();
        let (kind, ordinal) = match spec.split_once(':') {
            Some((k, n)) => {
                let n: usize = n.parse().map_err(|_| {
                    "the device number must be a non-negative integer (e.g. cuda:0)".to_string()
                })?;
                (k, Some(n))
            }
            None => (spec.as_str(), None),
        };
        let kind = match (kind, ordinal) {
            ("cpu", None) => DeviceKind::Cpu,
            ("auto", None) => DeviceKind::Auto,
            ("cuda", _) => DeviceKind::Cuda,
            ("metal", _) => DeviceKind::Metal,
            _ => return Err("expected cpu, cuda, cuda:N, metal, metal:N or auto".into()),
        };
        Ok(DeviceSpec { kind, ordinal })
    }
}

impl std::fmt::Display for DeviceSpec {
    /// As written (normalised): `cuda`, `cuda:1`, `cpu`, ...
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let kind = match self.kind {
            DeviceKind::Auto => "auto",
            DeviceKind::Cpu => "cpu",
            DeviceKind::Cuda => "cuda",
            DeviceKind::Metal => "metal",
        };
        match self.ordinal {
            Some(n) => write!(f, "{kind}:{n}"),
            None => f.write_str(kind),
        }
    }
}

/// Open the device `spec` names. A device this build or machine cannot serve (no CUDA feature,
/// no GPU) is an internal error that says so; `auto` falls back to the CPU silently, as it
/// promises.
pub fn select_device(spec: &DeviceSpec) -> Result<Device> {
    let n = spec.ordinal.unwrap_or(0);
    let shown = spec.to_string();
    match spec.kind {
        DeviceKind::Cpu => Ok(Device::Cpu),
        DeviceKind::Cuda => open(Device::new_cuda(n), &shown, "cuda"),
        DeviceKind::Metal => open(Device::new_metal(n), &shown, "metal"),
        DeviceKind::Auto => {
            // Prefer a GPU this build can drive.
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
        let parse = |s: &str| s.parse::<DeviceSpec>();
        assert!(select_device(&parse("cpu").unwrap()).unwrap().is_cpu());
        assert!(select_device(&parse(" CPU ").unwrap()).unwrap().is_cpu());
        assert!(select_device(&DeviceSpec::AUTO).is_ok());
        assert_eq!(parse("CUDA:1").unwrap().to_string(), "cuda:1");
        assert_eq!(parse("metal").unwrap().to_string(), "metal");
        for bad in ["gpu", "cuda:x", "cpu:1", "", "cuda:-1", "auto:0"] {
            assert!(parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn dtype_defaults_to_f32_on_cpu() {
        assert_eq!(select_dtype(None, &Device::Cpu), DType::F32);
        assert_eq!(select_dtype(Some(DType::BF16), &Device::Cpu), DType::BF16);
        assert_eq!(device_name(&Device::Cpu), "cpu");
    }
}
