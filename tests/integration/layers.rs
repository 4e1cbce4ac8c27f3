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
    // The throughput bench beside the suites, not in the product's report crate: it times the
    // runtime's models and renders its own bench.json; no suite, data cache or file reader.
    (
        "scorekit-bench",
        &["scorekit-core", "scorekit-report", "scorekit-runtime"],
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
            "scorekit-bench",
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

// ---------------------------------------------------------------- file import circles (issue 46)

/// Import circles between the files of one crate that exist today, each as the sorted paths of
/// its files: to be removed by issue 46's suite move. A circle found in the sources passes only
/// if all its files are in one entry here; any other circle fails the test.
const KNOWN_CIRCLES: &[&[&str]] = &[];

/// `text` with comments and string and char literals blanked (newlines kept, lifetimes left), so
/// that a path in a doc comment or a message is not read as an import.
fn blank_code(text: &str) -> String {
    let b = text.as_bytes();
    let ident = |i: usize| i > 0 && (b[i - 1].is_ascii_alphanumeric() || b[i - 1] == b'_');
    let newlines =
        |from: usize, to: usize| "\n".repeat(b[from..to].iter().filter(|&&c| c == b'\n').count());
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < b.len() {
        let rest = &text[i..];
        // The `#`s of a raw string starting here (`r"`, `r#"`, ...).
        let raw = (b[i] == b'r' && !ident(i))
            .then(|| rest[1..].bytes().take_while(|&c| c == b'#').count())
            .filter(|&h| rest[1 + h..].starts_with('"'));
        if rest.starts_with("//") {
            i += rest.find('\n').unwrap_or(rest.len());
        } else if let Some(body) = rest.strip_prefix("/*") {
            let end = body.find("*/").map_or(b.len(), |j| i + 2 + j + 2);
            out.push_str(&newlines(i, end));
            i = end;
        } else if let Some(h) = raw {
            let close = format!("\"{}", "#".repeat(h));
            let end = rest[2 + h..]
                .find(&close)
                .map_or(b.len(), |j| i + 2 + h + j + close.len());
            out.push_str("\"\"");
            out.push_str(&newlines(i, end));
            i = end;
        } else if b[i] == b'"' {
            let mut j = i + 1;
            while j < b.len() && b[j] != b'"' {
                j += if b[j] == b'\\' { 2 } else { 1 };
            }
            let end = (j + 1).min(b.len());
            out.push_str("\"\"");
            out.push_str(&newlines(i, end));
            i = end;
        } else if b[i] == b'\'' {
            // A char literal ('x', '\n', '\u{..}'), else a lifetime or label.
            let len = if rest[1..].starts_with('\\') {
                rest[2..].find('\'').filter(|&j| j < 10).map(|j| j + 3)
            } else {
                let c = rest[1..].chars().next().map_or(0, char::len_utf8);
                (c > 0 && rest[1 + c..].starts_with('\'')).then_some(c + 2)
            };
            match len {
                Some(n) => {
                    out.push_str("' '");
                    i += n;
                }
                None => {
                    out.push('\'');
                    i += 1;
                }
            }
        } else {
            let c = rest.chars().next().unwrap();
            out.push(c);
            i += c.len_utf8();
        }
    }
    out
}

/// Blanked code without its `#[cfg(test)] mod … { … }` blocks: a unit test may use what it likes.
fn strip_test_modules(code: &str) -> String {
    let mut out = String::with_capacity(code.len());
    let mut rest = code;
    while let Some(at) = rest.find("#[cfg(test)]") {
        let after = rest[at + "#[cfg(test)]".len()..].trim_start();
        let after = after.strip_prefix("pub ").map_or(after, str::trim_start);
        let is_mod = after.strip_prefix("mod ").is_some_and(|m| {
            let m = m.trim_start();
            let name = m
                .find(|c: char| !(c.is_alphanumeric() || c == '_'))
                .unwrap_or(m.len());
            name > 0 && m[name..].trim_start().starts_with('{')
        });
        if !is_mod {
            out.push_str(&rest[..at + 1]);
            rest = &rest[at + 1..];
            continue;
        }
        out.push_str(&rest[..at]);
        let open = at + rest[at..].find('{').unwrap();
        let mut depth = 0usize;
        let mut end = rest.len();
        for (j, c) in rest[open..].char_indices() {
            match c {
                '{' => depth += 1,
                '}' => {
                    depth -= 1;
                    if depth == 0 {
                        end = open + j + 1;
                        break;
                    }
                }
                _ => {}
            }
        }
        rest = &rest[end..];
    }
    out.push_str(rest);
    out
}

/// `a::{b, c::{d, e}}` as `a::b`, `a::c::d`, `a::c::e`.
fn expand_use(spec: &str) -> Vec<String> {
    let spec = spec.trim();
    let (Some(open), true) = (spec.find('{'), spec.ends_with('}')) else {
        return vec![spec.to_string()];
    };
    let (head, body) = (&spec[..open], &spec[open + 1..spec.len() - 1]);
    let mut parts = vec![String::new()];
    let mut depth = 0;
    for c in body.chars() {
        match c {
            '{' => depth += 1,
            '}' => depth -= 1,
            ',' if depth == 0 => {
                parts.push(String::new());
                continue;
            }
            _ => {}
        }
        parts.last_mut().unwrap().push(c);
    }
    parts
        .iter()
        .filter(|p| !p.trim().is_empty())
        .flat_map(|p| expand_use(&format!("{head}{}", p.trim())))
        .collect()
}

/// Whether `code[at..]` starts the word `word` (no identifier character on either side).
fn word_at(code: &str, at: usize, word: &str) -> bool {
    let b = code.as_bytes();
    let id = |c: u8| c.is_ascii_alphanumeric() || c == b'_';
    code[at..].starts_with(word)
        && (at == 0 || !id(b[at - 1]))
        && b.get(at + word.len()).is_none_or(|&c| !id(c))
}

/// The paths of the crate's own modules that blanked `code` names: every `use` tree, and every
/// `crate::`, `super::` or `self::` path outside them.
fn local_paths(code: &str) -> Vec<String> {
    let mut paths = Vec::new();
    let mut rest_of_code = String::new();
    let mut i = 0;
    while i < code.len() {
        if word_at(code, i, "use") && code[i + 3..].starts_with(char::is_whitespace) {
            let end = code[i..].find(';').map_or(code.len(), |j| i + j);
            for p in expand_use(&code[i + 3..end]) {
                let p = p.split(" as ").next().unwrap().trim().to_string();
                paths.push(p.split_whitespace().collect::<String>());
            }
            i = end;
            continue;
        }
        let c = code[i..].chars().next().unwrap();
        rest_of_code.push(c);
        i += c.len_utf8();
    }
    let code = rest_of_code;
    for (at, _) in code.match_indices("::") {
        let start = code[..at]
            .rfind(|c: char| !(c.is_alphanumeric() || c == '_'))
            .map_or(0, |j| j + 1);
        let first = &code[start..at];
        // Only the first segment of a path starts one: `a::b::c` is read from `a`.
        let continues = code[..start].ends_with("::");
        if matches!(first, "crate" | "super" | "self") && !continues {
            let tail = code[at..]
                .find(|c: char| !(c.is_alphanumeric() || c == '_' || c == ':'))
                .map_or(code.len(), |j| at + j);
            paths.push(code[start..tail].trim_end_matches(':').to_string());
        }
    }
    paths
}

/// A source file's module path in its crate (`src/commands/bench.rs`: `commands::bench`).
fn module_of(rel_to_src: &str) -> Vec<String> {
    let mut segs: Vec<String> = rel_to_src
        .trim_end_matches(".rs")
        .split('/')
        .map(String::from)
        .collect();
    if segs.len() == 1 && (segs[0] == "lib" || segs[0] == "main") {
        return Vec::new();
    }
    if segs.last().is_some_and(|s| s == "mod") {
        segs.pop();
    }
    segs
}

/// Each file's module and the modules (files) of its crate it names.
type FileGraph = BTreeMap<Vec<String>, BTreeSet<Vec<String>>>;

/// The import graph of one crate's files (module path, text).
fn file_graph(files: &[(Vec<String>, String)]) -> FileGraph {
    let known: BTreeSet<&Vec<String>> = files.iter().map(|(m, _)| m).collect();
    let mut graph = FileGraph::new();
    for (module, text) in files {
        let code = strip_test_modules(&blank_code(text));
        let targets = graph.entry(module.clone()).or_default();
        for path in local_paths(&code) {
            let segs: Vec<&str> = path.split("::").filter(|s| !s.is_empty()).collect();
            let (mut base, rest): (Vec<String>, &[&str]) = match segs.first() {
                Some(&"crate") => (Vec::new(), &segs[1..]),
                Some(&"self") => (module.clone(), &segs[1..]),
                Some(&"super") => {
                    let ups = segs.iter().take_while(|s| **s == "super").count();
                    let keep = module.len().saturating_sub(ups);
                    (module[..keep].to_vec(), &segs[ups..])
                }
                _ => continue,
            };
            base.extend(rest.iter().map(|s| s.to_string()));
            while !base.is_empty() && !known.contains(&base) {
                base.pop();
            }
            if known.contains(&base) && &base != module {
                targets.insert(base);
            }
        }
    }
    graph
}

/// The strongly connected parts of more than one node (Tarjan).
fn circles_of(graph: &FileGraph) -> Vec<Vec<Vec<String>>> {
    struct Walk<'g> {
        graph: &'g FileGraph,
        index: BTreeMap<&'g Vec<String>, usize>,
        low: BTreeMap<&'g Vec<String>, usize>,
        stack: Vec<&'g Vec<String>>,
        found: Vec<Vec<Vec<String>>>,
    }
    impl<'g> Walk<'g> {
        fn visit(&mut self, v: &'g Vec<String>) {
            let n = self.index.len();
            self.index.insert(v, n);
            self.low.insert(v, n);
            self.stack.push(v);
            for w in self.graph.get(v).into_iter().flatten() {
                if !self.index.contains_key(w) {
                    self.visit(w);
                    let lw = self.low[w];
                    let lv = self.low.get_mut(v).unwrap();
                    *lv = (*lv).min(lw);
                } else if self.stack.contains(&w) {
                    let iw = self.index[w];
                    let lv = self.low.get_mut(v).unwrap();
                    *lv = (*lv).min(iw);
                }
            }
            if self.low[v] == self.index[v] {
                let mut part = Vec::new();
                while let Some(w) = self.stack.pop() {
                    part.push(w.clone());
                    if w == v {
                        break;
                    }
                }
                if part.len() > 1 {
                    self.found.push(part);
                }
            }
        }
    }
    let mut walk = Walk {
        graph,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        found: Vec::new(),
    };
    for v in graph.keys() {
        if !walk.index.contains_key(v) {
            walk.visit(v);
        }
    }
    walk.found
}

