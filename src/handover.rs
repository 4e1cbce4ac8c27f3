//! One install for CPU and GPU nodes: the CPU build hands a model command to the CUDA build.
//!
//! The CPU binary (`scorekit`) starts everywhere; the CUDA binary (`scorekit-cuda`) needs the
//! NVIDIA driver's `libcuda.so.1` to start at all. So for a command that loads a model with
//! `--device auto` or `--device cuda[:N]`, the CPU binary looks for both: the driver (loadable by
//! `dlopen`, never linked) and the CUDA binary (`$SCOREKIT_CUDA_BIN`, else `scorekit-cuda` beside
//! the running executable). With both it replaces itself by the CUDA binary (`exec`, the command
//! line passed through unchanged, so the exit code is the CUDA binary's). Otherwise it runs on the
//! CPU: with `--device auto` saying so once on stderr, with `--device cuda` stopping with exit 2
//! and naming what is missing. A binary built with the `cuda` feature never hands over. The CUDA
//! binary learns that it was handed the command through [`HANDED_OVER_ENV`] (metrics.json's
//! `binary`).

use crate::cli::{Command, JudgeCommand};
use scorekit_core::error::{Error, Result};
use scorekit_runtime::{DeviceKind, DeviceSpec};
use std::path::{Path, PathBuf};

/// Names the CUDA binary to hand over to, instead of `scorekit-cuda` beside this executable.
pub const CUDA_BIN_ENV: &str = "SCOREKIT_CUDA_BIN";
/// Set by the CPU binary for the CUDA binary it hands a command to (its own path), so the
/// CUDA binary can record that, and so no binary hands a command back again.
pub const HANDED_OVER_ENV: &str = "SCOREKIT_HANDED_OVER";
/// The CUDA binary's file name beside the CPU binary.
pub const CUDA_BIN_NAME: &str = "scorekit-cuda";
/// The NVIDIA driver library the CUDA build links.
pub const DRIVER_LIB: &str = "libcuda.so.1";

/// Whether this binary was built with the `cuda` feature.
pub const CUDA_BUILD: bool = cfg!(feature = "cuda");

/// The `--device` of a command that will load a model; `None` for a command that loads none
/// (MINT, MuSE without `--embedder`, GRASP without `--semantic`, data, models, merge, compare,
/// doctor), which never hands over.
pub fn model_device(command: &Command) -> Option<&DeviceSpec> {
    match command {
        Command::Story(a) => Some(&a.model.device),
        Command::Grasp(a) if a.semantic => Some(&a.model.device),
        Command::Muse(a) if a.embedder.is_some() => Some(&a.model.device),
        Command::Embed(a) => Some(&a.runtime.device),
        Command::Bench(a) => Some(&a.runtime.device),
        Command::Judge(JudgeCommand::Train(a)) => Some(&a.device),
        Command::Judge(JudgeCommand::Eval(a)) => Some(&a.model.device),
        _ => None,
    }
}

/// `--quiet` of a command that loads a model: the CPU note is then not printed.
fn quiet(command: &Command) -> bool {
    match command {
        Command::Story(a) => a.output.quiet,
        Command::Grasp(a) => a.output.quiet,
        Command::Muse(a) => a.output.quiet,
        Command::Embed(a) => a.quiet,
        Command::Judge(JudgeCommand::Train(a)) => a.quiet,
        Command::Judge(JudgeCommand::Eval(a)) => a.output.quiet,
        _ => false,
    }
}

/// What this binary finds for a hand-over: the driver and the CUDA binary, each found or why not.
#[derive(Debug, Clone)]
pub struct Probe {
    /// `Ok(())` where `libcuda.so.1` loads, else why not.
    pub driver: std::result::Result<(), String>,
    /// The CUDA binary, else why none was found.
    pub cuda_binary: std::result::Result<PathBuf, String>,
}

impl Probe {
    /// Look for the driver and the CUDA binary (no network, no GPU call: a `dlopen` and a
    /// `stat`).
    pub fn run() -> Probe {
        Probe {
            driver: driver_loads(),
            cuda_binary: cuda_binary(),
        }
    }

    /// The binary to hand a CUDA command to, when both pieces are there.
    pub fn target(&self) -> Option<&Path> {
        match (&self.driver, &self.cuda_binary) {
            (Ok(()), Ok(bin)) => Some(bin),
            _ => None,
        }
    }

    /// What is missing for a hand-over, as one sentence with the way to get it.
    pub fn missing(&self) -> String {
        let mut parts = Vec::new();
        if let Err(why) = &self.driver {
            parts.push(format!(
                "no NVIDIA driver ({why}; install the NVIDIA driver, 580 or newer for CUDA 13, or \
                 run on a GPU node)"
            ));
        }
        if let Err(why) = &self.cuda_binary {
            parts.push(format!(
                "no CUDA binary ({why}; put the CUDA build, `scripts/gpu/build.sh`, as \
                 {CUDA_BIN_NAME} beside this scorekit or name it in {CUDA_BIN_ENV}; README, Install)"
            ));
        }
        if parts.is_empty() {
            "nothing".into()
        } else {
            parts.join("; ")
        }
    }
}

