//! `--exec-code`: run a HumanEval/MBPP answer against its tests in a `python3` subprocess (spec
//! §3.4), contained by [`scorekit_sandbox`]: fresh temporary folder, clean environment, resource
//! limits, every process it starts killed at its end. Model code runs only here, only on
//! request, never inside scorekit's own process.

use scorekit_sandbox::{self as sandbox, Arg, Ending, Limits, Program};
use std::path::PathBuf;
use std::process::Command;
use std::sync::{Arc, Condvar, Mutex};

/// How to run code answers.
#[derive(Debug, Clone)]
pub struct ExecConfig {
    /// The interpreter as asked for (`python3`), for messages.
    pub python: String,
    /// The interpreter's real executable (programs get a minimal `PATH`).
    pub executable: PathBuf,
    /// Limits per program (the wall-clock timeout among them).
    pub limits: Limits,
    /// At most this many programs at once (`--jobs`).
    pub slots: Arc<Slots>,
}

impl ExecConfig {
    /// Find `python`'s real executable; `Err` when it cannot be run.
    pub fn new(python: &str, limits: Limits, jobs: usize) -> std::io::Result<ExecConfig> {
        let out = Command::new(python)
            .args(["-I", "-c", "import sys; print(sys.executable)"])
            .output()?;
        let path = String::from_utf8_lossy(&out.stdout).trim().to_string();
        if !out.status.success() || path.is_empty() {
            return Err(std::io::Error::other(format!(
                "{python} did not report its executable ({})",
                out.status
            )));
        }
        Ok(ExecConfig {
            python: python.to_string(),
            executable: PathBuf::from(path),
            limits,
            slots: Arc::new(Slots::new(jobs)),
        })
    }
}

/// A counting semaphore: how many programs may run at once.
#[derive(Debug)]
pub struct Slots {
    free: Mutex<usize>,
    freed: Condvar,
}

impl Slots {
    /// `n` slots (at least one).
    pub fn new(n: usize) -> Slots {
        Slots {
            free: Mutex::new(n.max(1)),
            freed: Condvar::new(),
        }
    }

    fn acquire(&self) -> SlotGuard<'_> {
        let mut free = self.free.lock().expect("slots lock");
        while *free == 0 {
            free = self.freed.wait(free).expect("slots lock");
        }
        *free -= 1;
        SlotGuard(self)
    }
}

struct SlotGuard<'a>(&'a Slots);

impl Drop for SlotGuard<'_> {
    fn drop(&mut self) {
        *self.0.free.lock().expect("slots lock") += 1;
        self.0.freed.notify_one();
    }
}

/// Outcome of one program.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExecOutcome {
    /// Ran to the end without any exception.
    Passed,
    /// Raised (any BaseException, SystemExit included), or was killed by a limit.
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

/// Run `program` (answer + "\n" + tests). `Err` only when python cannot be started.
pub fn run_program(cfg: &ExecConfig, program: &str) -> std::io::Result<ExecOutcome> {
    let _slot = cfg.slots.acquire();
    let prog = Program {
        executable: &cfg.executable,
        args: vec![
            Arg::Text("-I"),
            Arg::File("runner.py"),
            Arg::File("program.py"),
        ],
        files: vec![
            ("program.py", program.as_bytes()),
            ("runner.py", RUNNER.as_bytes()),
        ],
    };
    let r = sandbox::run(&prog, &cfg.limits)?;
    if r.leftovers > 0 {
        eprintln!(
            "warning: --exec-code: {} process(es) of a program outlived it and were killed late",
            r.leftovers
        );
    }
    Ok(match r.ending {
        Ending::Exited(0) => ExecOutcome::Passed,
        Ending::Exited(_) | Ending::Signaled(_) => ExecOutcome::Failed,
        Ending::TimedOut => ExecOutcome::TimedOut,
    })
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
    use std::time::Duration;

    fn cfg(timeout: Duration) -> ExecConfig {
        let limits = Limits {
            timeout,
            ..Limits::default()
        };
        ExecConfig::new("python3", limits, 2).unwrap()
    }

    #[test]
    fn passes_fails_and_times_out() {
        let c = cfg(Duration::from_secs(5));
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
        let slow = cfg(Duration::from_millis(500));
        assert_eq!(
            run_program(&slow, "while True: pass").unwrap(),
            ExecOutcome::TimedOut
        );
    }
}
