//! `--help` of every command (issue 54): the built binary's output against the snapshots in
//! tests/data/help/, byte for byte, and the structure that matters whatever the wording: each
//! option under a heading, the letter-judge flags apart from the input ones, a default that the
//! help mentions shown as `[default: ...]`, GRASP's `<SEP>` rule.
//!
//! After a change to the command line is checked and meant, rewrite the snapshots with
//! `SCOREKIT_BLESS=1 cargo test -p scorekit --test integration -- help::`.

use clap::CommandFactory;
use std::collections::BTreeSet;
use std::path::PathBuf;
use std::process::{Command, Stdio};

/// The variable that rewrites the snapshots instead of comparing them.
const BLESS: &str = "SCOREKIT_BLESS";

/// Help wraps at this width: clap reads `COLUMNS` when no stream is a terminal (and the
/// command line caps the width at 100 in any case).
const COLUMNS: &str = "100";

/// The snapshots' folder.
fn snapshots() -> PathBuf {
    crate::common::repo().join("tests/data/help")
}

/// Every command as the words that name it: `[]` for `scorekit` itself, `["story"]`,
/// `["judge", "train"]`, ... (clap's own `help` subcommand left out).
fn commands() -> Vec<Vec<String>> {
    fn walk(cmd: &clap::Command, path: Vec<String>, out: &mut Vec<Vec<String>>) {
        out.push(path.clone());
        for sub in cmd.get_subcommands().filter(|s| s.get_name() != "help") {
            let mut p = path.clone();
            p.push(sub.get_name().to_string());
            walk(sub, p, out);
        }
    }
    let mut out = Vec::new();
    walk(&scorekit::cli::Cli::command(), Vec::new(), &mut out);
    out
}

/// The snapshot file of a command: `scorekit.txt`, `story.txt`, `judge-train.txt`.
fn snapshot_name(path: &[String]) -> String {
    match path.is_empty() {
        true => "scorekit.txt".into(),
        false => format!("{}.txt", path.join("-")),
    }
}

/// The environment variables any flag reads (`SCOREKIT_ENCODER`, ...): clap shows a set one's
/// value in the help, so the test removes them.
fn flag_env_vars() -> BTreeSet<String> {
    fn walk(cmd: &clap::Command, out: &mut BTreeSet<String>) {
        for a in cmd.get_arguments() {
            if let Some(e) = a.get_env() {
                out.insert(e.to_string_lossy().into_owned());
            }
        }
        for sub in cmd.get_subcommands() {
            walk(sub, out);
        }
    }
    let mut out = BTreeSet::new();
    walk(&scorekit::cli::Cli::command(), &mut out);
    out
}