/// Hand the command line to the CUDA binary where the command wants CUDA and it can have it
/// (this call then never returns on success); else say or refuse as the module doc says.
pub fn hand_over_if_wanted(command: &Command) -> Result<()> {
    if CUDA_BUILD || !cfg!(target_os = "linux") {
        return Ok(());
    }
    let Some(spec) = model_device(command) else {
        return Ok(());
    };
    // Only `auto` and `cuda[:N]` ask for CUDA; `cpu` and `metal` never hand over.
    if !matches!(spec.kind, DeviceKind::Auto | DeviceKind::Cuda) {
        return Ok(());
    }
    if let Some(from) = std::env::var_os(HANDED_OVER_ENV) {
        // A CPU binary stands where the CUDA binary should: do not hand over in a circle.
        let why = format!(
            "{} handed this command to {}, which is not a CUDA build",
            Path::new(&from).display(),
            std::env::current_exe()
                .map(|p| p.display().to_string())
                .unwrap_or_else(|_| CUDA_BIN_NAME.into())
        );
        return cpu_or_refuse(spec, &why, &why, quiet(command));
    }
    let probe = Probe::run();
    match probe.target() {
        Some(bin) => Err(exec(bin)),
        None => {
            // A machine without the driver is the common CPU node: one short line. A node with
            // the driver but no CUDA binary has a GPU going unused: the whole reason.
            let short = match probe.driver {
                Err(_) => "no NVIDIA driver; `scorekit doctor` says what a GPU run needs".into(),
                Ok(()) => probe.missing(),
            };
            cpu_or_refuse(spec, &probe.missing(), &short, quiet(command))
        }
    }
}

/// With `--device cuda`, exit 2 naming `why`; with `--device auto`, run on the CPU saying so in
/// one line (`note`), not at all with `--quiet`.
fn cpu_or_refuse(spec: &DeviceSpec, why: &str, note: &str, quiet: bool) -> Result<()> {
    match spec.kind {
        DeviceKind::Cuda => Err(Error::usage(format!(
            "--device {spec}: this is scorekit's CPU build and it cannot hand the command to the \
             CUDA build: {why}"
        ))),
        _ => {
            if !quiet {
                eprintln!("scorekit: --device auto runs on the CPU ({note})");
            }
            Ok(())
        }
    }
}

/// Replace this process by `bin` with the same arguments; returns only on failure.
#[cfg(unix)]
fn exec(bin: &Path) -> Error {
    use std::os::unix::process::CommandExt;
    let me = std::env::current_exe().unwrap_or_else(|_| PathBuf::from("scorekit"));
    let e = std::process::Command::new(bin)
        .args(std::env::args_os().skip(1))
        .env(HANDED_OVER_ENV, &me)
        .exec();
    Error::Internal(anyhow::anyhow!(
        "cannot start the CUDA binary {}: {e}",
        bin.display()
    ))
}

#[cfg(not(unix))]
fn exec(bin: &Path) -> Error {
    Error::Internal(anyhow::anyhow!(
        "handing over to {} needs a Unix system",
        bin.display()
    ))
}

/// Where the CUDA binary is: `$SCOREKIT_CUDA_BIN` (which must then be an executable file), else
/// `scorekit-cuda` beside the running executable (symlinks of the executable resolved).
fn cuda_binary() -> std::result::Result<PathBuf, String> {
    if let Some(p) = std::env::var_os(CUDA_BIN_ENV).filter(|v| !v.is_empty()) {
        let p = PathBuf::from(p);
        return if is_executable(&p) {
            Ok(p)
        } else {
            Err(format!(
                "{CUDA_BIN_ENV}={} is not an executable file",
                p.display()
            ))
        };
    }
    let me = std::env::current_exe()
        .map_err(|e| format!("cannot find this executable's folder: {e}"))?;
    let dir = me
        .parent()
        .ok_or_else(|| format!("{} has no folder", me.display()))?;
    let bin = dir.join(CUDA_BIN_NAME);
    if is_executable(&bin) {
        Ok(bin)
    } else {
        Err(format!(
            "no executable {} and {CUDA_BIN_ENV} unset",
            bin.display()
        ))
    }
}

fn is_executable(p: &Path) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    }
    #[cfg(not(unix))]
    p.is_file()
}

/// Whether the NVIDIA driver library loads here: `dlopen("libcuda.so.1")`, closed again at once.
#[cfg(target_os = "linux")]
fn driver_loads() -> std::result::Result<(), String> {
    let name = std::ffi::CString::new(DRIVER_LIB).expect("no NUL in the name");
    // SAFETY: `name` is a valid NUL-terminated string that outlives the calls. dlopen runs the
    // library's initialisers, which for the NVIDIA driver (or an empty stand-in) do no more than
    // any process linking it would. On failure dlerror returns NULL or a NUL-terminated string
    // owned by the C library, valid until the next dl* call on this thread, copied at once; on
    // success the non-NULL handle is closed at once and not used again.
    let failed = unsafe {
        let handle = libc::dlopen(name.as_ptr(), libc::RTLD_NOW | libc::RTLD_LOCAL);
        if handle.is_null() {
            let e = libc::dlerror();
            Some(if e.is_null() {
                String::from("not found")
            } else {
                std::ffi::CStr::from_ptr(e).to_string_lossy().into_owned()
            })
        } else {
            libc::dlclose(handle);
            None
        }
    };
    match failed {
        Some(msg) => Err(format!("{DRIVER_LIB} does not load: {msg}")),
        None => Ok(()),
    }
}

#[cfg(not(target_os = "linux"))]
fn driver_loads() -> std::result::Result<(), String> {
    Err(format!("{DRIVER_LIB} is Linux's NVIDIA driver"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn missing_names_both_pieces() {
        let p = Probe {
            driver: Err("x".into()),
            cuda_binary: Err("y".into()),
        };
        let m = p.missing();
        assert!(
            m.contains("no NVIDIA driver") && m.contains("no CUDA binary"),
            "{m}"
        );
        assert!(p.target().is_none());
    }
}