/// Every import circle between the files of one crate (src/ of the root package and of each
/// crate under crates/), each as its files' paths, sorted; from (path, text) of the sources.
fn import_circles(files: &[(String, String)]) -> Vec<Vec<String>> {
    let mut crates: BTreeMap<String, Vec<(Vec<String>, String)>> = BTreeMap::new();
    let mut paths: BTreeMap<(String, Vec<String>), String> = BTreeMap::new();
    for (path, text) in files {
        let src = if path.starts_with("src/") {
            "src/".to_string()
        } else if let Some(rest) = path.strip_prefix("crates/") {
            match rest.split_once('/') {
                Some((name, tail)) if tail.starts_with("src/") => format!("crates/{name}/src/"),
                _ => continue,
            }
        } else {
            continue;
        };
        let module = module_of(&path[src.len()..]);
        let list = crates.entry(src.clone()).or_default();
        // lib.rs and main.rs are both the crate root: one node with both files' imports.
        match list.iter_mut().find(|(m, _)| *m == module) {
            Some((_, t)) => t.push_str(&format!("\n{text}")),
            None => list.push((module.clone(), text.clone())),
        }
        paths.entry((src, module)).or_insert_with(|| path.clone());
    }
    let mut found = Vec::new();
    for (src, files) in &crates {
        for part in circles_of(&file_graph(files)) {
            let mut names: Vec<String> = part
                .iter()
                .map(|m| paths[&(src.clone(), m.clone())].clone())
                .collect();
            names.sort();
            found.push(names);
        }
    }
    found.sort();
    found
}

