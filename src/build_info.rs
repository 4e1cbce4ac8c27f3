//! What this binary is: version, the commit it was built from, its features and build kind.
//!
//! The commit comes from `SCOREKIT_GIT_COMMIT` at build time (`option_env!`, no build script):
//! `scripts/wheel.sh` and `scripts/gpu/build.sh` set it from `git rev-parse`; a plain `cargo
//! build` without it says `unknown`. `SCOREKIT_GLIBC_FLOOR` likewise names the glibc the build
//! linked for. Cargo rebuilds this crate when either variable changes.

use crate::handover;

/// Cargo.toml's version.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

/// The commit this binary was built from, where the build said (`SCOREKIT_GIT_COMMIT`).
pub fn commit() -> Option<&'static str> {
    option_env!("SCOREKIT_GIT_COMMIT").filter(|c| !c.is_empty())
}

/// The oldest glibc this binary was linked for (`SCOREKIT_GLIBC_FLOOR` at build time, set by
/// the scripts that link with zig against glibc 2.17), where the build said.
pub fn glibc_floor() -> Option<&'static str> {
    option_env!("SCOREKIT_GLIBC_FLOOR").filter(|c| !c.is_empty())
}

/// The cargo features this binary was built with (`cuda`, `metal`).
pub fn features() -> Vec<&'static str> {
    let mut f = Vec::new();
    if cfg!(feature = "cuda") {
        f.push("cuda");
    }
    if cfg!(feature = "metal") {
        f.push("metal");
    }
    f
}

/// The build kind: `cuda`, `metal` or `cpu`.
pub fn build_kind() -> &'static str {
    if cfg!(feature = "cuda") {
        "cuda"
    } else if cfg!(feature = "metal") {
        "metal"
    } else {
        "cpu"
    }
}

/// Record this binary in every metrics.json the process writes (`binary`).
pub fn stamp_metrics() {
    let name = std::env::current_exe()
        .ok()
        .and_then(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
        .unwrap_or_else(|| "scorekit".into());
    scorekit_report::set_binary(scorekit_report::BinaryInfo {
        name,
        build: build_kind().into(),
        handed_over: handover::CUDA_BUILD && std::env::var_os(handover::HANDED_OVER_ENV).is_some(),
    });
}
