//! The CPU build hands model commands to the CUDA build (src/handover.rs), tested without a GPU:
//! a shell script stands in for `scorekit-cuda` and an empty shared object, compiled here with
//! `cc` as `libcuda.so.1` into a folder on LD_LIBRARY_PATH, stands in for the NVIDIA driver.

use crate::common::{scorekit, stderr};
use std::path::{Path, PathBuf};
use std::process::Output;

/// A temp folder with a fake driver (`driver/libcuda.so.1`) and a stand-in CUDA binary
/// (`scorekit-cuda`) that writes its arguments, one a line, and $SCOREKIT_HANDED_OVER to
/// `args.txt` and exits 7.
struct Fakes {
    dir: tempfile::TempDir,
}

impl Fakes {
    fn new() -> Fakes {
        let dir = tempfile::tempdir().unwrap();
        let driver = dir.path().join("driver");
        std::fs::create_dir(&driver).unwrap();
        let src = dir.path().join("empty.c");
        std::fs::write(&src, "int scorekit_fake_driver;\n").unwrap();
        let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
        let st = std::process::Command::new(&cc)
            .args(["-shared", "-fPIC", "-Wl,-soname,libcuda.so.1", "-o"])
            .arg(driver.join("libcuda.so.1"))
            .arg(&src)
            .status()
            .unwrap_or_else(|e| panic!("{cc} (a C compiler) is needed for this test: {e}"));
        assert!(st.success(), "{cc} failed to build the fake libcuda.so.1");
        let stand_in = dir.path().join("scorekit-cuda");
        let record = dir.path().join("args.txt");
        std::fs::write(
            &stand_in,
            format!(
                "#!/bin/sh\n: >'{r}'\nfor a in \"$@\"; do printf '%s\\n' \"$a\" >>'{r}'; done\n\
                 printf 'HANDED_OVER=%s\\n' \"$SCOREKIT_HANDED_OVER\" >>'{r}'\nexit 7\n",
                r = record.display()
            ),
        )
        .unwrap();
        make_executable(&stand_in);
        Fakes { dir }
    }

    fn driver_dir(&self) -> PathBuf {
        self.dir.path().join("driver")
    }

    fn stand_in(&self) -> PathBuf {
        self.dir.path().join("scorekit-cuda")
    }

    /// The arguments the stand-in got, and the SCOREKIT_HANDED_OVER it saw; None if it never ran.
    fn recorded(&self) -> Option<(Vec<String>, String)> {
        let text = std::fs::read_to_string(self.dir.path().join("args.txt")).ok()?;
        let mut lines: Vec<String> = text.lines().map(String::from).collect();
        let last = lines.pop().expect("the HANDED_OVER line");
        let from = last
            .strip_prefix("HANDED_OVER=")
            .expect("last line")
            .to_string();
        Some((lines, from))
    }
}

fn make_executable(p: &Path) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(p, std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// Run scorekit with `args`, the fake driver on LD_LIBRARY_PATH or not, and SCOREKIT_CUDA_BIN.
fn run_with(args: &[&str], driver: Option<&Path>, cuda_bin: Option<&Path>) -> Output {
    let mut c = scorekit();
    c.args(args).env_remove("SCOREKIT_HANDED_OVER");
    match driver {
        Some(d) => c.env("LD_LIBRARY_PATH", d),
        None => c.env_remove("LD_LIBRARY_PATH"),
    };
    match cuda_bin {
        Some(b) => c.env("SCOREKIT_CUDA_BIN", b),
        None => c.env("SCOREKIT_CUDA_BIN", "/nonexistent/scorekit-cuda"),
    };
    c.output().expect("scorekit runs")
}

/// This machine has no NVIDIA driver of its own (else the "no driver" cases cannot be tested).
fn no_real_driver() -> bool {
    let o = run_with(&["doctor", "--json"], None, None);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("doctor --json");
    v["gpu"]["driver"]["found"] == false
}

const EMBED: &[&str] = &[
    "embed",
    "--input",
    "sentences with spaces.txt",
    "--output",
    "out.npy",
    "--model",
    "some org/model",
    "--batch-tokens",
    "4096",
    "--offline",
];

#[test]
fn cuda_and_auto_hand_the_whole_command_line_over_and_its_exit_code_back() {
    let f = Fakes::new();
    for device in ["cuda", "auto", "cuda:1"] {
        let mut args = EMBED.to_vec();
        args.extend(["--device", device]);
        let o = run_with(&args, Some(&f.driver_dir()), Some(&f.stand_in()));
        assert_eq!(o.status.code(), Some(7), "{device}: {}", stderr(&o));
        let (got, from) = f.recorded().expect("the stand-in ran");
        assert_eq!(got, args, "{device}: arguments passed through unchanged");
        assert!(
            from.ends_with("scorekit"),
            "SCOREKIT_HANDED_OVER names the CPU binary: {from}"
        );
        std::fs::remove_file(f.dir.path().join("args.txt")).unwrap();
    }
}

#[test]
fn the_cuda_binary_is_found_beside_the_executable() {
    let f = Fakes::new();
    // A copy of scorekit with the stand-in beside it (current_exe resolves symlinks, so a copy).
    let bin_dir = f.dir.path().join("bin");
    std::fs::create_dir(&bin_dir).unwrap();
    let me = bin_dir.join("scorekit");
    if std::fs::hard_link(env!("CARGO_BIN_EXE_scorekit"), &me).is_err() {
        std::fs::copy(env!("CARGO_BIN_EXE_scorekit"), &me).unwrap();
    }
    std::fs::copy(f.stand_in(), bin_dir.join("scorekit-cuda")).unwrap();
    make_executable(&bin_dir.join("scorekit-cuda"));
    let mut args = EMBED.to_vec();
    args.extend(["--device", "cuda"]);
    let o = std::process::Command::new(&me)
        .args(&args)
        .env("LD_LIBRARY_PATH", f.driver_dir())
        .env_remove("SCOREKIT_CUDA_BIN")
        .env_remove("SCOREKIT_HANDED_OVER")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(7), "{}", stderr(&o));
    assert_eq!(f.recorded().expect("the stand-in ran").0, args);
}

