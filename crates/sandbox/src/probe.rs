//! What this kernel and these privileges allow, found once per process by trying each layer in
//! a throw-away child, and reported in metrics.json (`settings.exec_isolation`) and on stderr.

use super::cgroup::{self, CgroupBases};
use super::landlock_rules;
use super::trial::child_exit_code;
use serde::Serialize;
use std::sync::OnceLock;

/// The isolation layers available here, and what is missing.
#[derive(Debug, Clone, Serialize)]
pub struct Isolation {
    /// Running as root (uid 0): `RLIMIT_NPROC` does not bind.
    pub root: bool,
    /// Programs get a new user namespace (no privileges outside it).
    pub user_namespace: bool,
    /// Programs get a new PID namespace: all their processes die with them.
    pub pid_namespace: bool,
    /// Programs get a new network namespace with no interfaces.
    pub network_namespace: bool,
    /// The Landlock ABI the kernel offers (0: none).
    pub landlock_abi: u32,
    /// Landlock confines writes to the working folder (ABI 1).
    pub landlock_filesystem: bool,
    /// Landlock forbids TCP connect and bind (ABI 4).
    pub landlock_tcp: bool,
    /// Landlock forbids signals to processes outside the sandbox (ABI 6).
    pub landlock_signals: bool,
    /// The cgroup hierarchies programs are put in (a fresh child cgroup per program).
    pub cgroups: CgroupBases,
    /// Which limit bounds the number of processes: `cgroup pids.max`, `RLIMIT_NPROC`, or none.
    pub process_limit: Option<String>,
    /// Isolation that is missing here, one sentence each.
    pub missing: Vec<String>,
    /// The `unshare(2)` flags used (0: none).
    #[serde(skip)]
    pub unshare_flags: libc::c_int,
}

/// The isolation available to this process (probed once).
pub fn isolation() -> &'static Isolation {
    static ISO: OnceLock<Isolation> = OnceLock::new();
    ISO.get_or_init(probe)
}

fn probe() -> Isolation {
    super::workdir::remove_stale();
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    let ns = namespaces();
    let cgroups = cgroup::find_bases();
    let landlock_abi = landlock_rules::probe_abi();
    let user_namespace = ns & libc::CLONE_NEWUSER != 0;
    let pid_namespace = ns & libc::CLONE_NEWPID != 0;
    let network_namespace = ns & libc::CLONE_NEWNET != 0;
    let process_limit = if cgroups.pids.is_some() || cgroups.v2_pids {
        Some("cgroup pids.max".to_string())
    } else if !root {
        Some("RLIMIT_NPROC".to_string())
    } else {
        None
    };
    let mut missing = Vec::new();
    if !pid_namespace {
        missing.push(if cgroups.any() {
            "no PID namespace: processes are killed through their cgroup".to_string()
        } else {
            "no PID namespace and no writable cgroup: a child that calls setsid() and clears its \
             environment can outlive the program"
                .to_string()
        });
    }
    if !network_namespace && landlock_abi < 4 {
        missing.push(
            "no network isolation (neither a network namespace nor Landlock ABI 4)".to_string(),
        );
    } else if !network_namespace {
        missing.push("no network namespace: UDP and UNIX sockets are open".to_string());
    }
    if landlock_abi == 0 {
        missing.push(
            "no Landlock: programs may write wherever the user may, and read the environment of \
             the user's other processes"
                .to_string(),
        );
    }
    if process_limit.is_none() {
        missing.push(
            "no process-count limit (root without a writable pids cgroup): a fork bomb is bounded \
             only by the timeout"
                .to_string(),
        );
    }
    if cgroups.memory.is_none() && !cgroups.v2_memory {
        missing.push(
            "no memory cgroup: memory is limited per process (RLIMIT_AS), not per program"
                .to_string(),
        );
    }
    Isolation {
        root,
        user_namespace,
        pid_namespace,
        network_namespace,
        landlock_abi,
        landlock_filesystem: landlock_abi >= 1,
        landlock_tcp: landlock_abi >= 4,
        landlock_signals: landlock_abi >= 6,
        cgroups,
        process_limit,
        missing,
        unshare_flags: ns,
    }
}

/// The strongest set of namespaces a child may create: user + PID + network + IPC (any user
/// where unprivileged user namespaces are allowed), else PID + network + IPC (with
/// CAP_SYS_ADMIN), else none.
fn namespaces() -> libc::c_int {
    let base = libc::CLONE_NEWPID | libc::CLONE_NEWNET | libc::CLONE_NEWIPC;
    [libc::CLONE_NEWUSER | base, base]
        .into_iter()
        .find(|&flags| child_exit_code(|| unshare_ok(flags)) == Some(0))
        .unwrap_or(0)
}

fn unshare_ok(flags: libc::c_int) -> libc::c_int {
    // SAFETY: unshare only changes this (forked, single-threaded) child's namespaces.
    if unsafe { libc::unshare(flags) } == 0 {
        0
    } else {
        1
    }
}
