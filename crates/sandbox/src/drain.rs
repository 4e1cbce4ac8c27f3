//! Read a program's stdout and stderr as they come (so it never blocks on a full pipe), keeping
//! at most a fixed number of bytes of each: scorekit's memory stays bounded whatever it prints.

use std::io::Read;
use std::os::fd::AsRawFd;
use std::process::{ChildStderr, ChildStdout};
use std::time::Duration;

/// The first bytes of a stream and how many bytes there were in all.
#[derive(Debug, Clone, Default)]
pub struct Captured {
    /// The first bytes (at most the cap).
    pub kept: Vec<u8>,
    /// All bytes read.
    pub total: u64,
}

struct Stream<R> {
    reader: Option<R>,
    captured: Captured,
}

/// Both output pipes of one program.
pub struct Drain {
    out: Stream<ChildStdout>,
    err: Stream<ChildStderr>,
    cap: usize,
}

impl Drain {
    /// Start draining (the pipes are made non-blocking).
    pub fn new(out: ChildStdout, err: ChildStderr, cap: usize) -> Drain {
        set_nonblocking(out.as_raw_fd());
        set_nonblocking(err.as_raw_fd());
        Drain {
            out: Stream {
                reader: Some(out),
                captured: Captured::default(),
            },
            err: Stream {
                reader: Some(err),
                captured: Captured::default(),
            },
            cap,
        }
    }

    /// Wait up to `wait` for output, then read all that is there.
    pub fn pump(&mut self, wait: Duration) {
        let mut fds: Vec<libc::pollfd> = [
            self.out.reader.as_ref().map(|r| r.as_raw_fd()),
            self.err.reader.as_ref().map(|r| r.as_raw_fd()),
        ]
        .into_iter()
        .flatten()
        .map(|fd| libc::pollfd {
            fd,
            events: libc::POLLIN,
            revents: 0,
        })
        .collect();
        if fds.is_empty() {
            std::thread::sleep(wait);
            return;
        }
        // SAFETY: `fds` is a valid array of `fds.len()` pollfd structs for the whole call.
        unsafe {
            libc::poll(
                fds.as_mut_ptr(),
                fds.len() as libc::nfds_t,
                wait.as_millis() as libc::c_int,
            )
        };
        read_available(&mut self.out, self.cap);
        read_available(&mut self.err, self.cap);
    }

    /// The captured stdout and stderr.
    pub fn into_captured(self) -> (Captured, Captured) {
        (self.out.captured, self.err.captured)
    }
}

/// Read until the pipe is empty (non-blocking) or closed; keep up to `cap` bytes. A bounded
/// number of reads per call, so a flood cannot hold the caller (and its timeout check) here.
fn read_available<R: Read>(s: &mut Stream<R>, cap: usize) {
    let Some(r) = s.reader.as_mut() else {
        return;
    };
    let mut buf = [0u8; 64 * 1024];
    for _ in 0..64 {
        match r.read(&mut buf) {
            Ok(0) => {
                s.reader = None;
                return;
            }
            Ok(n) => {
                s.captured.total += n as u64;
                let room = cap.saturating_sub(s.captured.kept.len());
                s.captured.kept.extend_from_slice(&buf[..n.min(room)]);
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => return, // WouldBlock: nothing more for now.
        }
    }
}

fn set_nonblocking(fd: libc::c_int) {
    // SAFETY: fcntl on a descriptor this process owns (a pipe end held by the Drain).
    unsafe {
        let flags = libc::fcntl(fd, libc::F_GETFL);
        libc::fcntl(fd, libc::F_SETFL, flags | libc::O_NONBLOCK);
    }
}
