//! `scorekit doctor`: the report's data (what scorekit sees on a machine and will do there) and
//! its human view, one two-column table per section. The facts are gathered above, by the
//! binary's `doctor` module; this only holds and lays them out (`--json` serialises [`Report`]).

use crate::Table;
use serde::Serialize;
use std::path::PathBuf;

/// Everything `scorekit doctor --json` prints.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    /// Cargo.toml's version.
    pub version: String,
    /// The commit the binary was built from (`SCOREKIT_GIT_COMMIT` at build time), if known.
    pub commit: Option<String>,
    /// `cpu`, `cuda` or `metal`.
    pub build: String,
    /// Cargo features of the build.
    pub features: Vec<String>,
    /// The running executable.
    pub executable: Option<PathBuf>,
    /// Operating system, architecture and C library.
    pub system: System,
    /// The CPU and the kernel paths scorekit takes on it.
    pub cpu: Cpu,
    /// GPUs: the driver, the CUDA binary, the device `--device auto` picks.
    pub gpu: Gpu,
    /// The model cache and the shipped model manifests.
    pub models: Models,
    /// The benchmark data cache.
    pub data: Data,
    /// Network settings: offline or not, endpoints.
    pub network: Network,
}

/// Operating system, architecture and C library.
#[derive(Debug, Clone, Serialize)]
pub struct System {
    /// `linux`, `macos`, ...
    pub os: String,
    /// `x86_64`, `aarch64`, ...
    pub arch: String,
    /// glibc's version at run time (`gnu_get_libc_version`), where the C library is glibc.
    pub glibc: Option<String>,
    /// The oldest glibc this binary was linked for (`2.17` for the portable build), if known.
    pub glibc_floor: Option<String>,
}

/// The CPU and the kernel paths scorekit takes on it.
#[derive(Debug, Clone, Serialize)]
pub struct Cpu {
    /// `model name` of /proc/cpuinfo.
    pub model: Option<String>,
    /// Threads this process may use (`available_parallelism`: affinity and cgroup limits).
    pub threads: usize,
    /// AVX-512F: scorekit's f32 kernels.
    pub avx512f: bool,
    /// AVX-512 VNNI (with F and BW): `--quantize` int8 products.
    pub avx512_vnni: bool,
    /// AVX512-BF16 (with F and BW): bf16 products without AMX.
    pub avx512_bf16: bool,
    /// AMX: what the CPU reports and whether Linux granted this process the tile state.
    pub amx: Amx,
    /// The path each precision takes with the default `--engine auto --amx auto`.
    pub paths: Paths,
}

/// AMX as the CPU reports it and as Linux grants it.
#[derive(Debug, Clone, Serialize)]
pub struct Amx {
    /// `amx_tile` in /proc/cpuinfo's flags.
    pub cpu: bool,
    /// AMX-TILE and AMX-BF16 usable: Linux granted the tile state (`arch_prctl`).
    pub granted: bool,
    /// AMX-INT8 usable.
    pub int8: bool,
}

/// The path each precision takes with the default options.
#[derive(Debug, Clone, Serialize)]
pub struct Paths {
    /// `--dtype f32` (the CPU default).
    pub f32: String,
    /// `--dtype bf16`.
    pub bf16: String,
    /// `--quantize`.
    pub int8: String,
}

/// A file or program looked for: found (with its path) or why not.
#[derive(Debug, Clone, Serialize)]
pub struct Found {
    /// Whether it is there.
    pub found: bool,
    /// Its path, where it has one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub path: Option<PathBuf>,
    /// Why not, or a note.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
}

/// GPUs: the driver, the CUDA binary, the device `--device auto` picks.
#[derive(Debug, Clone, Serialize)]
pub struct Gpu {
    /// This binary drives CUDA itself (built with the `cuda` feature).
    pub cuda_build: bool,
    /// The NVIDIA driver (`libcuda.so.1` loadable).
    pub driver: Found,
    /// The CUDA binary a CPU build hands model commands to (`scorekit-cuda` beside it or
    /// `$SCOREKIT_CUDA_BIN`); not looked for by a CUDA build.
    pub cuda_binary: Found,
    /// What `--device auto` runs on: `cpu`, `cuda:0` (this binary), `cuda:0 via <binary>`
    /// (handed over), `metal:0`.
    pub auto_device: String,
    /// Metal: macOS builds with the `metal` feature only.
    pub metal: String,
}

