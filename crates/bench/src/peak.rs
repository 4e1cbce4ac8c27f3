//! The yardsticks of utilisation: which measured peak a precision is held against, and each
//! peak measured once a run, when the first cell computing in it has been timed.

use candle_core::{DType, Device};
use scorekit_runtime as runtime;
use scorekit_runtime::kernels::peak::Peak;
use std::cell::OnceCell;

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
    /// On the CPU: f32 FMAs for f32 and for bf16 weights widened to f32, bf16 tile products for
    /// scorekit's bf16 AMX encoder, `vdpbf16ps` for its AVX512-BF16 one; none for int8, for candle's half types and on a GPU
    /// (nothing measures those).
    pub fn of(device: &Device, dtype: DType, int8: bool, engine: &str) -> Option<Self> {
        match dtype {
            _ if !device.is_cpu() || int8 => None,
            DType::F32 => Some(PeakKind::F32),
            // The engine as it names itself (`FastBert::engine` in scorekit-native).
            DType::BF16 if engine.contains("bf16 AMX") => Some(PeakKind::Bf16Amx),
            DType::BF16 if engine.contains("AVX512-BF16") => Some(PeakKind::Bf16Dot),
            // bf16 weights widened to f32: the products are f32 FMAs.
            DType::BF16 if engine.contains("widened to f32") => Some(PeakKind::F32),
            _ => None,
        }
    }

    /// Measure it on `threads` threads (about 0.6 s); `None` where the CPU cannot run it.
    pub fn measure(self, threads: usize) -> Option<Peak> {
        match self {
            PeakKind::F32 => Some(runtime::kernels::peak::measure(threads, 0.6)),
            PeakKind::Bf16Amx => runtime::kernels::amx_bf16_peak(threads, 0.6),
            PeakKind::Bf16Dot => runtime::kernels::bf16dot_peak(threads, 0.6),
        }
    }
}

/// The CPU's measured peaks of the precisions scorekit computes in: each measured once, when
/// the first cell that computes in it has been timed (so a grid measures only the peaks its
/// cells use, whichever engine `--amx` or the CPU picks for them).
pub struct Peaks {
    device: Device,
    threads: usize,
    f32: OnceCell<Option<Peak>>,
    bf16_amx: OnceCell<Option<Peak>>,
    bf16_dot: OnceCell<Option<Peak>>,
}

impl Peaks {
    /// None measured yet, on `device` with the CPU pool's threads.
    pub fn new(device: &Device) -> Self {
        Peaks {
            device: device.clone(),
            threads: rayon::current_num_threads(),
            f32: OnceCell::new(),
            bf16_amx: OnceCell::new(),
            bf16_dot: OnceCell::new(),
        }
    }

    /// Threads the peaks are measured on (the CPU pool's).
    pub fn threads(&self) -> usize {
        self.threads
    }

    /// The peak of a cell's precision ([`PeakKind::of`]), measured on first use.
    pub fn of(&self, dtype: DType, int8: bool, engine: &str) -> Option<Peak> {
        let kind = PeakKind::of(&self.device, dtype, int8, engine)?;
        let cell = match kind {
            PeakKind::F32 => &self.f32,
            PeakKind::Bf16Amx => &self.bf16_amx,
            PeakKind::Bf16Dot => &self.bf16_dot,
        };
        *cell.get_or_init(|| kind.measure(self.threads))
    }
}
