//! `--exec-code`: run a HumanEval/MBPP answer against its tests in a `python3` subprocess, in a
//! fresh temporary folder, with a timeout (spec §3.4). Model code runs only here, only on
//! request, never inside scorekit's own process.

use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// How to run code answers.
#[derive(Debug, Clone)]
pub struct ExecConfig {
    /// The interpreter (`python3`).
    pub python: String,
    /// Wall-clock limit per program.
    pub timeout: Duration,
}

/// Outcome of one program.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExecOutcome {
    /// Ran to the end without any exception.
    Passed,
    /// Raised (any BaseException, SystemExit included).
    Failed,
    /// Killed at the timeout.
    TimedOut,
}

/// Runs the program like MINT's `check_correctness`: stdout/stderr swallowed, stdin reads
/// raise, destructive os/shutil/subprocess functions disabled (HumanEval's reliability_guard),
/// exit status 0 only when `exec` finished without an exception.
const RUNNER: &str = r#"import sys, os, io
src = open(sys.argv[1], encoding="utf-8").read()
_exit = os._exit
class _NoStdin(io.StringIO):
    def read(self, *a, **k): raise IOError
    def readline(self, *a, **k): raise IOError
    def readlines(self, *a, **k): raise IOError
    def readable(self, *a, **k): return False
sys.stdin = _NoStdin()
_null = open(os.devnull, "w")
sys.stdout = _null
sys.stderr = _null
import builtins, shutil, subprocess
for _n in ["kill", "system", "putenv", "remove", "removedirs", "rmdir", "fchdir", "setuid",
           "fork", "forkpty", "killpg", "rename", "renames", "truncate", "replace", "unlink",
           "fchmod", "fchown", "chmod", "chown", "chroot", "lchown", "chdir"]:
    if hasattr(os, _n): setattr(os, _n, None)
shutil.rmtree = None; shutil.move = None; shutil.chown = None
subprocess.Popen = None
builtins.help = None
try:
    exec(src, {})
except BaseException:
    _exit(1)
_exit(0)
"#;

static COUNTER: AtomicU64 = AtomicU64::new(0);

/// A temporary folder removed on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn new() -> std::io::Result<Self> {
        let n = COUNTER.fetch_add(1, Ordering::Relaxed);
        let p = std::env::temp_dir().join(format!("scorekit-mint-{}-{n}", std::process::id()));
        std::fs::create_dir_all(&p)?;
        Ok(TempDir(p))
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Run `program` (answer + "\n" + tests). `Err` only when python cannot be started.
pub fn run_program(cfg: &ExecConfig, program: &str) -> std::io::Result<ExecOutcome> {
    let dir = TempDir::new()?;
    let prog = dir.0.join("program.py");
    let runner = dir.0.join("runner.py");
    std::fs::File::create(&prog)?.write_all(program.as_bytes())?;
    std::fs::File::create(&runner)?.write_all(RUNNER.as_bytes())?;
    let mut child = Command::new(&cfg.python)
        .arg("-I")
        .arg(&runner)
        .arg(&prog)
        .current_dir(&dir.0)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()?;
    let start = Instant::now();
    loop {
        if let Some(status) = child.try_wait()? {
            return Ok(if status.success() {
                ExecOutcome::Passed
            } else {
                ExecOutcome::Failed
            });
        }
        if start.elapsed() >= cfg.timeout {
            let _ = child.kill();
            let _ = child.wait();
            return Ok(ExecOutcome::TimedOut);
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// `python3 --version`, recorded in metrics.json because verdicts depend on it (§3.4).
pub fn python_version(python: &str) -> std::io::Result<String> {
    let out = Command::new(python).arg("--version").output()?;
    let mut s = String::from_utf8_lossy(&out.stdout).trim().to_string();
    if s.is_empty() {
        s = String::from_utf8_lossy(&out.stderr).trim().to_string();
    }
    Ok(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg() -> ExecConfig {
        ExecConfig {
            python: "python3".into(),
            timeout: Duration::from_secs(5),
        }
    }

    #[test]
    fn passes_fails_and_times_out() {
        let c = cfg();
        let ok = "def f(x):\n    return x + 1\n\nassert f(1) == 2";
        assert_eq!(run_program(&c, ok).unwrap(), ExecOutcome::Passed);
        assert_eq!(
            run_program(&c, "assert 1 == 2").unwrap(),
            ExecOutcome::Failed
        );
        assert_eq!(
            run_program(&c, "import sys\nsys.exit(0)").unwrap(),
            ExecOutcome::Failed
        );
        assert_eq!(run_program(&c, "input()").unwrap(), ExecOutcome::Failed);
        // Annotations are evaluated at definition time before Python 3.14 (PEP 649).
        let v = python_version("python3").unwrap();
        let minor: u32 = v
            .split('.')
            .nth(1)
            .and_then(|m| m.parse().ok())
            .unwrap_or(0);
        let typing = "def f(x: List[int]) -> int:\n    return 1\nassert f([1]) == 1";
        let want = if minor < 14 {
            ExecOutcome::Failed
        } else {
            ExecOutcome::Passed
        };
        assert_eq!(run_program(&c, typing).unwrap(), want);
        let slow = ExecConfig {
            timeout: Duration::from_millis(500),
            ..c
        };
        assert_eq!(
            run_program(&slow, "while True: pass").unwrap(),
            ExecOutcome::TimedOut
        );
    }
}
