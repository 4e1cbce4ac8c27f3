//! What scorekit sees on this machine and what it will do there (`scorekit doctor`): the build,
//! the CPU and the kernel paths it takes, the GPU pieces and the device `--device auto` picks,
//! the model and data caches, the network settings and the C library. Gathering only, into
//! `report::doctor::Report` (which also renders it): it never touches the network and never
//! loads a model.
//!
//! Each fact comes from the code that acts on it: the ISA paths from `scorekit-kernels`' own
//! detection, the hand-over from [`crate::handover`], the caches from `runtime::hub` /
//! `runtime::manifest` and `scorekit-data`'s cache, so the doctor cannot disagree with a run.

use crate::{build_info, handover};
use scorekit_report::doctor::{
    Amx, Cpu, Data, DataEntry, Found, Gpu, ModelEntry, Models, Network, Paths, Report, System,
};
use scorekit_runtime::{hub, kernels, manifest};
use std::path::{Path, PathBuf};

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
        // The same rule the engine applies (`engine::bf16_products`: peaks measured here).
        bf16: if amx.granted {
            format!(
                "scorekit kernels: bf16 AMX tile products (--amx off: {})",
                scorekit_runtime::engine::bf16_products(false).describe()
            )
        } else if avx512f {
            format!(
                "scorekit kernels: {}",
                scorekit_runtime::engine::bf16_products(false).describe()
            )
        } else {
            "candle's bf16 layers (no AVX-512F)".into()
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
        let device = scorekit_runtime::select_device(&scorekit_runtime::DeviceSpec::AUTO)
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
            kind: m.kind_label(),
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
        calibration_cache: scorekit_suites::story::calibration::cache::default_root(),
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
