//! The layers are the crates of the workspace (docs/architecture.md): the compiler refuses an
//! import of a crate that is not a dependency, and Cargo refuses a circle, but nothing in the build
//! refuses a dependency that runs the wrong way (`scorekit-report` on `scorekit-runtime`, say). These
//! tests read every manifest of the workspace and Cargo.lock and hold them to the table below.

use crate::common;

use common::repo;
use std::collections::{BTreeMap, BTreeSet};

/// Each crate of the workspace and the scorekit crates it may depend on (dev-dependencies too).
/// The one place the layer order is written; docs/architecture.md draws it.
const ALLOWED: &[(&str, &[&str])] = &[
    ("scorekit-core", &[]),
    ("scorekit-io", &["scorekit-core", "scorekit-kernels"]),
    // kernels has no candle (KEPT_OUT below): the bootstrap's resample-counting kernel is there,
    // with every other hand-written SIMD of the workspace.
    ("scorekit-report", &["scorekit-core", "scorekit-kernels"]),
    ("scorekit-sandbox", &["scorekit-core"]),
    (
        "scorekit-data",
        &["scorekit-core", "scorekit-io", "scorekit-report"],
    ),
    // The model stack, bottom up: kernels on plain slices, the encoder interface, the layers'
    // backward passes, the architectures, the native engine, training.
    ("scorekit-kernels", &[]),
    ("scorekit-encoder", &["scorekit-core"]),
    ("scorekit-autograd", &["scorekit-core", "scorekit-kernels"]),
    (
        "scorekit-models",
        &[
            "scorekit-core",
            "scorekit-encoder",
            "scorekit-kernels",
            "scorekit-autograd",
        ],
    ),
    (
        "scorekit-native",
        &[
            "scorekit-core",
            "scorekit-io",
            "scorekit-encoder",
            "scorekit-kernels",
        ],
    ),
    (
        "scorekit-train",
        &[
            "scorekit-core",
            "scorekit-encoder",
            "scorekit-kernels",
            "scorekit-autograd",
            "scorekit-models",
        ],
    ),
    (
        "scorekit-runtime",
        &[
            "scorekit-core",
            "scorekit-io",
            "scorekit-report",
            "scorekit-encoder",
            "scorekit-kernels",
            "scorekit-models",
            "scorekit-native",
            "scorekit-train",
        ],
    ),
    // No runtime: suites are plain functions over plain data and build without candle. The data
    // layer below them is a dev-dependency only: the unit tests find the test data cache with it.
    (
        "scorekit-suites",
        &[
            "scorekit-core",
            "scorekit-io",
            "scorekit-report",
            "scorekit-sandbox",
            "scorekit-data",
            "scorekit-kernels",
        ],
    ),
    (
        "scorekit",
        &[
            "scorekit-core",
            "scorekit-io",
            "scorekit-report",
            "scorekit-sandbox",
            "scorekit-data",
            "scorekit-runtime",
            "scorekit-suites",
        ],
    ),
];

/// Crates that may not be in the dependency tree of a crate (its build must not compile them).
const KEPT_OUT: &[(&str, &[&str])] = &[
    // The kernels are plain slices; the interface and the engine reach no hub (candle-core
    // itself depends on tokenizers, so that one cannot be kept out of them).
    ("scorekit-kernels", &["candle-core", "tokenizers", "hf-hub"]),
    ("scorekit-encoder", &["hf-hub", "candle-transformers"]),
    ("scorekit-native", &["hf-hub"]),
    ("scorekit-suites", &["candle-core", "tokenizers", "hf-hub"]),
    ("scorekit-report", &["candle-core", "tokenizers", "hf-hub"]),
    ("scorekit-io", &["candle-core", "tokenizers", "hf-hub"]),
    ("scorekit-core", &["candle-core", "tokenizers", "hf-hub"]),
];

/// A crate's name and the scorekit crates its manifest names (all dependency tables).
fn manifest_edges(text: &str) -> (String, BTreeSet<String>) {
    let doc: toml::Table = text.parse().expect("manifest parses");
    let name = doc["package"]["name"].as_str().unwrap().to_string();
    let mut deps = BTreeSet::new();
    for table in ["dependencies", "dev-dependencies", "build-dependencies"] {
        if let Some(t) = doc.get(table).and_then(|t| t.as_table()) {
            deps.extend(t.keys().filter(|k| k.starts_with("scorekit")).cloned());
        }
    }
    (name, deps)
}

/// Every edge that the table does not allow, and every crate it does not place, as sentences.
fn violations(graph: &BTreeMap<String, BTreeSet<String>>) -> Vec<String> {
    let allowed: BTreeMap<&str, &[&str]> = ALLOWED.iter().copied().collect();
    let mut bad = Vec::new();
    for (name, deps) in graph {
        let Some(ok) = allowed.get(name.as_str()) else {
            bad.push(format!(
                "{name} has no place in the layer table of tests/layers.rs"
            ));
            continue;
        };
        for d in deps {
            if !ok.contains(&d.as_str()) {
                bad.push(format!("{name} depends on {d}, which is not below it"));
            }
        }
    }
    bad
}

/// The workspace's crates and their scorekit dependencies, read from the manifests.
fn workspace_graph() -> BTreeMap<String, BTreeSet<String>> {
    let mut manifests = vec![repo().join("Cargo.toml")];
    for e in std::fs::read_dir(repo().join("crates")).unwrap() {
        let m = e.unwrap().path().join("Cargo.toml");
        if m.is_file() {
            manifests.push(m);
        }
    }
    manifests
        .iter()
        .map(|m| manifest_edges(&std::fs::read_to_string(m).unwrap()))
        .collect()
}

