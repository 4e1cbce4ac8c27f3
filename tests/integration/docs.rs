//! The docs name real files (issue 51). README.md, docs/*.md, BENCHMARKS.md, scripts/README.md
//! and the `#` comments of the workspace's Cargo.toml files are read for backticked spans; a span
//! whose first word starts with a repository folder (`crates/`, `src/`, `tests/`, `scripts/`,
//! `docs/`, `data/`, `models/`, `bench/`, `fuzz/`, `.ci/`) names a path that must exist, relative
//! to the repository root. The same rule as `docs_dangling_paths` of the shared structure script,
//! a little stricter: `data/` counts too, a command's first word is checked, `{a,b}` is expanded
//! and a path ending in `/` must be a folder. BENCHMARKS.md names no path of a developer's
//! machine.

use std::path::Path;

/// The folders a backticked repository path starts with.
const PREFIXES: &[&str] = &[
    "crates/", "src/", "tests/", "scripts/", "docs/", "data/", "models/", "bench/", "fuzz/", ".ci/",
];

/// Spans that read like repository paths but name a path of another repository: (doc, span).
const ELSEWHERE: &[(&str, &str)] = &[
    // mint-bench's folder of stored trajectories, upstream of the `mint` dataset.
    ("docs/data.md", "data/outputs"),
];

/// Roots of a developer's own machine: a workspace mount or a home folder. `/tmp/` is left out on
/// purpose: BENCHMARKS.md's commands write their scratch files there (scripts/bench/t5_judge.sh's
/// default `DIR` is `/tmp/flan-SHAPE-random`), which every machine has.
const MACHINE_ROOTS: &[&str] = &["/work/", "/home/", "/root/", "/Users/"];

/// A backticked path that does not exist.
#[derive(Debug, PartialEq)]
struct Dangling {
    doc: String,
    line: usize,
    span: String,
    path: String,
}

/// The backticked spans of one line, as the regex `` `([^`\n]+)` `` finds them.
fn spans(line: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut i = 0;
    while let Some(open) = line[i..].find('`').map(|k| i + k) {
        match line[open + 1..].find('`').map(|k| open + 1 + k) {
            Some(close) if close > open + 1 => {
                out.push(&line[open + 1..close]);
                i = close + 1;
            }
            _ => i = open + 1,
        }
    }
    out
}

/// `a{b,c}d` -> `abd`, `acd` (one level at a time, left to right).
fn expand(word: &str) -> Vec<String> {
    let (Some(open), Some(close)) = (word.find('{'), word.find('}')) else {
        return vec![word.to_string()];
    };
    if close < open {
        return vec![word.to_string()];
    }
    word[open + 1..close]
        .split(',')
        .flat_map(|alt| expand(&format!("{}{alt}{}", &word[..open], &word[close + 1..])))
        .collect()
}

/// Whether `word` is a pattern or a placeholder rather than one path.
fn placeholder(word: &str) -> bool {
    word.contains(['*', '?', '<', '>', '[', ']', '{', '}', '|', '$'])
        || word.contains("...")
        || word.contains('…')
        || word
            .split(|c: char| !(c.is_alphanumeric() || c == '_'))
            .any(|s| s == "foo")
}

/// The repository paths a backticked span names: its first word when that starts with one of
/// [`PREFIXES`], cut at `::item`, `:line` and `#anchor`, trailing punctuation dropped, braces
/// expanded; none for a pattern or a placeholder.
fn paths_of(span: &str) -> Vec<String> {
    let Some(word) = span.split_whitespace().next() else {
        return Vec::new();
    };
    if !PREFIXES.iter().any(|p| word.starts_with(p)) {
        return Vec::new();
    }
    let mut end = word.len();
    for (k, _) in word.char_indices() {
        let rest = &word[k..];
        let line_no = rest.starts_with(':') && rest[1..].starts_with(|c: char| c.is_ascii_digit());
        if rest.starts_with("::") || line_no || rest.starts_with('#') {
            end = k;
            break;
        }
    }
    let word = &word[..end];
    if word.contains("...") || word.contains('…') {
        return Vec::new();
    }
    let word = word.trim_end_matches(['.', ',', ';', ':', ')']);
    expand(word)
        .into_iter()
        .filter(|p| !p.is_empty() && !placeholder(p))
        .collect()
}

/// Every backticked repository path of `text` (the doc `doc`) that does not exist under `root`;
/// a path ending in `/` must be a folder.
fn dangling(root: &Path, doc: &str, text: &str) -> Vec<Dangling> {
    let mut out = Vec::new();
    for (n, line) in text.lines().enumerate() {
        for span in spans(line) {
            if ELSEWHERE.contains(&(doc, span.trim())) {
                continue;
            }
            for path in paths_of(span) {
                let full = root.join(&path);
                let there = if path.ends_with('/') {
                    full.is_dir()
                } else {
                    full.exists()
                };
                if !there {
                    out.push(Dangling {
                        doc: doc.to_string(),
                        line: n + 1,
                        span: span.to_string(),
                        path,
                    });
                }
            }
        }
    }
    out
}

/// The comments of a TOML file, one line for each of its lines (what follows the first `#`, as the
/// structure script reads them), so that line numbers stay the file's.
fn toml_comments(text: &str) -> String {
    text.lines()
        .map(|l| l.split_once('#').map_or("", |(_, c)| c))
        .collect::<Vec<_>>()
        .join("\n")
}

