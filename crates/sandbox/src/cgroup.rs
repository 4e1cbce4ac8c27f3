//! A fresh cgroup per program: a process-count and memory limit for the whole program, and the
//! authoritative list of its processes, to kill them all at the end. Uses cgroup v2 where this
//! process's cgroup is writable (`cgroup.kill`, and `pids.max` / `memory.max` where those
//! controllers are enabled), and cgroup v1 `pids` / `memory` hierarchies where they are.

use super::Limits;
use serde::Serialize;
use std::fs;
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// Writable parent folders under which per-program cgroups are made.
#[derive(Debug, Clone, Default, Serialize)]
pub struct CgroupBases {
    /// cgroup v2 folder of this process (tracking and `cgroup.kill`).
    pub v2: Option<PathBuf>,
    /// cgroup v2 has the `pids` controller enabled for children.
    pub v2_pids: bool,
    /// cgroup v2 has the `memory` controller enabled for children.
    pub v2_memory: bool,
    /// cgroup v1 `pids` hierarchy folder of this process.
    pub pids: Option<PathBuf>,
    /// cgroup v1 `memory` hierarchy folder of this process.
    pub memory: Option<PathBuf>,
    /// cgroup v1 `cpu` hierarchy folder of this process: each program gets an equal share of
    /// the CPU however many processes it starts, so a fork bomb cannot starve the others.
    pub cpu: Option<PathBuf>,
}

impl CgroupBases {
    /// Whether any hierarchy is usable.
    pub fn any(&self) -> bool {
        self.v2.is_some() || self.pids.is_some() || self.memory.is_some() || self.cpu.is_some()
    }
}

/// Find this process's cgroups in every mounted hierarchy and keep those where a child cgroup
/// can be made (tried once).
pub fn find_bases() -> CgroupBases {
    let (Ok(mountinfo), Ok(own)) = (
        fs::read_to_string("/proc/self/mountinfo"),
        fs::read_to_string("/proc/self/cgroup"),
    ) else {
        return CgroupBases::default();
    };
    let mut b = CgroupBases::default();
    for line in mountinfo.lines() {
        let Some((left, right)) = line.split_once(" - ") else {
            continue;
        };
        let l: Vec<&str> = left.split(' ').collect();
        let r: Vec<&str> = right.split(' ').collect();
        if l.len() < 5 || r.len() < 3 {
            continue;
        }
        let (root, mount, fstype, opts) = (l[3], l[4], r[0], r[2]);
        let own_path = |want: &dyn Fn(&str) -> bool| {
            own.lines().find_map(|ln| {
                let mut f = ln.splitn(3, ':');
                let (_, ctl, path) = (f.next()?, f.next()?, f.next()?);
                want(ctl).then(|| path.to_string())
            })
        };
        let dir = |path: String| -> Option<PathBuf> {
            let rel = path.strip_prefix(root.trim_end_matches('/'))?;
            let d = PathBuf::from(mount).join(rel.trim_start_matches('/'));
            writable(&d).then_some(d)
        };
        if fstype == "cgroup2" && b.v2.is_none() {
            if let Some(d) = own_path(&|c| c.is_empty()).and_then(dir) {
                let ctl = fs::read_to_string(d.join("cgroup.subtree_control")).unwrap_or_default();
                b.v2_pids = ctl.split_whitespace().any(|c| c == "pids");
                b.v2_memory = ctl.split_whitespace().any(|c| c == "memory");
                b.v2 = Some(d);
            }
        } else if fstype == "cgroup" {
            let has = |name: &str| opts.split(',').any(|o| o == name);
            let slots = [
                ("pids", &mut b.pids),
                ("memory", &mut b.memory),
                ("cpu", &mut b.cpu),
            ];
            for (name, slot) in slots {
                if has(name) && slot.is_none() {
                    *slot = own_path(&|c| c.split(',').any(|x| x == name)).and_then(dir);
                }
            }
        }
    }
    for base in [&b.v2, &b.pids, &b.memory, &b.cpu].into_iter().flatten() {
        remove_stale(base);
    }
    b
}

/// Remove the (empty) program cgroups a killed scorekit left behind: `scorekit-<pid>-<n>`
/// whose scorekit is gone. Its programs died with it (PDEATHSIG); a cgroup that still holds a
/// process is not removable and stays.
fn remove_stale(base: &Path) {
    let Ok(rd) = fs::read_dir(base) else {
        return;
    };
    for e in rd.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let owner = name
            .strip_prefix("scorekit-")
            .and_then(|r| r.split('-').next())
            .and_then(|p| p.parse::<u32>().ok());
        if let Some(pid) = owner {
            if !Path::new(&format!("/proc/{pid}")).exists() {
                let _ = fs::remove_dir(e.path());
            }
        }
    }
}

