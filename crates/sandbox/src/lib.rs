//! Run an untrusted program contained: resource limits, a clean environment, a private
//! temporary working folder, and every process it starts killed when it ends.
//!
//! Layers, each used where the kernel allows it (see [`probe`] and docs/sandbox.md):
//! - PID namespace (with a user namespace when unprivileged ones are allowed): when the program
//!   (the namespace's first process) dies, the kernel kills every other process in it;
//! - network namespace with no interfaces: no network at all;
//! - cgroup (v2, or v1 `pids` / `memory`): a process-count and total-memory limit, and a list of
//!   every process to kill at the end;
//! - process group: always, the last resort for killing;
//! - Landlock: writes only inside the temporary folder, no TCP connect/bind (ABI 4), no signals
//!   to processes outside the sandbox (ABI 6);
//! - `setrlimit`: address space, CPU seconds, file size, open files, processes, no core dumps.
//!
//! After every run the processes that belong to the program are searched for in /proc and
//! killed; how many were found is reported ([`RunResult::leftovers`]).

mod cgroup;
mod child;
mod drain;
mod landlock_rules;
pub mod probe;
mod reap;
mod trial;
mod workdir;

pub use drain::Captured;
pub use probe::{isolation, Isolation};

use std::ffi::OsString;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Resource limits of one program.
#[derive(Debug, Clone)]
pub struct Limits {
    /// Wall-clock limit.
    pub timeout: Duration,
    /// Address space per process (`RLIMIT_AS`) and, with a memory cgroup, the whole program.
    pub memory_bytes: u64,
    /// Largest file the program may write (`RLIMIT_FSIZE`).
    pub file_bytes: u64,
    /// Open file descriptors per process (`RLIMIT_NOFILE`).
    pub open_files: u64,
    /// Processes (`pids.max` of a cgroup; `RLIMIT_NPROC` where the kernel counts it per user).
    pub processes: u64,
    /// Bytes of stdout and of stderr kept; the rest is read and dropped.
    pub output_bytes: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            timeout: Duration::from_secs(10),
            memory_bytes: 2 << 30,
            file_bytes: 64 << 20,
            open_files: 256,
            processes: 64,
            output_bytes: 64 << 10,
        }
    }
}

/// A program to run: an executable (an absolute path: the environment's `PATH` is minimal),
/// its arguments, and files written into the temporary working folder first.
#[derive(Debug, Clone)]
pub struct Program<'a> {
    /// The executable.
    pub executable: &'a Path,
    /// Arguments.
    pub args: Vec<Arg<'a>>,
    /// (name, contents) written into the working folder before the start.
    pub files: Vec<(&'a str, &'a [u8])>,
}

/// One argument of a program.
#[derive(Debug, Clone, Copy)]
pub enum Arg<'a> {
    /// Passed as is.
    Text(&'a str),
    /// A file of the working folder, passed by its absolute path (which names the run in the
    /// process list).
    File(&'a str),
}

/// How a program ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ending {
    /// It exited with this status code.
    Exited(i32),
    /// A signal killed it (SIGXCPU at the CPU limit, SIGSEGV, SIGKILL from the OOM killer...).
    Signaled(i32),
    /// It ran past the wall-clock limit and was killed.
    TimedOut,
}

/// The result of one run.
#[derive(Debug, Clone)]
pub struct RunResult {
    /// How it ended.
    pub ending: Ending,
    /// Its standard output (capped).
    pub stdout: Captured,
    /// Its standard error (capped).
    pub stderr: Captured,
    /// Processes of the program still found after it ended and the namespace / cgroup /
    /// process group were killed; they were killed then. Nonzero means a containment gap.
    pub leftovers: usize,
}