/// (path relative to the root, text to check) of every doc the rule reads.
fn docs(root: &Path) -> Vec<(String, String)> {
    let mut names: Vec<String> = ["README.md", "BENCHMARKS.md", "scripts/README.md"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    let mut md: Vec<String> = std::fs::read_dir(root.join("docs"))
        .expect("docs/")
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".md"))
        .map(|n| format!("docs/{n}"))
        .collect();
    md.sort();
    names.extend(md);
    names.push("Cargo.toml".into());
    let mut crates: Vec<String> = std::fs::read_dir(root.join("crates"))
        .expect("crates/")
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .map(|n| format!("crates/{n}/Cargo.toml"))
        .filter(|p| root.join(p).is_file())
        .collect();
    crates.sort();
    names.extend(crates);
    names.push("fuzz/Cargo.toml".into());
    names
        .into_iter()
        .filter(|n| root.join(n).is_file())
        .map(|n| {
            let text = std::fs::read_to_string(root.join(&n)).unwrap();
            let text = if n.ends_with(".toml") {
                toml_comments(&text)
            } else {
                text
            };
            (n, text)
        })
        .collect()
}

#[test]
fn docs_name_only_paths_that_exist() {
    let root = crate::common::repo();
    let docs = docs(&root);
    for must in [
        "README.md",
        "BENCHMARKS.md",
        "docs/architecture.md",
        "Cargo.toml",
    ] {
        assert!(docs.iter().any(|(n, _)| n == must), "{must} is not read");
    }
    let missing: Vec<String> = docs
        .iter()
        .flat_map(|(name, text)| dangling(&root, name, text))
        .map(|d| {
            format!(
                "{}:{}: `{}` ({} does not exist)",
                d.doc, d.line, d.span, d.path
            )
        })
        .collect();
    assert!(
        missing.is_empty(),
        "{} backticked path(s) name nothing in the repository (point them at the file \
         `git ls-files` shows):\n{}",
        missing.len(),
        missing.join("\n")
    );
    for (doc, span) in ELSEWHERE {
        assert!(
            !root.join(span).exists(),
            "{doc}: `{span}` exists in the repository now; drop it from ELSEWHERE"
        );
    }
}

#[test]
fn the_check_reports_exactly_the_missing_path() {
    let root = crate::common::repo();
    let text = "The loop (`src/main.rs:12`, `crates/models/src/`) and\n\
                `scripts/bench/compare.sh judge`, the gone `crates/io/src/gone_lanes.rs`; \
                not paths: `src/commands/foo.rs`, `models/*.toml`, `tests/data/story/<name>/`.\n\
                `crates/models/src/{arch,nope}.rs`, `src/main.rs/` (a file, not a folder).";
    let found = dangling(&root, "x.md", text);
    let report = |line, span, path| report_in("x.md", line, span, path);
    assert_eq!(
        found,
        vec![
            report(
                2,
                "crates/io/src/gone_lanes.rs",
                "crates/io/src/gone_lanes.rs"
            ),
            report(
                3,
                "crates/models/src/{arch,nope}.rs",
                "crates/models/src/nope.rs"
            ),
            report(3, "src/main.rs/", "src/main.rs/"),
        ]
    );
    // A named path that is removed is reported; the same text with it present is clean.
    let named = "`tests/integration/docs.rs` and `tests/integration/gone.rs`";
    let found = dangling(&root, "y.md", named);
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(found[0].path, "tests/integration/gone.rs");
    // Cargo.toml: only comments count, on their own line numbers.
    let toml = "name = \"`src/nope.rs`\"\n# see `src/main.rs` and `src/gone.rs`\n";
    let found = dangling(&root, "Cargo.toml", &toml_comments(toml));
    assert_eq!(
        found,
        vec![report_in("Cargo.toml", 2, "src/gone.rs", "src/gone.rs")]
    );
}

fn report_in(doc: &str, line: usize, span: &str, path: &str) -> Dangling {
    Dangling {
        doc: doc.into(),
        line,
        span: span.into(),
        path: path.into(),
    }
}

/// Absolute paths of a developer's machine (`/work/...`, `/home/...`) in `text`: a root of
/// [`MACHINE_ROOTS`] not inside a longer path (`../shared/work/` and `$HOME/work/` are fine).
fn machine_paths(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for (n, line) in text.lines().enumerate() {
        for root in MACHINE_ROOTS {
            for (k, _) in line.match_indices(root) {
                let before = line[..k].chars().next_back();
                let inside = before.is_some_and(|c| c.is_alphanumeric() || "_.-~$})".contains(c));
                if !inside {
                    let end = line[k..]
                        .find(|c: char| c.is_whitespace() || "`'\"),;".contains(c))
                        .map_or(line.len(), |e| k + e);
                    out.push(format!("BENCHMARKS.md:{}: {}", n + 1, &line[k..end]));
                }
            }
        }
    }
    out
}

#[test]
fn benchmarks_name_no_path_of_a_developer_machine() {
    let text = std::fs::read_to_string(crate::common::repo().join("BENCHMARKS.md")).unwrap();
    let found = machine_paths(&text);
    assert!(
        found.is_empty(),
        "BENCHMARKS.md names paths of one machine (use a relative path or $PYTHON):\n{}",
        found.join("\n")
    );
    let sample = "run `/work/venv/bin/python x.py`, OUT=/home/me/out, --data ../shared/work/x, \
                  $HOME/work/y, --out /tmp/grid, /usr/bin/time";
    assert_eq!(
        machine_paths(sample),
        [
            "BENCHMARKS.md:1: /work/venv/bin/python",
            "BENCHMARKS.md:1: /home/me/out"
        ]
    );
}
