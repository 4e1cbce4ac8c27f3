//! The steps the forked child takes before `exec`: own process group, die with scorekit, join
//! the program's cgroups, new namespaces, resource limits, Landlock. Everything here runs between
//! `fork` and `exec` of a multi-threaded parent, so it makes only async-signal-safe system calls
//! on values prepared in the parent: no allocation, no locks.

use super::probe::Isolation;
use super::Limits;
use landlock::RulesetCreated;
use std::io;
use std::os::fd::{AsRawFd, OwnedFd};

/// `setrlimit` resource, soft and hard limit.
type Rlimit = (libc::__rlimit_resource_t, libc::rlim_t, libc::rlim_t);

/// Everything the child needs, prepared in the parent.
pub struct ChildPlan {
    parent: libc::pid_t,
    cgroup_procs: Vec<OwnedFd>,
    unshare_flags: libc::c_int,
    rlimits: Vec<Rlimit>,
    landlock: Option<RulesetCreated>,
}

impl ChildPlan {
    /// Prepare the plan for one program.
    pub fn new(
        iso: &Isolation,
        limits: &Limits,
        cgroup_procs: Vec<OwnedFd>,
        landlock: Option<RulesetCreated>,
    ) -> ChildPlan {
        let cpu = limits.timeout.as_secs() + 1 + u64::from(limits.timeout.subsec_nanos() > 0);
        // RLIMIT_NPROC counts the user's processes in the user namespace where it is set; in a
        // fresh user namespace that is only the program's, elsewhere it is all of the user's.
        let nproc = if iso.user_namespace || iso.root {
            limits.processes
        } else {
            user_process_count() + limits.processes
        };
        let rlimits = vec![
            (libc::RLIMIT_AS, limits.memory_bytes, limits.memory_bytes),
            (libc::RLIMIT_CPU, cpu, cpu + 1),
            (libc::RLIMIT_FSIZE, limits.file_bytes, limits.file_bytes),
            (libc::RLIMIT_NOFILE, limits.open_files, limits.open_files),
            (libc::RLIMIT_NPROC, nproc, nproc),
            (libc::RLIMIT_CORE, 0, 0),
        ];
        ChildPlan {
            // SAFETY: getpid has no preconditions.
            parent: unsafe { libc::getpid() },
            cgroup_procs,
            unshare_flags: iso.unshare_flags,
            rlimits,
            landlock,
        }
    }

    /// Run in the forked child before exec. Returns in the process that goes on to exec the
    /// program (with namespaces: a grandchild, the first process of the new PID namespace).
    pub fn enter(&mut self) -> io::Result<()> {
        // SAFETY: (whole function) each call is an async-signal-safe system call on integers
        // or on buffers that live in this struct; no allocation happens on any path.
        unsafe {
            // Its own process group: killpg reaches it and the children that stay in it.
            check(libc::setpgid(0, 0))?;
            // Die with scorekit; if scorekit already died, stop here.
            check(libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0))?;
            if libc::getppid() != self.parent {
                libc::_exit(137);
            }
            for fd in &self.cgroup_procs {
                // "0" moves the writing process itself.
                if libc::write(fd.as_raw_fd(), b"0".as_ptr().cast(), 1) != 1 {
                    return Err(io::Error::last_os_error());
                }
            }
            // No setuid/file-capability gains through exec.
            check(libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0))?;
            if self.unshare_flags != 0 {
                check(libc::unshare(self.unshare_flags))?;
            }
            // After unshare: a new user namespace takes its process-count ceiling from the
            // creator's RLIMIT_NPROC, which must stay the user's normal one.
            for &(res, soft, hard) in &self.rlimits {
                let lim = libc::rlimit {
                    rlim_cur: soft,
                    rlim_max: hard,
                };
                check(libc::setrlimit(res, &lim))?;
            }
            if self.unshare_flags & libc::CLONE_NEWPID != 0 {
                fork_into_pid_namespace()?;
            }
        }
        if let Some(ruleset) = self.landlock.take() {
            ruleset
                .restrict_self()
                .map_err(|_| io::Error::from_raw_os_error(libc::EPERM))?;
        }
        Ok(())
    }
}

/// After `unshare(CLONE_NEWPID)` the caller stays outside the new namespace; its next child is
/// the namespace's first process. Fork it; it returns (and goes on to exec) while this process
/// waits for it and exits with its status, so the parent sees the program's status.
///
/// # Safety
/// Only in a forked child before exec (see the module comment).
unsafe fn fork_into_pid_namespace() -> io::Result<()> {
    let pid = libc::fork();
    if pid < 0 {
        return Err(io::Error::last_os_error());
    }
    if pid == 0 {
        // The namespace's init: when the waiter dies (killed at the timeout, or because
        // scorekit died) this dies, and with it every process in the namespace.
        check(libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0))?;
        return Ok(());
    }
    // The waiter keeps no descriptor open, so the program's pipes close when it ends and the
    // exec-error pipe of std's spawn sees only the grandchild.
    if libc::syscall(libc::SYS_close_range, 0u32, u32::MAX, 0u32) != 0 {
        for fd in 0..1024 {
            libc::close(fd);
        }
    }
    let mut status = 0;
    loop {
        let r = libc::waitpid(pid, &mut status, 0);
        if r == pid {
            break;
        }
        if r < 0 && *libc::__errno_location() != libc::EINTR {
            libc::_exit(127);
        }
    }
    if libc::WIFSIGNALED(status) {
        // Die of the same signal, so the parent sees how the program ended.
        let sig = libc::WTERMSIG(status);
        libc::signal(sig, libc::SIG_DFL);
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, sig);
        libc::sigprocmask(libc::SIG_UNBLOCK, &set, std::ptr::null_mut());
        libc::raise(sig);
        libc::_exit(128 + sig);
    }
    libc::_exit(libc::WEXITSTATUS(status));
}

fn check(r: libc::c_int) -> io::Result<()> {
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}

/// Processes (threads count too, as the kernel counts them) of this user now.
fn user_process_count() -> u64 {
    // SAFETY: getuid has no preconditions.
    let uid = unsafe { libc::getuid() };
    let Ok(rd) = std::fs::read_dir("/proc") else {
        return 0;
    };
    rd.flatten()
        .filter(|e| e.file_name().to_string_lossy().parse::<u32>().is_ok())
        .filter_map(|e| std::fs::read_to_string(e.path().join("status")).ok())
        .filter(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("Uid:"))
                .and_then(|l| l.split_whitespace().next()?.parse::<u32>().ok())
                == Some(uid)
        })
        .map(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("Threads:"))
                .and_then(|l| l.trim().parse::<u64>().ok())
                .unwrap_or(1)
        })
        .sum()
}
