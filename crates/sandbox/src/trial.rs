//! Trying a layer in a throw-away child: what the probes of this kernel (namespaces, Landlock)
//! run before any program does.

/// Fork, run `f` in the child and exit with its result; the child's exit code, or None when
/// the fork failed or the child died otherwise. `f` must be async-signal-safe.
pub(crate) fn child_exit_code(f: impl FnOnce() -> libc::c_int) -> Option<libc::c_int> {
    // SAFETY: after fork the child runs only `f` (async-signal-safe by contract) and _exit, so
    // the locks and allocator state copied from the other threads are never touched.
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        return None;
    }
    if pid == 0 {
        let code = f();
        // SAFETY: _exit ends the child without running the parent's destructors or atexit.
        unsafe { libc::_exit(code) };
    }
    let mut status = 0;
    loop {
        // SAFETY: waits for the child forked above; `status` is a valid out pointer.
        let r = unsafe { libc::waitpid(pid, &mut status, 0) };
        if r == pid {
            break;
        }
        if r < 0 && std::io::Error::last_os_error().kind() != std::io::ErrorKind::Interrupted {
            return None;
        }
    }
    libc::WIFEXITED(status).then(|| libc::WEXITSTATUS(status))
}