#[test]
fn without_the_driver_cuda_exits_two_naming_it_and_auto_runs_on_the_cpu() {
    if !no_real_driver() {
        eprintln!("skipped: this machine has an NVIDIA driver");
        return;
    }
    let f = Fakes::new();
    let mut args = EMBED.to_vec();
    args.extend(["--device", "cuda"]);
    let o = run_with(&args, None, Some(&f.stand_in()));
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(
        err.contains("no NVIDIA driver") && err.contains("libcuda.so.1"),
        "{err}"
    );
    assert!(
        !err.contains("no CUDA binary"),
        "the binary was there: {err}"
    );
    assert!(f.recorded().is_none(), "the stand-in must not run");

    // auto: one line on stderr, then the command runs on the CPU (here: stops on its missing
    // input, exit 2, as any CPU run would).
    let mut args = EMBED.to_vec();
    args.extend(["--device", "auto"]);
    let o = run_with(&args, None, Some(&f.stand_in()));
    let err = stderr(&o);
    assert_eq!(err.matches("runs on the CPU").count(), 1, "{err}");
    // Short: the common CPU node is told in one line where to look, not the whole reason.
    let note = err.lines().find(|l| l.contains("runs on the CPU")).unwrap();
    assert!(
        note.len() < 120 && note.contains("scorekit doctor"),
        "{note}"
    );
    assert!(err.contains("sentences with spaces.txt"), "{err}");
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(f.recorded().is_none(), "the stand-in must not run");
    // --quiet: no note at all.
    args.push("--quiet");
    let o = run_with(&args, None, Some(&f.stand_in()));
    assert!(!stderr(&o).contains("runs on the CPU"), "{}", stderr(&o));
}

#[test]
fn without_the_cuda_binary_cuda_exits_two_naming_it() {
    let f = Fakes::new();
    let mut args = EMBED.to_vec();
    args.extend(["--device", "cuda"]);
    let o = run_with(&args, Some(&f.driver_dir()), None);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(
        err.contains("no CUDA binary") && err.contains("SCOREKIT_CUDA_BIN"),
        "{err}"
    );
    assert!(!err.contains("no NVIDIA driver"), "{err}");
}

#[test]
fn cpu_devices_and_commands_without_a_model_never_hand_over() {
    let f = Fakes::new();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("o").display().to_string();
    let mut cpu = EMBED.to_vec();
    cpu.extend(["--device", "cpu"]);
    let muse = [
        "muse",
        "--queries",
        "missing-queries.json",
        "--plans",
        "missing-plans.jsonl",
        "--out",
        &out,
    ];
    for args in [&cpu[..], &muse[..]] {
        let o = run_with(args, Some(&f.driver_dir()), Some(&f.stand_in()));
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        assert!(
            f.recorded().is_none(),
            "{args:?}: the stand-in must not run"
        );
        assert!(!stderr(&o).contains("runs on the CPU"), "{}", stderr(&o));
    }
}

#[test]
fn a_handed_over_command_is_not_handed_over_again() {
    // A CPU build standing where the CUDA binary should: it runs (or refuses) itself.
    let f = Fakes::new();
    let mut args = EMBED.to_vec();
    args.extend(["--device", "cuda"]);
    let o = scorekit()
        .args(&args)
        .env("LD_LIBRARY_PATH", f.driver_dir())
        .env("SCOREKIT_CUDA_BIN", f.stand_in())
        .env("SCOREKIT_HANDED_OVER", "/somewhere/scorekit")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("not a CUDA build"), "{}", stderr(&o));
    assert!(f.recorded().is_none());
}