/// The circles that no entry of `known` holds, as sentences.
fn new_circles(found: &[Vec<String>], known: &[&[&str]]) -> Vec<String> {
    found
        .iter()
        .filter(|c| {
            !known
                .iter()
                .any(|k| c.iter().all(|f| k.contains(&f.as_str())))
        })
        .map(|c| format!("import circle between {}", c.join(", ")))
        .collect()
}

#[test]
fn no_file_imports_a_file_that_imports_it_back() {
    let files = workspace_sources();
    let found = import_circles(&files);
    let bad = new_circles(&found, KNOWN_CIRCLES);
    assert!(
        bad.is_empty(),
        "{}\n(a file that both needs the other: move what they share into a module both use)",
        bad.join("\n")
    );
}

#[test]
fn an_import_circle_is_named() {
    let file = |path: &str, text: &str| (path.to_string(), text.to_string());
    let files = [
        file(
            "crates/x/src/lib.rs",
            "mod a;\nmod b;\nmod c;\npub use a::A;",
        ),
        file(
            "crates/x/src/a.rs",
            "//! Not an import: crate::c::C.\nuse crate::b::{self, B};\npub struct A;",
        ),
        file(
            "crates/x/src/b.rs",
            "pub struct B(super::a::A);\nconst S: &str = \"crate::c\";",
        ),
        file(
            "crates/x/src/c.rs",
            "fn f() -> crate::b::B { todo!() }\n#[cfg(test)]\nmod tests {\n    use crate::a::A;\n}",
        ),
        file("crates/x/src/d/mod.rs", "use self::e::E;\nuse super::c;"),
        file(
            "crates/x/src/d/e.rs",
            "pub struct E<'a>(&'a str, char);\nuse super::super::d;",
        ),
        file("crates/x/tests/t.rs", "use crate::a;"),
    ];
    assert_eq!(
        import_circles(&files),
        [
            vec!["crates/x/src/a.rs", "crates/x/src/b.rs"],
            vec!["crates/x/src/d/e.rs", "crates/x/src/d/mod.rs"],
        ]
    );
    let found = import_circles(&files);
    assert_eq!(
        new_circles(&found, &[&["crates/x/src/a.rs", "crates/x/src/b.rs"]]),
        ["import circle between crates/x/src/d/e.rs, crates/x/src/d/mod.rs"]
    );
}