/// Run `program` under `limits` with every isolation layer [`isolation`] found available.
/// `Err` when the working folder cannot be made or the program cannot be started.
pub fn run(program: &Program, limits: &Limits) -> std::io::Result<RunResult> {
    let iso = isolation();
    let dir = workdir::WorkDir::new()?;
    for (name, bytes) in &program.files {
        std::fs::write(dir.path().join(name), bytes)?;
    }
    let cgroup = cgroup::ProgramCgroup::create(&iso.cgroups, limits);
    let plan = child::ChildPlan::new(
        iso,
        limits,
        cgroup
            .as_ref()
            .map(|c| c.join_handles())
            .unwrap_or_default(),
        landlock_rules::ruleset(iso.landlock_abi, dir.path()),
    );
    let mut cmd = Command::new(program.executable);
    cmd.args(program.args.iter().map(|a| match a {
        Arg::Text(t) => OsString::from(t),
        Arg::File(f) => dir.path().join(f).into_os_string(),
    }))
    .current_dir(dir.path())
    .env_clear()
    .envs(clean_env(dir.path()))
    .stdin(Stdio::null())
    .stdout(Stdio::piped())
    .stderr(Stdio::piped());
    let mut plan = Some(plan);
    // SAFETY: the closure runs in the forked child before exec; `ChildPlan::enter` makes only
    // async-signal-safe system calls on data prepared in the parent (no allocation, no locks).
    unsafe {
        cmd.pre_exec(move || match plan.as_mut() {
            Some(p) => p.enter(),
            None => Ok(()),
        });
    }
    let started = Instant::now();
    let mut child = cmd.spawn()?;
    let pid = child.id() as libc::pid_t;
    let in_pid_ns = iso.unshare_flags & libc::CLONE_NEWPID != 0;
    let tracker = reap::Tracker::new(pid, in_pid_ns, dir.path(), cgroup.as_ref());
    let mut out = drain::Drain::new(
        child.stdout.take().expect("stdout is piped"),
        child.stderr.take().expect("stderr is piped"),
        limits.output_bytes,
    );
    let timed_out = loop {
        out.pump(Duration::from_millis(20));
        if exited_unreaped(pid)? {
            break false;
        }
        if started.elapsed() >= limits.timeout {
            break true;
        }
    };
    // Kill and search before reaping the first process: its pid (the group id) stays ours.
    let leftovers = tracker.finish();
    let status = child.wait()?;
    let ending = match (timed_out, status.code(), status.signal()) {
        (true, _, _) => Ending::TimedOut,
        (false, Some(c), _) => Ending::Exited(c),
        (false, None, s) => Ending::Signaled(s.unwrap_or(0)),
    };
    out.pump(Duration::ZERO);
    let (stdout, stderr) = out.into_captured();
    drop(cgroup);
    Ok(RunResult {
        ending,
        stdout,
        stderr,
        leftovers,
    })
}

/// Whether the child `pid` has ended, without reaping it.
fn exited_unreaped(pid: libc::pid_t) -> std::io::Result<bool> {
    // SAFETY: siginfo_t is plain data, so all-zero is a valid value; waitid writes it.
    let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
    loop {
        // SAFETY: `info` is a valid out pointer; WNOWAIT leaves the child waitable.
        let r = unsafe {
            libc::waitid(
                libc::P_PID,
                pid as libc::id_t,
                &mut info,
                libc::WEXITED | libc::WNOHANG | libc::WNOWAIT,
            )
        };
        if r == 0 {
            // SAFETY: after a successful waitid the pid field is initialised (0: no change).
            return Ok(unsafe { info.si_pid() } != 0);
        }
        let e = std::io::Error::last_os_error();
        if e.kind() != std::io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
}

/// The whole environment of a program: a minimal `PATH`, `LANG`, `HOME` and `TMPDIR` in its
/// working folder, and a marker naming this run (to find its processes in /proc).
fn clean_env(dir: &Path) -> Vec<(&'static str, OsString)> {
    vec![
        ("PATH", "/usr/local/bin:/usr/bin:/bin".into()),
        ("LANG", "C.UTF-8".into()),
        ("HOME", dir.as_os_str().to_owned()),
        ("TMPDIR", dir.as_os_str().to_owned()),
        (reap::MARKER_VAR, reap::marker_value(dir).into()),
    ]
}

/// Resolve `name` on this process's `PATH` to a real file (following symlinks), so that a
/// program started with the minimal `PATH` and no other variables finds it.
pub fn resolve_executable(name: &str) -> Option<PathBuf> {
    let candidates: Vec<PathBuf> = if name.contains('/') {
        vec![PathBuf::from(name)]
    } else {
        std::env::split_paths(&std::env::var_os("PATH")?)
            .map(|d| d.join(name))
            .collect()
    };
    candidates
        .into_iter()
        .find(|p| p.is_file())
        .and_then(|p| p.canonicalize().ok())
}

#[cfg(test)]
mod tests;
