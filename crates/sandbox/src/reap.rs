//! Kill everything a program started and check in /proc that nothing is left: processes in its
//! PID namespace, its process group, its cgroups, or (without a PID namespace) carrying its
//! environment marker.

use super::cgroup::ProgramCgroup;
use std::fs;
use std::path::Path;
use std::time::{Duration, Instant};

/// The environment variable that marks a program's processes (inherited by its children).
pub const MARKER_VAR: &str = "SCOREKIT_SANDBOX";

/// The marker value of the program working in `dir` (unique per run).
pub fn marker_value(dir: &Path) -> String {
    dir.display().to_string()
}

/// Finds and kills the processes of one program.
pub struct Tracker<'a> {
    pid: libc::pid_t,
    pid_ns: Option<std::path::PathBuf>,
    marker: Vec<u8>,
    cgroup: Option<&'a ProgramCgroup>,
}

impl<'a> Tracker<'a> {
    /// Track the program started as `pid` (its process group leader) with the environment
    /// marker of `dir`; `pid_ns`: it made a new PID namespace.
    pub fn new(
        pid: libc::pid_t,
        pid_ns: bool,
        dir: &Path,
        cgroup: Option<&'a ProgramCgroup>,
    ) -> Tracker<'a> {
        let pid_ns = pid_ns
            .then(|| fs::read_link(format!("/proc/{pid}/ns/pid_for_children")).ok())
            .flatten();
        let marker = format!("{MARKER_VAR}={}\0", marker_value(dir)).into_bytes();
        Tracker {
            pid,
            pid_ns,
            marker,
            cgroup,
        }
    }

    /// SIGKILL the process group, the cgroups and the first process (its death takes a PID
    /// namespace down). Call while the first process is not yet reaped, so its pid cannot have
    /// been reused.
    pub fn kill_all(&self) {
        // SAFETY: kill/killpg have no memory-safety preconditions; the pid is our unreaped
        // child, so it and its group id still name the program.
        unsafe {
            libc::killpg(self.pid, libc::SIGKILL);
            libc::kill(self.pid, libc::SIGKILL);
        }
        if let Some(cg) = self.cgroup {
            cg.kill_all();
        }
    }

    /// After the program ended: kill what is left, then search /proc until none of its
    /// processes is alive. Returns how many were found alive and not already dying (a gap in
    /// the layers above, closed here).
    pub fn finish(self) -> usize {
        self.kill_all();
        let mut missed = std::collections::BTreeSet::new();
        let until = Instant::now() + Duration::from_secs(2);
        loop {
            let found = self.scan();
            if found.is_empty() || Instant::now() > until {
                break;
            }
            for (pid, dying) in found {
                if !dying {
                    missed.insert(pid);
                }
                // SAFETY: kill has no memory-safety preconditions; pid was just seen as ours.
                unsafe { libc::kill(pid, libc::SIGKILL) };
            }
            std::thread::sleep(Duration::from_millis(2));
        }
        missed.len()
    }

    /// The live processes of the program (pid, already has SIGKILL pending).
    fn scan(&self) -> Vec<(libc::pid_t, bool)> {
        let Ok(rd) = fs::read_dir("/proc") else {
            return Vec::new();
        };
        let cg_pids = self.cgroup.map(|cg| cg.pids()).unwrap_or_default();
        let mut found = Vec::new();
        for e in rd.flatten() {
            let Some(pid) = e.file_name().to_str().and_then(|s| s.parse().ok()) else {
                continue;
            };
            let dir = e.path();
            let Ok(status) = fs::read_to_string(dir.join("status")) else {
                continue;
            };
            let field = |k: &str| {
                status
                    .lines()
                    .find_map(|l| l.strip_prefix(k))
                    .map(str::trim)
                    .unwrap_or("")
            };
            if field("State:").starts_with(['Z', 'X']) {
                continue;
            }
            if !self.is_ours(pid, &dir, &cg_pids) {
                continue;
            }
            let sigkill = 1u64 << (libc::SIGKILL - 1);
            let pending = |k: &str| u64::from_str_radix(field(k), 16).unwrap_or(0) & sigkill != 0;
            let ns_init =
                self.pid_ns.is_some() && field("NSpid:").split_whitespace().last() == Some("1");
            found.push((pid, pending("SigPnd:") || pending("ShdPnd:"), ns_init));
        }
        // While the namespace's first process lives (it is being killed), the kernel has yet to
        // kill the rest of the namespace: they count as dying.
        let init_alive = found.iter().any(|f| f.2);
        found
            .into_iter()
            .map(|(pid, dying, _)| (pid, dying || init_alive))
            .collect()
    }

    fn is_ours(&self, pid: libc::pid_t, dir: &Path, cg_pids: &[libc::pid_t]) -> bool {
        if pid == self.pid || cg_pids.contains(&pid) {
            return true;
        }
        if let Ok(stat) = fs::read_to_string(dir.join("stat")) {
            // Fields after the command name (which may contain anything) end with ") ".
            let pgrp = stat
                .rsplit_once(") ")
                .and_then(|(_, rest)| rest.split(' ').nth(2))
                .and_then(|s| s.parse::<libc::pid_t>().ok());
            if pgrp == Some(self.pid) {
                return true;
            }
        }
        if let Some(ns) = &self.pid_ns {
            return fs::read_link(dir.join("ns/pid")).ok().as_ref() == Some(ns);
        }
        fs::read(dir.join("environ"))
            .map(|env| env.windows(self.marker.len()).any(|w| w == self.marker))
            .unwrap_or(false)
    }
}
