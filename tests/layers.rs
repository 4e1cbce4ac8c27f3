//! `scripts/check-layers.sh`, the import-direction check of `.ci/run`: it passes a tree whose
//! imports run downwards and names file and line of every import that runs upwards, grouped
//! `use crate::{...}` included, comments ignored. (`.ci/run` runs it on `src/` itself.)

mod common;

use common::repo;
use std::path::Path;
use std::process::Output;

/// Write `src/<name>`, creating its folder.
fn write(src: &Path, name: &str, text: &str) {
    let p = src.join(name);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, text).unwrap();
}

fn check(src: &Path) -> Output {
    std::process::Command::new(repo().join("scripts/check-layers.sh"))
        .arg(src)
        .output()
        .expect("check-layers.sh runs")
}

/// A small tree in which every layer imports only its own layer and those below.
fn clean_tree(src: &Path) {
    write(src, "main.rs", "use crate::{cli, commands};\n");
    write(src, "lib.rs", "pub mod report;\n");
    write(
        src,
        "commands/a.rs",
        "use crate::cli::Args;\nuse crate::suites::x;\n",
    );
    write(
        src,
        "suites/x.rs",
        "use crate::runtime::Embedder;\nuse crate::report::{Table, percent};\n// crate::cli is named in a comment only\n",
    );
    write(
        src,
        "runtime/e.rs",
        "use crate::{input::{read, Record}, suites::x};\n",
    );
    write(
        src,
        "report/t.rs",
        "use crate::error::Result;\nuse crate::input;\n",
    );
    write(src, "shard.rs", "use crate::error::Error;\n");
}

#[test]
fn downward_imports_pass() {
    let tmp = tempfile::tempdir().unwrap();
    let src = tmp.path().join("src");
    clean_tree(&src);
    let o = check(&src);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stdout));
}

#[test]
fn upward_imports_are_named_by_file_and_line() {
    let tmp = tempfile::tempdir().unwrap();
    let src = tmp.path().join("src");
    clean_tree(&src);
    write(
        &src,
        "report/bad.rs",
        "//! A report writer.\n\nuse crate::{\n    input::Record,\n    suites::grasp::Item,\n};\n",
    );
    write(
        &src,
        "runtime/load.rs",
        "use crate::error::Result;\nuse crate::cli::ModelArgs;\n",
    );
    write(
        &src,
        "input/r.rs",
        "fn f() { let _ = crate::runtime::load(); }\n",
    );
    write(&src, "error.rs", "use crate::report::Table;\n");
    let o = check(&src);
    assert_eq!(o.status.code(), Some(1));
    let out = String::from_utf8_lossy(&o.stdout);
    let s = src.display();
    let want = [
        format!("{s}/error.rs:1: error/ imports crate::report (a higher layer)"),
        format!("{s}/input/r.rs:1: input/ imports crate::runtime (a higher layer)"),
        format!("{s}/report/bad.rs:3: report/ imports crate::suites (a higher layer)"),
        format!("{s}/runtime/load.rs:2: runtime/ imports crate::cli (a higher layer)"),
    ];
    assert_eq!(out.lines().collect::<Vec<_>>(), want, "{out}");
}