/// The model cache and the shipped manifests.
#[derive(Debug, Clone, Serialize)]
pub struct Models {
    /// The Hugging Face cache scorekit reads and fills.
    pub cache: PathBuf,
    /// Whether that folder exists.
    pub cache_exists: bool,
    /// Each shipped manifest (`models/*.toml`) and what the cache holds of it.
    pub manifests: Vec<ModelEntry>,
    /// Other models in the cache (`models--*` folders no manifest names).
    pub other_cached: Vec<String>,
}

/// A shipped model manifest and what the cache holds of it.
#[derive(Debug, Clone, Serialize)]
pub struct ModelEntry {
    /// Manifest name (`labse`).
    pub name: String,
    /// Hub repo id.
    pub repo: String,
    /// What the model is (`embedder`, `judge (decoder-letter)`, `, gated: HF_TOKEN` where the
    /// Hub needs a token).
    pub kind: String,
    /// Pinned revision (or `main`).
    pub revision: String,
    /// A snapshot of that revision is in the cache.
    pub cached: bool,
    /// Files the manifest lists.
    pub files: usize,
    /// Of those, present with the manifest's size.
    pub files_present: usize,
    /// sha256 of every present file checked against the manifest (`--verify`); `None`: not
    /// checked (`scorekit models verify NAME` does it).
    pub verified: Option<bool>,
}

/// The benchmark data cache.
#[derive(Debug, Clone, Serialize)]
pub struct Data {
    /// `$SCOREKIT_DATA`, else the XDG cache folder.
    pub cache: PathBuf,
    /// The judge calibrations' cache (`$SCOREKIT_CALIBRATION_CACHE`, else beside the data).
    pub calibration_cache: Option<PathBuf>,
    /// Each pinned dataset and what the cache holds of it.
    pub datasets: Vec<DataEntry>,
}

/// A pinned dataset and what the cache holds of it.
#[derive(Debug, Clone, Serialize)]
pub struct DataEntry {
    /// Dataset name.
    pub name: String,
    /// Pinned upstream commit.
    pub commit: String,
    /// Files in the manifest.
    pub files: usize,
    /// Of those, in the cache with the manifest's size.
    pub cached: usize,
    /// Of the cached ones, recorded as checked against the manifest when they arrived
    /// (`.scorekit/SHA256SUMS`; `scorekit data verify NAME` checks them again).
    pub verified: usize,
}

/// Network settings.
#[derive(Debug, Clone, Serialize)]
pub struct Network {
    /// Whether scorekit stays off the network (`--offline` or `HF_HUB_OFFLINE`).
    pub offline: bool,
    /// `HF_HUB_OFFLINE` as set.
    pub hf_hub_offline: Option<String>,
    /// Where models come from (`HF_ENDPOINT`, else huggingface.co).
    pub hf_endpoint: String,
    /// Where benchmark files come from (`SCOREKIT_DATA_ENDPOINT`, else the upstream raw host).
    pub data_endpoint: String,
}

/// One section of the doctor's report: a title and its (what, value) rows.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Section {
    /// The section's title (`CPU`, `GPU`, ...).
    pub title: String,
    /// (what, value) rows, in order.
    pub rows: Vec<(String, String)>,
}

impl Section {
    /// An empty section.
    pub fn new(title: &str) -> Self {
        Section {
            title: title.into(),
            rows: Vec::new(),
        }
    }

    /// Append a row.
    pub fn row(&mut self, what: impl Into<String>, value: impl Into<String>) -> &mut Self {
        self.rows.push((what.into(), value.into()));
        self
    }
}

/// The report as markdown tables, one a section.
pub fn render(report: &Report) -> String {
    render_sections(&report.sections())
}

/// Sections as markdown: a `## title` line and a table each, a blank line between.
pub fn render_sections(sections: &[Section]) -> String {
    let mut out = String::new();
    for (i, s) in sections.iter().enumerate() {
        if i > 0 {
            out.push('\n');
        }
        out.push_str(&format!("## {}\n\n", s.title));
        let mut t = Table::new(&["what", "value"]);
        for (k, v) in &s.rows {
            t.row(&[k, v]);
        }
        out.push_str(&t.render());
    }
    out
}

fn yes(b: bool) -> &'static str {
    if b {
        "yes"
    } else {
        "no"
    }
}

fn show_found(f: &Found) -> String {
    match (f.found, &f.path, &f.detail) {
        (true, Some(p), _) => format!("found: {}", p.display()),
        (true, None, Some(d)) => format!("found ({d})"),
        (true, None, None) => "found".into(),
        (false, _, Some(d)) => format!("not found: {d}"),
        (false, _, None) => "not found".into(),
    }
}

