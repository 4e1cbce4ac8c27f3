//! `scorekit doctor`: every field is there, the ISA flags agree with /proc/cpuinfo, the caches
//! are the ones the environment names, and nothing needs the network.

use crate::common::{scorekit, stderr, stdout};
use serde_json::Value;

fn doctor_json(envs: &[(&str, &str)]) -> Value {
    let mut c = scorekit();
    c.args(["doctor", "--json"]);
    for (k, v) in envs {
        c.env(k, v);
    }
    let o = c.output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    serde_json::from_str(&stdout(&o)).expect("doctor --json prints one JSON object")
}

fn cpuinfo_flags() -> Vec<String> {
    let text = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    text.lines()
        .find(|l| l.starts_with("flags"))
        .and_then(|l| l.split_once(':'))
        .map(|(_, v)| v.split_whitespace().map(String::from).collect())
        .unwrap_or_default()
}

#[test]
fn doctor_json_has_every_field() {
    let v = doctor_json(&[]);
    assert_eq!(v["version"], env!("CARGO_PKG_VERSION"));
    assert_eq!(v["build"], "cpu");
    for path in [
        "/commit",
        "/features",
        "/executable",
        "/system/os",
        "/system/arch",
        "/system/glibc",
        "/system/glibc_floor",
        "/cpu/model",
        "/cpu/threads",
        "/cpu/avx512f",
        "/cpu/avx512_vnni",
        "/cpu/avx512_bf16",
        "/cpu/amx/cpu",
        "/cpu/amx/granted",
        "/cpu/amx/int8",
        "/cpu/paths/f32",
        "/cpu/paths/bf16",
        "/cpu/paths/int8",
        "/gpu/cuda_build",
        "/gpu/driver/found",
        "/gpu/cuda_binary/found",
        "/gpu/auto_device",
        "/gpu/metal",
        "/models/cache",
        "/models/manifests",
        "/data/cache",
        "/data/datasets",
        "/network/offline",
        "/network/hf_endpoint",
        "/network/data_endpoint",
    ] {
        assert!(v.pointer(path).is_some(), "{path} missing in {v:#}");
    }
    assert!(v["cpu"]["threads"].as_u64().unwrap() >= 1);
    if cfg!(all(target_os = "linux", target_env = "gnu")) {
        let glibc = v["system"]["glibc"].as_str().expect("glibc version");
        assert!(glibc.starts_with("2."), "{glibc}");
    }
    // No driver and no CUDA binary named: --device auto stays on the CPU.
    if v["gpu"]["driver"]["found"] == false {
        assert_eq!(v["gpu"]["auto_device"], "cpu");
    }
    // The shipped manifests are all listed.
    let names: Vec<&str> = v["models"]["manifests"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["name"].as_str().unwrap())
        .collect();
    assert!(names.contains(&"labse"), "{names:?}");
    // Each with its kind: the decoder judges as such, the gated ones saying so.
    for m in v["models"]["manifests"].as_array().unwrap() {
        let kind = m["kind"].as_str().unwrap();
        match m["name"].as_str().unwrap() {
            "qwen2.5-7b-instruct" => assert_eq!(kind, "judge (decoder-letter)"),
            "llama-3.1-8b-instruct" | "gemma-2-9b-it" => {
                assert_eq!(kind, "judge (decoder-letter), gated: HF_TOKEN")
            }
            "flan-t5-xxl" => assert_eq!(kind, "judge (letter)"),
            "labse" => assert_eq!(kind, "embedder"),
            _ => {}
        }
    }
    assert!(!v["data"]["datasets"].as_array().unwrap().is_empty());
}

