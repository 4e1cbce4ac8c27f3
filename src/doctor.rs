//! What scorekit sees on this machine and what it will do there (`scorekit doctor`): the build,
//! the CPU and the kernel paths it takes, the GPU pieces and the device `--device auto` picks,
//! the model and data caches, the network settings and the C library. Gathering only: it never
//! touches the network and never loads a model; `report::doctor` renders the human view.
//!
//! Each fact comes from the code that acts on it: the ISA paths from `scorekit-kernels`' own
//! detection, the hand-over from [`crate::handover`], the caches from `runtime::hub` /
//! `runtime::manifest` and `scorekit-data`'s cache, so the doctor cannot disagree with a run.

use crate::{build_info, handover};
use scorekit_report::doctor::Section;
use scorekit_runtime::{hub, kernels, manifest};
use serde::Serialize;
use std::path::{Path, PathBuf};

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

/// What to gather.
#[derive(Debug, Clone, Copy, Default)]
pub struct Options {
    /// `--offline` was given (reported; the doctor never uses the network anyway).
    pub offline: bool,
    /// Hash the cached manifest models' files (slow for large models).
    pub verify: bool,
}

/// Gather the report.
pub fn gather(opts: Options) -> scorekit_core::Result<Report> {
    Ok(Report {
        version: build_info::VERSION.into(),
        commit: build_info::commit().map(String::from),
        build: build_info::build_kind().into(),
        features: build_info::features()
            .into_iter()
            .map(String::from)
            .collect(),
        executable: std::env::current_exe().ok(),
        system: system(),
        cpu: cpu(),
        gpu: gpu(),
        models: models(opts.verify)?,
        data: data()?,
        network: network(opts.offline),
    })
}

fn system() -> System {
    System {
        os: std::env::consts::OS.into(),
        arch: std::env::consts::ARCH.into(),
        glibc: glibc_version(),
        glibc_floor: build_info::glibc_floor().map(String::from),
    }
}

/// glibc's version at run time.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn glibc_version() -> Option<String> {
    // SAFETY: gnu_get_libc_version takes no arguments and returns a pointer to a static
    // NUL-terminated string of the C library, valid for the whole process; it is copied at once.
    let v = unsafe { std::ffi::CStr::from_ptr(libc::gnu_get_libc_version()) };
    Some(v.to_string_lossy().into_owned())
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn glibc_version() -> Option<String> {
    None
}

/// `model name` and the flags of the first processor in /proc/cpuinfo (Linux).
fn cpuinfo() -> (Option<String>, Vec<String>) {
    let text = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let field = |name: &str| {
        text.lines()
            .find(|l| l.split(':').next().is_some_and(|k| k.trim() == name))
            .and_then(|l| l.split_once(':'))
            .map(|(_, v)| v.trim().to_string())
    };
    let flags = field("flags")
        .map(|f| f.split_whitespace().map(String::from).collect())
        .unwrap_or_default();
    (field("model name"), flags)
}

fn cpu() -> Cpu {
    let (model, flags) = cpuinfo();
    let avx512f = kernels::kernels_available();
    let avx512_vnni = kernels::int8_available();
    let avx512_bf16 = kernels::bf16dot_available();
    let amx = Amx {
        cpu: flags.iter().any(|f| f == "amx_tile"),
        granted: kernels::amx_available(),
        int8: kernels::amx_int8_available(),
    };
    let paths = Paths {
        f32: if amx.granted {
            "scorekit kernels: split-bf16 AMX tile products (--amx off: AVX-512 f32)".into()
        } else if avx512f {
            "scorekit kernels: AVX-512 f32".into()
        } else {
            "candle's layers (no AVX-512F)".into()
        },
        bf16: if amx.granted {
            "scorekit kernels: bf16 AMX tile products".into()
        } else if avx512_bf16 {
            "scorekit kernels: AVX512-BF16 (vdpbf16ps)".into()
        } else {
            "candle's bf16 layers (no AMX-BF16, no AVX512-BF16)".into()
        },
        int8: if amx.int8 {
            "scorekit kernels: AMX-INT8 tiles".into()
        } else if avx512_vnni {
            "scorekit kernels: AVX-512 VNNI".into()
        } else {
            "not available (needs AVX-512 VNNI): --quantize is refused".into()
        },
    };
    Cpu {
        model,
        threads: std::thread::available_parallelism().map_or(1, |n| n.get()),
        avx512f,
        avx512_vnni,
        avx512_bf16,
        amx,
        paths,
    }
}

fn found(r: &std::result::Result<PathBuf, String>) -> Found {
    match r {
        Ok(p) => Found {
            found: true,
            path: Some(p.clone()),
            detail: None,
        },
        Err(why) => Found {
            found: false,
            path: None,
            detail: Some(why.clone()),
        },
    }
}