/// Every package in the transitive dependency tree of `root`, from Cargo.lock.
fn lock_closure(lock: &str, root: &str) -> BTreeSet<String> {
    let doc: toml::Table = lock.parse().expect("Cargo.lock parses");
    let mut deps: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for p in doc["package"].as_array().unwrap() {
        let name = p["name"].as_str().unwrap().to_string();
        let list: Vec<String> = p
            .get("dependencies")
            .and_then(|d| d.as_array())
            .map(|a| {
                a.iter()
                    // "name version" where two versions are locked; the name is enough here.
                    .map(|d| d.as_str().unwrap().split(' ').next().unwrap().to_string())
                    .collect()
            })
            .unwrap_or_default();
        deps.entry(name).or_default().extend(list);
    }
    let mut seen = BTreeSet::new();
    let mut todo = vec![root.to_string()];
    while let Some(n) = todo.pop() {
        if seen.insert(n.clone()) {
            todo.extend(deps.get(&n).cloned().unwrap_or_default());
        }
    }
    seen
}

#[test]
fn every_crate_depends_only_on_crates_below_it() {
    let graph = workspace_graph();
    assert!(graph.len() >= ALLOWED.len(), "{graph:?}");
    let bad = violations(&graph);
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}

#[test]
fn an_upward_or_unplaced_crate_is_named() {
    let mut graph = workspace_graph();
    graph
        .get_mut("scorekit-report")
        .unwrap()
        .insert("scorekit-runtime".into());
    graph.insert(
        "scorekit-extra".into(),
        ["scorekit-core".to_string()].into(),
    );
    assert_eq!(
        violations(&graph),
        [
            "scorekit-extra has no place in the layer table of tests/layers.rs",
            "scorekit-report depends on scorekit-runtime, which is not below it",
        ]
    );
}

#[test]
fn the_lower_layers_build_without_the_model_stack() {
    let lock = std::fs::read_to_string(repo().join("Cargo.lock")).unwrap();
    // The check itself: the binary's tree does hold candle, so a closure that missed it would be
    // a broken reading of the lock file, not a clean layer.
    assert!(lock_closure(&lock, "scorekit").contains("candle-core"));
    for (krate, banned) in KEPT_OUT {
        let tree = lock_closure(&lock, krate);
        assert!(tree.len() > 1, "{krate} not found in Cargo.lock");
        for b in *banned {
            assert!(!tree.contains(*b), "{krate} pulls in {b}");
        }
    }
}

// ---------------------------------------------------------------- hand-written SIMD (issue 30)

/// What marks hand-written SIMD in a source file: the `arch` module of std or core, and functions
/// compiled for extra CPU features (the `target_` + `feature` attribute). Spelled in two pieces so
/// that this file does not hold them.
const SIMD_MARKS: [[&str; 2]; 3] = [
    ["std::", "arch"],
    ["core::", "arch"],
    ["target_", "feature"],
];

/// Sentences for every file (path relative to the repository, text) outside crates/kernels that
/// holds hand-written SIMD.
fn simd_outside_kernels(files: &[(String, String)]) -> Vec<String> {
    let marks: Vec<String> = SIMD_MARKS.iter().map(|m| m.concat()).collect();
    let mut bad = Vec::new();
    for (path, text) in files {
        let found: Vec<&str> = marks
            .iter()
            .filter(|m| text.contains(m.as_str()))
            .map(String::as_str)
            .collect();
        if !found.is_empty() && !path.starts_with("crates/kernels/") {
            bad.push(format!(
                "{path} holds {}: hand-written SIMD belongs in crates/kernels",
                found.join(", ")
            ));
        }
    }
    bad
}

/// Every .rs file of the workspace's crates (src/, tests/, crates/), relative path and text.
fn workspace_sources() -> Vec<(String, String)> {
    let mut files = Vec::new();
    for top in ["src", "tests", "crates"] {
        for e in walkdir::WalkDir::new(repo().join(top))
            .into_iter()
            .filter_entry(|e| !matches!(e.file_name().to_str(), Some("target" | "data")))
        {
            let e = e.unwrap();
            if e.file_type().is_file() && e.path().extension().is_some_and(|x| x == "rs") {
                let rel = e.path().strip_prefix(repo()).unwrap();
                let rel = rel.to_string_lossy().replace('\\', "/");
                files.push((rel, std::fs::read_to_string(e.path()).unwrap()));
            }
        }
    }
    files
}

#[test]
fn simd_lives_only_in_the_kernels_crate() {
    let files = workspace_sources();
    assert!(
        files.iter().any(|(p, _)| p == "crates/kernels/src/gemm.rs"),
        "the source walk found no kernels"
    );
    let bad = simd_outside_kernels(&files);
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}

#[test]
fn simd_outside_the_kernels_crate_is_named() {
    let intrinsics = ["use std::", "arch::x86_64::*;"].concat();
    let feature = ["#[target_", "feature(enable = \"avx2\")]"].concat();
    let mut files = workspace_sources();
    files.push(("crates/report/src/fast.rs".into(), intrinsics.clone()));
    files.push((
        "src/commands/hot.rs".into(),
        format!("{feature}\nfn f() {{}}"),
    ));
    files.push(("crates/kernels/src/new.rs".into(), intrinsics));
    let named = |path: &str, mark: [&str; 2]| {
        format!(
            "{path} holds {}: hand-written SIMD belongs in crates/kernels",
            mark.concat()
        )
    };
    let want = [
        named("crates/report/src/fast.rs", SIMD_MARKS[0]),
        named("src/commands/hot.rs", SIMD_MARKS[2]),
    ];
    assert_eq!(simd_outside_kernels(&files), want);
}