impl Report {
    /// The report as the sections of the human view ([`render`]).
    pub fn sections(&self) -> Vec<Section> {
        let mut b = Section::new("scorekit");
        b.row("version", &self.version)
            .row("commit", self.commit.as_deref().unwrap_or("unknown"))
            .row(
                "build",
                if self.features.is_empty() {
                    self.build.clone()
                } else {
                    format!("{} (features: {})", self.build, self.features.join(", "))
                },
            )
            .row(
                "executable",
                self.executable
                    .as_ref()
                    .map_or("unknown".into(), |p| p.display().to_string()),
            );
        let mut s = Section::new("system");
        s.row(
            "os / arch",
            format!("{} / {}", self.system.os, self.system.arch),
        )
        .row(
            "glibc",
            match (&self.system.glibc, &self.system.glibc_floor) {
                (Some(v), Some(f)) => format!("{v} (this binary needs {f} or newer)"),
                (Some(v), None) => v.clone(),
                (None, _) => "not glibc".into(),
            },
        );
        let c = &self.cpu;
        let mut cpu = Section::new("CPU");
        cpu.row("model", c.model.as_deref().unwrap_or("unknown"))
            .row("threads", c.threads.to_string())
            .row("AVX-512F", yes(c.avx512f))
            .row("AVX-512 VNNI", yes(c.avx512_vnni))
            .row("AVX512-BF16", yes(c.avx512_bf16))
            .row(
                "AMX",
                format!(
                    "cpu: {}, tile state granted by Linux: {}, int8: {}",
                    yes(c.amx.cpu),
                    yes(c.amx.granted),
                    yes(c.amx.int8)
                ),
            )
            .row("f32 products", &c.paths.f32)
            .row("bf16 products (--dtype bf16)", &c.paths.bf16)
            .row("int8 products (--quantize)", &c.paths.int8);
        let g = &self.gpu;
        let mut gpu = Section::new("GPU");
        gpu.row("this build drives CUDA", yes(g.cuda_build))
            .row("NVIDIA driver", show_found(&g.driver))
            .row("CUDA binary", show_found(&g.cuda_binary))
            .row("--device auto runs on", &g.auto_device)
            .row("Metal", &g.metal);
        let mut models = Section::new("models");
        models.row(
            "cache",
            format!(
                "{}{}",
                self.models.cache.display(),
                if self.models.cache_exists {
                    ""
                } else {
                    " (absent)"
                }
            ),
        );
        for m in &self.models.manifests {
            let state = if !m.cached {
                "not cached".to_string()
            } else {
                format!(
                    "cached, {}/{} files{}",
                    m.files_present,
                    m.files,
                    match m.verified {
                        Some(true) => ", sha256 verified",
                        Some(false) => ", sha256 MISMATCH (scorekit models verify)",
                        None => ", sha256 not checked (--verify)",
                    }
                )
            };
            models.row(
                format!("{} ({}, {}@{})", m.name, m.kind, m.repo, short(&m.revision)),
                state,
            );
        }
        if !self.models.other_cached.is_empty() {
            models.row("other cached models", self.models.other_cached.join(", "));
        }
        let mut data = Section::new("data");
        data.row("cache", self.data.cache.display().to_string());
        data.row(
            "calibration cache",
            self.data.calibration_cache.as_ref().map_or_else(
                || "none (no SCOREKIT_CALIBRATION_CACHE, SCOREKIT_DATA or HOME)".into(),
                |p| p.display().to_string(),
            ),
        );
        for d in &self.data.datasets {
            data.row(
                format!("{} @ {}", d.name, short(&d.commit)),
                format!(
                    "{}/{} files cached, {} checked on arrival",
                    d.cached, d.files, d.verified
                ),
            );
        }
        let n = &self.network;
        let mut net = Section::new("network");
        net.row(
            "offline",
            format!(
                "{} (HF_HUB_OFFLINE={})",
                yes(n.offline),
                n.hf_hub_offline.as_deref().unwrap_or("unset")
            ),
        )
        .row("models from", &n.hf_endpoint)
        .row("data from", &n.data_endpoint);
        vec![b, s, cpu, gpu, models, data, net]
    }
}

fn short(rev: &str) -> &str {
    rev.get(..12).unwrap_or(rev)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_a_table_per_section() {
        let mut a = Section::new("CPU");
        a.row("cores", "2")
            .row("paths", "f32: AVX-512 | bf16: none");
        let out = render_sections(&[a, Section::new("GPU")]);
        assert!(out.starts_with("## CPU\n\n| what "), "{out}");
        assert!(out.contains("| cores | 2 "), "{out}");
        assert!(out.contains("AVX-512 \\| bf16"), "{out}");
        assert!(out.contains("\n## GPU\n"), "{out}");
    }
}