/// `scorekit <path> --help` as a user without a terminal gets it: 100 columns, no colour, no
/// flag's variable set.
fn help(path: &[String]) -> String {
    let mut c = Command::new(env!("CARGO_BIN_EXE_scorekit"));
    c.args(path)
        .arg("--help")
        .env("COLUMNS", COLUMNS)
        .env("NO_COLOR", "1")
        .env_remove("CLICOLOR_FORCE")
        .env_remove("CLICOLOR")
        .stdin(Stdio::null());
    for var in flag_env_vars() {
        c.env_remove(var);
    }
    let o = c.output().expect("scorekit runs");
    let shown = format!("scorekit {} --help", path.join(" "));
    assert!(
        o.status.success(),
        "{shown} failed: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(o.stderr.is_empty(), "{shown} wrote to stderr");
    String::from_utf8(o.stdout).expect("help is UTF-8")
}

/// Where `snapshot` and `actual` first differ, in a few lines.
fn diff_hint(snapshot: &str, actual: &str) -> String {
    let (s, a): (Vec<&str>, Vec<&str>) = (snapshot.lines().collect(), actual.lines().collect());
    let n = s.len().max(a.len());
    for i in 0..n {
        let (x, y) = (s.get(i), a.get(i));
        if x != y {
            return format!(
                "first difference at line {}:\n    snapshot: {}\n    actual:   {}",
                i + 1,
                x.map_or("<end of file>".into(), |l| format!("{l:?}")),
                y.map_or("<end of output>".into(), |l| format!("{l:?}")),
            );
        }
    }
    "the lines agree; the bytes differ (line endings or the final newline)".into()
}

#[test]
fn help_of_every_command_matches_its_snapshot() {
    let dir = snapshots();
    let bless = std::env::var_os(BLESS).is_some_and(|v| !v.is_empty() && v != "0");
    if bless {
        std::fs::create_dir_all(&dir).unwrap();
    }
    let mut failures = Vec::new();
    let mut names = BTreeSet::new();
    for path in commands() {
        let name = snapshot_name(&path);
        let file = dir.join(&name);
        let actual = help(&path);
        names.insert(name.clone());
        if bless {
            if std::fs::read(&file).ok().as_deref() != Some(actual.as_bytes()) {
                std::fs::write(&file, &actual).unwrap();
                eprintln!("blessed tests/data/help/{name}");
            }
            continue;
        }
        match std::fs::read_to_string(&file) {
            Ok(snapshot) if snapshot == actual => {}
            Ok(snapshot) => failures.push(format!(
                "tests/data/help/{name} differs from `scorekit {} --help`; {}",
                path.join(" "),
                diff_hint(&snapshot, &actual)
            )),
            Err(e) => failures.push(format!(
                "tests/data/help/{name} (`scorekit {} --help`): {e}",
                path.join(" ")
            )),
        }
    }
    // A snapshot of a command that is gone.
    for entry in std::fs::read_dir(&dir).unwrap() {
        let name = entry.unwrap().file_name().to_string_lossy().into_owned();
        if name.ends_with(".txt") && !names.contains(&name) {
            if bless {
                std::fs::remove_file(dir.join(&name)).unwrap();
                eprintln!("removed tests/data/help/{name} (no such command)");
            } else {
                failures.push(format!(
                    "tests/data/help/{name} is the snapshot of no command"
                ));
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{}\n\nIf the change is meant, rewrite the snapshots with \
         `{BLESS}=1 cargo test -p scorekit --test integration -- help::` and review the diff.",
        failures.join("\n")
    );
}

/// One option of a help text: its heading and its whole entry (flag line, help, values), with
/// the whitespace of the wrapping folded to single spaces.
#[derive(Debug)]
struct Entry {
    heading: String,
    flag: String,
    text: String,
}

/// The option entries of a help text, in order. A heading is an unindented line ending in `:`;
/// an entry starts at a line `  -x, --flag` or `      --flag` and runs to the next one.
fn entries(help: &str) -> Vec<Entry> {
    let mut out: Vec<Entry> = Vec::new();
    let mut heading = String::new();
    let mut in_entry = false;
    for line in help.lines() {
        if !line.starts_with(' ') && line.ends_with(':') {
            heading = line.trim_end_matches(':').to_string();
            in_entry = false;
        } else if line.starts_with("  -") || line.starts_with("      --") {
            let flag = line
                .split_whitespace()
                .find(|w| w.starts_with("--"))
                .unwrap_or_default()
                .to_string();
            out.push(Entry {
                heading: heading.clone(),
                flag,
                text: line.split_whitespace().collect::<Vec<_>>().join(" "),
            });
            in_entry = true;
        } else if in_entry && !line.is_empty() && line.starts_with(' ') {
            let e = out.last_mut().unwrap();
            for w in line.split_whitespace() {
                e.text.push(' ');
                e.text.push_str(w);
            }
        } else if !line.is_empty() {
            in_entry = false;
        }
    }
    out
}

/// The headings of a help text, in order.
fn headings(help: &str) -> Vec<String> {
    help.lines()
        .filter(|l| !l.starts_with(' ') && l.ends_with(':'))
        .map(|l| l.trim_end_matches(':').to_string())
        .collect()
}

#[test]
fn help_of_story_groups_its_options_under_the_headings_of_issue_54() {
    let help = help(&["story".to_string()]);
    let want = [
        "Input",
        "Judge",
        "Embedder",
        "Calibration and labels",
        "Letter-judge options",
        "Device and precision",
        "Output",
    ];
    let found = headings(&help);
    let order: Vec<&String> = found
        .iter()
        .filter(|h| want.contains(&h.as_str()))
        .collect();
    assert_eq!(order, want, "story's headings:\n{help}");
    let entries = entries(&help);
    let heading_of = |flag: &str| -> String {
        let e = entries.iter().find(|e| e.flag == flag);
        e.unwrap_or_else(|| panic!("{flag} not in story --help"))
            .heading
            .clone()
    };
    for flag in [
        "--shots",
        "--shots-from",
        "--shot-seed",
        "--shot-answers",
        "--option-orders",
    ] {
        assert_eq!(heading_of(flag), "Letter-judge options", "{flag}");
    }
    let input: Vec<&str> = entries
        .iter()
        .filter(|e| e.heading == "Input")
        .map(|e| e.flag.as_str())
        .collect();
    assert!(input.contains(&"--dataset"), "{input:?}");
    assert!(!input.contains(&"--shots"), "{input:?}");
    for (flag, heading) in [
        ("--generations", "Input"),
        ("--judge", "Judge"),
        ("--follow-label", "Judge"),
        ("--embedder", "Embedder"),
        ("--calibration-labels", "Calibration and labels"),
        ("--label-sample", "Calibration and labels"),
        ("--device", "Device and precision"),
        ("--dtype", "Device and precision"),
        ("--quantize", "Device and precision"),
        ("--engine", "Device and precision"),
        ("--batch-tokens", "Device and precision"),
        ("--tf32", "Device and precision"),
        ("--out", "Output"),
        ("--force", "Output"),
        ("--quiet", "Output"),
        ("--seed", "Output"),
        ("--bootstrap", "Output"),
        ("--shard", "Output"),
    ] {
        assert_eq!(heading_of(flag), heading, "{flag}");
    }
    let dtype = entries.iter().find(|e| e.flag == "--dtype").unwrap();
    assert!(
        dtype
            .text
            .contains("[default: f32 on the CPU, f16 on CUDA or Metal]"),
        "{}",
        dtype.text
    );
}

#[test]
fn help_puts_every_option_of_every_command_under_a_heading() {
    for path in commands() {
        let help = help(&path);
        for e in entries(&help) {
            assert!(
                e.heading != "Options" || e.flag == "--help" || e.flag == "--version",
                "scorekit {} --help: {} has no heading of its own",
                path.join(" "),
                e.flag
            );
        }
    }
}

#[test]
fn help_shows_every_default_it_mentions_as_default_in_brackets() {
    for path in commands() {
        let help = help(&path);
        for e in entries(&help) {
            assert!(
                !e.text.to_lowercase().contains("default") || e.text.contains("[default: "),
                "scorekit {} --help: {} mentions a default without `[default: ...]`: {}",
                path.join(" "),
                e.flag,
                e.text
            );
        }
    }
}

#[test]
fn help_of_grasp_states_the_last_turn_rule_and_the_sample_file() {
    let help = help(&["grasp".to_string()]);
    assert!(
        help.contains(
            "Only the last turn of a response is scored: the text after its last `<SEP>`"
        ),
        "{help}"
    );
    assert!(help.contains("data/grasp/sample-responses.csv"), "{help}");
}