/// Whether a child cgroup can be made (and removed) in `d`.
fn writable(d: &Path) -> bool {
    let probe = d.join(format!("scorekit-probe-{}", std::process::id()));
    let ok = fs::create_dir(&probe).is_ok() && probe.join("cgroup.procs").exists();
    let _ = fs::remove_dir(&probe);
    ok
}

static COUNTER: AtomicU64 = AtomicU64::new(0);

/// The cgroups of one program (one per hierarchy), removed on drop after killing what is left.
#[derive(Debug)]
pub struct ProgramCgroup {
    dirs: Vec<PathBuf>,
    v2: Option<PathBuf>,
    /// Whether a `pids.max` bounds the program's process count.
    pub limits_processes: bool,
}

impl ProgramCgroup {
    /// Make the program's cgroups with their limits; None when there is no usable hierarchy
    /// (or making one fails: the run goes on with the other layers).
    pub fn create(bases: &CgroupBases, limits: &Limits) -> Option<ProgramCgroup> {
        let name = format!(
            "scorekit-{}-{}",
            std::process::id(),
            COUNTER.fetch_add(1, Ordering::Relaxed)
        );
        let mut cg = ProgramCgroup {
            dirs: Vec::new(),
            v2: None,
            limits_processes: false,
        };
        let pids = limits.processes.to_string();
        let mem = limits.memory_bytes.to_string();
        if let Some(base) = &bases.v2 {
            let d = base.join(&name);
            if fs::create_dir(&d).is_ok() {
                if bases.v2_pids {
                    cg.limits_processes |= fs::write(d.join("pids.max"), &pids).is_ok();
                }
                if bases.v2_memory {
                    let _ = fs::write(d.join("memory.max"), &mem);
                    let _ = fs::write(d.join("memory.swap.max"), "0");
                }
                cg.v2 = Some(d.clone());
                cg.dirs.push(d);
            }
        }
        if let Some(base) = &bases.pids {
            let d = base.join(&name);
            if fs::create_dir(&d).is_ok() {
                cg.limits_processes |= fs::write(d.join("pids.max"), &pids).is_ok();
                cg.dirs.push(d);
            }
        }
        if let Some(base) = &bases.memory {
            let d = base.join(&name);
            if fs::create_dir(&d).is_ok() {
                let _ = fs::write(d.join("memory.limit_in_bytes"), &mem);
                cg.dirs.push(d);
            }
        }
        if let Some(base) = &bases.cpu {
            // A new group has the default share (cpu.shares 1024), like every other program.
            let d = base.join(&name);
            if fs::create_dir(&d).is_ok() {
                cg.dirs.push(d);
            }
        }
        (!cg.dirs.is_empty()).then_some(cg)
    }

    /// Open `cgroup.procs` of each cgroup for the child to write "0" (itself) into.
    pub fn join_handles(&self) -> Vec<OwnedFd> {
        self.dirs
            .iter()
            .filter_map(|d| {
                fs::OpenOptions::new()
                    .write(true)
                    .open(d.join("cgroup.procs"))
                    .ok()
                    .map(OwnedFd::from)
            })
            .collect()
    }

    /// The processes in the program's cgroups now.
    pub fn pids(&self) -> Vec<libc::pid_t> {
        let mut all: Vec<libc::pid_t> = self
            .dirs
            .iter()
            .flat_map(|d| {
                fs::read_to_string(d.join("cgroup.procs"))
                    .unwrap_or_default()
                    .lines()
                    .filter_map(|l| l.trim().parse().ok())
                    .collect::<Vec<_>>()
            })
            .collect();
        all.sort_unstable();
        all.dedup();
        all
    }

    /// Kill every process in the cgroups (cgroup v2 `cgroup.kill` first, then each listed
    /// pid until the lists are empty or a second has passed).
    pub fn kill_all(&self) {
        if let Some(d) = &self.v2 {
            let _ = fs::write(d.join("cgroup.kill"), "1");
        }
        let until = Instant::now() + Duration::from_secs(1);
        loop {
            let pids = self.pids();
            if pids.is_empty() || Instant::now() > until {
                return;
            }
            for p in pids {
                // SAFETY: kill has no memory-safety preconditions; p is a pid of the cgroup.
                unsafe { libc::kill(p, libc::SIGKILL) };
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }
}

impl Drop for ProgramCgroup {
    fn drop(&mut self) {
        self.kill_all();
        for d in &self.dirs {
            // A cgroup is removable once its last process is reaped; retry briefly.
            let until = Instant::now() + Duration::from_secs(2);
            while fs::remove_dir(d).is_err() && Instant::now() < until {
                std::thread::sleep(Duration::from_millis(10));
            }
        }
    }
}