fn gpu() -> Gpu {
    let probe = handover::Probe::run();
    let driver = match &probe.driver {
        Ok(()) => Found {
            found: true,
            path: None,
            detail: Some(format!("{} loads", handover::DRIVER_LIB)),
        },
        Err(why) => Found {
            found: false,
            path: None,
            detail: Some(why.clone()),
        },
    };
    let metal = if cfg!(target_os = "macos") {
        if cfg!(feature = "metal") {
            "this build has Metal (untested, docs/gpu.md)".to_string()
        } else {
            "this build has no Metal (--features metal)".to_string()
        }
    } else {
        "macOS only".to_string()
    };
    let (cuda_binary, auto_device) = if handover::CUDA_BUILD || !cfg!(target_os = "linux") {
        let device = scorekit_runtime::select_device("auto")
            .map(|d| scorekit_runtime::device_name(&d))
            .unwrap_or_else(|e| format!("cpu ({e})"));
        let note = Found {
            found: false,
            path: None,
            detail: Some("not looked for: this build runs its own device".into()),
        };
        (note, device)
    } else {
        let device = match probe.target() {
            Some(bin) => format!("cuda:0 via {}", bin.display()),
            None => "cpu".to_string(),
        };
        (found(&probe.cuda_binary), device)
    };
    Gpu {
        cuda_build: handover::CUDA_BUILD,
        driver,
        cuda_binary,
        auto_device,
        metal,
    }
}

fn models(verify: bool) -> scorekit_core::Result<Models> {
    let cache = hub::cache_dir();
    let shipped = manifest::all()?;
    let mut manifests = Vec::new();
    for m in &shipped {
        let snapshot = hub::cached_snapshot(&cache, &m.repo, m.revision_or_main());
        let (mut present, mut verified) = (0, None);
        if let Some((_, dir)) = &snapshot {
            let ok: Vec<&manifest::ManifestFile> = m
                .files
                .iter()
                .filter(|f| {
                    std::fs::metadata(dir.join(&f.name))
                        .is_ok_and(|md| md.is_file() && f.size.is_none_or(|s| s == md.len()))
                })
                .collect();
            present = ok.len();
            if verify {
                verified = Some(ok.iter().all(|f| sha_matches(dir, f)));
            }
        }
        manifests.push(ModelEntry {
            name: m.name.clone(),
            repo: m.repo.clone(),
            revision: m.revision_or_main().into(),
            cached: snapshot.is_some(),
            files: m.files.len(),
            files_present: present,
            verified,
        });
    }
    let mut other_cached: Vec<String> = std::fs::read_dir(&cache)
        .map(|rd| {
            rd.filter_map(|e| e.ok())
                .filter_map(|e| {
                    let name = e.file_name().to_string_lossy().into_owned();
                    name.strip_prefix("models--")
                        .map(|r| r.replacen("--", "/", 1))
                })
                .filter(|id| !shipped.iter().any(|m| &m.repo == id))
                .collect()
        })
        .unwrap_or_default();
    other_cached.sort();
    Ok(Models {
        cache_exists: cache.is_dir(),
        cache,
        manifests,
        other_cached,
    })
}

/// The file's sha256 equals the manifest's (true where the manifest pins none).
fn sha_matches(dir: &Path, f: &manifest::ManifestFile) -> bool {
    let path = dir.join(&f.name);
    match hub::expected_sha256(&path, f.sha256.as_deref()) {
        Some(want) => scorekit_report::sha256_file(&path).is_ok_and(|got| got == want),
        None => true,
    }
}

fn data() -> scorekit_core::Result<Data> {
    let root = scorekit_data::cache::root();
    let mut datasets = Vec::new();
    for m in scorekit_data::manifest::all()? {
        let sel = scorekit_data::select(&format!("{}:{}", m.name, scorekit_data::manifest::ALL))?;
        let files = sel.files().len();
        let missing: Vec<&str> = sel.missing().iter().map(|f| f.path.as_str()).collect();
        let records = scorekit_data::cache::records(&sel.dir());
        let verified = sel
            .files()
            .iter()
            .filter(|f| !missing.contains(&f.path.as_str()) && records.contains_key(&f.path))
            .count();
        datasets.push(DataEntry {
            name: m.name.clone(),
            commit: m.commit.clone(),
            files,
            cached: files - missing.len(),
            verified,
        });
    }
    Ok(Data {
        cache: root,
        datasets,
    })
}

fn network(offline_flag: bool) -> Network {
    let hf_endpoint = std::env::var("HF_ENDPOINT")
        .ok()
        .filter(|v| !v.is_empty())
        .unwrap_or_else(|| "https://huggingface.co".into());
    Network {
        offline: offline_flag || scorekit_core::net::offline_from_env(),
        hf_hub_offline: std::env::var("HF_HUB_OFFLINE").ok(),
        hf_endpoint,
        data_endpoint: scorekit_data::endpoint().0,
    }
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
    /// The report as the sections of the human view (`report::doctor::render`).
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
                format!("{} ({}@{})", m.name, m.repo, short(&m.revision)),
                state,
            );
        }
        if !self.models.other_cached.is_empty() {
            models.row("other cached models", self.models.other_cached.join(", "));
        }
        let mut data = Section::new("data");
        data.row("cache", self.data.cache.display().to_string());
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