#[cfg(all(target_os = "linux", target_arch = "x86_64"))]
#[test]
fn doctor_isa_flags_agree_with_proc_cpuinfo() {
    let flags = cpuinfo_flags();
    let has = |f: &str| flags.iter().any(|x| x == f);
    let v = doctor_json(&[]);
    let cpu = &v["cpu"];
    assert_eq!(cpu["avx512f"], has("avx512f"), "{cpu:#}");
    assert_eq!(
        cpu["avx512_vnni"],
        has("avx512f") && has("avx512bw") && has("avx512_vnni"),
        "{cpu:#}"
    );
    assert_eq!(
        cpu["avx512_bf16"],
        has("avx512f") && has("avx512bw") && has("avx512_bf16"),
        "{cpu:#}"
    );
    assert_eq!(cpu["amx"]["cpu"], has("amx_tile"), "{cpu:#}");
    // Linux may refuse the tile state, never grant one the CPU lacks.
    if !has("amx_tile") {
        assert_eq!(cpu["amx"]["granted"], false, "{cpu:#}");
    }
    let f32_path = cpu["paths"]["f32"].as_str().unwrap();
    assert_eq!(
        f32_path.contains("AVX-512") || f32_path.contains("AMX"),
        has("avx512f")
    );
    let model = cpu["model"].as_str().unwrap_or_default();
    let text = std::fs::read_to_string("/proc/cpuinfo").unwrap();
    assert!(text.contains(model), "{model}");
}

#[test]
fn doctor_reports_the_caches_and_offline_state_the_environment_names() {
    let dir = tempfile::tempdir().unwrap();
    let hf = dir.path().join("hf");
    let data = dir.path().join("data");
    let v = doctor_json(&[
        ("HF_HUB_CACHE", hf.to_str().unwrap()),
        ("SCOREKIT_DATA", data.to_str().unwrap()),
        ("HF_HUB_OFFLINE", "1"),
    ]);
    assert_eq!(v["models"]["cache"], hf.to_str().unwrap());
    assert_eq!(v["models"]["cache_exists"], false);
    assert_eq!(v["data"]["cache"], data.to_str().unwrap());
    assert_eq!(v["network"]["offline"], true);
    assert_eq!(v["network"]["hf_hub_offline"], "1");
    for m in v["models"]["manifests"].as_array().unwrap() {
        assert_eq!(m["cached"], false, "{m}");
    }
    for d in v["data"]["datasets"].as_array().unwrap() {
        assert_eq!(d["cached"], 0, "{d}");
    }
    // The human view: one table a section.
    let o = scorekit()
        .args(["doctor"])
        .env("HF_HUB_CACHE", &hf)
        .env("SCOREKIT_DATA", &data)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let text = stdout(&o);
    for section in [
        "## scorekit",
        "## system",
        "## CPU",
        "## GPU",
        "## models",
        "## data",
        "## network",
    ] {
        assert!(text.contains(section), "{section}: {text}");
    }
    assert!(text.contains("| --device auto runs on "), "{text}");
}

#[test]
fn metrics_json_names_the_binary_that_ran() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("o");
    let q = crate::common::test_data("muse:queries", "MuSE_Benchmark/queries.json");
    let plans = crate::common::repo().join("tests/data/muse/hugginggpt.jsonl");
    let o = crate::common::run(&[
        "muse",
        "--queries",
        q.to_str().unwrap(),
        "--plans",
        plans.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
        "--quiet",
        "--bootstrap",
        "0",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let m = crate::common::read_json(&out.join("metrics.json"));
    assert_eq!(m["binary"]["name"], "scorekit", "{m}");
    assert_eq!(m["binary"]["build"], "cpu", "{m}");
    assert!(m["binary"].get("handed_over").is_none(), "{m}");
}

/// The judge calibrations' cache follows a moved data cache, and doctor shows it.
#[test]
fn the_calibration_cache_follows_scorekit_data_and_doctor_shows_it() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("shared-data");
    let o = crate::common::scorekit()
        .arg("doctor")
        .env("SCOREKIT_DATA", &data)
        .env_remove("SCOREKIT_CALIBRATION_CACHE")
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    let line = out
        .lines()
        .find(|l| l.contains("calibration cache"))
        .unwrap_or_else(|| panic!("{out}"));
    assert!(
        line.contains(&data.join("calibration").display().to_string()),
        "{line}"
    );
    // An explicit SCOREKIT_CALIBRATION_CACHE wins.
    let own = dir.path().join("own");
    let o = crate::common::scorekit()
        .arg("doctor")
        .env("SCOREKIT_DATA", &data)
        .env("SCOREKIT_CALIBRATION_CACHE", &own)
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains(&own.display().to_string()), "{out}");
}
